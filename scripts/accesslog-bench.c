/* accesslog-bench.c: cost of one access-log line (formatting into the
 * per-worker buffer plus its share of the 64 KiB write(2)s), measured
 * without the network, so that other load on the machine does not drown it.
 * Build and run from the build directory (see scripts/bench-workers):
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -I. -Ipth -I../src ../scripts/accesslog-bench.c \
 *       libcowd.a pth/.libs/libpth.a -o accesslog-bench && ./accesslog-bench
 * Arguments: [LOGFILE [LINES]]; a LOGFILE given is left in place. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pth.h>

#include "accesslog.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct http_slice sl(const char *s) { struct http_slice x = { s, strlen(s) }; return x; }

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/tmp/cowd-accesslog-bench.log";
    long n = argc > 2 ? atol(argv[2]) : 2000000;
    if (!pth_init() || accesslog_open(path, ACCESSLOG_COMBINED) < 0 || accesslog_start() < 0) {
        perror("accesslog-bench: setup");
        return 1;
    }
    static struct conn c;
    struct sockaddr_in *sin = (struct sockaddr_in *)&c.peer;
    sin->sin_family = AF_INET;
    sin->sin_addr.s_addr = htonl(0x7f000001);
    c.status = 200;
    struct http_request req;
    memset(&req, 0, sizeof req);
    req.method_name = sl("GET");
    req.target = sl("/file.bin");
    req.version_major = req.version_minor = 1;
    req.user_agent = sl("wrk/4.1.0 (a typical user agent string of forty bytes)");
    req.referer = sl("http://127.0.0.1/index.html");
    double t0 = now();
    for (long i = 0; i < n; i++) {
        uint64_t mark = accesslog_mark(&c);
        c.out.bytes_sent += 12500 + 230;
        accesslog_request(&c, &req, mark);
    }
    accesslog_flush();
    double t = now() - t0;
    off_t size = lseek(accesslog_fd, 0, SEEK_END);
    printf("%ld lines, %.0f bytes each: %.1f ns per line (%.2f s)\n", n, (double)size / (double)n,
           t * 1e9 / (double)n, t);
    if (argc <= 1)
        unlink(path);           /* only the default scratch file, never a given path */
    return 0;
}

/* accept-queue-bench.c: what it costs the accept thread to learn that the
 * listen queue is empty -- an accept4(2) that says EAGAIN, against
 * getsockopt(TCP_INFO), whose tcpi_unacked is a Linux listening socket's
 * accept queue length (src/acceptor.c uses the second).  getppid(2) is
 * timed too, as the floor of any system call.  No network traffic: a
 * listen socket on 127.0.0.1 with nothing queued.  Linux only.
 *   gcc -O2 -std=c11 -D_GNU_SOURCE scripts/accept-queue-bench.c -o accept-queue-bench
 *   taskset -c 0 ./accept-queue-bench [CALLS]        (default 1000000) */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    long calls = argc > 1 ? atol(argv[1]) : 1000000;
    if (calls <= 0) {
        fprintf(stderr, "accept-queue-bench: CALLS must be a positive number\n");
        return 2;
    }
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 4096) < 0) {
        perror("accept-queue-bench: listen socket on 127.0.0.1");
        return 1;
    }

    double t0 = now_ns();
    for (long i = 0; i < calls; i++) {
        struct sockaddr_storage peer;
        socklen_t len = sizeof peer;
        if (accept4(lfd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC) >= 0) {
            fprintf(stderr, "accept-queue-bench: a connection arrived on the private socket\n");
            return 1;
        }
    }
    double t1 = now_ns();
    for (long i = 0; i < calls; i++) {
        struct tcp_info ti;
        socklen_t len = sizeof ti;
        if (getsockopt(lfd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 || ti.tcpi_unacked != 0) {
            perror("accept-queue-bench: getsockopt(TCP_INFO)");
            return 1;
        }
    }
    double t2 = now_ns();
    for (long i = 0; i < calls; i++)
        (void)getppid();
    double t3 = now_ns();

    printf("empty accept4:          %7.1f ns\n", (t1 - t0) / (double)calls);
    printf("getsockopt(TCP_INFO):   %7.1f ns\n", (t2 - t1) / (double)calls);
    printf("getppid (the floor):    %7.1f ns\n", (t3 - t2) / (double)calls);
    close(lfd);
    return 0;
}

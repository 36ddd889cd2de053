/* accesslog.c: the access log: formatting, per-worker buffering, flushing,
 * reopening.  See accesslog.h for the buffering rules. */
#include "accesslog.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pth.h>

#include "log.h"
#include "spawn.h"

#define AL_BUF_SIZE   (64 * 1024)
#define AL_FIELD_MAX  2048          /* escaped bytes kept of one field */
#define AL_LINE_MAX   (4 * AL_FIELD_MAX + 256)   /* longest possible line */
/* A pipe takes a write whole only up to PIPE_BUF bytes, so there a line must
 * fit in it: the parts that are not the four client-given fields (address,
 * time, status, length, quotes) take at most 123 bytes, and a field at most
 * its cap + 2 (put_escaped). */
#define AL_FIXED_MAX  160
#define AL_PIPE_FIELD_MAX ((PIPE_BUF - AL_FIXED_MAX) / 4 - 2)
_Static_assert(AL_PIPE_FIELD_MAX >= 64, "PIPE_BUF is at least 512 (POSIX)");

int accesslog_fd = -1;
static const char *al_path;
static int al_linked = -1;          /* al_path was a symbolic link at the first open */
static int al_format = ACCESSLOG_COMBINED;
static char *al_buf;
static size_t al_len;
static struct log_repeat al_write_failures;     /* disk full: say so, not per line */
static uint64_t al_lost;            /* bytes of lines lost since the last line said so */

static time_t al_second = -1;
static char al_time[40];            /* "[10/Oct/2000:13:55:36 -0700]" */
static size_t al_time_len;

int accesslog_open(const char *path, int format)
{
    int fd = log_file_open(path, &al_linked);
    if (fd < 0)
        return -1;
    tzset();                        /* before any chroot hides /etc/localtime */
    al_path = path;
    al_format = format;
    accesslog_fd = fd;
    return 0;
}

int accesslog_reachable(void)
{
    if (accesslog_fd < 0 || log_not_regular_file(accesslog_fd))
        return 0;
    return log_path_reachable(al_path);
}

int accesslog_chown(uid_t uid)
{
    if (accesslog_fd < 0)
        return 0;
    return log_file_give(accesslog_fd, al_path, uid);
}

static int al_piped = -1;          /* the log is a pipe or socket: -1 not looked yet */
static int al_cut;                  /* a failed write left a line unfinished in the log */
static size_t al_field_max = AL_FIELD_MAX;

static void look_at_log_kind(void)
{
    al_piped = log_not_regular_file(accesslog_fd);
    al_field_max = al_piped ? AL_PIPE_FIELD_MAX : AL_FIELD_MAX;
}

/* Writes n bytes, or as many as the log takes: the number written (errno
 * says why, when fewer). */
static size_t write_all(const char *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(accesslog_fd, p + done, n - done);
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w == 0)
            errno = EIO;
        break;
    }
    return done;
}

/* A flush that failed: lost bytes of lines are dropped (errno: why).  The
 * line a minute tells of every failure and byte since the last one. */
static void report_lost(size_t lost)
{
    al_lost += lost;
    unsigned long failed = log_repeat_failed(&al_write_failures);
    if (failed > 0) {
        log_errno(LOG_ERROR, "access log %s: write, %" PRIu64 " bytes of log lines lost, "
                  "failed writes: %lu since the last report", al_path, al_lost, failed);
        al_lost = 0;
    }
}

/* After a flush that went out whole: the failures no line has told of yet
 * (a full disk that was freed within the minute), once the minute is up,
 * or at once when the worker stops (no later flush would tell them). */
static void report_unsaid(int stopping)
{
    unsigned long unsaid = stopping ? log_repeat_untold(&al_write_failures)
                                    : log_repeat_recovered(&al_write_failures);
    if (unsaid == 0)
        return;
    log_msg(LOG_ERROR, "access log %s: %" PRIu64 " bytes of log lines lost, failed writes: "
            "%lu since the last report%s", al_path, al_lost, unsaid,
            stopping ? " (at exit)" : "; writing again");
    al_lost = 0;
}

/* The longest run of whole lines from p (n bytes) that fits in max bytes,
 * or the first line alone if it is longer. */
static size_t whole_lines(const char *p, size_t n, size_t max)
{
    if (n <= max)
        return n;
    for (size_t i = max; i > 0; i--)
        if (p[i - 1] == '\n')
            return i;
    const char *nl = memchr(p + max, '\n', n - max);
    return nl != NULL ? (size_t)(nl - p) + 1 : n;
}

/* A regular file opened O_APPEND takes each write whole, so the buffer goes
 * in one write.  A pipe takes a write whole only up to PIPE_BUF bytes (a
 * longer one may be split around another worker's when the pipe fills),
 * and a socket promises nothing: there the lines go in writes of whole
 * lines of at most PIPE_BUF bytes each, which keeps them whole on a pipe.
 * A write that failed part-way (disk full, file size limit) may leave a
 * line cut off: the next lines then start on a line of their own. */
void accesslog_flush(void)
{
    if (al_len == 0 || accesslog_fd < 0) {
        al_len = 0;
        return;
    }
    if (al_piped < 0)
        look_at_log_kind();
    if (al_cut) {
        /* the cut line must end before a line is written: lines written
         * after a failed newline would be glued onto it */
        if (write_all("\n", 1) != 1) {
            report_lost(al_len);
            al_len = 0;
            return;
        }
        al_cut = 0;
    }
    size_t max = al_piped ? PIPE_BUF : al_len;
    for (size_t off = 0; off < al_len;) {
        size_t n = whole_lines(al_buf + off, al_len - off, max);
        size_t w = write_all(al_buf + off, n);
        if (w < n) {
            /* the lines after a failed write go too: on a pipe a later
             * write could only land after a cut line */
            report_lost(al_len - off - w);
            al_cut = w > 0 && al_buf[off + w - 1] != '\n';
            al_len = 0;
            return;
        }
        off += n;
    }
    al_len = 0;
    report_unsaid(0);
}

void accesslog_stop(void)
{
    accesslog_flush();
    report_unsaid(1);
}

int accesslog_reopen(void)
{
    if (accesslog_fd < 0)
        return 0;
    if (log_not_regular_file(accesslog_fd))
        return 0;                   /* a terminal, pipe or device: nothing to rotate */
    int fd = log_file_open(al_path, &al_linked);
    if (fd < 0) {
        log_errno(LOG_ERROR, "cannot reopen access log %s (" LOG_REOPEN_RULE ")", al_path);
        return -1;
    }
    accesslog_flush();
    /* a line cut by a full disk is ended now, in the old file: the new one
     * may be that same file (SIGUSR1 once the disk was freed, no rename),
     * and the flush writes the newline only before lines */
    if (al_cut && write_all("\n", 1) == 1)
        al_cut = 0;
    struct stat old, new;
    int same = fstat(accesslog_fd, &old) == 0 && fstat(fd, &new) == 0 &&
               old.st_dev == new.st_dev && old.st_ino == new.st_ino;
    close(accesslog_fd);
    accesslog_fd = fd;
    look_at_log_kind();
    if (!same)
        al_cut = 0;
    return 0;
}

static void *flush_main(void *arg)
{
    (void)arg;
    for (;;) {
        pth_nap(pth_time(1, 0));
        accesslog_flush();
    }
    return NULL;
}

int accesslog_start(void)
{
    if (accesslog_fd < 0)
        return 0;
    look_at_log_kind();
    al_buf = malloc(AL_BUF_SIZE);
    if (al_buf == NULL) {
        log_errno(LOG_ERROR, "access log: cannot allocate its %d-byte buffer", AL_BUF_SIZE);
        return -1;
    }
    if (spawn_detached("accesslog", 32 * 1024, flush_main, NULL) == NULL) {
        log_errno(LOG_ERROR, "access log: cannot start the flush thread");
        return -1;
    }
    return 0;
}

/* "[dd/Mon/yyyy:HH:MM:SS +zzzz]" in local time, rebuilt once a second. */
static void update_time(void)
{
    time_t now = time(NULL);
    if (now == al_second)
        return;
    struct tm tm;
    localtime_r(&now, &tm);
    size_t n = strftime(al_time, sizeof al_time, "[%d/%b/%Y:%H:%M:%S %z]", &tm);
    al_time_len = n;
    al_second = now;
}

/* Appends s escaped: '"', '\\', control bytes and bytes >= 0x7f become \xHH
 * (so a client cannot forge log lines or fields); at most al_field_max + 2
 * bytes, a cut field ending in "...". */
static char *put_escaped(char *o, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    char *limit = o + al_field_max - 4;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (o >= limit) {
            memcpy(o, "...", 3);
            return o + 3;
        }
        if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') {
            *o++ = '\\';
            *o++ = 'x';
            *o++ = hex[ch >> 4];
            *o++ = hex[ch & 15];
        } else {
            *o++ = (char)ch;
        }
    }
    return o;
}

static char *put_quoted_or_dash(char *o, struct http_slice v)
{
    *o++ = '"';
    if (v.p == NULL || v.len == 0)
        *o++ = '-';
    else
        o = put_escaped(o, v.p, v.len);
    *o++ = '"';
    return o;
}

static char *put_u64(char *o, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0)
        *o++ = tmp[--n];
    return o;
}

static char *put_peer(char *o, const struct sockaddr_storage *ss)
{
    const void *addr = NULL;
    int family = ss->ss_family;
    if (family == AF_INET) {
        addr = &((const struct sockaddr_in *)ss)->sin_addr;
    } else if (family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)ss)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a6)) {       /* ::ffff:1.2.3.4 is logged as 1.2.3.4 */
            addr = &a6->s6_addr[12];
            family = AF_INET;
        } else {
            addr = a6;
        }
    }
    if (addr == NULL) {
        *o = '-';
        return o + 1;
    }
    /* keep-alive: the same peer many times in a row; inet_ntop once */
    static int last_family;
    static unsigned char last_addr[16];
    static char last_text[INET6_ADDRSTRLEN];
    static size_t last_len;
    size_t alen = family == AF_INET ? 4 : 16;
    if (family != last_family || memcmp(addr, last_addr, alen) != 0) {
        if (inet_ntop(family, addr, last_text, sizeof last_text) == NULL) {
            last_family = 0;
            *o = '-';
            return o + 1;
        }
        last_family = family;
        memcpy(last_addr, addr, alen);
        last_len = strlen(last_text);
    }
    memcpy(o, last_text, last_len);
    return o + last_len;
}

void accesslog_write(const struct conn *c, const struct http_request *req, uint64_t mark)
{
    if (al_buf == NULL)
        return;
    if (AL_BUF_SIZE - al_len < AL_LINE_MAX)
        accesslog_flush();
    update_time();

    char *o = al_buf + al_len;
    o = put_peer(o, &c->peer);
    memcpy(o, " - - ", 5);
    o += 5;
    memcpy(o, al_time, al_time_len);
    o += al_time_len;
    *o++ = ' ';
    *o++ = '"';
    if (req != NULL && req->method_name.p != NULL && req->target.p != NULL) {
        o = put_escaped(o, req->method_name.p, req->method_name.len);
        *o++ = ' ';
        o = put_escaped(o, req->target.p, req->target.len);
        if (req->version_major != 0) {
            memcpy(o, " HTTP/", 6);
            o += 6;
            *o++ = (char)('0' + req->version_major % 10);
            *o++ = '.';
            *o++ = (char)('0' + req->version_minor % 10);
        }
    } else {
        *o++ = '-';
    }
    *o++ = '"';
    *o++ = ' ';
    /* no response begun: the client went away first (nginx's 499) */
    int st = c->status;
    if (st < 100 || st > 999)
        st = 499;
    *o++ = (char)('0' + st / 100);
    *o++ = (char)('0' + st / 10 % 10);
    *o++ = (char)('0' + st % 10);
    *o++ = ' ';
    uint64_t now = c->out.bytes_sent + c->out.len;
    o = put_u64(o, now >= mark ? now - mark : 0);
    if (al_format == ACCESSLOG_COMBINED) {
        struct http_slice none = { NULL, 0 };
        *o++ = ' ';
        o = put_quoted_or_dash(o, req != NULL ? req->referer : none);
        *o++ = ' ';
        o = put_quoted_or_dash(o, req != NULL ? req->user_agent : none);
    }
    *o++ = '\n';
    al_len = (size_t)(o - al_buf);
}

/* io.c: non-blocking socket I/O that parks the calling Pth thread on EAGAIN.
 * Sockets are O_NONBLOCK from accept4(); we bypass pth_read/pth_write, which
 * probe with select() before every call and fcntl() the mode back and forth. */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "autoconfig.h"
#include "log.h"
#ifdef HAVE_SYS_SENDFILE_H
#include <sys/sendfile.h>
#endif

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif
#ifndef MSG_MORE
#define MSG_MORE 0
#endif

int (*io_under_pressure)(void);

void io_ack_now(int fd)
{
#ifdef TCP_QUICKACK
    /* 1 sends the pending ACK at once and leaves delayed-ACK mode until
     * the kernel sees the connection answer again */
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one) < 0)
        log_errno(LOG_DEBUG, "TCP_QUICKACK on a client socket");
#else
    (void)fd;
#endif
}

int io_waiter_init(struct io_waiter *w)
{
    timerclear(&w->guard_since);
    io_send_stall_reset(w);
    w->run = 0;
    /* The fd event needs some valid descriptor at creation; 0 is reset
     * (PTH_MODE_REUSE) before every real wait. */
    w->ev_fd = pth_event(PTH_EVENT_FD | PTH_UNTIL_FD_READABLE, 0);
    w->ev_time = pth_event(PTH_EVENT_TIME, pth_timeout(1, 0));
    if (w->ev_fd == NULL || w->ev_time == NULL) {
        io_waiter_free(w);
        return -1;
    }
    return 0;
}

void io_waiter_free(struct io_waiter *w)
{
    if (w->ev_fd != NULL)
        pth_event_free(w->ev_fd, PTH_FREE_THIS);
    if (w->ev_time != NULL)
        pth_event_free(w->ev_time, PTH_FREE_THIS);
    w->ev_fd = w->ev_time = NULL;
}

void *io_send_buffer_alloc(size_t size)
{
    void *p;
    return posix_memalign(&p, IO_SEND_ALIGN, size ? size : 1) == 0 ? p : NULL;
}

void io_clock_now(struct timeval *now)
{
#if defined(CLOCK_REALTIME_COARSE) || defined(CLOCK_REALTIME_FAST)
#ifdef CLOCK_REALTIME_COARSE
    const clockid_t coarse = CLOCK_REALTIME_COARSE;     /* Linux */
#else
    const clockid_t coarse = CLOCK_REALTIME_FAST;       /* FreeBSD */
#endif
    struct timespec ts;
    if (clock_gettime(coarse, &ts) == 0) {
        now->tv_sec = ts.tv_sec;
        now->tv_usec = (suseconds_t)(ts.tv_nsec / 1000);
        return;
    }
#endif
    gettimeofday(now, NULL);
}

void io_deadline(struct timeval *out, unsigned seconds)
{
    struct timeval now;
    io_clock_now(&now);
    io_deadline_after(out, &now, seconds);
}

static int wait_once(struct io_waiter *w, int fd, int want_write, const struct timeval *deadline,
                     pth_event_t also);

/* Waits at most a second at a time so that pressure is noticed, and asks
 * give_up before every wait too: a client that trickles a byte at a time
 * ends each wait early, and must not escape the check by that. */
static int wait_sliced(struct io_waiter *w, int fd, int want_write,
                       const struct timeval *deadline, int (*give_up)(struct io_waiter *, void *),
                       void *arg)
{
    if (give_up(w, arg)) {
        errno = ETIMEDOUT;
        return -1;
    }
    for (;;) {
        struct timeval slice;
        gettimeofday(&slice, NULL);
        slice.tv_sec += 1;
        int last = deadline != NULL && !timercmp(&slice, deadline, <);
        if (wait_once(w, fd, want_write, last ? deadline : &slice, NULL) == 0)
            return 0;
        if (errno != ETIMEDOUT || last)
            return -1;
        if (give_up(w, arg)) {
            errno = ETIMEDOUT;
            return -1;
        }
    }
}

static int guard_expired(struct io_waiter *w, void *arg)
{
    struct timeval now;
    (void)arg;
    if (!io_under_pressure())
        return 0;
    gettimeofday(&now, NULL);
    /* to the microsecond: whole seconds alone would cut a client up to a
     * second early (since x.9, now x+2.1: 1.2 s, not 2) */
    struct timeval since;
    timersub(&now, &w->guard_since, &since);
    return since.tv_sec >= IO_PRESSURE_GRACE;
}

int io_wait(struct io_waiter *w, int fd, int want_write, const struct timeval *deadline)
{
    if (timerisset(&w->guard_since) && io_under_pressure != NULL)
        return wait_sliced(w, fd, want_write, deadline, guard_expired, NULL);
    return wait_once(w, fd, want_write, deadline, NULL);
}

int io_wait_or(struct io_waiter *w, int fd, const struct timeval *deadline, pth_event_t also)
{
    return wait_once(w, fd, 0, deadline, also);
}

static int wait_once(struct io_waiter *w, int fd, int want_write, const struct timeval *deadline,
                     pth_event_t also)
{
    unsigned long goal = want_write ? PTH_UNTIL_FD_WRITEABLE : PTH_UNTIL_FD_READABLE;

    if (pth_event(PTH_EVENT_FD | goal | PTH_MODE_REUSE, w->ev_fd, fd) == NULL)
        return -1;
    if (deadline != NULL) {
        /* (a deadline already past needs no clock read here: its timer
         * fires on the scheduler's next pass, and the wait times out) */
        if (pth_event(PTH_EVENT_TIME | PTH_MODE_REUSE | PTH_MODE_CHAIN, w->ev_time, w->ev_fd,
                      pth_time(deadline->tv_sec, deadline->tv_usec)) == NULL)
            return -1;
    }
    if (also != NULL)
        pth_event_concat(w->ev_fd, also, NULL);
    w->run = 0;                     /* the others run while we wait */
    pth_wait(w->ev_fd);
    if (also != NULL)
        pth_event_isolate(also);    /* the caller's again, out of our ring */
    if (pth_event_status(w->ev_fd) == PTH_STATUS_OCCURRED)
        return 0;
    if (also != NULL && pth_event_status(also) == PTH_STATUS_OCCURRED)
        return 1;
    if (pth_event_status(w->ev_fd) == PTH_STATUS_FAILED) {
        errno = EBADF;
        return -1;
    }
    errno = ETIMEDOUT;
    return -1;
}

ssize_t io_read(struct io_waiter *w, int fd, void *buf, size_t len, const struct timeval *deadline)
{
    for (;;) {
        ssize_t n = read(fd, buf, len);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        io_drained(fd, 0);
        if (io_wait(w, fd, 0, deadline) < 0)
            return -1;
    }
}

/* One buffer goes out with send(): sendmsg() copies in and checks the
 * msghdr and the iovec array first, ~150 ns of a ~7 us keep-alive reply. */
static ssize_t send_iov(int fd, struct iovec *iov, int iovcnt, int more)
{
    int flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0);
    if (iovcnt == 1)
        return send(fd, iov->iov_base, iov->iov_len, flags);
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = iov;
    msg.msg_iovlen = (size_t)iovcnt;
    return sendmsg(fd, &msg, flags);
}

/* A send that stalls while handlers are scarce must keep up a minimum
 * average rate, or a slow reader (slowhttptest -X) could pin handlers.  The
 * rate is measured from the first time the socket buffer was full (bytes
 * the kernel merely buffered say nothing about the reader), over every
 * send since (see struct io_waiter). */
static int send_too_slow(struct io_waiter *w, void *arg)
{
    struct timeval now;
    (void)arg;
    if (io_under_pressure == NULL || !io_under_pressure() || !timerisset(&w->send_stall_since))
        return 0;
    gettimeofday(&now, NULL);
    double secs = (double)(now.tv_sec - w->send_stall_since.tv_sec) +
                  (double)(now.tv_usec - w->send_stall_since.tv_usec) / 1e6;
    return secs >= IO_PRESSURE_GRACE && (double)w->send_stall_sent < secs * IO_PRESSURE_MIN_RATE;
}

static int wait_writable(struct io_waiter *w, int fd, const struct timeval *deadline)
{
    io_drained(fd, 1);              /* only called after EAGAIN */
    if (!timerisset(&w->send_stall_since))
        gettimeofday(&w->send_stall_since, NULL);
    if (io_under_pressure == NULL)
        return wait_once(w, fd, 1, deadline, NULL);
    return wait_sliced(w, fd, 1, deadline, send_too_slow, NULL);
}

static inline void count_sent(struct io_waiter *w, size_t n)
{
    w->run += n;
    if (timerisset(&w->send_stall_since))
        w->send_stall_sent += n;
}

int io_writev_all(struct io_waiter *w, int fd, struct iovec *iov, int iovcnt,
                  unsigned timeout, int more, size_t *written)
{
    size_t ignored;
    if (written == NULL)
        written = &ignored;
    *written = 0;
    struct timeval deadline;
    int have_deadline = 0;

    while (iovcnt > 0 && iov->iov_len == 0) {
        iov++;
        iovcnt--;
    }
    while (iovcnt > 0) {
        ssize_t n = send_iov(fd, iov, iovcnt > IOV_MAX ? IOV_MAX : iovcnt, more);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ENOTSOCK)  /* pipes and files, e.g. in tests */
                n = writev(fd, iov, iovcnt > IOV_MAX ? IOV_MAX : iovcnt);
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return -1;
            if (!have_deadline) {
                io_deadline(&deadline, timeout);
                have_deadline = 1;
            }
            if (wait_writable(w, fd, &deadline) < 0)
                return -1;
            continue;
        }
        have_deadline = 0;   /* progress: the send timeout starts again */
        count_sent(w, (size_t)n);
        *written += (size_t)n;
        while (iovcnt > 0 && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (char *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
            /* a client reading as fast as we send never makes us wait:
             * a body sent from memory lets the others run every IO_RUN */
            io_run_add(w, 0);
        }
    }
    return 0;
}

/* The copy where sendfile is missing or refuses the file: a pread into the
 * caller's bounce buffer (not the handler's stack, which may be 16 KiB),
 * then a write of it. */
static int copy_by_pread(struct io_waiter *w, int fd, int file_fd, off_t *offset, uint64_t *len,
                         unsigned timeout, char *bounce, size_t bounce_cap)
{
    while (*len > 0) {
        size_t want = *len < bounce_cap ? (size_t)*len : bounce_cap;
        ssize_t r = pread(file_fd, bounce, want, *offset);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = ENODATA;
            return -1;
        }
        struct iovec iov = { bounce, (size_t)r };
        size_t written = 0;
        int rc = io_writev_all(w, fd, &iov, 1, timeout, (uint64_t)r < *len, &written);
        *offset += (off_t)written;
        *len -= written;
        if (rc < 0)
            return -1;
        io_run_add(w, 0);       /* io_writev_all counted the block: yield if the run is long */
    }
    return 0;
}

int io_sendfile_all(struct io_waiter *w, int fd, int file_fd, off_t *offset, uint64_t len,
                    unsigned timeout, size_t chunk, char *bounce, size_t bounce_cap)
{
#if defined(HAVE_SENDFILE) && defined(HAVE_SYS_SENDFILE_H)
    struct timeval deadline;
    int have_deadline = 0;
    /* Linux sends at most 2 GiB less a page per call; and size_t may be
     * narrower than a file (32 bits, with a 64-bit off_t) */
    const size_t most = chunk > 0 ? chunk : (size_t)1 << 30;

    while (len > 0) {
        size_t want = len > most ? most : (size_t)len;
        ssize_t n = sendfile(fd, file_fd, offset, want);
        if (n == 0) {           /* file shrank under us: cannot keep our promise */
            errno = ENODATA;
            return -1;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)
                /* a file sendfile cannot read (a file system without
                 * splice): the same bytes by pread and write */
                return copy_by_pread(w, fd, file_fd, offset, &len, timeout, bounce, bounce_cap);
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return -1;
            if (!have_deadline) {
                io_deadline(&deadline, timeout);
                have_deadline = 1;
            }
            if (wait_writable(w, fd, &deadline) < 0)
                return -1;
            continue;
        }
        have_deadline = 0;
        count_sent(w, (size_t)n);
        /* the socket took a whole chunk and more is due: let the others run
         * first.  A shorter send usually means the buffer is full and a wait
         * for room follows; a reader fast enough that none does is caught
         * by the run count. */
        if ((size_t)n == want && want < len) {
            w->run = 0;
            pth_yield(NULL);
        } else if ((uint64_t)n < len) {
            io_run_add(w, 0);   /* short sends that never wait count too */
        }
        len -= (uint64_t)n;
    }
    return 0;
#else
    (void)chunk;                /* a write per bounce buffer: chunk is moot */
    return copy_by_pread(w, fd, file_fd, offset, &len, timeout, bounce, bounce_cap);
#endif
}

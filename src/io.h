/* io.h: non-blocking socket I/O for Pth threads, with deadlines.
 * Every call tries the system call first and only parks the thread in the
 * Pth scheduler on EAGAIN, so a ready socket costs exactly one system call. */
#ifndef COWD_IO_H
#define COWD_IO_H

#include <errno.h>
#include <pth.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/time.h>
#include <sys/uio.h>

/* Per-thread wait state: two Pth events allocated once and reused for every
 * wait, so waiting allocates nothing. */
struct io_waiter {
    pth_event_t ev_fd;
    pth_event_t ev_time;
    /* Slow-client defence: while set (non-zero), a wait fails with
     * ETIMEDOUT once the handler pool is under pressure and this moment is
     * more than IO_PRESSURE_GRACE seconds ago (a request head or body that
     * has not arrived by then is an attack or hopeless), checked when the
     * wait begins and every second of it. */
    struct timeval guard_since;
    /* The minimum send rate under pressure (IO_PRESSURE_MIN_RATE) is
     * measured from the first time the socket buffer was full, across all
     * the sends until the connection next waits for a new request
     * (io_send_stall_reset): measured per send, a reader that made room
     * for each 8 KiB flush within the grace could hold a handler through
     * a thousand pipelined responses. */
    struct timeval send_stall_since;
    uint64_t send_stall_sent;   /* bytes sent since then */
    size_t run;                 /* work done since this thread last waited or let
                                   the others run (io_run_add) */
};

/* Set by the server: non-zero when no handler is idle or connections are
 * waiting for one.  NULL: never under pressure. */
extern int (*io_under_pressure)(void);
#define IO_PRESSURE_GRACE 2         /* seconds */
#define IO_PRESSURE_MIN_RATE 16384  /* bytes/s a stalled send must average */

int  io_waiter_init(struct io_waiter *w);
void io_waiter_free(struct io_waiter *w);

/* A new connection, or one that waits for the client's next request: its
 * sends start again with no stall behind them. */
static inline void io_send_stall_reset(struct io_waiter *w)
{
    timerclear(&w->send_stall_since);
    w->send_stall_sent = 0;
}

/* Work that never waits (a client sending a body, or reading pipelined
 * responses, as fast as we go) must not hold up the worker's other
 * connections: every IO_RUN bytes of it (of responses sent, of a body
 * received; a pipelined request counts as a few KiB more), the others run
 * first, as between a long sendfile's chunks.  Sends count themselves; any
 * wait starts the count again. */
#define IO_RUN (256 * 1024)
static inline void io_run_add(struct io_waiter *w, size_t n)
{
    w->run += n;
    if (w->run >= IO_RUN) {
        w->run = 0;
        pth_yield(NULL);
    }
}

/* The wall-clock time that deadlines start from, at the kernel tick's
 * resolution (a few ms) where the system has a coarse clock: deadlines are
 * whole seconds, and a handler reads this once per request, where a precise
 * clock read costs five times as much.  Same epoch as gettimeofday, which
 * Pth's timers compare against; at most one tick behind it. */
void io_clock_now(struct timeval *now);

/* Absolute deadline `seconds` from now. */
void io_deadline(struct timeval *out, unsigned seconds);

/* Absolute deadline `seconds` after `from` (a time already read: no clock
 * read here). */
static inline void io_deadline_after(struct timeval *out, const struct timeval *from,
                                     unsigned seconds)
{
    *out = *from;
    out->tv_sec += seconds;
}

/* Tell the scheduler that fd has no more to give (want_write 0: a read
 * said EAGAIN) or no room (1: a write said EAGAIN).  With the epoll
 * backend's persistent, edge-triggered registrations, a wait after this
 * needs no epoll_ctl.
 * Never call it without such evidence: a wrongly cleared readiness would
 * make the next wait sleep through data that is already there. */
static inline void io_drained(int fd, int want_write)
{
    pth_fdeagain(fd, want_write ? PTH_UNTIL_FD_WRITEABLE : PTH_UNTIL_FD_READABLE);
}

/* A read(2) on the stream socket fd returned fewer bytes than asked for,
 * but some: its receive queue is empty, and the scheduler may treat it
 * like EAGAIN (saving the re-arm system call before the next wait) --
 * unless the peer's FIN or an error was already reported, which raises no
 * new edge (pth_fddrained checks that). */
static inline void io_short_read(int fd)
{
    pth_fddrained(fd);
}

/* Part of a request is here and the caller is about to wait for the rest:
 * acknowledge it now.  Accepted sockets start with delayed ACKs (see
 * listen.c: the reply carries the ACK), and a client that holds the rest of
 * its request until what it sent is acknowledged (Nagle, no TCP_NODELAY)
 * would otherwise wait for the delayed-ACK timer, about 40 ms.  Linux only;
 * a failure costs only that wait, and is logged at debug level. */
void io_ack_now(int fd);

/* Park until fd is readable (want_write 0) or writable (1), or until the
 * deadline (NULL: none).  0 when ready, -1 with errno ETIMEDOUT otherwise. */
int io_wait(struct io_waiter *w, int fd, int want_write, const struct timeval *deadline);

/* io_wait for readability that also ends when `also` (the caller's own
 * event, e.g. a message port's) occurs first: then 1. */
int io_wait_or(struct io_waiter *w, int fd, const struct timeval *deadline, pth_event_t also);

/* read(2) that waits on EAGAIN.  >0 bytes, 0 end of stream, -1 error
 * (errno ETIMEDOUT when the deadline passed). */
ssize_t io_read(struct io_waiter *w, int fd, void *buf, size_t len, const struct timeval *deadline);

/* Sends the whole iovec array (modified in place), resuming partial writes.
 * `timeout` seconds without any progress fails with ETIMEDOUT.
 * `more`: hint that more data follows at once (MSG_MORE where supported).
 * *written (if not NULL) gets the bytes sent, also when it fails. */
int io_writev_all(struct io_waiter *w, int fd, struct iovec *iov, int iovcnt,
                  unsigned timeout, int more, size_t *written);

/* FreeBSD and OpenBSD have no ENODATA: there the shrunk file is told by
 * ENOATTR, which nothing else on this path returns. */
#ifndef ENODATA
#define ENODATA ENOATTR
#endif

/* Sends len bytes of file_fd from *offset (advanced by what left) with
 * sendfile(2), or pread into bounce (bounce_cap bytes) and write where
 * sendfile is missing or refuses the file (EINVAL, ENOSYS, EOPNOTSUPP: a
 * file system that cannot splice). Same timeout rule; errno ENODATA when the file ends
 * before len bytes (it shrank).  At most chunk bytes go in one sendfile
 * call; when the socket took them all and more is due, the caller yields
 * first (0: no limit). */
int io_sendfile_all(struct io_waiter *w, int fd, int file_fd, off_t *offset, uint64_t len,
                    unsigned timeout, size_t chunk, char *bounce, size_t bounce_cap);

/* Memory whose bytes the kernel copies into sockets (cached bodies, output
 * buffers), aligned to IO_SEND_ALIGN; release with free().  NULL when out
 * of memory.  Why: the kernel's copy from user memory (rep movsb) ran at
 * half speed from malloc's 16-byte alignment on the AMD EPYC the suite ran
 * on; from 32 or 64 it is at full speed (docs/bench/HISTORY.md,
 * 2026-11-27). */
#define IO_SEND_ALIGN 64
void *io_send_buffer_alloc(size_t size);

#endif

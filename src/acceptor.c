/* acceptor.c: the accept thread.  Takes a message from the depot's pool
 * before accepting, so that an exhausted pool stops accepting (back-pressure
 * into the kernel's listen queue) instead of piling up descriptors, and a
 * slot of --max-connections just before each accept (never while asleep).
 *
 * Stopping (graceful shutdown): acceptor_stop() makes a private pipe
 * readable; every accept thread waits on its listen socket and that pipe
 * (or, with the pool empty, on a free message and that pipe), so each
 * wakes, closes its listen socket and returns; one waiting at
 * --max-connections is woken by depot_stop_accepting().  Else new clients
 * queued on a socket nobody would accept from until the worker exited.
 * Nothing is shut down on the socket itself: several workers may share it.
 *
 * Several workers sharing one listen socket all wake when it becomes
 * readable (the Pth scheduler polls it); the losers' accept4 returns EAGAIN
 * and they wait again.  n_empty counts those empty wake-ups.
 *
 * The listen socket's readiness is edge-triggered, so the queue must be
 * known empty before the thread sleeps.  An accept4 that finds it empty
 * costs about 1.1 us on Linux (the kernel allocates the new socket and its
 * file before it looks at the queue, then frees them), some 2 % of a
 * connection of five short requests; where the kernel reports
 * the accept queue's length (TCP_INFO on Linux) one getsockopt of ~0.2 us
 * says so instead.  It is lost-wakeup free for the same reason EAGAIN is:
 * a connection queued after the look raises a new edge. */
#include "acceptor.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "date_cache.h"
#include "depot.h"
#include "filecache.h"
#include "io.h"
#include "listen.h"
#include "log.h"
#include "spawn.h"

/* An error of the connection being accepted, not of the listen socket:
 * the next one may be fine at once.  Linux passes on the new socket's
 * pending network errors (accept(2): treat them like EAGAIN by retrying).
 * Not EPERM: a security module or seccomp filter refuses before the
 * queue is touched, so it would come back at once, for ever. */
static int peer_error(int e)
{
    switch (e) {
    case EINTR: case ECONNABORTED: case EPROTO:
    case ENETDOWN: case ENETUNREACH: case EHOSTDOWN: case EHOSTUNREACH:
    case ENOPROTOOPT: case EOPNOTSUPP:
#ifdef ENONET
    case ENONET:
#endif
        return 1;
    default:
        return 0;
    }
}

static int stop_pipe[2] = { -1, -1 };
static int stopping;
static unsigned long n_accepted, n_empty;

static int stop_pipe_init(void)
{
    if (stop_pipe[0] >= 0)
        return 0;
    if (pipe(stop_pipe) < 0)
        return -1;
    for (int i = 0; i < 2; i++)
        if (fcntl(stop_pipe[i], F_SETFD, FD_CLOEXEC) < 0 ||
            fcntl(stop_pipe[i], F_SETFL, O_NONBLOCK) < 0)
            return -1;
    return 0;
}

int acceptor_stop(void)
{
    stopping = 1;
    if (stop_pipe[1] < 0)
        return 0;
    while (write(stop_pipe[1], "s", 1) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return 0;
}

void acceptor_stats(unsigned long *accepted, unsigned long *empty_wakeups)
{
    *accepted = n_accepted;
    *empty_wakeups = n_empty;
}

/* One descriptor held in reserve: when accept fails for want of
 * descriptors, it is given up to accept the waiting client, tell it 503,
 * and close, rather than leave clients hanging in the listen queue while
 * the accept thread sleeps (the nginx/libev "reserve fd" trick). */
static int reserve_fd = -1;

static void reserve_open(void)
{
    if (reserve_fd < 0)
        reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

struct acceptor {
    int lfd;
    struct depot *d;
    pth_event_t ev_listen;      /* the listen socket or the stop pipe */
    pth_event_t ev_client;      /* alone, not in ev_listen's ring: the wait at --max-connections */
    pth_event_t ev_stop;        /* the stop pipe, alone: the wait for a free message */
    /* the refused client's drain: each accept thread its own, since a Pth
     * event waited on by two threads at once corrupts the scheduler's
     * wait lists (two addresses can refuse at the same time once the
     * reserve is taken back after an accept) */
    struct io_waiter refuse_waiter;
};

static int accept_nonblock(int lfd, struct sockaddr_storage *peer, socklen_t *len)
{
    *len = sizeof *peer;
#ifdef SOCK_NONBLOCK
    return accept4(lfd, (struct sockaddr *)peer, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
#else
    int fd = accept(lfd, (struct sockaddr *)peer, len);
    if (fd >= 0) {
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
            fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
    }
    return fd;
#endif
}

/* Out of descriptors: 1 if one waiting client got a 503, 0 if none was
 * waiting, -1 if the reserve is gone too or accept failed otherwise. */
static int refuse_one(struct acceptor *a)
{
    static const char body[] =
        "<!DOCTYPE html>\n<html><head><title>503 Service Unavailable</title></head>\n"
        "<body><h1>503 Service Unavailable</h1></body></html>\n";
    char head[256];

    if (reserve_fd < 0)
        return -1;
    close(reserve_fd);
    reserve_fd = -1;
    struct sockaddr_storage peer;
    socklen_t peer_len;
    int fd = accept_nonblock(a->lfd, &peer, &peer_len);
    int nobody = fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    if (fd >= 0) {
        int n = snprintf(head, sizeof head,
                         "HTTP/1.1 503 Service Unavailable\r\nDate: %s\r\nServer: cowd\r\n"
                         "Retry-After: 1\r\nConnection: close\r\n"
                         "Content-Type: text/html; charset=utf-8\r\nContent-Length: %zu\r\n\r\n",
                         date_cache_now(), sizeof body - 1);
        struct iovec iov[2] = { { head, (size_t)n }, { (void *)body, sizeof body - 1 } };
        ssize_t w = writev(fd, iov, 2);   /* best effort: a fresh socket's buffer is empty */
        (void)w;
        /* Closing with the request unread would reset the connection and
         * could destroy the 503 before the client reads it: half-close and
         * drain what arrives within a moment first. */
        shutdown(fd, SHUT_WR);
        struct timeval until;
        io_deadline(&until, 0);
        until.tv_usec += 20000;          /* 20 ms: enough for a request in flight on the same host or LAN */
        if (until.tv_usec >= 1000000) {
            until.tv_sec++;
            until.tv_usec -= 1000000;
        }
        char sink[4096];
        for (int i = 0; i < 16; i++) {
            ssize_t r = io_read(&a->refuse_waiter, fd, sink, sizeof sink, &until);
            if (r <= 0)
                break;
        }
        close(fd);
    }
    reserve_open();
    return fd >= 0 ? 1 : nobody ? 0 : -1;
}

/* Connections waiting in lfd's accept queue, or -1 where the system does
 * not say (then only accept4 can tell). */
static int accept_queue_len(int lfd)
{
#if defined(__linux__) && defined(TCP_INFO)
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    /* A listening socket's tcpi_unacked is its accept queue's length and
     * tcpi_sacked its backlog, never 0 there: a kernel that does not alias
     * them for listeners reports 0 for both and is not trusted. */
    if (getsockopt(lfd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
        len >= offsetof(struct tcp_info, tcpi_sacked) + sizeof ti.tcpi_sacked &&
        ti.tcpi_state == TCP_LISTEN && ti.tcpi_sacked > 0)
        return (int)ti.tcpi_unacked;
#else
    (void)lfd;
#endif
    return -1;
}

struct acceptor *acceptor_new(int lfd, struct depot *d)
{
    struct acceptor *a = calloc(1, sizeof *a);
    if (a == NULL) {
        log_errno(LOG_ERROR, "acceptor: out of memory");
        return NULL;
    }
    a->lfd = lfd;
    a->d = d;
    if (stop_pipe_init() < 0) {
        log_errno(LOG_ERROR, "acceptor: cannot create the stop pipe");
        free(a);
        return NULL;
    }
    pth_event_t ev_stop = pth_event(PTH_EVENT_FD | PTH_UNTIL_FD_READABLE, stop_pipe[0]);
    a->ev_listen = pth_event(PTH_EVENT_FD | PTH_UNTIL_FD_READABLE, lfd);
    a->ev_client = pth_event(PTH_EVENT_FD | PTH_UNTIL_FD_READABLE, lfd);
    a->ev_stop = pth_event(PTH_EVENT_FD | PTH_UNTIL_FD_READABLE, stop_pipe[0]);
    if (ev_stop == NULL || a->ev_listen == NULL || a->ev_client == NULL ||
        a->ev_stop == NULL || io_waiter_init(&a->refuse_waiter) < 0) {
        log_errno(LOG_ERROR, "acceptor: cannot create wait events");
        pth_event_free(ev_stop, PTH_FREE_THIS);         /* each a no-op if NULL */
        pth_event_free(a->ev_listen, PTH_FREE_THIS);
        pth_event_free(a->ev_client, PTH_FREE_THIS);
        pth_event_free(a->ev_stop, PTH_FREE_THIS);
        io_waiter_free(&a->refuse_waiter);              /* safe if never set up */
        free(a);
        return NULL;
    }
    pth_event_concat(a->ev_listen, ev_stop, NULL);
    reserve_open();
    return a;
}

/* Gives back a slot of --max-connections held for a client not accepted;
 * 1 if that woke a thread waiting at the cap (and so yielded). */
static int give_back_slot(struct depot *d, int *counted, int *over)
{
    if (!*counted)
        return 0;
    *counted = 0;
    *over = 0;
    return depot_conn_closed(d);
}

void acceptor_run(struct acceptor *a)
{
    unsigned long peer_errors = 0;
    /* said at most once a minute for this address, as long as they last */
    struct log_repeat short_of = { 0, 0 }, refused_by_kernel = { 0, 0 };
    int lfd = a->lfd;
    char where[LISTEN_ADDR_MAX];
    listen_describe(lfd, where, sizeof where);
    struct depot *d = a->d;
    pth_event_t ev_listen = a->ev_listen, ev_client = a->ev_client;
    /* connections known to wait in the accept queue: -1 unknown (try
     * accept4), 0 look again before the next accept4 */
    int queued = -1;

    while (!stopping) {
        /* waits while the pool is empty; NULL: stopping */
        struct depot_msg *m = depot_msg_take(d, 1, a->ev_stop);
        if (m == NULL)
            break;
        m->conn.requests = 0;
        /* counted: this thread holds a slot of --max-connections for the
         * client it is about to accept.  It is taken only once a client is
         * known or likely to wait, and given back before sleeping: a slot
         * held by a thread asleep on a quiet address would shut clients of
         * the other addresses out. */
        int fd = -1, woke = 0, counted = 0;
        /* over: the slot is one over the cap, to be made by closing an
         * idle connection once this client is accepted */
        int over = 0;
        while (!stopping) {
            if (queued == 0 && (queued = accept_queue_len(lfd)) == 0) {
                /* giving the slot back may run a thread waiting for it:
                 * then look again, since nothing may yield between the look
                 * and the wait's io_drained, or an edge could be lost */
                if (give_back_slot(d, &counted, &over))
                    continue;
                io_drained(lfd, 0);
                pth_wait(ev_listen);
                woke = 1;
                queued = -1;
                continue;
            }
            if (!counted) {
                over = depot_conn_reserve(d, lfd, ev_client);  /* waits at --max-connections */
                counted = 1;
                if (stopping)
                    break;
            }
            fd = accept_nonblock(lfd, &m->conn.peer, &m->conn.peer_len);
            if (fd >= 0) {
                queued = queued > 0 ? queued - 1 : 0;
                break;
            }
            queued = -1;
            if (over) {
                /* Out of descriptors, the file cache's go first, then the
                 * idle connection's (in every process sharing the socket
                 * that is out of them).  Else the slot over the cap is
                 * given back before anything that may yield: a nap, a
                 * refusal, a sleep. */
                int e = errno;
                if (e == EMFILE || e == ENFILE) {
                    if (filecache_shed_fds(8) > 0)
                        continue;
                    if (depot_conn_make_room(d)) {
                        over = 0;
                        continue;
                    }
                }
                if (give_back_slot(d, &counted, &over)) {
                    queued = 0;
                    continue;
                }
                errno = e;
            }
            int empty = errno == EAGAIN || errno == EWOULDBLOCK;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                int e = errno;
                int out_of_fds = e == EMFILE || e == ENFILE;
                /* out of descriptors: the file cache gives some back first */
                if (out_of_fds && filecache_shed_fds(8) > 0)
                    continue;
                /* out of descriptors or memory: answer 503 with the reserve
                 * descriptor if we can, and back off instead of spinning */
                int refused = out_of_fds ? refuse_one(a) : -1;
                if (refused != 0) {
                    unsigned long times = log_repeat_failed(&short_of);
                    if (times > 0) {
                        errno = e;
                        log_errno(LOG_ERROR, "accept on %s: %s, backing off (times since last "
                                  "logged: %lu)", where, refused > 0
                                  ? "out of descriptors, refusing with 503"
                                  : "out of resources", times);
                    }
                    pth_nap(pth_time(0, refused > 0 ? 1000 : 100000));
                    continue;
                }
                /* Nobody waits: the reserve's accept, with a descriptor
                 * free, found the queue empty (Linux's accept4 takes a
                 * descriptor before it looks at the queue, so EMFILE says
                 * nothing of clients).  Sleep on the listen socket as for
                 * EAGAIN; the next client raises an edge and gets its 503
                 * then.  Not a retry every 100 ms, holding a slot, for as
                 * long as descriptors stay short. */
                empty = 1;
            }
            if (empty) {
                if (give_back_slot(d, &counted, &over)) {
                    queued = 0;
                    continue;
                }
                io_drained(lfd, 0);
                if (woke)
                    n_empty++;      /* readable, but another process took it */
                pth_wait(ev_listen);
                woke = 1;
            } else if (!peer_error(errno)) {
                unsigned long times = log_repeat_failed(&refused_by_kernel);
                if (times > 0)
                    log_errno(LOG_WARN, "accept on %s (failures since last logged: %lu; "
                              "retrying every 10 ms)", where, times);
                pth_nap(pth_time(0, 10000));
            } else if (++peer_errors % 64 == 0) {
                /* so many in a row may not be the connections' after all:
                 * a pause now and then, never a spin that starves the
                 * process's other threads */
                pth_nap(pth_time(0, 10000));
            }
        }
        if (fd < 0) {
            depot_msg_return(d, m);
            give_back_slot(d, &counted, &over);
            break;
        }
        n_accepted++;
        /* a shortage or refusal that ended within its minute is told once */
        unsigned long unsaid;
        if ((unsaid = log_repeat_recovered(&short_of)) > 0 ||
            (unsaid = log_repeat_recovered(&refused_by_kernel)) > 0)
            log_msg(LOG_INFO, "accept on %s works again (failures since last logged: %lu)",
                    where, unsaid);
        /* the reserve is reopened right after a refusal, but that fails
         * when the system's file table is full (ENFILE): take it back once
         * descriptors are, or every later shortage would go unanswered */
        if (reserve_fd < 0)
            reserve_open();
        if (over)       /* nothing yielded since the look: the idle one is there */
            depot_conn_make_room(d);
#if !defined(__linux__) && !defined(__FreeBSD__) && !defined(__OpenBSD__) && \
    !defined(__NetBSD__) && !defined(__DragonFly__)
        /* elsewhere TCP_NODELAY may not be inherited from the listener */
        int one = 1;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 && errno != EOPNOTSUPP)
            log_errno(LOG_DEBUG, "TCP_NODELAY on accepted socket");
#endif
        m->conn.fd = fd;
        m->conn.parked_before = 0;
        io_clock_now(&m->conn.queued);
        m->conn.idle = (struct depot_idle){ .seq = 0 };  /* a pooled message: no wait to go on with */
        depot_submit(d, m);
    }
    pth_event_free(ev_listen, PTH_FREE_ALL);
    pth_event_free(ev_client, PTH_FREE_THIS);
    pth_event_free(a->ev_stop, PTH_FREE_THIS);
    io_waiter_free(&a->refuse_waiter);
    close(lfd);
    free(a);
}

static void *acceptor_main(void *arg)
{
    acceptor_run(arg);
    return NULL;
}

int acceptor_spawn(struct acceptor *a)
{
    return spawn_detached("acceptor", 0, acceptor_main, a) == NULL ? -1 : 0;
}

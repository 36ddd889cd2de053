/* acceptor.c: the accept thread.  Takes a message from the depot's pool
 * before accepting, so that an exhausted pool stops accepting (back-pressure
 * into the kernel's listen queue) instead of piling up descriptors.
 *
 * Stopping (graceful shutdown): acceptor_stop() makes a private pipe
 * readable; every accept thread waits on its listen socket and that pipe,
 * so each wakes, closes its listen socket and returns.  Nothing is shut
 * down on the socket itself: several workers may share it.
 *
 * Several workers sharing one listen socket all wake when it becomes
 * readable (the Pth scheduler polls it); the losers' accept4 returns EAGAIN
 * and they wait again.  n_empty counts those empty wake-ups. */
#include "acceptor.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "depot.h"
#include "io.h"
#include "log.h"

struct acceptor_arg { int fd; struct depot *d; };

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

static int accept_nonblock(int lfd, struct sockaddr_storage *peer, socklen_t *len)
{
    *len = sizeof *peer;
#ifdef SOCK_NONBLOCK
    return accept4(lfd, (struct sockaddr *)peer, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
#else
    int fd = accept(lfd, (struct sockaddr *)peer, len);
    if (fd >= 0) {
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    return fd;
#endif
}

void acceptor_run(int lfd, struct depot *d)
{
    unsigned long emfile_count = 0;
    int one = 1;

    if (stop_pipe_init() < 0) {
        log_errno(LOG_ERROR, "acceptor: cannot create the stop pipe");
        return;
    }
    pth_event_t ev_listen = pth_event(PTH_EVENT_FD | PTH_UNTIL_FD_READABLE, lfd);
    pth_event_t ev_stop = pth_event(PTH_EVENT_FD | PTH_UNTIL_FD_READABLE, stop_pipe[0]);
    if (ev_listen == NULL || ev_stop == NULL) {
        log_errno(LOG_ERROR, "acceptor: cannot create wait events");
        return;
    }
    pth_event_concat(ev_listen, ev_stop, NULL);
    while (!stopping) {
        struct depot_msg *m = depot_msg_take_new(d);  /* waits at --max-connections */
        int fd = -1, woke = 0;
        while (!stopping) {
            fd = accept_nonblock(lfd, &m->conn.peer, &m->conn.peer_len);
            if (fd >= 0)
                break;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (woke)
                    n_empty++;      /* readable, but another process took it */
                pth_wait(ev_listen);
                woke = 1;
            } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* out of descriptors or memory: back off instead of spinning */
                if (emfile_count++ % 100 == 0)
                    log_errno(LOG_ERROR, "accept: backing off for 100 ms");
                pth_nap(pth_time(0, 100000));
            } else if (errno != EINTR && errno != ECONNABORTED && errno != EPROTO) {
                log_errno(LOG_WARN, "accept");
                pth_nap(pth_time(0, 10000));
            }
        }
        if (fd < 0) {
            depot_msg_return(d, m);
            depot_conn_closed(d);
            break;
        }
        n_accepted++;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 && errno != EOPNOTSUPP)
            log_errno(LOG_DEBUG, "TCP_NODELAY on accepted socket");
        m->conn.fd = fd;
        depot_submit(d, m);
    }
    pth_event_free(ev_listen, PTH_FREE_ALL);
    close(lfd);
}

static void *acceptor_main(void *arg)
{
    struct acceptor_arg *a = arg;
    acceptor_run(a->fd, a->d);
    free(a);
    return NULL;
}

int acceptor_spawn(int listen_fd, struct depot *d)
{
    struct acceptor_arg *a = malloc(sizeof *a);
    if (a == NULL)
        return -1;
    a->fd = listen_fd;
    a->d = d;
    pth_attr_t attr = pth_attr_new();
    pth_attr_set(attr, PTH_ATTR_JOINABLE, FALSE);
    pth_attr_set(attr, PTH_ATTR_NAME, "acceptor");
    pth_t t = pth_spawn(attr, acceptor_main, a);
    pth_attr_destroy(attr);
    if (t == NULL) {
        free(a);
        return -1;
    }
    return 0;
}

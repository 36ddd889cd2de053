/* acceptor.c: the accept thread.  Takes a message from the depot's pool
 * before accepting, so that an exhausted pool stops accepting (back-pressure
 * into the kernel's listen queue) instead of piling up descriptors. */
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
    struct io_waiter w;
    unsigned long emfile_count = 0;
    int one = 1;

    if (io_waiter_init(&w) < 0) {
        log_errno(LOG_ERROR, "acceptor: cannot create wait events");
        return;
    }
    for (;;) {
        struct depot_msg *m = depot_msg_take(d, 1);
        int fd;
        for (;;) {
            fd = accept_nonblock(lfd, &m->peer, &m->peer_len);
            if (fd >= 0)
                break;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                io_wait(&w, lfd, 0, NULL);
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
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 && errno != EOPNOTSUPP)
            log_errno(LOG_DEBUG, "TCP_NODELAY on accepted socket");
        m->fd = fd;
        depot_submit(d, m);
    }
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

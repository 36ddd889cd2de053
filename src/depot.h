/* depot.h: the CoW thread machinery.  The accept side takes a message from a
 * pre-allocated pool and submits it; the depot thread hands each connection
 * to an idle handler from a pre-spawned pool; handlers report "done" by
 * pushing to the front of the depot's port.  Idle handlers stay suspended. */
#ifndef COWD_DEPOT_H
#define COWD_DEPOT_H

#include <pth.h>
#include <stddef.h>
#include <sys/socket.h>

struct depot;
struct handler;

enum depot_msg_kind { DEPOT_MSG_CONN, DEPOT_MSG_DONE };

struct depot_msg {
    pth_message_t pth;              /* first: Pth links messages through it */
    enum depot_msg_kind kind;
    int fd;                         /* DEPOT_MSG_CONN */
    struct sockaddr_storage peer;
    socklen_t peer_len;
    struct handler *handler;        /* DEPOT_MSG_DONE */
    struct depot_msg *backlog_next;
};

/* Serves one connection to completion; the depot closes nothing: serve owns fd. */
typedef void (*depot_serve_fn)(void *handler_ctx, int fd,
                               const struct sockaddr_storage *peer, socklen_t peer_len);
/* Builds handler i's private context (buffers etc.) once, at startup. */
typedef void *(*depot_ctx_fn)(unsigned index, void *arg);

struct depot_config {
    unsigned handlers;              /* pool size */
    unsigned messages;              /* connection messages: accepted-but-unserved cap */
    size_t stack_size;
    depot_serve_fn serve;
    depot_ctx_fn make_ctx;          /* may be NULL: ctx = arg */
    void *arg;
};

struct depot_stats {
    unsigned handlers, idle, free_msgs, backlog;
    unsigned max_backlog;           /* high-water mark of the depot's own queue */
    unsigned long dispatched, done;
    unsigned handlers_used;         /* distinct handlers that ever served */
};

/* Spawns the depot and the handler pool.  NULL on failure (logged). */
struct depot *depot_create(const struct depot_config *dc);

/* Accept side.  Takes a free message; when the pool is empty it waits (the
 * caller yields and stops accepting) until a handler frees one, or returns
 * NULL at once if !wait. */
struct depot_msg *depot_msg_take(struct depot *d, int wait);
void depot_msg_return(struct depot *d, struct depot_msg *m);   /* unused message */
void depot_submit(struct depot *d, struct depot_msg *m);

void depot_get_stats(const struct depot *d, struct depot_stats *st);
/* Handler index of the calling handler thread, or -1. */
int depot_handler_index(const struct depot *d);

#endif

/* depot.h: the CoW thread machinery.  The accept side takes a message from a
 * pre-allocated pool and submits it; the depot thread hands each connection
 * to an idle handler from a pre-spawned pool; handlers report "done" by
 * pushing to the front of the depot's port.  Idle handlers stay suspended. */
#ifndef COWD_DEPOT_H
#define COWD_DEPOT_H

#include <pth.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/time.h>

struct depot;
struct handler;

enum depot_msg_kind { DEPOT_MSG_CONN, DEPOT_MSG_DONE };

/* The wait for a keep-alive connection's next request, carried through the
 * park: a connection the park hands back goes on with it (its idle deadline,
 * place in idle order and empty-line allowance are not renewed). */
struct depot_idle {
    struct timeval since;           /* when the wait began; 0: no wait to go on with */
    unsigned long seq;              /* its place in idle order (park_close_oldest) */
    unsigned empty_dropped;         /* empty-line bytes dropped in it so far */
    int held_cr;                    /* and a last CR whose LF had not come yet */
};

/* A connection handed to a handler: a new one, or one back from parking. */
struct depot_conn {
    int fd;
    struct sockaddr_storage peer;
    socklen_t peer_len;
    unsigned requests;              /* already served on it (keep-alive cap) */
    int parked_before;              /* registered (disarmed) in the park's epoll set */
    struct timeval queued;          /* when handed to the depot, bytes waiting (accepted
                                       after TCP_DEFER_ACCEPT, or woken from the park) */
    struct depot_idle idle;         /* woken from the park: the wait it was in */
};

struct depot_msg {
    pth_message_t pth;              /* first: Pth links messages through it */
    enum depot_msg_kind kind;
    struct depot_conn conn;         /* DEPOT_MSG_CONN */
    struct handler *handler;        /* DEPOT_MSG_DONE */
    struct depot_msg *backlog_next;
};

/* Serves one connection until it closes or is parked; serve owns conn->fd
 * and reports its closing with depot_conn_closed(). */
typedef void (*depot_serve_fn)(void *handler_ctx, const struct depot_conn *conn);
/* Builds handler i's private context (buffers etc.) once, at startup. */
typedef void *(*depot_ctx_fn)(unsigned index, void *arg);

struct depot_config {
    unsigned handlers;              /* pool size */
    unsigned messages;              /* connection messages: accepted-but-unserved cap */
    size_t stack_size;
    unsigned max_connections;       /* open client connections; 0 = no cap */
    depot_serve_fn serve;
    depot_ctx_fn make_ctx;          /* may be NULL: ctx = arg */
    /* At max_connections, with a client waiting to be accepted: closes the
     * connection idle longest (waiting for a request), 1 if there was one;
     * idle_count says how many there are.  Both NULL: never. */
    int (*reclaim_idle)(void);
    unsigned (*idle_count)(void);
    void *arg;
};

struct depot_stats {
    unsigned handlers, idle, free_msgs, backlog;
    unsigned max_backlog;           /* high-water mark of the depot's own queue */
    unsigned long dispatched, done;
    unsigned handlers_used;         /* distinct handlers that ever served */
    unsigned open_connections;
};

/* Spawns the depot and the handler pool.  NULL on failure (logged). */
struct depot *depot_create(const struct depot_config *dc);

/* Takes a free message; when the pool is empty it waits (the caller yields
 * and stops accepting) until a handler frees one, or returns NULL at once
 * if !wait, or NULL once ev_stop (may be NULL; not in a ring) occurs while
 * it waits.  For connections that are already open (e.g. unparked). */
struct depot_msg *depot_msg_take(struct depot *d, int wait, pth_event_t ev_stop);
/* The accept thread counts the connection it is about to accept as open,
 * waiting first while max_connections are open.  At the cap, a client
 * waiting on listening socket lfd (ev_client: its readability, may be NULL)
 * gets the slot of the connection idle longest: then the slot is counted
 * one over the cap and 1 returned, and the caller, once it has accepted
 * the client, calls depot_conn_make_room() (or gives the slot back with
 * depot_conn_closed() if the client was gone).  Accepting first matters
 * when processes share a listening socket: all of them see the one client,
 * and each closing an idle connection for it would close one per process. */
int depot_conn_reserve(struct depot *d, int lfd, pth_event_t ev_client);
/* The worker is stopping: a thread waiting at max_connections in
 * depot_conn_reserve() returns at once (counting its slot as usual), and so
 * does every later call, so that it can close its listening socket rather
 * than leave new clients in its queue until the worker exits. */
void depot_stop_accepting(struct depot *d);
/* Closes the connection idle longest for a slot counted over the cap;
 * 1 if there was one (it is then no longer over).  May yield. */
int depot_conn_make_room(struct depot *d);
/* A client connection was closed (or a reservation given back unused).
 * 1 if a thread waiting at the cap was woken: the caller has yielded. */
int depot_conn_closed(struct depot *d);
/* A connection became idle (parked): an accept waiting at the cap may now
 * make room by closing it. */
void depot_conn_idle(struct depot *d);
unsigned depot_open_connections(const struct depot *d);
/* Connections are waiting for a handler, or none is idle. */
int depot_under_pressure(const struct depot *d);
void depot_msg_return(struct depot *d, struct depot_msg *m);   /* unused message */
void depot_submit(struct depot *d, struct depot_msg *m);

void depot_get_stats(const struct depot *d, struct depot_stats *st);
/* Handler `index` waits out the park delay: its connection waits for a
 * next request that may never come.  The event returned occurs when a
 * connection queues for want of an idle handler and this handler has held
 * longest: it should park its connection and come back.  depot_hold_end()
 * after the wait, however it ended. */
pth_event_t depot_hold_begin(struct depot *d, unsigned index);
void depot_hold_end(struct depot *d, unsigned index);
/* Handler index of the calling handler thread, or -1. */
int depot_handler_index(const struct depot *d);

#endif

/* depot.c: the depot thread, its message pool and the handler pool (CoW §4).
 *
 * Why a depot: Pth does not let a thread suspend itself, and the accept
 * thread must never block on a busy pool.  The depot owns the idle-handler
 * stack; handlers announce "done" with pth_msgport_push so the depot sees a
 * free handler before any backlog of new connections (fewer descriptors held
 * waiting, CoW §4).  Everything is allocated once at startup. */
#include "depot.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"

struct handler {
    struct depot *depot;
    unsigned index;
    pth_t tid;
    pth_msgport_t port;
    pth_event_t ev_port;
    struct depot_msg done;          /* this handler's own "done" message */
    void *ctx;
    int served_any;
    struct handler *idle_next;
    /* on the holder list (depot_hold_begin), longest first, until released */
    struct handler *hold_prev, *hold_next;
    int released;                   /* asked back: off the list, port holds release_msg */
    pth_message_t release_msg;
};

struct depot {
    struct depot_config cfg;
    pth_msgport_t port;             /* conn messages (put) and done messages (push) */
    pth_msgport_t free_port;        /* the pool of free conn messages */
    pth_event_t ev_port;
    pth_t tid;
    struct depot_msg *msgs;
    struct handler *handlers;
    struct handler *idle;           /* stack: the most recently used is warm */
    unsigned n_idle;
    struct handler *holders_head, *holders_tail;
    struct depot_msg *backlog_head, *backlog_tail;
    unsigned n_backlog, max_backlog;
    unsigned long dispatched, done;
    unsigned handlers_used;
    unsigned open_conns;
    pth_mutex_t cap_mutex;
    pth_cond_t cap_cond;            /* signalled when a connection closes at the cap */
    int cap_waiting;
    int stopping;                   /* depot_stop_accepting() was called */
};

static void hold_unlink(struct depot *d, struct handler *h)
{
    if (h->hold_prev != NULL) h->hold_prev->hold_next = h->hold_next; else d->holders_head = h->hold_next;
    if (h->hold_next != NULL) h->hold_next->hold_prev = h->hold_prev; else d->holders_tail = h->hold_prev;
    h->hold_prev = h->hold_next = NULL;
}

/* Without this a queued connection waited up to the whole park delay
 * behind handlers that were only waiting for requests. */
static void release_oldest_holder(struct depot *d)
{
    struct handler *h = d->holders_head;
    if (h == NULL)
        return;                     /* every handler is at work */
    hold_unlink(d, h);
    h->released = 1;
    pth_msgport_put(h->port, &h->release_msg);  /* idle while the handler serves */
}

pth_event_t depot_hold_begin(struct depot *d, unsigned index)
{
    struct handler *h = &d->handlers[index];
    h->hold_next = NULL;
    h->hold_prev = d->holders_tail;
    if (d->holders_tail != NULL) d->holders_tail->hold_next = h; else d->holders_head = h;
    d->holders_tail = h;
    return h->ev_port;
}

void depot_hold_end(struct depot *d, unsigned index)
{
    struct handler *h = &d->handlers[index];
    if (!h->released) {
        hold_unlink(d, h);
        return;
    }
    (void)pth_msgport_get(h->port); /* taken back, so the port waits for connections only */
    h->released = 0;
}

static void give(struct depot *d, struct handler *h, struct depot_msg *m)
{
    d->dispatched++;
    pth_msgport_put(h->port, &m->pth);
}

static void depot_handle(struct depot *d, struct depot_msg *m)
{
    if (m->kind == DEPOT_MSG_DONE) {
        struct handler *h = m->handler;
        d->done++;
        if (d->backlog_head != NULL) {
            struct depot_msg *c = d->backlog_head;
            d->backlog_head = c->backlog_next;
            if (d->backlog_head == NULL)
                d->backlog_tail = NULL;
            d->n_backlog--;
            give(d, h, c);
            return;
        }
        h->idle_next = d->idle;
        d->idle = h;
        d->n_idle++;
        if (!pth_suspend(h->tid))
            log_errno(LOG_ERROR, "depot: cannot suspend idle handler %u", h->index);
        return;
    }
    if (d->idle != NULL) {
        struct handler *h = d->idle;
        d->idle = h->idle_next;
        d->n_idle--;
        if (!pth_resume(h->tid))
            log_errno(LOG_ERROR, "depot: cannot resume handler %u", h->index);
        give(d, h, m);
        return;
    }
    m->backlog_next = NULL;
    if (d->backlog_tail != NULL)
        d->backlog_tail->backlog_next = m;
    else
        d->backlog_head = m;
    d->backlog_tail = m;
    if (++d->n_backlog > d->max_backlog)
        d->max_backlog = d->n_backlog;
    release_oldest_holder(d);
}

static void *depot_main(void *arg)
{
    struct depot *d = arg;
    for (;;) {
        pth_message_t *pm;
        pth_wait(d->ev_port);
        while ((pm = pth_msgport_get(d->port)) != NULL)
            depot_handle(d, (struct depot_msg *)pm);
    }
    return NULL;
}

static void *handler_main(void *arg)
{
    struct handler *h = arg;
    struct depot *d = h->depot;

    for (;;) {
        pth_message_t *pm;
        pth_msgport_push(d->port, &h->done.pth);
        while ((pm = pth_msgport_get(h->port)) == NULL)
            pth_wait(h->ev_port);
        struct depot_msg *m = (struct depot_msg *)pm;
        struct depot_conn conn = m->conn;
        /* the message goes back to the pool at once: the accept thread may
         * be waiting for one */
        pth_msgport_put(d->free_port, &m->pth);
        if (!h->served_any) {
            h->served_any = 1;
            d->handlers_used++;
        }
        d->cfg.serve(h->ctx, &conn);
    }
    return NULL;
}

/* A handler's stack with an inaccessible page below it: a thread that runs
 * past its end (a --stack-size too small for some path through the code)
 * faults there, and the worker is replaced, instead of writing over the
 * heap beneath, which Pth's malloc'd stacks let it do unseen.  NULL if it
 * cannot be had (the map count at its limit): then Pth's own. */
static char *guarded_stack(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int flags = MAP_PRIVATE | MAP_ANON;
#ifdef MAP_STACK
    flags |= MAP_STACK;             /* OpenBSD faults on a stack not mapped as one */
#endif
    char *p = mmap(NULL, size + page, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (mprotect(p, page, PROT_NONE) < 0) {
        munmap(p, size + page);
        return NULL;
    }
    return p + page;
}

struct depot *depot_create(const struct depot_config *dc)
{
    struct depot *d = calloc(1, sizeof *d);
    if (d == NULL || dc->handlers == 0 || dc->messages == 0) {
        log_msg(LOG_ERROR, "depot: cannot create a depot with %u handlers and %u messages",
                dc->handlers, dc->messages);
        free(d);
        return NULL;
    }
    d->cfg = *dc;
    d->msgs = calloc(dc->messages, sizeof *d->msgs);
    d->handlers = calloc(dc->handlers, sizeof *d->handlers);
    pth_mutex_init(&d->cap_mutex);
    pth_cond_init(&d->cap_cond);
    d->port = pth_msgport_create("depot");
    d->free_port = pth_msgport_create(NULL);
    if (d->msgs == NULL || d->handlers == NULL || d->port == NULL || d->free_port == NULL) {
        log_errno(LOG_ERROR, "depot: out of memory for %u handlers", dc->handlers);
        return NULL;
    }
    d->ev_port = pth_event(PTH_EVENT_MSG, d->port);
    if (d->ev_port == NULL) {
        log_errno(LOG_ERROR, "depot: cannot create message events");
        return NULL;
    }
    for (unsigned i = 0; i < dc->messages; i++) {
        d->msgs[i].kind = DEPOT_MSG_CONN;
        d->msgs[i].conn.fd = -1;
        pth_msgport_put(d->free_port, &d->msgs[i].pth);
    }

    pth_attr_t attr = pth_attr_new();
    pth_attr_set(attr, PTH_ATTR_JOINABLE, FALSE);
    pth_attr_set(attr, PTH_ATTR_NAME, "depot");
    pth_attr_set(attr, PTH_ATTR_STACK_SIZE, (unsigned int)(64 * 1024));
    d->tid = pth_spawn(attr, depot_main, d);
    if (d->tid == NULL) {
        log_errno(LOG_ERROR, "depot: cannot spawn the depot thread");
        pth_attr_destroy(attr);
        return NULL;
    }
    pth_attr_set(attr, PTH_ATTR_NAME, "handler");
    /* Pth raises a stack below SIGSTKSZ to it (sysconf's, where it is not a
     * constant): a stack mapped here must be at least that, whichever Pth saw */
    size_t least = SIGSTKSZ;
#ifdef _SC_SIGSTKSZ
    long dynamic = sysconf(_SC_SIGSTKSZ);
    if (dynamic > 0 && (size_t)dynamic > least)
        least = (size_t)dynamic;
#endif
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t stack_size = dc->stack_size > least ? dc->stack_size : least;
    stack_size = (stack_size + page - 1) / page * page;
    pth_attr_set(attr, PTH_ATTR_STACK_SIZE, (unsigned int)stack_size);
    int unguarded = 0;
    for (unsigned i = 0; i < dc->handlers; i++) {
        struct handler *h = &d->handlers[i];
        char *stack = guarded_stack(stack_size);
        if (stack == NULL && unguarded++ == 0)
            log_errno(LOG_WARN, "depot: some handler stacks have no guard page below them, "
                      "the first handler %u of %u (mmap)", i, dc->handlers);
        pth_attr_set(attr, PTH_ATTR_STACK_ADDR, stack);
        h->depot = d;
        h->index = i;
        h->ctx = dc->make_ctx != NULL ? dc->make_ctx(i, dc->arg) : dc->arg;
        h->port = pth_msgport_create(NULL);
        h->ev_port = h->port != NULL ? pth_event(PTH_EVENT_MSG, h->port) : NULL;
        h->done.kind = DEPOT_MSG_DONE;
        h->done.handler = h;
        h->done.conn.fd = -1;
        if ((dc->make_ctx != NULL && h->ctx == NULL) || h->ev_port == NULL ||
            (h->tid = pth_spawn(attr, handler_main, h)) == NULL) {
            log_errno(LOG_ERROR, "depot: cannot create handler thread %u of %u", i, dc->handlers);
            pth_attr_destroy(attr);
            return NULL;
        }
    }
    pth_attr_destroy(attr);
    return d;
}

/* The accept thread and the park thread may both wait for a free message
 * at the same time, and a Pth event must not be waited on by two threads
 * at once: each waiter gets its own event, kept by Pth per thread under
 * this key (allocated on a thread's first wait, then reused). */
static pth_key_t ev_free_key = PTH_KEY_INIT;

struct depot_msg *depot_msg_take(struct depot *d, int wait, pth_event_t ev_stop)
{
    pth_message_t *pm;
    while ((pm = pth_msgport_get(d->free_port)) == NULL) {
        if (!wait)
            return NULL;
        /* pool empty: stop accepting until one returns */
        pth_event_t ev = pth_event(PTH_EVENT_MSG | PTH_MODE_STATIC, &ev_free_key, d->free_port);
        if (ev == NULL) {
            log_errno(LOG_ERROR, "depot: cannot create an event to wait for a free message");
            pth_nap(pth_time(0, 10000));
            continue;
        }
        if (ev_stop == NULL) {
            pth_wait(ev);
            continue;
        }
        pth_event_concat(ev, ev_stop, NULL);
        pth_wait(ev);
        pth_event_isolate(ev_stop);
        if (pth_event_status(ev_stop) == PTH_STATUS_OCCURRED)
            return NULL;
    }
    return (struct depot_msg *)pm;
}

static int client_waiting(int lfd)
{
    struct pollfd p = { lfd, POLLIN, 0 };
    return poll(&p, 1, 0) > 0;
}

int depot_conn_reserve(struct depot *d, int lfd, pth_event_t ev_client)
{
    int over = 0;
    if (d->cfg.max_connections != 0 && d->open_conns >= d->cfg.max_connections) {
        pth_mutex_acquire(&d->cap_mutex, FALSE, NULL);
        while (d->open_conns >= d->cfg.max_connections && !d->stopping) {
            /* Once a client is waiting, make room by closing the connection
             * idle longest, as nginx does: else idle keep-alive clients (or
             * silent ones) at the cap would lock every new client out for a
             * whole timeout.  Closed only once the accept succeeds (nothing
             * yields on the way, so the idle one stays idle): another
             * process may take the client.  Waits for a close, for a
             * connection to become idle, or (with one idle) for a client
             * to arrive. */
            int idle = d->cfg.idle_count != NULL && d->cfg.idle_count() > 0;
            if (idle && client_waiting(lfd)) {
                over = 1;
                break;
            }
            d->cap_waiting = 1;
            pth_cond_await(&d->cap_cond, &d->cap_mutex, idle ? ev_client : NULL);
        }
        pth_mutex_release(&d->cap_mutex);
    }
    d->open_conns++;
    return over;
}

/* Wakes the thread waiting at the cap, if any (1: then the caller yields). */
static int wake_cap_waiter(struct depot *d)
{
    if (!d->cap_waiting)
        return 0;
    d->cap_waiting = 0;
    pth_cond_notify(&d->cap_cond, TRUE);
    return 1;
}

void depot_stop_accepting(struct depot *d)
{
    d->stopping = 1;
    wake_cap_waiter(d);
}

int depot_conn_make_room(struct depot *d)
{
    return d->cfg.reclaim_idle != NULL && d->cfg.reclaim_idle();
}

int depot_conn_closed(struct depot *d)
{
    if (d->open_conns > 0)
        d->open_conns--;
    return wake_cap_waiter(d);
}

void depot_conn_idle(struct depot *d)
{
    wake_cap_waiter(d);
}

unsigned depot_open_connections(const struct depot *d)
{
    return d->open_conns;
}

int depot_under_pressure(const struct depot *d)
{
    return d->n_backlog > 0 || d->n_idle == 0;
}

void depot_msg_return(struct depot *d, struct depot_msg *m)
{
    pth_msgport_put(d->free_port, &m->pth);
}

void depot_submit(struct depot *d, struct depot_msg *m)
{
    m->kind = DEPOT_MSG_CONN;
    pth_msgport_put(d->port, &m->pth);
}

void depot_get_stats(const struct depot *d, struct depot_stats *st)
{
    memset(st, 0, sizeof *st);
    st->handlers = d->cfg.handlers;
    st->idle = d->n_idle;
    st->free_msgs = (unsigned)pth_msgport_pending(d->free_port);
    st->backlog = d->n_backlog;
    st->max_backlog = d->max_backlog;
    st->dispatched = d->dispatched;
    st->done = d->done;
    st->handlers_used = d->handlers_used;
    st->open_connections = d->open_conns;
}

int depot_handler_index(const struct depot *d)
{
    pth_t self = pth_self();
    for (unsigned i = 0; i < d->cfg.handlers; i++)
        if (d->handlers[i].tid == self)
            return (int)i;
    return -1;
}

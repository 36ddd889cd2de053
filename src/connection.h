/* connection.h: one client connection served to completion by a handler
 * thread: read and parse requests (pipelined ones from the same buffer),
 * answer them, keep the connection alive while allowed. */
#ifndef COWD_CONNECTION_H
#define COWD_CONNECTION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "buff.h"
#include "depot.h"
#include "http_parse.h"
#include "io.h"
#include "range.h"

/* Per-handler state, allocated once when the handler pool is created and
 * reused for every connection that handler serves. */
struct conn {
    int fd;
    struct sockaddr_storage peer;
    socklen_t peer_len;

    struct io_waiter waiter;
    struct buff out;

    char *in;                   /* request bytes: [in_start, in_end) unparsed */
    size_t in_cap, in_start, in_end;

    char *path;                 /* normalized request path */
    size_t path_cap;
    char *scratch;              /* file bodies read from disk, listings */
    size_t scratch_cap;
    struct byte_range *ranges;

    unsigned requests;          /* on this connection */
    int close_after;            /* this response ends the connection */
    int server_closes;          /* ... because we end it (cap, shutdown), not the client */
    int linger;                 /* the client may still be sending: drain before close */
    int close_at_once;          /* nothing more is wanted from the client: it asked to
                                   close, or was too slow to wait for */
    int status;                 /* of the response being sent */
    int idle;                   /* waiting for the next request on a kept-alive
                                   connection (a graceful stop may end the wait) */
    int handed_over;            /* just given to this handler (new, or woken from the
                                   park): bytes are likely waiting, read before waiting */
    int read_waited;            /* the last read_more() waited for its bytes */
    unsigned handler;           /* the depot's index of the handler this is */
};

/* Graceful stop (set by the worker): responses say Connection: close and
 * kept-alive connections are not waited on any more. */
extern int conn_stopping;

/* depot_ctx_fn: builds handler i's connection state (NULL on failure). */
void *conn_create(unsigned index, void *arg);
/* The depot whose open-connection count closes are reported to. */
void conn_attach_depot(struct depot *d);
/* depot_serve_fn: serves the connection until it closes (then closes it)
 * or parks it while it waits for its next request. */
void conn_serve(void *conn, const struct depot_conn *dc);

/* Reads and drops the request body announced by req (bounded by
 * cfg.max_body_discard).  0 ok; -1 the body stopped coming (nothing to
 * answer); else the status to send, then close: 400 (bad chunking), 408 (no
 * progress for cfg.body_timeout), 413 (too large). */
int conn_discard_body(struct conn *c, const struct http_request *req);

#endif

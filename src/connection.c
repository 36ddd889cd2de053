/* connection.c: the request loop of one connection: keep-alive, pipelining,
 * timeouts, request bodies we must skip, and closing politely. */
#include "connection.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "accesslog.h"
#include "chunked.h"
#include "config.h"
#include "log.h"
#include "park.h"
#include "response.h"
#include "static_file.h"

/* A handler waits this long for the next request on its connection itself
 * (cheap: the Pth scheduler does not scan waiting threads) before it parks
 * the connection and goes back to the pool; under pressure it parks at once,
 * and a handler already waiting when a connection queues is asked back
 * (depot_hold_begin). */
#define CONN_PARK_AFTER_MS 1000

/* Bytes of file body read from disk per chunk; also the directory listing
 * buffer.  Bodies larger than this go out with sendfile. */
#define CONN_SCRATCH_SIZE (64 * 1024)
/* what a request served counts toward io_run_add besides its bytes: at
 * most 64 small pipelined ones in a row before the others run */
#define CONN_REQUEST_RUN 4096
#define CONN_OUT_SIZE 8192

int conn_stopping;
static unsigned long conn_idle_seq;
static struct depot *conn_depot;

static int conn_pressure(void)
{
    return depot_under_pressure(conn_depot);
}

void conn_attach_depot(struct depot *d)
{
    conn_depot = d;
    io_under_pressure = conn_pressure;
}

void *conn_create(unsigned index, void *arg)
{
    (void)arg;
    struct conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->handler = index;
    c->in_cap = cfg.max_header_size;
    /* the normalized path, then "/" and the index file name for a directory */
    c->path_cap = cfg.max_uri + 2 + 1 + strlen(cfg.index_name);
    c->scratch_cap = CONN_SCRATCH_SIZE;
    c->in = malloc(c->in_cap);
    c->path = malloc(c->path_cap);
    c->scratch = io_send_buffer_alloc(c->scratch_cap);
    c->ranges = calloc(cfg.max_ranges, sizeof *c->ranges);
    char *out = io_send_buffer_alloc(CONN_OUT_SIZE);
    if (c->in == NULL || c->path == NULL || c->scratch == NULL || c->ranges == NULL ||
        out == NULL || io_waiter_init(&c->waiter) < 0) {
        free(c->in); free(c->path); free(c->scratch); free(c->ranges); free(out); free(c);
        return NULL;
    }
    buff_init(&c->out, out, CONN_OUT_SIZE, &c->waiter, cfg.send_timeout);
    /* The kernel's autotuned send buffer takes megabytes in one sendfile
     * call, and copying them holds the one OS thread every handler shares:
     * one 5 MB reply stalled every other connection's (the WebSTONE mix).
     * Chunks bound that, as nginx's sendfile_max_chunk does. */
    c->out.sendfile_chunk = cfg.sendfile_chunk;
    return c;
}

enum read_result { READ_OK, READ_EOF, READ_TIMEOUT, READ_ERROR, READ_PARK };

/* Reads more request bytes into the input buffer.  Pending output is flushed
 * only if the read would block: pipelined responses leave together. */
/* RFC 9112 §2.2: empty lines before a request-line are ignored, and some
 * clients send one after a request.  Dropped while a keep-alive connection
 * waits for its next request, they leave it idle (--keepalive-timeout,
 * parkable, a quiet close) instead of beginning a head that never comes.
 * Past EMPTY_LINES_MAX bytes in one wait they are bytes like any other: the
 * head has begun, and the parser skips them within --max-header-size.
 * 1 if the buffer held only empty lines, now dropped, but for a last CR
 * whose LF has not come yet (kept: it may also be a bare CR; the park
 * carries it, and the count, with the connection: struct depot_idle). */
#define EMPTY_LINES_MAX 64
static int drop_empty_lines(struct conn *c, size_t *dropped)
{
    size_t i = c->in_start;
    while (i < c->in_end) {
        size_t line = c->in[i] == '\n' ? 1
                    : c->in[i] != '\r' ? 0
                    : i + 1 == c->in_end ? 1            /* the lone last CR */
                    : c->in[i + 1] == '\n' ? 2 : 0;
        if (line == 0 || *dropped + (i - c->in_start) + line > EMPTY_LINES_MAX)
            return 0;
        if (i + 1 == c->in_end && c->in[i] == '\r')
            break;
        i += line;
    }
    *dropped += i - c->in_start;
    c->in_start = i;
    return 1;
}

static enum read_result read_more(struct conn *c, const struct timeval *deadline,
                                  const struct timeval *wait_start, int may_park)
{
    /* Read first only when bytes are likely waiting: on a connection just
     * handed to this handler (a new one: the request follows the handshake;
     * one woken from the park: it became readable), or when part of a
     * request or a pipelined one is already here.  A client that waits for
     * each response has sent nothing yet: flushing and waiting at once saves
     * the read() that would only say EAGAIN (one system call per keep-alive
     * request).  Skipping the read of a connection woken from the park would
     * park it again unread, over and over (under pressure parking is
     * immediate). */
    int read_first = c->handed_over || c->requests == 0 || c->in_end > c->in_start;
    c->handed_over = 0;
    c->read_waited = 0;

    if (c->in_start > 0) {
        memmove(c->in, c->in + c->in_start, c->in_end - c->in_start);
        c->in_end -= c->in_start;
        c->in_start = 0;
    }
    if (c->in_end == c->in_cap)
        return READ_ERROR;          /* callers bound their needs by in_cap */
    for (;;) {
        if (read_first) {
            size_t room = c->in_cap - c->in_end;
            /* recv, not read: it skips the VFS layers (~90 ns a call) */
            ssize_t n = recv(c->fd, c->in + c->in_end, room, 0);
            if (n > 0) {
                c->in_end += (size_t)n;
                if ((size_t)n < room)
                    io_short_read(c->fd);   /* the next wait needs no re-arm */
                return READ_OK;
            }
            if (n == 0)
                return READ_EOF;
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return READ_ERROR;
            io_drained(c->fd, 0);
            if (c->in_end > 0)
                io_ack_now(c->fd);  /* a request in pieces: see io.h */
        }
        read_first = 1;
        c->read_waited = 1;
        if (buff_flush(&c->out) < 0)
            return READ_ERROR;
        if (may_park) {
            io_send_stall_reset(&c->waiter);    /* every response is out: the client's turn */
            if (conn_depot == NULL || depot_under_pressure(conn_depot))
                return READ_PARK;
            /* counted from when the wait for this request began (the
             * clock is read once per request, not once per wait) */
            struct timeval park_at = *wait_start;
            park_at.tv_sec += CONN_PARK_AFTER_MS / 1000;
            park_at.tv_usec += (CONN_PARK_AFTER_MS % 1000) * 1000;
            if (park_at.tv_usec >= 1000000) {
                park_at.tv_sec++;
                park_at.tv_usec -= 1000000;
            }
            if (timercmp(&park_at, deadline, <)) {
                pth_event_t asked_back = depot_hold_begin(conn_depot, c->handler);
                int r = io_wait_or(&c->waiter, c->fd, &park_at, asked_back);
                depot_hold_end(conn_depot, c->handler);
                if (r == 0)
                    continue;       /* bytes: served here, released or not */
                if (r < 0 && errno != ETIMEDOUT)
                    return READ_ERROR;
                return READ_PARK;
            }
        }
        if (io_wait(&c->waiter, c->fd, 0, deadline) < 0)
            return errno == ETIMEDOUT ? READ_TIMEOUT : READ_ERROR;
    }
}

/* Reading a request body must not touch c->in beyond consuming what is
 * already buffered there: req's slices (path, host, Range, validators...)
 * point into the request head in that buffer, and the request is served
 * only after its body is gone.  So body bytes still in the socket are
 * received into c->scratch, which is idle until the request is served. */

/* recv(2) into c->scratch, waiting (and meanwhile sending responses the
 * client may be waiting for) when nothing has arrived.  flags 0 or MSG_PEEK.
 * >0 bytes, 0 end of stream, -1 error or body_timeout without progress. */
static ssize_t body_recv(struct conn *c, size_t len, int flags)
{
    struct timeval deadline;
    io_deadline(&deadline, cfg.body_timeout);
    for (;;) {
        ssize_t n = recv(c->fd, c->scratch, len, flags | MSG_DONTWAIT);
        if (n >= 0) {
            /* A client that sends as fast as we read never makes us wait,
             * and the others would wait for its whole body (megabytes of
             * chunk framing to decode). */
            if (!(flags & MSG_PEEK))
                io_run_add(&c->waiter, (size_t)n);
            return n;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        io_drained(c->fd, 0);
        io_ack_now(c->fd);          /* the body's rest may wait for it: see io.h */
        if (buff_flush_now(&c->out) < 0 || io_wait(&c->waiter, c->fd, 0, &deadline) < 0)
            return -1;
    }
}

/* After body_recv() gave got <= 0: 408 if the body's bytes stopped coming
 * in time (--body-timeout, or the pool's pressure rule); -1 if the body
 * ended early, or the connection failed (a response we were sending, say,
 * timed out): nothing to answer. */
static int body_failed(const struct conn *c, ssize_t got)
{
    return got < 0 && errno == ETIMEDOUT && !c->out.failed ? 408 : -1;
}

/* Drops n body bytes: first those already buffered, then exactly the rest
 * from the socket, so a pipelined request behind the body stays there. */
static int discard_bytes(struct conn *c, uint64_t n)
{
    size_t have = c->in_end - c->in_start;
    size_t take = have < n ? have : (size_t)n;
    c->in_start += take;
    n -= take;
    while (n > 0) {
        ssize_t got = body_recv(c, n < c->scratch_cap ? (size_t)n : c->scratch_cap, 0);
        if (got <= 0)
            return body_failed(c, got);
        n -= (uint64_t)got;
    }
    return 0;
}

int conn_discard_body(struct conn *c, const struct http_request *req)
{
    if (!req->has_body)
        return 0;
    if (!req->chunked) {
        if (req->content_length > cfg.max_body_discard)
            return 413;
        return discard_bytes(c, req->content_length);
    }
    struct chunked_state cs;
    chunked_init(&cs);
    uint64_t data = 0;          /* running total of data bytes, as chunked_feed reports it */
    size_t consumed = 0;
    enum chunked_result r = chunked_feed(&cs, c->in + c->in_start, c->in_end - c->in_start,
                                         &consumed, &data);
    c->in_start += consumed;
    /* The cap is on the body as sent, framing included: chunk sizes may be
     * padded with zeros and carry extensions, 22 bytes read for one of data */
    uint64_t wire = consumed;
    for (;;) {
        if (r == CHUNKED_ERROR)
            return 400;
        if (chunked_announced(&cs) > cfg.max_body_discard   /* refuse what is merely promised, too */
            || wire > cfg.max_body_discard)
            return 413;
        if (r == CHUNKED_DONE)
            return 0;
        /* Where the body ends is known only after decoding: peek, decode,
         * then take from the socket just the bytes the body used. */
        ssize_t n = body_recv(c, c->scratch_cap, MSG_PEEK);
        if (n <= 0)
            return body_failed(c, n);
        r = chunked_feed(&cs, c->scratch, (size_t)n, &consumed, &data);
        if (r == CHUNKED_ERROR)
            return 400;
        wire += consumed;
        while (consumed > 0) {
            ssize_t got = body_recv(c, consumed, 0);
            if (got <= 0)
                return body_failed(c, got);
            consumed -= (size_t)got;
        }
    }
}

/* Reads and drops what the client still sends after our half-close, until
 * it closes too, for at most 2 s.  Bounded by time, not bytes: a client
 * whose upload we refused (405, 413) is still sending it, and a close with
 * its bytes unread would send a reset that may destroy our answer before it
 * is read (RFC 9112 §9.6); a fast one must not keep the others waiting. */
static void drain_until_eof(struct conn *c)
{
    struct timeval deadline, now;
    io_deadline(&deadline, 2);
    for (;;) {
        ssize_t n = io_read(&c->waiter, c->fd, c->scratch, c->scratch_cap, &deadline);
        if (n <= 0)
            break;
        io_run_add(&c->waiter, (size_t)n);
        /* io_read looks at the deadline only when it has to wait: a client
         * that sends faster than we read would never let it */
        io_clock_now(&now);
        if (!timercmp(&now, &deadline, <))
            break;
    }
}

/* Half-close and drain briefly so that our last response is not destroyed
 * by a TCP reset when the client still had unread bytes in flight. */
static void lingering_close(struct conn *c)
{
    if (shutdown(c->fd, SHUT_WR) == 0)
        drain_until_eof(c);
    close(c->fd);
}

/* We end a connection the client meant to keep, after a request it sent
 * whole.  It may already have sent its next one: close() with those bytes
 * unread would send a reset in place of our FIN, and the client's kernel
 * drops the response it has not read yet.  So half-close first (the FIN
 * follows the response whatever comes next) and look once for such bytes;
 * only a client found still sending is waited for (RFC 9112 §9.6).  A
 * client that sent nothing more costs two system calls, not a wait. */
static void checked_close(struct conn *c)
{
    if (shutdown(c->fd, SHUT_WR) == 0) {
        ssize_t n = recv(c->fd, c->scratch, c->scratch_cap, MSG_DONTWAIT);
        if (n > 0) {
            io_run_add(&c->waiter, (size_t)n);
            drain_until_eof(c);
        }
    }
    close(c->fd);
}

/* Answers a request we could not parse; the connection closes.  head_len
 * is the length of the refused head when the parser saw all of it and knows
 * its framing (else 0): then, with no body to come, the client has sent the
 * whole request, and the close waits only if more bytes are already there
 * (checked_close). */
static void answer_parse_error(struct conn *c, const struct http_request *req, int status,
                               size_t head_len)
{
    /* refused before its fields were all parsed (at its request-line: a
     * method we do not know, HTTP/2.0...): the rest of the head may be here
     * too, with nothing to frame a body, and then no wait for bytes that
     * will not come, which would hold this handler and its connection slot
     * 2 s.  Not for CONNECT: its client may send tunnel bytes at once. */
    if (head_len == 0 && !req->has_body && req->method != HTTP_CONNECT)
        head_len = http_unframed_head_length(c->in + c->in_start, c->in_end - c->in_start);
    c->close_after = 1;
    c->linger = head_len == 0 || req->has_body;
    c->in_start += head_len;        /* what follows it, if anything, still asks for a linger */
    /* req as far as it was parsed: its method decides whether a body goes
     * (none for HEAD, RFC 9110 §9.3.2), whatever else was wrong with it */
    if (status == 405)
        response_error(c, req, status, "Allow", COWD_ALLOW);
    else
        response_error(c, req, status, NULL, NULL);
}

static void handle_request(struct conn *c, struct http_request *req)
{
    int st;

    if (req->has_body && req->method != HTTP_GET && req->method != HTTP_HEAD &&
        req->method != HTTP_OPTIONS) {
        /* We refuse it anyway: answer now without reading (or inviting) the
         * body and close, as RFC 9110 §10.1.1 allows.  Reading it first
         * would let a slow-body client (R-U-Dead-Yet) pin this handler. */
        c->close_after = 1;
        c->linger = 1;
        response_error(c, req, 405, "Allow", COWD_ALLOW);
        return;
    }
    if (req->expect_continue && req->has_body) {
        if (!req->chunked && req->content_length > cfg.max_body_discard) {
            /* Same for a body announced too large to skip: inviting it
             * would only make the client send what we then refuse. */
            c->close_after = 1;
            c->linger = 1;
            response_error(c, req, 413, NULL, NULL);
            return;
        }
        buff_puts(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
        buff_flush_now(&c->out);
    }
    st = conn_discard_body(c, req);
    timerclear(&c->waiter.guard_since);     /* the request is in: sends have their own rule */
    if (st != 0) {
        c->close_after = 1;
        if (st > 0)
            response_error(c, req, st, NULL, NULL);
        if (st > 0 && st != 408) {
            c->linger = 1;          /* so that the error is not lost to a reset */
        } else {
            /* the body stopped coming (nothing to answer) or made no
             * progress for --body-timeout (408, as a stalled head gets): no
             * lingering for a client this slow (slow bodies): the 408 may be
             * lost to a reset, the handler is not */
            c->in_start = c->in_end;
            c->close_at_once = 1;
        }
        return;
    }

    switch (req->method) {
    case HTTP_GET:
    case HTTP_HEAD:
        static_file_serve(c, req);
        return;
    case HTTP_OPTIONS:
        response_begin(c, req, 204);
        response_header(c, "Allow", COWD_ALLOW);
        response_end_headers(c);
        return;
    default:
        response_error(c, req, 405, "Allow", COWD_ALLOW);
        return;
    }
}

void conn_serve(void *ctx, const struct depot_conn *dc)
{
    struct conn *c = ctx;
    int fd = dc->fd;
    struct http_limits lim = { cfg.max_uri, cfg.max_header_size, cfg.max_headers };
    struct timeval deadline;
    int graceful = 1;
    int first_read = 1;         /* the read at hand-over is still to come */
    /* woken from the park: the wait for its next request goes on */
    int resumed = timerisset(&dc->idle.since);

    c->fd = fd;
    c->peer = dc->peer;
    c->peer_len = dc->peer_len;
    c->in_start = c->in_end = 0;
    c->requests = dc->requests;
    c->close_after = 0;
    c->server_closes = 0;
    c->linger = 0;
    c->close_at_once = 0;
    c->handed_over = 1;
    c->waiter.run = 0;
    io_send_stall_reset(&c->waiter);
    buff_attach(&c->out, fd);
    if (resumed && dc->idle.held_cr)
        c->in[c->in_end++] = '\r';

    for (;;) {
        struct http_request req;
        size_t head_len = 0;
        int status = 0;
        enum http_parse_result pr;

        /* An idle keep-alive connection may wait keepalive_timeout for its
         * next request; once a byte arrives the head must be complete
         * within header_timeout (total, not per read: slowloris). */
        size_t empty_dropped = resumed ? dc->idle.empty_dropped : 0;
        int started = c->in_end > c->in_start &&
                      !(c->requests > 0 && drop_empty_lines(c, &empty_dropped));
        if (conn_stopping && c->requests > 0 && !started) {
            /* graceful stop: no waiting for another request.  One may be
             * pipelined in the socket, unread: end as when we close on our
             * own, lingering, or the kernel's reset on close() would destroy
             * the end of the response still in flight. */
            c->close_after = 1;
            c->server_closes = 1;
            break;
        }
        struct timeval wait_start;
        unsigned long idle_seq;
        if (resumed) {
            wait_start = dc->idle.since;
            idle_seq = dc->idle.seq;
            resumed = 0;
        } else {
            io_clock_now(&wait_start);
            idle_seq = ++conn_idle_seq;     /* cooperative threads: in true order */
        }
        if (started)
            c->waiter.guard_since = wait_start;
        else
            timerclear(&c->waiter.guard_since);
        io_deadline_after(&deadline, &wait_start,
                          started || c->requests == 0 ? cfg.header_timeout
                                                      : cfg.keepalive_timeout);
        size_t seen = 0;            /* head bytes the last parse found incomplete */
        for (;;) {
            size_t have = c->in_end - c->in_start;
            if (have > 0 && http_parse_may_change(c->in + c->in_start, seen, have, &req)) {
                pr = http_parse_request(c->in + c->in_start, have, &lim, &req, &head_len, &status);
                if (pr != HTTP_PARSE_INCOMPLETE)
                    break;
                seen = have;
            }
            /* idle: a graceful stop may end this wait (worker.c); a
             * connection that never sent a request too (parked ones are
             * closed by the stop as well) */
            c->idle = !started;
            /* Waiting for the first byte of a request: park the socket
             * instead of holding this handler thread (park.h).  Not
             * started, nothing is buffered but maybe the lone CR of an
             * empty line, which the park carries. */
            enum read_result rr = read_more(c, &deadline, &wait_start, !started && !conn_stopping);
            if (rr == READ_PARK) {
                c->idle = 0;
                struct depot_conn idle = {
                    .fd = fd, .peer = c->peer, .peer_len = c->peer_len,
                    .requests = c->requests, .parked_before = dc->parked_before,
                    .idle = { .since = wait_start, .seq = idle_seq,
                              .empty_dropped = (unsigned)empty_dropped,
                              .held_cr = c->in_end > c->in_start },
                };
                if (park_connection(&idle, c->requests == 0 ? cfg.header_timeout
                                                            : cfg.keepalive_timeout) == 0)
                    return;         /* the park thread owns fd now */
                /* Refused (lot full, epoll_ctl failed): wait here, still
                 * idle, so that a graceful stop ends this wait at once. */
                c->idle = !started;
                rr = read_more(c, &deadline, &wait_start, 0);
            }
            c->idle = 0;
            int at_handover = first_read && !c->read_waited;
            first_read = 0;
            if (rr == READ_OK) {
                if (!started && c->requests > 0 && drop_empty_lines(c, &empty_dropped)) {
                    seen = 0;       /* the head now starts elsewhere */
                    continue;
                }
                if (!started) {
                    started = 1;
                    /* Bytes found at hand-over were there when the
                     * connection was queued: the head began then, and the
                     * slow-client guard counts its wait in the depot too
                     * (else a backlog of stalled heads would each hold a
                     * handler for the whole grace, one batch after another). */
                    if (at_handover)
                        c->waiter.guard_since = dc->queued;
                    else
                        io_clock_now(&c->waiter.guard_since);
                    io_deadline_after(&deadline, &c->waiter.guard_since, cfg.header_timeout);
                }
                continue;
            }
            if (rr == READ_TIMEOUT && started) {
                c->close_after = 1;
                uint64_t mark = accesslog_mark(c);
                response_error(c, NULL, 408, NULL, NULL);
                accesslog_request(c, NULL, mark);
                /* no lingering for a client this slow (slowloris): the
                 * 408 may be lost to a reset, the handler is not */
                c->in_start = c->in_end;
                c->close_at_once = 1;
            }
            if (rr != READ_ERROR || !started)
                goto done;
            graceful = 0;
            goto done;
        }
        if (pr == HTTP_PARSE_ERROR) {
            uint64_t mark = accesslog_mark(c);
            answer_parse_error(c, &req, status, head_len);
            accesslog_request(c, &req, mark);
            goto done;
        }
        c->in_start += head_len;
        c->requests++;
        c->server_closes = c->requests >= cfg.max_keepalive_requests || conn_stopping;
        c->close_after = !req.keep_alive || c->server_closes;
        c->close_at_once = !req.keep_alive;
        c->out.closing = c->close_after;
        uint64_t mark = accesslog_mark(c);
        c->status = 0;              /* stays 0 if the request gets no response */
        handle_request(c, &req);
        accesslog_request(c, &req, mark);
        if (c->out.failed) {
            graceful = 0;
            break;
        }
        if (c->close_after)
            break;
        /* pipelined: the next request is here, and its client may read as
         * fast as we send (with none, the read ahead waits, and the others
         * run then) */
        if (c->in_end > c->in_start)
            io_run_add(&c->waiter, CONN_REQUEST_RUN);
    }
done:
    /* Linger when the client may still be sending: after an error that
     * left its request unread, when we end the connection on our own
     * (request cap, shutdown) while it may have pipelined more, or with
     * bytes still unparsed.  After an error answered to a whole request,
     * look for more before closing (checked_close).  A client that asked
     * to close sends nothing more (RFC 9112 §9.6), and a slow one is not
     * waited for: a plain close. */
    c->out.closing = 1;     /* what is pending leaves with the FIN */
    if (c->out.file_unreadable) {
        /* Only the reply was cut short; the socket is sound.  Our FIN must
         * follow what went out, the replies before it included: a close
         * with the client's next requests unread would send a reset, which
         * may erase them before the client reads them (RFC 9112 §9.6). */
        lingering_close(c);
    } else if (graceful && buff_flush(&c->out) == 0 && c->close_after) {
        if (c->linger || c->in_end > c->in_start || c->server_closes)
            lingering_close(c);
        else if (!c->close_at_once)
            checked_close(c);
        else
            close(fd);
    } else {
        close(fd);
    }
    if (conn_depot != NULL)
        depot_conn_closed(conn_depot);
}

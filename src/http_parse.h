/* http_parse.h — request-head parser (RFC 9112 §2-§3, §6; RFC 9110 Host/Expect/Connection).
 * Pure: no I/O, no allocation; every slice points into the caller's buffer. */
#ifndef COWD_HTTP_PARSE_H
#define COWD_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

enum http_method { HTTP_METHOD_UNKNOWN = 0, HTTP_GET, HTTP_HEAD, HTTP_POST, HTTP_PUT, HTTP_DELETE,
                   HTTP_CONNECT, HTTP_OPTIONS, HTTP_TRACE, HTTP_PATCH };

struct http_slice { const char *p; size_t len; };      /* points into the caller's buffer; p==NULL if absent */

struct http_limits { size_t max_request_line; size_t max_head; unsigned max_headers; };

/* Bytes of empty lines (CRLF or LF) accepted before a request-line; an empty line that
 * would start past them is answered 400. */
#define HTTP_LEADING_EMPTY_MAX 64

struct http_request {
    enum http_method method; struct http_slice method_name;
    struct http_slice target;        /* raw request-target */
    enum { HTTP_TARGET_ORIGIN, HTTP_TARGET_ABSOLUTE, HTTP_TARGET_ASTERISK, HTTP_TARGET_AUTHORITY } target_form;
    struct http_slice path;          /* raw (still percent-encoded) path: from origin-form, or the path part of
                                        absolute-form ("/" if empty); p==NULL for asterisk- and authority-form */
    struct http_slice query;         /* after '?', without it; p==NULL if no '?' */
    struct http_slice host;          /* authority from absolute-form if present (takes precedence), else the Host header value */
    unsigned version_major, version_minor; /* 0.0 = not known (request-line unparsable); 1.x with x>1 is reported as 1.1 */
    int keep_alive;                  /* 1.1: unless "close" token; 1.0: only with "keep-alive" token; "close" wins; 0 on error */
    int has_body;                    /* Content-Length > 0 or chunked */
    int chunked;                     /* Transfer-Encoding final coding is chunked */
    uint64_t content_length;
    int expect_continue;             /* a 100-continue member in the Expect list (case-insensitive); always 0 for HTTP/1.0 */
    struct http_slice range, if_range, if_match, if_none_match, if_modified_since, if_unmodified_since,
                      user_agent, referer;   /* first occurrence only, OWS-trimmed; but see repeated */
    unsigned repeated;               /* HTTP_REPEATED_* bits: fields sent on more than one line */
    struct http_slice fields;        /* the header field lines (after the request-line) up to and
                                        including the empty line; for http_next_field */
    unsigned header_count;
    size_t settled_until;            /* after HTTP_PARSE_INCOMPLETE: see http_parse_may_change */
};

/* A field sent on several lines is one comma-joined list (RFC 9110 §5.3).  If-Match and
 * If-None-Match are lists: when repeated, the slice above holds the first line only and
 * http_next_field yields every line.  The single-valued ones cannot be joined: a repeated
 * If-Modified-Since, If-Unmodified-Since or Range is dropped (slice p == NULL), as RFC 9110
 * §13.1.3/§13.1.4 require for the dates and §14.2 allows for an invalid Range; a repeated
 * If-Range is kept with its bit set, and never matches. */
enum { HTTP_REPEATED_IF_MATCH = 1, HTTP_REPEATED_IF_NONE_MATCH = 2, HTTP_REPEATED_IF_RANGE = 4 };

/* Returns HTTP_PARSE_OK (full head parsed, *head_len = bytes consumed incl. final CRLFCRLF),
 * HTTP_PARSE_INCOMPLETE (need more bytes; only if within limits), or HTTP_PARSE_ERROR with *status set to
 * the response status and req->... filled as far as known (version, method) so the caller can answer.
 * On HTTP_PARSE_ERROR *head_len is 0, unless the error was found only after the whole head and its
 * framing is known (no Transfer-Encoding): then it is the head's length and req->has_body and
 * req->content_length describe the body that follows it.
 * Only the first lim->max_head bytes of buf are ever examined, so the caller never needs to buffer more.
 * When status is an error the caller closes the connection after answering if http_error_must_close(status)
 * or framing is unknown. lim must not be NULL. */
enum http_parse_result { HTTP_PARSE_OK, HTTP_PARSE_INCOMPLETE, HTTP_PARSE_ERROR };
enum http_parse_result http_parse_request(const char *buf, size_t len, const struct http_limits *lim,
                                          struct http_request *req, size_t *head_len, int *status);

/* After http_parse_request returned HTTP_PARSE_INCOMPLETE for the first seen bytes of buf (req
 * its output), whether parsing the first len (> seen) bytes could give anything else.  Only a CR or
 * LF among the new bytes (or a CR that ended the old ones) or reaching a length limit can: a
 * caller fed a few bytes at a time need not parse the whole head again for each (that costs time
 * quadratic in the head's length). */
int http_parse_may_change(const char *buf, size_t seen, size_t len, const struct http_request *req);

/* Iterates the OWS-trimmed values of every field line named name (given in lower case; matched ASCII
 * case-insensitively) of a
 * request parsed with HTTP_PARSE_OK, in order: start with *cursor = 0; returns 1 with *value set,
 * or 0 when there are no more. */
int http_next_field(const struct http_request *req, const char *name, size_t *cursor,
                    struct http_slice *value);

/* Canonical upper-case name, or NULL for HTTP_METHOD_UNKNOWN / out-of-range values. */
const char *http_method_name(enum http_method);

/* For a head refused before its fields were all parsed (head_len 0 from http_parse_request): the
 * length of the head that buf's first n bytes hold whole, up to and including its empty line, if
 * no field line in it is named Content-Length or Transfer-Encoding (any case, whatever follows the
 * name) and none is folded or holds a bare CR; else 0 (not all in, or a body may follow).  Tells
 * a client that has sent everything from one still sending. */
size_t http_unframed_head_length(const char *buf, size_t n);

/* 1 if the connection must be closed after sending an error response with this status. */
int http_error_must_close(int status);

#endif

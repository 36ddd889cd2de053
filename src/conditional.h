/* conditional.h — evaluation of conditional request headers (RFC 9110 §13) against the selected
 * representation of a static file. Pure: no I/O, no allocation. */
#ifndef COWD_CONDITIONAL_H
#define COWD_CONDITIONAL_H

#include <stddef.h>
#include <time.h>

#include "http_parse.h"

struct cond_resource {
    const char *etag; size_t etag_len; /* the strong ETag incl. quotes, e.g. "\"5f2a-3039\""; NULL if none */
    time_t mtime;                      /* Last-Modified, whole seconds, never after now */
    time_t now;                        /* the response's Date: the clock for If-Modified-Since and for
                                        * an RFC 850 date's two-digit year (RFC 9110 §5.6.7) */
    int no_mtime;                      /* no Last-Modified (a listing): the date conditions are
                                        * ignored (RFC 9110 §13.1.3-4) */
    int unsettled;                     /* changed so lately that the reply carries no validator
                                        * (etag NULL): If-Modified-Since is ignored, since no
                                        * date can show the client's copy is whole (it may hold
                                        * torn bytes, dated by the reply's Date); If-Unmodified-
                                        * Since still compares mtime */
};

/* Order per RFC 9110 §13.2.2: If-Match (→412 if no strong match; "*" matches), else If-Unmodified-Since
 * (→412 if modified after); If-None-Match (weak comparison; match → 304 for GET/HEAD, 412 for other
 * methods), else If-Modified-Since (GET/HEAD only; →304 if not modified since; ignored if invalid
 * date, later than now, or If-None-Match present). Unparsable dates are ignored. An If-Match or
 * If-None-Match sent on several lines is one list (HTTP_REPEATED_*). Returns 0 to proceed, 304 or 412. */
int cond_evaluate(const struct http_request *req, const struct cond_resource *res);

/* If-Range: true if the Range header should be honoured: If-Range absent, or a strong ETag match.
 * A date never matches (a file's modification time can be set back, so Last-Modified is no strong
 * validator here, RFC 9110 §8.8.2.2); nor does a weak etag, anything unparsable, or an If-Range
 * sent on several lines. */
int cond_if_range_ok(const struct http_request *req, const struct cond_resource *res);

#endif

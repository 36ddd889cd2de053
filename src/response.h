/* response.h: status lines, common headers and error pages. */
#ifndef COWD_RESPONSE_H
#define COWD_RESPONSE_H

#include <stddef.h>
#include <stdint.h>

#include "connection.h"
#include "http_parse.h"

#define COWD_SERVER_NAME "cowd"
#define COWD_ALLOW "GET, HEAD, OPTIONS"

const char *response_reason(int status);

/* Writes "HTTP/1.1 <status> <reason>", Date, Server and, when the
 * connection will close, "Connection: close" (or "Connection: keep-alive"
 * for a kept-alive HTTP/1.0 client).  Header lines follow with
 * response_header*(), then response_end_headers(). */
int response_begin(struct conn *c, const struct http_request *req, int status);
int response_header(struct conn *c, const char *name, const char *value);
int response_header_n(struct conn *c, const char *name, const char *value, size_t len);
int response_header_u64(struct conn *c, const char *name, uint64_t value);
int response_end_headers(struct conn *c);

/* A complete error response with a small HTML body (none for HEAD).
 * extra_name/extra_value: one more header (Allow, Location …) or NULL;
 * without one, a 503 says Retry-After: 1. */
int response_error(struct conn *c, const struct http_request *req, int status,
                   const char *extra_name, const char *extra_value);

#endif

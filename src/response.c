/* response.c: writing response heads and error pages into the output buffer. */
#include "response.h"

#include <string.h>

#include "autoconfig.h"
#include "date_cache.h"

const char *response_reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default:  return "Unknown";
    }
}

int response_begin(struct conn *c, const struct http_request *req, int status)
{
    struct buff *b = &c->out;
    char line[96];
    const char *reason = response_reason(status);
    size_t rlen = strlen(reason);

    c->status = status;
    memcpy(line, "HTTP/1.1 ", 9);
    line[9] = (char)('0' + status / 100);
    line[10] = (char)('0' + status / 10 % 10);
    line[11] = (char)('0' + status % 10);
    line[12] = ' ';
    memcpy(line + 13, reason, rlen);
    memcpy(line + 13 + rlen, "\r\nDate: ", 8);
    /* copied here, not written from the worker's shared text: a write that
     * fills the buffer flushes half of it first, and a flush that waits lets
     * other connections run, one of which may rebuild the text */
    memcpy(line + 13 + rlen + 8, date_cache_now(), 29);
    buff_write(b, line, 13 + rlen + 8 + 29);
    buff_puts(b, "\r\nServer: " COWD_SERVER_NAME "\r\n");
    if (c->close_after)
        buff_puts(b, "Connection: close\r\n");
    else if (req != NULL && req->version_major == 1 && req->version_minor == 0)
        buff_puts(b, "Connection: keep-alive\r\n");
    return b->failed ? -1 : 0;
}

int response_header_n(struct conn *c, const char *name, const char *value, size_t len)
{
    buff_puts(&c->out, name);
    buff_write(&c->out, ": ", 2);
    buff_write(&c->out, value, len);
    return buff_write(&c->out, "\r\n", 2);
}

int response_header(struct conn *c, const char *name, const char *value)
{
    return response_header_n(c, name, value, strlen(value));
}

int response_header_u64(struct conn *c, const char *name, uint64_t value)
{
    buff_puts(&c->out, name);
    buff_write(&c->out, ": ", 2);
    buff_put_u64(&c->out, value);
    return buff_write(&c->out, "\r\n", 2);
}

int response_end_headers(struct conn *c)
{
    return buff_write(&c->out, "\r\n", 2);
}

int response_error(struct conn *c, const struct http_request *req, int status,
                   const char *extra_name, const char *extra_value)
{
    char body[256];
    const char *reason = response_reason(status);
    size_t rlen = strlen(reason);
    size_t n = 0;

#define ADD(s, l) do { memcpy(body + n, (s), (l)); n += (l); } while (0)
    char code[4] = { (char)('0' + status / 100), (char)('0' + status / 10 % 10),
                     (char)('0' + status % 10), ' ' };
    ADD("<!DOCTYPE html>\n<html><head><title>", 35);
    ADD(code, 4);
    ADD(reason, rlen);
    ADD("</title></head>\n<body><h1>", 26);
    ADD(code, 4);
    ADD(reason, rlen);
    ADD("</h1></body></html>\n", 20);
#undef ADD

    response_begin(c, req, status);
    if (extra_name != NULL)
        response_header(c, extra_name, extra_value);
    else if (status == 503)
        response_header(c, "Retry-After", "1");     /* as the acceptor's 503 */
    response_header(c, "Content-Type", "text/html; charset=utf-8");
    response_header_u64(c, "Content-Length", n);
    response_end_headers(c);
    if (req == NULL || req->method != HTTP_HEAD)
        buff_write(&c->out, body, n);
    return c->out.failed ? -1 : 0;
}

/* http_parse.c — owns turning the bytes of one request head into a struct http_request:
 * request-line, header-field syntax, message framing (Content-Length / Transfer-Encoding),
 * Host, Connection and Expect semantics, and the size limits that bound what a client can
 * make us buffer. RFC 9112 §2-§3, §5-§6 and RFC 9110 §5, §7.2, §10.1.1. No I/O, no malloc. */

#include "http_parse.h"

#include <arpa/inet.h>
#include <string.h>

/* Framing and size limits are the request-smuggling surface, so every choice below errs
 * strict; where the RFCs leave room the comment names the server whose behaviour we copy. */

#define CONTENT_LENGTH_MAX (UINT64_C(1) << 62)

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_hex(unsigned char c) { return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }

/* Byte classes, one table lookup per byte on the per-request path:
 *   CC_TCHAR     RFC 9110 §5.6.2 tchar (method, field name)
 *   CC_VALUE     field-vchar / SP / HTAB, obs-text (>= 0x80) allowed (RFC 9110 §5.5)
 *   CC_TARGET    what we accept in a request-target: 0x21-0x7e except '#' (parse_target)
 *   CC_REG_NAME  RFC 3986 unreserved / sub-delims; '.' and '%' need context, so are not in it
 * Entry = sum of the classes: 15 = all four, 7 = tchar|value|target, 6 = value|target.
 * tests/unit/check_http_parse.c checks every byte in every position against the RFC rules. */
enum { CC_TCHAR = 1, CC_VALUE = 2, CC_TARGET = 4, CC_REG_NAME = 8 };
static const unsigned char char_class[256] = {
     0,  0,  0,  0,  0,  0,  0,  0,  0,  2,  0,  0,  0,  0,  0,  0,   /* 00 */
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,   /* 10 */
     2, 15,  6,  3, 15,  7, 15, 15, 14, 14, 15, 15, 14, 15,  7,  6,   /* 20  !"#$%&'()*+,-./ */
    15, 15, 15, 15, 15, 15, 15, 15, 15, 15,  6, 14,  6, 14,  6,  6,   /* 30 0-9:;<=>? */
     6, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,   /* 40 @A-O */
    15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,  6,  6,  6,  7, 15,   /* 50 P-Z[\]^_ */
     7, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,   /* 60 `a-o */
    15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,  6,  7,  6, 15,  0,   /* 70 p-z{|}~ DEL */
     2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,   /* 80 */
     2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,   /* 90 */
     2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,   /* a0 */
     2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,   /* b0 */
     2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,   /* c0 */
     2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,   /* d0 */
     2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,   /* e0 */
     2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,   /* f0 */
};

static int is_tchar(unsigned char c) { return char_class[c] & CC_TCHAR; }
static int is_field_value_char(unsigned char c) { return char_class[c] & CC_VALUE; }

static int is_ows(unsigned char c) { return c == ' ' || c == '\t'; }

static unsigned char ascii_lower(unsigned char c) { return (c >= 'A' && c <= 'Z') ? (unsigned char)(c | 0x20) : c; }

static int slice_equals_ci(const char *p, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    if (len != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (ascii_lower((unsigned char)p[i]) != (unsigned char)lit[i])
            return 0;
    return 1;
}

static int starts_with_ci(const char *p, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    return len >= n && slice_equals_ci(p, n, lit);
}

static void trim_ows(const char **p, size_t *len)
{
    while (*len > 0 && is_ows((unsigned char)(*p)[0])) {
        (*p)++;
        (*len)--;
    }
    while (*len > 0 && is_ows((unsigned char)(*p)[*len - 1]))
        (*len)--;
}

static const char *const method_names[] = {
    [HTTP_GET] = "GET",         [HTTP_HEAD] = "HEAD",       [HTTP_POST] = "POST",
    [HTTP_PUT] = "PUT",         [HTTP_DELETE] = "DELETE",   [HTTP_CONNECT] = "CONNECT",
    [HTTP_OPTIONS] = "OPTIONS", [HTTP_TRACE] = "TRACE",     [HTTP_PATCH] = "PATCH",
};

const char *http_method_name(enum http_method m)
{
    if ((unsigned)m >= sizeof method_names / sizeof method_names[0])
        return NULL;
    return method_names[m];
}

/* Methods are case-sensitive (RFC 9110 §9.1): "get" is a well-formed unknown method. */
static enum http_method method_lookup(const char *p, size_t len)
{
    for (unsigned m = HTTP_GET; m < sizeof method_names / sizeof method_names[0]; m++)
        if (method_names[m][0] == p[0] && strlen(method_names[m]) == len &&
            memcmp(method_names[m], p, len) == 0)
            return (enum http_method)m;
    return HTTP_METHOD_UNKNOWN;
}

int http_error_must_close(int status)
{
    /* After these the byte stream position of the next request is unknown or untrustworthy:
     * the head was cut short (414, 431), unparsable (400), or we answered before reading a body
     * the client may still send (411, 413, 417 — the client may or may not send the body after
     * a failed expectation, so what follows is ambiguous), or the method/coding/version means we
     * never interpreted the framing (501, 505). 408 is a timeout. lighttpd closes on all of these. */
    switch (status) {
    case 400: case 408: case 411: case 413: case 414: case 417: case 431: case 501: case 505:
        return 1;
    default:
        return 0;
    }
}

/* RFC 3986 reg-name: unreserved / pct-encoded / sub-delims. Additionally ".." is refused, as
 * nginx does, because callers commonly map Host to a directory (virtual hosts). */
static int valid_reg_name(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (char_class[c] & CC_REG_NAME)
            continue;
        switch (c) {
        case '.':
            if (i > 0 && s[i - 1] == '.')
                return 0;
            continue;
        case '%':
            if (i + 2 >= n || !is_hex((unsigned char)s[i + 1]) || !is_hex((unsigned char)s[i + 2]))
                return 0;
            i += 2;
            continue;
        default:
            return 0;
        }
    }
    return 1;
}

/* IP-literal = "[" IPv6address "]". IPvFuture and zone identifiers are refused: no client sends
 * them to an origin server, and accepting them only widens what reaches vhost lookup. */
static int valid_ipv6(const char *s, size_t n)
{
    char tmp[INET6_ADDRSTRLEN];
    unsigned char addr[16];
    if (n == 0 || n >= sizeof tmp)
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    return inet_pton(AF_INET6, tmp, addr) == 1;
}

/* uri-host [ ":" port ]. Stricter than RFC 3986 on two points: the host must be non-empty
 * (RFC 9110 §4.2.1 requires it for http URIs anyway; nginx too) and a port has at most 5
 * digits and is <= 65535. An empty port is the same as none (RFC 3986 §3.2.3: port = *DIGIT;
 * nginx accepts "a:" too), except where the port is required (CONNECT has no default). */
static int valid_authority(const char *s, size_t n, int port_required)
{
    size_t host_end;
    if (n == 0)
        return 0;
    if (s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (close == NULL || !valid_ipv6(s + 1, (size_t)(close - s) - 1))
            return 0;
        host_end = (size_t)(close - s) + 1;
    } else {
        const char *colon = memchr(s, ':', n);
        host_end = colon ? (size_t)(colon - s) : n;
        if (host_end == 0 || !valid_reg_name(s, host_end))
            return 0;
    }
    if (host_end == n)
        return !port_required;
    if (s[host_end] != ':')
        return 0;
    size_t port_len = n - host_end - 1;
    if (port_len == 0)
        return !port_required;
    if (port_len > 5)
        return 0;
    unsigned port = 0;
    for (size_t i = host_end + 1; i < n; i++) {
        if (!is_digit((unsigned char)s[i]))
            return 0;
        port = port * 10 + (unsigned)(s[i] - '0');
    }
    return port <= 65535;
}

static void split_path_query(const char *p, size_t n, struct http_request *req)
{
    const char *q = memchr(p, '?', n);
    if (q) {
        req->path = (struct http_slice){ p, (size_t)(q - p) };
        req->query = (struct http_slice){ q + 1, n - (size_t)(q - p) - 1 };
    } else {
        req->path = (struct http_slice){ p, n };
    }
}

static int parse_version(const char *v, size_t n, struct http_request *req)
{
    if (n != 8 || memcmp(v, "HTTP/", 5) != 0 || !is_digit((unsigned char)v[5]) || v[6] != '.' ||
        !is_digit((unsigned char)v[7]))
        return 400;
    req->version_major = (unsigned)(v[5] - '0');
    req->version_minor = (unsigned)(v[7] - '0');
    if (req->version_major != 1)
        return 505;
    /* RFC 9110 §6.2: treat a higher minor version as the highest one we implement. */
    if (req->version_minor > 1)
        req->version_minor = 1;
    return 0;
}

static int parse_target(const char *t, size_t n, struct http_request *req)
{
    /* RFC 3986 targets are ASCII. Unlike nginx (which passes raw UTF-8 through) we refuse
     * bytes >= 0x80 too, so every path byte we later decode was deliberately percent-encoded.
     * '#' cannot appear: fragments are never sent (RFC 9112 §3.2). Other characters outside
     * the URI set ("|{}^ etc.) are tolerated as nginx does; clients do send them. */
    for (size_t i = 0; i < n; i++) {
        if (!(char_class[(unsigned char)t[i]] & CC_TARGET))
            return 400;
    }

    if (req->method == HTTP_CONNECT) {
        /* RFC 9110 §9.3.6: CONNECT uses authority-form only, and the port is mandatory. */
        if (t[0] == '/' || !valid_authority(t, n, 1))
            return 400;
        req->target_form = HTTP_TARGET_AUTHORITY;
        return 0;
    }
    if (t[0] == '/') {
        req->target_form = HTTP_TARGET_ORIGIN;
        split_path_query(t, n, req);
        return 0;
    }
    if (n == 1 && t[0] == '*') {
        if (req->method != HTTP_OPTIONS)
            return 400;
        req->target_form = HTTP_TARGET_ASTERISK;
        return 0;
    }
    size_t scheme_len;
    if (n >= 7 && slice_equals_ci(t, 7, "http://"))
        scheme_len = 7;
    else if (n >= 8 && slice_equals_ci(t, 8, "https://"))
        scheme_len = 8;
    else
        return 400;
    const char *auth = t + scheme_len;
    size_t rest = n - scheme_len, auth_len = 0;
    while (auth_len < rest && auth[auth_len] != '/' && auth[auth_len] != '?')
        auth_len++;
    /* RFC 9110 §4.2.4: userinfo in an http(s) URI is to be treated as an error. */
    if (memchr(auth, '@', auth_len) != NULL || !valid_authority(auth, auth_len, 0))
        return 400;
    req->target_form = HTTP_TARGET_ABSOLUTE;
    req->host = (struct http_slice){ auth, auth_len };
    const char *after = auth + auth_len;
    size_t after_len = rest - auth_len;
    if (after_len > 0 && after[0] == '/') {
        split_path_query(after, after_len, req);
    } else {
        req->path = (struct http_slice){ "/", 1 };
        if (after_len > 0) /* starts with '?' */
            req->query = (struct http_slice){ after + 1, after_len - 1 };
    }
    return 0;
}

/* request-line = method SP request-target SP HTTP-version, single SPs only (RFC 9112 §3;
 * we do not use the §3 leniency of splitting on any whitespace, nginx doesn't either for CTLs). */
static int parse_request_line(const char *line, size_t n, struct http_request *req)
{
    size_t i = 0;
    while (i < n && is_tchar((unsigned char)line[i]))
        i++;
    if (i == 0 || i >= n || line[i] != ' ')
        return 400;
    req->method_name = (struct http_slice){ line, i };
    req->method = method_lookup(line, i);

    size_t target_start = ++i;
    while (i < n && line[i] != ' ')
        i++;
    if (i == target_start || i >= n) /* empty target (double SP) or HTTP/0.9 (no version) */
        return 400;
    size_t target_len = i - target_start;
    /* for the access log, whatever the version turns out to be */
    req->target = (struct http_slice){ line + target_start, target_len };

    int st = parse_version(line + i + 1, n - i - 1, req);
    if (st)
        return st;
    st = parse_target(line + target_start, target_len, req);
    if (st)
        return st;
    /* Checked last so a malformed request is reported as 400 rather than 501. */
    if (req->method == HTTP_METHOD_UNKNOWN)
        return 501;
    return 0;
}

struct header_state {
    unsigned host_count;
    int content_length_seen;
    int te_seen, te_chunked_seen, te_unknown_seen, te_malformed;
    int connection_close, connection_keep_alive;
    int expect_unsupported;
    unsigned repeated;              /* HTTP_REPEATED_* and the REPEATED_* below */
};

/* Repeated single-valued fields, dropped by finish_head (not reported). */
enum { REPEATED_RANGE = 8, REPEATED_IMS = 16, REPEATED_IUS = 32 };

static int parse_content_length(const char *v, size_t n, uint64_t *out)
{
    /* 1*DIGIT only: "1,1", "+1", " 1 1", "" are all 400. Capped well below UINT64_MAX so no
     * later offset arithmetic (head_len + length, etc.) can overflow. */
    uint64_t value = 0;
    if (n == 0)
        return 400;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (!is_digit(c))
            return 400;
        unsigned d = c - '0';
        if (value > (CONTENT_LENGTH_MAX - d) / 10)
            return 400;
        value = value * 10 + d;
    }
    *out = value;
    return 0;
}

/* The next element of a comma-separated list (RFC 9110 §5.6.1) from *pos, OWS-trimmed and
 * maybe empty: 1, or 0 past the end.  An empty value is one empty element. */
static int list_next(const char *v, size_t n, size_t *pos, const char **elem, size_t *elem_len)
{
    if (*pos > n)
        return 0;
    size_t end = *pos;
    while (end < n && v[end] != ',')
        end++;
    *elem = v + *pos;
    *elem_len = end - *pos;
    trim_ows(elem, elem_len);
    *pos = end + 1;
    return 1;
}

/* Transfer-Encoding values are folded across all TE fields into one list (RFC 9110 §5.3).
 * We implement only chunked, so like nginx we accept exactly the list "chunked": an empty or
 * non-token element (incl. parameters) is malformed; anything after chunked (so chunked not
 * final, or repeated) is malformed (RFC 9112 §6.3 says 400 + close); any other coding before
 * a final chunked is merely unimplemented (RFC 9112 §6.1: 501). Empty list elements, which
 * RFC 9110 §5.6.1 asks recipients to tolerate, are refused here because TE is the classic
 * smuggling vector and no real client sends them. */
static void note_transfer_encoding(const char *v, size_t n, struct header_state *hs)
{
    hs->te_seen = 1;
    const char *elem;
    size_t elem_len;
    for (size_t pos = 0; list_next(v, n, &pos, &elem, &elem_len);) {
        if (elem_len == 0 || hs->te_chunked_seen) {
            hs->te_malformed = 1;
        } else {
            for (size_t i = 0; i < elem_len; i++)
                if (!is_tchar((unsigned char)elem[i]))
                    hs->te_malformed = 1;
            if (slice_equals_ci(elem, elem_len, "chunked"))
                hs->te_chunked_seen = 1;
            else
                hs->te_unknown_seen = 1;
        }
    }
}

static void note_connection(const char *v, size_t n, struct header_state *hs)
{
    /* Unknown or malformed tokens are ignored: Connection only ever narrows what we do. */
    const char *tok;
    size_t tok_len;
    for (size_t pos = 0; list_next(v, n, &pos, &tok, &tok_len);) {
        if (slice_equals_ci(tok, tok_len, "close"))
            hs->connection_close = 1;
        else if (slice_equals_ci(tok, tok_len, "keep-alive"))
            hs->connection_keep_alive = 1;
    }
}

/* Expect = #expectation (RFC 9110 §10.1.1), folded across lines into one list (§5.3).
 * Empty elements are ignored (§5.6.1), so an empty Expect is as if absent; any member
 * other than 100-continue (parameters included) is one we cannot meet: 417. */
static void note_expect(const char *v, size_t n, struct http_request *req, struct header_state *hs)
{
    const char *elem;
    size_t elem_len;
    for (size_t pos = 0; list_next(v, n, &pos, &elem, &elem_len);) {
        if (slice_equals_ci(elem, elem_len, "100-continue"))
            req->expect_continue = 1;
        else if (elem_len != 0)
            hs->expect_unsupported = 1;
    }
}

static void keep_first(struct http_slice *slot, const char *v, size_t n)
{
    /* Only the first occurrence counts (for logging): later ones are ignored. */
    if (slot->p == NULL)
        *slot = (struct http_slice){ v, n };
}

/* The first occurrence, with a note that there were more (see HTTP_REPEATED_* and finish_head). */
static void keep_first_note_more(struct http_slice *slot, const char *v, size_t n,
                                 struct header_state *hs, unsigned bit)
{
    if (slot->p == NULL)
        *slot = (struct http_slice){ v, n };
    else
        hs->repeated |= bit;
}

static int parse_header_line(const char *line, size_t n, struct http_request *req, struct header_state *hs)
{
    /* A leading SP/HTAB is obs-fold, or whitespace between start-line and first field;
     * RFC 9112 §5.2 / §2.2 allow rejecting both, and we do. */
    size_t name_len = 0;
    while (name_len < n && is_tchar((unsigned char)line[name_len]))
        name_len++;
    if (name_len == 0 || name_len >= n || line[name_len] != ':')
        return 400; /* empty name, no colon, or whitespace before the colon (RFC 9112 §5.1) */

    const char *value = line + name_len + 1;
    size_t value_len = n - name_len - 1;
    for (size_t i = 0; i < value_len; i++)
        if (!is_field_value_char((unsigned char)value[i]))
            return 400;
    trim_ows(&value, &value_len);

    const char *name = line;
    switch (ascii_lower((unsigned char)name[0])) {
    case 'h':
        if (slice_equals_ci(name, name_len, "host")) {
            /* Host is a singleton; even identical duplicates are refused (RFC 9112 §3.2 MUST). */
            if (++hs->host_count > 1)
                return 400;
            /* Empty Host is refused although RFC 9112 §3.2 allows it when the target URI has
             * no authority: an origin server always has one, and nginx refuses it too. */
            if (!valid_authority(value, value_len, 0))
                return 400;
            if (req->target_form != HTTP_TARGET_ABSOLUTE)
                req->host = (struct http_slice){ value, value_len };
        }
        break;
    case 'c':
        if (slice_equals_ci(name, name_len, "content-length")) {
            /* Duplicates refused even if identical (stricter than RFC 9112 §6.3; nginx does too). */
            if (hs->content_length_seen)
                return 400;
            hs->content_length_seen = 1;
            if (parse_content_length(value, value_len, &req->content_length))
                return 400;
        } else if (slice_equals_ci(name, name_len, "connection")) {
            note_connection(value, value_len, hs);
        }
        break;
    case 't':
        if (slice_equals_ci(name, name_len, "transfer-encoding"))
            note_transfer_encoding(value, value_len, hs);
        break;
    case 'e':
        if (slice_equals_ci(name, name_len, "expect"))
            note_expect(value, value_len, req, hs);
        break;
    case 'r':
        if (slice_equals_ci(name, name_len, "range"))
            keep_first_note_more(&req->range, value, value_len, hs, REPEATED_RANGE);
        else if (slice_equals_ci(name, name_len, "referer"))
            keep_first(&req->referer, value, value_len);
        break;
    case 'i':
        if (slice_equals_ci(name, name_len, "if-range"))
            keep_first_note_more(&req->if_range, value, value_len, hs, HTTP_REPEATED_IF_RANGE);
        else if (slice_equals_ci(name, name_len, "if-match"))
            keep_first_note_more(&req->if_match, value, value_len, hs, HTTP_REPEATED_IF_MATCH);
        else if (slice_equals_ci(name, name_len, "if-none-match"))
            keep_first_note_more(&req->if_none_match, value, value_len, hs, HTTP_REPEATED_IF_NONE_MATCH);
        else if (slice_equals_ci(name, name_len, "if-modified-since"))
            keep_first_note_more(&req->if_modified_since, value, value_len, hs, REPEATED_IMS);
        else if (slice_equals_ci(name, name_len, "if-unmodified-since"))
            keep_first_note_more(&req->if_unmodified_since, value, value_len, hs, REPEATED_IUS);
        break;
    case 'u':
        if (slice_equals_ci(name, name_len, "user-agent"))
            keep_first(&req->user_agent, value, value_len);
        break;
    default:
        break;
    }
    return 0;
}

/* Semantics that need the whole header section. */
static int finish_head(struct http_request *req, const struct header_state *hs)
{
    int http11 = req->version_minor >= 1;
    /* set before any refusal: one for a reason other than framing still
     * tells the caller whether a body follows (http_parse.h) */
    req->has_body = req->content_length > 0;
    if (http11 && hs->host_count == 0)
        return 400;
    if (hs->te_seen) {
        if (hs->content_length_seen) /* RFC 9112 §6.3: MAY reject; smuggling, so we do */
            return 400;
        if (!http11) /* RFC 9112 §6.1: 1.0 has no chunked; a TE there means a confused intermediary */
            return 400;
        if (hs->te_malformed || !hs->te_chunked_seen)
            return 400;
        if (hs->te_unknown_seen)
            return 501;
        req->chunked = 1;
        req->has_body = 1;
    }
    if (hs->expect_unsupported)
        return 417;
    /* RFC 9110 §10.1.1: a 100-continue expectation in HTTP/1.0 MUST be ignored. */
    if (!http11)
        req->expect_continue = 0;
    if (hs->connection_close)
        req->keep_alive = 0;
    else
        req->keep_alive = http11 || hs->connection_keep_alive;

    /* Several lines of a single-valued field make one invalid value (http_parse.h). */
    if (hs->repeated & REPEATED_IMS)
        req->if_modified_since = (struct http_slice){ NULL, 0 };
    if (hs->repeated & REPEATED_IUS)
        req->if_unmodified_since = (struct http_slice){ NULL, 0 };
    if (hs->repeated & REPEATED_RANGE)
        req->range = (struct http_slice){ NULL, 0 };
    req->repeated = hs->repeated & (HTTP_REPEATED_IF_MATCH | HTTP_REPEATED_IF_NONE_MATCH |
                                    HTTP_REPEATED_IF_RANGE);
    return 0;
}

/* Finds the end of the line starting at pos, looking no further than window.
 * Returns 1 (line is [pos, *line_end), next line at *next), 0 (not terminated yet) or -1 (bare CR).
 * Returns -2 as soon as more than content_limit bytes of line content are seen (SIZE_MAX: no
 * limit), decided per byte so the verdict does not depend on how the input was split. */
static int find_line_end(const char *buf, size_t pos, size_t window, size_t content_limit,
                         size_t *line_end, size_t *next)
{
    /* A terminator may start at most content_limit bytes in; memchr, not a byte loop,
     * because this runs over every byte of every head. */
    int limited = window - pos > content_limit;
    size_t scan_end = limited ? pos + content_limit + 1 : window;
    const char *lf = memchr(buf + pos, '\n', scan_end - pos);
    size_t stop = lf != NULL ? (size_t)(lf - buf) : scan_end;
    const char *cr = memchr(buf + pos, '\r', stop - pos);
    if (cr != NULL) {
        size_t i = (size_t)(cr - buf);
        if (i + 1 >= window)
            return 0;
        if (buf[i + 1] != '\n')
            return -1; /* RFC 9112 §2.2: bare CR is invalid; we reject rather than replace */
        *line_end = i;
        *next = i + 2;
        return 1;
    }
    if (lf != NULL) {
        /* Bare LF accepted as terminator, as nginx does (RFC 9112 §2.2 MAY). */
        *line_end = stop;
        *next = stop + 1;
        return 1;
    }
    return limited ? -2 : 0;
}

int http_next_field(const struct http_request *req, const char *name, size_t *cursor,
                    struct http_slice *value)
{
    /* The head was validated when it was parsed: every line ends in LF or CRLF and
     * has a colon, and the empty line ends it. */
    const char *h = req->fields.p;
    size_t n = req->fields.len, pos = *cursor, name_len = strlen(name);
    while (h != NULL && pos < n) {
        const char *lf = memchr(h + pos, '\n', n - pos);
        size_t end = lf != NULL ? (size_t)(lf - h) : n;
        size_t content_end = end > pos && h[end - 1] == '\r' ? end - 1 : end;
        const char *line = h + pos;
        size_t len = content_end - pos;
        pos = lf != NULL ? end + 1 : n;
        if (len == 0)
            break;
        if (len > name_len && line[name_len] == ':' && slice_equals_ci(line, name_len, name)) {
            const char *v = line + name_len + 1;
            size_t vlen = len - name_len - 1;
            trim_ows(&v, &vlen);
            *value = (struct http_slice){ v, vlen };
            *cursor = pos;
            return 1;
        }
    }
    *cursor = n;
    return 0;
}

/* The request-line is longer than max_request_line; line holds its first n bytes. RFC 9112 §3
 * wants 414 for a target too long to parse, but a method longer than any we implement SHOULD be
 * 501: so if no SP ended the method within the limit, it is the method that is too long. A byte
 * that cannot be in a method before the first SP makes the line malformed (400) whatever its
 * length, and so does a target that ended well within the limit (the line goes on where its
 * version should have ended it).
 * Decided from bytes within the limit only, so the verdict does not depend on splits. */
/* Bytes of line (n long) that can be a method: the token it starts with. */
static size_t token_length(const char *line, size_t n)
{
    size_t i = 0;
    while (i < n && is_tchar((unsigned char)line[i]))
        i++;
    return i;
}

static int overlong_line_status(const char *line, size_t n, struct http_request *req)
{
    size_t i = token_length(line, n);
    if (i == n)
        return 501;
    if (i == 0 || line[i] != ' ')
        return 400;
    req->method = method_lookup(line, i);       /* so a HEAD's 414 or 400 goes without a body */
    /* a target that ended with room for a version (8 bytes) after it: the byte past the
     * limit, where its line end would be, is none (find_line_end looked) */
    const char *sp = memchr(line + i + 1, ' ', n - i - 1);
    return sp != NULL && (size_t)(line + n - (sp + 1)) >= 8 ? 400 : 414;
}

/* A request-line refused before it was parsed: its method if it has one
 * (the bytes before a first SP are a token), so a HEAD's error goes
 * without a body. */
static void note_method(const char *line, size_t n, struct http_request *req)
{
    size_t i = token_length(line, n);
    if (i > 0 && i < n && line[i] == ' ')
        req->method = method_lookup(line, i);
}

static enum http_parse_result fail(struct http_request *req, int *status, int code)
{
    req->keep_alive = 0;
    *status = code;
    return HTTP_PARSE_ERROR;
}

/* More bytes cannot change the verdict before the buffer holds until bytes, unless one is a CR or
 * LF: complete lines are not looked at again, and the partial last one only for its end. */
static enum http_parse_result incomplete(struct http_request *req, size_t until)
{
    req->settled_until = until;
    return HTTP_PARSE_INCOMPLETE;
}

int http_parse_may_change(const char *buf, size_t seen, size_t len, const struct http_request *req)
{
    if (seen == 0 || len >= req->settled_until || buf[seen - 1] == '\r')
        return 1;                           /* (a CR ending the old bytes waits for its LF) */
    return memchr(buf + seen, '\n', len - seen) != NULL || memchr(buf + seen, '\r', len - seen) != NULL;
}

enum http_parse_result http_parse_request(const char *buf, size_t len, const struct http_limits *lim,
                                          struct http_request *req, size_t *head_len, int *status)
{
    memset(req, 0, sizeof *req);
    *head_len = 0;
    *status = 0;

    /* Never look past max_head: results then depend only on the first max_head bytes, so a
     * verdict reached once stays the same however much more the client sends. */
    size_t window = len < lim->max_head ? len : lim->max_head;
    int at_window_limit = len >= lim->max_head;
    size_t pos = 0;

    /* RFC 9112 §2.2: ignore at least one empty line before the request-line. These bytes count
     * toward max_head; past HTTP_LEADING_EMPTY_MAX of them the request is refused (Apache takes
     * 10 lines): every byte of this run is a line end, so each read would parse it all again. */
    for (;;) {
        if (pos >= window)
            return at_window_limit ? fail(req, status, 431) : incomplete(req, 0);
        if (pos >= HTTP_LEADING_EMPTY_MAX && (buf[pos] == '\n' || buf[pos] == '\r'))
            return fail(req, status, 400);
        if (buf[pos] == '\n') {
            pos++;
        } else if (buf[pos] == '\r') {
            if (pos + 1 >= window)
                return at_window_limit ? fail(req, status, 431) : incomplete(req, 0);
            if (buf[pos + 1] != '\n')
                return fail(req, status, 400);
            pos += 2;
        } else {
            break;
        }
    }

    size_t line_end, next;
    int found = find_line_end(buf, pos, window, lim->max_request_line, &line_end, &next);
    if (found == -2)
        return fail(req, status, overlong_line_status(buf + pos, lim->max_request_line, req));
    if (found == -1) {
        note_method(buf + pos, window - pos, req);     /* a bare CR in it */
        return fail(req, status, 400);
    }
    if (found == 0) {
        /* find_line_end calls the line too long once the window passes this */
        size_t too_long = pos + lim->max_request_line + 1;
        if (!at_window_limit)
            return incomplete(req, too_long < lim->max_head ? too_long : lim->max_head);
        note_method(buf + pos, window - pos, req);
        return fail(req, status, 431);
    }
    int st = parse_request_line(buf + pos, line_end - pos, req);
    if (st)
        return fail(req, status, st);

    struct header_state hs;
    memset(&hs, 0, sizeof hs);
    pos = next;
    size_t fields_start = pos;
    for (;;) {
        found = find_line_end(buf, pos, window, SIZE_MAX, &line_end, &next);
        if (found == -1)
            return fail(req, status, 400);
        if (found == 0)
            return at_window_limit ? fail(req, status, 431) : incomplete(req, lim->max_head);
        if (line_end == pos)
            break; /* empty line: end of head */
        if (req->header_count >= lim->max_headers)
            return fail(req, status, 431);
        req->header_count++;
        st = parse_header_line(buf + pos, line_end - pos, req, &hs);
        if (st)
            return fail(req, status, st);
        pos = next;
    }

    req->fields = (struct http_slice){ buf + fields_start, next - fields_start };
    st = finish_head(req, &hs);
    if (st) {
        /* The whole head is in and, without Transfer-Encoding, so is how
         * long its body is: tell the caller, so that it need not wait for
         * bytes that will never come before it closes. */
        if (!hs.te_seen)
            *head_len = next;
        return fail(req, status, st);
    }
    *head_len = next;
    return HTTP_PARSE_OK;
}

size_t http_unframed_head_length(const char *buf, size_t n)
{
    size_t pos = 0;
    int lines = 0;          /* non-empty lines so far: the request-line, then fields */
    while (pos < n) {
        const char *lf = memchr(buf + pos, '\n', n - pos);
        if (lf == NULL)
            return 0;
        size_t end = (size_t)(lf - buf), len = end - pos;
        if (len > 0 && buf[end - 1] == '\r')
            len--;
        if (len == 0 && lines > 0)
            return end + 1;
        /* past the request-line, a line the parser would not have read as
         * one field (folded, a bare CR in it) may hide a framing field */
        if (memchr(buf + pos, '\r', len) != NULL)
            return 0;       /* a bare CR, even in the request-line: lines the parser would not split */
        if (lines > 0 && (buf[pos] == ' ' || buf[pos] == '\t' ||
                          starts_with_ci(buf + pos, len, "content-length") ||
                          starts_with_ci(buf + pos, len, "transfer-encoding")))
            return 0;
        if (len > 0)
            lines++;
        pos = end + 1;
    }
    return 0;
}

/* check_http_parse.c — unit tests for the request-head parser (src/http_parse.c). */
#include <check.h>

#include "check_run.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_parse.h"

static const struct http_limits LIM = { 64, 512, 8 };

static int slice_is(struct http_slice s, const char *want)
{
    if (want == NULL)
        return s.p == NULL;
    return s.p != NULL && s.len == strlen(want) && memcmp(s.p, want, s.len) == 0;
}

/* Every strict prefix must be INCOMPLETE or give the same verdict: the caller re-parses as bytes
 * arrive, so a split must never change the outcome. */
static void check_prefixes(const char *s, size_t n, const struct http_limits *lim,
                           enum http_parse_result want, int want_status, size_t want_head_len)
{
    for (size_t k = 0; k < n; k++) {
        struct http_request r;
        size_t hl;
        int st;
        enum http_parse_result res = http_parse_request(s, k, lim, &r, &hl, &st);
        if (res == HTTP_PARSE_INCOMPLETE) {
            /* the caller does not parse again while http_parse_may_change says nothing can
             * change: it must be right for every longer prefix it says so of */
            for (size_t k2 = k + 1; k2 <= n && !http_parse_may_change(s, k, k2, &r); k2++) {
                struct http_request r2;
                size_t hl2;
                int st2;
                ck_assert_msg(http_parse_request(s, k2, lim, &r2, &hl2, &st2) == HTTP_PARSE_INCOMPLETE,
                              "prefix %zu of %zu incomplete, prefix %zu not, yet "
                              "http_parse_may_change said no", k, n, k2);
            }
            continue;
        }
        ck_assert_msg(res == want && (res != HTTP_PARSE_ERROR || st == want_status) &&
                          (res != HTTP_PARSE_OK || hl == want_head_len),
                      "prefix %zu of %zu gave %d/%d, full gives %d/%d", k, n, res, st, want, want_status);
    }
}

static enum http_parse_result parse_n(const char *s, size_t n, const struct http_limits *lim,
                                      struct http_request *r, size_t *hl, int *st)
{
    enum http_parse_result res = http_parse_request(s, n, lim, r, hl, st);
    check_prefixes(s, n, lim, res, *st, *hl);
    return res;
}

static void expect_status_lim(const char *s, size_t n, const struct http_limits *lim, int want, int line)
{
    struct http_request r;
    size_t hl;
    int st;
    enum http_parse_result res = parse_n(s, n, lim, &r, &hl, &st);
    ck_assert_msg(res == HTTP_PARSE_ERROR && st == want, "line %d: want error %d, got result %d status %d",
                  line, want, res, st);
    ck_assert_int_eq(r.keep_alive, 0);
}

#define EXPECT_STATUS(s, code) expect_status_lim((s), strlen(s), &LIM, (code), __LINE__)
#define EXPECT_STATUS_N(s, n, code) expect_status_lim((s), (n), &LIM, (code), __LINE__)

static struct http_request expect_ok_lim(const char *s, size_t n, const struct http_limits *lim, int line)
{
    struct http_request r;
    size_t hl;
    int st = 0;
    enum http_parse_result res = parse_n(s, n, lim, &r, &hl, &st);
    ck_assert_msg(res == HTTP_PARSE_OK, "line %d: want OK, got result %d status %d", line, res, st);
    ck_assert_msg(hl == n, "line %d: head_len %zu != %zu", line, hl, n);
    return r;
}

#define EXPECT_OK(s) expect_ok_lim((s), strlen(s), &LIM, __LINE__)

static void expect_incomplete(const char *s)
{
    struct http_request r;
    size_t hl;
    int st;
    ck_assert_int_eq(http_parse_request(s, strlen(s), &LIM, &r, &hl, &st), HTTP_PARSE_INCOMPLETE);
}

START_TEST(simple_get)
{
    struct http_request r = EXPECT_OK("GET /index.html?a=1&b HTTP/1.1\r\nHost: example.com\r\n\r\n");
    ck_assert_int_eq(r.method, HTTP_GET);
    ck_assert(slice_is(r.method_name, "GET"));
    ck_assert(slice_is(r.target, "/index.html?a=1&b"));
    ck_assert_int_eq(r.target_form, HTTP_TARGET_ORIGIN);
    ck_assert(slice_is(r.path, "/index.html"));
    ck_assert(slice_is(r.query, "a=1&b"));
    ck_assert(slice_is(r.host, "example.com"));
    ck_assert_uint_eq(r.version_major, 1);
    ck_assert_uint_eq(r.version_minor, 1);
    ck_assert_int_eq(r.keep_alive, 1);
    ck_assert_int_eq(r.has_body, 0);
    ck_assert_int_eq(r.chunked, 0);
    ck_assert_int_eq(r.content_length, 0);
    ck_assert_int_eq(r.expect_continue, 0);
    ck_assert_uint_eq(r.header_count, 1);
    ck_assert(slice_is(r.range, NULL));
}
END_TEST

START_TEST(query_absent_and_empty)
{
    struct http_request r = EXPECT_OK("GET /a HTTP/1.1\r\nHost: h\r\n\r\n");
    ck_assert(r.query.p == NULL);
    r = EXPECT_OK("GET /a? HTTP/1.1\r\nHost: h\r\n\r\n");
    ck_assert(r.query.p != NULL);
    ck_assert_uint_eq(r.query.len, 0);
    ck_assert(slice_is(r.path, "/a"));
    r = EXPECT_OK("GET /a?b?c HTTP/1.1\r\nHost: h\r\n\r\n");
    ck_assert(slice_is(r.path, "/a"));
    ck_assert(slice_is(r.query, "b?c"));
}
END_TEST

START_TEST(incomplete)
{
    expect_incomplete("");
    expect_incomplete("G");
    expect_incomplete("GET / HTTP/1.1\r");
    expect_incomplete("GET / HTTP/1.1\r\nHost: h\r\n");
    expect_incomplete("GET / HTTP/1.1\r\nHost: h\r\n\r");
    expect_incomplete("\r\n\r\n");
}
END_TEST

START_TEST(leading_empty_lines)
{
    const char *s = "\r\n\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n";
    struct http_request r = EXPECT_OK(s);
    ck_assert_int_eq(r.method, HTTP_GET);
    /* Leading empty lines count toward max_head. */
    struct http_limits lim = { 64, 32, 8 };
    char buf[64];
    strcpy(buf, "\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"); /* 6 + 27 = 33 bytes */
    ck_assert_uint_eq(strlen(buf), 33);
    expect_status_lim(buf, strlen(buf), &lim, 431, __LINE__);
    lim.max_head = 33;
    expect_ok_lim(buf, strlen(buf), &lim, __LINE__);
    /* At most HTTP_LEADING_EMPTY_MAX bytes of them: an empty line starting past that is 400
     * (each read of such a run would parse it all again) */
    char many[256];
    for (int i = 0; i < 32; i++)
        memcpy(many + 2 * i, "\r\n", 2);
    strcpy(many + 64, "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_OK(many);
    memcpy(many + 64, "\r\n", 2);
    strcpy(many + 66, "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_STATUS(many, 400);
    memset(many, '\n', 65);
    strcpy(many + 65, "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_STATUS(many, 400);
    /* Nothing but empty lines up to the limit is 431, never an endless INCOMPLETE. */
    expect_status_lim("\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n", 32, &(struct http_limits){ 64, 32, 8 },
                      431, __LINE__);
}
END_TEST

START_TEST(bare_lf_accepted)
{
    struct http_request r = EXPECT_OK("GET /x HTTP/1.1\nHost: h\nUser-Agent: u\n\n");
    ck_assert(slice_is(r.path, "/x"));
    ck_assert(slice_is(r.user_agent, "u"));
    r = EXPECT_OK("GET /x HTTP/1.1\r\nHost: h\n\r\n");
    ck_assert(slice_is(r.host, "h"));
}
END_TEST

START_TEST(bare_cr_rejected)
{
    EXPECT_STATUS("\rGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET /\r HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\rHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\r\n\r\r\n", 400);
}
END_TEST

START_TEST(request_line_syntax)
{
    EXPECT_STATUS("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET /  HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET /\tHTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS(" GET / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1 extra\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET\r\n\r\n", 400);
    EXPECT_STATUS("GET \r\n\r\n", 400);
    /* HTTP/0.9: no version */
    EXPECT_STATUS("GET /\r\n", 400);
    EXPECT_STATUS("GET /index.html\r\n\r\n", 400);
    /* method must be a token */
    EXPECT_STATUS("G(ET / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("G\"T / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("\x01GET / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET\x80 / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS_N("G\0T / HTTP/1.1\r\nHost: h\r\n\r\n", 29, 400);
}
END_TEST

START_TEST(methods)
{
    static const struct { const char *name; enum http_method m; } table[] = {
        { "GET", HTTP_GET }, { "HEAD", HTTP_HEAD }, { "POST", HTTP_POST }, { "PUT", HTTP_PUT },
        { "DELETE", HTTP_DELETE }, { "OPTIONS", HTTP_OPTIONS }, { "TRACE", HTTP_TRACE }, { "PATCH", HTTP_PATCH },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s / HTTP/1.1\r\nHost: h\r\n\r\n", table[i].name);
        struct http_request r = expect_ok_lim(buf, strlen(buf), &LIM, __LINE__);
        ck_assert_int_eq(r.method, table[i].m);
        ck_assert_str_eq(http_method_name(table[i].m), table[i].name);
    }
    struct http_request r = EXPECT_OK("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
    ck_assert_int_eq(r.method, HTTP_CONNECT);
    ck_assert_str_eq(http_method_name(HTTP_CONNECT), "CONNECT");
    ck_assert_ptr_null(http_method_name(HTTP_METHOD_UNKNOWN));
    ck_assert_ptr_null(http_method_name((enum http_method)99));
}
END_TEST

START_TEST(unknown_method_501)
{
    struct http_request r;
    size_t hl;
    int st;
    const char *s = "BREW /pot HTTP/1.1\r\nHost: h\r\n\r\n";
    ck_assert_int_eq(http_parse_request(s, strlen(s), &LIM, &r, &hl, &st), HTTP_PARSE_ERROR);
    ck_assert_int_eq(st, 501);
    ck_assert_int_eq(r.method, HTTP_METHOD_UNKNOWN);
    ck_assert(slice_is(r.method_name, "BREW"));
    ck_assert_uint_eq(r.version_major, 1);
    /* methods are case-sensitive: lower-case is a different, unknown, method */
    EXPECT_STATUS("get / HTTP/1.1\r\nHost: h\r\n\r\n", 501);
    EXPECT_STATUS("GETX / HTTP/1.1\r\nHost: h\r\n\r\n", 501);
    /* 501 is reported as soon as the request line is complete */
    EXPECT_STATUS("M-SEARCH * HTTP/1.1\r\n", 400); /* '*' only for OPTIONS */
    EXPECT_STATUS("M-SEARCH / HTTP/1.1\r\n", 501);
    /* a malformed line with an unknown method is 400, not 501 */
    EXPECT_STATUS("BREW  / HTTP/1.1\r\n", 400);
    EXPECT_STATUS("BREW / HTTP/1.x\r\n", 400);
}
END_TEST

START_TEST(request_line_length)
{
    /* LIM.max_request_line == 64 */
    char buf[256];
    /* "GET /" + pad + " HTTP/1.1": 5 + pad + 9 */
    memset(buf, 0, sizeof buf);
    strcpy(buf, "GET /");
    memset(buf + 5, 'a', 50);
    strcpy(buf + 55, " HTTP/1.1\r\nHost: h\r\n\r\n");
    ck_assert_uint_eq(strcspn(buf, "\r"), 64);
    expect_ok_lim(buf, strlen(buf), &LIM, __LINE__);

    memset(buf, 0, sizeof buf);
    strcpy(buf, "GET /");
    memset(buf + 5, 'a', 51);
    strcpy(buf + 56, " HTTP/1.1\r\nHost: h\r\n\r\n");
    ck_assert_uint_eq(strcspn(buf, "\r"), 65);
    EXPECT_STATUS(buf, 414);
    /* not yet terminated but already too long */
    buf[65] = '\0';
    EXPECT_STATUS(buf, 414);
    buf[64] = '\0';
    expect_incomplete(buf);
    /* bare LF terminator counts the same */
    memset(buf, 0, sizeof buf);
    strcpy(buf, "GET /");
    memset(buf + 5, 'a', 50);
    strcpy(buf + 55, " HTTP/1.1\nHost: h\n\n");
    expect_ok_lim(buf, strlen(buf), &LIM, __LINE__);
}
END_TEST

/* An over-long request-line whose method alone exceeds the limit is 501 (RFC 9112 §3: a method
 * longer than any implemented SHOULD be 501), not 414; garbage before the first SP stays 400. */
/* Fed a byte at a time, a head is parsed again only when a line ends: a client trickling its
 * head costs the parse time linear in the head's length, not quadratic. */
START_TEST(bytewise_feed_parses_per_line)
{
    static const struct http_limits lim = { 8192, 16384, 100 };
    char buf[4096];
    int k = snprintf(buf, sizeof buf, "GET /index.html HTTP/1.1\r\nHost: example\r\n");
    size_t n = (size_t)k;
    for (int i = 0; i < 30; i++) {
        k = snprintf(buf + n, sizeof buf - n, "X-Pad-%d: %s\r\n", i,
                     "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz");
        n += (size_t)k;
    }
    n += (size_t)snprintf(buf + n, sizeof buf - n, "\r\n");
    ck_assert_uint_lt(n, sizeof buf - 1);

    struct http_request r;
    size_t hl = 0, seen = 0;
    int st;
    unsigned parses = 0;
    enum http_parse_result res = HTTP_PARSE_INCOMPLETE;
    memset(&r, 0, sizeof r);
    for (size_t have = 1; have <= n; have++) {
        if (!http_parse_may_change(buf, seen, have, &r))
            continue;
        parses++;
        res = http_parse_request(buf, have, &lim, &r, &hl, &st);
        if (res != HTTP_PARSE_INCOMPLETE)
            break;
        seen = have;
    }
    ck_assert_int_eq(res, HTTP_PARSE_OK);
    ck_assert_uint_eq(hl, n);
    ck_assert_uint_eq(r.header_count, 31);
    /* 33 lines: a parse when a line's CR comes, one when its LF does, one for the first byte */
    ck_assert_msg(parses <= 2 * 33 + 1, "%u parses for a head of %zu bytes", parses, n);

    /* over the request line's limit, a line with no end is still caught as it grows */
    static const struct http_limits small = { 64, 16384, 100 };
    char line[200];
    memset(line, 'a', sizeof line);
    memcpy(line, "GET /", 5);
    seen = 0;
    res = HTTP_PARSE_INCOMPLETE;
    size_t have;
    for (have = 1; have <= sizeof line; have++) {
        if (!http_parse_may_change(line, seen, have, &r))
            continue;
        res = http_parse_request(line, have, &small, &r, &hl, &st);
        if (res != HTTP_PARSE_INCOMPLETE)
            break;
        seen = have;
    }
    ck_assert_int_eq(res, HTTP_PARSE_ERROR);
    ck_assert_int_eq(st, 414);
    ck_assert_uint_eq(have, 65);
}
END_TEST

/* Expects status want (with LIM) for head, then n copies of fill, then tail. */
static void expect_status_filled(const char *head, char fill, size_t n, const char *tail, int want, int line)
{
    char buf[512];
    size_t h = strlen(head), t = strlen(tail);
    ck_assert_uint_lt(h + n + t, sizeof buf);
    memcpy(buf, head, h);
    memset(buf + h, fill, n);
    memcpy(buf + h + n, tail, t + 1);
    expect_status_lim(buf, h + n + t, &LIM, want, line);
}

START_TEST(request_line_length_method)
{
    /* LIM.max_request_line == 64 */
    char buf[256];
    memset(buf, 0, sizeof buf);
    memset(buf, 'A', 100);
    strcpy(buf + 100, " / HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_STATUS(buf, 501);
    buf[65] = '\0';               /* no SP yet, already too long */
    EXPECT_STATUS(buf, 501);
    buf[64] = '\0';
    expect_incomplete(buf);

    /* the method ends within the limit: the target is what is too long */
    memset(buf, 0, sizeof buf);
    memset(buf, 'A', 20);
    buf[20] = ' ';
    buf[21] = '/';
    memset(buf + 22, 'a', 100);
    strcpy(buf + 122, " HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_STATUS(buf, 414);

    /* the target ended with room for a version and CR before the limit: the line goes on
     * where it should have ended, malformed (400), not a target too long */
    expect_status_filled("GET / HTTP/1.1", 'X', 100, "\r\nHost: h\r\n\r\n", 400, __LINE__);
    /* 8 bytes after the target's SP within the limit: its line end would have been the byte
     * past the limit, which is none */
    expect_status_filled("GET /", 'a', 50, " HTTP/1.1XXXXXXXXXXXXXXXXXXXXX\r\nHost: h\r\n\r\n", 400,
                         __LINE__);
    /* ... but one whose version would cross the limit is still too long a target */
    expect_status_filled("GET /", 'a', 55, " HTTP/1.1\r\nHost: h\r\n\r\n", 414, __LINE__);

    /* a method exactly up to the limit, SP as the first byte past it: still the method */
    memset(buf, 0, sizeof buf);
    memset(buf, 'A', 64);
    strcpy(buf + 64, " / HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_STATUS(buf, 501);

    /* bytes that cannot be in a method */
    memset(buf, 0, sizeof buf);
    memset(buf, 'A', 10);
    buf[10] = '(';
    memset(buf + 11, 'a', 100);
    strcpy(buf + 111, " HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_STATUS(buf, 400);
    memset(buf, 0, sizeof buf);
    memset(buf, 0x01, 100);
    EXPECT_STATUS_N(buf, 100, 400);
    memset(buf, 0, sizeof buf);
    buf[0] = ' ';
    memset(buf + 1, 'a', 100);
    EXPECT_STATUS(buf, 400);
}
END_TEST

START_TEST(versions)
{
    struct http_request r = EXPECT_OK("GET / HTTP/1.0\r\n\r\n");
    ck_assert_uint_eq(r.version_minor, 0);
    r = EXPECT_OK("GET / HTTP/1.2\r\nHost: h\r\n\r\n");
    ck_assert_uint_eq(r.version_major, 1);
    ck_assert_uint_eq(r.version_minor, 1);
    ck_assert_int_eq(r.keep_alive, 1);
    r = EXPECT_OK("GET / HTTP/1.9\r\nHost: h\r\n\r\n");
    ck_assert_uint_eq(r.version_minor, 1);

    struct http_request e;
    size_t hl;
    int st;
    const char *s = "GET / HTTP/2.0\r\nHost: h\r\n\r\n";
    ck_assert_int_eq(http_parse_request(s, strlen(s), &LIM, &e, &hl, &st), HTTP_PARSE_ERROR);
    ck_assert_int_eq(st, 505);
    ck_assert_uint_eq(e.version_major, 2);
    ck_assert_int_eq(e.method, HTTP_GET);
    EXPECT_STATUS("GET / HTTP/0.9\r\n\r\n", 505);
    EXPECT_STATUS("GET / HTTP/0.0\r\n\r\n", 505);
    EXPECT_STATUS("GET / HTTP/3.0\r\n\r\n", 505);
    EXPECT_STATUS("GET / HTTP/9.9\r\n\r\n", 505);
    EXPECT_STATUS("GET / http/1.1\r\n\r\n", 400);
    EXPECT_STATUS("GET / Http/1.1\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.10\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/10.1\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/a.1\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1,1\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTPS/1.1\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1x\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/2\r\n\r\n", 400);
}
END_TEST

START_TEST(absolute_form)
{
    struct http_request r = EXPECT_OK("GET http://Example.COM:8080/a/b?x=1 HTTP/1.1\r\nHost: other\r\n\r\n");
    ck_assert_int_eq(r.target_form, HTTP_TARGET_ABSOLUTE);
    ck_assert(slice_is(r.host, "Example.COM:8080"));
    ck_assert(slice_is(r.path, "/a/b"));
    ck_assert(slice_is(r.query, "x=1"));
    r = EXPECT_OK("GET HTTPS://h HTTP/1.1\r\nHost: h\r\n\r\n");
    ck_assert(slice_is(r.host, "h"));
    ck_assert(slice_is(r.path, "/"));
    ck_assert(r.query.p == NULL);
    r = EXPECT_OK("GET hTtP://h?q HTTP/1.1\r\nHost: h\r\n\r\n");
    ck_assert(slice_is(r.path, "/"));
    ck_assert(slice_is(r.query, "q"));
    r = EXPECT_OK("GET http://[::1]:80/ HTTP/1.1\r\nHost: x\r\n\r\n");
    ck_assert(slice_is(r.host, "[::1]:80"));
    /* Host header order does not matter: authority wins even if Host comes first */
    r = EXPECT_OK("GET http://a/ HTTP/1.1\r\nHost: b\r\n\r\n");
    ck_assert(slice_is(r.host, "a"));
    /* HTTP/1.0 absolute-form without Host */
    r = EXPECT_OK("GET http://a/p HTTP/1.0\r\n\r\n");
    ck_assert(slice_is(r.host, "a"));
    /* port = *DIGIT: an empty port is the same as none (RFC 3986 §3.2.3) */
    r = EXPECT_OK("GET http://a:/f.txt HTTP/1.1\r\nHost: b\r\n\r\n");
    ck_assert(slice_is(r.host, "a:"));
    ck_assert(slice_is(r.path, "/f.txt"));
    r = EXPECT_OK("GET http://[::1]:?q HTTP/1.1\r\nHost: b\r\n\r\n");
    ck_assert(slice_is(r.path, "/"));
    ck_assert(slice_is(r.query, "q"));
    EXPECT_STATUS("GET http://:/p HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET http://h::/p HTTP/1.1\r\nHost: h\r\n\r\n", 400);

    EXPECT_STATUS("GET http:// HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET http:///p HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET http://:80/p HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET http://u:p@h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET http://h:x/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET http://h:65536/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET http://[zz]/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET http://h<x/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET ftp://h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET http:/h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    /* absolute-form still needs a valid Host in HTTP/1.1 */
    EXPECT_STATUS("GET http://a/ HTTP/1.1\r\n\r\n", 400);
    EXPECT_STATUS("GET http://a/ HTTP/1.1\r\nHost: b c\r\n\r\n", 400);
}
END_TEST

START_TEST(other_target_forms)
{
    struct http_request r = EXPECT_OK("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n");
    ck_assert_int_eq(r.target_form, HTTP_TARGET_ASTERISK);
    ck_assert(r.path.p == NULL);
    EXPECT_STATUS("GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("OPTIONS *x HTTP/1.1\r\nHost: h\r\n\r\n", 400);

    r = EXPECT_OK("CONNECT h.example:443 HTTP/1.1\r\nHost: h.example:443\r\n\r\n");
    ck_assert_int_eq(r.target_form, HTTP_TARGET_AUTHORITY);
    ck_assert(slice_is(r.target, "h.example:443"));
    ck_assert(r.path.p == NULL);
    ck_assert(slice_is(r.host, "h.example:443"));
    r = EXPECT_OK("CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: h\r\n\r\n");
    ck_assert_int_eq(r.target_form, HTTP_TARGET_AUTHORITY);
    EXPECT_STATUS("CONNECT h.example HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    /* CONNECT has no default port (RFC 9110 §9.3.6): an empty one is still refused */
    EXPECT_STATUS("CONNECT h.example: HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("CONNECT [::1]: HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("CONNECT / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("CONNECT http://h:443/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET h.example:443 HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET index.html HTTP/1.1\r\nHost: h\r\n\r\n", 400);
}
END_TEST

START_TEST(target_bytes)
{
    EXPECT_STATUS("GET /a\x01 HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET /a\x7f HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET /a\x80 HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET /\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET /a\xff HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS_N("GET /a\0 HTTP/1.1\r\nHost: h\r\n\r\n", 30, 400);
    EXPECT_STATUS("GET /a#frag HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET /a?q#frag HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    /* percent-encoded forms are left for path_normalize */
    struct http_request r = EXPECT_OK("GET /%C3%A9%00%2e%2e|{} HTTP/1.1\r\nHost: h\r\n\r\n");
    ck_assert(slice_is(r.path, "/%C3%A9%00%2e%2e|{}"));
}
END_TEST

/* The RFC rules, written out the slow way, as the reference for every byte. */
static int ref_is_alnum(int c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int ref_tchar(int c) { return ref_is_alnum(c) || (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL); }
static int ref_field_value(int c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }
static int ref_target(int c) { return c > 0x20 && c < 0x7f && c != '#'; }
static int ref_reg_name(int c) { return ref_is_alnum(c) || (c != 0 && strchr("-._~!$&'()*+,;=", c) != NULL); }

/* Parses tmpl with its one '*' replaced by byte b; returns 0 (OK) or the error status. */
static int status_with_byte(const char *tmpl, int b)
{
    char buf[128];
    size_t n = strlen(tmpl);
    ck_assert_uint_lt(n, sizeof buf);
    memcpy(buf, tmpl, n);
    char *at = memchr(buf, '*', n);
    ck_assert_ptr_nonnull(at);
    *at = (char)b;
    struct http_request r;
    size_t hl;
    int st = 0;
    enum http_parse_result res = parse_n(buf, n, &LIM, &r, &hl, &st);
    ck_assert_msg(res != HTTP_PARSE_INCOMPLETE, "byte 0x%02x in \"%s\": incomplete", b, tmpl);
    return res == HTTP_PARSE_OK ? 0 : st;
}

START_TEST(every_byte_in_every_position)
{
    for (int b = 0; b < 256; b++) {
        if (b == '\r' || b == '\n')
            continue;   /* line ends: bare_cr_rejected, bare_lf_accepted */
        int st = status_with_byte("Q*Q / HTTP/1.1\r\nHost: h\r\n\r\n", b);
        ck_assert_msg(st == (ref_tchar(b) ? 501 : 400), "method byte 0x%02x: %d", b, st);
        if (b != ':') {   /* "X:Y: v" is the field X with value "Y: v" */
            st = status_with_byte("GET / HTTP/1.1\r\nHost: h\r\nX*Y: v\r\n\r\n", b);
            ck_assert_msg(st == (ref_tchar(b) ? 0 : 400), "field-name byte 0x%02x: %d", b, st);
        }
        st = status_with_byte("GET / HTTP/1.1\r\nHost: h\r\nX: a*b\r\n\r\n", b);
        ck_assert_msg(st == (ref_field_value(b) ? 0 : 400), "field-value byte 0x%02x: %d", b, st);
        st = status_with_byte("GET /a*b HTTP/1.1\r\nHost: h\r\n\r\n", b);
        ck_assert_msg(st == (ref_target(b) ? 0 : 400), "target byte 0x%02x: %d", b, st);
        st = status_with_byte("GET / HTTP/1.1\r\nHost: a*b\r\n\r\n", b);
        ck_assert_msg(st == (ref_reg_name(b) ? 0 : 400), "Host byte 0x%02x: %d", b, st);
    }
}
END_TEST

START_TEST(header_syntax)
{
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n  folded\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\tfolded\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\n Host: h\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost\t: h\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\r\n: empty-name\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\r\nX(A): v\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\r\nX\x80: v\r\n\r\n", 400);
    EXPECT_STATUS_N("GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n", 34, 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\r\nX: a\x01" "b\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\r\nX: a\x1f\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\r\nX: a\x7f\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\r\nX: a\x0b\r\n\r\n", 400);

    /* obs-text, HTAB and inner SP are fine; OWS is trimmed on both sides */
    struct http_request r =
        EXPECT_OK("GET / HTTP/1.1\r\nHost: h\r\nUser-Agent: \t caf\xc3\xa9 \x80\xff\tx \t \r\nX-Empty:\r\nX-Sp:   \r\n\r\n");
    ck_assert(slice_is(r.user_agent, "caf\xc3\xa9 \x80\xff\tx"));
    ck_assert_uint_eq(r.header_count, 4);
    /* name matching is case-insensitive */
    r = EXPECT_OK("GET / HTTP/1.1\r\nhOST: h\r\nuSeR-aGeNt:ua\r\nREFERER: http://r/\r\n\r\n");
    ck_assert(slice_is(r.host, "h"));
    ck_assert(slice_is(r.user_agent, "ua"));
    ck_assert(slice_is(r.referer, "http://r/"));
}
END_TEST

START_TEST(head_size_limit)
{
    /* LIM.max_head == 512. Build a head of exactly 512 bytes, then 513. */
    char buf[700];
    const char *start = "GET / HTTP/1.1\r\nHost: h\r\nX: ";
    size_t fixed = strlen(start) + 4; /* value + "\r\n\r\n" */
    strcpy(buf, start);
    memset(buf + strlen(start), 'v', 512 - fixed);
    strcpy(buf + 512 - 4, "\r\n\r\n");
    ck_assert_uint_eq(strlen(buf), 512);
    expect_ok_lim(buf, 512, &LIM, __LINE__);

    strcpy(buf, start);
    memset(buf + strlen(start), 'v', 513 - fixed);
    strcpy(buf + 513 - 4, "\r\n\r\n");
    ck_assert_uint_eq(strlen(buf), 513);
    EXPECT_STATUS(buf, 431);
    /* the same when the caller has only max_head bytes so far */
    EXPECT_STATUS_N(buf, 512, 431);
    /* fewer than max_head bytes and no end yet: keep reading */
    struct http_request r;
    size_t hl;
    int st;
    ck_assert_int_eq(http_parse_request(buf, 511, &LIM, &r, &hl, &st), HTTP_PARSE_INCOMPLETE);

    /* a request line that is short but never ends and fills max_head: 431 */
    struct http_limits lim = { 30, 40, 8 };
    expect_status_lim("GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 40, &lim, 414, __LINE__);
    lim.max_request_line = 100;
    expect_status_lim("GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 40, &lim, 431, __LINE__);
    /* head complete but beyond max_head while more bytes are buffered: still 431 */
    lim = (struct http_limits){ 64, 26, 8 };
    expect_status_lim("GET / HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\n", 43, &lim, 431, __LINE__);
    lim.max_head = 27;
    expect_ok_lim("GET / HTTP/1.1\r\nHost: h\r\n\r\n", 27, &lim, __LINE__);
    struct http_request r2;
    ck_assert_int_eq(http_parse_request("GET / HTTP/1.1\r\nHost: h\r\n\r\nGET", 30, &lim, &r2, &hl, &st), HTTP_PARSE_OK);
    ck_assert_uint_eq(hl, 27);
}
END_TEST

START_TEST(header_count_limit)
{
    /* LIM.max_headers == 8 */
    char buf[400] = "GET / HTTP/1.1\r\nHost: h\r\n";
    for (int i = 0; i < 7; i++)
        strcat(buf, "X-A: b\r\n");
    strcat(buf, "\r\n");
    struct http_request r = expect_ok_lim(buf, strlen(buf), &LIM, __LINE__);
    ck_assert_uint_eq(r.header_count, 8);
    buf[strlen(buf) - 2] = '\0';
    strcat(buf, "X-A: b\r\n\r\n");
    EXPECT_STATUS(buf, 431);
}
END_TEST

START_TEST(host_rules)
{
    EXPECT_STATUS("GET / HTTP/1.1\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.0\r\nHost: h\r\nHost: h\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost:\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost:   \r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: a\\b\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: ..\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: a..b\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: :\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h::\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: [::1]::\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h:123456\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h:65536\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h:8a\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h:80:80\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: :80\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: [::g]\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: [fe80::1%25eth0]\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.1\r\nHost: h%zz\r\n\r\n", 400);
    EXPECT_STATUS("GET / HTTP/1.0\r\nHost: a b\r\n\r\n", 400);

    struct http_request r = EXPECT_OK("GET / HTTP/1.1\r\nHost: h:65535\r\n\r\n");
    ck_assert(slice_is(r.host, "h:65535"));
    /* port = *DIGIT: an empty port is the same as none (RFC 3986 §3.2.3) */
    r = EXPECT_OK("GET / HTTP/1.1\r\nHost: h:\r\n\r\n");
    ck_assert(slice_is(r.host, "h:"));
    r = EXPECT_OK("GET / HTTP/1.1\r\nHost: [::1]:\r\n\r\n");
    ck_assert(slice_is(r.host, "[::1]:"));
    r = EXPECT_OK("GET / HTTP/1.0\r\nHost: 192.0.2.1:\r\n\r\n");
    ck_assert(slice_is(r.host, "192.0.2.1:"));
    r = EXPECT_OK("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n");
    ck_assert(slice_is(r.host, "[::1]:8080"));
    r = EXPECT_OK("GET / HTTP/1.1\r\nHost: [::ffff:1.2.3.4]\r\n\r\n");
    ck_assert(slice_is(r.host, "[::ffff:1.2.3.4]"));
    r = EXPECT_OK("GET / HTTP/1.1\r\nHost: 192.0.2.1:80\r\n\r\n");
    ck_assert(slice_is(r.host, "192.0.2.1:80"));
    r = EXPECT_OK("GET / HTTP/1.1\r\nHost: Sub_Dom-1.Example.com.\r\n\r\n");
    ck_assert(slice_is(r.host, "Sub_Dom-1.Example.com."));
    r = EXPECT_OK("GET / HTTP/1.1\r\nHost: xn--caf-dma%41.example\r\n\r\n");
    r = EXPECT_OK("GET / HTTP/1.0\r\n\r\n");
    ck_assert(r.host.p == NULL);
    r = EXPECT_OK("GET / HTTP/1.0\r\nHost: h\r\n\r\n");
    ck_assert(slice_is(r.host, "h"));
}
END_TEST

START_TEST(content_length)
{
    struct http_request r = EXPECT_OK("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n");
    ck_assert_uint_eq(r.content_length, 10);
    ck_assert_int_eq(r.has_body, 1);
    ck_assert_int_eq(r.chunked, 0);
    r = EXPECT_OK("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
    ck_assert_int_eq(r.has_body, 0);
    r = EXPECT_OK("POST /u HTTP/1.1\r\nHost: h\r\ncontent-length:  007 \r\n\r\n");
    ck_assert_uint_eq(r.content_length, 7);
    r = EXPECT_OK("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 4611686018427387904\r\n\r\n");
    ck_assert_uint_eq(r.content_length, UINT64_C(1) << 62);

    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 4611686018427387905\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551615\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551616\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999999\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: \r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 1 2\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 5,5\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400);
}
END_TEST

START_TEST(transfer_encoding)
{
    struct http_request r = EXPECT_OK("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
    ck_assert_int_eq(r.chunked, 1);
    ck_assert_int_eq(r.has_body, 1);
    r = EXPECT_OK("POST /u HTTP/1.1\r\nHost: h\r\ntransfer-encoding:  CHUNKED \r\n\r\n");
    ck_assert_int_eq(r.chunked, 1);

    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", 501);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunkedx\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\x0b\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked,\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: ,chunked\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
    EXPECT_STATUS("POST /u HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
    /* 400 beats 501 when both apply */
    EXPECT_STATUS("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 1\r\n\r\n", 400);
}
END_TEST

START_TEST(connection_keep_alive)
{
    struct http_request r = EXPECT_OK("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    ck_assert_int_eq(r.keep_alive, 1);
    r = EXPECT_OK("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    ck_assert_int_eq(r.keep_alive, 0);
    r = EXPECT_OK("GET / HTTP/1.1\r\nHost: h\r\nConnection: Keep-Alive, CLOSE\r\n\r\n");
    ck_assert_int_eq(r.keep_alive, 0);
    r = EXPECT_OK("GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nConnection: close\r\n\r\n");
    ck_assert_int_eq(r.keep_alive, 0);
    r = EXPECT_OK("GET / HTTP/1.1\r\nHost: h\r\nConnection: closed, xclose\r\n\r\n");
    ck_assert_int_eq(r.keep_alive, 1);
    r = EXPECT_OK("GET / HTTP/1.0\r\n\r\n");
    ck_assert_int_eq(r.keep_alive, 0);
    r = EXPECT_OK("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    ck_assert_int_eq(r.keep_alive, 1);
    r = EXPECT_OK("GET / HTTP/1.0\r\nConnection: foo,,  KEEP-ALIVE  \r\n\r\n");
    ck_assert_int_eq(r.keep_alive, 1);
    r = EXPECT_OK("GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n");
    ck_assert_int_eq(r.keep_alive, 0);
    r = EXPECT_OK("GET / HTTP/1.0\r\nConnection: close, keep-alive\r\n\r\n");
    ck_assert_int_eq(r.keep_alive, 0);
}
END_TEST

START_TEST(expect_header)
{
    struct http_request r = EXPECT_OK("PUT /u HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
    ck_assert_int_eq(r.expect_continue, 1);
    r = EXPECT_OK("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\n\r\n");
    ck_assert_int_eq(r.expect_continue, 1);
    r = EXPECT_OK("PUT /u HTTP/1.0\r\nExpect: 100-continue\r\n\r\n");
    ck_assert_int_eq(r.expect_continue, 0);
    EXPECT_STATUS("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n", 417);
    EXPECT_STATUS("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: 100-continue, x\r\n\r\n", 417);
    EXPECT_STATUS("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nExpect: foo\r\n\r\n", 417);
    EXPECT_STATUS("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: foo\r\nExpect: 100-continue\r\n\r\n", 417);
    EXPECT_STATUS("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: foo,\r\n\r\n", 417);
    EXPECT_STATUS("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: ,,foo\r\n\r\n", 417);
    EXPECT_STATUS("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: 100-continue;a=b\r\n\r\n", 417);
    EXPECT_STATUS("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: 100-continue=1\r\n\r\n", 417);
    EXPECT_STATUS("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: 100-continue x\r\n\r\n", 417);
    EXPECT_STATUS("PUT /u HTTP/1.0\r\nExpect: , foo\r\n\r\n", 417);

    /* Expect is a list (RFC 9110 §10.1.1): empty elements are ignored (§5.6.1), so an
     * empty value is as if absent, and lines add up to one list (§5.3). */
    r = EXPECT_OK("PUT /u HTTP/1.1\r\nHost: h\r\nExpect:\r\n\r\n");
    ck_assert_int_eq(r.expect_continue, 0);
    ck_assert_int_eq(r.keep_alive, 1);
    r = EXPECT_OK("PUT /u HTTP/1.1\r\nHost: h\r\nExpect:  \t \r\n\r\n");
    ck_assert_int_eq(r.expect_continue, 0);
    r = EXPECT_OK("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: , ,\t,\r\n\r\n");
    ck_assert_int_eq(r.expect_continue, 0);
    r = EXPECT_OK("PUT /u HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nExpect: 100-continue,\r\n\r\n");
    ck_assert_int_eq(r.expect_continue, 1);
    r = EXPECT_OK("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: , \t100-CONTINUE\t ,,\r\n\r\n");
    ck_assert_int_eq(r.expect_continue, 1);
    r = EXPECT_OK("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: 100-continue, 100-continue\r\n\r\n");
    ck_assert_int_eq(r.expect_continue, 1);
    r = EXPECT_OK("PUT /u HTTP/1.1\r\nHost: h\r\nExpect:\r\nExpect: 100-continue\r\n\r\n");
    ck_assert_int_eq(r.expect_continue, 1);
    r = EXPECT_OK("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nExpect: ,\r\n\r\n");
    ck_assert_int_eq(r.expect_continue, 1);
    r = EXPECT_OK("PUT /u HTTP/1.0\r\nExpect: 100-continue,\r\n\r\n");
    ck_assert_int_eq(r.expect_continue, 0);
    /* a framing error is reported before the failed expectation */
    EXPECT_STATUS("PUT /u HTTP/1.1\r\nHost: h\r\nExpect: foo\r\nContent-Length: x\r\n\r\n", 400);
}
END_TEST

START_TEST(first_occurrence_kept)
{
    struct http_limits lim = { 64, 512, 16 };
    const char *s =
        "GET / HTTP/1.1\r\nHost: h\r\nRange: bytes=0-1\r\nIf-Range: \"a\"\r\n"
        "If-Match: \"m\"\r\nIf-None-Match: W/\"n\"\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
        "If-Unmodified-Since: x\r\nUser-Agent: u1\r\nUser-Agent: u2\r\n\r\n";
    struct http_request r = expect_ok_lim(s, strlen(s), &lim, __LINE__);
    ck_assert(slice_is(r.range, "bytes=0-1"));
    ck_assert(slice_is(r.if_range, "\"a\""));
    ck_assert(slice_is(r.if_match, "\"m\""));
    ck_assert(slice_is(r.if_none_match, "W/\"n\""));
    ck_assert(slice_is(r.if_modified_since, "Sun, 06 Nov 1994 08:49:37 GMT"));
    ck_assert(slice_is(r.if_unmodified_since, "x"));
    ck_assert(slice_is(r.user_agent, "u1"));
    ck_assert(slice_is(r.referer, NULL));
    ck_assert_uint_eq(r.repeated, 0);
    r = EXPECT_OK("GET / HTTP/1.1\r\nHost: h\r\nRange:\r\n\r\n");
    ck_assert(r.range.p != NULL);
    ck_assert_uint_eq(r.range.len, 0);
}
END_TEST

/* A field on several lines is one comma-joined value (RFC 9110 §5.3): the single-valued
 * conditionals and Range become invalid (dropped), the lists are read across lines. */
START_TEST(repeated_fields)
{
    const char *s =
        "GET / HTTP/1.1\r\nHost: h\r\nRange: bytes=0-1\r\nRange: bytes=5-6\r\nIf-Range: \"a\"\r\n"
        "if-range: \"b\"\r\nIf-Match: \"m1\"\r\nX: y\r\nIF-MATCH:  \"m2\", \"m3\" \r\n"
        "If-None-Match: \"n\"\r\nIf-None-Match: \"o\"\n"
        "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
        "If-Unmodified-Since: x\r\nIf-Unmodified-Since: y\r\n\r\n";
    struct http_limits lim = { 64, 1024, 32 };
    struct http_request r = expect_ok_lim(s, strlen(s), &lim, __LINE__);
    ck_assert(slice_is(r.range, NULL));
    ck_assert(slice_is(r.if_modified_since, NULL));
    ck_assert(slice_is(r.if_unmodified_since, NULL));
    ck_assert(slice_is(r.if_range, "\"a\""));
    ck_assert(slice_is(r.if_match, "\"m1\""));
    ck_assert_uint_eq(r.repeated,
                      HTTP_REPEATED_IF_MATCH | HTTP_REPEATED_IF_NONE_MATCH | HTTP_REPEATED_IF_RANGE);

    size_t cursor = 0;
    struct http_slice v;
    ck_assert_int_eq(http_next_field(&r, "if-match", &cursor, &v), 1);
    ck_assert(slice_is(v, "\"m1\""));
    ck_assert_int_eq(http_next_field(&r, "if-match", &cursor, &v), 1);
    ck_assert(slice_is(v, "\"m2\", \"m3\""));
    ck_assert_int_eq(http_next_field(&r, "if-match", &cursor, &v), 0);
    ck_assert_int_eq(http_next_field(&r, "if-match", &cursor, &v), 0);
    cursor = 0;
    ck_assert_int_eq(http_next_field(&r, "if-none-match", &cursor, &v), 1);
    ck_assert(slice_is(v, "\"n\""));
    ck_assert_int_eq(http_next_field(&r, "if-none-match", &cursor, &v), 1);   /* after a bare LF */
    ck_assert(slice_is(v, "\"o\""));
    ck_assert_int_eq(http_next_field(&r, "if-none-match", &cursor, &v), 0);
    cursor = 0;
    ck_assert_int_eq(http_next_field(&r, "if", &cursor, &v), 0);     /* a prefix is not a name */
    cursor = 0;
    ck_assert_int_eq(http_next_field(&r, "host", &cursor, &v), 1);
    ck_assert(slice_is(v, "h"));
}
END_TEST

/* The method of a request-line too long to parse is still known: a HEAD's 414 has no body. */
START_TEST(overlong_line_keeps_method)
{
    struct http_limits lim = { 16, 512, 16 };
    const char *s = "HEAD /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\n";
    struct http_request r;
    size_t hl;
    int st = 0;
    ck_assert_int_eq(parse_n(s, strlen(s), &lim, &r, &hl, &st), HTTP_PARSE_ERROR);
    ck_assert_int_eq(st, 414);
    ck_assert_int_eq(r.method, HTTP_HEAD);
}
END_TEST

START_TEST(pipelined)
{
    const char *s = "GET /one HTTP/1.1\r\nHost: h\r\n\r\nGET /two HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGET /th";
    struct http_request r;
    size_t hl, off = 0;
    int st;
    ck_assert_int_eq(http_parse_request(s, strlen(s), &LIM, &r, &hl, &st), HTTP_PARSE_OK);
    ck_assert_uint_eq(hl, strlen("GET /one HTTP/1.1\r\nHost: h\r\n\r\n"));
    ck_assert(slice_is(r.path, "/one"));
    off += hl;
    ck_assert_int_eq(http_parse_request(s + off, strlen(s) - off, &LIM, &r, &hl, &st), HTTP_PARSE_OK);
    ck_assert_uint_eq(hl, strlen("GET /two HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"));
    ck_assert(slice_is(r.path, "/two"));
    ck_assert_int_eq(r.keep_alive, 0);
    off += hl;
    ck_assert_int_eq(http_parse_request(s + off, strlen(s) - off, &LIM, &r, &hl, &st), HTTP_PARSE_INCOMPLETE);
    ck_assert_str_eq(s + off, "GET /th");

    /* body bytes after the head are not part of head_len */
    const char *b = "POST / HTTP/1.1\nHost: h\nContent-Length: 5\n\nhello";
    ck_assert_int_eq(http_parse_request(b, strlen(b), &LIM, &r, &hl, &st), HTTP_PARSE_OK);
    ck_assert_str_eq(b + hl, "hello");
}
END_TEST

/* The caller closes without waiting for more bytes only when it knows the whole request is in:
 * an error found after the head reports the head's length and body, and only then. */
START_TEST(error_head_len)
{
    struct http_request r;
    size_t hl;
    int st;
    const char *no_host = "GET / HTTP/1.1\r\nUser-Agent: x\r\n\r\nGET /next";
    ck_assert_int_eq(parse_n(no_host, strlen(no_host), &LIM, &r, &hl, &st), HTTP_PARSE_ERROR);
    ck_assert_int_eq(st, 400);
    ck_assert_str_eq(no_host + hl, "GET /next");
    ck_assert_int_eq(r.has_body, 0);

    const char *no_host_body = "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
    ck_assert_int_eq(parse_n(no_host_body, strlen(no_host_body), &LIM, &r, &hl, &st),
                     HTTP_PARSE_ERROR);
    ck_assert_str_eq(no_host_body + hl, "hello");
    ck_assert_int_eq(r.has_body, 1);
    ck_assert_uint_eq(r.content_length, 5);

    const char *expect = "GET / HTTP/1.1\r\nHost: h\r\nExpect: nothing\r\n\r\n";
    ck_assert_int_eq(parse_n(expect, strlen(expect), &LIM, &r, &hl, &st), HTTP_PARSE_ERROR);
    ck_assert_int_eq(st, 417);
    ck_assert_uint_eq(hl, strlen(expect));

    /* framing unknown: with Transfer-Encoding, or an error inside the head */
    static const char *unknown[] = {
        "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked, x\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h\r\nbad header\r\n\r\n",
        "GET / HTTP/9.1\r\nHost: h\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        ck_assert_int_eq(parse_n(unknown[i], strlen(unknown[i]), &LIM, &r, &hl, &st),
                         HTTP_PARSE_ERROR);
        ck_assert_msg(hl == 0, "case %zu: head_len %zu, want 0", i, hl);
    }
}
END_TEST

/* After a refusal at the request-line: is the whole head in, with nothing to frame a body? */
START_TEST(unframed_head_length)
{
    static const char whole[] = "BREW / HTTP/1.1\r\nHost: a\r\n\r\nGET";
    ck_assert_uint_eq(http_unframed_head_length(whole, strlen(whole)), strlen(whole) - 3);
    static const char lf[] = "\r\nBREW / HTTP/1.1\nHost: a\n\n";
    ck_assert_uint_eq(http_unframed_head_length(lf, strlen(lf)), strlen(lf));
    static const char cut[] = "BREW / HTTP/1.1\r\nHost: a\r\n";
    ck_assert_uint_eq(http_unframed_head_length(cut, strlen(cut)), 0);
    static const char sized[] = "BREW / HTTP/1.1\r\nconTENT-length : 5\r\n\r\n";
    ck_assert_uint_eq(http_unframed_head_length(sized, strlen(sized)), 0);
    static const char chunked[] = "BREW / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
    ck_assert_uint_eq(http_unframed_head_length(chunked, strlen(chunked)), 0);
    static const char folded[] = "BREW / HTTP/1.1\r\nX: a\r\n Content-Length: 5\r\n\r\n";
    ck_assert_uint_eq(http_unframed_head_length(folded, strlen(folded)), 0);
    static const char bare_cr[] = "BREW / HTTP/1.1\r\nHost: a\rContent-Length: 5\r\n\r\n";
    ck_assert_uint_eq(http_unframed_head_length(bare_cr, strlen(bare_cr)), 0);
    static const char cr_in_line[] = "GET / HTTP/1.1\rContent-Length: 5\r\n\r\n";   /* refused for its CR */
    ck_assert_uint_eq(http_unframed_head_length(cr_in_line, strlen(cr_in_line)), 0);
    static const char lengthy[] = "BREW / HTTP/1.1\r\nContent-Lengthy: 5\r\n\r\n";     /* a prefix: waited for */
    ck_assert_uint_eq(http_unframed_head_length(lengthy, strlen(lengthy)), 0);
    ck_assert_uint_eq(http_unframed_head_length("\r\n\r\n", 4), 0);   /* no request-line yet */
    ck_assert_uint_eq(http_unframed_head_length("", 0), 0);
}
END_TEST

START_TEST(must_close)
{
    static const int close_codes[] = { 400, 408, 411, 413, 414, 417, 431, 501, 505 };
    static const int keep_codes[] = { 200, 206, 304, 403, 404, 405, 412, 416, 500 };
    for (size_t i = 0; i < sizeof close_codes / sizeof close_codes[0]; i++)
        ck_assert_int_eq(http_error_must_close(close_codes[i]), 1);
    for (size_t i = 0; i < sizeof keep_codes / sizeof keep_codes[0]; i++)
        ck_assert_int_eq(http_error_must_close(keep_codes[i]), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("http_parse");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, simple_get);
    tcase_add_test(tc, every_byte_in_every_position);
    tcase_add_test(tc, query_absent_and_empty);
    tcase_add_test(tc, incomplete);
    tcase_add_test(tc, leading_empty_lines);
    tcase_add_test(tc, bare_lf_accepted);
    tcase_add_test(tc, bare_cr_rejected);
    tcase_add_test(tc, request_line_syntax);
    tcase_add_test(tc, methods);
    tcase_add_test(tc, unknown_method_501);
    tcase_add_test(tc, request_line_length);
    tcase_add_test(tc, request_line_length_method);
    tcase_add_test(tc, versions);
    tcase_add_test(tc, absolute_form);
    tcase_add_test(tc, other_target_forms);
    tcase_add_test(tc, target_bytes);
    tcase_add_test(tc, header_syntax);
    tcase_add_test(tc, head_size_limit);
    tcase_add_test(tc, header_count_limit);
    tcase_add_test(tc, host_rules);
    tcase_add_test(tc, content_length);
    tcase_add_test(tc, transfer_encoding);
    tcase_add_test(tc, connection_keep_alive);
    tcase_add_test(tc, expect_header);
    tcase_add_test(tc, first_occurrence_kept);
    tcase_add_test(tc, repeated_fields);
    tcase_add_test(tc, overlong_line_keeps_method);
    tcase_add_test(tc, pipelined);
    tcase_add_test(tc, error_head_len);
    tcase_add_test(tc, unframed_head_length);
    tcase_add_test(tc, must_close);
    tcase_add_test(tc, bytewise_feed_parses_per_line);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}

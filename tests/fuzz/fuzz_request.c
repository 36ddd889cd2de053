/* fuzz_request.c — libFuzzer target for the request path's pure protocol modules: head parser,
 * path normalization, Range, preconditions, chunked decoder, HTTP-date. Besides crashes and
 * sanitizer reports it checks invariants (a split never changes a verdict, nor do bytes that
 * http_parse_may_change calls unable to, outputs stay inside
 * their bounds, normalized paths contain no dot segments) and aborts when one is broken.
 *
 * Build: clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *          tests/fuzz/fuzz_request.c src/http_parse.c src/path.c src/range.c src/conditional.c \
 *          src/http_date.c src/chunked.c -o fuzz_request
 * Run:   ./fuzz_request -max_total_time=60 tests/fuzz/corpus */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chunked.h"
#include "conditional.h"
#include "http_date.h"
#include "http_parse.h"
#include "path.h"
#include "range.h"

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

static const struct http_limits LIMITS = { 256, 1024, 16 };

static int slice_inside(struct http_slice s, const char *buf, size_t len)
{
    if (s.p == NULL)
        return 1;
    uintptr_t start = (uintptr_t)buf, p = (uintptr_t)s.p;
    if (p >= start && p <= start + len)
        return s.len <= len - (p - start);
    return s.len == 1 && s.p[0] == '/'; /* the static "/" for an empty absolute-form path */
}

static void check_path(const struct http_slice *path)
{
    char out[512];
    int slash = -1;
    int st = path_normalize(path->p, path->len, out, sizeof out, &slash);
    CHECK(st == 0 || st == 400 || st == 414);
    if (st != 0)
        return;
    size_t n = strlen(out);
    CHECK(n < sizeof out && out[0] == '/');
    CHECK(slash == (out[n - 1] == '/'));
    CHECK(strstr(out, "//") == NULL);
    /* no "." or ".." segment survives */
    for (const char *seg = out + 1; seg < out + n;) {
        const char *end = strchr(seg, '/');
        size_t seg_len = end ? (size_t)(end - seg) : strlen(seg);
        CHECK(!(seg_len == 1 && seg[0] == '.'));
        CHECK(!(seg_len == 2 && seg[0] == '.' && seg[1] == '.'));
        for (size_t i = 0; i < seg_len; i++)
            CHECK((unsigned char)seg[i] >= 0x20 && seg[i] != 0x7f);
        seg += seg_len + 1;
    }
}

static void check_range(const struct http_slice *range)
{
    static const uint64_t sizes[] = { 0, 1, 100, 1000000, UINT64_MAX };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        struct byte_range out[5];
        unsigned count = 12345;
        memset(out, 0, sizeof out);
        enum range_result r = range_parse(range->p, range->len, sizes[i], 8, out, 4, &count);
        if (r != RANGE_OK) {
            CHECK(count == 0);
            continue;
        }
        CHECK(count >= 1 && count <= 4);
        uint64_t total = 0;
        for (unsigned k = 0; k < count; k++) {
            CHECK(out[k].first <= out[k].last && out[k].last < sizes[i]);
            uint64_t len = out[k].last - out[k].first + 1;
            CHECK(len <= sizes[i] - total);
            total += len;
        }
        CHECK(out[4].first == 0 && out[4].last == 0);
    }
}

struct chunk_outcome { enum chunked_result res; size_t consumed; uint64_t data; };

static struct chunk_outcome run_chunked(const char *p, size_t n, size_t step)
{
    struct chunked_state st;
    chunked_init(&st);
    struct chunk_outcome o = { CHUNKED_MORE, 0, 0 };
    while (o.consumed < n) {
        size_t take = n - o.consumed < step ? n - o.consumed : step, used = 0;
        uint64_t before = o.data;
        o.res = chunked_feed(&st, p + o.consumed, take, &used, &o.data);
        CHECK(used <= take);
        CHECK(o.data >= before);
        o.consumed += used;
        if (o.res != CHUNKED_MORE)
            break;
        CHECK(used == take);
    }
    return o;
}

static void check_chunked(const char *p, size_t n)
{
    struct chunk_outcome whole = run_chunked(p, n, SIZE_MAX);
    struct chunk_outcome bytes = run_chunked(p, n, 1);
    struct chunk_outcome odd = run_chunked(p, n, 7);
    CHECK(whole.res == bytes.res && whole.res == odd.res);
    CHECK(whole.consumed == bytes.consumed && whole.consumed == odd.consumed);
    CHECK(whole.data == bytes.data && whole.data == odd.data);
    CHECK(whole.data <= n);
}

static void check_date(const char *p, size_t n)
{
    time_t t;
    if (http_date_parse(p, n, &t) == 0) {
        char buf[30];
        time_t back;
        CHECK(http_date_format(t, buf) == 29);
        CHECK(http_date_parse(buf, 29, &back) == 0 && back == t);
    }
    (void)http_date_parse_at(p, n, 1748736000, &t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    struct http_request req;
    size_t head_len = 0;
    int status = 0;

    enum http_parse_result res = http_parse_request(buf, size, &LIMITS, &req, &head_len, &status);

    /* The caller re-parses as bytes arrive: a verdict on a prefix must stand. */
    struct http_request req_prefix;
    size_t head_len_prefix = 0;
    int status_prefix = 0;
    enum http_parse_result res_prefix =
        http_parse_request(buf, size / 2, &LIMITS, &req_prefix, &head_len_prefix, &status_prefix);
    if (res_prefix != HTTP_PARSE_INCOMPLETE) {
        CHECK(res_prefix == res);
        CHECK(res != HTTP_PARSE_ERROR || status_prefix == status);
        CHECK(res == HTTP_PARSE_INCOMPLETE || head_len_prefix == head_len);
    } else if (size / 2 > 0 && !http_parse_may_change(buf, size / 2, size, &req_prefix)) {
        /* the caller does not parse again when told nothing can change */
        CHECK(res == HTTP_PARSE_INCOMPLETE);
    }
    CHECK(res != HTTP_PARSE_INCOMPLETE || size < LIMITS.max_head);

    if (res == HTTP_PARSE_ERROR) {
        CHECK(status == 400 || status == 414 || status == 417 || status == 431 || status == 501 || status == 505);
        CHECK(req.keep_alive == 0);
        /* a head length on an error means the whole head was seen (the caller closes without
         * lingering when no body follows it) */
        CHECK(head_len == 0 || (head_len <= size && head_len <= LIMITS.max_head && buf[head_len - 1] == '\n'));
    }
    if (res == HTTP_PARSE_OK) {
        CHECK(head_len > 0 && head_len <= size && head_len <= LIMITS.max_head);
        CHECK(req.method != HTTP_METHOD_UNKNOWN && req.version_major == 1 && req.version_minor <= 1);
        CHECK(req.header_count <= LIMITS.max_headers);
        CHECK(!(req.chunked && req.content_length));
        CHECK(req.has_body == (req.chunked || req.content_length > 0));
        CHECK(req.content_length <= (UINT64_C(1) << 62));
        const struct http_slice *slices[] = { &req.method_name, &req.target, &req.path, &req.query, &req.host,
                                              &req.range, &req.if_range, &req.if_match, &req.if_none_match,
                                              &req.if_modified_since, &req.if_unmodified_since,
                                              &req.user_agent, &req.referer, &req.fields };
        for (size_t i = 0; i < sizeof slices / sizeof slices[0]; i++)
            CHECK(slice_inside(*slices[i], buf, head_len));
        CHECK(req.version_minor == 0 || req.host.p != NULL);

        if (req.path.p != NULL)
            check_path(&req.path);
        if (req.range.p != NULL)
            check_range(&req.range);

        static const char etag[] = "\"5f2a-3039\"";
        struct cond_resource r = { .etag = etag, .etag_len = sizeof etag - 1, .mtime = 784111777,
                                   .now = 784111790 };
        int c = cond_evaluate(&req, &r);
        CHECK(c == 0 || c == 304 || c == 412);
        int ir = cond_if_range_ok(&req, &r);
        CHECK(ir == 0 || ir == 1);
        /* a file changed lately: no tag, no 304 from a date */
        struct cond_resource fresh = { .etag = NULL, .mtime = 784111777, .now = 784111790, .unsettled = 1 };
        c = cond_evaluate(&req, &fresh);
        CHECK(c == 0 || c == 304 || c == 412);
        CHECK(c != 304 || req.if_none_match.p != NULL);
        CHECK(cond_if_range_ok(&req, &fresh) == (req.if_range.p == NULL));
        /* every field line is found again, inside the head */
        static const char *const names[] = { "if-match", "if-none-match", "host" };
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            size_t cursor = 0, lines = 0;
            struct http_slice v;
            while (http_next_field(&req, names[i], &cursor, &v)) {
                CHECK(slice_inside(v, buf, head_len));
                CHECK(++lines <= req.header_count);
            }
        }

        if (req.chunked)
            check_chunked(buf + head_len, size - head_len);
    }

    /* Exercise the building blocks directly too: parsed requests rarely reach deep states. */
    struct http_slice raw = { buf, size };
    if (size > 0 && buf[0] == '/')
        check_path(&raw);
    check_range(&raw);
    check_chunked(buf, size);
    check_date(buf, size);
    return 0;
}

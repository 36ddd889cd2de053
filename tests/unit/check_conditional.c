/* check_conditional.c — unit tests for RFC 9110 §13 precondition evaluation (src/conditional.c). */
#include <check.h>

#include "check_run.h"
#include <stdlib.h>
#include <string.h>

#include "conditional.h"

#define ETAG "\"5f2a-3039\""
#define MTIME ((time_t)784111777)                  /* Sun, 06 Nov 1994 08:49:37 GMT */
#define DATE_EQ "Sun, 06 Nov 1994 08:49:37 GMT"
#define DATE_BEFORE "Sun, 06 Nov 1994 08:49:36 GMT"
#define DATE_AFTER "Sun, 06 Nov 1994 08:49:38 GMT"
#define NOW ((time_t)784111790)                    /* Sun, 06 Nov 1994 08:49:50 GMT */
#define DATE_FUTURE "Sun, 06 Nov 1994 08:49:51 GMT"

static const struct cond_resource RES = { .etag = ETAG, .etag_len = sizeof ETAG - 1, .mtime = MTIME, .now = NOW };

static struct http_slice S(const char *s) { return (struct http_slice){ s, s ? strlen(s) : 0 }; }

static struct http_request req_get(void)
{
    struct http_request r;
    memset(&r, 0, sizeof r);
    r.method = HTTP_GET;
    return r;
}

START_TEST(no_conditions)
{
    struct http_request r = req_get();
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    ck_assert_int_eq(cond_if_range_ok(&r, &RES), 1);
}
END_TEST

START_TEST(if_match)
{
    struct http_request r = req_get();
    r.if_match = S(ETAG);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.if_match = S("*");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.if_match = S(" * ");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.if_match = S("\"other\", " ETAG);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.if_match = S(" , \"other\" ,, " ETAG " , ");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.if_match = S("\"other\"");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    /* strong comparison: a weak tag never matches */
    r.if_match = S("W/" ETAG);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    /* malformed list → no match → 412, even if a good tag is in it */
    r.if_match = S(ETAG ", bogus");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    r.if_match = S(ETAG " \"x\"");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    r.if_match = S("5f2a-3039");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    r.if_match = S("\"5f2a-3039");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    r.if_match = S("*, " ETAG);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    r.if_match = S("");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    r.if_match = S("w/" ETAG);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    r.if_match = S("\"a b\"");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    /* If-Match takes precedence over If-Unmodified-Since */
    r.if_match = S(ETAG);
    r.if_unmodified_since = S(DATE_BEFORE);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    /* resource without an ETag: only "*" matches */
    struct cond_resource no_tag = { .etag = NULL, .mtime = MTIME, .now = NOW };
    ck_assert_int_eq(cond_evaluate(&r, &no_tag), 412);
    r.if_match = S("*");
    ck_assert_int_eq(cond_evaluate(&r, &no_tag), 0);
}
END_TEST

START_TEST(if_unmodified_since)
{
    struct http_request r = req_get();
    r.if_unmodified_since = S(DATE_EQ);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.if_unmodified_since = S(DATE_AFTER);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.if_unmodified_since = S(DATE_BEFORE);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    r.if_unmodified_since = S("Sunday, 06-Nov-94 08:49:36 GMT");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    /* invalid date: ignored */
    r.if_unmodified_since = S("yesterday");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
}
END_TEST

START_TEST(if_none_match)
{
    struct http_request r = req_get();
    r.if_none_match = S(ETAG);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 304);
    /* weak comparison */
    r.if_none_match = S("W/" ETAG);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 304);
    r.if_none_match = S("\"a\", W/" ETAG);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 304);
    r.if_none_match = S("*");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 304);
    r.if_none_match = S("\"other\"");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.if_none_match = S("\"5F2A-3039\"");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    /* malformed → no match → full response */
    r.if_none_match = S(ETAG ", junk");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.method = HTTP_HEAD;
    r.if_none_match = S(ETAG);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 304);
    /* other methods: 412 */
    r.method = HTTP_POST;
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    /* a weak resource ETag matches weakly */
    struct cond_resource weak = { .etag = "W/" ETAG, .etag_len = sizeof ETAG + 1, .mtime = MTIME, .now = NOW };
    r.method = HTTP_GET;
    ck_assert_int_eq(cond_evaluate(&r, &weak), 304);
}
END_TEST

START_TEST(if_modified_since)
{
    struct http_request r = req_get();
    r.if_modified_since = S(DATE_EQ);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 304);
    r.if_modified_since = S(DATE_AFTER);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 304);
    r.if_modified_since = S("Sun, 06 Nov 1994 08:49:50 GMT");        /* now */
    ck_assert_int_eq(cond_evaluate(&r, &RES), 304);
    /* a date after now was never sent by us: ignored (once 304 until that date) */
    r.if_modified_since = S(DATE_FUTURE);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.if_modified_since = S(DATE_BEFORE);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.if_modified_since = S("Sun Nov  6 08:49:37 1994");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 304);
    r.if_modified_since = S("not a date");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.if_modified_since = S(DATE_EQ " ; length=12");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    /* ignored for methods other than GET/HEAD */
    r.if_modified_since = S(DATE_EQ);
    r.method = HTTP_POST;
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.method = HTTP_HEAD;
    ck_assert_int_eq(cond_evaluate(&r, &RES), 304);
    /* ignored when If-None-Match is present, whatever its outcome */
    r.method = HTTP_GET;
    r.if_none_match = S("\"other\"");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r.if_none_match = S("bogus");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
}
END_TEST

START_TEST(precedence)
{
    /* failed If-Match (412) wins over a matching If-None-Match (304) */
    struct http_request r = req_get();
    r.if_match = S("\"other\"");
    r.if_none_match = S(ETAG);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    /* failed If-Unmodified-Since wins over If-Modified-Since */
    r = req_get();
    r.if_unmodified_since = S(DATE_BEFORE);
    r.if_modified_since = S(DATE_EQ);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    /* passing If-Match then If-None-Match decides */
    r = req_get();
    r.if_match = S(ETAG);
    r.if_none_match = S(ETAG);
    ck_assert_int_eq(cond_evaluate(&r, &RES), 304);
}
END_TEST

START_TEST(if_range)
{
    struct http_request r = req_get();
    r.range = S("bytes=0-1");
    r.if_range = S(ETAG);
    ck_assert_int_eq(cond_if_range_ok(&r, &RES), 1);
    r.if_range = S("\"other\"");
    ck_assert_int_eq(cond_if_range_ok(&r, &RES), 0);
    r.if_range = S("W/" ETAG);
    ck_assert_int_eq(cond_if_range_ok(&r, &RES), 0);
    struct cond_resource weak = { .etag = "W/" ETAG, .etag_len = sizeof ETAG + 1, .mtime = MTIME, .now = NOW };
    ck_assert_int_eq(cond_if_range_ok(&r, &weak), 0);
    r.if_range = S(ETAG);
    ck_assert_int_eq(cond_if_range_ok(&r, &weak), 0);
    /* a date never matches, not even Last-Modified itself a day old: cp -p, tar and
     * unzip give a new file an old one's modification time, so it is no strong
     * validator here (RFC 9110 §8.8.2.2; once a resumed download got the new file's
     * bytes after its old copy's) */
    r.if_range = S(DATE_EQ);
    ck_assert_int_eq(cond_if_range_ok(&r, &RES), 0);
    r.if_range = S(DATE_AFTER);
    ck_assert_int_eq(cond_if_range_ok(&r, &RES), 0);
    r.if_range = S(DATE_BEFORE);
    ck_assert_int_eq(cond_if_range_ok(&r, &RES), 0);
    static const struct cond_resource day_old = { .etag = ETAG, .etag_len = sizeof ETAG - 1,
                                                  .mtime = 1795607080, .now = 1795607080 + 86400 };
    r.if_range = S("Wed, 25 Nov 2026 11:44:40 GMT");
    ck_assert_int_eq(cond_if_range_ok(&r, &day_old), 0);
    r.if_range = S("Wednesday, 25-Nov-26 11:44:40 GMT");
    ck_assert_int_eq(cond_if_range_ok(&r, &day_old), 0);
    r.if_range = S("Wed Nov 25 11:44:40 2026");
    ck_assert_int_eq(cond_if_range_ok(&r, &day_old), 0);
    r.if_range = S("garbage");
    ck_assert_int_eq(cond_if_range_ok(&r, &RES), 0);
    r.if_range = S("");
    ck_assert_int_eq(cond_if_range_ok(&r, &RES), 0);
    r.if_range = S(ETAG ", \"x\"");
    ck_assert_int_eq(cond_if_range_ok(&r, &RES), 0);
    r.if_range = S("*");
    ck_assert_int_eq(cond_if_range_ok(&r, &RES), 0);
    struct cond_resource no_tag = { .etag = NULL, .mtime = MTIME, .now = NOW };
    r.if_range = S(ETAG);
    ck_assert_int_eq(cond_if_range_ok(&r, &no_tag), 0);
}
END_TEST

/* RFC 9110 §5.6.7: an RFC 850 date's two-digit year is the one in the century that puts it at
 * most 50 years after now (once a fixed pivot read 70-99 as 19xx whatever the date). */
START_TEST(rfc850_year_from_the_clock)
{
    const time_t now = 1795607080;                 /* Wed, 25 Nov 2026 11:44:40 GMT */
    const time_t y2070 = 3155760000;               /* Thu, 01 Jan 2070 00:00:00 GMT */
    struct cond_resource res = { .etag = ETAG, .etag_len = sizeof ETAG - 1, .mtime = now - 60, .now = now };
    struct http_request r = req_get();
    r.if_unmodified_since = S("Wednesday, 01-Jan-76 00:00:00 GMT");   /* 2076: 50 years ahead */
    ck_assert_int_eq(cond_evaluate(&r, &res), 0);
    r.if_unmodified_since = S("Wednesday, 01-Jan-77 00:00:00 GMT");   /* 2077 is more: 1977 */
    ck_assert_int_eq(cond_evaluate(&r, &res), 412);
    r.if_unmodified_since = S("Wednesday, 01-Jan-26 00:00:00 GMT");   /* 2026, before mtime */
    ck_assert_int_eq(cond_evaluate(&r, &res), 412);

    r = req_get();
    r.if_modified_since = S("Thursday, 01-Jan-70 00:00:00 GMT");      /* 2070, not 1970 */
    /* (a Last-Modified is never after Date: the clock here is past 2070) */
    struct cond_resource at_2070 = { .etag = ETAG, .etag_len = sizeof ETAG - 1, .mtime = y2070, .now = y2070 + 1 };
    ck_assert_int_eq(cond_evaluate(&r, &at_2070), 304);
    struct cond_resource in_2026 = { .etag = ETAG, .etag_len = sizeof ETAG - 1, .mtime = now - 60, .now = now };
    ck_assert_int_eq(cond_evaluate(&r, &in_2026), 0);       /* 2070, in the future: ignored */
    struct cond_resource in_1970 = { .etag = ETAG, .etag_len = sizeof ETAG - 1, .mtime = 0, .now = 3600 };
    ck_assert_int_eq(cond_evaluate(&r, &in_1970), 304);     /* 1970 */
}
END_TEST

static struct http_request parsed(const char *head)
{
    static const struct http_limits lim = { 1024, 4096, 32 };
    struct http_request r;
    size_t hl;
    int st;
    ck_assert_int_eq(http_parse_request(head, strlen(head), &lim, &r, &hl, &st), HTTP_PARSE_OK);
    return r;
}

/* An If-Match or If-None-Match on several lines is one list (RFC 9110 §5.3); repeated
 * dates are ignored, a repeated If-Range never matches (once only the first line counted). */
/* A representation without validators (a directory listing): If-Match and
 * If-None-Match ask only whether it exists; the date conditions are ignored
 * (RFC 9110 §13.1.3-4), whatever the dates. */
START_TEST(no_validators)
{
    static const struct cond_resource listing = { .etag = NULL, .now = NOW, .no_mtime = 1 };
    struct http_request r = req_get();
    r.if_match = S("\"x\"");
    ck_assert_int_eq(cond_evaluate(&r, &listing), 412);
    r.if_match = S("*");
    ck_assert_int_eq(cond_evaluate(&r, &listing), 0);
    r = req_get();
    r.if_none_match = S("*");
    ck_assert_int_eq(cond_evaluate(&r, &listing), 304);
    r.method = HTTP_HEAD;
    ck_assert_int_eq(cond_evaluate(&r, &listing), 304);
    r.if_none_match = S("\"x\", W/\"y\"");
    ck_assert_int_eq(cond_evaluate(&r, &listing), 0);
    r = req_get();
    r.if_modified_since = S(DATE_FUTURE);
    ck_assert_int_eq(cond_evaluate(&r, &listing), 0);
    r.if_modified_since = S(DATE_EQ);
    ck_assert_int_eq(cond_evaluate(&r, &listing), 0);
    r = req_get();
    r.if_unmodified_since = S("Thu, 01 Jan 1970 00:00:00 GMT");
    ck_assert_int_eq(cond_evaluate(&r, &listing), 0);
}
END_TEST

/* A file changed so lately that it goes out without validators (static_file.c): no date
 * can show the client's copy is whole, so If-Modified-Since is ignored (once 304 for a
 * copy dated by its reply's Date); If-Unmodified-Since still fails on its mtime. */
START_TEST(unsettled_file)
{
    static const struct cond_resource fresh = { .etag = NULL, .mtime = MTIME, .now = NOW, .unsettled = 1 };
    struct http_request r = req_get();
    r.if_modified_since = S("Sun, 06 Nov 1994 08:49:50 GMT");        /* now */
    ck_assert_int_eq(cond_evaluate(&r, &fresh), 0);
    r.if_modified_since = S(DATE_EQ);
    ck_assert_int_eq(cond_evaluate(&r, &fresh), 0);
    r = req_get();
    r.if_unmodified_since = S(DATE_BEFORE);
    ck_assert_int_eq(cond_evaluate(&r, &fresh), 412);
    r.if_unmodified_since = S(DATE_EQ);
    ck_assert_int_eq(cond_evaluate(&r, &fresh), 0);
    r = req_get();
    r.if_none_match = S(ETAG);
    ck_assert_int_eq(cond_evaluate(&r, &fresh), 0);
    r.if_none_match = S("*");
    ck_assert_int_eq(cond_evaluate(&r, &fresh), 304);
    r = req_get();
    r.range = S("bytes=0-1");
    r.if_range = S(ETAG);
    ck_assert_int_eq(cond_if_range_ok(&r, &fresh), 0);
}
END_TEST

START_TEST(repeated_lines)
{
    struct http_request r = parsed("GET / HTTP/1.1\r\nHost: h\r\nIf-Match: \"x\"\r\nIf-Match: " ETAG "\r\n\r\n");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r = parsed("GET / HTTP/1.1\r\nHost: h\r\nIf-Match: \"x\"\r\nIf-Match: \"y\", \"z\"\r\n\r\n");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    r = parsed("GET / HTTP/1.1\r\nHost: h\r\nIf-Match: " ETAG "\r\nIf-Match: junk\r\n\r\n");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);
    r = parsed("GET / HTTP/1.1\r\nHost: h\r\nIf-Match: *\r\nIf-Match: " ETAG "\r\n\r\n");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 412);               /* "*, tag" is no list */
    r = parsed("GET / HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"x\"\r\nIf-None-Match: W/" ETAG "\r\n\r\n");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 304);
    r = parsed("GET / HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"x\"\r\nIf-None-Match: \"y\"\r\n\r\n");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r = parsed("GET / HTTP/1.1\r\nHost: h\r\nIf-Modified-Since: " DATE_EQ "\r\n"
               "If-Modified-Since: " DATE_BEFORE "\r\n\r\n");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r = parsed("GET / HTTP/1.1\r\nHost: h\r\nIf-Unmodified-Since: " DATE_BEFORE "\r\n"
               "If-Unmodified-Since: " DATE_EQ "\r\n\r\n");
    ck_assert_int_eq(cond_evaluate(&r, &RES), 0);
    r = parsed("GET / HTTP/1.1\r\nHost: h\r\nIf-Range: " ETAG "\r\nIf-Range: " ETAG "\r\n\r\n");
    ck_assert_int_eq(cond_if_range_ok(&r, &RES), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("conditional");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, no_conditions);
    tcase_add_test(tc, if_match);
    tcase_add_test(tc, if_unmodified_since);
    tcase_add_test(tc, if_none_match);
    tcase_add_test(tc, if_modified_since);
    tcase_add_test(tc, precedence);
    tcase_add_test(tc, if_range);
    tcase_add_test(tc, rfc850_year_from_the_clock);
    tcase_add_test(tc, no_validators);
    tcase_add_test(tc, unsettled_file);
    tcase_add_test(tc, repeated_lines);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}

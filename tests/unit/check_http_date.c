/* check_http_date.c — unit tests for HTTP-date formatting and parsing (src/http_date.c). */
#include <check.h>

#include "check_run.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_date.h"

#define RFC_EXAMPLE ((time_t)784111777) /* Sun, 06 Nov 1994 08:49:37 GMT */

static void expect_format(time_t t, const char *want)
{
    char out[30];
    memset(out, 'X', sizeof out);
    size_t n = http_date_format(t, out);
    ck_assert_str_eq(out, want);
    ck_assert_uint_eq(n, strlen(want));
}

static time_t parse_ok(const char *s)
{
    time_t t = 12345;
    ck_assert_msg(http_date_parse(s, strlen(s), &t) == 0, "should parse: \"%s\"", s);
    return t;
}

static void parse_bad(const char *s)
{
    time_t t = 12345;
    ck_assert_msg(http_date_parse(s, strlen(s), &t) == -1, "should not parse: \"%s\"", s);
    ck_assert_int_eq(t, 12345);
}

START_TEST(format_known)
{
    expect_format(RFC_EXAMPLE, "Sun, 06 Nov 1994 08:49:37 GMT");
    expect_format(0, "Thu, 01 Jan 1970 00:00:00 GMT");
    expect_format(-1, "Wed, 31 Dec 1969 23:59:59 GMT");
    expect_format(951782400, "Tue, 29 Feb 2000 00:00:00 GMT");
    expect_format(4107542400, "Mon, 01 Mar 2100 00:00:00 GMT");
    expect_format(2147483647, "Tue, 19 Jan 2038 03:14:07 GMT");
    expect_format(2147483648, "Tue, 19 Jan 2038 03:14:08 GMT");
    expect_format((time_t)253402300799, "Fri, 31 Dec 9999 23:59:59 GMT");
    expect_format((time_t)-62135596800, "Mon, 01 Jan 0001 00:00:00 GMT");
    expect_format((time_t)-2208988800, "Mon, 01 Jan 1900 00:00:00 GMT");
}
END_TEST

START_TEST(format_out_of_range)
{
    expect_format((time_t)253402300800, "");
    expect_format((time_t)-62135596801, "");
    expect_format((time_t)INT64_MAX, "");
    expect_format((time_t)INT64_MIN, "");
}
END_TEST

/* Last-Modified is always an HTTP-date: a file dated after the response gets the response's
 * date, one dated before year 1 (tmpfs keeps any mtime) the earliest date there is; the
 * formatted field was empty before. */
START_TEST(last_modified_is_always_a_date)
{
    const time_t now = (time_t)1764979200;
    char out[30];
    ck_assert_int_eq(http_last_modified(1000, now), 1000);
    ck_assert_int_eq(http_last_modified(now + 5, now), now);
    ck_assert_uint_eq(http_date_format(http_last_modified((time_t)-62135596801, now), out), 29);
    ck_assert_str_eq(out, "Mon, 01 Jan 0001 00:00:00 GMT");
    ck_assert_uint_eq(http_date_format(http_last_modified((time_t)INT64_MIN, now), out), 29);
    ck_assert_str_eq(out, "Mon, 01 Jan 0001 00:00:00 GMT");
    ck_assert_uint_eq(http_date_format(http_last_modified((time_t)-62135596800, now), out), 29);
    ck_assert_str_eq(out, "Mon, 01 Jan 0001 00:00:00 GMT");
}
END_TEST

/* Cross-check against the C library over a wide spread of instants. */
START_TEST(format_matches_libc)
{
    for (int64_t t = -5000000000LL; t < 12000000000LL; t += 7777777 + (t & 0xff)) {
        struct tm tm;
        char want[64], got[30];
        time_t tt = (time_t)t;
        ck_assert_ptr_nonnull(gmtime_r(&tt, &tm));
        strftime(want, sizeof want, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        ck_assert_uint_eq(http_date_format(tt, got), 29);
        ck_assert_str_eq(got, want);
    }
}
END_TEST

START_TEST(parse_three_formats)
{
    ck_assert_int_eq(parse_ok("Sun, 06 Nov 1994 08:49:37 GMT"), RFC_EXAMPLE);
    ck_assert_int_eq(parse_ok("Sunday, 06-Nov-94 08:49:37 GMT"), RFC_EXAMPLE);
    ck_assert_int_eq(parse_ok("Sun Nov  6 08:49:37 1994"), RFC_EXAMPLE);
    ck_assert_int_eq(parse_ok("Sun Nov 06 08:49:37 1994"), RFC_EXAMPLE);
    ck_assert_int_eq(parse_ok("Wednesday, 09-Nov-94 08:49:37 GMT"), RFC_EXAMPLE + 3 * 86400);
    ck_assert_int_eq(parse_ok("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
    ck_assert_int_eq(parse_ok("Wed, 31 Dec 1969 23:59:59 GMT"), -1);
    ck_assert_int_eq(parse_ok("Tue, 29 Feb 2000 00:00:00 GMT"), 951782400);
    ck_assert_int_eq(parse_ok("Fri, 31 Dec 9999 23:59:59 GMT"), (time_t)253402300799);
    /* leap second maps onto the next second */
    ck_assert_int_eq(parse_ok("Sat, 31 Dec 2016 23:59:60 GMT"), 1483228800);
    /* the weekday is validated as a name, not against the date (as nginx) */
    ck_assert_int_eq(parse_ok("Mon, 06 Nov 1994 08:49:37 GMT"), RFC_EXAMPLE);
}
END_TEST

START_TEST(parse_rejects)
{
    parse_bad("");
    parse_bad("garbage");
    parse_bad("Sun, 06 Nov 1994 08:49:37 UTC");
    parse_bad("Sun, 06 Nov 1994 08:49:37 gmt");
    parse_bad("sun, 06 Nov 1994 08:49:37 GMT");
    parse_bad("Sun, 06 nov 1994 08:49:37 GMT");
    parse_bad("Sun, 06 NOV 1994 08:49:37 GMT");
    parse_bad("Snd, 06 Nov 1994 08:49:37 GMT");
    parse_bad("Sun, 6 Nov 1994 08:49:37 GMT");
    parse_bad("Sun,  6 Nov 1994 08:49:37 GMT");
    parse_bad("Sun, 06 Nov 1994 08:49:37 GMT ");
    parse_bad(" Sun, 06 Nov 1994 08:49:37 GMT");
    parse_bad("Sun, 06 Nov 94 08:49:37 GMT");
    parse_bad("Sun, 06 Nov 1994 8:49:37 GMT");
    parse_bad("Sun, 06 Nov 1994 08-49-37 GMT");
    parse_bad("Sun, 06 Nov 1994 08:49:37 +0000");
    parse_bad("Sun, 06 Foo 1994 08:49:37 GMT");
    parse_bad("Sun, 00 Nov 1994 08:49:37 GMT");
    parse_bad("Sun, 31 Nov 1994 08:49:37 GMT");
    parse_bad("Sun, 30 Feb 2000 08:49:37 GMT");
    parse_bad("Sun, 29 Feb 1900 08:49:37 GMT");
    parse_bad("Sun, 29 Feb 2001 08:49:37 GMT");
    parse_bad("Sun, 06 Nov 1994 24:00:00 GMT");
    parse_bad("Sun, 06 Nov 1994 08:60:37 GMT");
    parse_bad("Sun, 06 Nov 1994 08:49:61 GMT");
    parse_bad("Sun, 06 Nov 0000 08:49:37 GMT");
    parse_bad("Sun, 06 Nov 1994 08:49:3a GMT");
    parse_bad("Sun, -6 Nov 1994 08:49:37 GMT");
    parse_bad("Sun, 06 Nov +994 08:49:37 GMT");
    /* RFC 850 */
    parse_bad("Sun, 06-Nov-94 08:49:37 GMT");
    parse_bad("sunday, 06-Nov-94 08:49:37 GMT");
    parse_bad("Sunday, 06-Nov-1994 08:49:37 GMT");
    parse_bad("Sunday, 06 Nov 94 08:49:37 GMT");
    parse_bad("Sunday, 06-Nov-94 08:49:37 UTC");
    parse_bad("Sundae, 06-Nov-94 08:49:37 GMT");
    /* asctime */
    parse_bad("Sun Nov 6 08:49:37 1994");
    parse_bad("Sun Nov  6 08:49:37 94");
    parse_bad("Sun Nov  6 08:49:37 1994 ");
    parse_bad("Sun Nov  6 08:49:37 GMT 1994");
    parse_bad("Sun Nov 6  08:49:37 1994");
    parse_bad("Sun Nov  0 08:49:37 1994");
    /* NUL inside */
    time_t t;
    ck_assert_int_eq(http_date_parse("Sun, 06 Nov 1994 08:49:37 G\0T", 29, &t), -1);
    /* length is respected */
    ck_assert_int_eq(http_date_parse("Sun, 06 Nov 1994 08:49:37 GMTxx", 29, &t), 0);
    ck_assert_int_eq(t, RFC_EXAMPLE);
}
END_TEST

START_TEST(two_digit_years)
{
    ck_assert_int_eq(parse_ok("Thursday, 01-Jan-70 00:00:00 GMT"), 0);
    ck_assert_int_eq(parse_ok("Friday, 31-Dec-99 23:59:59 GMT"), 946684799);
    ck_assert_int_eq(parse_ok("Saturday, 01-Jan-00 00:00:00 GMT"), 946684800);
    ck_assert_int_eq(parse_ok("Tuesday, 01-Jan-69 00:00:00 GMT"), (time_t)3124224000);

    /* RFC 9110 §5.6.7 50-year rule relative to a clock: now = 2025-06-01 */
    time_t now = 1748736000, t;
    const char *s = "Tuesday, 01-Jan-75 00:00:00 GMT";
    ck_assert_int_eq(http_date_parse_at(s, strlen(s), now, &t), 0);
    ck_assert_int_eq(t, (time_t)3313526400); /* 2075: exactly 50 years ahead is allowed */
    s = "Thursday, 01-Jan-76 00:00:00 GMT";
    ck_assert_int_eq(http_date_parse_at(s, strlen(s), now, &t), 0);
    ck_assert_int_eq(t, 189302400); /* 1976 */
    /* the timestamp decides, not the year: before, any day of 2075 was taken
     * as 2075, even one more than 50 years after now */
    s = "Sunday, 01-Jun-75 00:00:00 GMT";
    ck_assert_int_eq(http_date_parse_at(s, strlen(s), now, &t), 0);
    ck_assert_int_eq(t, (time_t)3326572800); /* 2075-06-01: exactly 50 years */
    s = "Sunday, 01-Jun-75 00:00:01 GMT";
    ck_assert_int_eq(http_date_parse_at(s, strlen(s), now, &t), 0);
    ck_assert_int_eq(t, 170812801); /* 1975-06-01 00:00:01 */
    s = "Monday, 02-Jun-75 00:00:00 GMT";
    ck_assert_int_eq(http_date_parse_at(s, strlen(s), now, &t), 0);
    ck_assert_int_eq(t, 170899200); /* 1975-06-02 */
    s = "Sunday, 06-Nov-94 08:49:37 GMT";
    ck_assert_int_eq(http_date_parse_at(s, strlen(s), now, &t), 0);
    ck_assert_int_eq(t, RFC_EXAMPLE);
    s = "Sun, 06 Nov 1994 08:49:37 GMT";
    ck_assert_int_eq(http_date_parse_at(s, strlen(s), now, &t), 0);
    ck_assert_int_eq(t, RFC_EXAMPLE);

    /* late in a century the year may be the next one's: in 2090 "05" is
     * 2105 (15 years ahead), not 2005 (85 years back), which it was while
     * only this century's year or the one before were tried */
    now = 3799958400;               /* 2090-06-01 */
    s = "Thursday, 01-Jan-05 00:00:00 GMT";
    ck_assert_int_eq(http_date_parse_at(s, strlen(s), now, &t), 0);
    ck_assert_int_eq(t, (time_t)4260211200);   /* 2105 */
    s = "Saturday, 01-Jan-95 00:00:00 GMT";
    ck_assert_int_eq(http_date_parse_at(s, strlen(s), now, &t), 0);
    ck_assert_int_eq(t, (time_t)3944678400);   /* 2095 */
    s = "Tuesday, 01-Jan-41 00:00:00 GMT";     /* 2141: more than 50 years ahead */
    ck_assert_int_eq(http_date_parse_at(s, strlen(s), now, &t), 0);
    ck_assert_int_eq(t, (time_t)2240611200);   /* 2041 */
    /* in 2060 "29-Feb-00" is 2100's by the rule, a day that year lacks */
    now = 2853273600;               /* 2060-06-01 */
    s = "Tuesday, 29-Feb-00 12:00:00 GMT";
    ck_assert_int_eq(http_date_parse_at(s, strlen(s), now, &t), 0);
    ck_assert_int_eq(t, (time_t)951825600);    /* 2000-02-29 12:00 */
}
END_TEST

START_TEST(round_trip)
{
    for (int64_t t = -62135596800LL; t <= 253402300799LL; t += 86399 * 997 + 13) {
        char buf[30];
        time_t back;
        ck_assert_uint_eq(http_date_format((time_t)t, buf), 29);
        ck_assert_int_eq(http_date_parse(buf, 29, &back), 0);
        ck_assert_int_eq(back, (time_t)t);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("http_date");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, format_known);
    tcase_add_test(tc, format_out_of_range);
    tcase_add_test(tc, last_modified_is_always_a_date);
    tcase_add_test(tc, format_matches_libc);
    tcase_add_test(tc, parse_three_formats);
    tcase_add_test(tc, parse_rejects);
    tcase_add_test(tc, two_digit_years);
    tcase_add_test(tc, round_trip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}

/* check_range.c — unit tests for Range header parsing (src/range.c). */
#include <check.h>

#include "check_run.h"
#include <stdlib.h>
#include <string.h>

#include "range.h"

#define MAXR 8

static enum range_result parse(const char *h, uint64_t size, struct byte_range *out, unsigned *count)
{
    return range_parse(h, strlen(h), size, MAXR, out, MAXR, count);
}

static void expect_ranges(const char *h, uint64_t size, unsigned n, const uint64_t *pairs, int line)
{
    struct byte_range out[MAXR];
    unsigned count = 99;
    enum range_result r = parse(h, size, out, &count);
    ck_assert_msg(r == RANGE_OK, "line %d: result %d for \"%s\"", line, r, h);
    ck_assert_msg(count == n, "line %d: count %u, want %u", line, count, n);
    for (unsigned i = 0; i < n; i++)
        ck_assert_msg(out[i].first == pairs[2 * i] && out[i].last == pairs[2 * i + 1],
                      "line %d: range %u = %llu-%llu, want %llu-%llu", line, i, (unsigned long long)out[i].first,
                      (unsigned long long)out[i].last, (unsigned long long)pairs[2 * i],
                      (unsigned long long)pairs[2 * i + 1]);
}

#define EXPECT1(h, size, a, b) expect_ranges((h), (size), 1, (const uint64_t[]){ (a), (b) }, __LINE__)

static void expect_result(const char *h, uint64_t size, enum range_result want, int line)
{
    struct byte_range out[MAXR];
    unsigned count = 99;
    enum range_result r = parse(h, size, out, &count);
    ck_assert_msg(r == want, "line %d: result %d, want %d for \"%s\"", line, r, want, h);
    ck_assert_uint_eq(count, 0);
}

#define EXPECT_NONE(h, size) expect_result((h), (size), RANGE_NONE, __LINE__)
#define EXPECT_416(h, size) expect_result((h), (size), RANGE_UNSATISFIABLE, __LINE__)

START_TEST(single_ranges)
{
    EXPECT1("bytes=0-0", 100, 0, 0);
    EXPECT1("bytes=0-99", 100, 0, 99);
    EXPECT1("bytes=10-19", 100, 10, 19);
    EXPECT1("bytes=10-", 100, 10, 99);
    EXPECT1("bytes=99-", 100, 99, 99);
    EXPECT1("bytes=-1", 100, 99, 99);
    EXPECT1("bytes=-10", 100, 90, 99);
    EXPECT1("bytes=-100", 100, 0, 99);
    EXPECT1("bytes=-1000", 100, 0, 99);
    /* last clipped to size-1 */
    EXPECT1("bytes=50-1000", 100, 50, 99);
    EXPECT1("bytes=0-18446744073709551615", 100, 0, 99);
    EXPECT1("bytes=0-99999999999999999999999", 100, 0, 99);
    EXPECT1("bytes=-99999999999999999999999", 100, 0, 99);
    /* unit is case-insensitive; surrounding OWS tolerated */
    EXPECT1("Bytes=1-2", 100, 1, 2);
    EXPECT1("BYTES=1-2", 100, 1, 2);
    EXPECT1("  bytes=1-2 \t", 100, 1, 2);
    EXPECT1("bytes=007-008", 100, 7, 8);
    EXPECT1("bytes=0-", 1, 0, 0);
    EXPECT1("bytes=-1", 1, 0, 0);
    EXPECT1("bytes=0-", UINT64_MAX, 0, UINT64_MAX - 1);
}
END_TEST

START_TEST(multiple_ranges)
{
    expect_ranges("bytes=0-9,20-29", 100, 2, (const uint64_t[]){ 0, 9, 20, 29 }, __LINE__);
    expect_ranges("bytes=0-9 , 20-29,\t-5", 100, 3, (const uint64_t[]){ 0, 9, 20, 29, 95, 99 }, __LINE__);
    /* request order kept, empty elements tolerated */
    expect_ranges("bytes=50-59,,0-9,", 100, 2, (const uint64_t[]){ 50, 59, 0, 9 }, __LINE__);
    /* unsatisfiable ones are dropped */
    expect_ranges("bytes=200-300,0-9,-0", 100, 1, (const uint64_t[]){ 0, 9 }, __LINE__);
    /* small overlap is allowed while the sum stays <= size */
    expect_ranges("bytes=0-9,5-14", 100, 2, (const uint64_t[]){ 0, 9, 5, 14 }, __LINE__);
}
END_TEST

START_TEST(unsatisfiable)
{
    EXPECT_416("bytes=100-", 100);
    EXPECT_416("bytes=100-200", 100);
    EXPECT_416("bytes=1000-2000,500-", 100);
    EXPECT_416("bytes=-0", 100);
    EXPECT_416("bytes=99999999999999999999999-", 100);
    /* size 0: int-ranges are unsatisfiable, a non-zero suffix selects nothing → serve 200 */
    EXPECT_416("bytes=0-", 0);
    EXPECT_416("bytes=0-0", 0);
    EXPECT_416("bytes=-0", 0);
    EXPECT_NONE("bytes=-1", 0);
    EXPECT_NONE("bytes=0-0,-5", 0);
}
END_TEST

START_TEST(syntax_errors_ignored)
{
    EXPECT_NONE("", 100);
    EXPECT_NONE("bytes", 100);
    EXPECT_NONE("bytes=", 100);
    EXPECT_NONE("bytes=,", 100);
    EXPECT_NONE("bytes= , ", 100);
    EXPECT_NONE("bytes=-", 100);
    EXPECT_NONE("bytes=a-b", 100);
    EXPECT_NONE("bytes=1", 100);
    EXPECT_NONE("bytes=1-2-3", 100);
    EXPECT_NONE("bytes=--1", 100);
    EXPECT_NONE("bytes=+1-2", 100);
    EXPECT_NONE("bytes=1 -2", 100);
    EXPECT_NONE("bytes=1- 2", 100);
    EXPECT_NONE("bytes=0x1-2", 100);
    EXPECT_NONE("bytes=5-4", 100);
    EXPECT_NONE("bytes=0-1,5-4", 100);
    EXPECT_NONE("bytes=0-1;2-3", 100);
    EXPECT_NONE("bytes =0-1", 100);
    /* OWS around list elements is tolerated, also before the first one (as nginx) */
    EXPECT1("bytes= 0-1", 100, 0, 1);
}
END_TEST

START_TEST(other_units_ignored)
{
    EXPECT_NONE("items=0-1", 100);
    EXPECT_NONE("byte=0-1", 100);
    EXPECT_NONE("bytesx=0-1", 100);
    EXPECT_NONE("none", 100);
}
END_TEST

START_TEST(dos_caps)
{
    /* exactly max_ranges is fine, one more is ignored */
    expect_ranges("bytes=0-0,2-2,4-4,6-6,8-8,10-10,12-12,14-14", 100, 8,
                  (const uint64_t[]){ 0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14 }, __LINE__);
    EXPECT_NONE("bytes=0-0,2-2,4-4,6-6,8-8,10-10,12-12,14-14,16-16", 100);
    /* unsatisfiable specs count toward the cap too */
    EXPECT_NONE("bytes=0-0,200-,200-,200-,200-,200-,200-,200-,200-", 100);
    /* overlap amplification: total > size */
    EXPECT_NONE("bytes=0-,0-", 100);
    EXPECT_NONE("bytes=0-99,-1", 100);
    EXPECT_NONE("bytes=0-60,40-99", 100);
    expect_ranges("bytes=0-49,50-99", 100, 2, (const uint64_t[]){ 0, 49, 50, 99 }, __LINE__);
    expect_ranges("bytes=0-49,-50", 100, 2, (const uint64_t[]){ 0, 49, 50, 99 }, __LINE__);
    /* huge size: sums near UINT64_MAX must not wrap */
    EXPECT_NONE("bytes=0-,1-", UINT64_MAX);
    /* out_cap smaller than max_ranges is honoured, never overrun */
    struct byte_range out[3];
    unsigned count = 99;
    memset(out, 0xAB, sizeof out);
    ck_assert_int_eq(range_parse("bytes=0-0,1-1,2-2", 17, 100, 10, out, 2, &count), RANGE_NONE);
    ck_assert_uint_eq(count, 0);
    ck_assert_uint_eq(out[2].first, 0xABABABABABABABABull);
    ck_assert_int_eq(range_parse("bytes=0-0,1-1,500-", 18, 100, 10, out, 2, &count), RANGE_OK);
    ck_assert_uint_eq(count, 2);
    ck_assert_int_eq(range_parse("bytes=0-0", 9, 100, 0, out, 2, &count), RANGE_NONE);
}
END_TEST

START_TEST(length_respected)
{
    struct byte_range out[MAXR];
    unsigned count;
    ck_assert_int_eq(range_parse("bytes=0-9,20-29", 9, 100, MAXR, out, MAXR, &count), RANGE_OK);
    ck_assert_uint_eq(count, 1);
    ck_assert_uint_eq(out[0].last, 9);
    ck_assert_int_eq(range_parse("bytes=0-9\0,1-2", 15, 100, MAXR, out, MAXR, &count), RANGE_NONE);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("range");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, single_ranges);
    tcase_add_test(tc, multiple_ranges);
    tcase_add_test(tc, unsatisfiable);
    tcase_add_test(tc, syntax_errors_ignored);
    tcase_add_test(tc, other_units_ignored);
    tcase_add_test(tc, dos_caps);
    tcase_add_test(tc, length_respected);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}

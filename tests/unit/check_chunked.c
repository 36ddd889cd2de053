/* check_chunked.c — unit tests for the chunked body decoder (src/chunked.c). */
#include <check.h>

#include "check_run.h"
#include <stdlib.h>
#include <string.h>

#include "chunked.h"

struct outcome { enum chunked_result res; size_t consumed; uint64_t data; };

/* Feeds s in pieces of `step` bytes, as a socket might deliver it. */
static struct outcome feed_split(const char *s, size_t n, size_t step)
{
    struct chunked_state st;
    chunked_init(&st);
    struct outcome o = { CHUNKED_MORE, 0, 0 };
    while (o.consumed < n) {
        size_t take = n - o.consumed < step ? n - o.consumed : step, used;
        o.res = chunked_feed(&st, s + o.consumed, take, &used, &o.data);
        ck_assert_uint_le(used, take);
        o.consumed += used;
        if (o.res != CHUNKED_MORE)
            break;
        ck_assert_uint_eq(used, take);
    }
    return o;
}

/* Whole, byte by byte and a few odd splits must all agree. */
static void expect_n(const char *s, size_t n, enum chunked_result want, size_t want_consumed, uint64_t want_data, int line)
{
    static const size_t steps[] = { (size_t)-1, 1, 2, 3, 7, 64 };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        struct outcome o = feed_split(s, n, steps[i]);
        ck_assert_msg(o.res == want, "line %d step %zu: result %d, want %d", line, steps[i], o.res, want);
        if (want != CHUNKED_ERROR) {
            ck_assert_msg(o.consumed == want_consumed, "line %d step %zu: consumed %zu, want %zu", line, steps[i],
                          o.consumed, want_consumed);
            ck_assert_msg(o.data == want_data, "line %d step %zu: data %llu, want %llu", line, steps[i],
                          (unsigned long long)o.data, (unsigned long long)want_data);
        }
    }
}

#define EXPECT_DONE(s, data) expect_n((s), strlen(s), CHUNKED_DONE, strlen(s), (data), __LINE__)
#define EXPECT_MORE(s, data) expect_n((s), strlen(s), CHUNKED_MORE, strlen(s), (data), __LINE__)
#define EXPECT_ERROR(s) expect_n((s), strlen(s), CHUNKED_ERROR, 0, 0, __LINE__)

START_TEST(simple)
{
    EXPECT_DONE("5\r\nhello\r\n0\r\n\r\n", 5);
    EXPECT_DONE("0\r\n\r\n", 0);
    EXPECT_DONE("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 11);
    EXPECT_DONE("a\r\n0123456789\r\nA\r\n0123456789\r\nF\r\n0123456789abcde\r\n0\r\n\r\n", 35);
    EXPECT_DONE("000\r\n\r\n", 0);
    EXPECT_DONE("0005\r\nhello\r\n0\r\n\r\n", 5);
    /* data may contain anything, including CRLF and NUL */
    expect_n("4\r\n\r\n\0\n\r\n0\r\n\r\n", 14, CHUNKED_DONE, 14, 4, __LINE__);
}
END_TEST

START_TEST(incomplete)
{
    EXPECT_MORE("5", 0);
    EXPECT_MORE("5\r", 0);
    EXPECT_MORE("5\r\nhel", 3);
    EXPECT_MORE("5\r\nhello", 5);
    EXPECT_MORE("5\r\nhello\r\n", 5);
    EXPECT_MORE("5\r\nhello\r\n0\r\n", 5);
    EXPECT_MORE("5\r\nhello\r\n0\r\n\r", 5);
    EXPECT_MORE("5\r\nhello\r\n0\r\nX: y\r\n", 5);
    EXPECT_MORE("5;a=\"b", 0);
}
END_TEST

START_TEST(next_request_follows)
{
    const char *s = "3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
    expect_n(s, strlen(s), CHUNKED_DONE, strlen("3\r\nabc\r\n0\r\n\r\n"), 3, __LINE__);
    s = "0\r\nX-T: 1\r\n\r\nGET";
    expect_n(s, strlen(s), CHUNKED_DONE, strlen(s) - 3, 0, __LINE__);
    s = "0\r\n\r\nGET";
    expect_n(s, strlen(s), CHUNKED_DONE, 5, 0, __LINE__);
}
END_TEST

/* Every line of a chunked body ends in CRLF: a bare LF ending a chunk-extension is how a proxy
 * that reads the extension on to CRLF and cowd would disagree on where the body ends. */
START_TEST(bare_lf_rejected)
{
    EXPECT_ERROR("5\nhello\n0\n\n");
    EXPECT_ERROR("5\nhello\r\n0\r\n\r\n");                 /* ending the chunk-size */
    EXPECT_ERROR("2;a\nxx\r\n0\r\n\r\n");                    /* ending a chunk-extension */
    EXPECT_ERROR("2;a=b\nxx\r\n0\r\n\r\n");
    EXPECT_ERROR("2;a=\"b\"\nxx\r\n0\r\n\r\n");
    EXPECT_ERROR("5\r\nhello\n0\r\n\r\n");                 /* after the data */
    EXPECT_ERROR("0\n\r\n");                                /* the last chunk */
    EXPECT_ERROR("0\r\nT: v\n\r\n");                        /* a trailer field */
    EXPECT_ERROR("0\r\n\n");                                /* the end of the trailers */
    /* LF within the data is data */
    EXPECT_DONE("2\r\n\n\n\r\n0\r\n\r\n", 2);
}
END_TEST

START_TEST(bare_cr_rejected)
{
    EXPECT_ERROR("5\rhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5;a\rhello");
    EXPECT_ERROR("5\r\nhello\rX0\r\n\r\n");
    EXPECT_ERROR("0\r\nX: y\rZ\r\n\r\n");
    EXPECT_ERROR("0\r\n\r\r\n");
    EXPECT_ERROR("0\r\nX: a\rb\r\n\r\n");
}
END_TEST

START_TEST(after_data_must_be_crlf)
{
    EXPECT_ERROR("5\r\nhelloX\r\n0\r\n\r\n");
    EXPECT_ERROR("5\r\nhello0\r\n\r\n");
    EXPECT_ERROR("5\r\nhello \r\n0\r\n\r\n");
    EXPECT_ERROR("3\r\nhello\r\n0\r\n\r\n");
}
END_TEST

START_TEST(size_syntax)
{
    EXPECT_ERROR("\r\n");
    EXPECT_ERROR("\n");
    EXPECT_ERROR("g\r\n");
    EXPECT_ERROR("0x5\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("-1\r\n");
    EXPECT_ERROR("+5\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR(" 5\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5 \r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5\t\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR(";a\r\n");
    EXPECT_ERROR("5,5\r\n");
}
END_TEST

START_TEST(size_overflow)
{
    /* 16 significant hex digits is the most that fits in 64 bits */
    EXPECT_MORE("ffffffffffffffff\r\n", 0);
    EXPECT_MORE("FFFFFFFFFFFFFFFF\r\nabc", 3);
    EXPECT_ERROR("10000000000000000\r\n");
    EXPECT_ERROR("ffffffffffffffffff\r\n");
    /* leading zeros are not significant, but bounded */
    EXPECT_DONE("00000000000000001\r\nx\r\n0\r\n\r\n", 1);
}
END_TEST

START_TEST(leading_zero_limit)
{
    /* 16 zeros then 16 digits: allowed; 17 zeros: refused */
    EXPECT_MORE("0000000000000000ffffffffffffffff\r\n", 0);
    EXPECT_DONE("0000000000000000\r\n\r\n", 0);
    EXPECT_ERROR("00000000000000000\r\n\r\n");
    EXPECT_ERROR("000000000000000001\r\nx\r\n0\r\n\r\n");
}
END_TEST

START_TEST(data_total_cannot_wrap)
{
    struct chunked_state st;
    chunked_init(&st);
    st.data_total = UINT64_MAX - 2;
    size_t used;
    uint64_t data;
    ck_assert_int_eq(chunked_feed(&st, "2\r\nab\r\n", 7, &used, &data), CHUNKED_MORE);
    ck_assert_uint_eq(data, UINT64_MAX);
    ck_assert_int_eq(chunked_feed(&st, "1\r\nx", 4, &used, &data), CHUNKED_ERROR);
    ck_assert_uint_eq(data, UINT64_MAX);
}
END_TEST

START_TEST(extensions)
{
    EXPECT_DONE("5;a=b\r\nhello\r\n0\r\n\r\n", 5);
    EXPECT_DONE("5;a\r\nhello\r\n0;last\r\n\r\n", 5);
    EXPECT_DONE("5 ; a = b ;\tc\r\nhello\r\n0\r\n\r\n", 5);
    EXPECT_DONE("5;a=\"q \\\" x;y\"\r\nhello\r\n0\r\n\r\n", 5);
    EXPECT_DONE("5;a=\"\"\r\nhello\r\n0\r\n\r\n", 5);
    EXPECT_DONE("5;a=\"\xff\"\r\nhello\r\n0\r\n\r\n", 5);
    EXPECT_DONE("5;a=\"x\" ;b=c\r\nhello\r\n0\r\n\r\n", 5);
    EXPECT_DONE("5;a=!#$%&'*+-.^_`|~\r\nhello\r\n0\r\n\r\n", 5);

    EXPECT_ERROR("5;\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5;=b\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5;a=\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5;a \r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5;a=b \r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5;a=b c\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5;a=\"x\"y\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5;a=\"x\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5;a=\"x\x01\"\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5;a=\"\\\x7f\"\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5;a(b)\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5;a=b,c\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR("5;a=b\x7f\r\nhello\r\n0\r\n\r\n");
}
END_TEST

/* "1;" + name of name_len bytes: the extension area holds 1 + name_len bytes. */
static char *chunk_with_ext(char *p, size_t name_len)
{
    *p++ = '1';
    *p++ = ';';
    memset(p, 'n', name_len);
    p += name_len;
    memcpy(p, "\r\nx\r\n", 5);
    return p + 5;
}

START_TEST(extension_budget)
{
    static char buf[3 * CHUNKED_MAX_EXT_TOTAL];
    char *p = chunk_with_ext(buf, CHUNKED_MAX_EXT_TOTAL - 1);
    strcpy(p, "0\r\n\r\n");
    EXPECT_DONE(buf, 1);
    p = chunk_with_ext(buf, CHUNKED_MAX_EXT_TOTAL);
    strcpy(p, "0\r\n\r\n");
    EXPECT_ERROR(buf);
    /* the budget is for the whole body, not per chunk */
    p = chunk_with_ext(buf, CHUNKED_MAX_EXT_TOTAL / 2 - 1);
    p = chunk_with_ext(p, CHUNKED_MAX_EXT_TOTAL / 2 - 1);
    strcpy(p, "0\r\n\r\n");
    EXPECT_DONE(buf, 2);
    p = chunk_with_ext(buf, CHUNKED_MAX_EXT_TOTAL / 2 - 1);
    p = chunk_with_ext(p, CHUNKED_MAX_EXT_TOTAL / 2);
    strcpy(p, "0\r\n\r\n");
    EXPECT_ERROR(buf);
}
END_TEST

START_TEST(trailers)
{
    EXPECT_DONE("0\r\nX-Checksum: abc\r\nEmpty:\r\n\r\n", 0);
    EXPECT_DONE("3\r\nabc\r\n0\r\nT: \t v \xff\x80 \r\n\r\n", 3);
    EXPECT_ERROR("0\r\nX: y\r\n folded\r\n\r\n");
    EXPECT_ERROR("0\r\n\tX: y\r\n\r\n");
    EXPECT_ERROR("0\r\n: y\r\n\r\n");
    EXPECT_ERROR("0\r\nX y\r\n\r\n");
    EXPECT_ERROR("0\r\nX : y\r\n\r\n");
    EXPECT_ERROR("0\r\nNoColon\r\n\r\n");
    EXPECT_ERROR("0\r\nX: a\x01\r\n\r\n");
    EXPECT_ERROR("0\r\nX: a\x7f\r\n\r\n");
    expect_n("0\r\nX: a\0b\r\n\r\n", 14, CHUNKED_ERROR, 0, 0, __LINE__);
    EXPECT_ERROR("0\r\n\rX");
}
END_TEST

START_TEST(trailer_budget)
{
    static char buf[CHUNKED_MAX_TRAILER_TOTAL + 64];
    /* trailer section = "X: " + v + "\r\n" + "\r\n" = v + 7 bytes */
    strcpy(buf, "0\r\nX: ");
    size_t v = CHUNKED_MAX_TRAILER_TOTAL - 7;
    memset(buf + 6, 'v', v);
    strcpy(buf + 6 + v, "\r\n\r\n");
    EXPECT_DONE(buf, 0);
    memset(buf + 6, 'v', v + 1);
    strcpy(buf + 6 + v + 1, "\r\n\r\n");
    EXPECT_ERROR(buf);
}
END_TEST

START_TEST(sticky_end_states)
{
    struct chunked_state st;
    size_t used;
    uint64_t data;
    chunked_init(&st);
    ck_assert_int_eq(chunked_feed(&st, "2\r\nab\r\n0\r\n\r\nXYZ", 15, &used, &data), CHUNKED_DONE);
    ck_assert_uint_eq(used, 12);
    ck_assert_uint_eq(data, 2);
    ck_assert_int_eq(chunked_feed(&st, "XYZ", 3, &used, &data), CHUNKED_DONE);
    ck_assert_uint_eq(used, 0);
    ck_assert_uint_eq(data, 2);

    chunked_init(&st);
    ck_assert_int_eq(chunked_feed(&st, "2\r\nab?", 6, &used, &data), CHUNKED_ERROR);
    ck_assert_uint_eq(used, 5);
    ck_assert_int_eq(chunked_feed(&st, "\r\n", 2, &used, &data), CHUNKED_ERROR);
    ck_assert_uint_eq(used, 0);

    /* running total across calls */
    chunked_init(&st);
    ck_assert_int_eq(chunked_feed(&st, "3\r\nab", 5, &used, &data), CHUNKED_MORE);
    ck_assert_uint_eq(data, 2);
    ck_assert_int_eq(chunked_feed(&st, "c\r\n4\r\nwxyz\r\n", 12, &used, &data), CHUNKED_MORE);
    ck_assert_uint_eq(data, 7);
    ck_assert_int_eq(chunked_feed(&st, "", 0, &used, &data), CHUNKED_MORE);
    ck_assert_uint_eq(used, 0);
}
END_TEST

/* chunked_announced: consumed data plus what a chunk whose size line was read still owes. */
START_TEST(announced)
{
    struct chunked_state st;
    size_t used;
    uint64_t data;
    chunked_init(&st);
    ck_assert_uint_eq(chunked_announced(&st), 0);
    /* a size still being read promises nothing */
    ck_assert_int_eq(chunked_feed(&st, "fffff", 5, &used, &data), CHUNKED_MORE);
    ck_assert_uint_eq(chunked_announced(&st), 0);
    /* once the line ends (or an extension starts) the whole chunk is owed */
    ck_assert_int_eq(chunked_feed(&st, ";a=b", 4, &used, &data), CHUNKED_MORE);
    ck_assert_uint_eq(chunked_announced(&st), 0xfffff);
    ck_assert_int_eq(chunked_feed(&st, "\r\nabc", 5, &used, &data), CHUNKED_MORE);
    ck_assert_uint_eq(data, 3);
    ck_assert_uint_eq(chunked_announced(&st), 0xfffff);

    chunked_init(&st);
    ck_assert_int_eq(chunked_feed(&st, "3\r\nabc\r\n", 8, &used, &data), CHUNKED_MORE);
    ck_assert_uint_eq(chunked_announced(&st), 3);
    ck_assert_int_eq(chunked_feed(&st, "ffffffffffffffff\r\nx", 19, &used, &data), CHUNKED_MORE);
    ck_assert_uint_eq(data, 4);
    ck_assert_uint_eq(chunked_announced(&st), UINT64_MAX);      /* saturates */
    ck_assert_int_eq(chunked_feed(&st, "", 0, &used, &data), CHUNKED_MORE);

    chunked_init(&st);
    ck_assert_int_eq(chunked_feed(&st, "2\r\nab\r\n0\r\nX: y\r\n\r\n", 18, &used, &data), CHUNKED_DONE);
    ck_assert_uint_eq(chunked_announced(&st), 2);
}
END_TEST

START_TEST(large_chunk_streamed)
{
    static char buf[70000];
    strcpy(buf, "10000\r\n");
    memset(buf + 7, 'z', 0x10000);
    strcpy(buf + 7 + 0x10000, "\r\n0\r\n\r\n");
    EXPECT_DONE(buf, 0x10000);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("chunked");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, simple);
    tcase_add_test(tc, incomplete);
    tcase_add_test(tc, next_request_follows);
    tcase_add_test(tc, bare_lf_rejected);
    tcase_add_test(tc, bare_cr_rejected);
    tcase_add_test(tc, after_data_must_be_crlf);
    tcase_add_test(tc, size_syntax);
    tcase_add_test(tc, size_overflow);
    tcase_add_test(tc, leading_zero_limit);
    tcase_add_test(tc, data_total_cannot_wrap);
    tcase_add_test(tc, extensions);
    tcase_add_test(tc, extension_budget);
    tcase_add_test(tc, trailers);
    tcase_add_test(tc, trailer_budget);
    tcase_add_test(tc, sticky_end_states);
    tcase_add_test(tc, large_chunk_streamed);
    tcase_add_test(tc, announced);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}

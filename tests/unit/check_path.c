/* check_path.c — unit tests for path normalization (src/path.c) and listing escapes (src/escape.c). */
#include <check.h>

#include "check_run.h"
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "path.h"

static void expect_path_n(const char *raw, size_t n, const char *want, int want_slash, int line)
{
    char out[256];
    int slash = -1;
    int st = path_normalize(raw, n, out, sizeof out, &slash);
    ck_assert_msg(st == 0, "line %d: status %d for \"%s\"", line, st, raw);
    ck_assert_msg(strcmp(out, want) == 0, "line %d: got \"%s\", want \"%s\"", line, out, want);
    ck_assert_msg(slash == want_slash, "line %d: trailing_slash %d, want %d", line, slash, want_slash);
}

#define EXPECT_PATH(raw, want, slash) expect_path_n((raw), strlen(raw), (want), (slash), __LINE__)

static void expect_status(const char *raw, size_t outcap, int want, int line)
{
    char out[256];
    int slash;
    ck_assert(outcap <= sizeof out);
    int st = path_normalize(raw, strlen(raw), out, outcap, &slash);
    ck_assert_msg(st == want, "line %d: status %d, want %d for \"%s\"", line, st, want, raw);
}

#define EXPECT_400(raw) expect_status((raw), 256, 400, __LINE__)

START_TEST(plain_paths)
{
    EXPECT_PATH("/", "/", 1);
    EXPECT_PATH("/index.html", "/index.html", 0);
    EXPECT_PATH("/a/b/c", "/a/b/c", 0);
    EXPECT_PATH("/a/b/", "/a/b/", 1);
    EXPECT_PATH("/\xc3\xa9t\xc3\xa9", "/\xc3\xa9t\xc3\xa9", 0);
    EXPECT_PATH("/a\\b", "/a\\b", 0);
    EXPECT_PATH("/.hidden", "/.hidden", 0);
    EXPECT_PATH("/...", "/...", 0);
    EXPECT_PATH("/..a/a..", "/..a/a..", 0);
}
END_TEST

START_TEST(must_start_with_slash)
{
    EXPECT_400("");
    EXPECT_400("a/b");
    EXPECT_400("%2fa");
}
END_TEST

START_TEST(collapse_slashes)
{
    EXPECT_PATH("//", "/", 1);
    EXPECT_PATH("///a//b///", "/a/b/", 1);
    EXPECT_PATH("/a//b", "/a/b", 0);
}
END_TEST

START_TEST(dot_segments)
{
    EXPECT_PATH("/.", "/", 1);
    EXPECT_PATH("/./", "/", 1);
    EXPECT_PATH("/a/./b", "/a/b", 0);
    EXPECT_PATH("/a/.", "/a/", 1);
    EXPECT_PATH("/a/b/..", "/a/", 1);
    EXPECT_PATH("/a/b/../", "/a/", 1);
    EXPECT_PATH("/a/b/../c", "/a/c", 0);
    EXPECT_PATH("/a/b/../../c", "/c", 0);
    EXPECT_PATH("/a/..", "/", 1);
    EXPECT_PATH("/a/../", "/", 1);
    EXPECT_PATH("/a//..//b", "/b", 0);
    EXPECT_PATH("/a/b/./../c/./d", "/a/c/d", 0);
}
END_TEST

START_TEST(above_root)
{
    EXPECT_400("/..");
    EXPECT_400("/../");
    EXPECT_400("/../etc/passwd");
    EXPECT_400("/a/../..");
    EXPECT_400("/a/../../b");
    EXPECT_400("/./..");
    EXPECT_400("//..");
}
END_TEST

START_TEST(percent_decoding)
{
    EXPECT_PATH("/a%20b", "/a b", 0);
    EXPECT_PATH("/%41%42c", "/ABc", 0);
    EXPECT_PATH("/%c3%A9", "/\xc3\xa9", 0);
    EXPECT_PATH("/a%3Fb%23c", "/a?b#c", 0);
    EXPECT_PATH("/a%2Fb", "/a/b", 0);
    EXPECT_PATH("/a%2f", "/a/", 1);
    EXPECT_PATH("/100%25", "/100%", 0);
    EXPECT_PATH("/%ff%80", "/\xff\x80", 0);
    /* decoded exactly once: %25xx stays a literal name */
    EXPECT_PATH("/%252e%252e", "/%2e%2e", 0);
    EXPECT_PATH("/%252e%252e/x", "/%2e%2e/x", 0);
    EXPECT_PATH("/%2500", "/%00", 0);
    /* overlong UTF-8 for '.' is just two bytes, never a dot */
    EXPECT_PATH("/%c0%ae%c0%ae/x", "/\xc0\xae\xc0\xae/x", 0);
    EXPECT_PATH("/%e0%80%ae", "/\xe0\x80\xae", 0);
}
END_TEST

START_TEST(encoded_traversal)
{
    EXPECT_400("/%2e%2e");
    EXPECT_400("/%2E%2E/etc/passwd");
    EXPECT_400("/.%2e/");
    EXPECT_400("/%2e./");
    EXPECT_400("/..%2f");
    EXPECT_400("/..%2fetc");
    EXPECT_400("/%2e%2e%2f%2e%2e%2fetc");
    EXPECT_400("/a/%2e%2e/%2e%2e");
    EXPECT_PATH("/a/b/..%2fc", "/a/c", 0);
    EXPECT_PATH("/a/%2e%2e/b", "/b", 0);
    EXPECT_PATH("/a/%2e/b", "/a/b", 0);
    EXPECT_PATH("/a/%2e", "/a/", 1);
    EXPECT_PATH("/a%2f..", "/", 1);
    EXPECT_PATH("/a%2f%2f%2fb", "/a/b", 0);
}
END_TEST

START_TEST(bad_escapes_and_ctls)
{
    EXPECT_400("/%");
    EXPECT_400("/%4");
    EXPECT_400("/a%");
    EXPECT_400("/%zz");
    EXPECT_400("/%4g");
    EXPECT_400("/%g4");
    EXPECT_400("/%%41");
    EXPECT_400("/%00");
    EXPECT_400("/a%00.html");
    EXPECT_400("/%01");
    EXPECT_400("/%0a");
    EXPECT_400("/%0D");
    EXPECT_400("/%1f");
    EXPECT_400("/%7f");
    EXPECT_400("/%7F");
    EXPECT_400("/a\x01");
    EXPECT_400("/a\x7f");
    EXPECT_400("/a\tb");
    char raw[] = "/a\0b";
    char out[16];
    int slash;
    ck_assert_int_eq(path_normalize(raw, 4, out, sizeof out, &slash), 400);
    EXPECT_PATH("/%20%7e%80", "/ ~\x80", 0);
}
END_TEST

START_TEST(output_capacity)
{
    char out[8];
    int slash;
    /* "/abcdef" needs 8 bytes with the NUL */
    ck_assert_int_eq(path_normalize("/abcdef", 7, out, 8, &slash), 0);
    ck_assert_str_eq(out, "/abcdef");
    ck_assert_int_eq(path_normalize("/abcdefg", 8, out, 8, &slash), 414);
    ck_assert_int_eq(path_normalize("/abcdef/", 8, out, 8, &slash), 414);
    ck_assert_int_eq(path_normalize("/abcde/", 7, out, 8, &slash), 0);
    ck_assert_str_eq(out, "/abcde/");
    ck_assert_int_eq(path_normalize("/%41%42%43%44%45%46", 19, out, 8, &slash), 0);
    ck_assert_str_eq(out, "/ABCDEF");
    ck_assert_int_eq(path_normalize("/", 1, out, 2, &slash), 0);
    ck_assert_str_eq(out, "/");
    ck_assert_int_eq(path_normalize("/", 1, out, 1, &slash), 414);
    ck_assert_int_eq(path_normalize("/", 1, out, 0, &slash), 414);
    ck_assert_int_eq(path_normalize("/a", 2, out, 2, &slash), 414);
    /* collapsed input that fits once normalized */
    ck_assert_int_eq(path_normalize("/a/////////////b/./././.", 24, out, 8, &slash), 0);
    ck_assert_str_eq(out, "/a/b/");
    /* only respects the length given, not a NUL */
    ck_assert_int_eq(path_normalize("/abc/def", 4, out, 8, &slash), 0);
    ck_assert_str_eq(out, "/abc");
    /* truncated escape at the given length */
    ck_assert_int_eq(path_normalize("/a%41", 4, out, 8, &slash), 400);
}
END_TEST

START_TEST(html_escaping)
{
    char out[64];
    size_t n = html_escape("a<b>&\"c'd", 9, out, sizeof out);
    ck_assert_str_eq(out, "a&lt;b&gt;&amp;&quot;c&#39;d");
    ck_assert_uint_eq(n, strlen(out));
    ck_assert_uint_eq(html_escape("", 0, out, sizeof out), 0);
    ck_assert_str_eq(out, "");
    ck_assert_uint_eq(html_escape("\xc3\xa9 x", 4, out, sizeof out), 4);
    ck_assert_str_eq(out, "\xc3\xa9 x");
    /* truncation never splits an entity and reports the needed length */
    n = html_escape("ab<cd", 5, out, 5);
    ck_assert_uint_eq(n, 8);
    ck_assert_str_eq(out, "ab");
    n = html_escape("ab<cd", 5, out, 7);
    ck_assert_str_eq(out, "ab&lt;");
    ck_assert_uint_eq(n, 8);
    n = html_escape("ab<cd", 5, out, 9);
    ck_assert_str_eq(out, "ab&lt;cd");
    ck_assert_uint_eq(html_escape("abc", 3, NULL, 0), 3);
}
END_TEST

START_TEST(url_escaping)
{
    char out[128];
    size_t n = url_escape_path("a b/c?d#e%f", 11, out, sizeof out);
    ck_assert_str_eq(out, "a%20b/c%3Fd%23e%25f");
    ck_assert_uint_eq(n, strlen(out));
    url_escape_path("Az09-._~", 8, out, sizeof out);
    ck_assert_str_eq(out, "Az09-._~");
    url_escape_path("<\"'&>:;=", 8, out, sizeof out);
    ck_assert_str_eq(out, "%3C%22%27%26%3E%3A%3B%3D");
    url_escape_path("\xc3\xa9\x01\x7f", 4, out, sizeof out);
    ck_assert_str_eq(out, "%C3%A9%01%7F");
    ck_assert_uint_eq(url_escape_path("a\0b", 3, out, sizeof out), 5);
    ck_assert_str_eq(out, "a%00b");
    n = url_escape_path("ab cd", 5, out, 4);
    ck_assert_uint_eq(n, 7);
    ck_assert_str_eq(out, "ab");
    n = url_escape_path("ab cd", 5, out, 6);
    ck_assert_str_eq(out, "ab%20");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("path");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, plain_paths);
    tcase_add_test(tc, must_start_with_slash);
    tcase_add_test(tc, collapse_slashes);
    tcase_add_test(tc, dot_segments);
    tcase_add_test(tc, above_root);
    tcase_add_test(tc, percent_decoding);
    tcase_add_test(tc, encoded_traversal);
    tcase_add_test(tc, bad_escapes_and_ctls);
    tcase_add_test(tc, output_capacity);
    tcase_add_test(tc, html_escaping);
    tcase_add_test(tc, url_escaping);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}

/* check_mime.c: loading mime.types and looking types up by extension. */
#include <check.h>

#include "check_run.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mime.h"

static char path[] = "/tmp/cowd-mime-XXXXXX";

static void write_types(const char *text)
{
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    ck_assert_int_eq(mime_load(path), 0);
    unlink(path);
    strcpy(path, "/tmp/cowd-mime-XXXXXX");
}

#define TYPE(name) mime_type_for((name), strlen(name))

START_TEST(looks_up_by_last_extension_case_insensitively)
{
    write_types("# comment\ntext/html html htm\nimage/png png\n\napplication/gzip gz # trailing\n"
                "text/css\tcss\n");
    ck_assert_uint_eq(mime_count(), 5);
    ck_assert_str_eq(TYPE("/index.html"), "text/html");
    ck_assert_str_eq(TYPE("/a/b.HTM"), "text/html");
    ck_assert_str_eq(TYPE("/x.tar.gz"), "application/gzip");
    ck_assert_str_eq(TYPE("/style.css"), "text/css");
    ck_assert_str_eq(TYPE("/logo.PnG"), "image/png");
}
END_TEST

START_TEST(unknown_or_missing_extension_is_octet_stream)
{
    write_types("text/html html\n");
    ck_assert_str_eq(TYPE("/README"), "application/octet-stream");
    ck_assert_str_eq(TYPE("/file."), "application/octet-stream");
    ck_assert_str_eq(TYPE("/dir.html/file"), "application/octet-stream");
    ck_assert_str_eq(TYPE("/x.unknownext"), "application/octet-stream");
    ck_assert_str_eq(TYPE(""), "application/octet-stream");
}
END_TEST

START_TEST(later_lines_win_and_reload_replaces)
{
    write_types("text/plain txt\ntext/x-other txt\n");
    ck_assert_str_eq(TYPE("/a.txt"), "text/x-other");
    write_types("application/json json\n");
    ck_assert_str_eq(TYPE("/a.txt"), "application/octet-stream");
    ck_assert_str_eq(TYPE("/a.json"), "application/json");
}
END_TEST

START_TEST(bundled_file_has_the_web_types)
{
    const char *bundled = getenv("COWD_SRCDIR");
    char p[4096];
    snprintf(p, sizeof p, "%s/conf/mime.types", bundled != NULL ? bundled : ".");
    ck_assert_int_eq(mime_load(p), 0);
    ck_assert_str_eq(TYPE("/index.html"), "text/html");
    ck_assert_str_eq(TYPE("/style.css"), "text/css");
    ck_assert_str_eq(TYPE("/app.js"), "text/javascript");
    ck_assert_str_eq(TYPE("/logo.png"), "image/png");
    ck_assert_str_eq(TYPE("/pic.svg"), "image/svg+xml");
    ck_assert_str_eq(TYPE("/data.json"), "application/json");
}
END_TEST

/* A type goes into Content-Type headers and multipart part headers as it is:
 * only type/subtype of token characters, at most 127 each (RFC 6838 4.2). */
START_TEST(only_well_formed_types_are_loaded)
{
    char text[1024], sub127[128], sub128[129];
    memset(sub127, 'a', 127);
    sub127[127] = '\0';
    memset(sub128, 'b', 128);
    sub128[128] = '\0';
    snprintf(text, sizeof text,
             "application/%s ok\napplication/%s long\na/b/c slashes\ntext/ nosub\n/x notype\n"
             "text/pl\x01in ctl\ntypes {\n}\nimage/svg+xml svg\n", sub127, sub128);
    write_types(text);
    ck_assert_uint_eq(mime_count(), 2);
    ck_assert_uint_eq(strlen(TYPE("/f.ok")), 12 + 127);
    ck_assert_str_eq(TYPE("/f.svg"), "image/svg+xml");
    ck_assert_str_eq(TYPE("/f.long"), "application/octet-stream");
    ck_assert_str_eq(TYPE("/f.slashes"), "application/octet-stream");
    ck_assert_str_eq(TYPE("/f.nosub"), "application/octet-stream");
    ck_assert_str_eq(TYPE("/f.notype"), "application/octet-stream");
    ck_assert_str_eq(TYPE("/f.ctl"), "application/octet-stream");
}
END_TEST

/* nginx's own mime.types continues a few long entries on the next line
 * ("...presentation\n        pptx;").  Before, the parser went line by line
 * and those extensions were lost without a word. */
START_TEST(nginx_entries_continued_on_the_next_line)
{
    write_types("types {\n"
                "    text/html                                        html htm shtml;\n"
                "    application/vnd.openxmlformats-officedocument.presentationml.presentation\n"
                "                                                     pptx;\n"
                "    application/vnd.openxmlformats-officedocument.wordprocessingml.document\n"
                "                                                     docx   docm\n"
                "                                                     dotx;\n"
                "    image/png                                        png;\n"
                "    image/x-unended                                  unended\n"
                "}\n");
    ck_assert_str_eq(TYPE("/f.pptx"),
                     "application/vnd.openxmlformats-officedocument.presentationml.presentation");
    ck_assert_str_eq(TYPE("/f.docm"),
                     "application/vnd.openxmlformats-officedocument.wordprocessingml.document");
    ck_assert_str_eq(TYPE("/f.dotx"),
                     "application/vnd.openxmlformats-officedocument.wordprocessingml.document");
    ck_assert_str_eq(TYPE("/f.png"), "image/png");
    ck_assert_str_eq(TYPE("/f.htm"), "text/html");
    ck_assert_str_eq(TYPE("/f.unended"), "image/x-unended");
    ck_assert_str_eq(TYPE("/f.}"), "application/octet-stream");
    ck_assert_uint_eq(mime_count(), 9);
    /* Apache's format has no ';': a type line without extensions stays alone */
    write_types("application/x-none\nimage/gif gif\nnotatype gifx\n");
    ck_assert_str_eq(TYPE("/f.gif"), "image/gif");
    ck_assert_str_eq(TYPE("/f.gifx"), "application/octet-stream");
    ck_assert_uint_eq(mime_count(), 1);
}
END_TEST

/* nginx's syntax ends an entry at ';', not at the line's end.  Before, a
 * one-line "types { ... }" lost every entry ("types" skipped the line) and a
 * second entry on a line became extensions of the first (png: text/html). */
START_TEST(nginx_entries_several_on_a_line)
{
    write_types("types { text/html html; image/png png; }\n"
                "types {\n  text/css css; application/json json;image/gif gif\n"
                "  text/plain txt }\n");
    ck_assert_str_eq(TYPE("/f.html"), "text/html");
    ck_assert_str_eq(TYPE("/f.png"), "image/png");
    ck_assert_str_eq(TYPE("/f.css"), "text/css");
    ck_assert_str_eq(TYPE("/f.json"), "application/json");
    ck_assert_str_eq(TYPE("/f.gif"), "image/gif");
    ck_assert_str_eq(TYPE("/f.txt"), "text/plain");
    ck_assert_uint_eq(mime_count(), 6);
}
END_TEST

/* Before: parsing stopped at the NUL, and every type after it was lost
 * without a word. */
START_TEST(nul_byte_refuses_the_file)
{
    static const char text[] = "text/plain txt\nimage/png \0 png\napplication/json json\n";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    ck_assert_int_eq(mime_load(path), -1);
    unlink(path);
    strcpy(path, "/tmp/cowd-mime-XXXXXX");
}
END_TEST

START_TEST(missing_file_fails)
{
    ck_assert_int_eq(mime_load("/nonexistent/mime.types"), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mime");
    TCase *tc = tcase_create("mime");
    tcase_add_test(tc, looks_up_by_last_extension_case_insensitively);
    tcase_add_test(tc, unknown_or_missing_extension_is_octet_stream);
    tcase_add_test(tc, later_lines_win_and_reload_replaces);
    tcase_add_test(tc, bundled_file_has_the_web_types);
    tcase_add_test(tc, only_well_formed_types_are_loaded);
    tcase_add_test(tc, missing_file_fails);
    tcase_add_test(tc, nul_byte_refuses_the_file);
    tcase_add_test(tc, nginx_entries_continued_on_the_next_line);
    tcase_add_test(tc, nginx_entries_several_on_a_line);
    suite_add_tcase(s, tc);
    return run_suite(s);
}

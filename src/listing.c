/* listing.c: directory listings.  Not on the fast path: it allocates (with
 * caps) because a directory's size is unknown in advance. */
#include "listing.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "escape.h"
#include "log.h"
#include "response.h"

#define LISTING_MAX_ENTRIES 10000

struct entry { char *name; int is_dir; };

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* Appends to a growable buffer; -1 when out of memory. */
struct sbuf { char *p; size_t len, cap; };

/* Makes room for len more bytes (and a NUL); -1 when out of memory. */
static int sb_reserve(struct sbuf *s, size_t len)
{
    if (s->len + len + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + len + 1)
            cap *= 2;
        char *np = realloc(s->p, cap);
        if (np == NULL)
            return -1;
        s->p = np;
        s->cap = cap;
    }
    return 0;
}

static int sb_add(struct sbuf *s, const char *data, size_t len)
{
    if (sb_reserve(s, len) < 0)
        return -1;
    memcpy(s->p + s->len, data, len);
    s->len += len;
    return 0;
}

static int sb_str(struct sbuf *s, const char *str) { return sb_add(s, str, strlen(str)); }

/* Escapes straight into the buffer, sized by a counting pass first: a name
 * of 255 '&' or '"' grows to 1275 or 1530 bytes, so a fixed temporary would
 * have to truncate names that are perfectly legal. */
static int sb_html(struct sbuf *s, const char *str)
{
    size_t len = strlen(str);
    size_t need = html_escape(str, len, NULL, 0);
    if (sb_reserve(s, need) < 0)
        return -1;
    s->len += html_escape(str, len, s->p + s->len, s->cap - s->len);
    return 0;
}

static int sb_href(struct sbuf *s, const char *str)
{
    size_t len = strlen(str);
    size_t need = url_escape_path(str, len, NULL, 0);
    if (sb_reserve(s, need) < 0)
        return -1;
    s->len += url_escape_path(str, len, s->p + s->len, s->cap - s->len);
    return 0;
}

void listing_send(struct conn *c, const struct http_request *req, int dir_fd, const char *dir_path)
{
    struct entry *entries = NULL;
    size_t n = 0, cap = 0;
    struct sbuf html = { NULL, 0, 0 };
    int ok = 0;

    int dfd = dup(dir_fd);
    DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (dir == NULL) {
        if (dfd >= 0)
            close(dfd);
        log_errno(LOG_WARN, "listing %s", dir_path);
        response_error(c, req, 403, NULL, NULL);
        return;
    }
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')   /* "." "..", and hidden files, as nginx autoindex */
            continue;
        if (n == LISTING_MAX_ENTRIES)
            break;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            struct entry *ne = realloc(entries, ncap * sizeof *ne);
            if (ne == NULL)
                goto out;
            entries = ne;
            cap = ncap;
        }
        struct stat st;
        entries[n].is_dir = fstatat(dir_fd, de->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
        entries[n].name = strdup(de->d_name);
        if (entries[n].name == NULL)
            goto out;
        n++;
    }
    qsort(entries, n, sizeof *entries, by_name);

    const char *slash = strcmp(dir_path, "/") == 0 ? "" : "/";
    if (sb_str(&html, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of ") ||
        sb_html(&html, dir_path) || sb_str(&html, slash) ||
        sb_str(&html, "</title></head>\n<body><h1>Index of ") ||
        sb_html(&html, dir_path) || sb_str(&html, slash) ||
        sb_str(&html, "</h1>\n<ul>\n"))
        goto out;
    if (strcmp(dir_path, "/") != 0 && sb_str(&html, "<li><a href=\"../\">../</a></li>\n"))
        goto out;
    for (size_t i = 0; i < n; i++) {
        const char *suffix = entries[i].is_dir ? "/" : "";
        if (sb_str(&html, "<li><a href=\"") || sb_href(&html, entries[i].name) ||
            sb_str(&html, suffix) || sb_str(&html, "\">") || sb_html(&html, entries[i].name) ||
            sb_str(&html, suffix) || sb_str(&html, "</a></li>\n"))
            goto out;
    }
    if (sb_str(&html, "</ul>\n</body></html>\n"))
        goto out;
    ok = 1;

    response_begin(c, req, 200);
    response_header(c, "Content-Type", "text/html; charset=utf-8");
    response_header_u64(c, "Content-Length", html.len);
    response_header(c, "Cache-Control", "no-cache");
    response_end_headers(c);
    if (req->method != HTTP_HEAD)
        buff_write(&c->out, html.p, html.len);
out:
    if (!ok)
        response_error(c, req, 500, NULL, NULL);
    closedir(dir);
    for (size_t i = 0; i < n; i++)
        free(entries[i].name);
    free(entries);
    free(html.p);
}

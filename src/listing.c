/* listing.c: directory listings.  Not on the fast path: it allocates the
 * names (at most --listing-max of them) because a directory's size is unknown
 * in advance, and all the listings of a worker hold at most --listing-memory
 * bytes of them at once (a listing that would need more gets 503).  The page
 * itself is never built in memory: its length is computed first, then it is
 * written piece by piece through the connection's output buffer, so a slow
 * reader of a big listing holds no more memory than one of a small one. */
#include "listing.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pth.h>

#include "config.h"
#include "escape.h"
#include "log.h"
#include "response.h"
#include "static_file.h"

struct entry { char *name; int is_dir; };

/* Bytes of names and entry arrays held by this worker's listings (one
 * process, its threads cooperative: no lock).  Without it a slow reader per
 * handler thread of a listing of --listing-max long names each held ~3 MB:
 * 256 of them, most of a gigabyte. */
static size_t held_bytes;
static struct log_repeat refusals;     /* 503s for want of it: a line a minute */

/* One listing's share of held_bytes, given back at its end. */
struct budget { size_t held; };

static int budget_take(struct budget *b, size_t bytes)
{
    if (bytes > cfg.listing_memory - held_bytes)
        return -1;
    held_bytes += bytes;
    b->held += bytes;
    return 0;
}

static void budget_give(struct budget *b, size_t bytes)
{
    held_bytes -= bytes;
    b->held -= bytes;
}

static int name_cmp(const struct entry *a, const struct entry *b)
{
    return strcmp(a->name, b->name);
}

static int by_name(const void *a, const void *b)
{
    return name_cmp(a, b);
}

/* entries[0..n) is a max-heap by name: with more names than the cap, the
 * listing keeps the first cap of them in sorted order, and says how many
 * more there are, instead of an arbitrary subset. */
static void sift_down(struct entry *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, top = i;
        if (l < n && name_cmp(&h[l], &h[top]) > 0) top = l;
        if (r < n && name_cmp(&h[r], &h[top]) > 0) top = r;
        if (top == i)
            return;
        struct entry t = h[i]; h[i] = h[top]; h[top] = t;
        i = top;
    }
}

static void sift_up(struct entry *h, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (name_cmp(&h[i], &h[p]) <= 0)
            return;
        struct entry t = h[i]; h[i] = h[p]; h[p] = t;
        i = p;
    }
}

/* A name the server would refuse in a request path (control bytes: 400)
 * would be a dead link: it is not listed. */
static int servable_name(const char *s)
{
    for (; *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 0;
    return 1;
}

/* The page is produced twice: once counting (out == NULL), once sending. */
struct page { struct buff *out; uint64_t len; };

static void put(struct page *pg, const char *s, size_t len)
{
    pg->len += len;
    if (pg->out != NULL)
        buff_write(pg->out, s, len);
}

static void put_str(struct page *pg, const char *s) { put(pg, s, strlen(s)); }

/* Escapes through a stack buffer in slices: a 255-byte name of '"' grows to
 * 1530 bytes.  Slices never split a byte's escape (each input byte is
 * escaped alone). */
static void put_escaped(struct page *pg, const char *s, int href)
{
    char tmp[512];
    size_t len = strlen(s);
    while (len > 0) {
        size_t take = len < 64 ? len : 64;     /* at most 6 bytes out per byte in */
        size_t n = href ? url_escape_path(s, take, tmp, sizeof tmp)
                        : html_escape(s, take, tmp, sizeof tmp);
        put(pg, tmp, n);
        s += take;
        len -= take;
    }
}

static void produce(struct page *pg, const char *dir_path, const struct entry *e, size_t n,
                    unsigned long more)
{
    const char *slash = strcmp(dir_path, "/") == 0 ? "" : "/";
    put_str(pg, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of ");
    put_escaped(pg, dir_path, 0);
    put_str(pg, slash);
    put_str(pg, "</title></head>\n<body><h1>Index of ");
    put_escaped(pg, dir_path, 0);
    put_str(pg, slash);
    put_str(pg, "</h1>\n<ul>\n");
    if (*slash != '\0')
        put_str(pg, "<li><a href=\"../\">../</a></li>\n");
    for (size_t i = 0; i < n; i++) {
        const char *suffix = e[i].is_dir ? "/" : "";
        put_str(pg, "<li><a href=\"");
        put_escaped(pg, e[i].name, 1);
        put_str(pg, suffix);
        put_str(pg, "\">");
        put_escaped(pg, e[i].name, 0);
        put_str(pg, suffix);
        put_str(pg, "</a></li>\n");
        if (pg->out != NULL && pg->out->failed)
            return;
    }
    put_str(pg, "</ul>\n");
    if (more > 0) {
        char note[96];
        int k = snprintf(note, sizeof note, "<p>%lu more entries not listed (--listing-max %u).</p>\n",
                         more, cfg.listing_max);
        put(pg, note, (size_t)k);
    }
    put_str(pg, "</body></html>\n");
}

int listing_open(int dir_fd)
{
    /* dir_fd may be open for search only (static_file.c): the listing
     * reads the same directory through a new descriptor, which needs read
     * permission */
    return openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

void listing_send(struct conn *c, const struct http_request *req, int read_fd,
                  const char *dir_path)
{
    struct entry *entries = NULL;
    size_t n = 0, cap = 0;
    unsigned long more = 0, seen = 0;
    int ok = 0, over_budget = 0;
    struct budget budget = { 0 };

    DIR *dir = fdopendir(read_fd);
    if (dir == NULL) {
        int e = errno;
        close(read_fd);
        errno = e;
        log_errno(LOG_WARN, "listing %s", dir_path);
        response_error(c, req, status_for_errno(e), NULL, NULL);
        return;
    }
    struct dirent *de;
    /* NULL is the end or an error (errno): a listing cut short by an I/O
     * error must not go out as if whole */
    while ((errno = 0, de = readdir(dir)) != NULL) {
        if (++seen % 256 == 0)
            pth_yield(NULL);        /* a huge directory must not stall the other connections */
        if (de->d_name[0] == '.' || !servable_name(de->d_name))
            continue;               /* "." "..", and hidden files, as nginx autoindex */
        /* a symbolic link is looked at as a request for it would open it:
         * one out of the root (or leading nowhere) is left out, before the
         * first --listing-max are chosen, and whether it names a directory
         * out there is not told */
        int link_kind = -2;
#ifdef DT_FIFO
        if (de->d_type == DT_FIFO || de->d_type == DT_SOCK || de->d_type == DT_CHR || de->d_type == DT_BLK)
            continue;               /* a request for it gets 403: not a link worth showing */
#endif
#ifdef DT_LNK
        if (de->d_type == DT_LNK && (link_kind = static_file_entry_kind(dir_path, de->d_name)) < 0)
            continue;
#endif
        if (n == cfg.listing_max) {
            /* full: the new name replaces the greatest kept, if smaller */
            more++;
            if (n == 0 || strcmp(de->d_name, entries[0].name) >= 0)
                continue;
            size_t old_size = strlen(entries[0].name) + 1, new_size = strlen(de->d_name) + 1;
            if (new_size > old_size && budget_take(&budget, new_size - old_size) < 0) {
                over_budget = 1;
                goto out;
            }
            char *name = strdup(de->d_name);
            if (name == NULL)
                goto out;
            free(entries[0].name);
            if (new_size < old_size)
                budget_give(&budget, old_size - new_size);
            entries[0].name = name;
            entries[0].is_dir = link_kind >= 0 ? link_kind : -1;
            sift_down(entries, n, 0);
            continue;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            if (ncap > cfg.listing_max)
                ncap = cfg.listing_max;
            if (budget_take(&budget, (ncap - cap) * sizeof *entries) < 0) {
                over_budget = 1;
                goto out;
            }
            struct entry *ne = realloc(entries, ncap * sizeof *ne);
            if (ne == NULL)
                goto out;
            entries = ne;
            cap = ncap;
        }
        if (budget_take(&budget, strlen(de->d_name) + 1) < 0) {
            over_budget = 1;
            goto out;
        }
        entries[n].name = strdup(de->d_name);
        if (entries[n].name == NULL)
            goto out;
        /* the type from the directory itself where the file system gives it:
         * no stat per entry */
#ifdef DT_DIR
        entries[n].is_dir = link_kind >= 0 ? link_kind
                            : de->d_type == DT_DIR ? 1 : de->d_type == DT_UNKNOWN ? -1 : 0;
#else
        entries[n].is_dir = -1;
#endif
        n++;
        sift_up(entries, n - 1);
    }
    if (errno != 0)
        goto out;
    qsort(entries, n, sizeof *entries, by_name);
    /* the file system gave no type (DT_UNKNOWN): looked at now, only the
     * names kept, as a request would open them (those it could not serve
     * are left out here, after the first --listing-max were chosen) */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (entries[i].is_dir < 0) {
            int kind = static_file_entry_kind(dir_path, entries[i].name);
            if (i % 256 == 255)
                pth_yield(NULL);
            if (kind < 0) {
                free(entries[i].name);
                continue;
            }
            entries[i].is_dir = kind;
        }
        entries[kept++] = entries[i];
    }
    n = kept;
    ok = 1;

    struct page count = { NULL, 0 };
    produce(&count, dir_path, entries, n, more);
    response_begin(c, req, 200);
    response_header(c, "Content-Type", "text/html; charset=utf-8");
    response_header_u64(c, "Content-Length", count.len);
    response_header(c, "Cache-Control", LISTING_CACHE_CONTROL);
    response_end_headers(c);
    if (req->method != HTTP_HEAD) {
        struct page send = { &c->out, 0 };
        produce(&send, dir_path, entries, n, more);
    }
out:
    if (over_budget) {
        /* other listings hold the memory now: a moment later it is free */
        unsigned long times = log_repeat_failed(&refusals);
        if (times > 0)
            log_msg(LOG_WARN, "listing %s refused with 503: the listings being sent hold "
                    "--listing-memory (%zu bytes) (refusals since last logged: %lu)",
                    dir_path, cfg.listing_memory, times);
        response_error(c, req, 503, "Retry-After", "1");
    } else if (!ok) {
        log_errno(LOG_WARN, "listing %s", dir_path);
        response_error(c, req, 500, NULL, NULL);
    }
    closedir(dir);
    for (size_t i = 0; i < n; i++)
        free(entries[i].name);
    free(entries);
    budget_give(&budget, budget.held);
}

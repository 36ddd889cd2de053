/* conditional.c — owns RFC 9110 §13 precondition evaluation for GET/HEAD of static files:
 * entity-tag list parsing and strong/weak comparison, date preconditions, and If-Range.
 * No I/O, no malloc. */

#include "conditional.h"

#include <string.h>

#include "http_date.h"

struct etag_view { int weak; const char *opaque; size_t opaque_len; }; /* opaque includes the quotes */

static int is_ows(char c) { return c == ' ' || c == '\t'; }

/* RFC 9110 §8.8.3 etagc = %x21 / %x23-7E / obs-text */
static int is_etagc(unsigned char c) { return c == 0x21 || (c >= 0x23 && c != 0x7f); }

/* Parses one entity-tag at s[*pos]; advances *pos past it. Returns 0 or -1. */
static int parse_etag(const char *s, size_t n, size_t *pos, struct etag_view *tag)
{
    size_t i = *pos;
    tag->weak = 0;
    if (i + 1 < n && s[i] == 'W' && s[i + 1] == '/') {
        tag->weak = 1;
        i += 2;
    }
    if (i >= n || s[i] != '"')
        return -1;
    size_t start = i++;
    while (i < n && is_etagc((unsigned char)s[i]))
        i++;
    if (i >= n || s[i] != '"')
        return -1;
    i++;
    tag->opaque = s + start;
    tag->opaque_len = i - start;
    *pos = i;
    return 0;
}

static int resource_tag(const struct cond_resource *res, struct etag_view *tag)
{
    size_t pos = 0;
    if (res->etag == NULL || parse_etag(res->etag, res->etag_len, &pos, tag) != 0 || pos != res->etag_len)
        return -1;
    return 0;
}

static int etags_match(const struct etag_view *a, const struct etag_view *b, int weak_comparison)
{
    if (!weak_comparison && (a->weak || b->weak))
        return 0;
    return a->opaque_len == b->opaque_len && memcmp(a->opaque, b->opaque, a->opaque_len) == 0;
}

static int is_star(const struct http_slice *v)
{
    const char *s = v->p;
    size_t n = v->len;
    while (n > 0 && is_ows(s[0])) { s++; n--; }
    while (n > 0 && is_ows(s[n - 1])) n--;
    return n == 1 && s[0] == '*';
}

/* One field line of #entity-tag: -1 if malformed, else 0 with its members counted into
 * *elements and *matched set if one of them matches mine (NULL: the resource has no tag). */
static int scan_etag_list(const struct http_slice *v, const struct etag_view *mine, int weak_comparison,
                          int *elements, int *matched)
{
    const char *s = v->p;
    size_t n = v->len, pos = 0;
    for (;;) {
        while (pos < n && (is_ows(s[pos]) || s[pos] == ','))
            pos++;
        if (pos >= n)
            return 0;
        struct etag_view theirs;
        if (parse_etag(s, n, &pos, &theirs) != 0)
            return -1;
        (*elements)++;
        if (mine != NULL && etags_match(mine, &theirs, weak_comparison))
            *matched = 1;
        while (pos < n && is_ows(s[pos]))
            pos++;
        if (pos < n && s[pos] != ',')
            return -1;
    }
}

/* If-Match / If-None-Match = "*" / #entity-tag. A malformed list anywhere counts as "no match"
 * for the whole field: for If-Match that fails safe (412, nothing served against a validator
 * we could not read), for If-None-Match it just means a full 200. Empty list elements are
 * tolerated (RFC 9110 §5.6.1). "*" matches because cond_evaluate is only asked about an
 * existing representation. A field on several lines is their comma-joined list (RFC 9110
 * §5.3), in which a "*" is no longer alone: malformed. */
static int etag_field_matches(const struct http_request *req, const struct http_slice *first,
                              const char *name, int repeated, const struct cond_resource *res,
                              int weak_comparison)
{
    struct etag_view mine;
    const struct etag_view *have = resource_tag(res, &mine) == 0 ? &mine : NULL;
    int matched = 0, elements = 0;
    if (!repeated) {
        if (is_star(first))
            return 1;
        if (scan_etag_list(first, have, weak_comparison, &elements, &matched) != 0)
            return 0;
        return elements > 0 && matched;
    }
    size_t cursor = 0;
    struct http_slice line;
    while (http_next_field(req, name, &cursor, &line)) {
        if (is_star(&line) || scan_etag_list(&line, have, weak_comparison, &elements, &matched) != 0)
            return 0;
    }
    return elements > 0 && matched;
}

int cond_evaluate(const struct http_request *req, const struct cond_resource *res)
{
    int get_or_head = req->method == HTTP_GET || req->method == HTTP_HEAD;
    time_t since;

    if (req->if_match.p != NULL) {
        if (!etag_field_matches(req, &req->if_match, "if-match", req->repeated & HTTP_REPEATED_IF_MATCH,
                                res, 0))
            return 412;
    } else if (req->if_unmodified_since.p != NULL && !res->no_mtime &&
               http_date_parse_at(req->if_unmodified_since.p, req->if_unmodified_since.len, res->now, &since) == 0 &&
               res->mtime > since) {
        return 412;
    }

    if (req->if_none_match.p != NULL) {
        if (etag_field_matches(req, &req->if_none_match, "if-none-match",
                               req->repeated & HTTP_REPEATED_IF_NONE_MATCH, res, 1))
            return get_or_head ? 304 : 412;
    } else if (get_or_head && req->if_modified_since.p != NULL && !res->no_mtime && !res->unsettled &&
               http_date_parse_at(req->if_modified_since.p, req->if_modified_since.len, res->now, &since) == 0 &&
               res->mtime <= since && since <= res->now) {
        /* RFC semantics (not modified since = mtime <= date), as Apache and lighttpd do; nginx's
         * default "if_modified_since exact" would demand equality.  A date in the future was
         * not one of ours (RFC 9110 §13.1.3 asks for a date the server sent), and trusting it
         * would answer 304 to every change until then; Apache ignores it too. */
        return 304;
    }
    return 0;
}

int cond_if_range_ok(const struct http_request *req, const struct cond_resource *res)
{
    if (req->if_range.p == NULL)
        return 1;
    if (req->repeated & HTTP_REPEATED_IF_RANGE)
        return 0;
    const char *s = req->if_range.p;
    size_t n = req->if_range.len;
    while (n > 0 && is_ows(s[0])) { s++; n--; }
    while (n > 0 && is_ows(s[n - 1])) n--;

    /* "W/" only: a date on a Wednesday also starts with 'W' */
    if (n > 0 && (s[0] == '"' || (n > 1 && s[0] == 'W' && s[1] == '/'))) {
        struct etag_view theirs, mine;
        size_t pos = 0;
        if (parse_etag(s, n, &pos, &theirs) != 0 || pos != n || resource_tag(res, &mine) != 0)
            return 0;
        return etags_match(&mine, &theirs, 0); /* strong comparison: a weak tag never matches */
    }
    /* A date never matches.  RFC 9110 §8.8.2.2 makes Last-Modified a strong validator only
     * where the server knows the content changes with it, and here it need not: cp -p, tar,
     * unzip and a reproducible build's SOURCE_DATE_EPOCH give a new file an old one's
     * modification time (why the ETag is made of the change time, filecache.c), and an equal
     * date would splice the new file's bytes onto a resumed download of the old.  The whole
     * file instead (200) is always allowed (§13.1.5); every reply of ours with a date has an
     * ETag too, which a client must send rather than the date (§13.1.5). */
    return 0;
}

/* path.c — owns the mapping from a raw, percent-encoded URL path to a normalized path that
 * cannot name anything above the document root. Decoding happens exactly once, before
 * segment resolution, so "%2e%2e" is "..", "..%2f" is "../", and "%252e%252e" stays the
 * literal name "%2e%2e". No I/O, no malloc. */

#include "path.h"

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Bytes >= 0x80 are passed through without UTF-8 validation, as nginx does: file names are
 * bytes on POSIX, and an overlong form such as %c0%ae is two bytes, never a '.', so it cannot
 * take part in traversal. */
static int is_forbidden_byte(unsigned char c) { return c < 0x20 || c == 0x7f; }

/* Called at the end of each segment, i.e. at a decoded '/' or at end of input; the segment is
 * out[*seg_start, *out_len). Returns 0, 400 (".." above root) or 414. */
static int close_segment(char *out, size_t outcap, size_t *out_len, size_t *seg_start, int at_end,
                         int *ends_as_dir)
{
    size_t seg_len = *out_len - *seg_start;
    const char *seg = out + *seg_start;
    *ends_as_dir = 1;
    if (seg_len == 0)
        return 0; /* "//" collapses; at end: path ended in '/' */
    if (seg_len == 1 && seg[0] == '.') {
        *out_len = *seg_start;
        return 0;
    }
    if (seg_len == 2 && seg[0] == '.' && seg[1] == '.') {
        if (*seg_start == 1)
            return 400; /* above the root: nginx answers 400 rather than clamping */
        size_t i = *seg_start - 1; /* the '/' closing the previous segment */
        while (i > 0 && out[i - 1] != '/')
            i--;
        *out_len = i;
        *seg_start = i;
        return 0;
    }
    if (at_end) {
        *ends_as_dir = 0;
        return 0;
    }
    if (*out_len + 1 >= outcap)
        return 414;
    out[(*out_len)++] = '/';
    *seg_start = *out_len;
    return 0;
}

int path_normalize(const char *raw, size_t len, char *out, size_t outcap, int *trailing_slash)
{
    *trailing_slash = 0;
    if (len == 0 || raw[0] != '/')
        return 400;
    if (outcap < 2)
        return 414;
    out[0] = '/';
    size_t out_len = 1, seg_start = 1;
    int ends_as_dir = 1;

    for (size_t i = 1; i < len; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c == '%') {
            int hi = i + 2 < len ? hex_value((unsigned char)raw[i + 1]) : -1;
            int lo = hi >= 0 ? hex_value((unsigned char)raw[i + 2]) : -1;
            if (lo < 0)
                return 400;
            c = (unsigned char)(hi << 4 | lo);
            i += 2;
        }
        if (is_forbidden_byte(c))
            return 400;
        if (c == '/') {
            int st = close_segment(out, outcap, &out_len, &seg_start, 0, &ends_as_dir);
            if (st)
                return st;
            continue;
        }
        if (out_len + 1 >= outcap) /* keep room for the NUL */
            return 414;
        out[out_len++] = (char)c;
    }
    int st = close_segment(out, outcap, &out_len, &seg_start, 1, &ends_as_dir);
    if (st)
        return st;
    out[out_len] = '\0';
    *trailing_slash = ends_as_dir;
    return 0;
}

/* range.c — owns Range header parsing and the DoS caps around it. Ranges are kept in request
 * order and not merged: the caps below already bound the response to one copy of the file,
 * which is what matters (CVE-2011-3192 "Apache Killer" was many overlapping ranges). We fall
 * back to a plain 200 instead of 416 when a cap trips, like Apache with MaxRanges and nginx
 * with overlapping ranges: the request was legal, just not worth the multipart overhead.
 * No I/O, no malloc. */

#include "range.h"

static int is_ows(char c) { return c == ' ' || c == '\t'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* 1*DIGIT; saturates at UINT64_MAX instead of failing, because a huge position is still valid
 * syntax: as first-pos it is just unsatisfiable, as suffix-length or last-pos it means "all". */
static size_t parse_uint(const char *s, size_t n, uint64_t *v)
{
    size_t i = 0;
    uint64_t r = 0;
    while (i < n && is_digit(s[i])) {
        unsigned d = (unsigned)(s[i] - '0');
        r = r > (UINT64_MAX - d) / 10 ? UINT64_MAX : r * 10 + d;
        i++;
    }
    *v = r;
    return i;
}

enum range_result range_parse(const char *hdr, size_t len, uint64_t size, unsigned max_ranges,
                              struct byte_range *out, unsigned out_cap, unsigned *count)
{
    static const char unit[] = "bytes=";
    *count = 0;
    while (len > 0 && is_ows(hdr[0])) { hdr++; len--; }
    while (len > 0 && is_ows(hdr[len - 1])) len--;
    if (len < 6)
        return RANGE_NONE;
    for (size_t i = 0; i < 6; i++) {
        char c = hdr[i];
        if ((c >= 'A' && c <= 'Z' ? (char)(c | 0x20) : c) != unit[i])
            return RANGE_NONE;
    }

    unsigned specs = 0, satisfiable = 0;
    int empty_suffix_selected = 0;
    uint64_t total = 0;
    size_t pos = 6;
    for (;;) {
        size_t end = pos;
        while (end < len && hdr[end] != ',')
            end++;
        const char *e = hdr + pos;
        size_t n = end - pos;
        while (n > 0 && is_ows(e[0])) { e++; n--; }
        while (n > 0 && is_ows(e[n - 1])) n--;

        if (n > 0) { /* empty list elements are allowed (RFC 9110 §5.6.1) */
            if (++specs > max_ranges)
                goto none;
            uint64_t first, last;
            int ok;
            if (e[0] == '-') {
                uint64_t suffix;
                size_t d = parse_uint(e + 1, n - 1, &suffix);
                if (d == 0 || d != n - 1)
                    goto none;
                ok = suffix > 0 && size > 0;
                if (suffix > 0 && size == 0)
                    empty_suffix_selected = 1;
                first = suffix >= size ? 0 : size - suffix;
                last = size - 1;
            } else {
                size_t d = parse_uint(e, n, &first);
                if (d == 0 || d >= n || e[d] != '-')
                    goto none;
                if (d + 1 == n) {
                    last = UINT64_MAX;
                } else {
                    size_t d2 = parse_uint(e + d + 1, n - d - 1, &last);
                    if (d2 != n - d - 1)
                        goto none;
                    if (last < first) /* invalid range-spec → whole field invalid (RFC 9110 §14.1.1) */
                        goto none;
                }
                ok = first < size;
                if (ok && last > size - 1)
                    last = size - 1;
            }
            if (ok) {
                uint64_t range_len = last - first + 1;
                if (satisfiable >= out_cap || range_len > size - total)
                    goto none;
                total += range_len;
                out[satisfiable].first = first;
                out[satisfiable].last = last;
                satisfiable++;
            }
        }
        if (end >= len)
            break;
        pos = end + 1;
    }
    if (specs == 0)
        goto none; /* "bytes=" or "bytes=,": range-set needs one range-spec */
    if (satisfiable == 0)
        return (size == 0 && empty_suffix_selected) ? RANGE_NONE : RANGE_UNSATISFIABLE;
    *count = satisfiable;
    return RANGE_OK;
none:
    return RANGE_NONE;
}

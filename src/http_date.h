/* http_date.h — HTTP-date (RFC 9110 §5.6.7) formatting and parsing, UTC only, locale- and
 * TZ-independent, thread-free. Pure: no I/O, no allocation. */
#ifndef COWD_HTTP_DATE_H
#define COWD_HTTP_DATE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define HTTP_DATE_LEN 29 /* "Sun, 06 Nov 1994 08:49:37 GMT" */

/* Writes the IMF-fixdate for t plus a NUL into out; returns 29, or 0 (out = "") if t falls
 * outside years 0001..9999, which IMF-fixdate cannot express. */
size_t http_date_format(time_t t, char out[30]);

/* Accepts IMF-fixdate, RFC 850 and asctime formats exactly as RFC 9110 §5.6.7 spells them
 * (case-sensitive names, "GMT", single spaces). Returns 0 and sets *out, or -1 if invalid.
 * RFC 850's two-digit year: 70-99 → 19xx, 00-69 → 20xx (fixed pivot; see http_date_parse_at
 * for the RFC's 50-year rule relative to a clock). */
int http_date_parse(const char *s, size_t len, time_t *out);

/* Same, but a two-digit year is the latest year with those digits that puts the timestamp at
 * most 50 years after now (RFC 9110 §5.6.7): late in a century, it may be the next one's. */
int http_date_parse_at(const char *s, size_t len, time_t now, time_t *out);

#define HTTP_DATE_MIN_SECS INT64_C(-62135596800) /* 0001-01-01 00:00:00 GMT */

/* The Last-Modified of a file modified at mtime, in a response dated now: a modification time
 * in the future is replaced by now (RFC 9110 §8.8.2.1), one before year 1 (tmpfs and btrfs
 * keep any, a tar archive may carry one) by the earliest HTTP-date, so that the field is
 * never left empty. */
static inline time_t http_last_modified(time_t mtime, time_t now)
{
    int64_t m = mtime > now ? (int64_t)now : (int64_t)mtime;
    return (time_t)(m < HTTP_DATE_MIN_SECS ? HTTP_DATE_MIN_SECS : m);
}

#endif

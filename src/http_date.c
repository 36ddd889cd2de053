/* http_date.c — owns converting between time_t and HTTP-date text. Civil-date arithmetic is
 * done here (Howard Hinnant's days_from_civil / civil_from_days) instead of gmtime_r/timegm so it
 * needs no TZ state, no locale and no locks, and handles the whole proleptic Gregorian range
 * IMF-fixdate can express. No I/O, no malloc. */

#include "http_date.h"

#include <stdint.h>
#include <string.h>

static const char day_names[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
static const char *const day_names_long[7] = { "Sunday", "Monday", "Tuesday", "Wednesday",
                                               "Thursday", "Friday", "Saturday" };
static const char month_names[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

#define SECONDS_PER_DAY INT64_C(86400)
/* days_from_civil(1, 1, 1) and days_from_civil(9999, 12, 31) + 1 */
#define MIN_DAY INT64_C(-719162)
#define END_DAY INT64_C(2932897)

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && ((a < 0) != (b < 0))); }

/* Days since 1970-01-01 of the given proleptic Gregorian date (month 1..12). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static void put2(char *p, unsigned v) { p[0] = (char)('0' + v / 10); p[1] = (char)('0' + v % 10); }

size_t http_date_format(time_t t, char out[30])
{
    int64_t secs = (int64_t)t;
    int64_t days = floor_div(secs, SECONDS_PER_DAY);
    if (days < MIN_DAY || days >= END_DAY) {
        out[0] = '\0';
        return 0;
    }
    int64_t sod = secs - days * SECONDS_PER_DAY;
    int64_t year;
    unsigned month, mday;
    civil_from_days(days, &year, &month, &mday);
    unsigned wday = (unsigned)(days + 4 - floor_div(days + 4, 7) * 7); /* 1970-01-01 was a Thursday */

    memcpy(out, day_names[wday], 3);
    out[3] = ',';
    out[4] = ' ';
    put2(out + 5, mday);
    out[7] = ' ';
    memcpy(out + 8, month_names[month - 1], 3);
    out[11] = ' ';
    put2(out + 12, (unsigned)(year / 100));
    put2(out + 14, (unsigned)(year % 100));
    out[16] = ' ';
    put2(out + 17, (unsigned)(sod / 3600));
    out[19] = ':';
    put2(out + 20, (unsigned)(sod / 60 % 60));
    out[22] = ':';
    put2(out + 23, (unsigned)(sod % 60));
    memcpy(out + 25, " GMT", 5); /* includes the NUL */
    return HTTP_DATE_LEN;
}

static int digits(const char *p, size_t n, unsigned *v)
{
    unsigned r = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        r = r * 10 + (unsigned)(p[i] - '0');
    }
    *v = r;
    return 0;
}

static int month_from_name(const char *p)
{
    for (int m = 0; m < 12; m++)
        if (memcmp(p, month_names[m], 3) == 0)
            return m + 1;
    return 0;
}

static int short_day_name(const char *p)
{
    for (int d = 0; d < 7; d++)
        if (memcmp(p, day_names[d], 3) == 0)
            return 1;
    return 0;
}

/* "HH:MM:SS" */
static int parse_time_of_day(const char *p, unsigned *h, unsigned *mi, unsigned *s)
{
    if (p[2] != ':' || p[5] != ':' || digits(p, 2, h) || digits(p + 3, 2, mi) || digits(p + 6, 2, s))
        return -1;
    /* second 60 is allowed for leap seconds (RFC 9110 §5.6.7); it maps onto the next second. */
    return (*h > 23 || *mi > 59 || *s > 60) ? -1 : 0;
}

static int is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int to_time(int64_t year, unsigned month, unsigned mday, unsigned h, unsigned mi, unsigned s,
                   time_t *out)
{
    static const unsigned char month_days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    if (month < 1 || month > 12 || mday < 1 || year < 1 || year > 9999)
        return -1;
    unsigned dim = month_days[month - 1] + (month == 2 && is_leap(year));
    if (mday > dim)
        return -1;
    int64_t t = days_from_civil(year, month, mday) * SECONDS_PER_DAY + (int64_t)h * 3600 + mi * 60 + s;
    /* Refuse rather than wrap where time_t is narrower than 64 bits. */
    if ((int64_t)(time_t)t != t)
        return -1;
    *out = (time_t)t;
    return 0;
}

/* Whether date 1 comes after date 2, each a year, month, day and second of
 * the day (compared as they stand, so "now + 50 years" need not be a date). */
static int later_than(int64_t y1, unsigned m1, unsigned d1, int64_t s1,
                      int64_t y2, unsigned m2, unsigned d2, int64_t s2)
{
    if (y1 != y2)
        return y1 > y2;
    if (m1 != m2)
        return m1 > m2;
    if (d1 != d2)
        return d1 > d2;
    return s1 > s2;
}

/* The weekday name is checked for being a valid name but not against the date: like nginx and
 * Apache we trust the numeric date, since a mismatch changes nothing we can act on. */
static int parse_any(const char *s, size_t len, int have_now, time_t now, time_t *out)
{
    unsigned mday, year4, h, mi, sec;
    int month;

    /* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
    if (len == 29 && s[3] == ',') {
        if (!short_day_name(s) || s[4] != ' ' || digits(s + 5, 2, &mday) || s[7] != ' ' ||
            !(month = month_from_name(s + 8)) || s[11] != ' ' || digits(s + 12, 4, &year4) || s[16] != ' ' ||
            parse_time_of_day(s + 17, &h, &mi, &sec) || memcmp(s + 25, " GMT", 4) != 0)
            return -1;
        return to_time(year4, (unsigned)month, mday, h, mi, sec, out);
    }

    /* asctime: "Sun Nov  6 08:49:37 1994" (day is 2DIGIT or SP DIGIT) */
    if (len == 24 && s[3] == ' ') {
        if (!short_day_name(s) || !(month = month_from_name(s + 4)) || s[7] != ' ')
            return -1;
        if (s[8] == ' ') {
            if (digits(s + 9, 1, &mday))
                return -1;
        } else if (digits(s + 8, 2, &mday)) {
            return -1;
        }
        if (s[10] != ' ' || parse_time_of_day(s + 11, &h, &mi, &sec) || s[19] != ' ' || digits(s + 20, 4, &year4))
            return -1;
        return to_time(year4, (unsigned)month, mday, h, mi, sec, out);
    }

    /* RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT" */
    for (int d = 0; d < 7; d++) {
        size_t n = strlen(day_names_long[d]);
        if (len != n + 24 || memcmp(s, day_names_long[d], n) != 0)
            continue;
        const char *p = s + n;
        unsigned yy;
        if (p[0] != ',' || p[1] != ' ' || digits(p + 2, 2, &mday) || p[4] != '-' ||
            !(month = month_from_name(p + 5)) || p[8] != '-' || digits(p + 9, 2, &yy) || p[11] != ' ' ||
            parse_time_of_day(p + 12, &h, &mi, &sec) || memcmp(p + 20, " GMT", 4) != 0)
            return -1;
        int64_t year;
        if (have_now) {
            int64_t now_year;
            unsigned nm, nd;
            int64_t now_days = floor_div((int64_t)now, SECONDS_PER_DAY);
            civil_from_days(now_days, &now_year, &nm, &nd);
            /* the latest year with those digits that puts the timestamp
             * (not just its year) at most 50 years ahead (RFC 9110 5.6.7):
             * next century's late in this one */
            year = now_year - now_year % 100 + yy + 100;
            while (later_than(year, (unsigned)month, mday, h * 3600 + mi * 60 + sec,
                              now_year + 50, nm, nd, (int64_t)now - now_days * SECONDS_PER_DAY))
                year -= 100;
            /* 29 Feb 00: 2100 has none, 2000 had */
            if (month == 2 && mday == 29 && !is_leap(year) && is_leap(year - 100))
                year -= 100;
        } else {
            year = yy >= 70 ? 1900 + yy : 2000 + yy;
        }
        return to_time(year, (unsigned)month, mday, h, mi, sec, out);
    }
    return -1;
}

int http_date_parse(const char *s, size_t len, time_t *out)
{
    return parse_any(s, len, 0, 0, out);
}

int http_date_parse_at(const char *s, size_t len, time_t now, time_t *out)
{
    return parse_any(s, len, 1, now, out);
}

/* date_cache.c: the current time as an HTTP date, rebuilt only when the
 * second changes (time(2) is a vDSO call on Linux: no system call). */
#include "date_cache.h"

#include "http_date.h"

static time_t cached_second = -1;
static char cached_text[32];

const char *date_cache_now(void)
{
    time_t now = time(NULL);
    if (now != cached_second) {
        http_date_format(now, cached_text);
        cached_second = now;
    }
    return cached_text;
}

time_t date_cache_time(void)
{
    (void)date_cache_now();
    return cached_second;
}

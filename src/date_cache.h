/* date_cache.h: the Date header value, formatted at most once a second. */
#ifndef COWD_DATE_CACHE_H
#define COWD_DATE_CACHE_H

#include <time.h>

/* IMF-fixdate for now, e.g. "Sun, 06 Nov 1994 08:49:37 GMT" (29 chars). */
const char *date_cache_now(void);
time_t date_cache_time(void);

#endif

/* filecache.h: the JAWS-style cached virtual filesystem: request path ->
 * open descriptor, metadata, validators, MIME type, the pre-computed header
 * block of a 200 response and, for small files, the contents in memory. */
#ifndef COWD_FILECACHE_H
#define COWD_FILECACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

struct fc_entry {
    int fd;                     /* open file, O_RDONLY; -1 when data holds it all */
    uint64_t size;
    struct timespec mtime;
    const char *data;           /* whole contents, or NULL: send from fd */
    const char *type;           /* MIME type */
    char etag[64];
    size_t etag_len;
    time_t last_modified_time;  /* mtime, or when cached if that was earlier (http_last_modified) */
    char last_modified[32];
    const char *headers;        /* Content-Type .. Accept-Ranges lines, CRLF each */
    size_t headers_len;
    const char *name;           /* the file's path (for logs), NUL-terminated */

    /* private */
    char *key;
    size_t key_len;
    char *rel;                  /* path under the root that is stat()ed to revalidate */
    dev_t dev;
    ino_t ino;
    struct timespec ctime;
    mode_t mode;
    time_t checked;             /* last revalidation */
    int racy;                   /* data copied within FC_RACY_SECS of a change (below) */
    unsigned refs;
    int dead;                   /* unlinked from the table, freed when refs drops to 0 */
    size_t mem;                 /* bytes accounted against the cache size */
    struct fc_entry *hnext;     /* hash chain */
    struct fc_entry *prev, *next;   /* LRU list, most recent first */
};

/* Did the file change so lately that a write may still be under way, or
 * have run while it was read?  Its bytes may then be torn, and its tag
 * (inode, change time, size) or date the same as the finished file's: such
 * a reply must carry no validator, or a client holding it would be told 304
 * for good.  Times are read at whole seconds (now, and a coarse file
 * system's), hence 2 s: 2 to 3 s after the change.  A change time further
 * ahead of the clock than that is a clock stepped back (or another host's
 * on a network file system), not a write: taken for one, every file changed
 * since the clock's old time would go without validators, and its copy be
 * read every second, until the clock caught up.  filecache_settled(): the
 * entry is not such a file, and its copy was not taken as one.  Inline: on
 * every cache hit. */
#define FC_RACY_SECS 2
static inline int filecache_changed_lately(const struct timespec *ctime, time_t now)
{
    return ctime->tv_sec >= now - FC_RACY_SECS && ctime->tv_sec <= now + FC_RACY_SECS;
}

static inline int filecache_settled(const struct fc_entry *e, time_t now)
{
    return !e->racy && !filecache_changed_lately(&e->ctime, now);
}

struct filecache_stats { unsigned entries; size_t bytes; unsigned long hits, misses, stale, evictions; };

/* entries: cap on cached files (0 disables the cache); bytes: cap on the
 * memory for contents and headers; validate: seconds between revalidations
 * of an entry (0: every use); memory_below: files smaller than this are kept
 * in memory (the others are sent with sendfile: it is --sendfile-min);
 * max_fds: cap on entries that keep a descriptor open (those too large for
 * memory).  root_fd: the document root, for revalidation stat()s. */
int filecache_init(int root_fd, unsigned entries, size_t bytes, unsigned validate,
                   size_t memory_below, unsigned max_fds);

/* A fresh entry for key (a normalized request path), with a reference the
 * caller must give back with filecache_release(); NULL if there is none or
 * the file changed on disk (then the stale entry is dropped). */
struct fc_entry *filecache_get(const char *key, size_t key_len, time_t now);

/* Adds the file open as fd, found at rel under the root, for request path
 * key.  Returns a referenced entry that now owns fd (and may have closed it,
 * having the contents in memory), or NULL if it could not be cached (then fd
 * is still the caller's).  A file found changed since *st was taken, as it
 * was being read in, is not cached, and *st is brought up to date. */
struct fc_entry *filecache_put(const char *key, size_t key_len, const char *rel, int fd,
                               struct stat *st, const char *type, time_t now);

void filecache_release(struct fc_entry *e);
/* Revalidates the unused entries that hold a descriptor and are due, and
 * drops those whose file changed or was deleted: a deleted file's blocks stay
 * allocated while it is open.  Called about once a second. */
void filecache_sweep(time_t now);
/* Out of descriptors: evicts up to n unused entries that hold one, least
 * recently used first; returns how many descriptors it closed. */
unsigned filecache_shed_fds(unsigned n);
/* The file proved shorter than e says (changed within --cache-validate): drop
 * e now, so that the next request opens the file afresh.  e stays the caller's
 * until released. */
void filecache_forget(struct fc_entry *e);
/* The document root was switched (a new release): drops every entry, since
 * each was opened and is revalidated beneath the old root, and revalidates
 * beneath root_fd from now on.  Entries being sent from are freed when
 * released. */
void filecache_reroot(int root_fd);
void filecache_stats(struct filecache_stats *st);
/* Builds the strong ETag for st into out (NUL-terminated), returns length. */
size_t filecache_make_etag(char out[64], const struct stat *st);

#endif

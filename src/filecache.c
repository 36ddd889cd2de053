/* filecache.c: bounded LRU cache of open files and their response metadata.
 *
 * Small files are copied into memory rather than mmap()ed: a file that
 * another process truncates under an mmap makes the next access SIGBUS the
 * whole worker.  A copy is a consistent snapshot whose Content-Length is
 * always true; revalidation (one stat per entry per `validate` seconds)
 * replaces it when the file changes.  Large files are sent from the cached
 * descriptor with sendfile; if one shrinks mid-send the connection is closed
 * rather than padded.  Entries in use by a sending thread are refcounted, so
 * eviction never closes a descriptor or frees memory under a sender.
 * Allocation happens only on a miss; a hit allocates nothing.
 *
 * Both stats around a copy agree even when a write ran during it: Linux
 * sets a write's times before it copies the data, and a read does not wait
 * for a writer.  A copy taken within FC_RACY_SECS of the file's last change
 * may thus be torn (git's "racy" entries); it is served, checked every
 * second whatever --cache-validate says, and read again once the change is
 * more than FC_RACY_SECS old. */
#include "filecache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_date.h"
#include "io.h"
#include "log.h"

static struct {
    int root_fd;
    unsigned max_entries;
    size_t max_bytes;
    unsigned validate;
    size_t memory_below;        /* smaller files are kept in memory: --sendfile-min */
    unsigned max_fds;           /* entries that may hold a descriptor open */
    unsigned fds;
    struct fc_entry **buckets;
    size_t n_buckets;           /* power of two */
    struct fc_entry *head, *tail;
    unsigned entries;
    size_t bytes;
    unsigned long hits, misses, stale, evictions;
} fc;

static uint64_t hash_key(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL;    /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

int filecache_init(int root_fd, unsigned entries, size_t bytes, unsigned validate,
                   size_t memory_below, unsigned max_fds)
{
    memset(&fc, 0, sizeof fc);
    fc.root_fd = root_fd;
    fc.max_entries = entries;
    fc.max_fds = max_fds;
    fc.max_bytes = bytes;
    fc.validate = validate;
    fc.memory_below = memory_below;
    if (entries == 0)
        return 0;
    fc.n_buckets = 16;
    while (fc.n_buckets < (size_t)entries * 2)
        fc.n_buckets <<= 1;
    fc.buckets = calloc(fc.n_buckets, sizeof *fc.buckets);
    return fc.buckets != NULL ? 0 : -1;
}

static void lru_unlink(struct fc_entry *e)
{
    if (e->prev != NULL) e->prev->next = e->next; else fc.head = e->next;
    if (e->next != NULL) e->next->prev = e->prev; else fc.tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push_front(struct fc_entry *e)
{
    e->prev = NULL;
    e->next = fc.head;
    if (fc.head != NULL)
        fc.head->prev = e;
    fc.head = e;
    if (fc.tail == NULL)
        fc.tail = e;
}

static void entry_free(struct fc_entry *e)
{
    if (e->fd >= 0)
        close(e->fd);
    free((void *)e->data);
    free((void *)e->headers);
    free(e->key);
    free(e->rel);
    free(e);
}

/* Takes e out of the table; it is freed once nobody sends from it. */
static void entry_drop(struct fc_entry *e)
{
    struct fc_entry **pp = &fc.buckets[hash_key(e->key, e->key_len) & (fc.n_buckets - 1)];
    while (*pp != NULL && *pp != e)
        pp = &(*pp)->hnext;
    if (*pp == e)
        *pp = e->hnext;
    lru_unlink(e);
    fc.entries--;
    fc.bytes -= e->mem;
    if (e->fd >= 0)
        fc.fds--;
    e->dead = 1;
    if (e->refs == 0)
        entry_free(e);
}

static int full(size_t need)
{
    return fc.entries >= fc.max_entries || fc.bytes + need > fc.max_bytes;
}

/* Could evicting entries not in use make `need` more bytes, one more entry
 * and (holds_fd) one more descriptor fit?  Counts from the least recently
 * used end, without evicting, and stops as soon as they would. */
static int room_possible(size_t need, int holds_fd)
{
    size_t bytes = fc.bytes;
    unsigned entries = fc.entries, fds = fc.fds;
    for (struct fc_entry *e = fc.tail;; e = e->prev) {
        if (entries < fc.max_entries && bytes + need <= fc.max_bytes &&
            (!holds_fd || fds < fc.max_fds))
            return 1;
        if (e == NULL)
            return 0;
        if (e->refs == 0) {
            bytes -= e->mem;
            entries--;
            if (e->fd >= 0)
                fds--;
        }
    }
}

/* Evicts least recently used entries until `need` more bytes and one more
 * entry fit, and, if the new entry keeps its descriptor, one more of those.
 * Entries being sent from are skipped; when those alone keep the cache
 * full, nothing is evicted (a slow reader holding a big entry would else
 * empty the cache at every miss and still not make room). */
static int make_room(size_t need, int holds_fd)
{
    if (!room_possible(need, holds_fd))
        return -1;
    struct fc_entry *e = fc.tail;
    while (e != NULL && (full(need) || (holds_fd && fc.fds >= fc.max_fds))) {
        struct fc_entry *prev = e->prev;
        if (e->refs == 0 && (full(need) || e->fd >= 0)) {
            entry_drop(e);
            fc.evictions++;
        }
        e = prev;
    }
    return full(need) || (holds_fd && fc.fds >= fc.max_fds) ? -1 : 0;
}

unsigned filecache_shed_fds(unsigned n)
{
    unsigned closed = 0;
    struct fc_entry *e = fc.tail;
    while (e != NULL && closed < n) {
        struct fc_entry *prev = e->prev;
        if (e->refs == 0 && e->fd >= 0) {
            entry_drop(e);          /* unreferenced: freed, descriptor closed */
            fc.evictions++;
            closed++;
        }
        e = prev;
    }
    return closed;
}

static int same_file(const struct fc_entry *e, const struct stat *st)
{
    /* ctime and mode too: a chmod that takes away read permission must stop
     * the cache from serving what an open() would now refuse */
    return e->dev == st->st_dev && e->ino == st->st_ino && e->size == (uint64_t)st->st_size &&
           e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec &&
           e->ctime.tv_sec == st->st_ctim.tv_sec && e->ctime.tv_nsec == st->st_ctim.tv_nsec &&
           e->mode == st->st_mode;
}

/* Is e due for a stat?  A clock stepped back (NTP, an operator) leaves
 * e->checked in the future; without the first test no entry would be
 * checked again until the clock caught up, whatever --cache-validate says. */
static int revalidation_due(const struct fc_entry *e, time_t now)
{
    time_t every = e->racy && fc.validate > 1 ? 1 : (time_t)fc.validate;
    return now < e->checked || now - e->checked >= every;
}

struct fc_entry *filecache_get(const char *key, size_t key_len, time_t now)
{
    if (fc.max_entries == 0)
        return NULL;
    struct fc_entry *e = fc.buckets[hash_key(key, key_len) & (fc.n_buckets - 1)];
    while (e != NULL && (e->key_len != key_len || memcmp(e->key, key, key_len) != 0))
        e = e->hnext;
    if (e == NULL) {
        fc.misses++;
        return NULL;
    }
    if (revalidation_due(e, now)) {
        struct stat st;
        /* stat the path, not the descriptor: a file replaced by rename()
         * keeps the old inode alive behind our descriptor */
        if (fstatat(fc.root_fd, e->rel, &st, 0) < 0 || !same_file(e, &st) ||
            (e->racy && !filecache_changed_lately(&e->ctime, now))) {
            fc.stale++;         /* changed, or a copy that may be torn: read again */
            entry_drop(e);
            return NULL;
        }
        e->checked = now;
    }
    fc.hits++;
    if (fc.head != e) {
        lru_unlink(e);
        lru_push_front(e);
    }
    e->refs++;
    return e;
}

void filecache_sweep(time_t now)
{
    for (struct fc_entry *e = fc.tail, *prev; e != NULL; e = prev) {
        prev = e->prev;
        if (e->fd < 0 || e->refs != 0 || !revalidation_due(e, now))
            continue;
        struct stat st;
        if (fstatat(fc.root_fd, e->rel, &st, 0) < 0 || !same_file(e, &st)) {
            fc.stale++;
            entry_drop(e);
        } else {
            e->checked = now;
        }
    }
}

size_t filecache_make_etag(char out[64], const struct stat *st)
{
    /* strong: inode, change time to the nanosecond and size.  Not the
     * modification time (nginx's and lighttpd's choice): a program may set
     * that back (cp -p, tar, unzip, a reproducible build's
     * SOURCE_DATE_EPOCH), so a file rewritten in place with the same size
     * and time kept its tag and revalidations got 304 with the old content;
     * the change time no program can set (RFC 9110 §8.8.1: a strong tag
     * changes with the content).  The inode tells a new file that took a
     * freed one's times.  A chmod or a hard link also changes it: one full
     * reply per client, not a wrong 304.  Hosts serving copies of a file
     * give it different tags: their caches revalidate with a full reply. */
    int n = snprintf(out, 64, "\"%llx-%llx.%lx-%llx\"", (unsigned long long)st->st_ino,
                     (unsigned long long)st->st_ctim.tv_sec, (unsigned long)st->st_ctim.tv_nsec,
                     (unsigned long long)st->st_size);
    return n > 0 && n < 64 ? (size_t)n : 0;
}

static char *read_whole(int fd, size_t size)
{
    char *buf = io_send_buffer_alloc(size);
    size_t got = 0;
    while (buf != NULL && got < size) {
        ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(buf);
            return NULL;
        }
        got += (size_t)n;
    }
    return buf;
}

struct fc_entry *filecache_put(const char *key, size_t key_len, const char *rel, int fd,
                               struct stat *st, const char *type, time_t now)
{
    if (fc.max_entries == 0)
        return NULL;
    struct fc_entry *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    e->fd = fd;
    e->size = (uint64_t)st->st_size;
    e->mtime = st->st_mtim;
    e->ctime = st->st_ctim;
    e->mode = st->st_mode;
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->type = type;
    e->checked = now;
    e->etag_len = filecache_make_etag(e->etag, st);
    e->last_modified_time = http_last_modified(st->st_mtim.tv_sec, now);
    http_date_format(e->last_modified_time, e->last_modified);

    char hdr[512];
    int hl = snprintf(hdr, sizeof hdr,
                      "Content-Type: %s\r\nContent-Length: %llu\r\nLast-Modified: %s\r\n"
                      "ETag: %s\r\nAccept-Ranges: bytes\r\n",
                      type, (unsigned long long)e->size, e->last_modified, e->etag);
    e->key = malloc(key_len + 1);
    e->rel = strdup(rel);
    if (hl <= 0 || (size_t)hl >= sizeof hdr || e->key == NULL || e->rel == NULL ||
        (e->headers = malloc((size_t)hl)) == NULL) {
        e->fd = -1;             /* stays the caller's */
        entry_free(e);
        return NULL;
    }
    memcpy((char *)e->headers, hdr, (size_t)hl);
    e->headers_len = (size_t)hl;
    memcpy(e->key, key, key_len);
    e->key[key_len] = '\0';
    e->key_len = key_len;
    e->name = e->rel;
    e->mem = key_len + strlen(rel) + (size_t)hl + sizeof *e;

    /* replace an older entry for the same key (first: its room counts) */
    struct fc_entry *old = fc.buckets[hash_key(key, key_len) & (fc.n_buckets - 1)];
    while (old != NULL && (old->key_len != key_len || memcmp(old->key, key, key_len) != 0))
        old = old->hnext;
    if (old != NULL)
        entry_drop(old);

    /* a copy that could not fit beside the entries in use is not read */
    if (e->size < fc.memory_below && e->size + e->mem <= fc.max_bytes &&
        room_possible(e->mem + (size_t)e->size, 0)) {
        char *data = read_whole(fd, (size_t)e->size);
        struct stat again;
        int looked = fstat(fd, &again) == 0;
        if (looked && !same_file(e, &again)) {
            /* changed since *st (a short read, too, means shrunk): neither
             * the copy nor the descriptor may be cached under st's size,
             * ETag and date, and the caller must not send by them either */
            free(data);
            *st = again;
            e->fd = -1;         /* stays the caller's */
            entry_free(e);
            return NULL;
        }
        if (data != NULL && looked) {
            e->data = data;
            e->mem += (size_t)e->size;
            e->racy = filecache_changed_lately(&again.st_ctim, now);
        } else {
            free(data);
        }
    }

    if (make_room(e->mem, e->data == NULL) < 0) {
        e->fd = -1;             /* everything cached is in use: serve uncached */
        entry_free(e);
        return NULL;
    }
    if (e->data != NULL) {
        /* served from memory from now on: the descriptor would only use up
         * the process's limit and pin the blocks of a file deleted later */
        close(fd);
        e->fd = -1;
    }
    size_t b = hash_key(key, key_len) & (fc.n_buckets - 1);
    e->hnext = fc.buckets[b];
    fc.buckets[b] = e;
    lru_push_front(e);
    fc.entries++;
    fc.bytes += e->mem;
    if (e->fd >= 0)
        fc.fds++;
    e->refs = 1;
    return e;
}

void filecache_forget(struct fc_entry *e)
{
    if (!e->dead) {
        fc.stale++;
        entry_drop(e);
    }
}

void filecache_release(struct fc_entry *e)
{
    if (e == NULL)
        return;
    if (--e->refs == 0 && e->dead)
        entry_free(e);
}

void filecache_reroot(int root_fd)
{
    while (fc.head != NULL)
        entry_drop(fc.head);
    fc.root_fd = root_fd;
}

void filecache_stats(struct filecache_stats *st)
{
    st->entries = fc.entries;
    st->bytes = fc.bytes;
    st->hits = fc.hits;
    st->misses = fc.misses;
    st->stale = fc.stale;
    st->evictions = fc.evictions;
}

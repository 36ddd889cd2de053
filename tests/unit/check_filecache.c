/* check_filecache.c: the file cache: hits, precomputed headers, in-memory
 * snapshots, revalidation after change/replace, LRU eviction by entries and
 * bytes, and entries in use surviving eviction. */
#include <check.h>

#include "check_run.h"
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "filecache.h"
#include "io.h"

static char dir[] = "/tmp/cowd-fc-XXXXXX";
static int root_fd;

/* The tests' clock: second x of a day that begins well after their files
 * were written, so that no copy counts as taken just after a change (the
 * racy-copy rule; copy_taken_just_after_a_change_is_read_again uses the
 * file's own time). */
static time_t clock_base;
#define T(x) (clock_base + (x))

static void write_file(const char *name, const char *content)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(content, f);
    fclose(f);
}

static struct fc_entry *put(const char *name, time_t now)
{
    int fd = openat(root_fd, name, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    char key[256];
    snprintf(key, sizeof key, "/%s", name);
    struct fc_entry *e = filecache_put(key, strlen(key), name, fd, &st, "text/plain", now);
    if (e == NULL)
        close(fd);
    return e;
}

static struct fc_entry *get(const char *name, time_t now)
{
    char key[256];
    snprintf(key, sizeof key, "/%s", name);
    return filecache_get(key, strlen(key), now);
}

static void setup(void)
{
    clock_base = time(NULL) + 1000;
    strcpy(dir, "/tmp/cowd-fc-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    root_fd = open(dir, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(root_fd, 0);
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    close(root_fd);
}

START_TEST(hit_returns_snapshot_and_headers)
{
    ck_assert_int_eq(filecache_init(root_fd, 16, 1 << 20, 1, 4096, 16), 0);
    write_file("a.txt", "hello world");
    ck_assert_ptr_null(get("a.txt", T(100)));
    struct fc_entry *e = put("a.txt", T(100));
    ck_assert_ptr_nonnull(e);
    filecache_release(e);
    e = get("a.txt", T(100));
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->size, 11);
    ck_assert_ptr_nonnull(e->data);
    ck_assert_int_eq(memcmp(e->data, "hello world", 11), 0);
    char expect[512];
    snprintf(expect, sizeof expect,
             "Content-Type: text/plain\r\nContent-Length: 11\r\nLast-Modified: %s\r\n"
             "ETag: %s\r\nAccept-Ranges: bytes\r\n", e->last_modified, e->etag);
    ck_assert_uint_eq(e->headers_len, strlen(expect));
    ck_assert_int_eq(memcmp(e->headers, expect, e->headers_len), 0);
    ck_assert_int_eq(e->etag[0], '"');
    ck_assert_int_eq(strlen(e->last_modified), 29);
    filecache_release(e);
    struct filecache_stats st;
    filecache_stats(&st);
    ck_assert_uint_eq(st.hits, 1);
    ck_assert_uint_eq(st.misses, 1);
    ck_assert_uint_eq(st.entries, 1);
}
END_TEST

/* The kernel copies cached bodies into sockets; from malloc's 16-byte
 * alignment that copy ran at half speed (io.h, IO_SEND_ALIGN). */
START_TEST(in_memory_bodies_are_aligned_for_the_socket_copy)
{
    ck_assert_int_eq(filecache_init(root_fd, 16, 1 << 20, 1, 32768, 16), 0);
    static const size_t sizes[] = { 1, 17, 500, 2048, 5000, 12500 };
    static char body[12500 + 1];
    memset(body, 'x', 12500);
    char name[32];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        snprintf(name, sizeof name, "f%zu", sizes[i]);
        write_file(name, body + 12500 - sizes[i]);     /* the last sizes[i] bytes */
        struct fc_entry *e = put(name, T(100));
        ck_assert_ptr_nonnull(e);
        ck_assert_uint_eq(e->size, sizes[i]);
        ck_assert_ptr_nonnull(e->data);
        ck_assert_uint_eq((uintptr_t)e->data % IO_SEND_ALIGN, 0);
        filecache_release(e);
    }
}
END_TEST

START_TEST(big_file_is_sent_from_descriptor)
{
    ck_assert_int_eq(filecache_init(root_fd, 16, 1 << 20, 1, 4, 16), 0);
    write_file("big.txt", "0123456789");
    struct fc_entry *e = put("big.txt", T(100));
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_null(e->data);
    ck_assert_int_ge(e->fd, 0);
    char buf[10];
    ck_assert_int_eq(pread(e->fd, buf, 10, 0), 10);
    filecache_release(e);
}
END_TEST

START_TEST(changed_file_is_noticed_after_validate_interval)
{
    ck_assert_int_eq(filecache_init(root_fd, 16, 1 << 20, 5, 4096, 16), 0);
    write_file("c.txt", "short");
    filecache_release(put("c.txt", T(100)));
    write_file("c.txt", "a much longer content");
    struct fc_entry *e = get("c.txt", T(103));        /* within 5 s: old snapshot */
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->size, 5);
    ck_assert_int_eq(memcmp(e->data, "short", 5), 0);  /* consistent with its length */
    filecache_release(e);
    ck_assert_ptr_null(get("c.txt", T(105)));         /* revalidated: stale, dropped */
    struct filecache_stats st;
    filecache_stats(&st);
    ck_assert_uint_eq(st.stale, 1);
    ck_assert_uint_eq(st.entries, 0);
    e = put("c.txt", T(105));
    ck_assert_uint_eq(e->size, 21);
    filecache_release(e);
}
END_TEST

START_TEST(replaced_file_is_noticed_even_with_same_size_and_time)
{
    ck_assert_int_eq(filecache_init(root_fd, 16, 1 << 20, 0, 4096, 16), 0);
    write_file("r.txt", "AAAA");
    filecache_release(put("r.txt", T(100)));
    write_file("r.tmp", "BBBB");
    char from[300], to[300];
    snprintf(from, sizeof from, "%s/r.tmp", dir);
    snprintf(to, sizeof to, "%s/r.txt", dir);
    struct stat st;
    stat(to, &st);
    struct timespec times[2] = { st.st_atim, st.st_mtim };
    utimensat(AT_FDCWD, from, times, 0);           /* same size, same mtime */
    ck_assert_int_eq(rename(from, to), 0);         /* but a new inode */
    ck_assert_ptr_null(get("r.txt", T(100)));
}
END_TEST

START_TEST(deleted_file_is_dropped)
{
    ck_assert_int_eq(filecache_init(root_fd, 16, 1 << 20, 0, 4096, 16), 0);
    write_file("d.txt", "x");
    filecache_release(put("d.txt", T(100)));
    char p[300];
    snprintf(p, sizeof p, "%s/d.txt", dir);
    unlink(p);
    ck_assert_ptr_null(get("d.txt", T(100)));
}
END_TEST

START_TEST(lru_evicts_least_recently_used_entry)
{
    ck_assert_int_eq(filecache_init(root_fd, 2, 1 << 20, 100, 4096, 16), 0);
    write_file("a", "1");
    write_file("b", "2");
    write_file("c", "3");
    filecache_release(put("a", T(100)));
    filecache_release(put("b", T(100)));
    filecache_release(get("a", T(100)));              /* a is now more recent than b */
    filecache_release(put("c", T(100)));
    ck_assert_ptr_null(get("b", T(100)));
    struct fc_entry *a = get("a", T(100)), *c = get("c", T(100));
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(c);
    filecache_release(a);
    filecache_release(c);
    struct filecache_stats st;
    filecache_stats(&st);
    ck_assert_uint_eq(st.evictions, 1);
    ck_assert_uint_eq(st.entries, 2);
}
END_TEST

START_TEST(byte_budget_is_respected)
{
    ck_assert_int_eq(filecache_init(root_fd, 100, 2000, 100, 4096, 16), 0);
    char content[901];
    memset(content, 'z', 900);
    content[900] = '\0';
    write_file("x1", content);
    write_file("x2", content);
    write_file("x3", content);
    filecache_release(put("x1", T(100)));
    filecache_release(put("x2", T(100)));
    filecache_release(put("x3", T(100)));
    struct filecache_stats st;
    filecache_stats(&st);
    ck_assert_uint_le(st.bytes, 2000);
    ck_assert_uint_lt(st.entries, 3);
    ck_assert_ptr_null(get("x1", T(100)));
}
END_TEST

START_TEST(entry_in_use_survives_eviction)
{
    ck_assert_int_eq(filecache_init(root_fd, 1, 1 << 20, 100, 4096, 16), 0);
    write_file("u1", "in use");
    write_file("u2", "other");
    struct fc_entry *e = put("u1", T(100));           /* reference held: a sender */
    struct fc_entry *f = put("u2", T(100));           /* no room: u1 is busy */
    ck_assert_ptr_null(f);
    ck_assert_int_eq(memcmp(e->data, "in use", 6), 0);
    filecache_release(e);
    f = put("u2", T(100));                            /* now u1 can go */
    ck_assert_ptr_nonnull(f);
    filecache_release(f);
    ck_assert_ptr_null(get("u1", T(100)));
}
END_TEST

/* Entries in use that alone keep the byte budget too full for a new copy:
 * the miss used to evict every other entry first, then fail anyway (a slow
 * reader of a big file emptied the cache at every miss of another). */
START_TEST(entries_in_use_keep_a_miss_from_emptying_the_cache)
{
    ck_assert_int_eq(filecache_init(root_fd, 100, 30000, 100, 32768, 16), 0);
    static char big[20001];
    memset(big, 'b', sizeof big - 1);
    write_file("big1", big);
    write_file("big2", big);
    write_file("s1", "one");
    write_file("s2", "two");
    write_file("s3", "three");
    struct fc_entry *held = put("big1", T(100));      /* a slow reader's */
    ck_assert_ptr_nonnull(held);
    ck_assert_ptr_nonnull(held->data);
    filecache_release(put("s1", T(100)));
    filecache_release(put("s2", T(100)));
    filecache_release(put("s3", T(100)));
    /* big2's copy cannot fit beside big1: kept by descriptor instead */
    struct fc_entry *e = put("big2", T(100));
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_null(e->data);
    ck_assert_int_ge(e->fd, 0);
    filecache_release(e);
    const char *small[] = { "s1", "s2", "s3" };
    for (int i = 0; i < 3; i++) {
        struct fc_entry *s = get(small[i], T(100));
        ck_assert_msg(s != NULL, "%s evicted for a copy that never fitted", small[i]);
        filecache_release(s);
    }
    struct filecache_stats st;
    filecache_stats(&st);
    ck_assert_uint_eq(st.evictions, 0);
    ck_assert_uint_le(st.bytes, 30000);
    filecache_release(held);
}
END_TEST

/* A file that changed after its stat, before it was read in (grown, or
 * shrunk: a short read), was cached by descriptor under the stale size,
 * ETag and date: a grown file's replies cut to the old length until the
 * next revalidation, a shrunk one's promised bytes it no longer has. */
START_TEST(file_changed_before_it_is_read_in_is_not_cached)
{
    ck_assert_int_eq(filecache_init(root_fd, 16, 1 << 20, 100, 4096, 16), 0);
    const char *now[] = { "0123456789abcde", "01234" };
    for (int i = 0; i < 2; i++) {
        write_file("g.txt", "0123456789");
        int fd = openat(root_fd, "g.txt", O_RDONLY);
        ck_assert_int_ge(fd, 0);
        struct stat st;
        ck_assert_int_eq(fstat(fd, &st), 0);
        write_file("g.txt", now[i]);               /* the same inode, rewritten */
        struct fc_entry *e = filecache_put("/g.txt", 6, "g.txt", fd, &st, "text/plain", T(100));
        ck_assert_msg(e == NULL, "a file that became %s cached as it was", now[i]);
        ck_assert_int_eq(st.st_size, (off_t)strlen(now[i]));     /* the caller sends by this */
        ck_assert_ptr_null(get("g.txt", T(100)));
        ck_assert_int_ne(fcntl(fd, F_GETFD), -1);   /* still the caller's */
        close(fd);
    }
}
END_TEST

static int open_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) != -1)
            n++;
    return n;
}

/* A file held in memory must not also hold a descriptor: with many small
 * files the cache would use up the process's limit and every uncached file
 * would then fail to open. */
START_TEST(in_memory_entries_hold_no_descriptor)
{
    ck_assert_int_eq(filecache_init(root_fd, 100, 1 << 20, 100, 4096, 16), 0);
    int before = open_fds();
    char name[16];
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof name, "s%d", i);
        write_file(name, "small");
        struct fc_entry *e = put(name, T(100));
        ck_assert_ptr_nonnull(e);
        ck_assert_int_eq(e->fd, -1);
        filecache_release(e);
    }
    ck_assert_int_eq(open_fds(), before);
    struct filecache_stats st;
    filecache_stats(&st);
    ck_assert_uint_eq(st.entries, 50);
    struct fc_entry *e = get("s7", T(100));
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(memcmp(e->data, "small", 5), 0);
    filecache_release(e);
}
END_TEST

/* --sendfile-min is "bodies of at least this size go with sendfile": a file
 * of exactly that size is not kept in memory (it was, up to 2026-12-02). */
START_TEST(file_of_exactly_sendfile_min_bytes_is_sent_from_descriptor)
{
    ck_assert_int_eq(filecache_init(root_fd, 16, 1 << 20, 1, 10, 16), 0);
    write_file("ten.txt", "0123456789");
    write_file("nine.txt", "012345678");
    struct fc_entry *e = put("ten.txt", T(100));
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->size, 10);
    ck_assert_ptr_null(e->data);
    ck_assert_int_ge(e->fd, 0);
    filecache_release(e);
    e = put("nine.txt", T(100));
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_nonnull(e->data);
    ck_assert_int_eq(memcmp(e->data, "012345678", 9), 0);
    filecache_release(e);
}
END_TEST

/* Entries sent from a descriptor are capped by max_fds, oldest out first,
 * and filecache_shed_fds gives descriptors back on demand. */
START_TEST(descriptor_holding_entries_are_capped)
{
    ck_assert_int_eq(filecache_init(root_fd, 100, 1 << 20, 100, 4, 3), 0);
    int before = open_fds();
    char name[16];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "b%d", i);
        write_file(name, "0123456789");
        struct fc_entry *e = put(name, T(100));
        ck_assert_ptr_nonnull(e);
        ck_assert_int_ge(e->fd, 0);
        filecache_release(e);
    }
    ck_assert_int_eq(open_fds(), before + 3);
    ck_assert_ptr_null(get("b0", T(100)));
    struct fc_entry *e = get("b9", T(100));
    ck_assert_ptr_nonnull(e);                      /* the newest stay */
    ck_assert_uint_eq(filecache_shed_fds(8), 2);    /* b9 is in use */
    ck_assert_int_eq(open_fds(), before + 1);
    filecache_release(e);
    ck_assert_uint_eq(filecache_shed_fds(8), 1);
    ck_assert_int_eq(open_fds(), before);
}
END_TEST

START_TEST(permission_change_is_noticed)
{
    ck_assert_int_eq(filecache_init(root_fd, 16, 1 << 20, 0, 4096, 16), 0);
    write_file("p.txt", "secret");
    filecache_release(put("p.txt", T(100)));
    ck_assert_int_eq(fchmodat(root_fd, "p.txt", 0, 0), 0);
    ck_assert_ptr_null(get("p.txt", T(100)));
}
END_TEST

/* A deleted file sent from a descriptor is let go by the sweep, without
 * anyone requesting it again: its blocks are freed. */
START_TEST(sweep_drops_deleted_files)
{
    ck_assert_int_eq(filecache_init(root_fd, 16, 1 << 20, 1, 4, 16), 0);
    write_file("gone", "0123456789");
    write_file("kept", "0123456789");
    filecache_release(put("gone", T(100)));
    filecache_release(put("kept", T(100)));
    int before = open_fds();
    ck_assert_int_eq(unlinkat(root_fd, "gone", 0), 0);
    filecache_sweep(T(100));                          /* not due yet */
    ck_assert_int_eq(open_fds(), before);
    filecache_sweep(T(101));
    ck_assert_int_eq(open_fds(), before - 1);
    struct fc_entry *e = get("kept", T(101));
    ck_assert_ptr_nonnull(e);
    filecache_release(e);
}
END_TEST

/* A copy taken just after a change may have been torn by a write still in
 * progress, the stats before and after it agreeing (Linux sets a write's
 * times before it copies the data): it was kept until the file changed
 * again.  Now it is checked every second and read again once the change
 * is FC_RACY_SECS + 1 seconds old. */
/* A cache of small files kept 60 s between checks, and name written in it
 * just now and cached at its change time *t: the entry. */
static struct fc_entry *put_just_written(const char *name, time_t *t)
{
    ck_assert_int_eq(filecache_init(root_fd, 16, 1 << 20, 60, 4096, 16), 0);
    write_file(name, "fresh");
    struct stat st;
    ck_assert_int_eq(fstatat(root_fd, name, &st, 0), 0);
    *t = st.st_ctim.tv_sec;
    struct fc_entry *e = put(name, *t);
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_nonnull(e->data);
    return e;
}

START_TEST(copy_taken_just_after_a_change_is_read_again)
{
    time_t t;
    struct fc_entry *e = put_just_written("n.txt", &t);
    filecache_release(e);
    e = get("n.txt", t + 2);                       /* checked (not --cache-validate's 60 s), kept */
    ck_assert_ptr_nonnull(e);
    filecache_release(e);
    ck_assert_ptr_null(get("n.txt", t + 3));       /* the change is old enough: read again */
    e = put("n.txt", t + 3);
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_nonnull(e->data);
    filecache_release(e);
    e = get("n.txt", t + 50);                      /* that copy is trusted: not due before 60 s */
    ck_assert_ptr_nonnull(e);
    filecache_release(e);
}
END_TEST

/* A reply must carry no validator while a write may be under way: the file
 * changed 2 s ago or less, or its copy was taken then (filecache.h).  A
 * change time far ahead of the clock (stepped back) is no such change. */
START_TEST(settled_once_the_change_is_three_seconds_old)
{
    time_t t;
    struct fc_entry *e = put_just_written("s.txt", &t);
    ck_assert_int_eq(filecache_settled(e, t), 0);
    ck_assert_int_eq(filecache_settled(e, t + 2), 0);
    ck_assert_int_eq(filecache_settled(e, t + 3), 0);  /* its copy was taken in the window */
    filecache_release(e);
    ck_assert_ptr_null(get("s.txt", t + 3));           /* so it is read again */
    e = put("s.txt", t + 3);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(filecache_settled(e, t + 3), 1);
    filecache_release(e);

    struct timespec ahead = { .tv_sec = t + 3600 };
    ck_assert_int_eq(filecache_changed_lately(&ahead, t), 0);          /* the clock stepped back */
    ck_assert_int_eq(filecache_changed_lately(&ahead, t + 3600 - 2), 1);
    ck_assert_int_eq(filecache_changed_lately(&ahead, t + 3600 + 2), 1);
    ck_assert_int_eq(filecache_changed_lately(&ahead, t + 3600 + 3), 0);
}
END_TEST

/* A wall clock stepped back once left every entry unchecked until it
 * caught up: now - checked was negative, never >= the interval. */
START_TEST(clock_stepped_back_still_revalidates)
{
    ck_assert_int_eq(filecache_init(root_fd, 16, 1 << 20, 5, 4, 16), 0);  /* both hold a descriptor */
    write_file("c.txt", "short");
    write_file("gone", "0123456789");
    filecache_release(put("c.txt", T(1000)));
    filecache_release(put("gone", T(1000)));
    write_file("c.txt", "a much longer content");
    ck_assert_int_eq(unlinkat(root_fd, "gone", 0), 0);
    int before = open_fds();
    ck_assert_ptr_null(get("c.txt", T(400)));         /* ten minutes back: the changed file is not served */
    ck_assert_int_eq(open_fds(), before - 1);
    filecache_sweep(T(400));                          /* and the deleted one's descriptor goes */
    ck_assert_int_eq(open_fds(), before - 2);
    struct fc_entry *e = put("c.txt", T(400));
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->size, 21);
    filecache_release(e);
    e = get("c.txt", T(402));                         /* and is checked normally from then on */
    ck_assert_ptr_nonnull(e);
    filecache_release(e);
}
END_TEST

START_TEST(disabled_cache_caches_nothing)
{
    ck_assert_int_eq(filecache_init(root_fd, 0, 1 << 20, 1, 4096, 16), 0);
    write_file("n", "n");
    ck_assert_ptr_null(put("n", T(100)));
    ck_assert_ptr_null(get("n", T(100)));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("filecache");
    TCase *tc = tcase_create("filecache");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, hit_returns_snapshot_and_headers);
    tcase_add_test(tc, in_memory_bodies_are_aligned_for_the_socket_copy);
    tcase_add_test(tc, big_file_is_sent_from_descriptor);
    tcase_add_test(tc, file_of_exactly_sendfile_min_bytes_is_sent_from_descriptor);
    tcase_add_test(tc, changed_file_is_noticed_after_validate_interval);
    tcase_add_test(tc, replaced_file_is_noticed_even_with_same_size_and_time);
    tcase_add_test(tc, deleted_file_is_dropped);
    tcase_add_test(tc, lru_evicts_least_recently_used_entry);
    tcase_add_test(tc, byte_budget_is_respected);
    tcase_add_test(tc, entry_in_use_survives_eviction);
    tcase_add_test(tc, clock_stepped_back_still_revalidates);
    tcase_add_test(tc, disabled_cache_caches_nothing);
    tcase_add_test(tc, in_memory_entries_hold_no_descriptor);
    tcase_add_test(tc, descriptor_holding_entries_are_capped);
    tcase_add_test(tc, permission_change_is_noticed);
    tcase_add_test(tc, sweep_drops_deleted_files);
    tcase_add_test(tc, entries_in_use_keep_a_miss_from_emptying_the_cache);
    tcase_add_test(tc, file_changed_before_it_is_read_in_is_not_cached);
    tcase_add_test(tc, copy_taken_just_after_a_change_is_read_again);
    tcase_add_test(tc, settled_once_the_change_is_three_seconds_old);
    suite_add_tcase(s, tc);
    return run_suite(s);
}

/* static_file.c: GET/HEAD of static files: path resolution confined to the
 * root, directories, validators and conditional requests, byte ranges
 * (single and multipart/byteranges), and sending the body. */
#include "static_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "autoconfig.h"
#include "conditional.h"
#include "date_cache.h"
#include "config.h"
#include "escape.h"
#include "filecache.h"
#include "http_date.h"
#include "log.h"
#include "mime.h"
#include "path.h"
#include "range.h"
#include "response.h"
#ifdef COWD_LISTING
#include "listing.h"
#endif
#ifdef HAVE_LINUX_OPENAT2_H
#include <linux/openat2.h>
#endif

/* Normalized paths this long or longer are served but never cached. */
#define CACHE_KEY_MAX PATH_MAX

static int root_fd = -1;
#if defined(O_PATH) && defined(__linux__)
#define HAVE_REOPEN_BY_FD 1
#include <sys/statfs.h>
#define PROC_FS_MAGIC 0x9fa0        /* linux/magic.h's PROC_SUPER_MAGIC */
/* This process's /proc/self/fd, or -1.  Through it a file opened O_PATH
 * (which does nothing to the file) is opened again for reading: the same
 * file, whatever its name now points to. */
static int proc_fd_dir = -1;

/* fd's name in proc_fd_dir */
#define FD_NAME_SIZE (3 * sizeof(int) + 1)
static const char *fd_name(int fd, char name[FD_NAME_SIZE])
{
    snprintf(name, FD_NAME_SIZE, "%d", fd);
    return name;
}
#endif
static char root_real[PATH_MAX];
static size_t root_real_len;
/* --root as this worker names it (inside the chroot, if any: the worker's
 * directory is then the chroot's "/"), and the directory root_fd is: a
 * deploy that switches a symlink to a new release makes them differ. */
static const char *root_name;
static dev_t root_dev;
static ino_t root_ino;
static int root_watched;            /* root_name can be looked up as the workers' user */
static time_t root_checked;
static struct log_repeat root_errors;   /* a new root that cannot be opened */
#if defined(HAVE_LINUX_OPENAT2_H) && defined(SYS_openat2)
static int have_openat2 = 1;
#endif

void static_file_open_fd_dir(int in_chroot)
{
#ifdef HAVE_REOPEN_BY_FD
    /* Opened inside the chroot, never before it: a directory descriptor
     * from outside is a way out of the jail (openat(fd, "../../..")), for
     * the whole life of the worker.  Before dropping privileges, which may
     * make /proc/self/fd the old user's.  The jail's /proc must be procfs:
     * a plain directory there would serve its files "5", "6"... */
    const char *why = NULL;
    struct statfs fs;
    proc_fd_dir = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (proc_fd_dir < 0)
        why = strerror(errno);
    else if (fstatfs(proc_fd_dir, &fs) < 0 || fs.f_type != PROC_FS_MAGIC) {
        why = "not procfs";
        close(proc_fd_dir);
        proc_fd_dir = -1;
    }
    if (why != NULL)
        log_msg(LOG_WARN, "/proc/self/fd%s: %s (special files are then checked by name before "
                "the open, with a window for a file swapped in between)",
                in_chroot ? " inside --chroot (mount /proc there)" : "", why);
#else
    (void)in_chroot;
#endif
}

/* A directory is opened to look names up in it (its index file), which
 * needs search permission only: a directory of mode 0711 serves its index
 * as with nginx.  Reading it, for a listing, is asked for then.  So is the
 * root: a new release switched in after the workers dropped root may be 0711
 * too. */
#if defined(O_PATH)
#define DIR_SEARCH_FLAGS (O_PATH | O_DIRECTORY | O_CLOEXEC)
#elif defined(O_SEARCH)
#define DIR_SEARCH_FLAGS (O_SEARCH | O_DIRECTORY | O_CLOEXEC)
#else
#define DIR_SEARCH_FLAGS (O_RDONLY | O_DIRECTORY | O_CLOEXEC)
#endif

/* Opens the directory root names, and makes it the document root unless it
 * is the one open already: 1 if it was switched, 0 if not, -1 (errno, and
 * nothing changed) if it cannot be opened.  realpath looks the name up
 * again: a symlink switched in between would pair one release's descriptor
 * with another's name, so the two must be the same directory. */
static int root_open(const char *root, const char **failed)
{
    char real[PATH_MAX];
    struct stat st, named;
    int fd = open(root, DIR_SEARCH_FLAGS);
    *failed = "";
    if (fd < 0)
        return -1;
    int ok = fstat(fd, &st) == 0 && realpath(root, real) != NULL && stat(real, &named) == 0;
    *failed = ": realpath";
    if (ok && (named.st_dev != st.st_dev || named.st_ino != st.st_ino)) {
        ok = 0;
        errno = EAGAIN;             /* switched again meanwhile: look once more */
        *failed = ": switched again while opened";
    } else if (ok && faccessat(fd, ".", X_OK, 0) < 0) {
        ok = 0;                     /* every request would be 403 */
        *failed = ": the workers' user cannot search it";
    }
    if (!ok) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (root_fd >= 0 && st.st_dev == root_dev && st.st_ino == root_ino) {
        close(fd);
        return 0;
    }
    if (root_fd >= 0)
        close(root_fd);     /* no thread holds it across a yield: used in one call at a time */
    root_fd = fd;
    root_dev = st.st_dev;
    root_ino = st.st_ino;
    memcpy(root_real, real, sizeof real);
    root_real_len = strlen(root_real);
    if (root_real_len == 1)         /* root is "/": every path is beneath */
        root_real_len = 0;
    return 1;
}

int static_file_init(const char *root)
{
    const char *failed;
    int tries = 0;
    root_name = root;
    while (root_open(root, &failed) < 0) {
        if (errno == EAGAIN && ++tries < 4)
            continue;
        /* inside --chroot the name is looked up there, not on the host */
        if (cfg.chroot_dir != NULL)
            log_errno(LOG_ERROR, "document root %s (inside --chroot %s)%s", root, cfg.chroot_dir, failed);
        else
            log_errno(LOG_ERROR, "document root %s%s", root, failed);
        return -1;
    }
    /* Files too large for memory keep a descriptor open in the cache; a
     * quarter of the process's descriptors may go to them, the rest stay for
     * connections and files being opened. */
    unsigned max_fds = cfg.cache_entries;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur / 4 < max_fds)
        max_fds = rl.rlim_cur / 4 > 4 ? (unsigned)(rl.rlim_cur / 4) : 4;
    if (filecache_init(root_fd, cfg.cache_entries, cfg.cache_size, cfg.cache_validate,
                       cfg.sendfile_min, max_fds) < 0) {
        log_errno(LOG_ERROR, "file cache of %u entries", cfg.cache_entries);
        return -1;
    }
    return 0;
}

void static_file_watch_root(void)
{
    struct stat st;
    root_watched = stat(root_name, &st) == 0;
    if (!root_watched)
        log_errno(LOG_INFO, "document root %s cannot be looked up by the workers' user (a switched "
                  "root symlink is then picked up only on SIGHUP)", root_name);
    root_checked = date_cache_time();
}

/* Is --root still the directory being served?  Deploys switch a symlink
 * ("current" -> the new release) and expect it served at once, as nginx
 * resolves the root per request; here a stat every --cache-validate
 * seconds decides (now is the request's cached clock: no system call on
 * other requests).  A new root that cannot be opened leaves the old one
 * served, with an error logged at most once a minute. */
static void root_recheck(time_t now)
{
    struct stat st;
    const char *failed = "";
    int r;

    root_checked = now;
    if (stat(root_name, &st) < 0)
        r = -1;
    else if (st.st_dev == root_dev && st.st_ino == root_ino)
        return;
    else
        r = root_open(root_name, &failed);
    if (r > 0) {
        filecache_reroot(root_fd);  /* nothing of the old root is served again */
        log_msg(LOG_INFO, "document root %s is now %s", root_name, root_real);
    } else if (r < 0 && log_repeat_failed(&root_errors) > 0) {
        log_errno(LOG_ERROR, "document root %s changed but cannot be opened%s; still serving %s",
                  root_name, failed, root_real_len > 0 ? root_real : "/");
    }
}

static const char *beneath_root(const char *abs);

static int path_inside_root(const char *p)
{
    return beneath_root(p) != NULL;
}

/* The names the by-name checks build and resolve: 12 KB, which on a
 * handler's stack (16 KB at the least, --stack-size) under the request's
 * own frames ran past its end.  Static: each check runs to its end with no
 * yield (plain system calls), so no two threads use them at once. */
static char by_name_full[PATH_MAX * 2], by_name_resolved[PATH_MAX];

/* by_name_resolved := the real path of rel under the root: 0, or -1. */
static int resolve_by_name(const char *rel)
{
    int n = snprintf(by_name_full, sizeof by_name_full, "%s/%s", root_real, rel);
    if (n < 0 || (size_t)n >= sizeof by_name_full) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return realpath(by_name_full, by_name_resolved) != NULL ? 0 : -1;
}

/* abs relative to the root ("." for the root itself), or NULL if abs is not
 * the root or beneath it.  The walk below looks names up by their absolute
 * names; those beneath the root through the root's descriptor, so that a
 * root whose parents the workers' user cannot search is walked as the
 * kernel looked it up. */
static const char *beneath_root(const char *abs)
{
    if (strncmp(abs, root_real, root_real_len) != 0)
        return NULL;
    const char *rest = abs + root_real_len;     /* root "/": root_real_len 0 */
    if (*rest == '\0')
        return ".";
    if (*rest != '/')
        return NULL;
    return rest[1] != '\0' ? rest + 1 : ".";
}

static int walk_lstat(const char *abs, struct stat *st)
{
    const char *rel = beneath_root(abs);
    return rel != NULL ? fstatat(root_fd, rel, st, AT_SYMLINK_NOFOLLOW) : lstat(abs, st);
}

static ssize_t walk_readlink(const char *abs, char *buf, size_t cap)
{
    const char *rel = beneath_root(abs);
    return rel != NULL ? readlinkat(root_fd, rel, buf, cap) : readlink(abs, buf, cap);
}

/* Is abs (a real path) the root or beneath it (1), one of the root's own
 * ancestors, which a lookup may pass through to come back in (0), or
 * elsewhere (-1)? */
static int place_of(const char *abs, size_t len)
{
    if (path_inside_root(abs))
        return 1;
    if (len == 1 || (len < root_real_len && memcmp(root_real, abs, len) == 0 && root_real[len] == '/'))
        return 0;
    return -1;
}

/* Did the lookup of rel beneath the root go outside it, anywhere on the
 * way?  The kernel's answer for a path that leaves the root, by a link,
 * must not depend on what exists out there: a link planted in the root to
 * a missing file outside was a 404 and to an existing one a 403, so whoever
 * could plant links learnt which files exist elsewhere; one that went out
 * and came back was served or not as a directory outside existed.  The name
 * is resolved again the way the kernel does, one component at a time with
 * lstat and readlink (at most 40 links, 1024 names), and it left the root if
 * it met a directory neither beneath the root nor on the root's own path,
 * or stopped (a name not found) anywhere but beneath it.  Returns 1 if it
 * left (or was too long or deep to tell: refused alike), else 0;
 * by_name_resolved then names where it ended: with *whole set, the file
 * rel leads to (and *end, if not NULL, its lstat); else the directory a
 * name was not found in, or the file a further name was looked for in.  Static buffers, as resolve_by_name's:
 * no yield in between. */
#define WALK_MAX_NAMES 1024
static char walk_link[PATH_MAX];

static int lookup_left_root(const char *rel, int *whole, struct stat *end)
{
    char *cur = by_name_resolved, *todo = by_name_full;
    size_t cur_len = root_real_len, todo_len = strlen(rel);
    unsigned links = 0, names = 0;
    int st_is_cur = 0;                          /* st is cur's lstat */
    struct stat st;

    *whole = 0;
    if (todo_len >= sizeof by_name_full)
        return 1;
    if (cur_len == 0)
        cur_len = 1;                            /* root "/": nothing is outside */
    memcpy(cur, root_real, cur_len);
    cur[cur_len] = '\0';
    memcpy(todo, rel, todo_len + 1);
    for (char *p = todo;;) {
        while (*p == '/')
            p++;
        if (*p == '\0') {
            /* (a lookup ending in ".." or a link to a directory has not
             * looked at where it ended yet) */
            *whole = end == NULL || st_is_cur || walk_lstat(cur, &st) == 0;
            if (end != NULL && *whole)
                *end = st;
            return !path_inside_root(cur);
        }
        if (++names > WALK_MAX_NAMES)
            return 1;
        size_t len = strcspn(p, "/");
        char *next = p + len;
        if (len == 1 && p[0] == '.') {
            p = next;
            continue;
        }
        if (len == 2 && p[0] == '.' && p[1] == '.') {
            /* the parent of the root or of an ancestor is an ancestor */
            while (cur_len > 1 && cur[cur_len - 1] != '/')
                cur_len--;
            if (cur_len > 1)
                cur_len--;                      /* "/a/b" -> "/a", "/a" -> "/" */
            cur[cur_len] = '\0';
            st_is_cur = 0;
            p = next;
            continue;
        }
        size_t parent_len = cur_len;
        int sep = cur[cur_len - 1] != '/';
        if (cur_len + (size_t)sep + len >= sizeof by_name_resolved)
            return 1;
        if (sep)
            cur[cur_len++] = '/';
        memcpy(cur + cur_len, p, len);
        cur_len += len;
        cur[cur_len] = '\0';
        if (walk_lstat(cur, &st) < 0) {
            cur[parent_len] = '\0';             /* not found here */
            return !path_inside_root(cur);
        }
        if (S_ISLNK(st.st_mode)) {
            ssize_t n = walk_readlink(cur, walk_link, sizeof walk_link - 1);
            size_t rest = strlen(next);
            if (n <= 0 || (size_t)n >= sizeof walk_link - 1 || ++links > 40 ||
                (size_t)n + rest + 1 > sizeof by_name_full)
                return 1;                       /* (a target that filled walk_link may be cut) */
            /* the link's target takes its place in what is left to look
             * up ("next" is empty or starts with '/') */
            memmove(todo + n, next, rest + 1);
            memcpy(todo, walk_link, (size_t)n);
            p = todo;
            cur_len = walk_link[0] == '/' ? 1 : parent_len;
            cur[cur_len] = '\0';
            st_is_cur = 0;
            continue;
        }
        if (place_of(cur, cur_len) < 0)
            return 1;
        st_is_cur = 1;
        if (!S_ISDIR(st.st_mode)) {
            while (*next == '/')
                next++;
            if (*next != '\0')
                return 0;                       /* a name under a file: ENOTDIR, inside */
        }
        p = next;
    }
}

/* Is fd (opened as rel under the root) really inside the root once every
 * symbolic link is resolved, and did its lookup never leave the root?  The
 * portable, slower check.  A symbolic link switched between the open and a
 * second look at the name must not pass a file outside: on Linux the
 * kernel names the file fd is (no lookup to race); elsewhere the name is
 * walked again, after the open, and must lead to the very file opened (the
 * walk's lstat of where it ended: a link there would have been followed). */
static int resolved_inside_root(const char *rel, int fd)
{
#ifdef HAVE_REOPEN_BY_FD
    if (proc_fd_dir >= 0) {
        char name[FD_NAME_SIZE];
        char *opened = by_name_resolved;
        ssize_t n = readlinkat(proc_fd_dir, fd_name(fd, name), opened, sizeof by_name_resolved - 1);
        if (n <= 0 || (size_t)n >= sizeof by_name_resolved - 1)
            return 0;
        opened[n] = '\0';
        int whole;
        /* where it ended, race-free; then that it never went outside */
        return opened[0] == '/' && path_inside_root(opened) && !lookup_left_root(rel, &whole, NULL);
    }
#endif
    struct stat named, opened_st;
    int whole;
    if (lookup_left_root(rel, &whole, &named) || !whole)
        return 0;
    return fstat(fd, &opened_st) == 0 &&
           named.st_dev == opened_st.st_dev && named.st_ino == opened_st.st_ino;
}

/* Opens rel (no leading '/') beneath the root.  Unless symlinks may leave
 * the root, a path whose symlinks resolve outside it fails with EXDEV. */
static int open_beneath_once(const char *rel, int flags)
{
    int fd;
#if defined(HAVE_LINUX_OPENAT2_H) && defined(SYS_openat2)
    if (!cfg.symlinks_outside && have_openat2) {
        /* One system call, and the kernel guarantees no escape by ".." or
         * by a symlink.  It also refuses absolute symlinks that point back
         * inside; those get the slower check by name below. */
        struct open_how how;
        memset(&how, 0, sizeof how);
        how.flags = (uint64_t)flags;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
        /* EAGAIN: a ".." (from a symlink's target) was met while something
         * was renamed anywhere on the system, so the kernel could not vouch
         * for it; openat2(2) says to retry, and the fallback decides after */
        int tries = 0;
        do
            fd = (int)syscall(SYS_openat2, root_fd, rel, &how, sizeof how);
        while (fd < 0 && errno == EAGAIN && ++tries < 4);
        if (fd >= 0 || (errno != ENOSYS && errno != EXDEV && errno != EPERM && errno != EAGAIN))
            return fd;
        if (errno == ENOSYS)
            have_openat2 = 0;
    }
#endif
    fd = openat(root_fd, rel, flags);
    if (cfg.symlinks_outside)
        return fd;
    if (fd < 0) {
        int e = errno, whole;
        if ((e == ENOENT || e == ENOTDIR || e == ENAMETOOLONG) && lookup_left_root(rel, &whole, NULL))
            e = EXDEV;
        errno = e;
        return -1;
    }
    if (!resolved_inside_root(rel, fd)) {
        close(fd);
        errno = EXDEV;
        return -1;
    }
    return fd;
}

/* Did an open fail for want of descriptors, and has the file cache now
 * given back some of those it holds (least recently used first), so that
 * the open is worth trying again? */
static int shed_after_emfile(int fd)
{
    return fd < 0 && (errno == EMFILE || errno == ENFILE) && filecache_shed_fds(8) > 0;
}

static int open_beneath(const char *rel, int flags)
{
    int fd = open_beneath_once(rel, flags);
    if (shed_after_emfile(fd))
        fd = open_beneath_once(rel, flags);
    return fd;
}

/* What open_served returns for a device, FIFO or socket. */
#define OPEN_SPECIAL (-2)

static int is_special(const struct stat *st)
{
    return !S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode);
}

/* Opens rel beneath the root with flags and fills *st from the descriptor:
 * the descriptor, OPEN_SPECIAL (closed again) or -1 with errno.  fstat
 * fails only on a broken file system: logged, and errno EIO (a 500). */
static int open_and_stat(const char *rel, int flags, struct stat *st)
{
    int fd = open_beneath(rel, flags);
    if (fd < 0)
        return -1;
    if (fstat(fd, st) < 0) {
        log_errno(LOG_WARN, "fstat %s", rel);
        close(fd);
        errno = EIO;
        return -1;
    }
    if (is_special(st)) {
        close(fd);
        return OPEN_SPECIAL;
    }
    return fd;
}

/* Opens rel (beneath the root) for reading and fills *st, unless it is a
 * device, FIFO or socket: opening one can do something by itself (a
 * watchdog starts, a tape rewinds, a FIFO's blocked writer is let go), so
 * such a file is never opened; that is OPEN_SPECIAL.  Otherwise the
 * descriptor (for a directory, one to search it), or -1 with errno.
 *
 * The type is taken from a descriptor opened O_PATH, and the file behind
 * that descriptor is what gets opened for reading, so a FIFO renamed over
 * the name in between is not opened either.  Without /proc/self/fd the type
 * is looked at by name first and fstat after the open decides what is
 * served; a file swapped in between those two is refused, but opened. */
static int open_served(const char *rel, struct stat *st)
{
    const int read_flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
#ifdef HAVE_REOPEN_BY_FD
    if (proc_fd_dir >= 0) {
        int path_fd = open_and_stat(rel, O_PATH | O_CLOEXEC, st);
        if (path_fd < 0 || S_ISDIR(st->st_mode))
            return path_fd;     /* a directory is only searched: DIR_SEARCH_FLAGS */
        char name[FD_NAME_SIZE];
        fd_name(path_fd, name);
        int fd = openat(proc_fd_dir, name, read_flags);
        if (shed_after_emfile(fd))
            fd = openat(proc_fd_dir, name, read_flags);
        int e = errno;
        close(path_fd);
        errno = e;
        return fd;
    }
#endif
    /* a path that cannot be looked at here is left to the open, which
     * answers for it */
    if (fstatat(root_fd, rel, st, 0) == 0) {
        if (is_special(st))
            return OPEN_SPECIAL;
        if (S_ISDIR(st->st_mode))
            return open_and_stat(rel, DIR_SEARCH_FLAGS, st);
    }
    return open_and_stat(rel, read_flags, st);
}

/* static_file_entry_kind without /proc/self/fd: by name, as
 * resolved_inside_root checks a request (the walk, unless links may leave
 * the root: then realpath). */
static int entry_kind_by_name(const char *rel)
{
    const char *resolved = by_name_resolved;
    struct stat st;
    if (cfg.symlinks_outside) {
        if (resolve_by_name(rel) < 0 || stat(resolved, &st) != 0)
            return status_for_errno(errno) == 503 ? 0 : -1;     /* short of resources: it may serve */
    } else {
        int whole;
        if (lookup_left_root(rel, &whole, &st) || !whole)
            return -1;  /* out of the root (even out and back), or leading nowhere */
    }
    if (is_special(&st))
        return -1;
    return S_ISDIR(st.st_mode);
}

int static_file_entry_kind(const char *dir_path, const char *name)
{
    /* one name at a time and no yield before it is used: a static buffer
     * keeps PATH_MAX off the handler's stack, which the listing and the
     * open beneath the root already use much of */
    static char rel[PATH_MAX];
    const char *dir = dir_path[0] == '/' ? dir_path + 1 : dir_path;
    int n = snprintf(rel, sizeof rel, "%s%s%s", dir, dir[0] != '\0' ? "/" : "", name);
    if (n < 0 || (size_t)n >= sizeof rel)
        return -1;      /* a request for it would get 404 */
#ifdef HAVE_REOPEN_BY_FD
    if (proc_fd_dir >= 0) {
        /* opened as a request for it would be, O_PATH: nothing is read */
        struct stat st;
        int fd = open_and_stat(rel, O_PATH | O_CLOEXEC, &st);
        if (fd == OPEN_SPECIAL)
            return -1;  /* a FIFO, socket or device: 403 */
        if (fd < 0)     /* out of the root, leading nowhere (through a file too), or not searchable: 403 or 404 */
            return status_for_errno(errno) == 503 ? 0 : -1;
        close(fd);
        return S_ISDIR(st.st_mode);
    }
#endif
    return entry_kind_by_name(rel);
}

int status_for_errno(int e)
{
    switch (e) {
    case ENOENT: case ENOTDIR: return 404;
    case ENAMETOOLONG: return 404;     /* a name longer than NAME_MAX cannot exist */
    case EMFILE: case ENFILE: case ENOMEM: return 503;
    case EIO: return 500;
    case EACCES: case EPERM: case EXDEV: case ELOOP: default: return 403;
    }
}

/* What a response needs to know about a file, from the cache or from a
 * fresh open: validators, type, and where the body comes from. */
struct file_view {
    int fd;
    uint64_t size;
    time_t mtime;                   /* as in Last-Modified */
    unsigned long ino;
    const char *etag;               /* NULL: no validators (a file changed lately) */
    size_t etag_len;
    const char *last_modified;
    const char *type;
    const char *data;               /* whole body in memory, or NULL */
    const char *headers;            /* precomputed 200 header lines, or NULL */
    size_t headers_len;
};

/* A file that changed within the last seconds may be in the middle of a
 * write, and what is read of it torn, under the finished file's tag and
 * date (Linux sets a write's times before it copies the data; a coarse
 * clock gives two writes in one tick the same times): the reply carries no
 * ETag or Last-Modified, so that no client can hold torn bytes under a
 * validator that later matches (a 304 for good).  The next request after
 * the change settles gets them. */
static void drop_validators(struct file_view *v)
{
    v->etag = NULL;
    v->etag_len = 0;
    v->last_modified = NULL;
    v->headers = NULL;              /* the precomputed block has them */
    v->headers_len = 0;
}

static void put_validators(struct conn *c, const struct file_view *f)
{
    if (f->etag == NULL)
        return;
    response_header(c, "Last-Modified", f->last_modified);
    response_header(c, "ETag", f->etag);
}

/* Sends [off, off+len) of the body.  From memory it is copied into the
 * output buffer when it fits there (then the response goes out with a
 * plain send() of one buffer, cheaper than sendmsg() with the header and
 * the body as two iovecs, even counting the copy, up to 8 KB measured), or
 * else goes out at once from the cache's memory behind the pending
 * headers; from disk, small ranges are read and large ones go out with
 * sendfile.  A file that shrank under us makes the promised Content-Length
 * a lie: the connection is failed (closed). */
static int send_body(struct conn *c, const struct file_view *f, uint64_t off, uint64_t len)
{
    if (f->data != NULL)
        return buff_write(&c->out, f->data + off, (size_t)len);
    if (len < cfg.sendfile_min && len <= c->scratch_cap) {
        size_t done = 0;
        while (done < len) {
            ssize_t n = pread(f->fd, c->scratch + done, (size_t)len - done, (off_t)(off + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                if (n == 0)
                    errno = ENODATA;    /* shrunk: the cache drops the entry */
                break;
            }
            done += (size_t)n;
        }
        if (done == len)
            return buff_write(&c->out, c->scratch, (size_t)len);
        if (errno != ENODATA)
            log_errno(LOG_ERROR, "reading the body of %s", c->path);
        return buff_file_cut(&c->out, errno == ENODATA);
    }
    int was_failed = c->out.failed;
    int rc = buff_sendfile(&c->out, f->fd, (off_t)off, len);
    /* the file's fault, not the client's leaving: the operator should hear
     * of it (a disk error; an offset past what the kernel can send; no
     * memory for the pages) */
    if (rc < 0 && !was_failed && (errno == EIO || errno == EOVERFLOW || errno == ENOMEM || errno == ESPIPE))
        log_errno(LOG_ERROR, "sending the body of %s", c->path);
    return rc;
}

static int part_header(char *out, size_t cap, const char *boundary, const char *type,
                       const struct byte_range *r, uint64_t size)
{
    return snprintf(out, cap, "\r\n--%s\r\nContent-Type: %s\r\nContent-Range: bytes %llu-%llu/%llu\r\n\r\n",
                    boundary, type, (unsigned long long)r->first, (unsigned long long)r->last,
                    (unsigned long long)size);
}

static void send_multipart(struct conn *c, const struct http_request *req,
                           const struct file_view *f, unsigned n)
{
    static unsigned long counter;
    /* ph holds the longest type mime_load accepts, with three 20-digit numbers */
    char boundary[40], ct[80], ph[MIME_TYPE_MAX + 160];
    uint64_t total = 0;

    snprintf(boundary, sizeof boundary, "cowd%08lx%08lx", f->ino ^ ++counter,
             (unsigned long)date_cache_time());
    for (unsigned i = 0; i < n; i++) {
        int l = part_header(ph, sizeof ph, boundary, f->type, &c->ranges[i], f->size);
        if (l < 0 || (size_t)l >= sizeof ph) {
            /* cannot happen with a type from mime_load; never send a cut part */
            log_msg(LOG_ERROR, "multipart part header for %s does not fit", f->type);
            response_error(c, req, 500, NULL, NULL);
            return;
        }
        total += (uint64_t)l + (c->ranges[i].last - c->ranges[i].first + 1);
    }
    total += 2 + 2 + strlen(boundary) + 4;   /* "\r\n--" boundary "--\r\n" */

    snprintf(ct, sizeof ct, "multipart/byteranges; boundary=%s", boundary);
    response_begin(c, req, 206);
    response_header(c, "Content-Type", ct);
    response_header_u64(c, "Content-Length", total);
    put_validators(c, f);
    response_header(c, "Accept-Ranges", "bytes");
    response_end_headers(c);
    if (req->method == HTTP_HEAD)
        return;
    for (unsigned i = 0; i < n; i++) {
        int l = part_header(ph, sizeof ph, boundary, f->type, &c->ranges[i], f->size);
        buff_write(&c->out, ph, (size_t)l);
        if (send_body(c, f, c->ranges[i].first, c->ranges[i].last - c->ranges[i].first + 1) < 0)
            return;
    }
    buff_puts(&c->out, "\r\n--");
    buff_puts(&c->out, boundary);
    buff_puts(&c->out, "--\r\n");
}

#ifdef COWD_LISTING
/* A listing has no validators, but If-Match and If-None-Match still ask
 * whether a current representation exists (RFC 9110 §13.1.1-2).  A
 * directory we cannot read has none: its 403 (or 503 out of descriptors)
 * ignores the conditions (§13.2.1), so it is opened first. */
static void send_listing(struct conn *c, const struct http_request *req, int dir_fd, const char *path)
{
    int read_fd = listing_open(dir_fd);
    if (read_fd < 0) {
        int e = errno;
        log_errno(LOG_WARN, "listing %s", path);
        response_error(c, req, status_for_errno(e), NULL, NULL);
        return;
    }
    const struct cond_resource res = { .etag = NULL, .no_mtime = 1 };
    int cond = cond_evaluate(req, &res);
    if (cond == 304 || cond == 412)
        close(read_fd);
    if (cond == 304) {
        response_begin(c, req, 304);
        response_header(c, "Cache-Control", LISTING_CACHE_CONTROL);   /* as the 200's (listing.h) */
        response_end_headers(c);
    } else if (cond == 412) {
        response_error(c, req, 412, NULL, NULL);
    } else {
        listing_send(c, req, read_fd, path);
    }
}
#endif

static void send_file(struct conn *c, const struct http_request *req, const struct file_view *f)
{
    /* response_begin reads the clock anyway; only a request with a date to compare needs it
     * first (If-Modified-Since, and the year of an RFC 850 date in either; an If-Range date
     * is never compared) */
    int has_date = req->if_modified_since.p != NULL || req->if_unmodified_since.p != NULL;
    struct cond_resource res = { .etag = f->etag, .etag_len = f->etag_len, .mtime = f->mtime,
                                 .now = has_date ? date_cache_time() : 0,
                                 .unsettled = f->etag == NULL };
    int cond = cond_evaluate(req, &res);
    if (cond == 304) {
        response_begin(c, req, 304);
        put_validators(c, f);
        response_end_headers(c);
        return;
    }
    if (cond == 412) {
        response_error(c, req, 412, NULL, NULL);
        return;
    }

    /* Range applies to GET only (RFC 9110 §14.2); If-Range decides whether
     * the client's copy is still the one its ranges refer to. */
    if (req->method == HTTP_GET && req->range.p != NULL && cond_if_range_ok(req, &res)) {
        unsigned n = 0;
        enum range_result rr = range_parse(req->range.p, req->range.len, f->size, cfg.max_ranges,
                                           c->ranges, cfg.max_ranges, &n);
        if (rr == RANGE_UNSATISFIABLE) {
            char cr[48];
            snprintf(cr, sizeof cr, "bytes */%llu", (unsigned long long)f->size);
            response_error(c, req, 416, "Content-Range", cr);
            return;
        }
        if (rr == RANGE_OK && n == 1) {
            char cr[80];
            const struct byte_range *r = &c->ranges[0];
            uint64_t len = r->last - r->first + 1;
            snprintf(cr, sizeof cr, "bytes %llu-%llu/%llu", (unsigned long long)r->first,
                     (unsigned long long)r->last, (unsigned long long)f->size);
            response_begin(c, req, 206);
            response_header(c, "Content-Type", f->type);
            response_header_u64(c, "Content-Length", len);
            response_header(c, "Content-Range", cr);
            put_validators(c, f);
            response_header(c, "Accept-Ranges", "bytes");
            response_end_headers(c);
            send_body(c, f, r->first, len);
            return;
        }
        if (rr == RANGE_OK && n > 1) {
            send_multipart(c, req, f, n);
            return;
        }
    }

    response_begin(c, req, 200);
    if (f->headers != NULL) {
        buff_write(&c->out, f->headers, f->headers_len);
    } else {
        response_header(c, "Content-Type", f->type);
        response_header_u64(c, "Content-Length", f->size);
        put_validators(c, f);
        response_header(c, "Accept-Ranges", "bytes");
    }
    response_end_headers(c);
    if (req->method == HTTP_GET && f->size > 0)
        send_body(c, f, 0, f->size);
}

static void view_of_entry(struct file_view *v, const struct fc_entry *e, time_t now)
{
    v->fd = e->fd;
    v->size = e->size;
    v->mtime = e->last_modified_time;
    v->ino = (unsigned long)e->ino;
    v->etag = e->etag;
    v->etag_len = e->etag_len;
    v->last_modified = e->last_modified;
    v->type = e->type;
    v->data = e->data;
    v->headers = e->headers;
    v->headers_len = e->headers_len;
    if (!filecache_settled(e, now))
        drop_validators(v);
}

/* Serves a cached file.  One that proves shorter than the entry says (it
 * changed within --cache-validate) fails this connection, which has been
 * promised the old length, and is dropped, so that the next request opens
 * the file afresh. */
static void serve_entry(struct conn *c, const struct http_request *req, struct fc_entry *e,
                        time_t now)
{
    struct file_view v;
    view_of_entry(&v, e, now);
    send_file(c, req, &v);
    if (c->out.file_shrank) {
        log_msg(LOG_WARN, "%s shrank while being sent: connection closed, cache entry dropped", e->name);
        filecache_forget(e);
    }
    filecache_release(e);
}

/* Serves the regular file open as fd (closed here), caching it when the
 * cache takes it; key is the request's normalized path. */
static void serve_opened(struct conn *c, const struct http_request *req, int fd,
                         struct stat *st, const char *name, size_t name_len,
                         const char *key, size_t key_len)
{
    const char *type = mime_type_for(name, name_len);
    /* a key too long to keep is served uncached, not put in only to miss */
    struct fc_entry *e = key_len > 0 ? filecache_put(key, key_len, name + 1, fd, st, type,
                                                     date_cache_time()) : NULL;
    if (e != NULL) {
        serve_entry(c, req, e, date_cache_time());  /* the cache owns fd now */
        return;
    }
    struct file_view v;
    char etag[64], last_modified[32];
    v.fd = fd;
    v.size = (uint64_t)st->st_size;
    v.mtime = http_last_modified(st->st_mtim.tv_sec, date_cache_time());
    v.ino = (unsigned long)st->st_ino;
    v.etag_len = filecache_make_etag(etag, st);
    v.etag = etag;
    http_date_format(v.mtime, last_modified);
    v.last_modified = last_modified;
    v.type = type;
    v.data = NULL;
    v.headers = NULL;
    v.headers_len = 0;
    if (filecache_changed_lately(&st->st_ctim, date_cache_time()))
        drop_validators(&v);
    send_file(c, req, &v);
    if (c->out.file_shrank)
        log_msg(LOG_WARN, "%s shrank while being sent: connection closed", name + 1);
    close(fd);
}

/* 301 to the same path with a slash, keeping the query (as nginx does;
 * re-encoded where the client sent characters a URI cannot hold).
 * The Location is the normalized path, percent-encoded again, not the raw
 * target: "GET //host HTTP/1.1" (a directory "host" under the root) would
 * otherwise redirect to "//host/", which browsers read as another host. */
static void redirect_to_dir(struct conn *c, const struct http_request *req, const char *path,
                            size_t path_len)
{
    size_t enc_len = url_escape_path(path, path_len, NULL, 0);
    size_t query_len = req->query.p != NULL ? url_escape_query(req->query.p, req->query.len, NULL, 0) : 0;
    size_t need = enc_len + 2 + (req->query.p != NULL ? query_len + 1 : 0);
    if (need > c->scratch_cap) {
        response_error(c, req, 414, NULL, NULL);
        return;
    }
    char *loc = c->scratch;
    size_t n = url_escape_path(path, path_len, loc, c->scratch_cap);
    loc[n++] = '/';
    if (req->query.p != NULL) {
        loc[n++] = '?';
        n += url_escape_query(req->query.p, req->query.len, loc + n, c->scratch_cap - n);
    }
    loc[n] = '\0';
    response_error(c, req, 301, "Location", loc);
}

/* A cache miss: opens c->path (plen bytes, normalized) beneath the root,
 * serves it and caches it under the path as requested.  Out of line, so
 * that its key buffer (PATH_MAX bytes) is not on the cache-hit path's
 * stack: with a thread per connection, every page a request's stack spans
 * is a page per thread in the cache and TLB working set. */
static __attribute__((noinline)) void serve_uncached(struct conn *c, const struct http_request *req,
                                                     size_t plen, int trailing_slash)
{
    char key[CACHE_KEY_MAX];
    size_t key_len = plen < CACHE_KEY_MAX ? plen : 0;
    memcpy(key, c->path, key_len);

    /* c->path is "/a/b" (maybe with a trailing '/'); open "a/b" under root */
    while (plen > 1 && c->path[plen - 1] == '/')
        c->path[--plen] = '\0';
    const char *rel = plen > 1 ? c->path + 1 : ".";

    struct stat st;
    int fd = open_served(rel, &st);
    if (fd == OPEN_SPECIAL) {
        response_error(c, req, trailing_slash ? 404 : 403, NULL, NULL);
        return;
    }
    if (fd < 0) {
        response_error(c, req, status_for_errno(errno), NULL, NULL);
        return;
    }
    const char *name = c->path;
    size_t name_len = plen;

    if (S_ISDIR(st.st_mode)) {
        if (!trailing_slash && plen > 1) {
            close(fd);
            redirect_to_dir(c, req, c->path, plen);
            return;
        }
        /* the index file: "a/b/index.html" beneath the root */
        size_t ilen = strlen(cfg.index_name);
        char *p = c->path;
#ifdef COWD_LISTING
        size_t dir_len = plen;
#endif
        if (plen == 1) {
            memcpy(p + 1, cfg.index_name, ilen + 1);
            plen = 1 + ilen;
        } else {
            p[plen] = '/';
            memcpy(p + plen + 1, cfg.index_name, ilen + 1);
            plen += 1 + ilen;
        }
        int ifd = open_served(p + 1, &st);
        if (ifd == OPEN_SPECIAL) {
            close(fd);
            response_error(c, req, 403, NULL, NULL);
            return;
        }
        if (ifd < 0) {
            int e = errno;
#ifdef COWD_LISTING
            if (cfg.listing && e == ENOENT) {
                p[dir_len] = '\0';
                send_listing(c, req, fd, p);
                close(fd);
                return;
            }
#endif
            close(fd);
            /* a directory without an index is not listed: 403, as nginx */
            response_error(c, req, e == ENOENT ? 403 : status_for_errno(e), NULL, NULL);
            return;
        }
        close(fd);
        fd = ifd;
        name = p;
        name_len = plen;
    } else if (trailing_slash) {
        close(fd);
        response_error(c, req, 404, NULL, NULL);    /* "/file.txt/" */
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        response_error(c, req, 403, NULL, NULL);    /* devices, fifos, sockets */
        return;
    }
    serve_opened(c, req, fd, &st, name, name_len, key, key_len);
}

void static_file_serve(struct conn *c, const struct http_request *req)
{
    int trailing_slash = 0;
    int st_code = path_normalize(req->path.p, req->path.len, c->path, c->path_cap - 1 -
                                 strlen(cfg.index_name) - 1, &trailing_slash);
    if (st_code != 0) {
        if (st_code == 400)
            c->close_after = 1;
        response_error(c, req, st_code, NULL, NULL);
        return;
    }
    time_t now = date_cache_time();
    if (root_watched && (now < root_checked || now - root_checked >= (time_t)cfg.cache_validate))
        root_recheck(now);
    /* The cache is keyed by the normalized path as requested ("/docs/"
     * maps to the index file, "/docs" never hits: it is a redirect). */
    size_t plen = strlen(c->path);
    if (plen < CACHE_KEY_MAX) {
        struct fc_entry *e = filecache_get(c->path, plen, now);
        if (e != NULL) {
            serve_entry(c, req, e, now);
            return;
        }
    }
    serve_uncached(c, req, plen, trailing_slash);
}

int static_file_root_searchable(const char *root, const char *user)
{
    if (faccessat(root_fd, ".", X_OK, 0) == 0)
        return 0;
    if (user != NULL)
        log_errno(LOG_ERROR, "document root %s: the workers' user %s cannot search it", root, user);
    else
        log_errno(LOG_ERROR, "document root %s: cannot search it", root);
    return -1;
}

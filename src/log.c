/* log.c: the error log.  Every message is formatted into one line and written
 * with a single write(2) so lines from several processes never interleave. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int log_fd = 2;
static int log_opened;              /* log_fd is a file we opened, not stderr */
static const char *log_path;
static int log_linked = -1;         /* log_path was a symbolic link at the first open */
static enum log_level log_max = LOG_INFO;
static int echo_fd = -1;            /* start-up: errors and warnings also here */
static enum log_level echo_max = LOG_WARN;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

/* /dev/stdout or /dev/stderr when that stream is a socket (systemd's
 * journal, say), which Linux will not open by name (ENXIO): the stream
 * itself, duplicated; -1 for any other path. */
static int standard_stream(const char *path)
{
    int stream = strcmp(path, "/dev/stdout") == 0 || strcmp(path, "/dev/fd/1") == 0 ? 1
               : strcmp(path, "/dev/stderr") == 0 || strcmp(path, "/dev/fd/2") == 0 ? 2 : -1;
    if (stream < 0) {
        errno = ENXIO;
        return -1;
    }
    return fcntl(stream, F_DUPFD_CLOEXEC, 3);
}

/* A link in procfs is the kernel's own (/dev/stdout names /proc/self/fd/1,
 * which names a pipe or a terminal): nobody can make one, and what it names
 * is no path to follow by hand. */
static int in_procfs(dev_t dev)
{
    static int looked;
    static dev_t proc_dev;
    static int have_proc;
    if (!looked) {
        struct stat st;
        looked = 1;
        have_proc = stat("/proc/self", &st) == 0;
        if (have_proc)
            proc_dev = st.st_dev;
    }
    return have_proc && dev == proc_dev;
}

/* Reads the symbolic link at path if it is one: 1 and its target in
 * target, 0 if path is no link (or does not exist: the open creates it),
 * -1 with errno.  *link: the link's own status.  On Linux the link is read
 * through a handle on the link itself, so that the link whose owner was
 * looked at is the link read, whatever is renamed over it meanwhile. */
static int read_link(const char *path, char *target, size_t size, struct stat *link)
{
    struct stat st;
    ssize_t n;
#if defined(__linux__) && defined(O_PATH)
    int h = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (h < 0)
        return errno == ENOENT ? 0 : -1;
    if (fstat(h, &st) < 0) {
        int e = errno;
        close(h);
        errno = e;
        return -1;
    }
    if (!S_ISLNK(st.st_mode)) {
        close(h);
        return 0;
    }
    n = readlinkat(h, "", target, size - 1);
    int e = errno;
    close(h);
    errno = e;
#else
    /* elsewhere the link is looked at again after it is read: one renamed
     * over it in between must at least be renamed back in that time */
    struct stat again;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISLNK(st.st_mode))
        return 0;
    n = readlink(path, target, size - 1);
    if (n >= 0 && (lstat(path, &again) < 0 || again.st_ino != st.st_ino ||
                   again.st_dev != st.st_dev || again.st_uid != st.st_uid)) {
        errno = EAGAIN;
        return -1;
    }
#endif
    if (n < 0)
        return -1;
    if ((size_t)n >= size - 1) {
        errno = ENAMETOOLONG;
        return -1;
    }
    target[n] = '\0';
    *link = st;
    return 1;
}

/* As root, the symbolic links a log path goes through are followed only if
 * root made them, each of them (a link another user made, or put where a
 * root-made link pointed, could name any file, which root would create or
 * append to: nginx's CVE-2016-1247 needs only a log directory the workers'
 * user may write).  Copies into out the path the last link names (path
 * itself if it is no link), which is then opened without following a link.
 * *followed: 1 if path was a link; *kernel: 1 if a link of the kernel's
 * was reached (out names it: the open follows it).  0, or -1 with errno
 * (EPERM: a link made by another user, logged). */
static int follow_root_links(const char *path, char *out, size_t size, int *followed, int *kernel)
{
    char target[PATH_MAX];
    *followed = *kernel = 0;
    if (strlen(path) >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(out, path);
    for (int hops = 0;; hops++) {
        struct stat link;
        int r = read_link(out, target, sizeof target, &link);
        if (r <= 0)
            return r;
        *followed = 1;
        if (in_procfs(link.st_dev)) {
            *kernel = 1;            /* opened as it is, following the kernel's link */
            return 0;
        }
        if (link.st_uid != 0) {
            if (strcmp(out, path) == 0)
                log_msg(LOG_ERROR, "log %s is a symbolic link made by uid %lu, not root: "
                        "refusing to open what it names as root", path, (unsigned long)link.st_uid);
            else
                log_msg(LOG_ERROR, "log %s goes through %s, a symbolic link made by uid %lu, "
                        "not root: refusing to open what it names as root",
                        path, out, (unsigned long)link.st_uid);
            errno = EPERM;
            return -1;
        }
        if (hops == 8) {
            errno = ELOOP;
            return -1;
        }
        /* a relative target is relative to the link's directory */
        const char *slash = target[0] == '/' ? NULL : strrchr(out, '/');
        size_t dir = slash != NULL ? (size_t)(slash - out) + 1 : 0;
        if (dir + strlen(target) >= size) {
            errno = ENAMETOOLONG;
            return -1;
        }
        memmove(out + dir, target, strlen(target) + 1);
    }
}

/* As root, the file a log path names must be the one looked at, and must
 * have no other name (a hard link another user made may be any file).
 * named: lstat of the path before the open, NULL if there was none; a
 * device node (only root makes one) may open as another file: FreeBSD's
 * /dev/fd/1, which /dev/stdout names, opens as descriptor 1's file.
 * check_links: refuse a regular file with other names. */
static int check_opened(int fd, const char *path, const struct stat *named, int at_start,
                        int check_links)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return errno;
    if (named != NULL && !S_ISCHR(named->st_mode) && !S_ISBLK(named->st_mode) &&
        (st.st_dev != named->st_dev || st.st_ino != named->st_ino)) {
        log_msg(LOG_ERROR, "log %s was replaced while it was opened", path);
        return EAGAIN;
    }
    if (!at_start && !S_ISREG(st.st_mode))
        return ENODEV;
    if (check_links && S_ISREG(st.st_mode) && st.st_nlink != 1) {
        if (at_start)
            log_msg(LOG_ERROR, "log %s has %lu names (another may be any file): "
                    "refusing to append to it as root", path, (unsigned long)st.st_nlink);
        return EMLINK;
    }
    return 0;
}

/* Opens the log at path: at the first open (at_start) the administrator's
 * path as it is, but as root only through symbolic links root made, and not
 * a file with other names; the link is refused before anything is opened
 * (the open would create what it names, or hang on a FIFO).  Reopened, a
 * path that was not a link at the first open is not followed, and must be
 * a regular file (opened without waiting: a FIFO put there would hang the
 * open) with no other links; one that was a link is followed again, as at
 * start. */
int log_file_open(const char *path, int *linked)
{
    const int at_start = *linked < 0;
    const int as_root = geteuid() == 0;
    char resolved[PATH_MAX];
    const char *name = path;
    int followed = 0, kernel = 0;
    if (as_root && (at_start || *linked)) {
        if (follow_root_links(path, resolved, sizeof resolved, &followed, &kernel) < 0)
            return -1;
        name = resolved;
    } else if (at_start) {
        struct stat l;
        followed = lstat(path, &l) == 0 && S_ISLNK(l.st_mode);
    }
    int nofollow = as_root ? !kernel : !at_start && !*linked;
    struct stat named;
    int seen = as_root && !kernel && lstat(name, &named) == 0;
    int fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
                        (at_start ? 0 : O_NONBLOCK) | (nofollow ? O_NOFOLLOW : 0), 0640);
    if (fd < 0 && errno == ENXIO && at_start)
        fd = standard_stream(path);
    if (fd < 0)
        return -1;
    /* not as root, or through the kernel's link: as before this rule, a
     * path that was a link is not held to one name */
    int refused = 0;
    if (as_root && !kernel)
        refused = check_opened(fd, name, seen ? &named : NULL, at_start, 1);
    else if (!at_start)
        refused = check_opened(fd, name, NULL, 0, !*linked);
    if (refused == 0 && !at_start && fcntl(fd, F_SETFL, O_APPEND) < 0)     /* O_NONBLOCK off */
        refused = errno;
    if (refused != 0) {
        close(fd);
        errno = refused;
        return -1;
    }
    if (at_start)
        *linked = followed;
    return fd;
}

int log_open(const char *path)
{
    int fd = log_file_open(path, &log_linked);
    if (fd < 0)
        return -1;
    if (log_opened)
        close(log_fd);
    log_fd = fd;
    log_opened = 1;
    log_path = path;
    return 0;
}

int log_not_regular_file(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && !S_ISREG(st.st_mode);
}

int log_reopen(const char *path)
{
    if (log_opened && log_not_regular_file(log_fd))
        return 0;
    return log_open(path);
}

int log_file_give(int fd, const char *path, uid_t uid)
{
    struct stat st, named;
    if (fstat(fd, &st) < 0)
        return -1;
    if (!S_ISREG(st.st_mode))
        return 0;
    /* Only a file whose one name is the path itself: a link to another file
     * put there by whoever may write the directory would get that file
     * given away (nginx's CVE-2016-1247). */
    if (lstat(path, &named) < 0)
        return -1;
    if (!S_ISREG(named.st_mode) || named.st_dev != st.st_dev || named.st_ino != st.st_ino) {
        errno = ELOOP;
        return -1;
    }
    if (st.st_nlink != 1) {
        errno = EMLINK;
        return -1;
    }
    return fchown(fd, uid, (gid_t)-1);
}

int log_give(uid_t uid)
{
    return log_opened ? log_file_give(log_fd, log_path, uid) : 0;
}

int log_path_reachable(const char *path)
{
    if (access(path, W_OK) == 0)
        return 0;
    if (errno != ENOENT)
        return -1;
    /* renamed away just now (a rotation under way): the master makes it
     * again before the workers reopen; what counts is its directory */
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    size_t n = slash == NULL ? 0 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(dir, n > 0 ? path : ".", n > 0 ? n : 1);
    dir[n > 0 ? n : 1] = '\0';
    return access(dir, X_OK);
}

int log_reachable(void)
{
    if (!log_opened || log_not_regular_file(log_fd))
        return 0;
    return log_path_reachable(log_path);
}

void log_echo_begin(void)
{
    struct stat logged, err;
    if (!log_opened || fstat(log_fd, &logged) < 0 || fstat(2, &err) < 0)
        return;
    if (logged.st_dev == err.st_dev && logged.st_ino == err.st_ino)
        return;                     /* --error-log /dev/stderr, or 2>> the same file */
    if (isatty(log_fd) && isatty(2))
        return;                     /* --error-log /dev/tty: most likely the same terminal */
    echo_fd = 2;
}

int log_echo_keep(void)
{
    if (echo_fd != 2)
        return 0;
    int fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) {
        echo_fd = -1;
        return -1;
    }
    echo_fd = fd;
    return 0;
}

void log_echo_errors_only(void)
{
    echo_max = LOG_ERROR;
}

void log_echo_end(void)
{
    if (echo_fd > 2)
        close(echo_fd);
    echo_fd = -1;
}

void log_set_level(enum log_level level)
{
    log_max = level;
}

static void log_write(enum log_level level, int errnum, const char *fmt, va_list ap)
{
    int saved = errno;              /* callers may log, then look at errno */
    char line[1024];
    size_t n;
    time_t now = time(NULL);
    struct tm tm;

    if (level > log_max)
        return;
    gmtime_r(&now, &tm);
    n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%SZ", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, " cowd[%ld] %s: ",
                          (long)getpid(), level_names[level]);
    if (n < sizeof line) {
        int w = vsnprintf(line + n, sizeof line - n, fmt, ap);
        if (w > 0)
            n += (size_t)w;
    }
    if (errnum != 0 && n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, ": %s", strerror(errnum));
    if (n > sizeof line - 2)
        n = sizeof line - 2;  /* truncated message: still one line */
    line[n++] = '\n';
    while (write(log_fd, line, n) < 0 && errno == EINTR)
        ;
    if (echo_fd >= 0 && level <= echo_max)
        while (write(echo_fd, line, n) < 0 && errno == EINTR)
            ;
    errno = saved;
}

static long monotonic_second(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
        return (long)time(NULL);
    return (long)ts.tv_sec + 1;     /* never 0, which means "none yet" */
}

/* The failures a line is due to tell of now (taken), or 0 (errno kept). */
static unsigned long repeat_due(struct log_repeat *r)
{
    int saved = errno;
    long now = monotonic_second();
    errno = saved;
    if (r->said != 0 && now - r->said < 60)
        return 0;
    unsigned long n = r->times;
    r->times = 0;
    r->said = now;
    return n;
}

unsigned long log_repeat_failed(struct log_repeat *r)
{
    r->times++;
    return repeat_due(r);
}

unsigned long log_repeat_recovered(struct log_repeat *r)
{
    return r->times > 0 ? repeat_due(r) : 0;
}

unsigned long log_repeat_untold(struct log_repeat *r)
{
    unsigned long n = r->times;
    r->times = 0;
    return n;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_write(level, 0, fmt, ap);
    va_end(ap);
}

void log_errno(enum log_level level, const char *fmt, ...)
{
    int saved = errno;
    va_list ap;
    va_start(ap, fmt);
    log_write(level, saved, fmt, ap);
    va_end(ap);
    errno = saved;
}

/* log.c: the error log.  Every message is formatted into one line and written
 * with a single write(2) so lines from several processes never interleave. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
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

/* At start: the administrator's path, as it is.  But as root, not a
 * symbolic link another user made, nor a file with other names: either may
 * point the log at any file (nginx's CVE-2016-1247 needs only a log
 * directory the workers' user may write), which root would create or
 * append to.  The link is refused before it is opened (the open would
 * create what it names, or hang on a FIFO), and a path that was no link is
 * opened without following one and must still be the file looked at. */
static int open_at_start(const char *path, int flags, int *linked)
{
    struct stat named, st;
    int seen = lstat(path, &named) == 0;
    int is_link = seen && S_ISLNK(named.st_mode);
    int as_root = geteuid() == 0;
    if (as_root && is_link && named.st_uid != 0) {
        log_msg(LOG_ERROR, "log %s is a symbolic link made by uid %lu, not root: "
                "refusing to open what it names as root", path, (unsigned long)named.st_uid);
        errno = EPERM;
        return -1;
    }
    int fd = open(path, flags | (as_root && !is_link ? O_NOFOLLOW : 0), 0640);
    if (fd < 0 && errno == ENXIO)
        fd = standard_stream(path);
    if (fd < 0)
        return -1;
    int refused = 0;
    if (as_root && !is_link) {
        if (fstat(fd, &st) < 0) {
            refused = errno;
        } else if (seen && (st.st_dev != named.st_dev || st.st_ino != named.st_ino)) {
            log_msg(LOG_ERROR, "log %s was replaced while it was opened", path);
            refused = EAGAIN;
        } else if (S_ISREG(st.st_mode) && st.st_nlink != 1) {
            log_msg(LOG_ERROR, "log %s has %lu names (another may be any file): "
                    "refusing to append to it as root", path, (unsigned long)st.st_nlink);
            refused = EMLINK;
        }
    }
    if (refused != 0) {
        close(fd);
        errno = refused;
        return -1;
    }
    *linked = is_link;
    return fd;
}

/* A path that was a symbolic link when first opened is the administrator's
 * choice and is followed again; one that was not is not followed when
 * reopened, and what it names then must be a regular file with no other
 * links: whoever may write the log directory (the workers' user, say) could
 * otherwise link it to any file the master, as root, then appends to, or
 * put a FIFO there that would hang the master's open. */
int log_file_open(const char *path, int *linked)
{
    const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
    if (*linked < 0)
        return open_at_start(path, flags, linked);
    int fd = open(path, flags | O_NONBLOCK | (*linked ? 0 : O_NOFOLLOW), 0640);
    if (fd < 0)
        return -1;
    struct stat st;
    int refused = fstat(fd, &st) < 0 ? errno
                : !S_ISREG(st.st_mode) ? ENODEV
                : !*linked && st.st_nlink != 1 ? EMLINK : 0;
    if (refused == 0 && fcntl(fd, F_SETFL, O_APPEND) < 0)     /* O_NONBLOCK off */
        refused = errno;
    if (refused != 0) {
        close(fd);
        errno = refused;
        return -1;
    }
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

int log_file_give(int fd, const char *path, uid_t uid, gid_t gid)
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
    return fchown(fd, uid, gid);
}

int log_give(uid_t uid, gid_t gid)
{
    return log_opened ? log_file_give(log_fd, log_path, uid, gid) : 0;
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

/* daemon.c: detaching from the terminal and the pid file (master only). */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"

static int ready_fd = -1;
/* The pid file's lock is an fcntl(2) record lock, not flock(2): it is the
 * master's alone (a fork does not inherit it), so workers still draining
 * after the master died cannot keep a restarted server out; and it goes with
 * the master whatever way it ends, so a file left behind by a crash is taken
 * over.  It is lost if the master closes any descriptor of the file, so
 * pid_fd is the only one, kept until daemon_remove_pid_file(). */
static int pid_fd = -1;
static const char *pid_path;
static pid_t pid_owner;

int daemon_detach(void)
{
    int p[2];
    if (pipe(p) < 0) {
        log_errno(LOG_ERROR, "daemon: pipe");
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        log_errno(LOG_ERROR, "daemon: fork");
        return -1;
    }
    if (pid > 0) {
        char c;
        ssize_t n;
        close(p[1]);
        while ((n = read(p[0], &c, 1)) < 0 && errno == EINTR)
            ;
        _exit(n == 1 ? EXIT_SUCCESS : EXIT_FAILURE);
    }
    close(p[0]);
    ready_fd = p[1];
    if (fcntl(ready_fd, F_SETFD, FD_CLOEXEC) < 0)
        log_errno(LOG_WARN, "daemon: FD_CLOEXEC on the start-up pipe");
    if (setsid() < 0) {
        log_errno(LOG_ERROR, "daemon: setsid");
        return -1;
    }
    if (chdir("/") < 0) {
        log_errno(LOG_ERROR, "daemon: chdir /");
        return -1;
    }
    if (log_echo_keep() < 0)
        log_errno(LOG_WARN, "daemon: keeping standard error for start-up messages");
    int null = open("/dev/null", O_RDWR);
    if (null < 0) {
        log_errno(LOG_ERROR, "daemon: /dev/null");
        return -1;
    }
    if (dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0) {
        log_errno(LOG_ERROR, "daemon: redirecting standard input/output/error to /dev/null");
        return -1;
    }
    if (null > 2)
        close(null);
    return 0;
}

void daemon_close_ready_pipe(void)
{
    if (ready_fd >= 0)
        close(ready_fd);
    ready_fd = -1;
}

void daemon_ready(void)
{
    if (ready_fd < 0)
        return;
    while (write(ready_fd, "", 1) < 0 && errno == EINTR)
        ;
    close(ready_fd);
    ready_fd = -1;
}

/* The pid written in the pid file open on fd, or 0 if there is none (yet). */
static long pid_in_file(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end;
    errno = 0;
    long pid = strtol(buf, &end, 10);
    if (errno != 0 || end == buf || pid <= 0 || (*end != '\n' && *end != '\0'))
        return 0;
    return pid;
}

/* Logs that the pid file at path (open as fd) is locked by holder (0: not
 * known; then what the file says). */
static void say_held(const char *path, int fd, long holder)
{
    if (holder <= 0)
        holder = pid_in_file(fd);
    if (holder > 0)
        log_msg(LOG_ERROR, "pid file %s is held by running process %ld: is another cowd "
                "using it? Each server needs its own --pid-file", path, holder);
    else
        log_msg(LOG_ERROR, "pid file %s is held by another running process: is another "
                "cowd using it? Each server needs its own --pid-file", path);
}

int daemon_check_pid_file(const char *path)
{
    /* none yet, or one daemon_write_pid_file will say why it cannot take;
     * only a regular file is opened (opening a FIFO or a device does things) */
    struct stat named, st;
    if (lstat(path, &named) < 0 || !S_ISREG(named.st_mode))
        return 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
    int held = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && fcntl(fd, F_GETLK, &q) == 0 &&
               q.l_type != F_UNLCK;
    if (held)
        say_held(path, fd, (long)q.l_pid);
    close(fd);
    return held ? -1 : 0;
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int daemon_write_pid_file(const char *path)
{
    /* A holder that is exiting may unlink the file between our open and our
     * lock: the lock would then be on a file nobody can find.  Check that
     * path still names the locked file, and try again if not. */
    for (int tries = 0;; tries++) {
        if (tries == 5) {
            log_msg(LOG_ERROR, "pid file %s keeps being replaced: is another cowd starting with it?",
                    path);
            return -1;
        }
        /* no O_TRUNC: the file may be a running server's; O_NOFOLLOW: opened
         * as root, perhaps in a directory others can write; O_NONBLOCK: a
         * FIFO put there must not hang the start */
        const int flags = O_RDWR | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC;
        /* made here, the file is ours whoever the file system says owns it
         * (root squashed to nobody on NFS, say) */
        int fd = open(path, flags | O_CREAT | O_EXCL, 0644);
        int made = fd >= 0;
        if (fd < 0 && errno == EEXIST) {
            fd = open(path, flags);
            if (fd < 0 && errno == ENOENT)
                continue;           /* removed meanwhile: make it */
        }
        if (fd < 0) {
            log_errno(LOG_ERROR, "cannot open pid file %s", path);
            return -1;
        }
        struct stat st, now;
        if (fstat(fd, &st) < 0) {
            log_errno(LOG_ERROR, "cannot stat pid file %s", path);
            close(fd);
            return -1;
        }
        if (!S_ISREG(st.st_mode)) {
            log_msg(LOG_ERROR, "pid file %s is not a regular file", path);
            close(fd);
            return -1;
        }
        /* a hard link put there by whoever may write the directory would
         * have root truncate the file it names (O_NOFOLLOW stops symbolic
         * links only); as for the logs */
        if (st.st_nlink > 1) {      /* 0: unlinked meanwhile, retried below */
            log_msg(LOG_ERROR, "pid file %s has other names (hard links): refusing to write it", path);
            close(fd);
            return -1;
        }
        /* a file another user made there (one who may write the directory,
         * the workers' user say) stays theirs: they could hold its lock and
         * stop every start, or write another pid into it for a script to
         * signal as root */
        if (!made && st.st_uid != geteuid()) {
            log_msg(LOG_ERROR, "pid file %s belongs to uid %lu, not to uid %lu that cowd runs as: "
                    "refusing to use it (remove it, or give another --pid-file)", path,
                    (unsigned long)st.st_uid, (unsigned long)geteuid());
            close(fd);
            return -1;
        }
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
        if (fcntl(fd, F_SETLK, &fl) < 0) {
            if (errno != EACCES && errno != EAGAIN) {
                log_errno(LOG_ERROR, "cannot lock pid file %s", path);
                close(fd);
                return -1;
            }
            /* the lock's holder; failing that (0 from another pid
             * namespace) what the file says */
            long holder = 0;
            struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
            if (fcntl(fd, F_GETLK, &q) == 0) {
                if (q.l_type == F_UNLCK) {      /* the holder just ended */
                    close(fd);
                    continue;
                }
                holder = (long)q.l_pid;
            }
            say_held(path, fd, holder);
            close(fd);
            return -1;
        }
        if (stat(path, &now) == 0 && same_file(&st, &now)) {
            pid_fd = fd;
            break;
        }
        close(fd);
    }

    /* ours now: a stale file (its process gone, its lock with it) is
     * overwritten, as is one that names a live process but is not locked */
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(pid_fd, 0) < 0 || pwrite(pid_fd, buf, (size_t)n, 0) != n) {
        log_errno(LOG_ERROR, "cannot write pid file %s", path);
        unlink(path);                   /* still locked: no one else's yet */
        close(pid_fd);
        pid_fd = -1;
        return -1;
    }
    pid_path = path;
    pid_owner = getpid();
    return 0;
}

void daemon_close_pid_file(void)
{
    /* a worker's close cannot drop the master's lock (fcntl locks are per
     * process); it keeps a root-opened, writable file from the workers */
    if (pid_fd >= 0)
        close(pid_fd);
    pid_fd = -1;
    pid_path = NULL;
}

void daemon_remove_pid_file(void)
{
    if (pid_fd < 0 || pid_owner != getpid())
        return;
    /* Only the file we hold locked, naming us: were it removed by hand and
     * another server started since, path would be that one's. */
    struct stat held, now;
    if (fstat(pid_fd, &held) == 0 && stat(pid_path, &now) == 0 && same_file(&held, &now) &&
        pid_in_file(pid_fd) == (long)getpid() && unlink(pid_path) < 0 && errno != ENOENT)
        log_errno(LOG_WARN, "cannot remove pid file %s", pid_path);
    close(pid_fd);                      /* unlocks it, now that it is gone */
    pid_fd = -1;
    pid_path = NULL;
}

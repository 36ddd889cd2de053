/* daemon.c: detaching from the terminal and the pid file (master only). */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"

static int ready_fd = -1;
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

int daemon_write_pid_file(const char *path)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        log_errno(LOG_ERROR, "cannot create pid file %s", path);
        return -1;
    }
    if (write(fd, buf, (size_t)n) != n) {
        log_errno(LOG_ERROR, "cannot write pid file %s", path);
        close(fd);
        unlink(path);
        return -1;
    }
    if (close(fd) < 0) {
        log_errno(LOG_ERROR, "cannot write pid file %s", path);
        unlink(path);
        return -1;
    }
    pid_path = path;
    pid_owner = getpid();
    return 0;
}

void daemon_remove_pid_file(void)
{
    if (pid_path != NULL && pid_owner == getpid() && unlink(pid_path) < 0 && errno != ENOENT)
        log_errno(LOG_WARN, "cannot remove pid file %s", pid_path);
    pid_path = NULL;
}

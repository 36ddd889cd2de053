/* log.h: the one logging helper: leveled, timestamped lines to the error log. */
#ifndef COWD_LOG_H
#define COWD_LOG_H

#include <sys/types.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Opens a log file to append to.  *linked: -1 at the first open, which sets
 * it (1: path was a symbolic link); that open takes /dev/stdout or
 * /dev/stderr when a socket is the stream itself.  As root, every open
 * follows only symbolic links root made (else EPERM, logged: the link
 * another user made is named) and refuses a file with other names (EMLINK).
 * Reopened, a path that was not a link is not followed (ELOOP), and must
 * name a regular file (else ENODEV) with no other links (else EMLINK). */
int  log_file_open(const char *path, int *linked);
/* Set where messages go (default stderr) and the most verbose level shown. */
int  log_open(const char *path);
/* SIGUSR1: opens path again, unless the log is not a regular file (a
 * terminal, pipe or device: nothing to rotate, and the workers' user may not
 * open it).  0, or -1 with errno (the old log still in use). */
int  log_reopen(const char *path);
/* The wording callers add to a failed log_file_give() or reopen. */
#define LOG_GIVE_RULE "only a regular file named by the path itself, with no other links, is given"
#define LOG_REOPEN_RULE "still writing to the old file; a log is reopened only as a regular file, " \
                        "with no other links, not through a symbolic link made after start " \
                        "nor, as root, one another user made"
void log_set_level(enum log_level level);

/* Gives the log open on fd to the workers' user (uid; the file's group is
 * kept: logrotate's "create 0640 root adm" leaves it readable by adm) so
 * that they can reopen it by path, if it is a regular file: a terminal,
 * pipe or device named as a log stays whose it is.  0, or -1 with errno: ELOOP if path does
 * not name that file itself (a symbolic link), EMLINK if the file has other
 * names; such a file is not given. */
int log_file_give(int fd, const char *path, uid_t uid);
/* The same for the error log, if log_open() opened one. */
int log_give(uid_t uid);
/* 0 if this process can open the file at path for writing (as a reopen
 * would), or could create it there once the master has (it is missing
 * but its directory can be searched); -1 with errno. */
int log_path_reachable(const char *path);
/* The same for the error log; 0 if there is no error log file to rotate. */
int log_reachable(void);
/* 1 if fd is open on a terminal, pipe, socket or device: no file to rotate
 * or give away, and writes to a pipe are whole only up to PIPE_BUF. */
int log_not_regular_file(int fd);

/* Start-up echo: while cowd starts, errors and warnings written to a log
 * file also go to the standard error it was started with, so that a server
 * that fails to start says why where it was started (nginx does the same);
 * of the workers, only the first, and only its errors (a warning only a
 * worker gives is in the log alone: the price of not repeating the master's
 * warnings once per worker).
 * log_echo_begin() after log_open(); log_echo_keep() before a daemon points
 * standard error at /dev/null (it keeps a duplicate); log_echo_end() once
 * serving.  Nothing is echoed when the log is standard error's own file. */
void log_echo_begin(void);
int  log_echo_keep(void);
void log_echo_end(void);
/* A worker: what the master already said (MIME warnings) is not repeated. */
void log_echo_errors_only(void);

/* A failure that may repeat for as long as its cause lasts (descriptors
 * short, a disk full, a security module refusing): a line about it at most
 * once a minute, with how many failures it stands for.  The minute is
 * the monotonic clock's: a step back of the wall clock (NTP correcting a
 * wrong clock after boot) must not silence it for hours. */
struct log_repeat {
    long said;              /* monotonic second of the last line; 0: none yet */
    unsigned long times;    /* failures since that line */
};
/* Counts a failure: the failures a line now stands for (this one
 * included) if one is due, else 0 (errno kept). */
unsigned long log_repeat_failed(struct log_repeat *r);
/* After a success: the failures no line has told of yet, if a minute has
 * passed since the last line (so a burst that ended is told once, and a
 * cause that comes and goes costs a line a minute), else 0. */
unsigned long log_repeat_recovered(struct log_repeat *r);
/* At the end (a worker stopping): the failures no line has told of yet,
 * however recent the last line; 0 if none. */
unsigned long log_repeat_untold(struct log_repeat *r);

/* log_msg: printf-style.  log_errno: appends ": strerror(errno)" (errno saved
 * on entry), like err(3).  Both write one whole line with one write(2). */
void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void log_errno(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif

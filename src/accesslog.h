/* accesslog.h: the access log (Common or Combined Log Format).
 *
 * Each worker formats lines into its own preallocated 64 KiB buffer and
 * writes whole lines with one write(2) on an O_APPEND descriptor: when the
 * buffer is nearly full, at least once a second (a Pth timer thread), on
 * reopen and at exit.  So all workers share one file without interleaving
 * and the per-request cost is formatting into memory (logging was the
 * dominant fixed cost in the OS/web-server interaction study).  A log that
 * is a pipe gets writes of whole lines of at most PIPE_BUF bytes, which a
 * pipe keeps whole too. */
#ifndef COWD_ACCESSLOG_H
#define COWD_ACCESSLOG_H

#include <stdint.h>
#include <sys/types.h>

#include "autoconfig.h"
#include "connection.h"

enum { ACCESSLOG_COMMON = 0, ACCESSLOG_COMBINED = 1 };

#ifdef COWD_ACCESS_LOG

/* Master, at start-up: opens (creating) path for appending; the descriptor
 * is inherited by the workers.  0, or -1 with errno. */
int accesslog_open(const char *path, int format);
/* Gives the current log file to the workers' user (after a root master
 * created it).  0, or -1 with errno. */
int accesslog_chown(uid_t uid);
/* Worker: 0 if it can open the log by its path (as a reopen would), or if
 * the log is not a file to rotate; -1 with errno. */
int accesslog_reachable(void);
/* Reopens the log by path (SIGUSR1, logrotate).  Pending lines go to the old
 * file first.  0, or -1 (logged) keeping the old descriptor. */
int accesslog_reopen(void);

/* Worker, after pth_init: allocates the buffer and starts the flush thread.
 * No-op without an access log.  0, or -1 (logged). */
int accesslog_start(void);
/* Writes out the pending lines. */
void accesslog_flush(void);
/* Worker, stopping: writes out the pending lines and tells of lines lost
 * that the line-a-minute rule has not told of yet. */
void accesslog_stop(void);

/* Request path: mark = accesslog_mark(c) before the response is produced,
 * accesslog_request(c, req, mark) after it; the byte count is what the
 * response added to the output (head and body). */
extern int accesslog_fd;
static inline uint64_t accesslog_mark(const struct conn *c)
{
    return c->out.bytes_sent + c->out.len;
}
void accesslog_write(const struct conn *c, const struct http_request *req, uint64_t mark);
static inline void accesslog_request(const struct conn *c, const struct http_request *req,
                                     uint64_t mark)
{
    if (accesslog_fd >= 0)
        accesslog_write(c, req, mark);
}

#else   /* configured with --disable-access-log: nothing on the request path */
static inline int accesslog_open(const char *path, int format)
{ (void)path; (void)format; return 0; }
static inline int accesslog_chown(uid_t uid) { (void)uid; return 0; }
static inline int accesslog_reachable(void) { return 0; }
static inline int accesslog_reopen(void) { return 0; }
static inline int accesslog_start(void) { return 0; }
static inline void accesslog_flush(void) { }
static inline void accesslog_stop(void) { }
static inline uint64_t accesslog_mark(const struct conn *c) { (void)c; return 0; }
static inline void accesslog_request(const struct conn *c, const struct http_request *req,
                                     uint64_t mark)
{ (void)c; (void)req; (void)mark; }
#endif

#endif

/* buff.h: Apache-1.3-style buffered output for one connection.
 * Small writes gather in the buffer; a large write leaves together with the
 * pending bytes in one writev without being copied; the owner flushes only
 * when it is about to block on input, so pipelined responses batch. */
#ifndef COWD_BUFF_H
#define COWD_BUFF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "io.h"

/* Writes of at least this many bytes that do not fit are sent with writev
 * straight from the caller's memory; smaller ones are cheaper to copy. */
#define BUFF_LARGE_WRITE 64

struct buff {
    int fd;
    char *buf;
    size_t cap;
    size_t len;                 /* pending bytes in buf */
    uint64_t bytes_sent;        /* bytes handed to the kernel */
    unsigned syscalls;          /* write system calls issued (for tests) */
    int failed;                 /* sticky: a write failed; the connection is dead */
    int file_shrank;            /* a file being sent ended early (with failed) */
    int file_unreadable;        /* a file being sent could not be read to its end
                                 * (shrunk or an I/O error; with failed) after what
                                 * was pending left: the socket itself is sound */
    int closing;                /* the connection ends after these bytes: every send
                                 * says MSG_MORE, so the last segment waits for the
                                 * close (or shutdown) and leaves with the FIN */
    unsigned timeout;           /* seconds without progress before giving up */
    size_t sendfile_chunk;      /* most bytes per sendfile call (0: no limit) */
    struct io_waiter *waiter;
};

void buff_init(struct buff *b, char *storage, size_t cap, struct io_waiter *w, unsigned timeout);
void buff_attach(struct buff *b, int fd);   /* new connection: empty, not failed */

/* All return 0, or -1 once the connection has failed (then every later call
 * is a no-op returning -1). */
int buff_write(struct buff *b, const void *data, size_t len);
int buff_puts(struct buff *b, const char *s);
int buff_put_u64(struct buff *b, uint64_t v);
int buff_flush(struct buff *b);
/* Sends what is pending at once, even on a connection that is closing (whose
 * sends otherwise wait for the rest with MSG_MORE): before waiting for bytes
 * the client may send only once it has these (an interim response, replies
 * to pipelined requests while a body is read). */
int buff_flush_now(struct buff *b);
/* Flush the pending bytes hinting that more follows, then send file bytes. */
int buff_sendfile(struct buff *b, int file_fd, off_t offset, uint64_t len);
/* A file being sent could not be read to its end (shrank: it ended early;
 * else an I/O error): what is pending leaves first (replies pipelined
 * before this one, and its head), and the buffer fails.  Returns -1. */
int buff_file_cut(struct buff *b, int shrank);

static inline size_t buff_pending(const struct buff *b) { return b->len; }

#endif

/* buff.c: the per-connection output buffer (Apache 1.3 buff.c semantics). */
#include "buff.h"

#include <errno.h>
#include <string.h>

void buff_init(struct buff *b, char *storage, size_t cap, struct io_waiter *w, unsigned timeout)
{
    memset(b, 0, sizeof *b);
    b->buf = storage;
    b->cap = cap;
    b->waiter = w;
    b->timeout = timeout;
    b->fd = -1;
}

void buff_attach(struct buff *b, int fd)
{
    b->fd = fd;
    b->len = 0;
    b->failed = 0;
    b->file_shrank = 0;
    b->file_unreadable = 0;
    b->closing = 0;
    b->bytes_sent = 0;
    b->syscalls = 0;
}

static int send_iov(struct buff *b, struct iovec *iov, int n, int more)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    b->syscalls++;
    size_t written;
    if (io_writev_all(b->waiter, b->fd, iov, n, b->timeout, more || b->closing, &written) < 0) {
        b->bytes_sent += written;       /* the access log counts what left */
        b->failed = 1;
        return -1;
    }
    b->bytes_sent += total;
    return 0;
}

static int flush_pending(struct buff *b, int more)
{
    struct iovec iov = { b->buf, b->len };
    if (b->len == 0)
        return 0;
    b->len = 0;
    return send_iov(b, &iov, 1, more);
}

/* The pending bytes (if any) and p[0..len) in one writev, nothing copied. */
static int send_pending_and(struct buff *b, const void *p, size_t len)
{
    struct iovec iov[2] = { { b->buf, b->len }, { (void *)p, len } };
    int skip = b->len == 0;
    b->len = 0;
    return send_iov(b, iov + skip, 2 - skip, 0);
}

int buff_write(struct buff *b, const void *data, size_t len)
{
    const char *p = data;

    if (b->failed)
        return -1;
    if (len <= b->cap - b->len) {           /* fits: copy, no system call */
        memcpy(b->buf + b->len, p, len);
        b->len += len;
        return 0;
    }
    /* a buffer's worth or more, or a large write: no copy */
    if (b->len == 0 || len >= BUFF_LARGE_WRITE)
        return send_pending_and(b, p, len);
    /* tiny write that does not fit: top the buffer up, flush, go on */
    size_t room = b->cap - b->len;
    memcpy(b->buf + b->len, p, room);
    b->len += room;
    p += room;
    len -= room;
    if (flush_pending(b, 0) < 0)
        return -1;
    if (len >= b->cap) {                    /* a buffer's worth: send directly */
        struct iovec iov = { (void *)p, len };
        return send_iov(b, &iov, 1, 0);
    }
    memcpy(b->buf, p, len);
    b->len = len;
    return 0;
}

int buff_puts(struct buff *b, const char *s)
{
    return buff_write(b, s, strlen(s));
}

int buff_put_u64(struct buff *b, uint64_t v)
{
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return buff_write(b, tmp + i, sizeof tmp - i);
}

int buff_flush(struct buff *b)
{
    if (b->failed)
        return -1;
    return flush_pending(b, 0);
}

int buff_flush_now(struct buff *b)
{
    if (b->failed)
        return -1;
    int closing = b->closing;
    b->closing = 0;
    int rc = flush_pending(b, 0);
    b->closing = closing;
    return rc;
}

int buff_sendfile(struct buff *b, int file_fd, off_t offset, uint64_t len)
{
    if (b->failed)
        return -1;
    if (flush_pending(b, len > 0) < 0)
        return -1;
    if (len == 0)
        return 0;
    b->syscalls++;
    off_t start = offset;
    /* nothing is pending now: the buffer is the copy's bounce buffer */
    if (io_sendfile_all(b->waiter, b->fd, file_fd, &offset, len, b->timeout,
                        b->sendfile_chunk, b->buf, b->cap) < 0) {
        b->bytes_sent += (uint64_t)(offset - start);   /* what left, for the access log */
        if (errno == ENODATA || errno == EIO)
            return buff_file_cut(b, errno == ENODATA);
        b->failed = 1;
        return -1;
    }
    b->bytes_sent += len;
    return 0;
}

int buff_file_cut(struct buff *b, int shrank)
{
    int e = errno;
    b->file_shrank = shrank;
    b->file_unreadable = buff_flush(b) == 0;
    b->failed = 1;
    errno = e;
    return -1;
}

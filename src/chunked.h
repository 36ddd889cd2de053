/* chunked.h — incremental decoder for the chunked transfer coding (RFC 9112 §7.1) of request
 * bodies we only discard. Pure: no I/O, no allocation; state lives in the caller's struct. */
#ifndef COWD_CHUNKED_H
#define COWD_CHUNKED_H

#include <stddef.h>
#include <stdint.h>

/* Bounds that keep a hostile client from streaming framing bytes forever without the caller's
 * cap on data bytes ever tripping. */
#define CHUNKED_MAX_SIZE_DIGITS 16u      /* significant hex digits in a chunk-size (64 bits) */
#define CHUNKED_MAX_LEADING_ZEROS 16u    /* leading zeros before them */
#define CHUNKED_MAX_EXT_TOTAL 4096u      /* chunk-ext bytes (excl. line terminators) over the whole body */
#define CHUNKED_MAX_TRAILER_TOTAL 8192u  /* trailer section bytes incl. all line terminators */

struct chunked_state {
    int state;
    uint64_t remaining;       /* chunk-size being parsed, then data bytes left in the chunk */
    unsigned ext_len;         /* chunk-ext bytes seen so far, whole body */
    unsigned size_digits;     /* significant hex digits of the current chunk-size */
    unsigned leading_zeros;   /* leading '0's of the current chunk-size */
    unsigned trailer_len;     /* trailer bytes seen so far */
    uint64_t data_total;      /* data bytes consumed so far, whole body */
};

void chunked_init(struct chunked_state *);

/* Consume up to len bytes of in. Returns CHUNKED_DONE (body incl. trailers fully consumed;
 * *consumed tells where the next request starts), CHUNKED_MORE (all of len consumed, need more),
 * or CHUNKED_ERROR (bad syntax → 400 + close; *consumed is where the error was found).
 * *data_bytes is the running total of chunk data bytes over the whole body (not a delta), so
 * the caller can cap the size of what it discards. After DONE or ERROR further calls return
 * the same result and consume nothing. */
enum chunked_result { CHUNKED_MORE, CHUNKED_DONE, CHUNKED_ERROR };
enum chunked_result chunked_feed(struct chunked_state *, const char *in, size_t len, size_t *consumed,
                                 uint64_t *data_bytes);

/* Data bytes the body has committed to so far: those consumed plus what is still owed of a
 * chunk whose size has been read (saturating at UINT64_MAX). A cap checked against this trips
 * as soon as a chunk-size line announces too much, not only after the bytes have been read, so
 * "ffffffffffffffff" + a trickle of data is refused at once, like an over-large Content-Length. */
uint64_t chunked_announced(const struct chunked_state *);

#endif

/* range.h — parsing of the Range request header (RFC 9110 §14.1-§14.2) for byte ranges of a
 * representation of known size. Pure: no I/O, no allocation. */
#ifndef COWD_RANGE_H
#define COWD_RANGE_H

#include <stddef.h>
#include <stdint.h>

struct byte_range { uint64_t first, last; };  /* inclusive */

enum range_result { RANGE_NONE /* ignore Range: serve 200 full */, RANGE_OK, RANGE_UNSATISFIABLE /* 416 */ };

/* Parses "bytes=..." (unit case-insensitive) for a representation of `size` bytes. Syntax errors or
 * other units → RANGE_NONE. int-range first-last (last clipped to size-1), suffix -N (last N bytes;
 * N=0 unsatisfiable), open first-. Unsatisfiable ranges are dropped; if none remain →
 * RANGE_UNSATISFIABLE. size 0: only a non-zero suffix-range is satisfiable (RFC 9110 §14.1.1), and it
 * selects nothing, so that case is RANGE_NONE (200 with the empty body); other ranges → 416.
 * More than max_ranges range-specs (satisfiable or not), more satisfiable ranges than out_cap, or a
 * sum of satisfiable lengths exceeding size (overlap amplification) → RANGE_NONE.
 * On RANGE_OK, out[0..*count) holds the satisfiable ranges in request order; otherwise *count = 0. */
enum range_result range_parse(const char *hdr, size_t len, uint64_t size, unsigned max_ranges,
                              struct byte_range *out, unsigned out_cap, unsigned *count);

#endif

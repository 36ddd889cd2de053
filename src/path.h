/* path.h — turns the raw request path into a safe, normalized path below the document root.
 * Pure: no I/O, no allocation, no filesystem access (symlinks are the caller's business). */
#ifndef COWD_PATH_H
#define COWD_PATH_H

#include <stddef.h>

/* Percent-decode raw (exactly once), reject %00 and any decoded CTL (0x00-0x1F, 0x7F) and invalid
 * %-escapes → return 400; resolve "." and ".." segments and collapse repeated '/'; ".." above the
 * root → 400 (as nginx). raw must start with '/' (else 400).
 * Output: a path starting with '/', NUL-terminated, in out (outcap bytes); *trailing_slash set if the
 * decoded path ended in '/' or in a "." / ".." segment (both name a directory); in that case out
 * ends in '/' too. Returns 0 on success, or an HTTP status (400, or 414 if it does not fit, also
 * when only an intermediate form before ".." resolution does not fit). */
int path_normalize(const char *raw, size_t len, char *out, size_t outcap, int *trailing_slash);

#endif

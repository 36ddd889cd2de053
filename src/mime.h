/* mime.h: file extension -> Content-Type, loaded once from a mime.types file. */
#ifndef COWD_MIME_H
#define COWD_MIME_H

#include <stddef.h>

/* Longest type accepted: RFC 6838 §4.2 caps type and subtype names at 127 characters each. */
#define MIME_TYPE_MAX 255

/* Loads an Apache/nginx-style mime.types ("type ext ext ..." lines).  A line
 * whose type is not token/token of at most 127 characters each is skipped
 * with a warning.  0, or -1 with errno set if the file cannot be read.
 * Reloading replaces the table. */
int mime_load(const char *path);
/* Content-Type for a file name (by its last extension, case-insensitive);
 * application/octet-stream when unknown.  Never NULL. */
const char *mime_type_for(const char *name, size_t len);
/* Number of extensions loaded. */
size_t mime_count(void);

#endif

/* mime.h: file extension -> Content-Type, loaded once from a mime.types file. */
#ifndef COWD_MIME_H
#define COWD_MIME_H

#include <stddef.h>

/* Loads an Apache/nginx-style mime.types ("type ext ext ..." lines).
 * 0, or -1 with errno set if the file cannot be read.  Reloading replaces
 * the table. */
int mime_load(const char *path);
/* Content-Type for a file name (by its last extension, case-insensitive);
 * application/octet-stream when unknown.  Never NULL. */
const char *mime_type_for(const char *name, size_t len);
/* Number of extensions loaded. */
size_t mime_count(void);

#endif

/* listing.h: HTML directory listings (optional feature, --listing). */
#ifndef COWD_LISTING_H
#define COWD_LISTING_H

#include "connection.h"
#include "http_parse.h"

/* A listing follows its directory, so caches must ask before reusing one. The 304 to
 * If-None-Match sends it too (RFC 9110 §15.4.5: a 304 has the 200's Cache-Control). */
#define LISTING_CACHE_CONTROL "no-cache"

/* Opens the directory open as dir_fd (perhaps for search only) for reading,
 * which a listing needs: a descriptor, or -1 with errno.  Done before the
 * request's conditions are weighed: they apply only to a listing that can
 * be sent (RFC 9110 §13.2.1). */
int listing_open(int dir_fd);

/* Answers with a sorted HTML listing of the directory read through read_fd
 * (from listing_open; closed here), whose decoded path (from the root, no
 * trailing slash except "/") is dir_path. */
void listing_send(struct conn *c, const struct http_request *req, int read_fd,
                  const char *dir_path);

#endif

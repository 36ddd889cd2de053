/* listing.h: HTML directory listings (optional feature, --listing). */
#ifndef COWD_LISTING_H
#define COWD_LISTING_H

#include "connection.h"
#include "http_parse.h"

/* Answers with a sorted HTML listing of the directory open as dir_fd, whose
 * decoded path (from the root, no trailing slash except "/") is dir_path. */
void listing_send(struct conn *c, const struct http_request *req, int dir_fd, const char *dir_path);

#endif

/* static_file.h: answering GET and HEAD from files under the document root. */
#ifndef COWD_STATIC_FILE_H
#define COWD_STATIC_FILE_H

#include "connection.h"
#include "http_parse.h"

/* Opens /proc/self/fd (Linux), through which files are opened again by
 * descriptor; after any chroot (in_chroot: 1) and before privileges are
 * dropped.  Failing is logged, not fatal. */
void static_file_open_fd_dir(int in_chroot);
/* Opens the document root at startup.  0, or -1 (logged). */
int static_file_init(const char *root);
/* After the privileges are dropped: the worker's user (named in the error;
 * NULL: not changed) may search the root opened before, else every request
 * would be 403.  0, or -1 (logged). */
int static_file_root_searchable(const char *root, const char *user);
/* After the privilege drop: from now on the root's name is looked at again
 * every --cache-validate seconds and a root switched to another directory
 * (a symlink to a new release) is opened in its place, if the workers' user
 * can look the name up (if not, that is logged once, and only a SIGHUP
 * picks up a new root). */
void static_file_watch_root(void);
void static_file_serve(struct conn *c, const struct http_request *req);
/* The status for a file or directory that could not be opened or read:
 * 404 (no such name), 503 (out of descriptors or memory), 500 (I/O error),
 * else 403. */
int status_for_errno(int e);
/* For a listing's symbolic links: what a request for name, in the directory
 * at decoded path dir_path ("/" or "/a/b"), would find: 1 a directory, 0
 * anything else, -1 nothing it could serve: a link out of the root (unless
 * --symlinks-outside-root), whose type would tell about a file outside, one
 * that leads nowhere or into a directory the server cannot search, or a
 * FIFO, socket or device (403).  The listing leaves those out. */
int static_file_entry_kind(const char *dir_path, const char *name);

#endif

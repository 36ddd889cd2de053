/* spawn.h: starting the server's own long-lived Pth threads. */
#ifndef COWD_SPAWN_H
#define COWD_SPAWN_H

#include <pth.h>
#include <stddef.h>

/* A detached thread named `name` with `stack` bytes of stack (0: Pth's
 * default) running fn(arg); NULL (errno set) on failure. */
pth_t spawn_detached(const char *name, size_t stack, void *(*fn)(void *), void *arg);

#endif

/* spawn.h: starting the server's own long-lived Pth threads. */
#ifndef COWD_SPAWN_H
#define COWD_SPAWN_H

#include <pth.h>
#include <stddef.h>

/* A detached thread named `name` with `stack` bytes of stack (0: Pth's
 * default) running fn(arg); NULL (errno set) on failure. */
pth_t spawn_detached(const char *name, size_t stack, void *(*fn)(void *), void *arg);

/* The same at Pth priority prio (PTH_PRIO_MIN..PTH_PRIO_MAX). */
pth_t spawn_detached_prio(const char *name, size_t stack, int prio,
                          void *(*fn)(void *), void *arg);

/* The accept, depot and park threads: connection intake and hand-off run
 * before the busy handlers' next turns.  At the standard priority a new or
 * woken connection waited behind every ready handler, so under load the
 * connections waiting for a handler -- and the client's open ones -- grew
 * until the client collapsed (README, Performance: the httperf sweep at
 * 10,000 conn/s stayed healthy in 5 of 6 short runs at this priority, 3 of
 * 8 at the standard one). */
#define SPAWN_PRIO_INTAKE PTH_PRIO_MAX

#endif

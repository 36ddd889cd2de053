/* acceptor.h: the accept loop that feeds the depot. */
#ifndef COWD_ACCEPTOR_H
#define COWD_ACCEPTOR_H

struct depot;
struct acceptor;

/* Prepares the accept loop of listen_fd: everything it needs is made here,
 * at start-up, so that a worker that cannot accept on one of its sockets
 * fails to start instead of serving on without it.  NULL (logged) if that
 * fails; needs Pth initialised. */
struct acceptor *acceptor_new(int listen_fd, struct depot *d);
/* Runs the accept loop in the calling thread until acceptor_stop(); then
 * closes listen_fd, frees a and returns. */
void acceptor_run(struct acceptor *a);
/* Runs it in a new Pth thread (for additional listen sockets); -1 if the
 * thread cannot be made (a is then still the caller's). */
int acceptor_spawn(struct acceptor *a);
/* Graceful stop: every accept loop closes its socket and ends.  Safe to call
 * from any Pth thread; 0, or -1 with errno. */
int acceptor_stop(void);
/* Connections accepted, and wake-ups that found none (another worker took it). */
void acceptor_stats(unsigned long *accepted, unsigned long *empty_wakeups);

#endif

/* acceptor.h: the accept loop that feeds the depot. */
#ifndef COWD_ACCEPTOR_H
#define COWD_ACCEPTOR_H

struct depot;

/* Runs the accept loop on listen_fd in the calling thread until
 * acceptor_stop(); then closes listen_fd and returns. */
void acceptor_run(int listen_fd, struct depot *d);
/* Runs it in a new Pth thread (for additional listen sockets). */
int acceptor_spawn(int listen_fd, struct depot *d);
/* Graceful stop: every accept loop closes its socket and ends.  Safe to call
 * from any Pth thread; 0, or -1 with errno. */
int acceptor_stop(void);
/* Connections accepted, and wake-ups that found none (another worker took it). */
void acceptor_stats(unsigned long *accepted, unsigned long *empty_wakeups);

#endif

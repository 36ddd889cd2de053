/* acceptor.h: the accept loop that feeds the depot. */
#ifndef COWD_ACCEPTOR_H
#define COWD_ACCEPTOR_H

struct depot;

/* Runs the accept loop on listen_fd forever in the calling thread. */
void acceptor_run(int listen_fd, struct depot *d);
/* Runs it in a new Pth thread (for additional listen sockets). */
int acceptor_spawn(int listen_fd, struct depot *d);

#endif

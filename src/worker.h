/* worker.h: one worker process: its own Pth runtime, depot, handler pool and
 * accept threads on the listen sockets it was given, a signal thread, and
 * the graceful stop. */
#ifndef COWD_WORKER_H
#define COWD_WORKER_H


struct privileges;

/* Exit status of a worker that cannot start (bad root, chroot, credentials):
 * the master does not restart it at start-up (EX_CONFIG of sysexits.h). */
#define WORKER_EXIT_CONFIG 78

struct worker_setup {
    const int *lfds;            /* listen sockets this worker accepts on */
    unsigned n_lfds;
    int life_fd;                /* read end of the master's pipe: EOF = master gone */
    int ready_fd;               /* write end of the master's ready pipe: our pid once serving */
    const struct privileges *priv;
    unsigned slot;              /* which of the --workers it is (0: says what all would) */
};

/* Runs in the child right after fork() (signals SIGTERM, SIGINT, SIGHUP,
 * SIGUSR1 blocked, as the master has them): loads the MIME table, chroots,
 * opens the document root, drops privileges, then pth_init() and serves.
 * Never returns.
 *
 * Signals, taken by a Pth thread with pth_sigwait: SIGTERM/SIGINT stop
 * gracefully (stop accepting, Connection: close on the next responses,
 * idle kept-alive connections closed, exit when all are done or after
 * --shutdown-timeout); SIGUSR1 reopens the log files by path; SIGHUP is
 * ignored (the master handles it).  EOF on life_fd also stops gracefully. */
void worker_main(const struct worker_setup *ws) __attribute__((noreturn));

#endif

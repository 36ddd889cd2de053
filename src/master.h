/* master.h: the master process: forks the workers, supervises them
 * (restart with exponential back-off), and turns signals into actions:
 * SIGTERM/SIGINT graceful stop, SIGHUP graceful restart of the workers,
 * SIGUSR1 log reopening (creating the files as root and handing them to the
 * workers' user first).  It never serves requests and never calls pth_init. */
#ifndef COWD_MASTER_H
#define COWD_MASTER_H

struct privileges;

struct master_setup {
    const int *lfds;            /* n_listen sockets, or n_listen per worker with reuseport */
    unsigned n_listen;
    int per_worker_sockets;     /* --reuseport: worker i uses lfds[i * n_listen ...] */
    const struct privileges *priv;
};

/* First thing at start: undoes dispositions inherited from the caller that
 * would break supervision, and holds SIGHUP/SIGUSR1/SIGUSR2 until the
 * master waits for them. */
void master_take_signals_from_caller(void);
/* Blocks the signals the master waits for (call before forking anything). */
void master_block_signals(void);
/* Runs until stopped; returns the process exit status. */
int master_run(const struct master_setup *ms);

#endif

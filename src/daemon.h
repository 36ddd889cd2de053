/* daemon.h: detaching from the terminal (--daemon) and the pid file. */
#ifndef COWD_DAEMON_H
#define COWD_DAEMON_H

/* Forks; the parent waits until the child calls daemon_ready() (exit 0) or
 * exits without doing so (exit 1), so that `cowd --daemon` returns only once
 * the server runs.  The child: new session, cwd /, standard input and output
 * on /dev/null (standard error too: the error log must be a file by then).
 * 0 in the child, -1 (logged) on failure. */
int daemon_detach(void);
/* Tells the waiting parent that start-up succeeded (no-op if not detached). */
void daemon_ready(void);
/* In a worker: closes its copy of the pipe, so that the parent is not kept
 * waiting by it if the master dies. */
void daemon_close_ready_pipe(void);

/* Takes a write lock on path (fcntl, kept while the master runs) and writes
 * getpid() to it: 0, or -1 logged, also when another running process holds
 * the lock.  A stale file, whose holder is gone, is taken over. */
int daemon_write_pid_file(const char *path);
/* Before the listen sockets are opened: -1 (logged) if path is a pid file
 * another running process holds, so that a second start of the same server
 * says so rather than that its address is in use; else 0.  Only a look:
 * daemon_write_pid_file takes the lock. */
int daemon_check_pid_file(const char *path);
/* In a worker: closes its copy of the pid file's descriptor. */
void daemon_close_pid_file(void);
/* At the master's exit: unlinks path if it is still the file this process
 * locked and still names it, then lets the lock go. */
void daemon_remove_pid_file(void);

#endif

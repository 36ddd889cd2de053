/* master.c: the supervising master process (see master.h).
 *
 * It waits with sigtimedwait(2) on blocked signals, so no work happens in a
 * signal handler.  A pipe whose write end only the master holds tells the
 * workers when it is gone (EOF): they stop gracefully instead of lingering. */
#include "master.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "accesslog.h"
#include "config.h"
#include "daemon.h"
#include "log.h"
#include "mime.h"
#include "privileges.h"
#include "worker.h"

#define QUICK_DEATH   10.0      /* a worker that dies sooner than this is backed off */
/* A worker writes its pid to the ready pipe once it serves (it cannot
 * signal the master after dropping privileges).  The pipe is polled every
 * READY_POLL s for READY_QUICK s after a worker's start, then once a second:
 * a worker is ready when it says so, however long it takes (one taken for
 * ready without its word had its old worker stopped, and its failure taken
 * for a crash to restart). */
#define READY_QUICK    10.0
#define READY_POLL     0.02
#define STARTUP_WAIT  10.0      /* --daemon detaches by then even if a worker is not serving */
#define BACKOFF_FIRST 0.1
#define BACKOFF_MAX   30.0

struct slot {
    pid_t pid;                  /* current worker, 0 if none */
    double started;             /* when it was forked */
    double backoff;             /* seconds; 0 = restart at once */
    double restart_at;          /* > 0: fork a new worker then */
    int ever_ran;               /* some worker of this slot said it was serving */
    int ready;                  /* the current worker said it is serving */
};

/* Replaced by SIGHUP: serves on until its slot's new worker is ready, then
 * is stopped gracefully, and killed if it has not ended well after that. */
struct old_worker { pid_t pid; unsigned slot; double started; double kill_at; int stopped; int ready; };

static const struct master_setup *setup;
static struct slot *slots;
static struct old_worker *old;      /* replaced by SIGHUP, still stopping */
static unsigned n_old, old_cap;
static int life[2] = { -1, -1 };
static int ready_pipe[2] = { -1, -1 };
static int stopping;
static int stop_asked;              /* a stop signal came: the next one stops now */
static int give_up;                 /* a worker cannot start at all */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The signals the master handles synchronously (sigtimedwait). */
static const int master_signals[] = {
    SIGCHLD, SIGTERM, SIGINT,
    SIGQUIT,                        /* nginx's graceful stop: by default a core dump */
    SIGHUP, SIGUSR1,
    SIGUSR2,                        /* by default fatal: ignored, with a word */
};
#define N_MASTER_SIGNALS (sizeof master_signals / sizeof master_signals[0])

static void master_signal_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < N_MASTER_SIGNALS; i++)
        sigaddset(set, master_signals[i]);
}

void master_take_signals_from_caller(void)
{
    /* An ignored SIGCHLD survives exec (a launcher's way to avoid zombies);
     * the kernel would then reap the workers itself and waitpid would never
     * see one die: no restart, and a stop that waits for them forever. */
    signal(SIGCHLD, SIG_DFL);
    /* A reload or log reopen asked for while the server is still starting
     * waits for the master's loop: their default action ends the process
     * (and systemd takes an ended-by-SIGHUP service for a clean stop). */
    sigset_t held;
    sigemptyset(&held);
    sigaddset(&held, SIGHUP);
    sigaddset(&held, SIGUSR1);
    sigaddset(&held, SIGUSR2);
    sigprocmask(SIG_BLOCK, &held, NULL);
}

void master_block_signals(void)
{
    sigset_t set;
    master_signal_set(&set);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        log_errno(LOG_ERROR, "master: sigprocmask");
    /* Blocked first, so none is lost meanwhile: a SIG_IGN inherited from
     * the caller (nohup's SIGHUP, a background job's SIGINT and SIGQUIT)
     * has some systems discard the signal instead of queueing it for
     * sigtimedwait (Linux queues a blocked one whatever its action). */
    for (size_t i = 0; i < N_MASTER_SIGNALS; i++)
        signal(master_signals[i], SIG_DFL);
}

static pid_t spawn(unsigned s)
{
    pid_t pid = fork();
    if (pid < 0) {
        log_errno(LOG_ERROR, "cannot fork worker %u", s);
        return -1;
    }
    if (pid == 0) {
        struct worker_setup ws;
        close(life[1]);
        daemon_close_ready_pipe();      /* only the master reports start-up */
        if (s == 0)
            log_echo_errors_only();     /* one worker's errors are every worker's */
        else
            log_echo_end();
        daemon_close_pid_file();
        close(ready_pipe[0]);
        ws.life_fd = life[0];
        ws.ready_fd = ready_pipe[1];
        ws.priv = setup->priv;
        ws.slot = s;
        ws.n_lfds = setup->n_listen;
        if (setup->per_worker_sockets) {
            unsigned n = setup->n_listen;
            for (unsigned i = 0; i < cfg.workers; i++)
                if (i != s)
                    for (unsigned j = 0; j < n; j++)
                        close(setup->lfds[i * n + j]);
            ws.lfds = setup->lfds + s * n;
        } else {
            ws.lfds = setup->lfds;
        }
        worker_main(&ws);
    }
    slots[s].pid = pid;
    slots[s].started = now_s();
    slots[s].restart_at = 0;
    slots[s].ready = 0;
    log_msg(LOG_INFO, "worker %ld started (slot %u)", (long)pid, s);
    return pid;
}

/* Stopping: once the workers have closed theirs too, new connections are
 * refused instead of waiting in a queue nobody serves. */
static void close_listeners(void)
{
    unsigned n = setup->per_worker_sockets ? cfg.workers * setup->n_listen : setup->n_listen;
    for (unsigned i = 0; i < n; i++)
        close(setup->lfds[i]);
}

static void signal_all(int sig)
{
    for (unsigned s = 0; s < cfg.workers; s++)
        if (slots[s].pid > 0 && kill(slots[s].pid, sig) < 0 && errno != ESRCH)
            log_errno(LOG_WARN, "cannot send signal %d to worker %ld", sig, (long)slots[s].pid);
    for (unsigned i = 0; i < n_old; i++)
        if (kill(old[i].pid, sig) < 0 && errno != ESRCH)
            log_errno(LOG_WARN, "cannot send signal %d to worker %ld", sig, (long)old[i].pid);
}

static unsigned alive(void)
{
    unsigned n = n_old;
    for (unsigned s = 0; s < cfg.workers; s++)
        n += slots[s].pid > 0;
    return n;
}

static void describe(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d (%s)%s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
    else if (WIFEXITED(status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(buf, len, "ended with wait status %#x", (unsigned)status);
}

static void mark_ready(unsigned s)
{
    slots[s].ready = 1;
    slots[s].ever_ran = 1;
}

/* The new worker of slot s cannot start after a SIGHUP: if the worker it was
 * to replace is still serving, that one takes the slot back.  A reload with a
 * broken configuration (say, the root gone) then changes nothing.  Of several
 * (a SIGHUP while the last one's worker was still starting), the newest: it
 * has the later reload's MIME types, and the older is stopped once it serves.
 * The first found in the table could be the oldest, which then stopped the
 * newer and undid that reload. */
static int restore_old(unsigned s, pid_t failed, const char *how)
{
    unsigned newest = n_old;
    for (unsigned i = 0; i < n_old; i++)
        if (old[i].slot == s && !old[i].stopped &&
            (newest == n_old || old[i].started > old[newest].started))
            newest = i;
    if (newest == n_old)
        return 0;
    struct old_worker o = old[newest];
    log_msg(LOG_ERROR, "SIGHUP: the new worker %ld (slot %u) %s before it was serving "
            "(see above); old worker %ld keeps serving%s", (long)failed, s, how, (long)o.pid,
            o.ready ? "" : " once it is ready");
    slots[s].pid = o.pid;
    slots[s].started = o.started;
    slots[s].restart_at = 0;
    slots[s].backoff = 0;
    slots[s].ready = o.ready;           /* it may itself still be starting */
    old[newest] = old[--n_old];
    return 1;
}

static void read_ready_pipe(void)
{
    pid_t pid;
    while (read(ready_pipe[0], &pid, sizeof pid) == (ssize_t)sizeof pid) {
        for (unsigned s = 0; s < cfg.workers; s++)
            if (slots[s].pid > 0 && slots[s].pid == pid)
                mark_ready(s);
        /* one replaced by SIGHUP before it said so: remembered, should it
         * take its slot back */
        for (unsigned i = 0; i < n_old; i++)
            if (old[i].pid == pid)
                old[i].ready = 1;
    }
}

/* Reaps every child that has ended.  A worker that cannot start, in a slot
 * none ever served from, sets give_up: the master must stop. */
static void reap(void)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        /* what it said before it ended: ready, then stopped, is a worker to
         * restart, not one that could not start (its word is in the pipe
         * before its exit) */
        read_ready_pipe();
        char how[96];
        describe(status, how, sizeof how);
        int found = 0;
        for (unsigned i = 0; i < n_old; i++)
            if (old[i].pid == pid) {
                log_msg(LOG_INFO, "old worker %ld (slot %u) %s", (long)pid, old[i].slot, how);
                old[i] = old[--n_old];
                found = 1;
                break;
            }
        for (unsigned s = 0; s < cfg.workers && !found; s++) {
            struct slot *sl = &slots[s];
            if (sl->pid != pid)
                continue;
            found = 1;
            sl->pid = 0;
            if (stopping) {
                int clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
                log_msg(clean ? LOG_INFO : LOG_WARN, "worker %ld (slot %u) %s", (long)pid, s, how);
                break;
            }
            double lived = now_s() - sl->started;
            int cannot_start = WIFEXITED(status) && WEXITSTATUS(status) == WORKER_EXIT_CONFIG;
            /* After a SIGHUP, a new worker that exits by itself before it
             * serves (78, or a library's own exit: see below) hands the
             * slot back to the old one, which still serves. */
            if (WIFEXITED(status) && !sl->ready && restore_old(s, pid, how))
                break;
            if (cannot_start && !sl->ever_ran) {
                log_msg(LOG_ERROR, "worker %ld (slot %u) cannot start (see above); giving up",
                        (long)pid, s);
                give_up = 1;
                break;
            }
            /* Exited by itself before it ever served, at the first start:
             * a library that cannot set up may exit on its own (libevent
             * does, out of descriptors), and would again on every restart.
             * One killed by a signal (the OOM killer, an operator) is
             * restarted as usual. */
            if (!sl->ever_ran && !sl->ready && WIFEXITED(status)) {
                log_msg(LOG_ERROR, "worker %ld (slot %u) %s before it was serving; giving up",
                        (long)pid, s, how);
                give_up = 1;
                break;
            }
            if (lived >= QUICK_DEATH)
                sl->backoff = 0;
            else
                sl->backoff = sl->backoff == 0 ? BACKOFF_FIRST
                              : (sl->backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : sl->backoff * 2);
            sl->restart_at = now_s() + sl->backoff;
            if (sl->backoff > 0)
                log_msg(LOG_ERROR, "worker %ld (slot %u) %s after %.1f s; restarting it in %.1f s",
                        (long)pid, s, how, lived, sl->backoff);
            else
                log_msg(LOG_ERROR, "worker %ld (slot %u) %s; restarting it", (long)pid, s, how);
        }
        if (!found)
            log_msg(LOG_DEBUG, "reaped unknown child %ld: %s", (long)pid, how);
    }
}

/* Once a slot's new worker is ready, the old worker it replaces stops
 * gracefully (not while the master stops: its SIGTERM went to all); one
 * that outlives its --shutdown-timeout is killed, during a stop too: its
 * deadline would otherwise stay in the past, and the master's wait with it
 * (a wake-up every millisecond until the master's own deadline). */
static void retire_old(double t, int stopping_all)
{
    for (unsigned i = 0; i < n_old; i++) {
        struct old_worker *o = &old[i];
        if (!o->stopped && !stopping_all && slots[o->slot].pid > 0 && slots[o->slot].ready) {
            o->stopped = 1;
            o->kill_at = t + cfg.shutdown_timeout + 5;
            if (kill(o->pid, SIGTERM) < 0 && errno != ESRCH)
                log_errno(LOG_WARN, "cannot stop old worker %ld", (long)o->pid);
        } else if (o->stopped && t >= o->kill_at) {
            log_msg(LOG_ERROR, "old worker %ld did not stop within --shutdown-timeout + 5 s; killing it",
                    (long)o->pid);
            o->kill_at = t + 3600;
            if (kill(o->pid, SIGKILL) < 0 && errno != ESRCH)
                log_errno(LOG_WARN, "cannot kill old worker %ld", (long)o->pid);
        }
    }
}

static int all_ready(void)
{
    for (unsigned s = 0; s < cfg.workers; s++)
        if (slots[s].pid <= 0 || !slots[s].ready)
            return 0;
    return 1;
}

static void reopen_logs(void)
{
    const struct privileges *p = setup->priv;
    log_msg(LOG_INFO, "SIGUSR1: reopening log files");
    int error_log_reopened = cfg.error_log != NULL && log_reopen(cfg.error_log) == 0;
    if (cfg.error_log != NULL && !error_log_reopened)
        log_errno(LOG_ERROR, "cannot reopen error log %s (" LOG_REOPEN_RULE ")", cfg.error_log);
    privileges_give_logs(p, error_log_reopened, accesslog_reopen() == 0, LOG_ERROR);
    signal_all(SIGUSR1);
}

static void restart_workers(void)
{
    if (mime_load(cfg.mime_types) < 0) {
        log_errno(LOG_ERROR, "SIGHUP: cannot load MIME types from %s; keeping the running workers",
                  cfg.mime_types);
        return;
    }
    if (n_old + cfg.workers > old_cap) {
        log_msg(LOG_ERROR, "SIGHUP refused: %u old workers still run (finishing, or started by "
                "an earlier SIGHUP and never serving); a reload is possible once they end", n_old);
        return;
    }
    log_msg(LOG_INFO, "SIGHUP: starting new workers; each old one stops gracefully once its "
            "replacement is ready");
    for (unsigned s = 0; s < cfg.workers; s++) {
        if (slots[s].pid > 0) {
            struct old_worker *o = &old[n_old++];
            o->pid = slots[s].pid;
            o->slot = s;
            o->started = slots[s].started;
            o->stopped = 0;
            o->kill_at = 0;
            o->ready = slots[s].ready;
        }
        slots[s].pid = 0;
        slots[s].backoff = 0;
        if (spawn(s) < 0)
            slots[s].restart_at = now_s() + 1;
    }
}

int master_run(const struct master_setup *ms)
{
    setup = ms;
    slots = calloc(cfg.workers, sizeof *slots);
    old_cap = cfg.workers * 4;
    old = calloc(old_cap, sizeof *old);
    if (slots == NULL || old == NULL) {
        log_errno(LOG_ERROR, "master: out of memory");
        return EXIT_FAILURE;
    }
    if (pipe(life) < 0 || fcntl(life[0], F_SETFD, FD_CLOEXEC) < 0 ||
        fcntl(life[1], F_SETFD, FD_CLOEXEC) < 0 || pipe(ready_pipe) < 0 ||
        fcntl(ready_pipe[0], F_SETFD, FD_CLOEXEC) < 0 || fcntl(ready_pipe[1], F_SETFD, FD_CLOEXEC) < 0 ||
        fcntl(ready_pipe[0], F_SETFL, O_NONBLOCK) < 0) {
        log_errno(LOG_ERROR, "master: pipe");
        return EXIT_FAILURE;
    }
    for (unsigned s = 0; s < cfg.workers; s++)
        if (spawn(s) < 0)
            slots[s].restart_at = now_s() + 1;

    sigset_t set;
    master_signal_set(&set);
    double kill_at = 0, started_at = now_s();
    int ready = 0, rc = EXIT_SUCCESS;
    for (;;) {
        read_ready_pipe();
        double t = now_s();
        /* before reaping: a worker that said it serves, and was killed
         * since, still ended the start-up (its death is the log's news,
         * not the starting terminal's) */
        if (!ready && !stopping && (all_ready() || t >= started_at + STARTUP_WAIT)) {
            if (!all_ready())
                log_msg(LOG_WARN, "not every worker is serving %.0f s after start (see above); "
                        "detaching anyway", STARTUP_WAIT);
            daemon_ready();     /* `cowd --daemon` returns 0 once every worker is serving */
            log_echo_end();
            ready = 1;
        }
        reap();                 /* also here: one SIGCHLD may stand for several children */
        if (give_up && !stopping) {
            stopping = 1;
            rc = EXIT_FAILURE;
            kill_at = now_s() + cfg.shutdown_timeout + 5;
            signal_all(SIGTERM);
            close_listeners();
        }
        retire_old(t, stopping);
        if (stopping && alive() == 0)
            break;
        if (stopping && t >= kill_at) {
            log_msg(LOG_ERROR, "workers did not stop within --shutdown-timeout + 5 s; killing them");
            signal_all(SIGKILL);
            kill_at = t + 3600;
        }
        double next = t + 1;
        if (!ready && !stopping && started_at + STARTUP_WAIT < next)   /* no start-up to end */
            next = started_at + STARTUP_WAIT;
        for (unsigned s = 0; s < cfg.workers; s++)
            if (!stopping && slots[s].pid > 0 && !slots[s].ready &&
                t - slots[s].started < READY_QUICK && t + READY_POLL < next)
                next = t + READY_POLL;
        for (unsigned i = 0; i < n_old; i++)
            if (old[i].stopped && old[i].kill_at < next)
                next = old[i].kill_at;
        if (stopping && kill_at < next)
            next = kill_at;
        for (unsigned s = 0; s < cfg.workers && !stopping; s++) {
            if (slots[s].pid == 0 && slots[s].restart_at > 0) {
                if (slots[s].restart_at <= t) {
                    if (spawn(s) < 0)
                        slots[s].restart_at = t + 1;
                } else if (slots[s].restart_at < next) {
                    next = slots[s].restart_at;
                }
            }
        }
        double wait = next - now_s();
        if (wait < 0.001)
            wait = 0.001;
        struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig < 0) {
            if (errno != EAGAIN && errno != EINTR)
                log_errno(LOG_ERROR, "master: sigtimedwait");
            continue;
        }
        switch (sig) {
        case SIGCHLD:
            break;              /* reaped at the top of the loop */
        case SIGTERM:
        case SIGINT:
        case SIGQUIT:
            if (!stop_asked) {
                stop_asked = 1;
                if (!stopping) {
                    log_msg(LOG_INFO, "%s: stopping gracefully (%u workers)",
                            sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGQUIT", alive());
                    stopping = 1;
                    kill_at = now_s() + cfg.shutdown_timeout + 5;
                    signal_all(SIGTERM);
                    close_listeners();
                }
            } else {
                /* asked again (Ctrl-C twice): the workers, old ones still
                 * finishing after a SIGHUP too, cut what is left.  Not a
                 * stop signal: one Ctrl-C reaches them from the terminal as
                 * well, and a worker already stopping takes those as one. */
                log_msg(LOG_INFO, "%s again: asking the workers to stop now",
                        sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGQUIT");
                signal_all(SIGUSR2);
            }
            break;
        case SIGHUP:
            if (!stopping)
                restart_workers();
            break;
        case SIGUSR1:
            reopen_logs();
            break;
        case SIGUSR2:
            /* nginx's binary upgrade signal: an operator may send it out of
             * habit, and its default action would take the service down */
            log_msg(LOG_WARN, "SIGUSR2: ignored (no binary upgrade; SIGHUP restarts the workers)");
            break;
        default:
            break;
        }
    }
    log_msg(LOG_INFO, "all workers gone; master exiting");
    return rc;
}

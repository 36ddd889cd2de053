/* worker.c: a worker process: start-up after the fork (MIME table, chroot,
 * document root, privilege drop, Pth, depot), its signal thread, and the
 * graceful stop. */
#include "worker.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <pth.h>

#include "acceptor.h"
#include "accesslog.h"
#include "autoconfig.h"
#include "config.h"
#include "connection.h"
#include "date_cache.h"
#include "depot.h"
#include "filecache.h"
#include "park.h"
#include "log.h"
#include "spawn.h"
#include "mime.h"
#include "privileges.h"
#include "static_file.h"

static struct conn **conns;         /* every handler's connection state */
static unsigned n_conns;
static struct depot *depot;
static unsigned n_messages;
static int stop_started;

static void *make_ctx(unsigned index, void *arg)
{
    struct conn *c = conn_create(index, arg);
    if (c != NULL && n_conns < cfg.threads)
        conns[n_conns++] = c;
    return c;
}

/* Ends the wait of kept-alive connections that wait for another request:
 * their next read sees end of stream and the handler closes them. */
static void close_idle(void)
{
    for (unsigned i = 0; i < n_conns; i++)
        if (conns[i]->idle)
            shutdown(conns[i]->fd, SHUT_RD);
}

static unsigned busy(void)
{
    struct depot_stats st;
    depot_get_stats(depot, &st);
    unsigned in_flight = n_messages - st.free_msgs;     /* accepted, not yet handed over */
    return st.handlers - st.idle + in_flight;
}

static void worker_exit(void)
{
    unsigned long accepted, empty;
    acceptor_stats(&accepted, &empty);
    accesslog_stop();
    log_msg(LOG_INFO, "worker exiting: %lu connections accepted, %lu empty accept wake-ups",
            accepted, empty);
    exit(EXIT_SUCCESS);
}

static void *drain_main(void *arg)
{
    (void)arg;
    struct timeval deadline;
    io_deadline(&deadline, cfg.shutdown_timeout);
    for (;;) {
        close_idle();
        park_close_all();           /* parked connections wait for a request: close them */
        unsigned n = busy();
        if (n == 0)
            worker_exit();
        struct timeval now;
        gettimeofday(&now, NULL);
        if (timercmp(&now, &deadline, >=)) {
            log_msg(LOG_WARN, "worker: %u connections still busy after --shutdown-timeout %u s; "
                    "closing them", n, cfg.shutdown_timeout);
            worker_exit();
        }
        pth_nap(pth_time(0, 20000));
    }
    return NULL;
}

/* Once a second: a file deleted or replaced on disk is let go by the cache
 * even when nobody asks for it again, so its blocks are freed. */
static void *cache_sweep_main(void *arg)
{
    (void)arg;
    for (;;) {
        pth_nap(pth_time(1, 0));
        filecache_sweep(date_cache_time());
    }
    return NULL;
}

static void stop(const char *why)
{
    if (stop_started)
        return;
    stop_started = 1;
    struct depot_stats st;
    depot_get_stats(depot, &st);
    log_msg(LOG_INFO, "worker stopping (%s): %u connections in progress", why,
            st.handlers - st.idle + st.backlog);
    conn_stopping = 1;
    if (acceptor_stop() < 0)
        log_errno(LOG_ERROR, "worker: cannot wake the accept threads (they stop at their next connection)");
    depot_stop_accepting(depot);    /* an accept thread waiting at --max-connections */
    if (spawn_detached("drain", 32 * 1024, drain_main, NULL) == NULL) {
        log_errno(LOG_ERROR, "worker: cannot start the drain thread; exiting now");
        worker_exit();
    }
}

/* The workers reopen the logs by path (SIGUSR1) as their own user, and in
 * their chroot: said at start if they cannot, rather than at the first
 * rotation, in the old file nobody reads. */
static void check_logs_reachable(const struct worker_setup *ws)
{
    const struct privileges *p = ws->priv;
    if (ws->slot != 0 || (!p->drop && p->chroot_dir == NULL))
        return;                     /* one worker speaks for all; as the master, they can */
    const char *where = p->chroot_dir != NULL ? " inside the chroot" : "";
    const char *who = p->drop ? p->user : "the workers";
    for (int is_access = 0; is_access <= 1; is_access++)
        if ((is_access ? accesslog_reachable() : log_reachable()) < 0)
            log_errno(LOG_WARN, "%s log %s: %s cannot open it by this path%s, so after a "
                      "rotation (SIGUSR1) the workers would go on writing to the old file",
                      is_access ? "access" : "error", is_access ? cfg.access_log : cfg.error_log,
                      who, where);
}

static void reopen_logs(void)
{
    if (cfg.error_log != NULL && log_reopen(cfg.error_log) < 0)
        log_errno(LOG_ERROR, "cannot reopen error log %s (" LOG_REOPEN_RULE ")", cfg.error_log);
    accesslog_reopen();
}

/* Signals reach the worker through a self-pipe: the handler only writes
 * the signal number, and the signal thread reads it like any socket.  (A
 * pth_sigwait() thread would make every scheduler pass install and remove
 * handlers and scan the signal set: 8 sigaction calls per blocking wait.) */
static int sig_pipe[2] = { -1, -1 };

/* What the pipe carries for a SIGUSR2 that came from the master: stop now. */
#define STOP_NOW 255

static void on_signal(int sig, siginfo_t *si, void *context)
{
    (void)context;
    int saved = errno;
    /* SIGUSR2 from the master (asked to stop a second time); from anyone
     * else (pkill out of nginx habit) it is ignored */
    unsigned char b = sig == SIGUSR2 && si != NULL && si->si_pid == getppid() ? STOP_NOW
                                                                            : (unsigned char)sig;
    ssize_t n = write(sig_pipe[1], &b, 1);  /* full pipe: a signal is pending anyway */
    (void)n;
    errno = saved;
}

static const int worker_signals[] = { SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2 };

/* Before pth_init: handlers on, and the signals unblocked for every thread. */
static int signals_setup(void)
{
    struct sigaction sa;
    sigset_t set;

    if (pipe(sig_pipe) < 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        fcntl(sig_pipe[i], F_SETFL, fcntl(sig_pipe[i], F_GETFL) | O_NONBLOCK);
        fcntl(sig_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof worker_signals / sizeof worker_signals[0]; i++) {
        if (sigaction(worker_signals[i], &sa, NULL) < 0)
            return -1;
        sigaddset(&set, worker_signals[i]);
    }
    return sigprocmask(SIG_UNBLOCK, &set, NULL);
}

static void *signal_main(void *arg)
{
    int life_fd = *(int *)arg;
    pth_event_t ev_sig = pth_event(PTH_EVENT_FD | PTH_UNTIL_FD_READABLE, sig_pipe[0]);
    pth_event_t ev_life = pth_event(PTH_EVENT_FD | PTH_UNTIL_FD_READABLE, life_fd);
    if (ev_sig == NULL) {
        log_errno(LOG_ERROR, "worker: cannot watch the signal pipe; signals are ignored");
        return NULL;
    }
    if (ev_life == NULL)
        log_errno(LOG_ERROR, "worker: cannot watch the master; will not notice if it dies");
    for (;;) {
        if (ev_life != NULL && !stop_started)
            pth_event_concat(ev_sig, ev_life, NULL);
        pth_wait(ev_sig);
        if (ev_life != NULL) {
            pth_event_isolate(ev_life);
            if (pth_event_status(ev_life) == PTH_STATUS_OCCURRED && !stop_started)
                stop("the master process is gone");
        }
        unsigned char sigs[16];
        ssize_t n;
        while ((n = read(sig_pipe[0], sigs, sizeof sigs)) > 0) {
            for (ssize_t i = 0; i < n; i++) {
                switch (sigs[i]) {
                case SIGTERM: stop("SIGTERM"); break;
                case SIGINT: stop("SIGINT"); break;
                case SIGQUIT: stop("SIGQUIT"); break;
                case SIGUSR1: reopen_logs(); break;
                case STOP_NOW:
                    /* the master was asked to stop a second time (Ctrl-C
                     * pressed again): whoever asked will not wait for
                     * --shutdown-timeout.  The log's buffer goes out. */
                    log_msg(LOG_WARN, "worker: stopping now (asked twice), cutting %u connections", busy());
                    worker_exit();
                    break;
                case SIGUSR2: log_msg(LOG_WARN, "SIGUSR2: ignored"); break;
                default: break;         /* SIGHUP: the master restarts the workers */
                }
            }
        }
    }
    return NULL;
}

static void fail(void)
{
    exit(WORKER_EXIT_CONFIG);
}

/* Fewest descriptors a worker must have free for clients once its own are
 * open; with none it could answer nobody, not even with a 503. */
#define MIN_SPARE_FDS 8

/* 1 if MIN_SPARE_FDS more descriptors can be opened (tried with dup). */
static int spare_descriptors(int any_fd)
{
    int fds[MIN_SPARE_FDS], n = 0;
    while (n < MIN_SPARE_FDS && (fds[n] = fcntl(any_fd, F_DUPFD_CLOEXEC, 0)) >= 0)
        n++;
    int saved = errno;
    for (int i = 0; i < n; i++)
        close(fds[i]);
    if (n < MIN_SPARE_FDS) {
        errno = saved;
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
            log_msg(LOG_ERROR, "worker: the descriptor limit of %llu leaves %d for clients once "
                      "the server's own are open, fewer than %d; raise it (ulimit -n)",
                      (unsigned long long)rl.rlim_cur, n, MIN_SPARE_FDS);
        else
            log_errno(LOG_ERROR, "worker: cannot open %d descriptors for clients", MIN_SPARE_FDS);
        return 0;
    }
    return 1;
}

void worker_main(const struct worker_setup *ws)
{
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, SIGCHLD);
    sigprocmask(SIG_UNBLOCK, &unblock, NULL);
    signal(SIGCHLD, SIG_DFL);

    if (mime_load(cfg.mime_types) < 0) {
        log_errno(LOG_ERROR, "cannot load MIME types from %s", cfg.mime_types);
        fail();
    }
    if (privileges_chroot(ws->priv) < 0)
        fail();
    static_file_open_fd_dir(ws->priv->chroot_dir != NULL);
    if (static_file_init(cfg.root) < 0)
        fail();
    if (privileges_drop(ws->priv) < 0 ||
        static_file_root_searchable(cfg.root, ws->priv->drop ? ws->priv->user : NULL) < 0)
        fail();
    check_logs_reachable(ws);
    static_file_watch_root();

    /* the Pth runtime is created here, after the fork: nothing of it is shared */
    if (signals_setup() < 0) {
        log_errno(LOG_ERROR, "worker: cannot set up signal handling");
        fail();
    }
    if (!pth_init()) {
        log_errno(LOG_ERROR, "cannot initialise GNU Pth");
        fail();
    }
    conns = calloc(cfg.threads, sizeof *conns);
    if (conns == NULL) {
        log_errno(LOG_ERROR, "worker: out of memory");
        fail();
    }
    if (accesslog_start() < 0)
        fail();
    /* accepted-but-waiting cap (back-pressure beyond), plus the one each
     * accept thread holds while it sleeps on its quiet address: without
     * those, with --threads 1 and two addresses the pool was empty while
     * both slept, and a parked keep-alive client's next request waited for
     * a new connection to come */
    n_messages = cfg.threads * 2 + ws->n_lfds;
    struct depot_config dc = {
        .handlers = cfg.threads,
        .messages = n_messages,
        .stack_size = cfg.stack_size,
        .max_connections = cfg.max_connections,
        .serve = conn_serve,
        .make_ctx = make_ctx,
        .arg = NULL,
        .reclaim_idle = park_close_oldest,
        .idle_count = park_count,
    };
    depot = depot_create(&dc);
    if (depot == NULL)
        fail();
    conn_attach_depot(depot);
    if (park_init(depot, cfg.max_connections, cfg.header_timeout > cfg.keepalive_timeout
                                                   ? cfg.header_timeout : cfg.keepalive_timeout) < 0)
        fail();

    static int life_fd;
    life_fd = ws->life_fd;
    if (spawn_detached("signals", 32 * 1024, signal_main, &life_fd) == NULL) {
        log_errno(LOG_ERROR, "worker: cannot start the signal thread");
        fail();
    }
    if (cfg.cache_entries > 0 && spawn_detached("cache sweep", 32 * 1024, cache_sweep_main, NULL) == NULL) {
        log_errno(LOG_ERROR, "worker: cannot start the cache sweep thread");
        fail();
    }
    struct acceptor *first = NULL;
    for (unsigned i = 0; i < ws->n_lfds; i++) {
        struct acceptor *a = acceptor_new(ws->lfds[i], depot);
        if (a == NULL) {
            log_msg(LOG_ERROR, "worker: cannot accept connections on %s (see above)", cfg.listen[i]);
            fail();
        }
        if (i == 0)
            first = a;
        else if (acceptor_spawn(a) < 0) {
            log_errno(LOG_ERROR, "worker: cannot start the accept thread for %s", cfg.listen[i]);
            fail();
        }
    }
    if (!spare_descriptors(ws->lfds[0]))
        fail();
    log_msg(LOG_DEBUG, "worker ready: %u handler threads", cfg.threads);
    /* on SIGHUP the old worker of this slot stops only now, and --daemon
     * reports success only now (a write below PIPE_BUF is atomic) */
    pid_t self = getpid();
    if (write(ws->ready_fd, &self, sizeof self) != (ssize_t)sizeof self)
        log_errno(LOG_WARN, "worker: cannot tell the master it is ready");
    close(ws->ready_fd);
    log_echo_end();
    acceptor_run(first);
    /* stopped: the drain thread ends the process */
    if (!stop_started)
        stop("the accept loop ended");
    for (;;)
        pth_nap(pth_time(3600, 0));
}

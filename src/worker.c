/* worker.c: a worker process: start-up after the fork (MIME table, chroot,
 * document root, privilege drop, Pth, depot), its signal thread, and the
 * graceful stop. */
#include "worker.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <pth.h>

#include "acceptor.h"
#include "accesslog.h"
#include "autoconfig.h"
#include "config.h"
#include "connection.h"
#include "depot.h"
#include "park.h"
#include "log.h"
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
    accesslog_flush();
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
    pth_attr_t attr = pth_attr_new();
    pth_attr_set(attr, PTH_ATTR_JOINABLE, FALSE);
    pth_attr_set(attr, PTH_ATTR_NAME, "drain");
    pth_attr_set(attr, PTH_ATTR_STACK_SIZE, (unsigned int)(32 * 1024));
    pth_t t = pth_spawn(attr, drain_main, NULL);
    pth_attr_destroy(attr);
    if (t == NULL) {
        log_errno(LOG_ERROR, "worker: cannot start the drain thread; exiting now");
        worker_exit();
    }
}

static void reopen_logs(void)
{
    if (cfg.error_log != NULL && log_open(cfg.error_log) < 0)
        log_errno(LOG_ERROR, "cannot reopen error log %s (still writing to the old file)",
                  cfg.error_log);
    accesslog_reopen();
}

static void *signal_main(void *arg)
{
    int life_fd = *(int *)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    pth_event_t ev_life = pth_event(PTH_EVENT_FD | PTH_UNTIL_FD_READABLE, life_fd);
    if (ev_life == NULL)
        log_errno(LOG_ERROR, "worker: cannot watch the master; will not notice if it dies");
    for (;;) {
        int sig = 0;
        int rc = pth_sigwait_ev(&set, &sig, stop_started ? NULL : ev_life);
        if (rc == EINTR || (rc != 0 && errno == EINTR)) {
            if (ev_life != NULL && pth_event_status(ev_life) == PTH_STATUS_OCCURRED)
                stop("the master process is gone");
            continue;
        }
        if (rc != 0) {
            log_errno(LOG_ERROR, "worker: pth_sigwait");
            pth_nap(pth_time(1, 0));
            continue;
        }
        switch (sig) {
        case SIGTERM: stop("SIGTERM"); break;
        case SIGINT: stop("SIGINT"); break;
        case SIGUSR1: reopen_logs(); break;
        default: break;         /* SIGHUP: the master restarts the workers */
        }
    }
    return NULL;
}

static void fail(void)
{
    exit(WORKER_EXIT_CONFIG);
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
    if (privileges_chroot(ws->priv) < 0 || static_file_init(cfg.root) < 0)
        fail();
    if (privileges_drop(ws->priv) < 0)
        fail();

    /* the Pth runtime is created here, after the fork: nothing of it is shared */
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
    n_messages = cfg.threads * 2;   /* accepted-but-waiting cap: back-pressure beyond */
    struct depot_config dc = {
        .handlers = cfg.threads,
        .messages = n_messages,
        .stack_size = cfg.stack_size,
        .max_connections = cfg.max_connections,
        .serve = conn_serve,
        .make_ctx = make_ctx,
        .arg = NULL,
    };
    depot = depot_create(&dc);
    if (depot == NULL)
        fail();
    conn_attach_depot(depot);
    if (park_init(depot, cfg.max_connections) < 0)
        fail();

    static int life_fd;
    life_fd = ws->life_fd;
    pth_attr_t attr = pth_attr_new();
    pth_attr_set(attr, PTH_ATTR_JOINABLE, FALSE);
    pth_attr_set(attr, PTH_ATTR_NAME, "signals");
    pth_attr_set(attr, PTH_ATTR_STACK_SIZE, (unsigned int)(32 * 1024));
    pth_t t = pth_spawn(attr, signal_main, &life_fd);
    pth_attr_destroy(attr);
    if (t == NULL) {
        log_errno(LOG_ERROR, "worker: cannot start the signal thread");
        fail();
    }
    for (unsigned i = 1; i < ws->n_lfds; i++)
        if (acceptor_spawn(ws->lfds[i], depot) < 0) {
            log_errno(LOG_ERROR, "worker: cannot start the accept thread for %s", cfg.listen[i]);
            fail();
        }
    log_msg(LOG_DEBUG, "worker ready: %u handler threads", cfg.threads);
    acceptor_run(ws->lfds[0], depot);
    /* stopped: the drain thread ends the process */
    if (!stop_started)
        stop("the accept loop ended");
    for (;;)
        pth_nap(pth_time(3600, 0));
}

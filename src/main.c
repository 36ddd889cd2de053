/* main.c: start-up of the master: flags, logs, checks that the MIME table and
 * document root are usable, the workers' credentials, listen sockets,
 * detaching, the pid file; then the master forks and supervises the workers
 * (master.c), each of which runs its own Pth runtime (worker.c). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accesslog.h"
#include "autoconfig.h"
#include "config.h"
#include "daemon.h"
#include "listen.h"
#include "log.h"
#include "master.h"
#include "mime.h"
#include "privileges.h"

/* Descriptors are cheap; connections need one each, plus files being sent. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (strcmp(COWD_BACKEND, "select") == 0) {
        /* Pth's select backend waits only on descriptors below FD_SETSIZE:
         * a connection given one above failed its every wait and was closed
         * unanswered.  Kept below it, an accept gets EMFILE instead, which
         * is answered with a 503, and --max-connections leaves room for
         * the server's own descriptors. */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > (rlim_t)FD_SETSIZE) {
            rl.rlim_cur = FD_SETSIZE;
            if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_errno(LOG_WARN, "lowering the descriptor limit to FD_SETSIZE (%d) for the select backend",
                          FD_SETSIZE);
        }
        if (cfg.max_connections > FD_SETSIZE - 64) {
            log_msg(LOG_INFO, "the select backend waits only on descriptors below FD_SETSIZE (%d): "
                    "--max-connections %u lowered to %d", FD_SETSIZE, cfg.max_connections, FD_SETSIZE - 64);
            cfg.max_connections = FD_SETSIZE - 64;
        }
    } else if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
            log_errno(LOG_WARN, "raising the descriptor limit to %llu", (unsigned long long)rl.rlim_max);
    }
    /* Past the limit a client gets 503 (acceptor.c), where past
     * --max-connections it would wait for a slot or take an idle one's: say
     * so now rather than when it happens.  64 covers the server's own
     * descriptors; the file cache gives its back under pressure. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)cfg.max_connections + 64)
        log_msg(LOG_WARN, "the descriptor limit of %llu is below --max-connections %u plus the "
                "server's own descriptors: once they run out, new clients get 503; raise the "
                "limit (ulimit -n) or lower --max-connections",
                (unsigned long long)rl.rlim_cur, cfg.max_connections);
}

/* Each handler stack is two memory mappings (the stack and its guard page:
 * depot.c), and Linux caps a process's mappings at vm.max_map_count (65530
 * by default).  Past it the stacks lose their guard pages and the worker
 * then fails to start a thread of its own with ENOMEM, far from the cause:
 * refuse to start instead, saying which limit.  The margin leaves room for
 * the worker's other mappings (libraries, large allocations). */
#define MAP_COUNT_MARGIN 1024
static int check_map_count(void)
{
    FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
    if (f == NULL)
        return 0;                       /* not Linux, or no /proc: nothing to check */
    long max_maps = 0;
    int got = fscanf(f, "%ld", &max_maps);
    fclose(f);
    unsigned long need = 2UL * cfg.threads + MAP_COUNT_MARGIN;
    if (got != 1 || max_maps <= 0 || need <= (unsigned long)max_maps)
        return 0;
    long most = (max_maps - MAP_COUNT_MARGIN) / 2;
    log_msg(LOG_ERROR, "--threads %u needs about %lu memory mappings per worker (two per handler "
            "stack: the stack and its guard page), above vm.max_map_count (%ld): lower --threads "
            "to %ld or less, or raise vm.max_map_count (sysctl)",
            cfg.threads, need, max_maps, most > 0 ? most : 0);
    return -1;
}

/* Paths are reopened later (SIGUSR1, SIGHUP) after --daemon's chdir("/"). */
static const char *absolute(const char *path)
{
    static char cwd[4096];
    if (path == NULL || path[0] == '/')
        return path;
    if (cwd[0] == '\0' && getcwd(cwd, sizeof cwd) == NULL)
        return path;
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *p = malloc(n);
    if (p == NULL)
        return path;
    snprintf(p, n, "%s/%s", cwd, path);
    return p;
}

/* A pid file that is also a log: writing the pid would empty the log, and
 * removing the pid file at exit would delete it.  1 (logged) if so. */
static int pid_file_is_a_log(void)
{
    const char *logs[] = { cfg.error_log, cfg.access_log };
    const char *what[] = { "error log", "access log" };
    struct stat pid, log;
    if (cfg.pid_file == NULL || stat(cfg.pid_file, &pid) < 0)
        return 0;                       /* not there yet: not a log either, they are open */
    for (unsigned i = 0; i < sizeof logs / sizeof logs[0]; i++)
        if (logs[i] != NULL && stat(logs[i], &log) == 0 &&
            pid.st_dev == log.st_dev && pid.st_ino == log.st_ino) {
            log_msg(LOG_ERROR, "--pid-file %s is the %s's file: each needs a file of its own",
                    cfg.pid_file, what[i]);
            return 1;
        }
    return 0;
}

/* A supervisor may start us with standard input, output or error closed.
 * The next files we open would then take descriptors 0-2, and --daemon's
 * redirection of those to /dev/null would replace the error log or a listen
 * socket.  Fill any gap with /dev/null first. */
static int ensure_standard_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        int null = open("/dev/null", O_RDWR);
        if (null < 0)
            return -1;
        if (null != fd) {               /* cannot happen: the lowest is taken */
            close(null);
            errno = EBADF;
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    master_take_signals_from_caller();
    if (ensure_standard_fds() < 0)
        return EXIT_FAILURE;            /* nowhere to say so */
    int rc = config_parse(argc, argv);
    if (rc != 0)
        return rc > 0 ? EXIT_SUCCESS : EXIT_FAILURE;

    cfg.error_log = absolute(cfg.error_log);
    cfg.access_log = absolute(cfg.access_log);
    cfg.pid_file = absolute(cfg.pid_file);
    cfg.mime_types = absolute(cfg.mime_types);
    cfg.chroot_dir = absolute(cfg.chroot_dir);
    if (cfg.chroot_dir == NULL)
        cfg.root = absolute(cfg.root);

    /* before anything is logged: start-up messages may go to a closed pipe
     * on standard error too (log_echo_begin) */
    signal(SIGPIPE, SIG_IGN);
    log_set_level((enum log_level)cfg.log_level);
    if (cfg.error_log != NULL && log_open(cfg.error_log) < 0) {
        fprintf(stderr, "cowd: cannot open error log %s: %s\n", cfg.error_log, strerror(errno));
        return EXIT_FAILURE;
    }
    log_echo_begin();
    if (cfg.access_log != NULL && accesslog_open(cfg.access_log, cfg.log_format) < 0) {
        log_errno(LOG_ERROR, "cannot open access log %s", cfg.access_log);
        return EXIT_FAILURE;
    }
    /* checked here so that mistakes show before detaching; each worker
     * loads and opens them again for itself */
    if (mime_load(cfg.mime_types) < 0) {
        log_errno(LOG_ERROR, "cannot load MIME types from %s", cfg.mime_types);
        return EXIT_FAILURE;
    }
    /* the root inside a chroot is checked by the workers, once in it */
    const char *dir = cfg.chroot_dir != NULL ? cfg.chroot_dir : cfg.root;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        log_errno(LOG_ERROR, "%s %s", cfg.chroot_dir != NULL ? "--chroot" : "document root", dir);
        return EXIT_FAILURE;
    }
    close(dfd);
    if (pid_file_is_a_log())
        return EXIT_FAILURE;
    /* a second start of a running server: said before its logs are given
     * away again or its address is found in use */
    if (cfg.pid_file != NULL && daemon_check_pid_file(cfg.pid_file) < 0)
        return EXIT_FAILURE;
    if (check_map_count() < 0)
        return EXIT_FAILURE;
    struct privileges priv;
    if (privileges_resolve(&priv) < 0)
        return EXIT_FAILURE;
    privileges_give_logs(&priv, 1, 1, LOG_WARN);

    /* a log at the file size limit (RLIMIT_FSIZE) fails its writes with
     * EFBIG, which are logged and lost; the default action would kill the
     * worker at its next flush, again and again */
    signal(SIGXFSZ, SIG_IGN);
    raise_fd_limit();

    unsigned nsock = cfg.reuseport ? cfg.workers * cfg.n_listen : cfg.n_listen;
    int *lfds = calloc(nsock, sizeof *lfds);
    if (lfds == NULL) {
        log_errno(LOG_ERROR, "out of memory for %u listen sockets", nsock);
        return EXIT_FAILURE;
    }
    unsigned short *ports = calloc(cfg.n_listen, sizeof *ports);
    if (ports == NULL) {
        log_errno(LOG_ERROR, "out of memory for %u listen sockets", nsock);
        return EXIT_FAILURE;
    }
    for (unsigned i = 0; cfg.reuseport && i < cfg.n_listen; i++)
        if (listen_check_free(cfg.listen[i]) < 0)
            return EXIT_FAILURE;
    /* with --reuseport, worker w's sockets are lfds[w * n_listen ...]; all
     * of one address share the port the first got (":0" too) */
    for (unsigned i = 0; i < nsock; i++) {
        lfds[i] = listen_open_reuseport(cfg.listen[i % cfg.n_listen], (int)cfg.backlog, cfg.reuseport,
                                         cfg.defer_accept, cfg.quick_ack, cfg.notsent_lowat,
                                         &ports[i % cfg.n_listen]);
        if (lfds[i] < 0)
            return EXIT_FAILURE;
    }
    free(ports);

    if (!cfg.foreground && daemon_detach() < 0)
        return EXIT_FAILURE;
    master_block_signals();
    if (cfg.pid_file != NULL && daemon_write_pid_file(cfg.pid_file) < 0)
        return EXIT_FAILURE;
    for (unsigned i = 0; i < cfg.n_listen; i++) {
        char where[INET6_ADDRSTRLEN + 16];
        listen_describe(lfds[i], where, sizeof where);
        log_msg(LOG_INFO, "serving %s on http://%s/ with %u worker%s of %u handler threads "
                "(%s backend, %s park%s)", cfg.root, where, cfg.workers,
                cfg.workers == 1 ? "" : "s", cfg.threads, COWD_BACKEND, COWD_PARK, cfg.reuseport ? ", SO_REUSEPORT" : "");
    }
    struct master_setup ms = {
        .lfds = lfds,
        .n_listen = cfg.n_listen,
        .per_worker_sockets = cfg.reuseport,
        .priv = &priv,
    };
    rc = master_run(&ms);
    daemon_remove_pid_file();
    free(lfds);
    return rc;
}

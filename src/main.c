/* main.c: start-up: flags, logs, MIME table, document root, listen sockets,
 * Pth, the depot and handler pool; then the main thread becomes the accept
 * thread. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <pth.h>

#include "acceptor.h"
#include "autoconfig.h"
#include "config.h"
#include "connection.h"
#include "depot.h"
#include "listen.h"
#include "log.h"
#include "mime.h"
#include "static_file.h"

/* Descriptors are cheap; connections need one each, plus files being sent. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
            log_errno(LOG_WARN, "raising the descriptor limit to %llu", (unsigned long long)rl.rlim_max);
    }
}

int main(int argc, char **argv)
{
    int rc = config_parse(argc, argv);
    if (rc != 0)
        return rc > 0 ? EXIT_SUCCESS : EXIT_FAILURE;

    log_set_level((enum log_level)cfg.log_level);
    if (cfg.error_log != NULL && log_open(cfg.error_log) < 0) {
        fprintf(stderr, "cowd: cannot open error log %s: %s\n", cfg.error_log, strerror(errno));
        return EXIT_FAILURE;
    }
    if (mime_load(cfg.mime_types) < 0) {
        log_errno(LOG_ERROR, "cannot load MIME types from %s", cfg.mime_types);
        return EXIT_FAILURE;
    }
    if (static_file_init(cfg.root) < 0)
        return EXIT_FAILURE;

    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();

    int lfds[COWD_MAX_LISTEN];
    for (unsigned i = 0; i < cfg.n_listen; i++) {
        lfds[i] = listen_open(cfg.listen[i], (int)cfg.backlog);
        if (lfds[i] < 0)
            return EXIT_FAILURE;
    }

    if (!pth_init()) {
        log_errno(LOG_ERROR, "cannot initialise GNU Pth");
        return EXIT_FAILURE;
    }
    struct depot_config dc = {
        .handlers = cfg.threads,
        .messages = cfg.threads * 2,   /* accepted-but-waiting cap: back-pressure beyond */
        .stack_size = cfg.stack_size,
        .serve = conn_serve,
        .make_ctx = conn_create,
        .arg = NULL,
    };
    struct depot *d = depot_create(&dc);
    if (d == NULL)
        return EXIT_FAILURE;
    for (unsigned i = 1; i < cfg.n_listen; i++)
        if (acceptor_spawn(lfds[i], d) < 0) {
            log_errno(LOG_ERROR, "cannot start the accept thread for %s", cfg.listen[i]);
            return EXIT_FAILURE;
        }
    for (unsigned i = 0; i < cfg.n_listen; i++)
        log_msg(LOG_INFO, "serving %s on http://%s/ with %u handler threads (%s backend)",
                cfg.root, cfg.listen[i], cfg.threads, COWD_BACKEND);
    acceptor_run(lfds[0], d);
    return EXIT_FAILURE;
}

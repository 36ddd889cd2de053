/* config.h: the server's settings, filled from command-line flags. */
#ifndef COWD_CONFIG_H
#define COWD_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define COWD_MAX_LISTEN 8

struct config {
    const char *listen[COWD_MAX_LISTEN];
    unsigned    n_listen;
    const char *root;
    const char *index_name;
    const char *mime_types;
    const char *error_log;
    int         log_level;
    unsigned    threads;            /* handler pool size */
    size_t      stack_size;         /* per handler thread */
    int         listing;
    unsigned    listing_max;        /* entries shown in a listing */
    size_t      listing_memory;     /* names all of a worker's listings hold at once */
    int         symlinks_outside;   /* follow symlinks that leave the root */
    unsigned    max_keepalive_requests;
    unsigned    keepalive_timeout;  /* seconds idle between requests */
    unsigned    header_timeout;     /* seconds to receive a whole request head */
    unsigned    body_timeout;       /* seconds without progress reading a body */
    unsigned    send_timeout;       /* seconds without progress writing */
    size_t      max_uri;            /* request-line length cap (414) */
    size_t      max_header_size;    /* request head cap (431), also the read buffer */
    unsigned    max_headers;        /* header field count cap (431) */
    unsigned    max_ranges;         /* more ranges than this: Range ignored */
    uint64_t    max_body_discard;   /* body bytes read and dropped on GET/HEAD */
    unsigned    backlog;
    unsigned    defer_accept;       /* TCP_DEFER_ACCEPT seconds, 0 = off */
    int         quick_ack;          /* ACK a connection's first request on its own */
    int         foreground;
    unsigned    max_connections;    /* open client connections per worker */
    size_t      cache_size;         /* file cache: bytes of small-file contents */
    unsigned    cache_entries;      /* file cache: entries */
    unsigned    cache_validate;     /* file cache: seconds between stat() of an entry */
    size_t      sendfile_min;       /* bodies at least this big go out with sendfile */
    size_t      sendfile_chunk;     /* most bytes per sendfile call before yielding */
    size_t      notsent_lowat;      /* TCP_NOTSENT_LOWAT of client sockets, 0 = kernel's */
    /* processes, daemon, logs (issue 6) */
    unsigned    workers;            /* worker processes (0 on the command line = one per CPU) */
    int         reuseport;          /* one SO_REUSEPORT socket per worker */
    unsigned    shutdown_timeout;   /* seconds a stopping worker waits for its connections */
    const char *access_log;         /* NULL: no access log */
    int         log_format;         /* ACCESSLOG_COMMON or ACCESSLOG_COMBINED */
    const char *pid_file;
    const char *user, *group;       /* workers' credentials when started as root */
    const char *chroot_dir;
};

extern struct config cfg;

/* Parse argv into cfg.  Returns 0 to run, 1 if --help/--version was printed
 * (exit 0), -1 after printing one line naming the bad flag (exit non-zero). */
int config_parse(int argc, char **argv);
void config_usage(FILE *out);

#endif

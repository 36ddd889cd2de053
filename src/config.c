/* config.c: command-line flags, their defaults and validation. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#ifdef __linux__
#include <sched.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autoconfig.h"
#include "http_parse.h"
#include "listen.h"
#include "log.h"

struct config cfg;

static void config_defaults(void)
{
    memset(&cfg, 0, sizeof cfg);
    cfg.index_name = "index.html";
    cfg.listing_max = 10000;
    cfg.listing_memory = 16 * 1024 * 1024;  /* ~50 listings of 10000 names of ~16 bytes */
    cfg.log_level = LOG_INFO;
    cfg.threads = 256;
    cfg.stack_size = 64 * 1024;
    cfg.max_keepalive_requests = 1000;   /* nginx keepalive_requests */
    cfg.keepalive_timeout = 15;
    cfg.header_timeout = 10;
    cfg.body_timeout = 30;
    cfg.send_timeout = 60;
    cfg.max_uri = 8192;                   /* Apache LimitRequestLine is 8190 */
    cfg.max_header_size = 16384;
    cfg.max_headers = 100;                /* Apache LimitRequestFields */
    cfg.max_ranges = 16;
    cfg.max_body_discard = 1024 * 1024;
    cfg.backlog = 4096;
    cfg.defer_accept = 1;                 /* as h2o: a silent client costs no descriptor for 1 s */
    cfg.foreground = 1;
    cfg.max_connections = 16384;
    cfg.cache_size = 64 * 1024 * 1024;
    cfg.cache_entries = 4096;
    cfg.cache_validate = 1;
    cfg.sendfile_min = 16 * 1024;         /* between two hosts' measured crossovers: README */
    cfg.sendfile_chunk = 512 * 1024;      /* best mix throughput measured (docs/bench/HISTORY.md) */
    cfg.notsent_lowat = 32 * 1024;        /* mix p99 and efficiency measured (docs/bench/HISTORY.md) */
    cfg.workers = 1;
    cfg.shutdown_timeout = 10;
    cfg.log_format = 1;                  /* combined */
}

enum {
    OPT_ROOT = 256, OPT_THREADS, OPT_FOREGROUND, OPT_INDEX, OPT_LISTING, OPT_LISTING_MAX,
    OPT_LISTING_MEMORY, OPT_SYMLINKS,
    OPT_MIME, OPT_ERROR_LOG, OPT_LOG_LEVEL, OPT_STACK, OPT_KA_REQ, OPT_KA_TIMEOUT,
    OPT_HDR_TIMEOUT, OPT_BODY_TIMEOUT, OPT_SEND_TIMEOUT, OPT_MAX_URI, OPT_MAX_HDR_SIZE,
    OPT_MAX_HEADERS, OPT_MAX_RANGES, OPT_MAX_BODY, OPT_BACKLOG, OPT_VERSION,
    OPT_MAX_CONN, OPT_CACHE_SIZE, OPT_CACHE_ENTRIES, OPT_CACHE_VALIDATE, OPT_SENDFILE_MIN, OPT_SENDFILE_CHUNK,
    OPT_WORKERS, OPT_REUSEPORT, OPT_SHUTDOWN_TIMEOUT, OPT_ACCESS_LOG, OPT_LOG_FORMAT,
    OPT_DAEMON, OPT_PID_FILE, OPT_USER, OPT_GROUP, OPT_CHROOT, OPT_DEFER_ACCEPT,
    OPT_NOTSENT_LOWAT, OPT_QUICK_ACK
};

static const struct option options[] = {
    { "listen",                 required_argument, NULL, 'l' },
    { "root",                   required_argument, NULL, OPT_ROOT },
    { "threads",                required_argument, NULL, OPT_THREADS },
    { "foreground",             no_argument,       NULL, OPT_FOREGROUND },
    { "index",                  required_argument, NULL, OPT_INDEX },
    { "listing",                no_argument,       NULL, OPT_LISTING },
    { "listing-max",            required_argument, NULL, OPT_LISTING_MAX },
    { "listing-memory",         required_argument, NULL, OPT_LISTING_MEMORY },
    { "symlinks-outside-root",  no_argument,       NULL, OPT_SYMLINKS },
    { "mime-types",             required_argument, NULL, OPT_MIME },
    { "error-log",              required_argument, NULL, OPT_ERROR_LOG },
    { "log-level",              required_argument, NULL, OPT_LOG_LEVEL },
    { "stack-size",             required_argument, NULL, OPT_STACK },
    { "max-keepalive-requests", required_argument, NULL, OPT_KA_REQ },
    { "keepalive-timeout",      required_argument, NULL, OPT_KA_TIMEOUT },
    { "header-timeout",         required_argument, NULL, OPT_HDR_TIMEOUT },
    { "body-timeout",           required_argument, NULL, OPT_BODY_TIMEOUT },
    { "send-timeout",           required_argument, NULL, OPT_SEND_TIMEOUT },
    { "max-uri",                required_argument, NULL, OPT_MAX_URI },
    { "max-header-size",        required_argument, NULL, OPT_MAX_HDR_SIZE },
    { "max-headers",            required_argument, NULL, OPT_MAX_HEADERS },
    { "max-ranges",             required_argument, NULL, OPT_MAX_RANGES },
    { "max-body-discard",       required_argument, NULL, OPT_MAX_BODY },
    { "backlog",                required_argument, NULL, OPT_BACKLOG },
    { "defer-accept",           required_argument, NULL, OPT_DEFER_ACCEPT },
    { "quick-ack",              no_argument,       NULL, OPT_QUICK_ACK },
    { "max-connections",        required_argument, NULL, OPT_MAX_CONN },
    { "cache-size",             required_argument, NULL, OPT_CACHE_SIZE },
    { "cache-entries",          required_argument, NULL, OPT_CACHE_ENTRIES },
    { "cache-validate",         required_argument, NULL, OPT_CACHE_VALIDATE },
    { "sendfile-min",           required_argument, NULL, OPT_SENDFILE_MIN },
    { "sendfile-chunk",         required_argument, NULL, OPT_SENDFILE_CHUNK },
    { "notsent-lowat",          required_argument, NULL, OPT_NOTSENT_LOWAT },
    { "workers",                required_argument, NULL, OPT_WORKERS },
    { "reuseport",              no_argument,       NULL, OPT_REUSEPORT },
    { "shutdown-timeout",       required_argument, NULL, OPT_SHUTDOWN_TIMEOUT },
    { "access-log",             required_argument, NULL, OPT_ACCESS_LOG },
    { "log-format",             required_argument, NULL, OPT_LOG_FORMAT },
    { "daemon",                 no_argument,       NULL, OPT_DAEMON },
    { "pid-file",               required_argument, NULL, OPT_PID_FILE },
    { "user",                   required_argument, NULL, OPT_USER },
    { "group",                  required_argument, NULL, OPT_GROUP },
    { "chroot",                 required_argument, NULL, OPT_CHROOT },
    { "help",                   no_argument,       NULL, 'h' },
    { "version",                no_argument,       NULL, OPT_VERSION },
    { NULL, 0, NULL, 0 }
};

/* A minimal build still lists the features it left out, so its --help
 * matches the man page, and marks them. */
#define NOT_BUILT " (not in this build)"
#ifdef COWD_LISTING
#define LISTING_BUILT ""
#else
#define LISTING_BUILT NOT_BUILT
#endif
#ifdef COWD_ACCESS_LOG
#define ACCESS_LOG_BUILT ""
#else
#define ACCESS_LOG_BUILT NOT_BUILT
#endif

void config_usage(FILE *out)
{
    fprintf(out,
"Usage: cowd [OPTION]...\n"
"Serve static files over HTTP/1.1 with cooperative threads.\n"
"\n"
"  -l, --listen ADDR:PORT       address to listen on (repeatable); IPv6 as [::1]:8080\n"
"                               (IPv6 only), all IPv4 as *:PORT, :PORT or PORT; a host\n"
"                               name: every address it resolves to (default\n"
"                               127.0.0.1:8080)\n"
"      --root DIR               document root (default: the bundled demo site)\n"
"      --index NAME             index file served for directories (default index.html)\n"
"      --listing                list directories that have no index file" LISTING_BUILT "\n"
"      --listing-max N          entries a listing shows (default 10000)" LISTING_BUILT "\n"
"                               the first N by name, and how many more there are\n"
"      --listing-memory BYTES   names held by listings, per worker (default 16m)" LISTING_BUILT "\n"
"                               a listing that would go past it gets 503\n"
"      --symlinks-outside-root  follow symbolic links that lead out of the root\n"
"                               (refused with 403 by default)\n"
"      --mime-types FILE        MIME types file (default: the installed mime.types)\n"
"      --threads N              handler threads per process, i.e. connections\n"
"                               served at once (default 256)\n"
"      --stack-size BYTES       stack of each handler thread (default 64k)\n"
"      --foreground             stay in the foreground (the default; not with --daemon)\n"
"      --error-log FILE         error log (default: standard error; start-up\n"
"                               errors and warnings go to both)\n"
"      --log-level LEVEL        error, warn, info or debug (default info)\n"
"      --max-keepalive-requests N  requests per connection before it closes (default 1000)\n"
"      --keepalive-timeout SEC  idle time allowed between requests (default 15)\n"
"      --header-timeout SEC     time allowed to receive a whole request head (default 10)\n"
"      --body-timeout SEC       time allowed without progress reading a body (default 30)\n"
"      --send-timeout SEC       time allowed without progress sending (default 60)\n"
"      --max-uri BYTES          longest request line, else 414 (default 8192;\n"
"                               kept 66 bytes below --max-header-size)\n"
"      --max-header-size BYTES  largest request head, else 431 (default 16k)\n"
"      --max-headers N          most header fields, else 431 (default 100)\n"
"      --max-ranges N           most ranges honoured in one Range header (default 16)\n"
"      --max-body-discard BYTES largest request body read and discarded, counted as\n"
"                               sent (chunked: framing too) (default 1m)\n"
"      --backlog N              listen backlog (default 4096)\n"
"      --defer-accept SEC       accept a connection only once its first bytes arrive,\n"
"                               or after SEC seconds (TCP_DEFER_ACCEPT; default 1;\n"
"                               0 = accept at once)\n"
"      --quick-ack              acknowledge a connection's first request at once in a\n"
"                               segment of its own, instead of with the reply\n"
"                               (Linux TCP_QUICKACK; default: with the reply)\n"
"      --max-connections N      open client connections per process (default 16384)\n"
"      --cache-size BYTES       file cache: memory for small files' contents and\n"
"                               the entries' headers (default 64m; 0 = no cache)\n"
"      --cache-entries N        file cache: most files cached (default 4096; 0 = no cache)\n"
"      --cache-validate SEC     file cache: stat a cached file at most this often (default 1)\n"
"      --sendfile-min BYTES     send bodies of at least this size with sendfile (default 16k)\n"
"      --sendfile-chunk BYTES   most bytes per sendfile call; other connections are\n"
"                               served between calls (default 512k)\n"
"      --notsent-lowat BYTES    queue at most about BYTES of a reply in the kernel\n"
"                               beyond what the client can take yet (TCP_NOTSENT_LOWAT;\n"
"                               default 32k; 0 = the system's setting)\n"
"      --workers N              worker processes under a supervising master\n"
"                               (default 1; 0 = one per CPU, on Linux one it may run on)\n"
"      --reuseport              give each worker its own SO_REUSEPORT listen socket\n"
"      --shutdown-timeout SEC   time a stopping worker lets requests finish (default 10)\n"
"      --access-log FILE        access log (default: none)" ACCESS_LOG_BUILT "\n"
"      --log-format FORMAT      access log format: common or combined (default combined)"
    ACCESS_LOG_BUILT "\n"
"      --daemon                 detach from the terminal (needs --error-log, not --foreground)\n"
"      --pid-file FILE          write the master's process id to FILE\n"
"      --user USER              workers run as USER when started as root (default nobody)\n"
"      --group GROUP            workers run as GROUP (default: USER's group; without\n"
"                               --user, nogroup, or nobody where there is none)\n"
"      --chroot DIR             workers chroot to DIR; --root is then inside DIR\n"
"  -h, --help                   show this help and exit\n"
"      --version                show the version and exit\n"
"\n"
"BYTES accept a k (x1024) or m (x1048576) suffix.  See cowd(8).\n");
}

/* The --listen argument each cfg.listen[] entry came from (a host name
 * gives several). */
static const char *listen_given[COWD_MAX_LISTEN];

static int bad(const char *flag, const char *value, const char *why)
{
    fprintf(stderr, "cowd: invalid value '%s' for --%s: %s\n", value, flag, why);
    return -1;
}

/* Parses a decimal with optional k/m suffix into [min, max]. */
static int parse_number(const char *flag, const char *s, unsigned long long min,
                        unsigned long long max, int allow_suffix, unsigned long long *out)
{
    char *end;
    unsigned long long v;

    if (*s < '0' || *s > '9')
        return bad(flag, s, "not a number");
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0)
        return bad(flag, s, "out of range");
    if (allow_suffix && (*end == 'k' || *end == 'K')) {
        if (v > max / 1024) return bad(flag, s, "too large");
        v *= 1024; end++;
    } else if (allow_suffix && (*end == 'm' || *end == 'M')) {
        if (v > max / (1024 * 1024)) return bad(flag, s, "too large");
        v *= 1024 * 1024; end++;
    }
    if (*end != '\0')
        return bad(flag, s, "trailing characters");
    if (v < min || v > max) {
        char why[96];
        snprintf(why, sizeof why, "must be between %llu and %llu", min, max);
        return bad(flag, s, why);
    }
    *out = v;
    return 0;
}

/* A size_t flag's bound: a 32-bit size_t would wrap a larger value. */
#define SIZE_CAP(max) ((unsigned long long)SIZE_MAX < (max) ? (unsigned long long)SIZE_MAX : (max))

#define NUM(field, min, max, suffix) do { \
        unsigned long long v_; \
        if (parse_number(options[idx].name, optarg, (min), (max), (suffix), &v_) < 0) return -1; \
        cfg.field = v_; \
    } while (0)

static const char *default_path(const char *installed, const char *in_source)
{
    struct stat st;
    if (stat(installed, &st) == 0)
        return installed;
    if (stat(in_source, &st) == 0)
        return in_source;
    return installed;
}

#if !defined(COWD_LISTING) || !defined(COWD_ACCESS_LOG)
/* A flag of a feature this build was configured without. */
static int not_built(const char *flag, const char *feature, const char *configure_flag)
{
    fprintf(stderr, "cowd: --%s: this build has no %s (configured with %s or --enable-minimal)\n",
            flag, feature, configure_flag);
    return -1;
}
#endif

/* getopt_long's '?' (and the BSDs' ':' for a value given to a flag that
 * takes none), named as the user wrote it.  arg is argv[optind - 1]: the
 * argument before the bad letter when it is inside a group of short options;
 * optopt is that letter, or (glibc) the val of a long option given a value. */
static int bad_option(const char *arg)
{
    size_t len = strcspn(arg, "=");
    const struct option *named = NULL, *exact = NULL;
    unsigned matches = 0;
    for (const struct option *o = options; len > 2 && strncmp(arg, "--", 2) == 0 && o->name != NULL; o++)
        if (strncmp(o->name, arg + 2, len - 2) == 0) {
            matches++;
            named = o;
            if (o->name[len - 2] == '\0')
                exact = o;
        }
    if (exact != NULL)
        named = exact, matches = 1;
    if (matches == 1 && arg[len] == '=' && (optopt == 0 || optopt == named->val))
        fprintf(stderr, "cowd: option '--%s' takes no value (see cowd --help)\n", named->name);
    else if (optopt > 0 && optopt < 256 && (matches != 1 || optopt != named->val))
        fprintf(stderr, "cowd: unknown option '-%c' (see cowd --help)\n", optopt);
    else if (matches > 1)
        fprintf(stderr, "cowd: option '%.*s' is ambiguous (see cowd --help)\n", (int)len, arg);
    else
        fprintf(stderr, "cowd: unknown option '%s' (see cowd --help)\n", arg);
    return -1;
}

int config_parse(int argc, char **argv)
{
    int c, idx;
    int said_daemon = 0, said_foreground = 0;

    config_defaults();
    opterr = 0;
    for (;;) {
        idx = 0;
        c = getopt_long(argc, argv, ":l:h", options, &idx);
        if (c == -1)
            break;
        /* getopt_long sets idx only for long options; find it for short ones */
        if (c == 'l')
            idx = 0;
        /* an unset variable in a unit file: --root "" would serve the
         * working directory, / under systemd */
        if ((c == 'l' || (c >= 256 && options[idx].has_arg == required_argument)) && optarg[0] == '\0')
            return bad(options[idx].name, optarg, "must not be empty");
        switch (c) {
        case 'l': {
            /* A host name becomes its addresses here, resolved once, and
             * each is listened on as if it had a --listen of its own. */
            static char resolved[COWD_MAX_LISTEN][LISTEN_ADDR_MAX];
            char why[160];
            unsigned first = cfg.n_listen;
            if (cfg.n_listen == COWD_MAX_LISTEN)
                return bad("listen", optarg, "too many --listen addresses");
            int n = listen_expand(optarg, &resolved[cfg.n_listen], COWD_MAX_LISTEN - cfg.n_listen,
                                  why, sizeof why);
            if (n < 0)
                return bad("listen", optarg, why);
            if (n == 0)
                cfg.listen[cfg.n_listen++] = optarg;
            for (int k = 0; k < n; k++, cfg.n_listen++)
                cfg.listen[cfg.n_listen] = resolved[cfg.n_listen];
            while (first < cfg.n_listen)
                listen_given[first++] = optarg;
            break;
        }
        case OPT_ROOT: cfg.root = optarg; break;
        case OPT_INDEX:
            if (optarg[0] == '\0' || strchr(optarg, '/') != NULL || strcmp(optarg, ".") == 0 ||
                strcmp(optarg, "..") == 0 || strlen(optarg) > 255)
                return bad("index", optarg, "must be a plain file name of at most 255 bytes, not . or ..");
            cfg.index_name = optarg;
            break;
#ifdef COWD_LISTING
        case OPT_LISTING_MAX: NUM(listing_max, 1, 1000000, 0); break;
        case OPT_LISTING_MEMORY: NUM(listing_memory, 4096, SIZE_CAP(1ULL << 40), 1); break;
        case OPT_LISTING: cfg.listing = 1; break;
#else
        case OPT_LISTING_MAX:
        case OPT_LISTING_MEMORY:
        case OPT_LISTING:
            return not_built(options[idx].name, "directory listings", "--disable-listing");
#endif
        case OPT_SYMLINKS: cfg.symlinks_outside = 1; break;
        case OPT_MIME: cfg.mime_types = optarg; break;
        case OPT_ERROR_LOG: cfg.error_log = optarg; break;
        case OPT_LOG_LEVEL:
            if (strcmp(optarg, "error") == 0) cfg.log_level = LOG_ERROR;
            else if (strcmp(optarg, "warn") == 0) cfg.log_level = LOG_WARN;
            else if (strcmp(optarg, "info") == 0) cfg.log_level = LOG_INFO;
            else if (strcmp(optarg, "debug") == 0) cfg.log_level = LOG_DEBUG;
            else return bad("log-level", optarg, "must be error, warn, info or debug");
            break;
        case OPT_THREADS: NUM(threads, 1, 100000, 0); break;
        case OPT_STACK: NUM(stack_size, 16 * 1024, 16 * 1024 * 1024, 1); break;
        case OPT_FOREGROUND: cfg.foreground = 1; said_foreground = 1; break;
        case OPT_KA_REQ: NUM(max_keepalive_requests, 1, 100000000, 0); break;
        case OPT_KA_TIMEOUT: NUM(keepalive_timeout, 1, 86400, 0); break;
        case OPT_HDR_TIMEOUT: NUM(header_timeout, 1, 86400, 0); break;
        case OPT_BODY_TIMEOUT: NUM(body_timeout, 1, 86400, 0); break;
        case OPT_SEND_TIMEOUT: NUM(send_timeout, 1, 86400, 0); break;
        case OPT_MAX_URI: NUM(max_uri, 64, 1024 * 1024, 1); break;
        case OPT_MAX_HDR_SIZE: NUM(max_header_size, 256, 1024 * 1024, 1); break;
        case OPT_MAX_HEADERS: NUM(max_headers, 1, 10000, 0); break;
        case OPT_MAX_RANGES: NUM(max_ranges, 1, 1000, 0); break;
        case OPT_MAX_BODY: NUM(max_body_discard, 0, 1ULL << 40, 1); break;
        case OPT_BACKLOG: NUM(backlog, 1, 1 << 20, 0); break;
        case OPT_DEFER_ACCEPT: NUM(defer_accept, 0, 3600, 0); break;
        case OPT_QUICK_ACK: cfg.quick_ack = 1; break;
        case OPT_MAX_CONN: NUM(max_connections, 1, 10000000, 0); break;
        case OPT_CACHE_SIZE: NUM(cache_size, 0, SIZE_CAP(1ULL << 40), 1); break;
        case OPT_CACHE_ENTRIES: NUM(cache_entries, 0, 10000000, 0); break;
        case OPT_CACHE_VALIDATE: NUM(cache_validate, 0, 86400, 0); break;
        case OPT_SENDFILE_MIN: NUM(sendfile_min, 0, SIZE_CAP(1ULL << 40), 1); break;
        case OPT_SENDFILE_CHUNK: NUM(sendfile_chunk, 4096, 1ULL << 30, 1); break;
        case OPT_NOTSENT_LOWAT: NUM(notsent_lowat, 0, 1ULL << 30, 1); break;
        case OPT_WORKERS: NUM(workers, 0, 1024, 0); break;
        case OPT_REUSEPORT:
#ifdef SO_REUSEPORT
            cfg.reuseport = 1;
            break;
#else
            fprintf(stderr, "cowd: --reuseport: this system has no SO_REUSEPORT\n");
            return -1;
#endif
        case OPT_SHUTDOWN_TIMEOUT: NUM(shutdown_timeout, 0, 86400, 0); break;
#ifdef COWD_ACCESS_LOG
        case OPT_ACCESS_LOG: cfg.access_log = optarg; break;
        case OPT_LOG_FORMAT:
            if (strcmp(optarg, "common") == 0) cfg.log_format = 0;
            else if (strcmp(optarg, "combined") == 0) cfg.log_format = 1;
            else return bad("log-format", optarg, "must be common or combined");
            break;
#else
        case OPT_ACCESS_LOG:
        case OPT_LOG_FORMAT:
            return not_built(options[idx].name, "access log", "--disable-access-log");
#endif
        case OPT_DAEMON: cfg.foreground = 0; said_daemon = 1; break;
        case OPT_PID_FILE: cfg.pid_file = optarg; break;
        case OPT_USER: cfg.user = optarg; break;
        case OPT_GROUP: cfg.group = optarg; break;
        case OPT_CHROOT: cfg.chroot_dir = optarg; break;
        case 'h': config_usage(stdout); return 1;
        case OPT_VERSION:
            printf("cowd %s (GNU Pth 2.0.7 patched, %s backend, %s park)\n", PACKAGE_VERSION,
                   COWD_BACKEND, COWD_PARK);
            return 1;
        case ':':
            /* the BSDs' getopt_long: a value given to a flag that takes none */
            if (strncmp(argv[optind - 1], "--", 2) == 0 && strchr(argv[optind - 1], '=') != NULL)
                return bad_option(argv[optind - 1]);
            fprintf(stderr, "cowd: option '%s' needs a value (see cowd --help)\n", argv[optind - 1]);
            return -1;
        default:
            return bad_option(argv[optind - 1]);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cowd: unexpected argument '%s' (see cowd --help)\n", argv[optind]);
        return -1;
    }
    if (said_daemon && said_foreground) {
        /* one of them from a wrapper's $OPTS, most likely: whichever came
         * last would win in silence, and a supervisor expecting the other
         * loses the server */
        fprintf(stderr, "cowd: --daemon and --foreground contradict each other: give one\n");
        return -1;
    }
    if (!cfg.foreground && cfg.error_log == NULL) {
        fprintf(stderr, "cowd: --daemon needs --error-log FILE (standard error goes to /dev/null)\n");
        return -1;
    }
    if (cfg.workers == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
#ifdef __linux__
        /* the CPUs this process may run on (taskset, a container's cpuset) */
        cpu_set_t allowed;
        if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0)
            n = CPU_COUNT(&allowed);
#endif
        cfg.workers = n > 0 ? (unsigned)(n > 1024 ? 1024 : n) : 1;
    }
    /* The line must be shorter than the head it sits in, with the empty
     * lines a request may start with (up to HTTP_LEADING_EMPTY_MAX + 1
     * bytes: a CRLF may straddle the limit): a line as long as the head
     * fills the buffer before it could exceed --max-uri, and would be
     * answered 431 instead of 414 (or 501 for its method). */
    if (cfg.max_uri > cfg.max_header_size - HTTP_LEADING_EMPTY_MAX - 2)
        cfg.max_uri = cfg.max_header_size - HTTP_LEADING_EMPTY_MAX - 2;
    /* every entry's headers and bookkeeping count against the size: with
     * none allowed, each miss would build an entry only to drop it */
    if (cfg.cache_size == 0)
        cfg.cache_entries = 0;
    /* The second bind would fail with "Address already in use", as if
     * another server held the address; with SO_REUSEPORT both succeed.  An
     * address inside an any-address of the same port: the same on Linux,
     * while the BSDs' SO_REUSEADDR binds both. */
    for (unsigned i = 1; i < cfg.n_listen && !cfg.reuseport; i++)
        for (unsigned j = 0; j < i; j++) {
            char why[1024];
            enum listen_relation rel = listen_relation(cfg.listen[i], cfg.listen[j]);
            if (rel == LISTEN_SAME)
                snprintf(why, sizeof why, "%s is already given (by --listen %s)", cfg.listen[i],
                         listen_given[j]);
#ifdef __linux__
            else if (rel == LISTEN_OVERLAP)
                snprintf(why, sizeof why, "%s overlaps --listen %s (one is every address of the port); "
                         "both can be bound only with --reuseport", cfg.listen[i], listen_given[j]);
#endif
            else
                continue;
            return bad("listen", listen_given[i], why);
        }
    if (cfg.n_listen == 0)
        cfg.listen[cfg.n_listen++] = "127.0.0.1:8080";
    if (cfg.root == NULL)
        cfg.root = default_path(COWD_DATADIR "/www", COWD_SRCDIR "/conf/www");
    if (cfg.mime_types == NULL)
        cfg.mime_types = default_path(COWD_DATADIR "/mime.types", COWD_SRCDIR "/conf/mime.types");
    return 0;
}

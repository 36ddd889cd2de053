/* listen.c: parsing listen addresses and opening listening sockets. */
#include "listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* Splits "ADDR:PORT" or "[ADDR]:PORT" into host (a buffer of 256) and port;
 * "PORT" and ":PORT" are "*:PORT", as nginx's "listen 8080". */
static int split_spec(const char *spec, char *host, long *port, char *why, size_t why_len)
{
    const char *port_str;
    size_t host_len;

    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (close == NULL || close[1] != ':') {
            snprintf(why, why_len, "IPv6 addresses are written [ADDR]:PORT");
            return -1;
        }
        host_len = (size_t)(close - spec - 1);
        if (host_len >= 256) {
            snprintf(why, why_len, "address too long");
            return -1;
        }
        memcpy(host, spec + 1, host_len);
        port_str = close + 2;
    } else {
        const char *colon = strrchr(spec, ':');
        if (colon == NULL && spec[strspn(spec, "0123456789")] != '\0') {
            snprintf(why, why_len, "expected ADDR:PORT, or PORT for every IPv4 address");
            return -1;
        }
        port_str = colon == NULL ? spec : colon + 1;
        host_len = colon == NULL ? 0 : (size_t)(colon - spec);
        if (memchr(spec, ':', host_len) != NULL) {
            /* "::1:8080" would be split at its last colon: say which was meant */
            snprintf(why, why_len, "IPv6 addresses are written [ADDR]:PORT");
            return -1;
        }
        if (host_len >= 256) {
            snprintf(why, why_len, "address too long");
            return -1;
        }
        if (host_len == 0)
            host[host_len++] = '*';
        else
            memcpy(host, spec, host_len);
    }
    host[host_len] = '\0';

    char *end;
    errno = 0;
    *port = strtol(port_str, &end, 10);
    if (*port_str < '0' || *port_str > '9' || *end != '\0' || errno != 0 || *port < 0 || *port > 65535) {
        snprintf(why, why_len, "port must be a number from 0 to 65535");
        return -1;
    }
    return 0;
}

/* A literal address or '*' into ss: 1, or 0 if host is not one. */
static int parse_numeric(const char *host, long port, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *sin = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
    if (strcmp(host, "*") == 0) {
        sin->sin_family = AF_INET;
        sin->sin_addr.s_addr = htonl(INADDR_ANY);
        sin->sin_port = htons((uint16_t)port);
        *len = sizeof *sin;
        return 1;
    }
    if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        sin->sin_port = htons((uint16_t)port);
        *len = sizeof *sin;
        return 1;
    }
    if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((uint16_t)port);
        *len = sizeof *sin6;
        return 1;
    }
    return 0;
}

static int resolve(const char *host, long port, struct addrinfo **res, char *why, size_t why_len)
{
    char port_str[8];
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    snprintf(port_str, sizeof port_str, "%ld", port);
    *res = NULL;
    /* getaddrinfo takes inet_aton's old forms as numbers: 0177.0.0.1 is
     * octal for 127.0.0.1, 010.0.0.1 is 8.0.0.1, 127.1 and 0x7f000001 are
     * 127.0.0.1.  No host name looks like that, and a bind to an address
     * other than the one written is not what anyone meant. */
    struct addrinfo numeric = { .ai_family = AF_INET, .ai_flags = AI_NUMERICHOST };
    struct addrinfo *loose = NULL;
    if (getaddrinfo(host, NULL, &numeric, &loose) == 0) {
        freeaddrinfo(loose);
        snprintf(why, why_len, "'%s' is not an IPv4 address in dotted-decimal form "
                 "(four numbers 0-255 without leading zeros)", host);
        return -1;
    }
    int rc = getaddrinfo(host, port_str, &hints, res);
    if (rc != 0 || *res == NULL) {
        snprintf(why, why_len, "cannot resolve '%s': %s", host, gai_strerror(rc));
        return -1;
    }
    return 0;
}

int listen_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len,
                 char *why, size_t why_len)
{
    char host[256];
    long port;

    if (split_spec(spec, host, &port, why, why_len) < 0)
        return -1;
    if (parse_numeric(host, port, ss, len))
        return 0;
    /* a host name (or a scoped IPv6 address): its first address */
    struct addrinfo *res;
    if (resolve(host, port, &res, why, why_len) < 0)
        return -1;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static int is_any(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
    return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

static in_port_t port_of(const struct sockaddr_storage *ss)
{
    return ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
                                    : ((const struct sockaddr_in6 *)ss)->sin6_port;
}

enum listen_relation listen_relation(const char *a, const char *b)
{
    struct sockaddr_storage sa, sb;
    socklen_t la, lb;
    char why[160];
    if (listen_parse(a, &sa, &la, why, sizeof why) < 0 || listen_parse(b, &sb, &lb, why, sizeof why) < 0 ||
        sa.ss_family != sb.ss_family || port_of(&sa) == 0 || port_of(&sa) != port_of(&sb))
        return LISTEN_APART;
    int same;
    if (sa.ss_family == AF_INET) {
        same = ((const struct sockaddr_in *)&sa)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)&sb)->sin_addr.s_addr;
    } else {
        const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)&sa, *y = (const struct sockaddr_in6 *)&sb;
        same = x->sin6_scope_id == y->sin6_scope_id &&
               memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0;
    }
    return same ? LISTEN_SAME : is_any(&sa) || is_any(&sb) ? LISTEN_OVERLAP : LISTEN_APART;
}

int listen_expand(const char *spec, char (*out)[LISTEN_ADDR_MAX], unsigned max,
                  char *why, size_t why_len)
{
    char host[256];
    long port;
    struct sockaddr_storage ss;
    socklen_t len;

    if (split_spec(spec, host, &port, why, why_len) < 0)
        return -1;
    if (parse_numeric(host, port, &ss, &len))
        return 0;
    /* a host name, resolved once at startup */
    struct addrinfo *res;
    if (resolve(host, port, &res, why, why_len) < 0)
        return -1;
    unsigned n = 0;
    for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        char addr[NI_MAXHOST], one[LISTEN_ADDR_MAX];
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
            continue;
        /* numeric, with an IPv6 address's scope, so that it parses back */
        if (getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, sizeof addr, NULL, 0, NI_NUMERICHOST) != 0)
            continue;
        int w = snprintf(one, sizeof one, ai->ai_family == AF_INET6 ? "[%s]:%ld" : "%s:%ld", addr, port);
        if (w < 0 || (size_t)w >= sizeof one)
            continue;
        /* /etc/hosts may list an address twice; it is bound once */
        unsigned k = 0;
        while (k < n && strcmp(out[k], one) != 0)
            k++;
        if (k < n)
            continue;
        if (n == max) {
            snprintf(why, why_len, "too many --listen addresses (each one '%s' resolves to counts)", host);
            freeaddrinfo(res);
            return -1;
        }
        memcpy(out[n++], one, sizeof one);
    }
    freeaddrinfo(res);
    if (n == 0) {
        snprintf(why, why_len, "cannot resolve '%s': no IPv4 or IPv6 address", host);
        return -1;
    }
    return (int)n;
}

static void set_port(struct sockaddr_storage *ss, unsigned short port)
{
    if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
    else
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
}

static unsigned short get_port(const struct sockaddr_storage *ss)
{
    return ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
                                           : ((const struct sockaddr_in *)ss)->sin_port);
}

/* A bind without SO_REUSEPORT (SO_REUSEADDR only, so that connections of an
 * earlier run in TIME_WAIT do not count) fails if anyone listens there. */
static int address_in_use(const struct sockaddr_storage *ss, socklen_t len)
{
    int one = 1;
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    if (ss->ss_family == AF_INET6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int in_use = bind(fd, (const struct sockaddr *)ss, len) < 0 && errno == EADDRINUSE;
    close(fd);
    return in_use;
}

int listen_check_free(const char *spec)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char why[160];
    if (listen_parse(spec, &ss, &len, why, sizeof why) < 0) {
        log_msg(LOG_ERROR, "listen %s: %s", spec, why);
        return -1;
    }
    if (get_port(&ss) != 0 && address_in_use(&ss, len)) {
        errno = EADDRINUSE;
        log_errno(LOG_ERROR, "listen %s: bind", spec);
        return -1;
    }
    return 0;
}

int listen_open_reuseport(const char *spec, int backlog, int reuseport, unsigned defer_accept,
                          int quick_ack,
                          size_t notsent_lowat, unsigned short *port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char why[160];
    int one = 1;

    if (listen_parse(spec, &ss, &len, why, sizeof why) < 0) {
        log_msg(LOG_ERROR, "listen %s: %s", spec, why);
        return -1;
    }
    if (*port != 0)
        set_port(&ss, *port);       /* another worker's socket for the same address */
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        log_errno(LOG_ERROR, "listen %s: socket", spec);
        return -1;
    }
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
        log_errno(LOG_WARN, "listen %s: SO_REUSEADDR", spec);
    /* Responses are flushed whole, so Nagle only delays them.  Accepted
     * sockets inherit TCP_NODELAY from the listener (Linux, the BSDs),
     * which saves a setsockopt per connection. */
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        log_errno(LOG_WARN, "listen %s: TCP_NODELAY", spec);
    if (reuseport) {
#ifdef SO_REUSEPORT
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) {
            log_errno(LOG_ERROR, "listen %s: SO_REUSEPORT", spec);
            close(fd);
            return -1;
        }
#else
        log_msg(LOG_ERROR, "listen %s: SO_REUSEPORT is not supported on this system", spec);
        close(fd);
        return -1;
#endif
    }
    /* Accept a connection only once its request's first bytes are here
     * (or after defer_accept seconds): the handler's first read then
     * finds them, instead of saying EAGAIN and costing a wait, and a
     * client that connects and says nothing holds no descriptor. */
    if (defer_accept > 0) {
#ifdef TCP_DEFER_ACCEPT
        int secs = (int)defer_accept;
        if (setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof secs) < 0)
            log_errno(LOG_WARN, "listen %s: TCP_DEFER_ACCEPT", spec);
#else
        log_msg(LOG_DEBUG, "listen %s: no TCP_DEFER_ACCEPT on this system: accepting at once", spec);
#endif
    }
    /* A reply bigger than the client's receive window waits in the kernel
     * only this far ahead of it: sendfile stops there, and the handler is
     * woken when the client has taken most of it.  Without it, megabytes
     * queue up and are pushed out later from the ACK path -- on loopback in
     * the client's own system calls -- while the handler refills a socket
     * the client is still draining.  Inherited by accepted sockets. */
    if (notsent_lowat > 0) {
#ifdef TCP_NOTSENT_LOWAT
        int lowat = notsent_lowat > INT_MAX ? INT_MAX : (int)notsent_lowat;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof lowat) < 0)
            log_errno(LOG_WARN, "listen %s: TCP_NOTSENT_LOWAT", spec);
#else
        log_msg(LOG_DEBUG, "listen %s: no TCP_NOTSENT_LOWAT on this system", spec);
#endif
    }
    if (ss.ss_family == AF_INET6 &&
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0)
        log_errno(LOG_WARN, "listen %s: IPV6_V6ONLY", spec);
    if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
        log_errno(LOG_ERROR, "listen %s: bind", spec);
        close(fd);
        return -1;
    }
    if (listen(fd, backlog) < 0) {
        log_errno(LOG_ERROR, "listen %s: listen", spec);
        close(fd);
        return -1;
    }
    /* Every request is answered at once, so its ACK can ride on the reply.
     * Linux sends the ACK of a connection's first data in a segment of its
     * own (quick-ACK mode) and delays ACKs only once it has seen the
     * connection answer; with quick-ACK off on the listener, accepted
     * sockets start out that way and the first reply carries the ACK: one
     * segment fewer per connection, and on loopback that segment was made
     * and taken in the client's own system call.  A request that arrives
     * in pieces is acknowledged when a piece is read (io_ack_now), so a
     * Nagle client does not wait for the delayed-ACK timer.  Set after
     * listen(), which clears the ACK state. */
#ifdef TCP_QUICKACK
    if (!quick_ack) {
        int zero = 0;
        if (setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof zero) < 0)
            log_errno(LOG_WARN, "listen %s: TCP_QUICKACK", spec);
    }
#else
    (void)quick_ack;
#endif
    struct sockaddr_storage bound;
    socklen_t blen = sizeof bound;
    if (getsockname(fd, (struct sockaddr *)&bound, &blen) == 0)
        *port = get_port(&bound);   /* port 0: the one the system chose */
    return fd;
}

void listen_describe(int fd, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char host[INET6_ADDRSTRLEN] = "?";
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
        snprintf(out, cap, "?");
        return;
    }
    if (ss.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof host);
        snprintf(out, cap, "[%s]:%u", host, (unsigned)get_port(&ss));
    } else {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof host);
        snprintf(out, cap, "%s:%u", host, (unsigned)get_port(&ss));
    }
}

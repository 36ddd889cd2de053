/* listen.h: turning "ADDR:PORT" into a listening socket. */
#ifndef COWD_LISTEN_H
#define COWD_LISTEN_H

#include <sys/types.h>
#include <sys/socket.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>

/* Parses "1.2.3.4:80", "[::1]:80", "*:80" (also ":80" and "80": every IPv4
 * address) or "localhost:80".  0 or -1 with a reason in why. */
int listen_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len,
                 char *why, size_t why_len);
/* How two --listen addresses (not host names) relate: SAME address and
 * port; OVERLAP, one port and family where one is the family's any-address
 * (binding both fails on Linux unless both use SO_REUSEPORT); else APART.
 * Port 0 (any free port) is always APART. */
enum listen_relation { LISTEN_APART, LISTEN_SAME, LISTEN_OVERLAP };
enum listen_relation listen_relation(const char *a, const char *b);
/* Room for "[ADDR%SCOPE]:PORT" and its NUL. */
#define LISTEN_ADDR_MAX (INET6_ADDRSTRLEN + IF_NAMESIZE + 8)
/* A host name stands for every address it resolves to, as nginx has it:
 * writes each distinct one, numeric as "ADDR:PORT" or "[ADDR]:PORT", to
 * out[0 .. max) and returns how many.  0 if spec is already an address or
 * '*' (used as written); -1 with a reason in why if spec is malformed, does
 * not resolve or resolves to more than max addresses. */
int listen_expand(const char *spec, char (*out)[LISTEN_ADDR_MAX], unsigned max,
                  char *why, size_t why_len);
/* Opens a non-blocking, close-on-exec listening socket; -1 (logged) on error.
 * With reuseport, SO_REUSEPORT is set before bind, so that several
 * such sockets (one per worker) share the address and the kernel spreads
 * connections among them.  Fails if the system lacks SO_REUSEPORT.
 * defer_accept: TCP_DEFER_ACCEPT seconds; notsent_lowat: TCP_NOTSENT_LOWAT
 * bytes, which accepted sockets inherit (0 for either: not set).  Unless
 * quick_ack, accepted sockets acknowledge their first request with the
 * reply rather than in a segment of its own (Linux). */
int listen_open_reuseport(const char *spec, int backlog, int reuseport, unsigned defer_accept,
                          int quick_ack, size_t notsent_lowat, unsigned short *port);
/* *port: 0 to bind the port in spec, or the port to bind instead (the
 * further sockets of one address with reuseport: spec's port may be 0); set
 * to the bound port. */

/* SO_REUSEPORT would let us bind where another server listens, and the two
 * would silently share the traffic: with reuseport, every address is
 * checked with this (0, or -1 logged) before any socket of ours is open. */
int listen_check_free(const char *spec);

/* "ADDR:PORT" (IPv6 as "[ADDR]:PORT") of the socket fd is bound to. */
void listen_describe(int fd, char *out, size_t cap);

#endif

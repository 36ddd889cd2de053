/* check_park.c: the parking lot: a parked socket that becomes readable goes
 * back to the depot with its request count; expiry closes it; and a graceful
 * stop racing an unpark that waits for a free message neither frees a slot
 * twice nor hands a closed descriptor to a handler.  Runs against the park
 * the build has: epoll (the default on Linux) or poll (scripts/test's
 * libevent variant, configured --with-park=poll as a BSD build is). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pth.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "check_run.h"
#include "depot.h"
#include "park.h"

static struct depot *dep;
static int served_fd[16], served_requests[16], served_parked_before[16], n_served;
static struct depot_idle served_idle[16];

static void fake_serve(void *ctx, const struct depot_conn *conn)
{
    (void)ctx;
    served_fd[n_served] = conn->fd;
    served_requests[n_served] = (int)conn->requests;
    served_parked_before[n_served] = conn->parked_before;
    served_idle[n_served] = conn->idle;
    n_served++;
}

static time_t started;      /* the second a test began: a base for idle times */

/* longest: the longest timeout the lot is told of (its table of seconds
 * spans that and a margin) */
static void start_with_slots(unsigned messages, unsigned slots, unsigned longest)
{
    started = time(NULL);
    ck_assert(pth_init());
    n_served = 0;
    struct depot_config dc = { .handlers = 1, .messages = messages, .stack_size = 32 * 1024,
                               .serve = fake_serve };
    dep = depot_create(&dc);
    ck_assert_ptr_nonnull(dep);
    ck_assert_int_eq(park_init(dep, slots, longest), 0);
    for (int i = 0; i < 100; i++)
        pth_yield(NULL);
}

static void start(unsigned messages)
{
    start_with_slots(messages, 8, 60);
}

static void settle(void)
{
    for (int i = 0; i < 200; i++) {
        pth_nap(pth_time(0, 1000));
    }
}

static unsigned long idle_seq;

/* fd as a handler parks it: idle since now, next in idle order */
static struct depot_conn idle_conn(int fd, unsigned requests, int parked_before)
{
    struct depot_conn conn = { .fd = fd, .peer_len = sizeof conn.peer, .requests = requests,
                               .parked_before = parked_before,
                               .idle = { .seq = ++idle_seq } };
    gettimeofday(&conn.idle.since, NULL);
    return conn;
}

/* A socketpair whose end sv[0] is parked with these request count and
 * timeout, idle since now; sv[1] plays the client. */
static void park_pair(int sv[2], unsigned requests, unsigned timeout)
{
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    struct depot_conn conn = idle_conn(sv[0], requests, 0);
    ck_assert_int_eq(park_connection(&conn, timeout), 0);
}

/* Parks fd again as a handler does with a connection the lot gave it. */
static void repark(int fd, int parked_before)
{
    struct depot_conn conn = idle_conn(fd, 8, parked_before);
    ck_assert_int_eq(park_connection(&conn, 60), 0);
}

START_TEST(readable_parked_socket_goes_back_to_the_depot)
{
    int sv[2];
    start(4);
    park_pair(sv, 7, 60);
    ck_assert_uint_eq(park_count(), 1);
    settle();
    ck_assert_int_eq(n_served, 0);                  /* nothing to read yet */
    ck_assert_int_eq(write(sv[1], "x", 1), 1);
    settle();
    ck_assert_int_eq(n_served, 1);
    ck_assert_int_eq(served_fd[0], sv[0]);
    ck_assert_int_eq(served_requests[0], 7);        /* the keep-alive count survives */
    ck_assert_uint_eq(park_count(), 0);
}
END_TEST

/* The wait for the next request goes on after the park: the connection
 * comes back with when it fell idle, its place in idle order and the
 * empty-line bytes (and a lone CR) dropped so far, so that empty lines
 * renew neither its timeout nor their allowance. */
START_TEST(an_unparked_connection_goes_on_with_its_wait)
{
    int sv[2];
    start(4);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    struct depot_conn conn = idle_conn(sv[0], 3, 0);
    conn.idle.since.tv_sec -= 5;
    conn.idle.empty_dropped = 12;
    conn.idle.held_cr = 1;
    ck_assert_int_eq(park_connection(&conn, 60), 0);
    ck_assert_int_eq(write(sv[1], "\n", 1), 1);
    settle();
    ck_assert_int_eq(n_served, 1);
    ck_assert_int_eq(served_requests[0], 3);
    ck_assert(timercmp(&served_idle[0].since, &conn.idle.since, ==));
    ck_assert_uint_eq(served_idle[0].seq, conn.idle.seq);
    ck_assert_uint_eq(served_idle[0].empty_dropped, 12);
    ck_assert_int_eq(served_idle[0].held_cr, 1);
    close(sv[0]);
    close(sv[1]);
}
END_TEST

/* Re-parking re-arms the one-shot registration the first park left: the
 * socket is reported again, also for bytes that arrived before the re-park,
 * and a wrong hint either way still parks it. */
START_TEST(a_socket_parked_again_is_reported_again)
{
    int sv[2];
    char b[4];
    start(8);
    park_pair(sv, 7, 60);
    ck_assert_int_eq(write(sv[1], "x", 1), 1);
    settle();
    ck_assert_int_eq(n_served, 1);
    ck_assert_int_eq(served_parked_before[0], 1);   /* the lot says it has seen it */
    ck_assert_int_eq(read(sv[0], b, sizeof b), 1);

    repark(sv[0], 1);                               /* the usual case: re-arm */
    settle();
    ck_assert_int_eq(n_served, 1);                  /* nothing new to read */
    ck_assert_int_eq(write(sv[1], "y", 1), 1);
    settle();
    ck_assert_int_eq(n_served, 2);
    ck_assert_int_eq(read(sv[0], b, sizeof b), 1);

    ck_assert_int_eq(write(sv[1], "z", 1), 1);      /* bytes already there */
    repark(sv[0], 1);
    settle();
    ck_assert_int_eq(n_served, 3);
    ck_assert_int_eq(read(sv[0], b, sizeof b), 1);

    repark(sv[0], 0);                               /* wrong hint: registered */
    ck_assert_int_eq(write(sv[1], "w", 1), 1);
    settle();
    ck_assert_int_eq(n_served, 4);
    ck_assert_int_eq(read(sv[0], b, sizeof b), 1);

    int other[2];                                   /* wrong hint: never registered */
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, other), 0);
    repark(other[0], 1);
    ck_assert_int_eq(write(other[1], "v", 1), 1);
    settle();
    ck_assert_int_eq(n_served, 5);
    ck_assert_int_eq(served_fd[4], other[0]);
    ck_assert_uint_eq(park_count(), 0);
}
END_TEST

START_TEST(expired_socket_is_closed)
{
    int sv[2];
    start(4);
    park_pair(sv, 1, 1);
    pth_nap(pth_time(2, 500000));
    ck_assert_uint_eq(park_count(), 0);
    ck_assert_int_eq(fcntl(sv[0], F_GETFD), -1);    /* closed */
    char b;
    ck_assert_int_eq(read(sv[1], &b, 1), 0);        /* the peer sees end of stream */
    ck_assert_int_eq(n_served, 0);
}
END_TEST

START_TEST(stop_during_an_unpark_waiting_for_a_message)
{
    int a[2], b[2];
    start(1);
    park_pair(a, 1, 60);
    park_pair(b, 1, 60);
    /* take the depot's only message: the park thread will have to wait */
    struct depot_msg *held = depot_msg_take(dep, 0, NULL);
    ck_assert_ptr_nonnull(held);
    ck_assert_int_eq(write(a[1], "x", 1), 1);
    settle();                                       /* park thread now waits in unpark */
    ck_assert_int_eq(n_served, 0);
    park_close_all();                               /* graceful stop */
    ck_assert_uint_eq(park_count(), 0);
    depot_msg_return(dep, held);                    /* a message comes back */
    settle();
    /* a's connection was unparked before the stop: it is served (and still
     * open) or closed, but never both; b was closed by the stop */
    ck_assert_int_le(n_served, 1);
    if (n_served == 1) {
        ck_assert_int_eq(served_fd[0], a[0]);
        ck_assert_int_ne(fcntl(a[0], F_GETFD), -1);
    } else {
        ck_assert_int_eq(fcntl(a[0], F_GETFD), -1);
    }
    ck_assert_int_eq(fcntl(b[0], F_GETFD), -1);
    /* the lot is consistent: parking again and stopping again terminate */
    int c[2];
    park_pair(c, 1, 60);
    ck_assert_uint_eq(park_count(), 1);
    park_close_all();
    ck_assert_uint_eq(park_count(), 0);
    ck_assert_int_eq(fcntl(c[0], F_GETFD), -1);
}
END_TEST

/* sv[0] parked as a connection idle since `ago` seconds (and a fraction)
 * before the test began (not before now: the clock may turn meanwhile),
 * with that place in idle order */
static void park_pair_idle_since(int sv[2], unsigned timeout, time_t ago, unsigned long seq)
{
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    struct depot_conn conn = idle_conn(sv[0], 1, 0);
    conn.idle.since.tv_sec = started - ago;
    conn.idle.since.tv_usec = 500000;
    conn.idle.seq = seq;
    ck_assert_int_eq(park_connection(&conn, timeout), 0);
}

/* Handlers whose park delay ran out in one scheduler pass park in any
 * order: the lot must close the connection idle longest, not the one parked
 * first.  Before, it went by parking order.  Here within one second, then
 * (below) across seconds, as a connection woken by empty lines parks again
 * with its old idle time. */
static void check_oldest_first(time_t late_ago, time_t early_ago, time_t middle_ago)
{
    int late[2], early[2], middle[2];
    char b;
    start(4);
    park_pair_idle_since(late, 60, late_ago, 1000);     /* parked first, idle shortest */
    park_pair_idle_since(early, 60, early_ago, 998);
    park_pair_idle_since(middle, 60, middle_ago, 999);
    ck_assert_int_eq(park_close_oldest(), 1);
    ck_assert_int_eq(read(early[1], &b, 1), 0);      /* closed: idle longest */
    ck_assert_int_ne(fcntl(late[0], F_GETFD), -1);
    ck_assert_int_ne(fcntl(middle[0], F_GETFD), -1);
    ck_assert_int_eq(park_close_oldest(), 1);
    ck_assert_int_eq(read(middle[1], &b, 1), 0);
    ck_assert_int_ne(fcntl(late[0], F_GETFD), -1);
    ck_assert_uint_eq(park_count(), 1);
}

START_TEST(oldest_is_by_idle_order_not_parking_order)
{
    check_oldest_first(0, 0, 0);
}
END_TEST

START_TEST(oldest_across_seconds_is_by_idle_order)
{
    check_oldest_first(0, 2, 1);
}
END_TEST

/* Many connections parked in a scrambled order of idle times, some of them
 * parked again (woken by empty lines, still as idle as before): the lot
 * keeps them in expiry order, so they go idle longest first.  `spread`
 * seconds of idle times: within the lot's table of seconds (which spans
 * `longest` and a margin), and beyond it, with a timeout longer than the
 * lot was told of (as if its thread had been held up for hours), where
 * seconds share the table's entries and insertion must not trust them. */
static void check_idle_order(unsigned longest, unsigned timeout, unsigned spread)
{
    enum { N = 300 };
    static int sv[N][2];
    static time_t ago[N];
    start_with_slots(4, N, longest);
    srandom(spread);
    for (int i = 0; i < N; i++) {
        /* a third of them in a few seconds, to share seconds */
        ago[i] = i % 3 == 0 ? (time_t)(random() % 4) : (time_t)(random() % spread);
        park_pair_idle_since(sv[i], timeout, ago[i], (unsigned long)(1000000 - ago[i] * 100 + i % 100));
    }
    for (int i = 0; i < N; i += 7) {                /* woken, and parked again */
        ck_assert_int_eq(write(sv[i][1], "\r", 1), 1);
        for (int wait = 0; wait < 2000 && n_served == 0; wait++)
            pth_nap(pth_time(0, 1000));
        ck_assert_int_eq(n_served, 1);
        ck_assert_int_eq(served_fd[0], sv[i][0]);
        char b;
        ck_assert_int_eq(read(sv[i][0], &b, 1), 1);
        n_served = 0;
        struct depot_conn conn = idle_conn(sv[i][0], 1, 1);
        conn.idle = served_idle[0];
        ck_assert_int_eq(park_connection(&conn, timeout), 0);
    }
    ck_assert_uint_eq(park_count(), N);
    time_t last_ago = (time_t)spread;
    for (int closed = 0; closed < N; closed++) {
        ck_assert_int_eq(park_close_oldest(), 1);
        int found = -1;
        for (int i = 0; i < N; i++)
            if (sv[i][0] >= 0 && fcntl(sv[i][0], F_GETFD) == -1) {
                ck_assert_int_eq(found, -1);        /* one at a time */
                found = i;
            }
        ck_assert_int_ge(found, 0);
        ck_assert_int_le(ago[found], last_ago);     /* idle no longer than the one before */
        last_ago = ago[found];
        sv[found][0] = -1;
        close(sv[found][1]);
    }
    ck_assert_uint_eq(park_count(), 0);
}

START_TEST(idle_order_kept_within_the_table)
{
    check_idle_order(60, 60, 50);
}
END_TEST

START_TEST(idle_order_kept_within_a_day_long_table)
{
    check_idle_order(86400, 86400, 5000);
}
END_TEST

START_TEST(idle_order_kept_beyond_the_table)
{
    check_idle_order(60, 86400, 5000);
}
END_TEST

/* Parking costs a constant, whatever the timeout: a connection goes in
 * its place in expiry order through the table of seconds, not by walking
 * the list.  With timeouts longer than the table (it spanned 1,024 s), a
 * connection woken by an empty line and parked again (with its old idle
 * time, so in the middle of the list) found no slot within 1,024 s before
 * its own and was placed by a walk back from the tail over every
 * connection parked since: a client cycling old connections through empty
 * lines made each byte cost a pass over the whole lot.  Here 60 old
 * connections 1,300 s apart are parked again behind 300 recent ones; every
 * connection has a second of its own, so no park needs a single step. */
START_TEST(parking_is_constant_time_with_a_day_long_timeout)
{
    enum { OLD = 60, RECENT = 300, N = OLD + RECENT };
    static int sv[N][2];
    start_with_slots(4, N, 86400);
    unsigned long before = park_steps();
    for (int i = 0; i < N; i++) {
        /* old ones idle for 1,000 to 77,700 s, recent ones 0 to 299 s, in
         * a scrambled order */
        int k = (int)((unsigned)i * 7919 % N);
        time_t ago = k < OLD ? 1000 + (time_t)k * 1300 : (time_t)(k - OLD);
        park_pair_idle_since(sv[k], 86400, ago, (unsigned long)(1000000 - ago));
    }
    for (int k = 0; k < OLD; k++) {                 /* woken, and parked again */
        ck_assert_int_eq(write(sv[k][1], "\r", 1), 1);
        for (int wait = 0; wait < 2000 && n_served == 0; wait++)
            pth_nap(pth_time(0, 1000));
        ck_assert_int_eq(n_served, 1);
        char b;
        ck_assert_int_eq(read(sv[k][0], &b, 1), 1);
        n_served = 0;
        struct depot_conn conn = idle_conn(sv[k][0], 1, 1);
        conn.idle = served_idle[0];
        ck_assert_int_eq(park_connection(&conn, 86400), 0);
    }
    ck_assert_uint_eq(park_count(), N);
    ck_assert_uint_eq(park_steps() - before, 0);
}
END_TEST

/* Two parked sockets become readable in one batch; while the park thread
 * waits for a message to hand the first to the depot, the second is closed
 * (it is now the oldest parked, at --max-connections) and a new, silent
 * connection is parked in its slot.  The batch's event for that slot is
 * stale: before, the park thread handed the new connection to a handler
 * although it had sent nothing.  The poll park did the same until it kept
 * each poll result with the park it was taken of (it matched results to
 * slots by the descriptor number, and the new connection reuses it). */
START_TEST(stale_event_does_not_unpark_the_slots_next_connection)
{
    int a[2], b[2], c[2];
    start(1);
    park_pair(a, 1, 60);
    park_pair(b, 1, 60);
    struct depot_msg *held = depot_msg_take(dep, 0, NULL);
    ck_assert_ptr_nonnull(held);
    ck_assert_int_eq(write(a[1], "x", 1), 1);
    ck_assert_int_eq(write(b[1], "x", 1), 1);
    settle();                                       /* both harvested; one unpark waits */
    ck_assert_uint_eq(park_count(), 1);
    ck_assert_int_eq(park_close_oldest(), 1);       /* the other one */
    park_pair(c, 1, 60);                            /* reuses the freed slot */
    depot_msg_return(dep, held);
    settle();
    ck_assert_int_eq(n_served, 1);
    ck_assert(served_fd[0] == a[0] || served_fd[0] == b[0]);
    ck_assert_uint_eq(park_count(), 1);             /* c is still parked */
    ck_assert_int_ne(fcntl(c[0], F_GETFD), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("park");
    TCase *tc = tcase_create("park");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, readable_parked_socket_goes_back_to_the_depot);
    tcase_add_test(tc, a_socket_parked_again_is_reported_again);
    tcase_add_test(tc, an_unparked_connection_goes_on_with_its_wait);
    tcase_add_test(tc, expired_socket_is_closed);
    tcase_add_test(tc, stop_during_an_unpark_waiting_for_a_message);
    tcase_add_test(tc, oldest_is_by_idle_order_not_parking_order);
    tcase_add_test(tc, oldest_across_seconds_is_by_idle_order);
    tcase_add_test(tc, idle_order_kept_within_the_table);
    tcase_add_test(tc, idle_order_kept_within_a_day_long_table);
    tcase_add_test(tc, idle_order_kept_beyond_the_table);
    tcase_add_test(tc, parking_is_constant_time_with_a_day_long_timeout);
    tcase_add_test(tc, stale_event_does_not_unpark_the_slots_next_connection);
    suite_add_tcase(s, tc);
    return run_suite(s);
}

/* check_depot.c: the CoW depot: dispatch order, handler reuse, back-pressure
 * when the message pool is empty, and "done" messages overtaking queued
 * connections.  The serve function is a fake that records what it got. */
#include <check.h>

#include "check_run.h"
#include <pth.h>
#include <stdlib.h>
#include <unistd.h>

#include "depot.h"

#define MAX_SERVED 64

static struct depot *dep;
static int served_fd[MAX_SERVED];
static int served_by[MAX_SERVED];
static int n_served;
static int gate_closed;             /* serve waits while this is set */
static pth_cond_t gate_cond = PTH_COND_INIT;
static pth_mutex_t gate_mutex = PTH_MUTEX_INIT;
static int submit_from_serve;       /* fd 0's serve submits this many more */

static void submit_fd(int fd)
{
    struct depot_msg *m = depot_msg_take(dep, 0, NULL);
    ck_assert_ptr_nonnull(m);
    m->conn.fd = fd;
    depot_submit(dep, m);
}

static void fake_serve(void *ctx, const struct depot_conn *conn)
{
    int fd = conn->fd;
    (void)ctx;
    ck_assert_int_lt(n_served, MAX_SERVED);
    served_fd[n_served] = fd;
    served_by[n_served] = depot_handler_index(dep);
    n_served++;
    if (fd == 0 && submit_from_serve > 0) {
        /* new connections queue on the depot's port before our "done" */
        for (int i = 1; i <= submit_from_serve; i++)
            submit_fd(i);
    }
    pth_mutex_acquire(&gate_mutex, FALSE, NULL);
    while (gate_closed)
        pth_cond_await(&gate_cond, &gate_mutex, NULL);
    pth_mutex_release(&gate_mutex);
    if (!submit_from_serve)         /* yielding would let the depot drain its port early */
        pth_yield(NULL);
}

static void start(unsigned handlers, unsigned messages)
{
    ck_assert(pth_init());
    n_served = 0;
    gate_closed = 0;
    submit_from_serve = 0;
    struct depot_config dc = { .handlers = handlers, .messages = messages,
                               .stack_size = 32 * 1024, .serve = fake_serve };
    dep = depot_create(&dc);
    ck_assert_ptr_nonnull(dep);
}

static void run_until_served(int n)
{
    for (int i = 0; i < 10000 && n_served < n; i++)
        pth_yield(NULL);
    for (int i = 0; i < 100; i++)   /* let handlers report done */
        pth_yield(NULL);
}

/* a joinable thread running fn(arg), then 100 yields: it has run until it
 * waits (or finished) */
static pth_t spawn_and_settle(void *(*fn)(void *), void *arg)
{
    pth_attr_t a = pth_attr_new();
    pth_attr_set(a, PTH_ATTR_JOINABLE, TRUE);
    pth_t t = pth_spawn(a, fn, arg);
    pth_attr_destroy(a);
    ck_assert(t != NULL);
    for (int i = 0; i < 100; i++)
        pth_yield(NULL);
    return t;
}

START_TEST(handlers_start_suspended_and_idle)
{
    start(4, 8);
    run_until_served(0);
    struct depot_stats st;
    depot_get_stats(dep, &st);
    ck_assert_uint_eq(st.idle, 4);
    ck_assert_uint_eq(st.free_msgs, 8);
    ck_assert_uint_eq(st.done, 4);
}
END_TEST

START_TEST(one_handler_serves_in_arrival_order)
{
    start(1, 8);
    run_until_served(0);
    for (int fd = 100; fd < 106; fd++)
        submit_fd(fd);
    run_until_served(6);
    ck_assert_int_eq(n_served, 6);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(served_fd[i], 100 + i);
}
END_TEST

START_TEST(two_handlers_share_the_backlog_in_order)
{
    start(2, 8);
    run_until_served(0);
    for (int fd = 100; fd < 106; fd++)
        submit_fd(fd);
    run_until_served(6);
    ck_assert_int_eq(n_served, 6);
    /* the first two go to the two idle handlers at once ... */
    ck_assert_int_eq(served_fd[0] + served_fd[1], 100 + 101);
    ck_assert_int_ne(served_by[0], served_by[1]);
    /* ... and each handler then takes the backlog in arrival order */
    int last[2] = { 0, 0 }, seen = 0;
    for (int i = 0; i < 6; i++) {
        ck_assert_int_gt(served_fd[i], last[served_by[i]]);
        last[served_by[i]] = served_fd[i];
        seen |= 1 << (served_fd[i] - 100);
    }
    ck_assert_int_eq(seen, 0x3f);
    struct depot_stats st;
    depot_get_stats(dep, &st);
    ck_assert_uint_eq(st.dispatched, 6);
    ck_assert_uint_eq(st.idle, 2);
    ck_assert_uint_eq(st.free_msgs, 8);
}
END_TEST

START_TEST(idle_handler_is_reused)
{
    start(3, 4);
    run_until_served(0);
    for (int i = 0; i < 5; i++) {
        submit_fd(10 + i);
        run_until_served(i + 1);
    }
    ck_assert_int_eq(n_served, 5);
    for (int i = 1; i < 5; i++)
        ck_assert_int_eq(served_by[i], served_by[0]);
    struct depot_stats st;
    depot_get_stats(dep, &st);
    ck_assert_uint_eq(st.handlers_used, 1);
    ck_assert_uint_eq(st.idle, 3);
}
END_TEST

static int accepted;

static void *fake_acceptor(void *arg)
{
    (void)arg;
    for (int fd = 0; fd < 5; fd++) {
        struct depot_msg *m = depot_msg_take(dep, 1, NULL);   /* waits when the pool is empty */
        m->conn.fd = 50 + fd;
        depot_submit(dep, m);
        accepted++;
    }
    return NULL;
}

START_TEST(empty_pool_stops_accepting)
{
    start(1, 2);
    run_until_served(0);
    gate_closed = 1;
    accepted = 0;
    ck_assert_ptr_nonnull(pth_spawn(PTH_ATTR_DEFAULT, fake_acceptor, NULL));
    for (int i = 0; i < 1000; i++)
        pth_yield(NULL);
    /* the handler holds fd 50 (its message went back to the pool), fd 51
     * and fd 52 wait in the depot: both messages are taken */
    ck_assert_int_eq(n_served, 1);
    ck_assert_int_eq(accepted, 3);
    ck_assert_ptr_null(depot_msg_take(dep, 0, NULL));
    struct depot_stats st;
    depot_get_stats(dep, &st);
    ck_assert_uint_eq(st.free_msgs, 0);
    ck_assert_uint_eq(st.backlog, 2);

    pth_mutex_acquire(&gate_mutex, FALSE, NULL);
    gate_closed = 0;
    pth_cond_notify(&gate_cond, TRUE);
    pth_mutex_release(&gate_mutex);
    run_until_served(5);
    ck_assert_int_eq(accepted, 5);
    ck_assert_int_eq(n_served, 5);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(served_fd[i], 50 + i);
}
END_TEST

static int taken_by[2];

static void *take_one(void *arg)
{
    int who = (int)(long)arg;
    struct depot_msg *m = depot_msg_take(dep, 1, NULL);   /* both wait: the pool is empty */
    taken_by[who]++;
    depot_msg_return(dep, m);
    return NULL;
}

/* The accept thread and the park thread can wait for a free message at the
 * same time; each must be woken (once one event object served both, which
 * hung the scheduler when message ports began waking their waiters). */
START_TEST(two_threads_wait_for_the_empty_pool)
{
    start(1, 1);
    struct depot_msg *held = depot_msg_take(dep, 0, NULL);
    ck_assert_ptr_nonnull(held);
    taken_by[0] = taken_by[1] = 0;
    pth_attr_t a = pth_attr_new();
    pth_attr_set(a, PTH_ATTR_JOINABLE, TRUE);
    pth_t t0 = pth_spawn(a, take_one, (void *)0L);
    pth_t t1 = pth_spawn(a, take_one, (void *)1L);
    pth_attr_destroy(a);
    ck_assert(t0 != NULL && t1 != NULL);
    for (int i = 0; i < 100; i++)
        pth_yield(NULL);
    ck_assert_int_eq(taken_by[0] + taken_by[1], 0);
    depot_msg_return(dep, held);
    ck_assert(pth_join(t0, NULL));
    ck_assert(pth_join(t1, NULL));
    ck_assert_int_eq(taken_by[0], 1);
    ck_assert_int_eq(taken_by[1], 1);
}
END_TEST

static struct depot_msg *taken_at_stop;
static int take_returned;

static void *take_until_stop(void *arg)
{
    taken_at_stop = depot_msg_take(dep, 1, (pth_event_t)arg);
    take_returned = 1;
    return NULL;
}

/* A stopping worker's accept thread waiting for a free message must wake
 * on its stop event, not at the next free message (which may be the end of
 * the longest transfer), or new clients queued on its listening socket
 * until the worker exited. */
START_TEST(empty_pool_wait_ends_on_stop_event)
{
    start(1, 1);
    struct depot_msg *held = depot_msg_take(dep, 0, NULL);
    ck_assert_ptr_nonnull(held);
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pth_event_t ev_stop = pth_event(PTH_EVENT_FD | PTH_UNTIL_FD_READABLE, p[0]);
    ck_assert_ptr_nonnull(ev_stop);
    take_returned = 0;
    taken_at_stop = held;
    pth_t t = spawn_and_settle(take_until_stop, ev_stop);
    ck_assert_int_eq(take_returned, 0);
    ck_assert_int_eq(write(p[1], "s", 1), 1);
    ck_assert(pth_join(t, NULL));
    ck_assert_ptr_null(taken_at_stop);
    pth_event_free(ev_stop, PTH_FREE_THIS);
    close(p[0]);
    close(p[1]);

    /* a message that comes first is taken, the stop event (still pending)
     * split off again: a second wait with it works as the first */
    ck_assert_int_eq(pipe(p), 0);
    ev_stop = pth_event(PTH_EVENT_FD | PTH_UNTIL_FD_READABLE, p[0]);
    ck_assert_ptr_nonnull(ev_stop);
    for (int round = 0; round < 2; round++) {
        take_returned = 0;
        taken_at_stop = NULL;
        t = spawn_and_settle(take_until_stop, ev_stop);
        ck_assert_int_eq(take_returned, 0);
        depot_msg_return(dep, held);
        ck_assert(pth_join(t, NULL));
        ck_assert_ptr_eq(taken_at_stop, held);
        ck_assert(pth_event_status(ev_stop) != PTH_STATUS_OCCURRED);
    }
    pth_event_free(ev_stop, PTH_FREE_THIS);
    close(p[0]);
    close(p[1]);
}
END_TEST

static int reserve_returned;

static void *reserve_one(void *arg)
{
    (void)arg;
    depot_conn_reserve(dep, -1, NULL);
    reserve_returned = 1;
    return NULL;
}

/* An accept thread waiting at --max-connections returns once the worker
 * stops accepting, so it can close its listening socket. */
START_TEST(stop_accepting_ends_the_wait_at_the_cap)
{
    ck_assert(pth_init());
    n_served = 0;
    struct depot_config dc = { .handlers = 1, .messages = 2, .stack_size = 32 * 1024,
                               .serve = fake_serve, .max_connections = 1 };
    dep = depot_create(&dc);
    ck_assert_ptr_nonnull(dep);
    ck_assert_int_eq(depot_conn_reserve(dep, -1, NULL), 0);    /* the one allowed */
    reserve_returned = 0;
    pth_t t = spawn_and_settle(reserve_one, NULL);
    ck_assert_int_eq(reserve_returned, 0);
    depot_stop_accepting(dep);
    ck_assert(pth_join(t, NULL));
    ck_assert_int_eq(reserve_returned, 1);
    /* and a later reservation does not wait either */
    depot_conn_reserve(dep, -1, NULL);
}
END_TEST

START_TEST(done_overtakes_queued_connections)
{
    start(1, 8);
    run_until_served(0);
    submit_from_serve = 3;
    submit_fd(0);
    run_until_served(4);
    ck_assert_int_eq(n_served, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(served_fd[i], i);
    /* The depot's port held [done, conn 1, conn 2, conn 3]: the pushed done
     * was seen first, so conn 1 went straight to the free handler and only
     * two ever waited.  Had done queued behind them, three would have. */
    struct depot_stats st;
    depot_get_stats(dep, &st);
    ck_assert_uint_eq(st.max_backlog, 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("depot");
    TCase *tc = tcase_create("depot");
    tcase_add_test(tc, handlers_start_suspended_and_idle);
    tcase_add_test(tc, one_handler_serves_in_arrival_order);
    tcase_add_test(tc, two_handlers_share_the_backlog_in_order);
    tcase_add_test(tc, idle_handler_is_reused);
    tcase_add_test(tc, empty_pool_stops_accepting);
    tcase_add_test(tc, two_threads_wait_for_the_empty_pool);
    tcase_add_test(tc, done_overtakes_queued_connections);
    tcase_add_test(tc, empty_pool_wait_ends_on_stop_event);
    tcase_add_test(tc, stop_accepting_ends_the_wait_at_the_cap);
    suite_add_tcase(s, tc);
    return run_suite(s);
}

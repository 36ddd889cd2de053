/* check_io.c: io.c's clock and deadlines.  Deadlines start from a coarse
 * clock (io_clock_now) but are enforced by Pth's timers, which read the
 * precise one: the two must share an epoch and stay within a tick. */
#include <check.h>

#include "check_run.h"
#include "io.h"

#include <errno.h>
#include <pth.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static double seconds(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

START_TEST(clock_now_is_the_wall_clock_within_a_tick)
{
    for (int i = 0; i < 1000; i++) {
        struct timeval before, now, after;
        gettimeofday(&before, NULL);
        io_clock_now(&now);
        gettimeofday(&after, NULL);
        /* a coarse clock lags by at most a tick (10 ms at HZ=100) and is
         * never ahead */
        ck_assert_msg(seconds(&now) <= seconds(&after) + 1e-6,
                      "io_clock_now %.6f is ahead of gettimeofday %.6f",
                      seconds(&now), seconds(&after));
        ck_assert_msg(seconds(&now) >= seconds(&before) - 0.05,
                      "io_clock_now %.6f lags gettimeofday %.6f by more than 50 ms",
                      seconds(&now), seconds(&before));
    }
}
END_TEST

/* Pth, a socket pair nothing is written to, and a waiter, for the waits. */
static int sv[2];
static struct io_waiter w;

static void waiting_setup(void)
{
    ck_assert(pth_init());
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(io_waiter_init(&w), 0);
}

static void waiting_teardown(void)
{
    io_waiter_free(&w);
    close(sv[0]);
    close(sv[1]);
    pth_kill();
}

START_TEST(a_deadline_one_second_away_times_out_after_a_second)
{
    struct timeval deadline, start, end;
    io_deadline(&deadline, 1);
    gettimeofday(&start, NULL);
    errno = 0;
    ck_assert_int_eq(io_wait(&w, sv[0], 0, &deadline), -1);
    ck_assert_int_eq(errno, ETIMEDOUT);
    gettimeofday(&end, NULL);
    double waited = seconds(&end) - seconds(&start);
    /* a deadline from the wrong clock (monotonic: 1970 to Pth) would time
     * out at once; the coarse clock may cost at most a tick */
    ck_assert_msg(waited >= 0.9 && waited < 3.0, "timed out after %.3f s, deadline was 1 s", waited);
}
END_TEST

static int always_under_pressure(void)
{
    return 1;
}

/* The pressure guard cuts a head or body that started more than
 * IO_PRESSURE_GRACE seconds ago.  It compared whole seconds: a guard set
 * 1.4 s ago, in the second before last, had "2 seconds" behind it, and the
 * wait failed before it began. */
START_TEST(the_pressure_guard_counts_to_the_microsecond)
{
    int (*saved)(void) = io_under_pressure;
    io_under_pressure = always_under_pressure;
    struct timeval deadline, end;
    struct timeval now;
    gettimeofday(&now, NULL);
    if (now.tv_usec >= 400000) {        /* into the first 0.4 s of a second */
        usleep((useconds_t)(1000000 - now.tv_usec + 1000));
        gettimeofday(&now, NULL);
    }
    w.guard_since.tv_sec = now.tv_sec - 2;
    w.guard_since.tv_usec = now.tv_usec + 600000;   /* 1.4 s ago */
    io_deadline(&deadline, 10);
    errno = 0;
    ck_assert_int_eq(io_wait(&w, sv[0], 0, &deadline), -1);
    ck_assert_int_eq(errno, ETIMEDOUT);
    gettimeofday(&end, NULL);
    double behind = seconds(&end) - seconds(&w.guard_since);
    ck_assert_msg(behind >= IO_PRESSURE_GRACE - 0.05, "cut %.3f s after the guard was set", behind);
    ck_assert_msg(behind < IO_PRESSURE_GRACE + 1.5, "not cut until %.3f s", behind);
    io_under_pressure = saved;
}
END_TEST

int main(void)
{
    Suite *s = suite_create("io");
    TCase *tc = tcase_create("clock");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, clock_now_is_the_wall_clock_within_a_tick);
    suite_add_tcase(s, tc);
    TCase *waits = tcase_create("waits");
    tcase_set_timeout(waits, 20);
    tcase_add_checked_fixture(waits, waiting_setup, waiting_teardown);
    tcase_add_test(waits, a_deadline_one_second_away_times_out_after_a_second);
    tcase_add_test(waits, the_pressure_guard_counts_to_the_microsecond);
    suite_add_tcase(s, waits);
    return run_suite(s);
}

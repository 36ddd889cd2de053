/* check_response.c: response heads as written into a connection's output
 * buffer, against a real socketpair. */
#include <check.h>

#include "check_run.h"
#include <errno.h>
#include <fcntl.h>
#include <pth.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "buff.h"
#include "connection.h"
#include "date_cache.h"
#include "io.h"
#include "response.h"

#define CAP 1024
#define STATUS_LINE "HTTP/1.1 200 OK\r\nDate: "

static int sv[2];
static struct io_waiter waiter;
static struct conn c;
static char storage[CAP];
static int begin_rc = 1;

static void setup(void)
{
    ck_assert(pth_init());
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    ck_assert_int_eq(io_waiter_init(&waiter), 0);
    memset(&c, 0, sizeof c);
    buff_init(&c.out, storage, CAP, &waiter, 10);
    buff_attach(&c.out, sv[0]);
}

static void teardown(void)
{
    close(sv[0]);
    close(sv[1]);
}

static void *begin_and_flush(void *arg)
{
    (void)arg;
    begin_rc = response_begin(&c, NULL, 200);
    if (begin_rc == 0)
        begin_rc = buff_flush(&c.out);
    return NULL;
}

/* Sleeps (letting other threads run) until time(2) is past `second`. */
static void wait_past(time_t second)
{
    while (time(NULL) <= second)
        pth_nap(pth_time(0, 5000));
}

/* The Date text is shared by every connection of the worker and rebuilt when
 * the second changes.  It was copied from there in two parts when it
 * straddled the end of the output buffer, with the flush in between: a
 * flush that had to wait for the client let another connection rebuild the
 * text, and the header came out as the old time's first bytes followed by
 * the new time's last ones. */
START_TEST(date_is_the_time_the_response_began_even_when_a_flush_waits_within_it)
{
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    static char junk[4096];
    size_t queued = 0;
    ssize_t n;
    while ((n = write(sv[0], junk, sizeof junk)) > 0)     /* the client reads nothing yet */
        queued += (size_t)n;
    ck_assert_int_eq(errno, EAGAIN);

    /* room for the status line and the Date's first byte only */
    static char filler[CAP];
    memset(filler, 'f', sizeof filler);
    size_t before = CAP - strlen(STATUS_LINE) - 1;
    ck_assert_int_eq(buff_write(&c.out, filler, before), 0);

    time_t second = time(NULL);
    wait_past(second);                  /* at the start of a second: */
    second = time(NULL);
    char began[30];
    memcpy(began, date_cache_now(), 29);
    began[29] = '\0';
    pth_t writer = pth_spawn(PTH_ATTR_DEFAULT, begin_and_flush, NULL);
    ck_assert_ptr_nonnull(writer);
    pth_yield(writer);                  /* it begins, and waits in the flush */
    ck_assert_int_eq(begin_rc, 1);
    ck_assert_int_eq(time(NULL), second);   /* still the second it began in */

    wait_past(second);
    ck_assert_str_ne(date_cache_now(), began);     /* another connection's response */

    size_t cap = queued + 2 * CAP, have = 0;
    char *got = malloc(cap);
    for (;;) {                          /* the client reads at last */
        n = read(sv[1], got + have, cap - have);
        if (n > 0) {
            have += (size_t)n;
            continue;
        }
        if (begin_rc != 1)
            break;
        pth_yield(NULL);
    }
    pth_join(writer, NULL);
    ck_assert_int_eq(begin_rc, 0);
    ck_assert_uint_ge(have, queued + before + strlen(STATUS_LINE) + 29);
    const char *head = got + queued + before;
    ck_assert_int_eq(memcmp(head, STATUS_LINE, strlen(STATUS_LINE)), 0);
    char date[30];
    memcpy(date, head + strlen(STATUS_LINE), 29);
    date[29] = '\0';
    ck_assert_str_eq(date, began);
    free(got);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("response");
    TCase *tc = tcase_create("response");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, date_is_the_time_the_response_began_even_when_a_flush_waits_within_it);
    suite_add_tcase(s, tc);
    return run_suite(s);
}

/* check_buff.c: flush decisions and partial writes of the buffered output
 * layer, against a real socketpair (with a tiny send buffer where needed). */
#include <check.h>

#include "check_run.h"
#include <errno.h>
#include <fcntl.h>
#include <pth.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buff.h"
#include "io.h"

#define CAP 1024

static int sv[2];
static struct io_waiter waiter;
static struct buff b;
static char storage[CAP];

static void setup(void)
{
    ck_assert(pth_init());
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    ck_assert_int_eq(io_waiter_init(&waiter), 0);
    buff_init(&b, storage, CAP, &waiter, 2);
    buff_attach(&b, sv[0]);
}

static void teardown(void)
{
    close(sv[0]);
    close(sv[1]);
}

/* Reads exactly n bytes from the peer end (data already sent). */
static void expect_peer_bytes(const char *want, size_t n)
{
    char *got = malloc(n + 1);
    size_t have = 0;
    while (have < n) {
        ssize_t r = read(sv[1], got + have, n - have);
        ck_assert_int_gt(r, 0);
        have += (size_t)r;
    }
    ck_assert_int_eq(memcmp(got, want, n), 0);
    char extra;
    ck_assert_int_eq(read(sv[1], &extra, 1), -1);   /* nothing more was sent */
    ck_assert_int_eq(errno, EAGAIN);
    free(got);
}

/* Fills body with a letter pattern starting at first. */
static void fill_pattern(char *body, size_t n, char first)
{
    for (size_t i = 0; i < n; i++)
        body[i] = (char)(first + i % 26);
}

/* The peer received head followed by body, and nothing more. */
static void expect_peer_head_and_body(const char *head, const char *body, size_t body_len)
{
    size_t head_len = strlen(head);
    char *want = malloc(head_len + body_len);
    memcpy(want, head, head_len);
    memcpy(want + head_len, body, body_len);
    expect_peer_bytes(want, head_len + body_len);
    free(want);
}

START_TEST(small_writes_gather_without_syscalls)
{
    ck_assert_int_eq(buff_write(&b, "HTTP/1.1 200 OK\r\n", 17), 0);
    ck_assert_int_eq(buff_puts(&b, "Content-Length: "), 0);
    ck_assert_int_eq(buff_put_u64(&b, 12500), 0);
    ck_assert_uint_eq(b.syscalls, 0);
    ck_assert_uint_eq(buff_pending(&b), 17 + 16 + 5);
    ck_assert_int_eq(buff_flush(&b), 0);
    ck_assert_uint_eq(b.syscalls, 1);
    ck_assert_uint_eq(buff_pending(&b), 0);
    expect_peer_bytes("HTTP/1.1 200 OK\r\nContent-Length: 12500", 38);
    ck_assert_int_eq(buff_flush(&b), 0);            /* empty flush: no call */
    ck_assert_uint_eq(b.syscalls, 1);
}
END_TEST

START_TEST(large_write_leaves_with_pending_in_one_writev)
{
    char body[3000];
    fill_pattern(body, sizeof body, 'a');
    buff_puts(&b, "HEAD\r\n");
    ck_assert_int_eq(buff_write(&b, body, sizeof body), 0);
    ck_assert_uint_eq(b.syscalls, 1);               /* header + body together */
    ck_assert_uint_eq(buff_pending(&b), 0);
    ck_assert_uint_eq(b.bytes_sent, 6 + sizeof body);
    expect_peer_head_and_body("HEAD\r\n", body, sizeof body);
}
END_TEST

START_TEST(body_that_fits_is_copied_and_waits_for_flush)
{
    char body[500];
    memset(body, 'x', sizeof body);
    buff_puts(&b, "H\r\n");
    ck_assert_int_eq(buff_write(&b, body, sizeof body), 0);
    ck_assert_uint_eq(b.syscalls, 0);               /* pipelined responses batch */
    ck_assert_uint_eq(buff_pending(&b), 503);
    buff_puts(&b, "H2\r\n");
    ck_assert_int_eq(buff_flush(&b), 0);
    ck_assert_uint_eq(b.syscalls, 1);
    char want[507];
    memcpy(want, "H\r\n", 3);
    memset(want + 3, 'x', 500);
    memcpy(want + 503, "H2\r\n", 4);
    expect_peer_bytes(want, sizeof want);
}
END_TEST

START_TEST(tiny_write_overflowing_tops_up_and_flushes)
{
    char fill[CAP - 10];
    memset(fill, 'f', sizeof fill);
    ck_assert_int_eq(buff_write(&b, fill, sizeof fill), 0);
    ck_assert_uint_eq(b.syscalls, 0);
    ck_assert_int_eq(buff_write(&b, "0123456789ABCDEFGHIJ", 20), 0);   /* < BUFF_LARGE_WRITE */
    ck_assert_uint_eq(b.syscalls, 1);               /* the full buffer went out */
    ck_assert_uint_eq(buff_pending(&b), 10);        /* the tail stays */
    ck_assert_int_eq(buff_flush(&b), 0);
    char want[CAP + 10];
    memcpy(want, fill, sizeof fill);
    memcpy(want + sizeof fill, "0123456789ABCDEFGHIJ", 20);
    expect_peer_bytes(want, sizeof want);
}
END_TEST

START_TEST(big_write_on_empty_buffer_goes_direct)
{
    static char big[4 * CAP];
    memset(big, 'z', sizeof big);
    ck_assert_int_eq(buff_write(&b, big, sizeof big), 0);
    ck_assert_uint_eq(b.syscalls, 1);
    ck_assert_uint_eq(buff_pending(&b), 0);
    expect_peer_bytes(big, sizeof big);
}
END_TEST

#define BIG (1024 * 1024)
static unsigned char *received;
static size_t received_len;

static void *slow_reader(void *arg)
{
    struct io_waiter w;
    (void)arg;
    io_waiter_init(&w);
    while (received_len < BIG + 4) {
        ssize_t n = io_read(&w, sv[1], received + received_len,
                            (BIG + 4 - received_len) < 700 ? (BIG + 4 - received_len) : 700, NULL);
        if (n <= 0)
            break;
        received_len += (size_t)n;
        pth_yield(NULL);
    }
    return NULL;
}

START_TEST(partial_writes_resume_until_everything_is_sent)
{
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    unsigned char *data = malloc(BIG);
    for (size_t i = 0; i < BIG; i++)
        data[i] = (unsigned char)(i * 7 + i / 251);
    received = malloc(BIG + 4);
    received_len = 0;
    pth_t reader = pth_spawn(PTH_ATTR_DEFAULT, slow_reader, NULL);
    buff_puts(&b, "HDR:");
    ck_assert_int_eq(buff_write(&b, data, BIG), 0);  /* many partial writes inside */
    ck_assert_int_eq(buff_flush(&b), 0);
    pth_join(reader, NULL);
    ck_assert_uint_eq(received_len, BIG + 4);
    ck_assert_int_eq(memcmp(received, "HDR:", 4), 0);
    ck_assert_int_eq(memcmp(received + 4, data, BIG), 0);
    free(data);
    free(received);
}
END_TEST

START_TEST(stalled_reader_times_out_and_failure_sticks)
{
    static char big[1024 * 1024];
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    buff_init(&b, storage, CAP, &waiter, 1);        /* 1 s send timeout */
    buff_attach(&b, sv[0]);
    ck_assert_int_eq(buff_write(&b, big, sizeof big), -1);
    ck_assert_int_eq(errno, ETIMEDOUT);
    ck_assert_int_eq(b.failed, 1);
    ck_assert_int_eq(buff_write(&b, "x", 1), -1);
    ck_assert_int_eq(buff_flush(&b), -1);
}
END_TEST

START_TEST(peer_reset_fails_the_buffer)
{
    static char big[64 * 1024];
    close(sv[1]);
    sv[1] = -1;
    ck_assert_int_eq(buff_write(&b, big, sizeof big), -1);
    ck_assert_int_eq(errno, EPIPE);
    ck_assert_int_eq(b.failed, 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("buff");
    TCase *tc = tcase_create("buff");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, small_writes_gather_without_syscalls);
    tcase_add_test(tc, large_write_leaves_with_pending_in_one_writev);
    tcase_add_test(tc, body_that_fits_is_copied_and_waits_for_flush);
    tcase_add_test(tc, tiny_write_overflowing_tops_up_and_flushes);
    tcase_add_test(tc, big_write_on_empty_buffer_goes_direct);
    tcase_add_test(tc, partial_writes_resume_until_everything_is_sent);
    tcase_add_test(tc, stalled_reader_times_out_and_failure_sticks);
    tcase_add_test(tc, peer_reset_fails_the_buffer);
    suite_add_tcase(s, tc);
    return run_suite(s);
}

/*
 * pthbench.c -- micro benchmarks for cowd's patched GNU Pth scheduler.
 * Not a test: scripts/pth-bench/run builds it against stock and patched
 * Pth builds and prints a table.
 *
 *   pthbench yield N        N pth_yield() ping-pongs between two threads;
 *                           prints ns per yield
 *   pthbench rt IDLE SECS   socketpair round trips (pth_write + pth_read
 *                           against an echo thread) while IDLE threads
 *                           sit in pth_read on their own fds; prints
 *                           round trips per second (best of 5 windows,
 *                           against load from other processes)
 *   pthbench susp N         N threads waiting (pth_nap); prints ns per
 *                           pth_suspend and per pth_resume
 *   pthbench rtn N          exactly N socketpair round trips, no idle
 *                           threads (for counting system calls with
 *                           strace -c: run N and 2N, subtract)
 *
 * Prints "n/a" (exit 3) when the build cannot do it (e.g. stock Pth and
 * fds >= FD_SETSIZE).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "pth.h"

static double now_s(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static pth_t spawn_small(void *(*fn)(void *), void *arg)
{
    pth_attr_t a = pth_attr_new();
    pth_t t;
    pth_attr_set(a, PTH_ATTR_STACK_SIZE, 16 * 1024);
    pth_attr_set(a, PTH_ATTR_JOINABLE, FALSE);
    t = pth_spawn(a, fn, arg);
    pth_attr_destroy(a);
    return t;
}

/* ---- yield ---- */
static volatile long yield_left;
static void *yielder(void *arg)
{
    (void)arg;
    while (yield_left > 0) {
        yield_left--;
        pth_yield(NULL);
    }
    return NULL;
}
static int bench_yield(long n)
{
    double t0, t1;
    yield_left = n;
    spawn_small(yielder, NULL);
    pth_yield(NULL); /* let it start */
    t0 = now_s();
    while (yield_left > 0) {
        yield_left--;
        pth_yield(NULL);
    }
    t1 = now_s();
    printf("%.0f\n", (t1 - t0) * 1e9 / (double)n);
    return 0;
}

/* ---- round trips ---- */
static void *echo(void *arg)
{
    int fd = (int)(long)arg;
    char buf[64];
    ssize_t n;
    while ((n = pth_read(fd, buf, sizeof(buf))) > 0)
        if (pth_write(fd, buf, (size_t)n) != n)
            break;
    return NULL;
}
static void *idler(void *arg)
{
    int fd = (int)(long)arg;
    char c;
    (void)pth_read(fd, &c, 1);
    return NULL;
}
static int bench_rt(int idle, double secs)
{
    struct rlimit rl;
    int s[2], e[2], i, fd, round;
    double best = 0, t0, t;
    long n;
    char c = 'x', r;

    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < (rlim_t)idle + 64) {
        rl.rlim_cur = rl.rlim_max = (rlim_t)idle + 64;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            printf("n/a\n");
            return 3;
        }
    }
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, e) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0)
        return 1;
    /* idle waiters: each in pth_read on its own fd (dups of one socket
       that never gets data) */
    for (i = 0; i < idle; i++) {
        if ((fd = dup(s[0])) < 0)
            return 1;
        spawn_small(idler, (void *)(long)fd);
    }
    spawn_small(echo, (void *)(long)e[1]);
    pth_yield(NULL);
    if (pth_ctrl(PTH_CTRL_GETTHREADS_WAITING) < idle) {
        printf("n/a\n");
        return 3;
    }
    for (round = 0; round < 5; round++) {
        n = 0;
        t0 = now_s();
        do {
            for (i = 0; i < 32; i++, n++) {
                if (pth_write(e[0], &c, 1) != 1 || pth_read(e[0], &r, 1) != 1) {
                    printf("n/a\n");
                    return 3;
                }
            }
        } while ((t = now_s() - t0) < secs / 5);
        if (n / t > best)
            best = n / t;
    }
    printf("%.0f\n", best);
    fflush(stdout);
    _exit(0); /* skip tearing down thousands of threads */
}

/* ---- a fixed number of round trips (system call counting) ---- */
static int bench_rtn(long n)
{
    int e[2];
    long i;
    char c = 'x', r;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, e) != 0)
        return 1;
    spawn_small(echo, (void *)(long)e[1]);
    pth_yield(NULL);
    for (i = 0; i < n; i++)
        if (pth_write(e[0], &c, 1) != 1 || pth_read(e[0], &r, 1) != 1)
            return 1;
    printf("%ld\n", n);
    fflush(stdout);
    _exit(0);
}

/* ---- suspend/resume ---- */
static void *napper(void *arg)
{
    (void)arg;
    pth_nap(pth_time(3600, 0));
    return NULL;
}
static int bench_susp(int n)
{
    pth_t *t = calloc((size_t)n, sizeof(pth_t));
    double ts = 0, tr = 0, t0;
    int i, round, rounds = 20;

    for (i = 0; i < n; i++)
        t[i] = spawn_small(napper, NULL);
    pth_yield(NULL);
    if (pth_ctrl(PTH_CTRL_GETTHREADS_WAITING) < n) {
        printf("n/a n/a\n");
        return 3;
    }
    for (round = 0; round < rounds; round++) {
        t0 = now_s();
        for (i = 0; i < n; i++)
            if (!pth_suspend(t[i]))
                return 1;
        ts += now_s() - t0;
        t0 = now_s();
        for (i = 0; i < n; i++)
            if (!pth_resume(t[i]))
                return 1;
        tr += now_s() - t0;
    }
    printf("%.0f %.0f\n", ts * 1e9 / ((double)n * rounds), tr * 1e9 / ((double)n * rounds));
    fflush(stdout);
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s yield N | rt IDLE SECS | rtn N | susp N\n", argv[0]);
        return 2;
    }
    if (!pth_init())
        return 1;
    if (strcmp(argv[1], "yield") == 0)
        return bench_yield(atol(argv[2]));
    if (strcmp(argv[1], "rt") == 0)
        return bench_rt(atoi(argv[2]), argc > 3 ? atof(argv[3]) : 1.5);
    if (strcmp(argv[1], "rtn") == 0)
        return bench_rtn(atol(argv[2]));
    if (strcmp(argv[1], "susp") == 0)
        return bench_susp(atoi(argv[2]));
    return 2;
}

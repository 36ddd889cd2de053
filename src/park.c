/* park.c: the parking lot (see park.h).  Linux: a private epoll set, and
 * the park thread sleeps in the Pth scheduler on its readability, so
 * parking costs the rest of the server nothing.  Elsewhere (or configured
 * --with-park=poll): poll(2) over the parked sockets every 10 ms, a nap
 * in between; that costs a wake-up per nap and a poll over every parked
 * socket (found on the timeout lists), and a parked connection's request
 * waits for the next poll.
 *
 * Expiry: every slot is on the list of its timeout value, in the order of
 * its expiry second (counted from when its connection fell idle, not from
 * the park: handlers whose park delay ran out together may park in any
 * order, and a connection woken by empty lines parks again with its old
 * expiry), and within a second in the order its connection fell idle; the
 * head is the next to expire: O(1) per expiry, no timer heap.  A slot goes
 * in after the last slot of its second, or of the nearest earlier second,
 * found through a table of each second's last slot (a bitmap of the seconds
 * that have one finds the nearest a word at a time), then back a bounded
 * number of steps into idle order: not by walking back from the tail over
 * every connection parked since, which a client cycling old connections
 * through empty lines could make it do for each byte.  The table spans the
 * longest timeout and a margin, so the seconds of the slots parked never
 * share an entry (8 bytes a second over a power of two of seconds: 1 KiB a
 * list for the default timeouts, 1 MiB for a day). */
#include "park.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <pth.h>

#include "autoconfig.h"
#include "depot.h"
#include "io.h"
#include "log.h"
#include "spawn.h"

#ifdef COWD_PARK_EPOLL
#include <sys/epoll.h>
#define PARK_EPOLL 1
#endif

#define PARK_LISTS 2            /* distinct timeout values: --header-timeout, --keepalive-timeout */
#define PARK_MARGIN 64          /* seconds the table spans beyond the longest timeout: a
                                 * park thread held up that long still finds expired slots
                                 * apart from the newest (longer, and insertion falls back
                                 * to a walk: slower, still in order) */
#define PARK_REORDER 64         /* steps back to a parking slot's place in idle order */

struct slot {
    struct depot_conn conn;     /* as it goes back to the depot; conn.fd -1: free */
    unsigned timeout;
    time_t expires;
    uint32_t gen;               /* parks into this slot so far: tells a stale event */
    struct slot *prev, *next;   /* on its timeout list, or the free list */
};

struct fifo {
    unsigned timeout;
    struct slot *head, *tail;
    /* [second & lot.second_mask]: the last slot expiring in that second,
     * or NULL; busy has a bit set for each entry that is not NULL.  An
     * entry whose slot expires in another second (the park thread held up
     * beyond PARK_MARGIN) tells nothing: insertion checks what it finds */
    struct slot **last_of;
    uint64_t *busy;
};

static struct {
    struct depot *depot;
    struct slot *slots;
    unsigned n_slots, n_parked;
    unsigned n_fresh;           /* slots[n_fresh..] never used: untouched, so not resident */
    size_t second_mask;         /* the tables' size less one (a power of two, >= 63) */
    struct slot *free_list;
    struct fifo lists[PARK_LISTS];
    pth_t tid;
    pth_event_t ev_wake;        /* msgport the park thread waits on too */
    pth_msgport_t wake_port;
    pth_message_t wake_msg;
    int wake_pending;
    int asleep;                 /* the park thread waits for a park alone */
    time_t sleep_until;         /* while the park thread waits for events: the
                                 * expiry it will wake for; else 0 */
#ifdef PARK_EPOLL
    int epfd;
    struct io_waiter waiter;    /* the park thread's wait on epfd */
#else
    struct pollfd *pfds;
    struct polled { unsigned idx; uint32_t gen; } *polled;    /* which park each pfds[] entry is */
#endif
    unsigned long steps;        /* slots stepped over by insertions (park_steps) */
} lot = { .tid = NULL };

static size_t entry_of(time_t second)
{
    return (size_t)second & lot.second_mask;
}

static void set_last(struct fifo *f, time_t second, struct slot *s)
{
    size_t i = entry_of(second);
    uint64_t bit = (uint64_t)1 << (i % 64);
    f->last_of[i] = s;
    if (s != NULL)
        f->busy[i / 64] |= bit;
    else
        f->busy[i / 64] &= ~bit;
}

/* The last slot of f expiring in `second`, if the table knows it. */
static struct slot *last_expiring(struct fifo *f, time_t second)
{
    struct slot *s = f->last_of[entry_of(second)];
    return s != NULL && s->expires == second ? s : NULL;
}

/* The latest second from `from` back to `lowest` whose table entry is set;
 * lowest - 1 if none.  A word of the bitmap at a time: at most the table's
 * size / 64 steps, and `from - lowest` must be less than the table's size. */
static time_t busy_at_or_before(const struct fifo *f, time_t from, time_t lowest)
{
    time_t t = from;
    while (t >= lowest) {
        size_t i = entry_of(t);
        unsigned bit = (unsigned)(i % 64);
        uint64_t word = f->busy[i / 64] & (~(uint64_t)0 >> (63 - bit));    /* bits 0..bit */
        if (word != 0) {
            time_t found = t - (time_t)(bit - (63 - (unsigned)__builtin_clzll(word)));
            return found >= lowest ? found : lowest - 1;
        }
        t -= (time_t)bit + 1;       /* to the last second of the word before */
    }
    return lowest - 1;
}

static void fifo_remove(struct fifo *f, struct slot *s)
{
    if (f->last_of[entry_of(s->expires)] == s)
        set_last(f, s->expires,
                 s->prev != NULL && s->prev->expires == s->expires ? s->prev : NULL);
    if (s->prev != NULL) s->prev->next = s->next; else f->head = s->next;
    if (s->next != NULL) s->next->prev = s->prev; else f->tail = s->prev;
    s->prev = s->next = NULL;
}

static struct fifo *fifo_for(unsigned timeout)
{
    for (unsigned i = 0; i < PARK_LISTS; i++)
        if (lot.lists[i].timeout == timeout || lot.lists[i].timeout == 0) {
            lot.lists[i].timeout = timeout;
            return &lot.lists[i];
        }
    return NULL;
}

static void slot_release(struct slot *s)
{
    fifo_remove(fifo_for(s->timeout), s);
    s->conn.fd = -1;
    s->next = lot.free_list;
    lot.free_list = s;
    lot.n_parked--;
}

/* The connection has bytes (or EOF): back to the depot as a connection.
 * The slot is released before waiting for a free message: while this
 * thread waits, a graceful stop (park_close_all) must not find, close and
 * free the same slot a second time. */
static void unpark(struct slot *s)
{
    /* no EPOLL_CTL_DEL: the one-shot registration fired and is disarmed;
     * the next park re-arms it with one EPOLL_CTL_MOD, and closing fd ends it */
    struct depot_conn conn = s->conn;
    conn.parked_before = 1;
    io_clock_now(&conn.queued);
    slot_release(s);
    struct depot_msg *m = depot_msg_take(lot.depot, 1, NULL);
    m->conn = conn;
    depot_submit(lot.depot, m);
}

static void expire(struct slot *s)
{
    int fd = s->conn.fd;
    slot_release(s);
    close(fd);      /* idle too long: close quietly, as nginx does; ends its epoll registration too */
    depot_conn_closed(lot.depot);
}

static time_t next_expiry(void)
{
    time_t t = 0;
    for (unsigned i = 0; i < PARK_LISTS; i++)
        if (lot.lists[i].head != NULL && (t == 0 || lot.lists[i].head->expires < t))
            t = lot.lists[i].head->expires;
    return t;
}

static void expire_due(void)
{
    /* the clock Pth's timer woke us by: time() reads the kernel's coarse
     * one, which may still say the second before for up to a tick, and the
     * deadline, already past, would spin this loop until it turned */
    struct timeval tv;
    gettimeofday(&tv, NULL);
    time_t now = tv.tv_sec;
    for (unsigned i = 0; i < PARK_LISTS; i++)
        while (lot.lists[i].head != NULL && lot.lists[i].head->expires <= now)
            expire(lot.lists[i].head);
}

static void take_wakes(void)
{
    while (pth_msgport_get(lot.wake_port) != NULL)
        ;
    lot.wake_pending = 0;
}

static void *park_main(void *arg)
{
    (void)arg;
    for (;;) {
        if (lot.n_parked == 0) {
            /* nothing to watch: sleep until park_connection() wakes us */
            lot.asleep = 1;
            pth_wait(lot.ev_wake);
            lot.asleep = 0;
            take_wakes();
            continue;
        }
        struct timeval deadline = { next_expiry(), 0 };
#ifdef PARK_EPOLL
        struct epoll_event evs[256];
        /* park_connection() wakes this wait for a connection that expires
         * sooner (a silent new one's --header-timeout, say, while only
         * longer keep-alive timeouts were parked) */
        lot.sleep_until = deadline.tv_sec;
        (void)io_wait_or(&lot.waiter, lot.epfd, &deadline, lot.ev_wake);
        lot.sleep_until = 0;
        take_wakes();
        int n = epoll_wait(lot.epfd, evs, 256, 0);
        if (n >= 0 && n < 256)
            io_drained(lot.epfd, 0);        /* harvested all: next wait needs no re-arm */
        for (int i = 0; i < n; i++) {
            /* one-shot: a registration reports once per arming, and every
             * slot is armed by its own park_connection() with its index and
             * generation.  While unpark() waits for a message, another
             * thread may close a slot of this batch and park a new
             * connection in it: its event is then stale, not the new one's. */
            struct slot *s = &lot.slots[(uint32_t)evs[i].data.u64];
            if (s->conn.fd >= 0 && s->gen == (uint32_t)(evs[i].data.u64 >> 32))
                unpark(s);
        }
#else
        /* portable fallback: poll the parked sockets every 10 ms.  A
         * parked socket's bytes wait for the next poll (5-15 ms measured);
         * polling more often costs an idle server more than the polls: at
         * 1 ms, 8-14 % of a CPU for the wake-ups alone, 10 parked or 1,000 */
        (void)deadline;
        pth_nap(pth_time(0, 10000));
        /* the parked slots are on the timeout lists: walking them costs
         * what is parked, not --max-connections slots 100 times a second */
        unsigned n = 0;
        for (unsigned l = 0; l < PARK_LISTS; l++)
            for (const struct slot *s = lot.lists[l].head; s != NULL; s = s->next) {
                lot.pfds[n] = (struct pollfd){ s->conn.fd, POLLIN, 0 };
                lot.polled[n] = (struct polled){ (unsigned)(s - lot.slots), s->gen };
                n++;
            }
        if (poll(lot.pfds, n, 0) > 0)
            for (unsigned k = 0; k < n; k++) {
                /* unpark() may wait for a message, and meanwhile other
                 * threads may close a polled slot (park_close_oldest) and
                 * park another connection in it, maybe under the same fd
                 * number: a result belongs only to the park it was taken of */
                struct slot *s = &lot.slots[lot.polled[k].idx];
                if (lot.pfds[k].revents != 0 && s->conn.fd == lot.pfds[k].fd &&
                    s->gen == lot.polled[k].gen)
                    unpark(s);
            }
#endif
        expire_due();
    }
    return NULL;
}

int park_init(struct depot *d, unsigned slots, unsigned longest_timeout)
{
    memset(&lot, 0, sizeof lot);
    lot.depot = d;
    lot.n_slots = slots;
    lot.slots = calloc(slots, sizeof *lot.slots);
    lot.wake_port = pth_msgport_create(NULL);
    if (lot.slots == NULL || lot.wake_port == NULL) {
        log_errno(LOG_ERROR, "park: no memory for %u slots", slots);
        return -1;
    }
    size_t seconds = 64;
    while (seconds < (size_t)longest_timeout + PARK_MARGIN)
        seconds *= 2;
    lot.second_mask = seconds - 1;
    for (unsigned i = 0; i < PARK_LISTS; i++) {
        lot.lists[i].last_of = calloc(seconds, sizeof *lot.lists[i].last_of);
        lot.lists[i].busy = calloc(seconds / 64, sizeof *lot.lists[i].busy);
        if (lot.lists[i].last_of == NULL || lot.lists[i].busy == NULL) {
            log_errno(LOG_ERROR, "park: no memory for a table of %zu seconds", seconds);
            return -1;
        }
    }
    lot.ev_wake = pth_event(PTH_EVENT_MSG, lot.wake_port);
    /* the park thread's events are made here, not in the thread: one that
     * could not wait would leave every parked connection hanging */
    if (lot.ev_wake == NULL) {
        log_errno(LOG_ERROR, "park: cannot create its wake-up event");
        return -1;
    }
#ifdef PARK_EPOLL
    lot.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (lot.epfd < 0) {
        log_errno(LOG_ERROR, "park: epoll_create1");
        return -1;
    }
    if (io_waiter_init(&lot.waiter) < 0) {
        log_errno(LOG_ERROR, "park: cannot create wait events");
        return -1;
    }
#else
    lot.pfds = calloc(slots, sizeof *lot.pfds);
    lot.polled = calloc(slots, sizeof *lot.polled);
    if (lot.pfds == NULL || lot.polled == NULL) {
        log_errno(LOG_ERROR, "park: no memory to poll %u slots", slots);
        return -1;
    }
#endif
    lot.tid = spawn_detached("park", 0, park_main, NULL);
    if (lot.tid == NULL) {
        log_errno(LOG_ERROR, "park: cannot spawn the park thread");
        return -1;
    }
    return 0;
}

#ifdef PARK_EPOLL
/* One system call per park: a connection's first park adds fd to the set
 * one-shot, later ones re-arm that registration (it disarmed itself when it
 * reported).  MOD also reports bytes that arrived before it, so none are
 * missed.  The hint is checked: ENOENT/EEXIST fall back to the other call. */
static int arm(int fd, unsigned idx, uint32_t gen, int parked_before)
{
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.u64 = (uint64_t)gen << 32 | idx;
    int op = parked_before ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(lot.epfd, op, fd, &ev) == 0)
        return 0;
    if (errno != (parked_before ? ENOENT : EEXIST))
        return -1;
    return epoll_ctl(lot.epfd, parked_before ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
}
#endif

/* Within its second, s goes after the slots that fell idle before it, so
 * that park_close_oldest closes the connection idle longest (handlers whose
 * park delay ran out together park in any order): from `last`, the last
 * slot expiring in s's second or before, a walk back over those that fell
 * idle after s, of at most PARK_REORDER steps.  A connection parked again
 * behind thousands of its second costs no more than that; it then sits a
 * little late in idle order, its expiry exact to the second all the same. */
static struct slot *after_in_second(struct slot *last, const struct slot *s)
{
    struct slot *after = last;
    unsigned steps = 0;
    for (; steps < PARK_REORDER && after != NULL && after->expires == s->expires &&
           after->conn.idle.seq > s->conn.idle.seq; steps++)
        after = after->prev;
    lot.steps += steps;
    return after;
}

/* The slot that s goes after in f (NULL: at the head), keeping the list in
 * expiry order: the last one expiring in s's second or before (and within
 * the second, in idle order, above).  Nearly always at the tail; else
 * through the table, not through the list. */
static struct slot *insert_point(struct fifo *f, const struct slot *s)
{
    time_t second = s->expires;
    if (f->tail == NULL || f->tail->expires < second)
        return f->tail;
    if (f->tail->expires == second)
        return after_in_second(f->tail, s);
    struct slot *after = last_expiring(f, second);
    if (after != NULL)
        return after_in_second(after, s);   /* the next after it expires later */
    if (f->head->expires > second)
        return NULL;
    /* none expiring in that second: the last of the nearest earlier one,
     * if the table spans back to the head and nothing it has lost lies
     * between that slot and s; every check fails safe into the walk below */
    time_t lowest = f->head->expires;
    if (second - lowest <= (time_t)lot.second_mask) {
        time_t before = busy_at_or_before(f, second - 1, lowest);
        after = before >= lowest ? last_expiring(f, before) : NULL;
        if (after != NULL && after->next != NULL && after->next->expires > second)
            return after;
    }
    /* the table lost some: walk back from the tail */
    after = f->tail;
    while (after != NULL && after->expires > second) {
        after = after->prev;
        lot.steps++;
    }
    return after_in_second(after, s);
}

static void fifo_insert(struct fifo *f, struct slot *s)
{
    struct slot *after = insert_point(f, s);
    s->prev = after;
    s->next = after != NULL ? after->next : f->head;
    if (s->next != NULL) s->next->prev = s; else f->tail = s;
    if (after != NULL) after->next = s; else f->head = s;
    if (s->next == NULL || s->next->expires != s->expires)
        set_last(f, s->expires, s);     /* the last of its second now */
}

#ifdef PARK_EPOLL
/* A refused arming (the kernel's epoll watch limit, fs.epoll.max_user_watches,
 * reached) is said at most once a minute: it repeats for every idle
 * connection while it lasts. */
static void arm_refused(int fd)
{
    static struct log_repeat refusals;
    unsigned long refused = log_repeat_failed(&refusals);
    if (refused > 0)
        log_errno(LOG_WARN, "park: epoll_ctl arming fd %d (%lu refused since this was last said): "
                  "idle connections hold their handler threads meanwhile", fd, refused);
}
#endif

/* The free list holds slots given back; a slot never used is taken from
 * the array's untouched end only when that list is empty, so a worker's
 * memory grows with the most connections it has parked at once, not with
 * --max-connections (calloc'd pages stay unmapped until written). */
static struct slot *free_slot(void)
{
    if (lot.free_list == NULL && lot.n_fresh < lot.n_slots) {
        struct slot *s = &lot.slots[lot.n_fresh++];
        s->conn.fd = -1;
        s->next = NULL;
        lot.free_list = s;
    }
    return lot.free_list;
}

int park_connection(const struct depot_conn *conn, unsigned timeout)
{
    struct fifo *f;
    if (lot.tid == NULL || free_slot() == NULL || (f = fifo_for(timeout)) == NULL)
        return -1;
    struct slot *s = lot.free_list;
#ifdef PARK_EPOLL
    if (arm(conn->fd, (unsigned)(s - lot.slots), s->gen + 1, conn->parked_before) < 0) {
        arm_refused(conn->fd);
        return -1;
    }
#endif
    lot.free_list = s->next;
    s->gen++;
    s->conn = *conn;
    s->timeout = timeout;
    /* the timeout counts from when the connection fell idle, not from the
     * park, a second later; rounded up to the second the lot works in */
    const struct timeval *since = &conn->idle.since;
    s->expires = since->tv_sec + (time_t)timeout + (since->tv_usec > 0);
    fifo_insert(f, s);
    lot.n_parked++;
    /* Whether the park thread must be woken is asked of its state, not
     * of n_parked == 1: other handlers may park before this check (any
     * yield here lets them), and a park that found n_parked at 2 would
     * leave it asleep with every parked connection unwatched. */
    if (!lot.wake_pending && (lot.asleep || s->expires < lot.sleep_until)) {
        lot.wake_pending = 1;
        pth_msgport_put(lot.wake_port, &lot.wake_msg);
    }
    depot_conn_idle(lot.depot);     /* may yield (pth_cond_notify): after the wake-up */
    return 0;
}

int park_close_oldest(void)
{
    struct slot *oldest = NULL;
    for (unsigned i = 0; i < PARK_LISTS; i++) {
        /* a list's slots share a timeout, so its head, expiring first,
         * fell idle first (to the second) */
        struct slot *h = lot.lists[i].head;
        if (h != NULL && (oldest == NULL || h->conn.idle.seq < oldest->conn.idle.seq))
            oldest = h;
    }
    if (oldest == NULL)
        return 0;
    expire(oldest);
    return 1;
}

void park_close_all(void)
{
    for (unsigned i = 0; i < PARK_LISTS; i++)
        while (lot.lists[i].head != NULL)
            expire(lot.lists[i].head);
}

unsigned long park_steps(void)
{
    return lot.steps;
}

unsigned park_count(void)
{
    return lot.n_parked;
}

/* check_msgport_push.c: the pth_msgport_push() patch: O(1) prepend, and a
 * waiting thread wakes on a push as on a put. */
#include <check.h>

#include "check_run.h"
#include <pth.h>
#include <stdlib.h>

struct num_msg { pth_message_t head; int value; };

START_TEST(push_goes_before_queued_messages)
{
    ck_assert(pth_init());
    pth_msgport_t mp = pth_msgport_create("order");
    struct num_msg m[4] = { { .value = 1 }, { .value = 2 }, { .value = 3 }, { .value = 9 } };
    ck_assert(pth_msgport_put(mp, &m[0].head));
    ck_assert(pth_msgport_put(mp, &m[1].head));
    ck_assert(pth_msgport_put(mp, &m[2].head));
    ck_assert(pth_msgport_push(mp, &m[3].head));
    ck_assert_int_eq(pth_msgport_pending(mp), 4);
    int expect[4] = { 9, 1, 2, 3 };
    for (int i = 0; i < 4; i++) {
        struct num_msg *got = (struct num_msg *)pth_msgport_get(mp);
        ck_assert_ptr_nonnull(got);
        ck_assert_int_eq(got->value, expect[i]);
    }
    ck_assert_ptr_null(pth_msgport_get(mp));
    pth_msgport_destroy(mp);
    pth_kill();
}
END_TEST

START_TEST(push_onto_empty_port_and_twice)
{
    ck_assert(pth_init());
    pth_msgport_t mp = pth_msgport_create(NULL);
    struct num_msg a = { .value = 1 }, b = { .value = 2 };
    ck_assert(pth_msgport_push(mp, &a.head));
    ck_assert(pth_msgport_push(mp, &b.head));   /* stack order: last pushed first */
    ck_assert_int_eq(((struct num_msg *)pth_msgport_get(mp))->value, 2);
    ck_assert_int_eq(((struct num_msg *)pth_msgport_get(mp))->value, 1);
    ck_assert(!pth_msgport_push(NULL, &a.head));
    pth_msgport_destroy(mp);
    pth_kill();
}
END_TEST

static pth_msgport_t wake_port;
static int woken_value;

static void *waiter(void *arg)
{
    (void)arg;
    pth_event_t ev = pth_event(PTH_EVENT_MSG, wake_port);
    pth_wait(ev);
    pth_event_free(ev, PTH_FREE_THIS);
    struct num_msg *m = (struct num_msg *)pth_msgport_get(wake_port);
    woken_value = m != NULL ? m->value : -1;
    return NULL;
}

START_TEST(push_wakes_a_waiter)
{
    ck_assert(pth_init());
    wake_port = pth_msgport_create(NULL);
    woken_value = 0;
    pth_t t = pth_spawn(PTH_ATTR_DEFAULT, waiter, NULL);
    ck_assert_ptr_nonnull(t);
    pth_yield(NULL);                 /* the waiter blocks on the empty port */
    ck_assert_int_eq(woken_value, 0);
    struct num_msg m = { .value = 42 };
    ck_assert(pth_msgport_push(wake_port, &m.head));
    ck_assert(pth_join(t, NULL));
    ck_assert_int_eq(woken_value, 42);
    pth_kill();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("msgport_push");
    TCase *tc = tcase_create("push");
    tcase_add_test(tc, push_goes_before_queued_messages);
    tcase_add_test(tc, push_onto_empty_port_and_twice);
    tcase_add_test(tc, push_wakes_a_waiter);
    suite_add_tcase(s, tc);
    return run_suite(s);
}

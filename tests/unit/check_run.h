/* check_run.h: runs one Check suite and turns its result into an exit status. */
#ifndef COWD_CHECK_RUN_H
#define COWD_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

static inline int run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif

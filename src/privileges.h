/* privileges.h: the workers' credentials: which user and group they run as
 * (decided once in the master), the optional chroot, and dropping root for
 * good in a worker after its sockets and logs are open; the logs given to
 * that user to reopen. */
#ifndef COWD_PRIVILEGES_H
#define COWD_PRIVILEGES_H

#include <sys/types.h>

#include "log.h"

struct privileges {
    int drop;                   /* started as root and not asked to stay root */
    uid_t uid;
    gid_t gid;
    const char *user, *group;   /* names, whole: the user's groups are looked up by it */
    gid_t *groups;              /* supplementary groups: user's in the group
                                 * database, with gid (as initgroups) */
    int n_groups;
    const char *chroot_dir;     /* NULL: none */
};

/* Master, at start-up, from cfg.user/group/chroot_dir.  Started as root
 * without --user the workers become nobody (and nogroup), said once in the
 * error log; --user root keeps root.  Not root: --user/--group must name the
 * current credentials and --chroot is refused.  0, or -1 (logged). */
int privileges_resolve(struct privileges *p);
/* Worker: chroot(2) and chdir("/") if asked.  0, or -1 (logged). */
int privileges_chroot(const struct privileges *p);
/* Worker: setgroups, setgid, setuid, then checks that root cannot be
 * regained.  0, or -1 (logged). */
int privileges_drop(const struct privileges *p);
/* Master, when the workers drop to p's user: gives them the error log (if
 * error_log) and the access log (if access_log), which they reopen by path
 * on SIGUSR1; a log that cannot be given is reported at `level`. */
void privileges_give_logs(const struct privileges *p, int error_log, int access_log,
                          enum log_level level);

#endif

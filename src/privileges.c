/* privileges.c: choosing and dropping the workers' credentials, and chroot. */
#include "privileges.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accesslog.h"
#include "config.h"
#include "log.h"

/* getpwnam and getgrnam return NULL both for a name that is not there and
 * for a lookup that failed (a directory service down, no memory): errno
 * tells them apart (0, ENOENT, ESRCH, EBADF or EPERM: not there, as
 * getpwnam(3) lists them).  Logs which, for flag's name. */
static void log_not_found(const char *flag, const char *name, const char *what, const char *hint)
{
    int e = errno;
    if (e == 0 || e == ENOENT || e == ESRCH || e == EBADF || e == EPERM)
        log_msg(LOG_ERROR, "%s %s: no such %s%s", flag, name, what, hint);
    else
        log_msg(LOG_ERROR, "%s %s: cannot look up the %s: %s%s", flag, name, what, strerror(e), hint);
}

static int lookup_group(const char *name, gid_t *gid)
{
    errno = 0;
    struct group *gr = getgrnam(name);
    if (gr == NULL)
        return -1;
    *gid = gr->gr_gid;
    return 0;
}

/* The user's groups as initgroups(3) would set them, read now: after
 * --chroot the group database is out of reach. */
static gid_t *supplementary;        /* the process's for good: p->groups */

static int lookup_supplementary(struct privileges *p)
{
    long max = sysconf(_SC_NGROUPS_MAX);
    int cap = max > 0 && max < 65536 ? (int)max + 1 : 65537;
    free(supplementary);
    supplementary = malloc((size_t)cap * sizeof *supplementary);
    if (supplementary == NULL) {
        log_errno(LOG_ERROR, "--user %s: no memory for its group list", p->user);
        return -1;
    }
    p->n_groups = cap;
    if (getgrouplist(p->user, p->gid, supplementary, &p->n_groups) < 0) {
        log_msg(LOG_ERROR, "--user %s: in more groups than the system allows (%d)", p->user, cap - 1);
        return -1;
    }
    gid_t *fitted = realloc(supplementary, (size_t)p->n_groups * sizeof *supplementary);
    if (fitted != NULL)
        supplementary = fitted;
    p->groups = supplementary;
    return 0;
}

int privileges_resolve(struct privileges *p)
{
    memset(p, 0, sizeof *p);
    p->chroot_dir = cfg.chroot_dir;
    if (geteuid() != 0) {
        if (cfg.chroot_dir != NULL) {
            log_msg(LOG_ERROR, "--chroot %s needs cowd to be started as root", cfg.chroot_dir);
            return -1;
        }
        if (cfg.user != NULL) {
            errno = 0;
            struct passwd *pw = getpwnam(cfg.user);
            if (pw == NULL) {
                log_not_found("--user", cfg.user, "user", "");
                return -1;
            }
            if (pw->pw_uid != geteuid()) {
                log_msg(LOG_ERROR, "--user %s needs cowd to be started as root", cfg.user);
                return -1;
            }
        }
        if (cfg.group != NULL) {
            gid_t g;
            if (lookup_group(cfg.group, &g) < 0) {
                log_not_found("--group", cfg.group, "group", "");
                return -1;
            }
            if (g != getegid()) {
                log_msg(LOG_ERROR, "--group %s needs cowd to be started as root", cfg.group);
                return -1;
            }
        }
        return 0;
    }

    const char *user = cfg.user != NULL ? cfg.user : "nobody";
    errno = 0;
    struct passwd *pw = getpwnam(user);
    if (pw == NULL) {
        log_not_found("--user", user, "user",
                      cfg.user == NULL ? " (started as root, cowd runs its workers as nobody; "
                                         "give --user)" : "");
        return -1;
    }
    p->uid = pw->pw_uid;
    p->gid = pw->pw_gid;
    p->user = user;
    const char *group = cfg.group;
    if (group == NULL && cfg.user == NULL) {
        /* like nginx: nobody's group is nogroup (Debian) or nobody (BSD, Red Hat) */
        gid_t g;
        if (lookup_group("nogroup", &g) == 0)
            group = "nogroup";
        else if (lookup_group("nobody", &g) == 0)
            group = "nobody";
    }
    if (group != NULL) {
        if (lookup_group(group, &p->gid) < 0) {
            log_not_found("--group", group, "group", "");
            return -1;
        }
        p->group = group;
    } else {
        /* getgrgid's name is overwritten by the next lookup: a copy */
        static char *primary;
        struct group *gr = getgrgid(p->gid);
        free(primary);
        primary = gr != NULL ? strdup(gr->gr_name) : NULL;
        p->group = primary != NULL ? primary : "?";
    }
    if (p->uid == 0 && cfg.user != NULL) {
        log_msg(LOG_WARN, "workers keep running as root (--user %s)", cfg.user);
        p->drop = cfg.group != NULL;    /* --user root --group G: only the group changes */
        return p->drop ? lookup_supplementary(p) : 0;
    }
    p->drop = 1;
    if (lookup_supplementary(p) < 0)
        return -1;
    if (cfg.user == NULL)
        log_msg(LOG_INFO, "started as root without --user: workers run as %s:%s",
                p->user, p->group);
    return 0;
}

int privileges_chroot(const struct privileges *p)
{
    if (p->chroot_dir == NULL)
        return 0;
    if (chroot(p->chroot_dir) < 0) {
        log_errno(LOG_ERROR, "chroot %s", p->chroot_dir);
        return -1;
    }
    if (chdir("/") < 0) {
        log_errno(LOG_ERROR, "chdir / inside the chroot %s", p->chroot_dir);
        return -1;
    }
    return 0;
}

int privileges_drop(const struct privileges *p)
{
    if (!p->drop)
        return 0;
    if (setgroups((size_t)p->n_groups, p->groups) < 0) {
        log_errno(LOG_ERROR, "setgroups(%s's %d groups)", p->user, p->n_groups);
        return -1;
    }
    if (setgid(p->gid) < 0) {
        log_errno(LOG_ERROR, "setgid(%s)", p->group);
        return -1;
    }
    if (setuid(p->uid) < 0) {
        log_errno(LOG_ERROR, "setuid(%s)", p->user);
        return -1;
    }
    if (p->uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
        log_msg(LOG_ERROR, "privileges: root could be regained after setuid(%s)", p->user);
        return -1;
    }
    if (p->uid != 0 && getgid() != 0 && (setgid(0) == 0 || setegid(0) == 0)) {
        log_msg(LOG_ERROR, "privileges: group root could be regained after setgid(%s)", p->group);
        return -1;
    }
    return 0;
}

void privileges_give_logs(const struct privileges *p, int error_log, int access_log,
                          enum log_level level)
{
    if (!p->drop)
        return;
    if (error_log && cfg.error_log != NULL && log_give(p->uid) < 0)
        log_errno(level, "cannot give error log %s to %s (" LOG_GIVE_RULE ")",
                  cfg.error_log, p->user);
    if (access_log && accesslog_chown(p->uid) < 0)
        log_errno(level, "cannot give access log %s to %s (" LOG_GIVE_RULE ")",
                  cfg.access_log, p->user);
}

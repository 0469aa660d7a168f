/*
 * Who may share a fabric. Its files (/dev/shm/softverbs.*) belong to the
 * user who creates them, mode 0600, unless every process opts in with
 * SOFTVERBS_SHARE=group: then they are mode 0660 and all in one group, the
 * fabric file's, whose members may join. Every file is checked (type,
 * owner, group, mode) before it is mapped, and a peer process before data
 * is copied into it: it must belong to the user owning its segment.
 *
 * The fabric's tables are trusted by everybody who maps them, so anyone
 * who can write them can redirect another member's writes and forge its
 * completions: the check keeps other users out, it does not make members
 * safe from each other (src/softverbs/README.md, "Who may join").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_fabric.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SV_ACCESS_MODE_USER  0600
#define SV_ACCESS_MODE_GROUP 0660

static int   sv_access_group = -1;  /* SOFTVERBS_SHARE=group; -1: unread */
static gid_t sv_access_gid;         /* the fabric's group (group sharing) */

int sv_access_init(void)
{
    const char *s = getenv("SOFTVERBS_SHARE");

    if ((s == NULL) || (*s == '\0') || !strcmp(s, "user")) {
        sv_access_group = 0;
    } else if (!strcmp(s, "group")) {
        sv_access_group = 1;
    } else {
        sv_log("SOFTVERBS_SHARE='%s' is not 'user' or 'group'", s);
        return -EINVAL;
    }
    sv_access_gid = getegid();
    return 0;
}

mode_t sv_access_mode(void)
{
    return (sv_access_group == 1) ? SV_ACCESS_MODE_GROUP :
                                    SV_ACCESS_MODE_USER;
}

static int sv_access_in_group(gid_t gid)
{
    gid_t groups[256];
    int i, n;

    if (gid == getegid()) {
        return 1;
    }
    n = getgroups(sizeof(groups) / sizeof(groups[0]), groups);
    for (i = 0; i < n; ++i) {
        if (groups[i] == gid) {
            return 1;
        }
    }
    return 0;
}

/* Whose file `st` is: why this process may not use it, or NULL. */
static const char *sv_access_owner_refusal(const struct stat *st, int what)
{
    if (!S_ISREG(st->st_mode)) {
        return "not a regular file";
    }
    if (st->st_uid == geteuid()) {
        return NULL;
    }
    if (sv_access_group != 1) {
        return "it belongs to another user";
    }
    if (what == SV_ACCESS_SEGMENT) {
        return (st->st_gid == sv_access_gid) ? NULL :
               "its group is not the fabric's";
    }
    return sv_access_in_group(st->st_gid) ? NULL :
           "this user is not in its group";
}

/* Who else may write file `st`: why that is not what this process agreed
 * to (SOFTVERBS_SHARE), or NULL. */
static const char *sv_access_mode_refusal(const struct stat *st, int what)
{
    if (st->st_mode & 0007) {
        return "every user may open it (mode has 'other' bits)";
    }
    if (sv_access_group != 1) {
        return (st->st_mode & 0070) ?
               "it is shared with a group: join with SOFTVERBS_SHARE=group" :
               NULL;
    }
    if ((st->st_mode & 0770) != SV_ACCESS_MODE_GROUP) {
        return "it is not shared with a group (mode is not 0660): join "
               "without SOFTVERBS_SHARE=group";
    }
    return ((what == SV_ACCESS_SEGMENT) && (st->st_gid != sv_access_gid)) ?
           "its group is not the fabric's" : NULL;
}

int sv_access_check(int fd, const char *path, int what, uid_t *owner)
{
    const char *why;
    struct stat st;

    if (fstat(fd, &st) != 0) {
        return -errno;
    }
    why = sv_access_owner_refusal(&st, what);
    if ((why == NULL) && (what != SV_ACCESS_FABRIC_OWNER)) {
        why = sv_access_mode_refusal(&st, what);
    }
    if (why != NULL) {
        sv_log("refusing %s (owner uid %u, group %u, mode %04o; this "
               "process: uid %u, SOFTVERBS_SHARE=%s): %s", path,
               (unsigned)st.st_uid, (unsigned)st.st_gid,
               (unsigned)(st.st_mode & 07777), (unsigned)geteuid(),
               (sv_access_group == 1) ? "group" : "user", why);
        return -EACCES;
    }
    if ((what == SV_ACCESS_FABRIC) && (sv_access_group == 1)) {
        sv_access_gid = st.st_gid;
    }
    if (owner != NULL) {
        *owner = st.st_uid;
    }
    return 0;
}

int sv_access_adopt(int fd)
{
    if ((sv_access_group == 1) && (fchown(fd, (uid_t)-1, sv_access_gid) != 0)) {
        return -errno;
    }
    /* whatever the umask says */
    return (fchmod(fd, sv_access_mode()) == 0) ? 0 : -errno;
}

int sv_access_pid_ok(pid_t pid, uid_t owner)
{
    char path[32];
    struct stat st;

    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    return (pid > 0) && (stat(path, &st) == 0) && (st.st_uid == owner);
}

int sv_fabric_cred_ok(uid_t uid, gid_t gid)
{
    return (uid == geteuid()) || (uid == 0) ||
           ((sv_access_group == 1) && (gid == sv_access_gid));
}

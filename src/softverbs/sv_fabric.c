/*
 * The shared-memory fabric: joining it, allocating ports (reclaiming those
 * of dead processes), mapping peers' segments and telling whether a peer is
 * still alive.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_fabric.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stddef.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

sv_fabric_hdr_t *sv_fabric;
char sv_fabric_name[80];
int sv_debug;

static pthread_mutex_t sv_peer_lock = PTHREAD_MUTEX_INITIALIZER;
static sv_peer_t sv_peers[SV_MODEL_MAX_PORTS];


void sv_log(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "softverbs[%d]: ", getpid());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void sv_fabric_seg_name(char *buf, size_t len, unsigned port, uint32_t gen)
{
    snprintf(buf, len, "/softverbs.%s.%u.%u", sv_fabric_name, port, gen);
}

/* Start time (field 22 of /proc/PID/stat) and state letter; 0 if gone. */
static uint64_t sv_fabric_pid_stat(pid_t pid, char *state)
{
    char path[64], buf[1024], *p;
    unsigned long long st = 0;
    ssize_t n;
    int fd, i;

    *state = '?';
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    /* comm may hold spaces and parentheses: fields start after the last ')' */
    p = strrchr(buf, ')');
    if ((p == NULL) || (p[1] != ' ')) {
        return 0;
    }
    *state = p[2];
    /* field 22 (starttime) is the 20th after the ')' */
    for (i = 0; (i < 20) && (p != NULL); ++i) {
        p = strchr(p + 1, ' ');
    }
    if ((p == NULL) || (sscanf(p + 1, "%llu", &st) != 1)) {
        return 0;
    }
    return st;
}

uint64_t sv_fabric_pid_starttime(pid_t pid)
{
    char state;

    return sv_fabric_pid_stat(pid, &state);
}

int sv_fabric_pid_alive(pid_t pid, uint64_t starttime)
{
    uint64_t st;
    char state;

    if (pid <= 0) {
        return 0;
    }
    if ((kill(pid, 0) != 0) && (errno != EPERM)) {
        return 0;
    }
    st = sv_fabric_pid_stat(pid, &state);
    if ((state == 'Z') || (state == 'X')) {
        return 0;        /* killed, not reaped yet: it answers nothing */
    }
    /* a reused pid has another start time */
    return (starttime == 0) || (st == 0) || (st == starttime);
}

static int sv_fabric_valid_name(const char *s)
{
    size_t i, n = strlen(s);

    if ((n == 0) || (n > 48)) {
        return 0;
    }
    for (i = 0; i < n; ++i) {
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-')) {
            return 0;
        }
    }
    return 1;
}

/*
 * The fabric lock: flock() on the fabric file (the kernel drops it with its
 * holder, and nothing of it lives in memory other processes can write),
 * behind a process-local mutex (flock does not exclude threads sharing the
 * open file). Bounded, so a holder that hangs can never hang us.
 */
static pthread_mutex_t sv_fabric_plock = PTHREAD_MUTEX_INITIALIZER;
static int sv_fabric_fd = -1;

#define SV_FABRIC_LOCK_MIN_US 50
#define SV_FABRIC_LOCK_MAX_US 5000

static int sv_fabric_flock(int fd)
{
    uint64_t end = sv_now_ns() + SV_FABRIC_LOCK_S * 1000000000ull;
    useconds_t wait = SV_FABRIC_LOCK_MIN_US;

    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if ((errno != EWOULDBLOCK) && (errno != EINTR)) {
            return errno;
        }
        if (sv_now_ns() > end) {
            return ETIMEDOUT;
        }
        usleep(wait);
        wait = (wait * 2 > SV_FABRIC_LOCK_MAX_US) ? SV_FABRIC_LOCK_MAX_US :
                                                     wait * 2;
    }
    return 0;
}

static int sv_fabric_lock_fd(int fd)
{
    int ret;

    pthread_mutex_lock(&sv_fabric_plock);
    ret = sv_fabric_flock(fd);
    if (ret != 0) {
        pthread_mutex_unlock(&sv_fabric_plock);
        sv_log("fabric '%s': cannot take its lock: %s", sv_fabric_name,
               strerror(ret));
    }
    return ret;
}

static void sv_fabric_unlock_fd(int fd)
{
    flock(fd, LOCK_UN);
    pthread_mutex_unlock(&sv_fabric_plock);
}

static int sv_fabric_lock(void)
{
    return sv_fabric_lock_fd(sv_fabric_fd);
}

static void sv_fabric_unlock(void)
{
    sv_fabric_unlock_fd(sv_fabric_fd);
}

/* Remove what a dead owner left: its segment (the model resets the links). */
static void sv_fabric_port_reclaim(sv_fabric_hdr_t *f, unsigned i)
{
    sv_port_entry_t *e = &f->port[i];
    char name[128];

    sv_fabric_seg_name(name, sizeof(name), i, e->gen);
    shm_unlink(name);
    sv_debug_log("reclaimed port %u of dead pid %d", i, e->pid);
    e->pid = 0;
    SV_STORE(&e->state, SV_PORT_FREE);
}

/* Read-only: does a live process hold a port? (any layout version) */
static int sv_fabric_ports_alive(const sv_fabric_hdr_t *f)
{
    unsigned i;

    for (i = 0; i < SV_MODEL_MAX_PORTS; ++i) {
        if ((f->port[i].state == SV_PORT_USED) &&
            sv_fabric_pid_alive(f->port[i].pid, f->port[i].starttime)) {
            return 1;
        }
    }
    return 0;
}

/* Under the lock: reclaim ports and members of dead processes; returns how
 * many ports and members other live processes hold. */
static unsigned sv_fabric_sweep(sv_fabric_hdr_t *f)
{
    pid_t self = getpid();
    unsigned i, alive = 0;
    sv_member_t *m;

    for (i = 0; i < SV_MODEL_MAX_PORTS; ++i) {
        if ((f->port[i].state != SV_PORT_USED) || (f->port[i].pid == self)) {
            continue;
        }
        if (sv_fabric_pid_alive(f->port[i].pid, f->port[i].starttime)) {
            ++alive;
        } else {
            sv_fabric_port_reclaim(f, i);
        }
    }
    for (i = 0; i < SV_MAX_MEMBERS; ++i) {
        m = &f->member[i];
        if ((m->pid == 0) || (m->pid == self)) {
            continue;
        }
        if (sv_fabric_pid_alive(m->pid, m->starttime)) {
            ++alive;
        } else {
            memset(m, 0, sizeof(*m));
        }
    }
    return alive;
}

/*
 * Under the lock: unlink files of this fabric that no port entry accounts
 * for, left by processes that died before anyone reclaimed them (or by an
 * older version), and the temporaries of creators that died.
 */
static void sv_fabric_scrub(sv_fabric_hdr_t *f)
{
    char prefix[96], rest[16], name[300];
    unsigned port, gen;
    struct dirent *d;
    size_t plen;
    DIR *dir;
    int pid;

    plen = snprintf(prefix, sizeof(prefix), "softverbs.%s.", sv_fabric_name);
    dir  = opendir("/dev/shm");
    if (dir == NULL) {
        return;
    }
    while ((d = readdir(dir)) != NULL) {
        if (strncmp(d->d_name, prefix, plen) != 0) {
            continue;
        }
        if (sscanf(d->d_name + plen, "%u.%u%15s", &port, &gen, rest) == 2) {
            if ((port < SV_MODEL_MAX_PORTS) &&
                (f->port[port].state == SV_PORT_USED) &&
                (f->port[port].gen == gen)) {
                continue;
            }
        } else if ((sscanf(d->d_name + plen, "new.%d%15s", &pid, rest) != 1) ||
                   sv_fabric_pid_alive(pid, 0)) {
            continue;
        }
        snprintf(name, sizeof(name), "/%s", d->d_name);
        shm_unlink(name);
        sv_debug_log("removed orphan %s", name);
    }
    closedir(dir);
}

/* Under the lock (or before publishing): fresh identity and model from this
 * process's environment, no members. Port generations keep counting so that
 * segment names are never reused. */
static int sv_fabric_setup(sv_fabric_hdr_t *f)
{
    int ret = sv_model_attach(f->model, 1);

    if (ret < 0) {
        return ret;
    }
    if (getrandom(&f->id, sizeof(f->id), 0) != sizeof(f->id)) {
        f->id = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ sv_now_ns();
    }
    memset(f->member, 0, sizeof(f->member));
    f->size = sizeof(*f);
    f->abi  = SV_ABI_VERSION;
    f->gone = 0;
    return 0;
}

static int sv_fabric_member = -1;

/* Under the lock: count this process in, so nobody takes the fabric for
 * abandoned before it opens a device. A full table only loses that. */
static void sv_fabric_member_add(sv_fabric_hdr_t *f)
{
    unsigned i;

    for (i = 0; i < SV_MAX_MEMBERS; ++i) {
        if (f->member[i].pid == 0) {
            f->member[i].starttime = sv_fabric_pid_starttime(getpid());
            f->member[i].pid       = getpid();
            sv_fabric_member       = i;
            return;
        }
    }
}

static void sv_fabric_shm_path(char *buf, size_t len, const char *shm)
{
    snprintf(buf, len, "/dev/shm%s", shm);
}

/*
 * Build a fabric under a private name and publish it at `shm`: link() when
 * there is nothing there (EEXIST: someone was faster, join theirs), rename()
 * over a corrupt file the caller holds flock() on.
 */
static int sv_fabric_create(const char *shm, int replace)
{
    char tmp[128], tpath[160], path[160];
    sv_fabric_hdr_t *f;
    int fd, ret;

    snprintf(tmp, sizeof(tmp), "%s.new.%d", shm, (int)getpid());
    sv_fabric_shm_path(tpath, sizeof(tpath), tmp);
    sv_fabric_shm_path(path, sizeof(path), shm);
    shm_unlink(tmp);    /* a leftover of an earlier process with our pid */
    fd = shm_open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
                  sv_access_mode());
    if (fd < 0) {
        return -errno;
    }
    ret = sv_access_adopt(fd);
    if ((ret == 0) && (ftruncate(fd, sizeof(*f)) != 0)) {
        ret = -errno;
    }
    if (ret != 0) {
        goto err_close;
    }
    f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (f == MAP_FAILED) {
        ret = -errno;
        goto err_close;
    }

    ret = sv_fabric_setup(f);
    if (ret < 0) {
        goto err_unmap;
    }
    sv_fabric_member_add(f);
    f->magic = SV_FABRIC_MAGIC;
    f->ready = 1;

    /* locked before anyone can see it: our scrub comes first */
    if (sv_fabric_lock_fd(fd) != 0) {
        ret = -EIO;
        sv_fabric_member = -1;
        goto err_unmap;
    }
    ret = replace ? rename(tpath, path) : link(tpath, path);
    if (ret != 0) {
        ret = (errno == EEXIST) ? -EAGAIN : -errno;
        sv_fabric_member = -1;
        sv_fabric_unlock_fd(fd);
        goto err_unmap;
    }
    if (!replace) {
        shm_unlink(tmp);
    }
    sv_fabric_scrub(f);
    sv_fabric_unlock_fd(fd);
    sv_fabric    = f;
    sv_fabric_fd = fd;
    return 0;

err_unmap:
    munmap(f, sizeof(*f));
err_close:
    close(fd);
    shm_unlink(tmp);
    return ret;
}

/*
 * Not a fabric of ours (truncated, foreign, garbage): replace it, once, even
 * if several processes find it at the same time. flock() on the bad file
 * serializes them and dies with its holder; whoever comes second finds
 * another file at the name and joins it.
 */
static int sv_fabric_replace(int fd, const char *shm, const char *why)
{
    struct stat mine, now;
    char path[160];
    int ret;

    sv_fabric_shm_path(path, sizeof(path), shm);
    ret = sv_fabric_flock(fd);
    if (ret != 0) {
        close(fd);
        sv_log("%s: cannot lock it to replace it: %s", path, strerror(ret));
        return -ret;
    }
    if ((fstat(fd, &mine) != 0) || (stat(path, &now) != 0) ||
        (mine.st_ino != now.st_ino) || (mine.st_dev != now.st_dev)) {
        close(fd);
        return -EAGAIN;
    }
    sv_log("%s is not a usable fabric (%s): replacing it", path, why);
    ret = sv_fabric_create(shm, 1);
    close(fd);
    return ret;
}

/* 0: joined or created, -EAGAIN: retry, other: fatal */
static int sv_fabric_join(const char *shm)
{
    sv_fabric_hdr_t *f;
    const char *why;
    char path[160];
    struct stat st;
    size_t len;
    int fd, ret;

    fd = shm_open(shm, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        return (errno == ENOENT) ? sv_fabric_create(shm, 0) : -errno;
    }
    /* whose it is comes before what it holds: another user's file is
     * neither joined nor replaced */
    sv_fabric_shm_path(path, sizeof(path), shm);
    ret = sv_access_check(fd, path, SV_ACCESS_FABRIC_OWNER, NULL);
    if ((ret == 0) && (fstat(fd, &st) != 0)) {
        ret = -errno;
    }
    if (ret != 0) {
        close(fd);
        return ret;
    }
    /* the port table sits at the same place in every version */
    len = ((size_t)st.st_size < sizeof(*f)) ? (size_t)st.st_size : sizeof(*f);
    if (len < offsetof(sv_fabric_hdr_t, member)) {
        return sv_fabric_replace(fd, shm, "truncated");
    }
    f = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (f == MAP_FAILED) {
        ret = -errno;
        close(fd);
        return ret;
    }
    why = (f->magic != SV_FABRIC_MAGIC) ? "bad magic" :
          ((f->abi != SV_ABI_VERSION) || (f->size != sizeof(*f)) ||
           ((size_t)st.st_size != sizeof(*f))) ? "other version" :
          !f->ready ? "not initialized" : NULL;
    if (why != NULL) {
        ret = (f->magic == SV_FABRIC_MAGIC) && sv_fabric_ports_alive(f);
        munmap(f, len);
        if (ret) {
            close(fd);
            sv_log("fabric '%s' in use by a different softverbs version",
                   sv_fabric_name);
            return -EPROTO;
        }
        return sv_fabric_replace(fd, shm, why);
    }
    /* a fabric of ours that others could have written is not joined */
    ret = sv_access_check(fd, path, SV_ACCESS_FABRIC, NULL);
    if (ret != 0) {
        munmap(f, sizeof(*f));
        close(fd);
        return ret;
    }
    if (sv_fabric_lock_fd(fd) != 0) {
        munmap(f, sizeof(*f));
        close(fd);
        return -EIO;
    }
    if (f->gone) {
        /* its last user left and unlinked it: look again */
        sv_fabric_unlock_fd(fd);
        munmap(f, sizeof(*f));
        close(fd);
        return -EAGAIN;
    }
    if (sv_fabric_sweep(f) == 0) {
        /* abandoned: start over with our configuration and clock */
        sv_debug_log("fabric '%s' has nobody alive: re-created",
                     sv_fabric_name);
        sv_fabric_scrub(f);
        ret = sv_fabric_setup(f);
    } else {
        ret = sv_model_attach(f->model, 0);
    }
    if (ret == 0) {
        sv_fabric_member_add(f);
    }
    sv_fabric_unlock_fd(fd);
    if (ret < 0) {
        munmap(f, sizeof(*f));
        close(fd);
        return ret;
    }
    sv_fabric    = f;
    sv_fabric_fd = fd;
    return 0;
}

static int sv_fabric_init_once_ret;
static pthread_once_t sv_fabric_once = PTHREAD_ONCE_INIT;

static void sv_fabric_init_once(void)
{
    const char *name = getenv("SOFTVERBS_FABRIC");
    char shm[128];
    int i, ret = -EAGAIN;

    sv_debug = (getenv("SOFTVERBS_DEBUG") != NULL) &&
               (atoi(getenv("SOFTVERBS_DEBUG")) > 0);
    if ((name == NULL) || (*name == '\0')) {
        name = SV_DEF_FABRIC;
    }
    if (!sv_fabric_valid_name(name)) {
        sv_log("invalid SOFTVERBS_FABRIC '%s' (1-48 of [A-Za-z0-9_-])", name);
        sv_fabric_init_once_ret = -EINVAL;
        return;
    }
    snprintf(sv_fabric_name, sizeof(sv_fabric_name), "%s", name);
    snprintf(shm, sizeof(shm), "/softverbs.%s", name);
    sv_fabric_init_once_ret = sv_access_init();
    if (sv_fabric_init_once_ret != 0) {
        return;
    }

    for (i = 0; (i < 100) && (ret == -EAGAIN); ++i) {
        ret = sv_fabric_join(shm);
    }
    if (ret < 0) {
        sv_log("cannot join fabric '%s': %s", name, strerror(-ret));
    }
    sv_fabric_init_once_ret = ret;
}

int sv_fabric_init(void)
{
    pthread_once(&sv_fabric_once, sv_fabric_init_once);
    return sv_fabric_init_once_ret;
}


static uint64_t sv_seg_size(void)
{
    const char *s = getenv("SOFTVERBS_SEG_MB");
    long mb = (s != NULL) ? atol(s) : 0;

    if ((mb < 16) || (mb > 65536)) {
        mb = SV_DEF_SEG_MB;
    }
    return (uint64_t)mb << 20;
}

int sv_fabric_port_alloc(unsigned dev, unsigned *port_p, uint32_t *gen_p,
                         sv_seg_t **seg_p, int *fd_p)
{
    uint64_t size = sv_seg_size(), st = sv_fabric_pid_starttime(getpid());
    sv_port_entry_t *e = NULL;
    sv_mr_shadow_t *shadow;
    char name[128];
    sv_seg_t *seg;
    uint32_t gen;
    unsigned i;
    int fd, ret;

    if (sv_fabric_lock() != 0) {
        return -EIO;
    }
    /* sweep every port of a dead process: its segment is memory */
    (void)sv_fabric_sweep(sv_fabric);
    for (i = 0; i < SV_MODEL_MAX_PORTS; ++i) {
        e = &sv_fabric->port[i];
        if (e->state == SV_PORT_FREE) {
            break;
        }
    }
    if (i == SV_MODEL_MAX_PORTS) {
        sv_fabric_unlock();
        sv_log("fabric '%s' has no free port (%d in use)", sv_fabric_name,
               SV_MODEL_MAX_PORTS);
        return -ENOSPC;
    }
    gen          = e->gen + 1;
    e->starttime = st;
    e->pid       = getpid();
    e->gen       = gen;
    e->state     = SV_PORT_USED;  /* claimed: nobody else takes it */
    sv_fabric_unlock();

    sv_model_port_reset(i);
    memset(&e->stats, 0, sizeof(e->stats));
    e->dev       = dev;
    e->seg_size  = size;
    memset(e->comm, 0, sizeof(e->comm));
    (void)!readlink("/proc/self/exe", name, sizeof(name));
    {
        int fdc = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
        if (fdc >= 0) {
            ssize_t n = read(fdc, e->comm, sizeof(e->comm) - 1);
            if ((n > 0) && (e->comm[n - 1] == '\n')) {
                e->comm[n - 1] = '\0';
            }
            close(fdc);
        }
    }

    sv_fabric_seg_name(name, sizeof(name), i, gen);
    shm_unlink(name);
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
                  sv_access_mode());
    if (fd < 0) {
        ret = -errno;
        goto err_free;
    }
    ret = sv_access_adopt(fd);
    if ((ret == 0) && (ftruncate(fd, size) != 0)) {
        ret = -errno;
    }
    if (ret != 0) {
        goto err_close;
    }
    ret = posix_fallocate(fd, 0, SV_SEG_HEAP_START);
    if (ret != 0) {
        ret = -ret;
        goto err_close;
    }
    seg = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (seg == MAP_FAILED) {
        ret = -errno;
        goto err_close;
    }
    seg->port     = i;
    seg->gen      = gen;
    seg->pid      = getpid();
    seg->size     = size;
    seg->magic    = SV_SEG_MAGIC;
    ret = sv_heap_create(i, fd, seg, size);
    if (ret < 0) {
        munmap(seg, size);
        goto err_close;
    }

    shadow = calloc(SV_MAX_MR, sizeof(*shadow));
    if (shadow == NULL) {
        sv_heap_destroy(i);
        munmap(seg, size);
        ret = -ENOMEM;
        goto err_close;
    }
    pthread_mutex_lock(&sv_peer_lock);
    sv_peers[i] = (sv_peer_t){ .seg = seg, .size = size, .gen = gen,
                               .pid = getpid(), .self = 1,
                               .shadow = shadow };
    pthread_mutex_unlock(&sv_peer_lock);

    *port_p = i;
    *gen_p  = gen;
    *seg_p  = seg;
    *fd_p   = fd;
    return 0;

err_close:
    close(fd);
    shm_unlink(name);
err_free:
    if (sv_fabric_lock() == 0) {
        if ((e->gen == gen) && (e->pid == getpid())) {
            e->pid = 0;
            SV_STORE(&e->state, SV_PORT_FREE);
        }
        sv_fabric_unlock();
    }
    sv_log("cannot create port segment %s: %s", name, strerror(-ret));
    return ret;
}

void sv_fabric_port_free(unsigned port, uint32_t gen, sv_seg_t *seg, int fd)
{
    sv_port_entry_t *e = &sv_fabric->port[port];
    uint64_t size = sv_peers[port].size;   /* ours: not the shared copy */
    char name[128];

    sv_fabric_seg_name(name, sizeof(name), port, gen);
    shm_unlink(name);
    seg->magic = 0;
    pthread_mutex_lock(&sv_peer_lock);
    free(sv_peers[port].shadow);
    memset(&sv_peers[port], 0, sizeof(sv_peers[port]));
    pthread_mutex_unlock(&sv_peer_lock);
    sv_heap_destroy(port);
    munmap(seg, size);
    close(fd);
    if (sv_fabric_lock() == 0) {
        if ((e->gen == gen) && (e->pid == getpid())) {
            e->pid = 0;
            SV_STORE(&e->state, SV_PORT_FREE);
        }
        sv_fabric_unlock();
    }
}

/* Whose segment this is may only be decided once, before mapping it: the
 * file's owner, group and mode, and whether the pid the port table names
 * for it is a process of that owner (copies go into that pid). */
static int sv_fabric_peer_check(int fd, const char *name, unsigned port,
                                pid_t pid)
{
    static uint8_t warned[SV_MODEL_MAX_PORTS];
    char path[160];
    uid_t owner;

    sv_fabric_shm_path(path, sizeof(path), name);
    if (sv_access_check(fd, path, SV_ACCESS_SEGMENT, &owner) != 0) {
        return -1;
    }
    if (!sv_access_pid_ok(pid, owner)) {
        if (!warned[port]) {
            warned[port] = 1;
            sv_log("fabric port %u: pid %d is not a process of uid %u, "
                   "who owns %s: port unreachable", port, (int)pid,
                   (unsigned)owner, path);
        }
        return -1;
    }
    return 0;
}

static sv_peer_t *sv_fabric_peer_map(unsigned port, uint32_t gen)
{
    sv_port_entry_t *e = &sv_fabric->port[port];
    sv_peer_t *p = &sv_peers[port];
    uint64_t starttime;
    char name[128];
    struct stat st;
    sv_seg_t *seg;
    pid_t pid;
    int fd;

    pthread_mutex_lock(&sv_peer_lock);
    if ((p->seg != NULL) && (p->gen == gen)) {
        goto out;
    }
    /* an older mapping is left in place: other threads may still use it */
    sv_fabric_seg_name(name, sizeof(name), port, gen);
    fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        p = NULL;
        goto out;
    }
    pid       = SV_LOAD(&e->pid);
    starttime = SV_LOAD(&e->starttime);
    if ((fstat(fd, &st) != 0) || ((uint64_t)st.st_size < sizeof(sv_seg_t)) ||
        (sv_fabric_peer_check(fd, name, port, pid) != 0)) {
        close(fd);
        p = NULL;
        goto out;
    }
    seg = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (seg == MAP_FAILED) {
        p = NULL;
        goto out;
    }
    p->seg        = seg;
    p->size       = st.st_size;
    p->gen        = gen;
    p->pid        = pid;
    p->starttime  = starttime;
    p->self       = 0;
    p->dead       = 0;
    p->checked_ns = 0;
out:
    pthread_mutex_unlock(&sv_peer_lock);
    return p;
}

/* The port's current incarnation, mapped; NULL when free or unreachable. */
sv_peer_t *sv_fabric_peer(unsigned port)
{
    sv_port_entry_t *e;
    sv_peer_t *p;
    uint32_t gen;

    if (port >= SV_MODEL_MAX_PORTS) {
        return NULL;
    }
    p = &sv_peers[port];
    if (p->self && (p->seg != NULL)) {
        return p;    /* ours, even after the exit handler released it */
    }
    e = &sv_fabric->port[port];
    if (SV_LOAD(&e->state) != SV_PORT_USED) {
        return NULL;
    }
    gen = SV_LOAD(&e->gen);
    if ((p->seg != NULL) && (p->gen == gen)) {
        return p;
    }
    return sv_fabric_peer_map(port, gen);
}

int sv_fabric_port_alive(unsigned port, uint32_t gen, uint32_t gen_mask)
{
    const sv_port_entry_t *e;

    if (port >= SV_MODEL_MAX_PORTS) {
        return 0;
    }
    if (sv_peers[port].self && (sv_peers[port].seg != NULL) &&
        ((sv_peers[port].gen & gen_mask) == gen)) {
        return 1;
    }
    e = &sv_fabric->port[port];
    return (SV_LOAD(&e->state) == SV_PORT_USED) &&
           ((SV_LOAD(&e->gen) & gen_mask) == gen) &&
           sv_fabric_pid_alive(SV_LOAD(&e->pid), SV_LOAD(&e->starttime));
}

void sv_fabric_peer_dead(sv_peer_t *peer)
{
    peer->dead = 1;
}

int sv_fabric_peer_alive(sv_peer_t *p)
{
    uint64_t now;
    unsigned port;

    if (p->self) {
        return 1;
    }
    if (p->dead) {
        return 0;
    }
    now = sv_now_ns();
    if (now - p->checked_ns < SV_PEER_CHECK_NS) {
        return 1;
    }
    p->checked_ns = now;
    port = p - sv_peers;
    if ((SV_LOAD(&sv_fabric->port[port].gen) != p->gen) ||
        (SV_LOAD(&p->seg->magic) != SV_SEG_MAGIC) ||
        !sv_fabric_pid_alive(p->pid, p->starttime)) {
        p->dead = 1;
        return 0;
    }
    return 1;
}

/*
 * At exit: unlink our port segments (peers keep their mappings; a peer that
 * maps one later finds nothing and takes the port for gone), leave, and
 * unlink the fabric if nobody alive is left in it. Mappings stay: other
 * threads may still run until the process is gone.
 */
static void sv_fabric_leave(void)
{
    sv_fabric_hdr_t *f = sv_fabric;
    pid_t self = getpid();
    unsigned i, own = 0;
    char name[128];
    int member;

    if (f == NULL) {
        return;
    }
    member = (sv_fabric_member >= 0) &&
             (f->member[sv_fabric_member].pid == self);
    for (i = 0; i < SV_MODEL_MAX_PORTS; ++i) {
        own += sv_peers[i].self && (sv_peers[i].seg != NULL);
    }
    if ((!member && !own) || (sv_fabric_lock() != 0)) {
        return;    /* e.g. softverbs-stat, or a fork that opened nothing */
    }
    /* our ports as we know them, not as the shared table says */
    for (i = 0; i < SV_MODEL_MAX_PORTS; ++i) {
        if (!sv_peers[i].self || (sv_peers[i].seg == NULL)) {
            continue;
        }
        sv_fabric_seg_name(name, sizeof(name), i, sv_peers[i].gen);
        shm_unlink(name);
        SV_STORE(&sv_peers[i].seg->magic, 0);
        if ((f->port[i].gen == sv_peers[i].gen) && (f->port[i].pid == self)) {
            f->port[i].pid = 0;
            SV_STORE(&f->port[i].state, SV_PORT_FREE);
        }
    }
    if (member) {
        memset(&f->member[sv_fabric_member], 0, sizeof(f->member[0]));
        sv_fabric_member = -1;
    }
    if (sv_fabric_sweep(f) == 0) {
        /* joiners that opened the file before the unlink see `gone` */
        f->gone = 1;
        snprintf(name, sizeof(name), "/softverbs.%s", sv_fabric_name);
        shm_unlink(name);
        sv_debug_log("fabric '%s': last to leave, removed", sv_fabric_name);
    }
    sv_fabric_unlock();
}

void sv_stats_exit_dump(void);

__attribute__((destructor)) static void sv_fabric_at_exit(void)
{
    sv_stats_exit_dump();    /* reads our ports before they are released */
    sv_fabric_leave();
}

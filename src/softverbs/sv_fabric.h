/*
 * The shared-memory fabric.
 *
 * /dev/shm/softverbs.<fabric>: header, port table, fabric-model area.
 * /dev/shm/softverbs.<fabric>.<port>.<gen>: one segment per port (an opened
 * device in one process) with the tables peers need to act as the NIC does:
 * memory regions by key, QPs by number (state, receive queue), CQs and SRQs,
 * then a heap for rings.  Peers map a port's segment on first use. Their
 * layout is sv_shm.h; this process's view of them is here.
 */
#ifndef SV_FABRIC_H_
#define SV_FABRIC_H_

#include "sv_limits.h"
#include "sv_queue.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/types.h>

/* A port as seen from this process (its own or a peer's). */
typedef struct sv_peer {
    sv_seg_t  *seg;
    struct sv_mr_shadow *shadow; /* own ports: what we registered */
    uint64_t   size;
    uint32_t   gen;
    pid_t      pid;
    uint64_t   starttime;
    int        self;       /* owned by this process */
    int        dead;
    uint64_t   checked_ns;
} sv_peer_t;

/* Own ports keep a private copy of each region's entry: the table in
 * shared memory could be forged by a peer, and within one process the copy
 * is a plain memcpy that must not follow a forged address. key 0: free. */
typedef struct sv_mr_shadow {
    uint64_t iova, vaddr, length;
    uint32_t key, pd_id, access;
} sv_mr_shadow_t;

extern sv_fabric_hdr_t *sv_fabric;
extern char sv_fabric_name[80];

int  sv_fabric_init(void);   /* join or create; 0 or -errno (once) */

/* sv_access.c: who may share a fabric (SOFTVERBS_SHARE) */
int    sv_access_init(void);
mode_t sv_access_mode(void);          /* of the files this process creates */
enum {
    SV_ACCESS_FABRIC_OWNER,   /* the fabric file: whose it is (may we even
                                 replace it if it is garbage?) */
    SV_ACCESS_FABRIC,         /* the fabric file: may we join it? Its
                                 group becomes the sharing group */
    SV_ACCESS_SEGMENT         /* a port segment: may we map it? */
};
/* 0 if this process may use the file open at `fd` as `what`, its owner in
 * *owner; -EACCES with a line on stderr saying why not. */
int    sv_access_check(int fd, const char *path, int what, uid_t *owner);
int    sv_access_adopt(int fd);       /* a new file: mode and group */
int    sv_access_pid_ok(pid_t pid, uid_t owner);
int  sv_fabric_port_alloc(unsigned dev, unsigned *port, uint32_t *gen,
                          sv_seg_t **seg, int *fd);
void sv_fabric_port_free(unsigned port, uint32_t gen, sv_seg_t *seg, int fd);
sv_peer_t *sv_fabric_peer(unsigned port);
int  sv_fabric_peer_alive(sv_peer_t *peer);
void sv_fabric_peer_dead(sv_peer_t *peer);
int  sv_fabric_pid_alive(pid_t pid, uint64_t starttime);
int  sv_fabric_port_alive(unsigned port, uint32_t gen, uint32_t gen_mask);
/* May a process of these credentials act on this fabric (send events)? */
int  sv_fabric_cred_ok(uid_t uid, gid_t gid);
uint64_t sv_fabric_pid_starttime(pid_t pid);
void sv_fabric_seg_name(char *buf, size_t len, unsigned port, uint32_t gen);

/* sv_heap.c: segment heap (owner only): page-aligned chunks, zeroed. */
int      sv_heap_create(unsigned port, int fd, void *base, uint64_t size);
void     sv_heap_destroy(unsigned port);
uint64_t sv_heap_alloc(unsigned port, size_t bytes);   /* 0 on failure */
void     sv_heap_free(unsigned port, uint64_t off, size_t bytes);

static inline void *sv_seg_ptr(const sv_peer_t *p, uint64_t off, uint64_t len)
{
    if ((off < sizeof(sv_seg_t)) || (off > p->size) || (len > p->size - off)) {
        return NULL;
    }
    return (char*)p->seg + off;
}

static inline sv_port_stats_t *sv_port_stats(unsigned port)
{
    return &sv_fabric->port[port].stats;
}

void sv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern int sv_debug;
#define sv_debug_log(...) do { if (sv_debug) sv_log(__VA_ARGS__); } while (0)

#endif

/*
 * The shared-memory fabric.
 *
 * /dev/shm/softverbs.<fabric>: header, port table, fabric-model area.
 * /dev/shm/softverbs.<fabric>.<port>.<gen>: one segment per port (an opened
 * device in one process) with the tables peers need to act as the NIC does:
 * memory regions by key, QPs by number (state, receive queue), CQs and SRQs,
 * then a heap for rings.  Peers map a port's segment on first use.
 */
#ifndef SV_FABRIC_H_
#define SV_FABRIC_H_

#include "sv_limits.h"
#include "sv_queue.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/types.h>

#define SV_FABRIC_MAGIC 0x6972626166767331ull
#define SV_SEG_MAGIC    0x6765737673ull

enum {
    SV_PORT_FREE = 0,
    SV_PORT_USED = 1
};

/* Per-port counters (pkts/bytes/drops of the wire are in the model area). */
typedef struct sv_port_stats {
    uint64_t doorbells;     /* ibv_post_send calls */
    uint64_t wrs;           /* send work requests */
    uint64_t msg_bytes;     /* payload bytes of send work requests */
    uint64_t rc_resends;    /* packets resent by go-back-N */
    uint64_t rc_timeouts;   /* retransmission timer expiries */
    uint64_t rnr_naks;      /* receiver not ready */
    uint64_t msg_drops;     /* UC/UD messages lost or discarded */
    uint64_t recv_doorbells;/* ibv_post_recv / ibv_post_srq_recv calls */
    uint64_t recv_wrs;
    uint64_t cqes;          /* completions taken from this port's CQs */
    uint64_t cq_overruns;
    uint64_t err_cqes;      /* of them, with an error status */
    uint64_t bad_cqes;      /* dropped: naming no outstanding request */
} sv_port_stats_t;

#define SV_PORT_STATS_FIELDS(_f) \
    _f(doorbells) _f(wrs) _f(msg_bytes) _f(rc_resends) _f(rc_timeouts) \
    _f(rnr_naks) _f(msg_drops) _f(recv_doorbells) _f(recv_wrs) _f(cqes) \
    _f(cq_overruns) _f(err_cqes) _f(bad_cqes)

typedef struct sv_port_entry {
    uint32_t        state;
    uint32_t        gen;        /* bumped at every allocation */
    int32_t         pid;
    uint32_t        dev;        /* svN */
    uint64_t        starttime;  /* of pid, against pid reuse */
    uint64_t        seg_size;
    char            comm[16];
    sv_port_stats_t stats __attribute__((aligned(64)));
} __attribute__((aligned(64))) sv_port_entry_t;

/* A process that joined the fabric (it may not have opened a device yet). */
typedef struct sv_member {
    int32_t  pid;
    uint32_t pad;
    uint64_t starttime;
} sv_member_t;

#define SV_MAX_MEMBERS 256

/*
 * Published complete (built under another name, then linked in place), so a
 * file at the fabric's name is either a whole fabric or garbage.  The
 * fabric lock, flock() on this file, guards ports, members and
 * re-initialisation; `gone` is set under it by the last process to leave,
 * right before it unlinks the file.
 */
typedef struct sv_fabric_hdr {
    uint64_t         magic;
    uint32_t         abi;
    uint32_t         ready;
    uint64_t         id;         /* random, part of every GID */
    uint64_t         size;
    uint8_t          unused[40]; /* keeps the port table where it was */
    uint32_t         gone;
    sv_port_entry_t  port[SV_MODEL_MAX_PORTS];
    sv_member_t      member[SV_MAX_MEMBERS];
    char             model[SV_MODEL_SHM_SIZE] __attribute__((aligned(4096)));
} sv_fabric_hdr_t;

/* --- tables in a port segment --- */

typedef struct sv_mr_shm {
    uint64_t iova;          /* what keys and SGEs address */
    uint64_t vaddr;         /* where it is in the owner's address space */
    uint64_t length;
    uint32_t key;           /* lkey == rkey; 0 when free */
    uint32_t pd_id;
    uint32_t access;
    uint32_t pad;
} sv_mr_shm_t;

typedef struct sv_qp_shm {
    uint32_t     qpn;       /* 0 when free */
    uint8_t      type;      /* enum ibv_qp_type */
    uint8_t      state;     /* enum ibv_qp_state */
    uint8_t      min_rnr_timer;
    uint8_t      err_event; /* async event a peer's error asks for, +1 */
    uint32_t     pd_id;
    uint32_t     qkey;
    uint32_t     dest_qpn;  /* RC/UC: the connected QP */
    uint32_t     access;    /* qp_access_flags */
    uint16_t     rcq;       /* receive CQ index */
    uint16_t     srq;       /* SRQ index + 1, 0: own RQ */
    uint32_t     pad1;
    uint64_t     recv_last_ts; /* keeps RC/UC receive completions in order */
    sv_rq_ring_t rq;
} sv_qp_shm_t;

typedef struct sv_cq_shm {
    uint32_t     valid;
    uint32_t     token;     /* in channel events, against index reuse */
    sv_cq_ring_t q;
} sv_cq_shm_t;

typedef struct sv_srq_shm {
    uint32_t     valid;
    uint32_t     pd_id;
    sv_rq_ring_t q;
} sv_srq_shm_t;

typedef struct sv_seg {
    uint64_t     magic;
    uint32_t     port, gen;
    int32_t      pid;
    uint32_t     err_pending; /* peers moved one of our QPs to ERR */
    uint64_t     size;
    uint64_t     heap_off;
    sv_mr_shm_t  mr[SV_MAX_MR];
    sv_qp_shm_t  qp[SV_MAX_QP];
    sv_cq_shm_t  cq[SV_MAX_CQ];
    sv_srq_shm_t srq[SV_MAX_SRQ];
} sv_seg_t;

/* A port as seen from this process (its own or a peer's). */
typedef struct sv_peer {
    sv_seg_t  *seg;
    struct sv_mr_shadow *shadow; /* own ports: what we registered */
    uint64_t   size;
    uint32_t   gen;
    pid_t      pid;
    uint64_t   starttime;
    int        self;       /* owned by this process: memcpy, no syscalls */
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

/* Segment heap (owner only): page-aligned chunks, zeroed. 0 on failure. */
uint64_t sv_heap_alloc(unsigned port, size_t bytes);
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

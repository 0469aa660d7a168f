/*
 * What softverbs processes share: the layout of the fabric file and of the
 * port segments (sv_fabric.h says what lives where), the same in every
 * process of a fabric. Every process of the fabric can write all of it:
 * nothing here is trusted without a check (sv_queue.h, sv_resp.c,
 * sv_rq.c, sv_cq.c). Any change to a struct here changes its size assert
 * below and needs a new SV_ABI_VERSION.
 */
#ifndef SV_SHM_H_
#define SV_SHM_H_

#include "sv_limits.h"

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

/* --- the fabric file: header, port table, members, model area --- */

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
    uint64_t rc_late_acks;  /* of them, while the answer was on its way */
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
    _f(rc_late_acks) _f(rnr_naks) _f(msg_drops) _f(recv_doorbells) \
    _f(recv_wrs) _f(cqes) _f(cq_overruns) _f(err_cqes) _f(bad_cqes)

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

/* --- completion and receive queues (their protocol: sv_queue.h) --- */

typedef struct sv_cqe {
    uint64_t seq;          /* ring index + 1 once published */
    uint64_t ts;           /* visible from this sv_now_ns() on */
    uint64_t wr_id;
    uint32_t byte_len;
    uint32_t imm;          /* network order, as in ibv_wc */
    uint32_t qp_num;
    uint32_t src_qp;
    uint8_t  status;
    uint8_t  opcode;
    uint8_t  wc_flags;
    uint8_t  sl;
    uint16_t slid;
    uint16_t pkey_index;
    uint32_t wqe_seq;      /* ring index of the WQE it completes (send:
                              SQ, receive: RQ/SRQ), low 32 bits */
    uint32_t vendor_err;
    uint8_t  taken;        /* consumed out of order */
    uint8_t  pad[3];
    uint32_t wqe_idx;      /* receive: the pool entry of that WQE */
} sv_cqe_t;

typedef struct sv_cq_ring {
    uint64_t head __attribute__((aligned(64)));  /* consumer */
    uint64_t tail __attribute__((aligned(64)));  /* producers */
    uint32_t size;          /* power of two */
    uint32_t armed;         /* SV_CQ_ARM_* */
    uint64_t ring_off;      /* offset of sv_cqe_t[size] in the owner's seg */
    uint32_t chan_id;       /* completion channel (0: none) */
    uint32_t overruns;
} sv_cq_ring_t;

enum {
    SV_CQ_ARM_NONE = 0,
    SV_CQ_ARM_NEXT = 1,
    SV_CQ_ARM_SOLICITED = 2
};

/* A ring slot: which pool entry holds the WQE posted at index `seq`. */
typedef struct sv_rq_slot {
    uint32_t seq;             /* ring index, low 32 bits */
    uint32_t wqe;             /* pool entry */
} sv_rq_slot_t;

/* A pool entry. `claim` is (seq << 32) | state, seq the ring index it was
 * posted at: SV_RWQE_FREE until claimed, then the claimer's id
 * (SV_RWQE_ID), then SV_RWQE_DONE, or SV_RWQE_LOST() when no completion
 * will come. */
typedef struct sv_rwqe {
    uint64_t       claim;
    uint32_t       num_sge;
    uint32_t       pad;
    struct ibv_sge sge[];
} sv_rwqe_t;

#define SV_RWQE_FREE        0u           /* posted, not claimed */
#define SV_RWQE_DONE        1u           /* its completion is in the CQ */
#define SV_RWQE_LOST_BIT    0x40000000u  /* claimed, no completion comes */
#define SV_RWQE_CLAIMED     0x80000000u  /* claimed by SV_RWQE_ID */
#define SV_RWQE_QP_MASK     0x3fffu      /* the owner's QP index */
#define SV_RWQE_GEN_MASK    0x1ffu       /* claimer's port generation */
#define SV_RWQE_GEN_SHIFT   14

/* A claimer's id: the port and generation of the claiming process (whether
 * it is still alive) and the index of the owner's QP the message was for
 * (where a lost WQE's error completion goes). */
#define SV_RWQE_ID(_port, _gen, _qp) \
    (SV_RWQE_CLAIMED | ((uint32_t)(_port) << 23) | \
     (((uint32_t)(_gen) & SV_RWQE_GEN_MASK) << SV_RWQE_GEN_SHIFT) | \
     ((uint32_t)(_qp) & SV_RWQE_QP_MASK))
#define SV_RWQE_LOST(_qp)    (SV_RWQE_LOST_BIT | ((_qp) & SV_RWQE_QP_MASK))
#define SV_RWQE_ID_PORT(_id) (((_id) >> 23) & 0xffu)
#define SV_RWQE_ID_GEN(_id)  (((_id) >> SV_RWQE_GEN_SHIFT) & SV_RWQE_GEN_MASK)
#define SV_RWQE_ID_QP(_id)   ((_id) & SV_RWQE_QP_MASK)

static inline uint64_t sv_rwqe_claim(uint32_t seq, uint32_t state)
{
    return ((uint64_t)seq << 32) | state;
}

typedef struct sv_rq_ring {
    uint64_t head __attribute__((aligned(64)));  /* consumers (senders) */
    uint64_t tail __attribute__((aligned(64)));  /* the owner */
    uint32_t size;          /* ring slots and pool entries, power of two */
    uint32_t max_sge;
    uint32_t wqe_size;      /* bytes per pool entry */
    uint32_t limit;         /* SRQ limit (armed when non-zero) */
    uint64_t ring_off;      /* slots, then the pool (sv_rq_pool_off) */
} sv_rq_ring_t;

/* --- a port segment: tables, then the heap of rings and queues --- */

typedef struct sv_mr_shm {
    uint64_t iova;          /* what keys and SGEs address */
    uint64_t vaddr;         /* where it is in the owner's address space */
    uint64_t length;
    uint32_t key;           /* lkey == rkey; 0 when free */
    uint32_t pd_id;
    uint32_t access;
    uint32_t pad;
} sv_mr_shm_t;

/* An RC responder's expected PSN (24 bits) and, in the same word, whether
 * its owner stopped it: a requester advances it and executes only while it
 * is open, so the PSN an owner reads once it closed it is final (what a
 * NIC's QP in ERR reports as rq_psn) */
#define SV_PSN_MASK        0xffffffu
#define SV_RQ_PSN_CLOSED   (1u << 31)

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
    uint32_t     rq_psn;    /* RC: the PSN it executes next, and
                               SV_RQ_PSN_CLOSED once its owner stopped it */
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

/* The segment's heap (rings, queues) starts on the page after the tables. */
#define SV_SEG_HEAP_START   ((sizeof(sv_seg_t) + 4095) & ~(size_t)4095)

/* Sizes and the places other versions rely on. */
_Static_assert(sizeof(sv_port_stats_t) == 112, "shared layout changed");
_Static_assert(sizeof(sv_port_entry_t) == 192, "shared layout changed");
_Static_assert(sizeof(sv_member_t) == 16, "shared layout changed");
_Static_assert(offsetof(sv_fabric_hdr_t, port) == 128,
               "the port table must stay where every version finds it");
_Static_assert(offsetof(sv_fabric_hdr_t, model) == 57344,
               "shared layout changed");
_Static_assert(sizeof(sv_fabric_hdr_t) == 57344 + SV_MODEL_SHM_SIZE,
               "shared layout changed");
_Static_assert(sizeof(sv_cqe_t) == 64, "sv_cqe_t must be one cache line");
_Static_assert(sizeof(sv_cq_ring_t) == 128, "shared layout changed");
_Static_assert(sizeof(sv_rq_slot_t) == 8, "shared layout changed");
_Static_assert(sizeof(sv_rwqe_t) == 16, "shared layout changed");
_Static_assert(sizeof(sv_rq_ring_t) == 128, "shared layout changed");
_Static_assert(sizeof(sv_mr_shm_t) == 40, "shared layout changed");
_Static_assert(sizeof(sv_qp_shm_t) == 192, "shared layout changed");
_Static_assert(sizeof(sv_cq_shm_t) == 192, "shared layout changed");
_Static_assert(sizeof(sv_srq_shm_t) == 192, "shared layout changed");
_Static_assert((offsetof(sv_seg_t, qp) == 655424) &&
               (sizeof(sv_seg_t) == 4194368), "shared layout changed");

#endif

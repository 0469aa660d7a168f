/*
 * Ring queues in shared memory.
 *
 * Completion queue: many producers (any process whose packets complete work
 * here), one consumer (the owner).  A producer reserves a slot by CAS on
 * `tail` (never past `head + size`), fills it and publishes it by storing
 * seq = index + 1.  The consumer takes published slots; a slot may be taken
 * out of order (completions become visible at their arrival time), which is
 * marked in the slot and `head` moves over taken slots only.
 *
 * Receive queue (RQ and SRQ): one producer (the owner's ibv_post_recv), many
 * consumers (the senders, as a NIC consumes WQEs).  A consumer copies the
 * slot at `head` and claims it with CAS; the producer never writes a slot
 * before `head` has moved past it.
 *
 * Peers may be buggy or malicious: every index read from shared memory is
 * masked, every count bounded before use.
 */
#ifndef SV_QUEUE_H_
#define SV_QUEUE_H_

#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>

#define SV_LOAD(p)         __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define SV_LOAD_RELAXED(p) __atomic_load_n(p, __ATOMIC_RELAXED)
#define SV_STORE(p, v)     __atomic_store_n(p, v, __ATOMIC_RELEASE)
#define SV_ADD(p, v)       __atomic_fetch_add(p, v, __ATOMIC_RELAXED)
#define SV_CAS(p, o, n)    __atomic_compare_exchange_n(p, o, n, 0, \
                                                       __ATOMIC_ACQ_REL, \
                                                       __ATOMIC_ACQUIRE)

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
    uint32_t sq_retire;    /* send WRs this completion retires (SQ space) */
    uint32_t vendor_err;
    uint8_t  taken;        /* consumed out of order */
    uint8_t  pad[7];
} sv_cqe_t;

_Static_assert(sizeof(sv_cqe_t) == 64, "sv_cqe_t must be one cache line");

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

typedef struct sv_rwqe {
    uint64_t      wr_id;
    uint32_t      num_sge;
    uint32_t      pad;
    struct ibv_sge sge[];
} sv_rwqe_t;

typedef struct sv_rq_ring {
    uint64_t head __attribute__((aligned(64)));  /* consumers (senders) */
    uint64_t tail __attribute__((aligned(64)));  /* the owner */
    uint32_t size;          /* power of two, 0: no ring */
    uint32_t max_sge;
    uint32_t wqe_size;
    uint32_t limit;         /* SRQ limit (armed when non-zero) */
    uint64_t ring_off;
} sv_rq_ring_t;

static inline uint32_t sv_roundup_pow2(uint32_t v)
{
    uint32_t r = 1;

    while (r < v) {
        r <<= 1;
    }
    return r;
}

static inline size_t sv_rwqe_size(uint32_t max_sge)
{
    return sizeof(sv_rwqe_t) + (size_t)max_sge * sizeof(struct ibv_sge);
}

/*
 * Reserve and publish one CQE. `ring` is the mapped array of the ring's
 * `size` entries. Returns 0, or -1 when the queue is full (overrun).
 */
static inline int sv_cq_ring_push(sv_cq_ring_t *q, sv_cqe_t *ring,
                                  uint32_t size, const sv_cqe_t *cqe)
{
    uint64_t t = SV_LOAD_RELAXED(&q->tail);
    sv_cqe_t *slot;

    do {
        if (t - SV_LOAD(&q->head) >= size) {
            return -1;
        }
    } while (!SV_CAS(&q->tail, &t, t + 1));

    slot        = &ring[t & (size - 1)];
    memcpy((char*)slot + 8, (const char*)cqe + 8, sizeof(*slot) - 8);
    slot->taken = 0;
    SV_STORE(&slot->seq, t + 1);
    return 0;
}

/* Claim one receive WQE; copies it to `out` (room for SV_MAX_SGE).
 * Returns 0, or -1 when the queue is empty or malformed. */
static inline int sv_rq_ring_pop(sv_rq_ring_t *q, void *ring, uint32_t size,
                                 uint32_t wqe_size, uint32_t max_sge,
                                 sv_rwqe_t *out)
{
    uint64_t h = SV_LOAD(&q->head);
    const sv_rwqe_t *slot;
    uint32_t n;

    for (;;) {
        if (h == SV_LOAD(&q->tail)) {
            return -1;
        }
        slot = (const sv_rwqe_t*)((char*)ring +
                                  (size_t)(h & (size - 1)) * wqe_size);
        out->wr_id   = slot->wr_id;
        n            = SV_LOAD_RELAXED(&slot->num_sge);
        out->num_sge = (n > max_sge) ? max_sge : n;
        memcpy(out->sge, slot->sge, out->num_sge * sizeof(struct ibv_sge));
        if (SV_CAS(&q->head, &h, h + 1)) {
            return 0;
        }
    }
}

#endif

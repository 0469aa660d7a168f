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
 * consumers (the senders, as a NIC consumes WQEs).  The WQEs sit in a pool
 * of `size` entries; a ring of `size` slots names them in posting order.
 * The owner fills a free entry, writes the slot for index `tail` and
 * publishes it by moving `tail`.  A consumer reads the slot at `head`,
 * copies the entry it names, claims the entry by CAS on its claim word
 * (which then names the claimer) and moves `head` on; whoever finds a
 * claimed entry at `head` moves `head` on for it.  Once the completion is
 * written, the claimer marks the entry done.  The owner frees an entry only
 * when it polls that completion, so it can tell a WQE claimed by a process
 * that died from one in use and complete it with an error; completions
 * polled in any order free entries in any order (a pool, not a ring).
 *
 * Peers may be buggy or malicious: every index read from shared memory is
 * masked or bounded before use, and the owner never takes a size, an index
 * or a wr_id back from shared memory: its private copies decide.
 */
#ifndef SV_QUEUE_H_
#define SV_QUEUE_H_

#include "sv_shm.h"

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

/* Offset of the pool from the slots, and the bytes of both. */
static inline size_t sv_rq_pool_off(uint32_t size)
{
    return ((size_t)size * sizeof(sv_rq_slot_t) + 63) & ~(size_t)63;
}

static inline size_t sv_rq_ring_bytes(uint32_t size, uint32_t wqe_size)
{
    return sv_rq_pool_off(size) + (size_t)size * wqe_size;
}

static inline sv_rwqe_t *sv_rq_wqe(void *ring, uint32_t size,
                                   uint32_t wqe_size, uint32_t idx)
{
    return (sv_rwqe_t*)((char*)ring + sv_rq_pool_off(size) +
                        (size_t)idx * wqe_size);
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

/* Bound on the slots one claim walks over (claimed by others, corrupt). */
#define SV_RQ_CLAIM_TRIES 64

/* What a claim took: the WQE's ring index and pool entry. */
typedef struct sv_rq_claimed {
    uint64_t   seq;
    uint32_t   wqe;
    uint32_t   id;
    sv_rwqe_t *entry;
} sv_rq_claimed_t;

/*
 * Claim the receive WQE at `head` for `id`; copies it to `out` (room for
 * `max_sge` SGEs, at most SV_MAX_SGE). Returns 0, or -1 when the queue is
 * empty or malformed. `size`, `wqe_size` and `max_sge` are checked values.
 */
static inline int sv_rq_ring_claim(sv_rq_ring_t *q, void *ring, uint32_t size,
                                   uint32_t wqe_size, uint32_t max_sge,
                                   uint32_t id, sv_rwqe_t *out,
                                   sv_rq_claimed_t *cl)
{
    const sv_rq_slot_t *slots = ring;
    uint64_t h = SV_LOAD(&q->head), c, h2;
    uint32_t n, idx, seq;
    sv_rwqe_t *e;
    unsigned i;

    for (i = 0; i < SV_RQ_CLAIM_TRIES; ++i) {
        if (h == SV_LOAD(&q->tail)) {
            return -1;
        }
        seq = SV_LOAD_RELAXED(&slots[h & (size - 1)].seq);
        idx = SV_LOAD_RELAXED(&slots[h & (size - 1)].wqe);
        if (seq != (uint32_t)h) {
            /* a slot rewritten since we read head: look again */
            h2 = SV_LOAD(&q->head);
            if (h2 == h) {
                return -1;    /* corrupt */
            }
            h = h2;
            continue;
        }
        e = sv_rq_wqe(ring, size, wqe_size, idx & (size - 1));
        c = SV_LOAD(&e->claim);
        if (c == sv_rwqe_claim(seq, SV_RWQE_FREE)) {
            n            = SV_LOAD_RELAXED(&e->num_sge);
            out->num_sge = (n > max_sge) ? max_sge : n;
            memcpy(out->sge, e->sge, out->num_sge * sizeof(struct ibv_sge));
            if (SV_CAS(&e->claim, &c, sv_rwqe_claim(seq, id))) {
                cl->seq   = h;
                (void)SV_CAS(&q->head, &h, h + 1);
                cl->wqe   = idx & (size - 1);
                cl->id    = id;
                cl->entry = e;
                return 0;
            }
        }
        /* claimed by someone else (who may have died before moving head),
         * or not this index's: move head on for it */
        if (SV_CAS(&q->head, &h, h + 1)) {
            ++h;
        }
    }
    return -1;
}

/* The claimer is done with its WQE: `state` is SV_RWQE_DONE or
 * SV_RWQE_LOST(). An entry the owner took back meanwhile is left alone. */
static inline void sv_rq_ring_finish(const sv_rq_claimed_t *cl,
                                     uint32_t state)
{
    uint64_t c = sv_rwqe_claim((uint32_t)cl->seq, cl->id);

    (void)SV_CAS(&cl->entry->claim, &c,
                 sv_rwqe_claim((uint32_t)cl->seq, state));
}

#endif

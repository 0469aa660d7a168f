/*
 * The owner's side of a receive queue (a QP's own or an SRQ): posting into
 * the shared ring and pool (sv_queue.h), the private record of every WQE it
 * posted, freeing entries as their completions are polled, and finding
 * WQEs whose claimer died.
 *
 * Nothing is read back from shared memory to decide a size, an index or a
 * wr_id: other processes write there, and a wrong value must cost at most
 * a failed or lost receive, never a write out of bounds.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(SV_MAX_QP - 1 <= SV_RWQE_QP_MASK,
               "a QP index must fit a receive WQE's claim word");
_Static_assert(SV_MODEL_MAX_PORTS <= 256,
               "a port index must fit a receive WQE's claim word");

int sv_rq_init(sv_rq_t *rq, unsigned port, sv_rq_ring_t *q, uint32_t max_wr,
               uint32_t max_sge)
{
    uint32_t i;

    memset(rq, 0, sizeof(*rq));
    rq->size       = sv_roundup_pow2(max_wr ? max_wr : 1);
    rq->max_sge    = max_sge ? max_sge : 1;
    rq->wqe_size   = sv_rwqe_size(rq->max_sge);
    rq->ring_bytes = sv_rq_ring_bytes(rq->size, rq->wqe_size);
    rq->rec        = calloc(rq->size, sizeof(*rq->rec));
    rq->free       = malloc(rq->size * sizeof(*rq->free));
    rq->order      = calloc(rq->size, sizeof(*rq->order));
    if ((rq->rec == NULL) || (rq->free == NULL) || (rq->order == NULL)) {
        goto err_free;
    }
    rq->ring_off = sv_heap_alloc(port, rq->ring_bytes);
    if (rq->ring_off == 0) {
        goto err_free;
    }
    for (i = 0; i < rq->size; ++i) {
        rq->free[i] = rq->size - 1 - i;
    }
    rq->nfree = rq->size;
    rq->ring  = (char*)sv_fabric_peer(port)->seg + rq->ring_off;
    rq->q     = q;
    pthread_spin_init(&rq->lock, PTHREAD_PROCESS_PRIVATE);
    memset(q, 0, sizeof(*q));
    q->size     = rq->size;
    q->max_sge  = rq->max_sge;
    q->wqe_size = rq->wqe_size;
    q->ring_off = rq->ring_off;
    return 0;

err_free:
    free(rq->rec);
    free(rq->free);
    free(rq->order);
    return ENOMEM;
}

void sv_rq_cleanup(sv_rq_t *rq, unsigned port)
{
    if (rq->rec == NULL) {
        return;
    }
    sv_heap_free(port, rq->ring_off, rq->ring_bytes);
    pthread_spin_destroy(&rq->lock);
    free(rq->rec);
    free(rq->free);
    free(rq->order);
    rq->rec = NULL;
}

int sv_rq_post(sv_rq_t *rq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad,
               uint32_t *nposted)
{
    sv_rq_slot_t *slots = rq->ring;
    uint32_t n = 0, idx, seq;
    sv_rwqe_t *e;
    uint64_t len;
    int i, ret = 0;

    pthread_spin_lock(&rq->lock);
    for (; wr != NULL; wr = wr->next, ++n) {
        if ((wr->num_sge < 0) || ((uint32_t)wr->num_sge > rq->max_sge)) {
            ret = EINVAL;
            break;
        }
        if (rq->nfree == 0) {
            ret = ENOMEM;
            break;
        }
        idx = rq->free[--rq->nfree];
        seq = (uint32_t)rq->tail;
        e   = sv_rq_wqe(rq->ring, rq->size, rq->wqe_size, idx);
        for (i = 0, len = 0; i < wr->num_sge; ++i) {
            len += wr->sg_list[i].length;
        }
        e->num_sge = wr->num_sge;
        if (wr->num_sge > 0) {
            memcpy(e->sge, wr->sg_list, wr->num_sge * sizeof(*e->sge));
        }
        __atomic_store_n(&e->claim, sv_rwqe_claim(seq, SV_RWQE_FREE),
                         __ATOMIC_RELAXED);
        slots[rq->tail & (rq->size - 1)] = (sv_rq_slot_t){ .seq = seq,
                                                           .wqe = idx };
        rq->order[rq->tail & (rq->size - 1)] = idx;
        rq->rec[idx] = (sv_rq_rec_t){ .wr_id = wr->wr_id, .len = len,
                                      .seq = seq, .posted = 1 };
        ++rq->tail;
    }
    SV_STORE(&rq->q->tail, rq->tail);   /* publishes the slots above */
    pthread_spin_unlock(&rq->lock);
    *nposted = n;
    if (ret != 0) {
        *bad = wr;
    }
    return ret;
}

int sv_rq_polled(sv_rq_t *rq, uint32_t wqe, uint32_t seq, uint64_t *wr_id,
                 uint64_t *len)
{
    sv_rq_rec_t *r;
    int ret = -1;

    if (wqe >= rq->size) {
        return -1;
    }
    pthread_spin_lock(&rq->lock);
    r = &rq->rec[wqe];
    if (r->posted && (r->seq == seq)) {
        r->posted = 0;
        rq->free[rq->nfree++] = wqe;
        *wr_id = r->wr_id;
        *len   = r->len;
        ret    = 0;
    }
    pthread_spin_unlock(&rq->lock);
    return ret;
}

void sv_rq_reset(sv_rq_t *rq)
{
    uint32_t i;

    pthread_spin_lock(&rq->lock);
    for (i = 0; i < rq->size; ++i) {
        rq->rec[i].posted = 0;
        rq->free[i]       = rq->size - 1 - i;
    }
    rq->nfree = rq->size;
    SV_STORE(&rq->q->head, rq->tail);
    pthread_spin_unlock(&rq->lock);
}

uint64_t sv_rq_unclaimed(sv_rq_t *rq)
{
    uint64_t head = SV_LOAD(&rq->q->head);
    uint64_t tail = __atomic_load_n(&rq->tail, __ATOMIC_RELAXED);

    return (head <= tail) ? tail - head : 0;
}

unsigned sv_rq_flush(sv_rq_t *rq, uint32_t id, sv_rq_lost_fn fn, void *arg)
{
    uint64_t t, first = (rq->tail > rq->size) ? rq->tail - rq->size : 0;
    unsigned n = 0;
    sv_rq_rec_t *r;
    sv_rwqe_t *e;
    uint32_t idx;
    uint64_t c;

    pthread_spin_lock(&rq->lock);
    for (t = first; t < rq->tail; ++t) {
        idx = rq->order[t & (rq->size - 1)];
        r   = &rq->rec[idx];
        if (!r->posted || (r->seq != (uint32_t)t)) {
            continue;
        }
        e = sv_rq_wqe(rq->ring, rq->size, rq->wqe_size, idx);
        c = sv_rwqe_claim(r->seq, SV_RWQE_FREE);
        if (!SV_CAS(&e->claim, &c, sv_rwqe_claim(r->seq, id))) {
            continue;     /* a sender has it (or the reaper will) */
        }
        __atomic_store_n(&e->claim,
                         sv_rwqe_claim(r->seq,
                                       (fn(arg, SV_RWQE_ID_QP(id), idx,
                                           r->seq) == 0) ?
                                       SV_RWQE_DONE :
                                       SV_RWQE_LOST(SV_RWQE_ID_QP(id))),
                         __ATOMIC_RELEASE);
        ++n;
    }
    SV_STORE(&rq->q->head, rq->tail);
    pthread_spin_unlock(&rq->lock);
    return n;
}

/*
 * Is the WQE in pool entry `r` lost: claimed by a process that is gone (seen
 * claimed on two visits, so that a live claimer had time to finish), marked
 * lost by its claimer, or overwritten? Returns the QP index its error
 * completion goes to (SV_RWQE_QP_MASK + 1: unknown), or -1 if not lost.
 */
static int sv_rq_lost(sv_rq_rec_t *r, uint64_t claim)
{
    uint32_t st = (uint32_t)claim;

    if ((claim >> 32) != r->seq) {
        return SV_RWQE_QP_MASK + 1;
    }
    if ((st == SV_RWQE_FREE) || (st == SV_RWQE_DONE)) {
        r->aged = 0;
        return -1;
    }
    if ((st & ~SV_RWQE_QP_MASK) == SV_RWQE_LOST_BIT) {
        return SV_RWQE_ID_QP(st);
    }
    if (!(st & SV_RWQE_CLAIMED)) {
        return SV_RWQE_QP_MASK + 1;
    }
    if (!r->aged) {
        r->aged = 1;
        return -1;
    }
    if (sv_fabric_port_alive(SV_RWQE_ID_PORT(st), SV_RWQE_ID_GEN(st),
                             SV_RWQE_GEN_MASK)) {
        return -1;
    }
    return SV_RWQE_ID_QP(st);
}

unsigned sv_rq_reap(sv_rq_t *rq, sv_rq_lost_fn fn, void *arg)
{
    sv_rq_rec_t *r;
    sv_rwqe_t *e;
    unsigned n = 0;
    uint64_t c;
    uint32_t i;
    int qp, ret;

    pthread_spin_lock(&rq->lock);
    for (i = 0; i < rq->size; ++i) {
        r = &rq->rec[i];
        if (!r->posted) {
            continue;
        }
        e  = sv_rq_wqe(rq->ring, rq->size, rq->wqe_size, i);
        c  = SV_LOAD(&e->claim);
        qp = sv_rq_lost(r, c);
        if (qp < 0) {
            continue;
        }
        ret = fn(arg, (uint32_t)qp, i, r->seq);
        if (ret < 0) {
            continue;             /* no room in the CQ: next time */
        }
        /* completed (or nobody left to take it): no claimer may have it */
        (void)SV_CAS(&e->claim, &c, sv_rwqe_claim(r->seq, SV_RWQE_DONE));
        r->aged = 0;
        if (ret > 0) {
            r->posted = 0;
            rq->free[rq->nfree++] = i;
        }
        ++n;
    }
    pthread_spin_unlock(&rq->lock);
    return n;
}

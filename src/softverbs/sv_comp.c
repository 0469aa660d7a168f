/*
 * Completions: pushing a CQE into a (possibly remote) CQ, waking its
 * channel, and the requester's send completions.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_verbs.h"

#include <string.h>

/* Validate the CQ a peer's QP names before writing to it. */
int sv_comp_push(sv_peer_t *peer, unsigned port, unsigned cq_idx,
                 sv_cqe_t *cqe, int solicited)
{
    sv_port_stats_t *st = sv_port_stats(port);
    sv_cq_shm_t *e;
    sv_cqe_t *ring;
    uint32_t size, armed;

    if (cq_idx >= SV_MAX_CQ) {
        return -1;
    }
    e = &peer->seg->cq[cq_idx];
    if (!SV_LOAD(&e->valid)) {
        return -1;
    }
    size = SV_LOAD_RELAXED(&e->q.size);
    if ((size < 2) || (size & (size - 1)) || (size > 2 * SV_MAX_CQE + 2)) {
        return -1;
    }
    ring = sv_seg_ptr(peer, SV_LOAD_RELAXED(&e->q.ring_off),
                      (uint64_t)size * sizeof(sv_cqe_t));
    if (ring == NULL) {
        return -1;
    }
    if (sv_cq_ring_push(&e->q, ring, size, cqe) != 0) {
        SV_ADD(&e->q.overruns, 1);
        SV_ADD(&st->cq_overruns, 1);
        return -1;
    }
    if (cqe->status != IBV_WC_SUCCESS) {
        solicited = 1;  /* counted by the consumer (sv_cq_take) */
    }
    armed = SV_LOAD(&e->q.armed);
    if ((armed == SV_CQ_ARM_NEXT) ||
        ((armed == SV_CQ_ARM_SOLICITED) && solicited)) {
        if (SV_CAS(&e->q.armed, &armed, SV_CQ_ARM_NONE)) {
            sv_cq_signal(peer->pid, SV_LOAD_RELAXED(&e->q.chan_id), cq_idx,
                         SV_LOAD_RELAXED(&e->token));
        }
    }
    return 0;
}

/* Called with the SQ lock held. Errors move the QP to ERR (and flush).
 * The completion names the WR by its SQ index: its owner takes the wr_id,
 * opcode and length from its private record (sv_cq.c). */
void sv_comp_send(sv_qp_t *qp, const sv_swqe_t *w, enum ibv_wc_status st,
                  uint64_t ts)
{
    sv_port_t *port = qp->port;
    sv_cqe_t cqe;

    if (ts < qp->sq_last_ts) {
        ts = qp->sq_last_ts;      /* one SQ completes in order */
    }
    qp->sq_last_ts = ts;          /* unsignaled ones too: a later CQE
                                     retires them, so it comes no sooner */
    if ((st == IBV_WC_SUCCESS) && !(w->flags & IBV_SEND_SIGNALED) &&
        !qp->sq_sig_all) {
        return;            /* retired by the next completion polled */
    }
    memset(&cqe, 0, sizeof(cqe));
    cqe.ts         = ts;
    cqe.status     = st;
    cqe.opcode     = sv_wc_opcode(w->opcode);
    cqe.qp_num     = qp->qp.qp_num;
    cqe.wqe_seq    = (uint32_t)w->seq;
    cqe.vendor_err = (st == IBV_WC_SUCCESS) ? 0 : 0x100 + st;
    sv_comp_push(sv_fabric_peer(port->index), port->index, qp->scq->idx,
                 &cqe, 0);
    if ((st != IBV_WC_SUCCESS) && (st != IBV_WC_WR_FLUSH_ERR)) {
        sv_debug_log("qp 0x%x wr_id %#lx: status %d", qp->qp.qp_num,
                     (unsigned long)w->wr_id, (int)st);
        sv_qp_to_err(qp, 1);
    }
}

/* The owner completes one of its receive WQEs itself (flush, or a WQE
 * whose claimer died): 0, or -1 if its CQ has no room. */
int sv_comp_recv_error(sv_qp_t *qp, uint32_t wqe, uint32_t seq,
                       enum ibv_wc_status st)
{
    uint64_t ts = sv_now_ns(), last = SV_LOAD(&qp->shm->recv_last_ts);
    sv_cqe_t cqe;

    memset(&cqe, 0, sizeof(cqe));
    /* after the receives that arrived before (a peer could push `last` far
     * ahead: that only delays this completion, as it could delay any) */
    cqe.ts         = (ts > last) ? ts : last;
    cqe.status     = st;
    cqe.opcode     = IBV_WC_RECV;
    cqe.qp_num     = qp->qp.qp_num;
    cqe.wqe_seq    = seq;
    cqe.wqe_idx    = wqe;
    cqe.vendor_err = 0x100 + st;
    return sv_comp_push(sv_fabric_peer(qp->port->index), qp->port->index,
                        qp->rcq->idx, &cqe, 0);
}

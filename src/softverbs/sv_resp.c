/*
 * Responder: what the target NIC does with an arriving message.  It runs in
 * the sender's process, on the target's tables in its port segment, and
 * moves the data with one process_vm_writev/readv per message.  Everything
 * read from the segment is checked first: the target may be buggy, dying
 * or hostile.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_verbs.h"

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* The data moves with the kernel's checked copy, within one process too: a
 * buffer its user unmapped (freed before its operation completed) is a
 * failed copy, which the caller reports as a completion error as a NIC
 * reports a protection error, never a fault of the process. */
ssize_t sv_copy(const sv_peer_t *peer, int to_peer, const struct iovec *liov,
                int lcnt, const struct iovec *riov, int rcnt)
{
    ssize_t ret;

    ret = to_peer ? process_vm_writev(peer->pid, liov, lcnt, riov, rcnt, 0)
                  : process_vm_readv(peer->pid, liov, lcnt, riov, rcnt, 0);
    return (ret < 0) ? -errno : ret;
}

sv_qp_shm_t *sv_resp_qp(sv_peer_t *peer, unsigned dport, uint32_t dqpn)
{
    uint32_t idx = dqpn & 0xffff;
    sv_qp_shm_t *e;

    if (((dqpn >> 16) != dport) || (idx >= SV_MAX_QP)) {
        return NULL;
    }
    e = &peer->seg->qp[idx];
    return (SV_LOAD(&e->qpn) == dqpn) ? e : NULL;
}

/* Does the target QP accept this packet at all? */
static int sv_resp_accepts(const sv_msg_t *m)
{
    uint8_t st = SV_LOAD(&m->dqp->state);

    if ((st != IBV_QPS_RTR) && (st != IBV_QPS_RTS) && (st != IBV_QPS_SQD)) {
        return 0;
    }
    if (SV_LOAD_RELAXED(&m->dqp->type) != m->sqp->qp.qp_type) {
        return 0;
    }
    if ((m->sqp->qp.qp_type != IBV_QPT_UD) &&
        (SV_LOAD_RELAXED(&m->dqp->dest_qpn) != m->sqp->qp.qp_num)) {
        return 0;     /* connected to someone else */
    }
    return 1;
}

/* The PSNs the message takes on the requester's path MTU */
static uint32_t sv_resp_psn_span(const sv_msg_t *m)
{
    return sv_psn_span(m->w->len, sv_mtu_bytes(m->sqp->attr.path_mtu));
}

/* RC: the message executes; the target's expected PSN moves past its
 * packets first, unless the target's owner closed it (then the message is
 * not taken, as by a QP in ERR). Once a message. An RC QP has one
 * requester, so only the owner's close races with it; a target that keeps
 * changing the word is not waited for. */
static int sv_resp_psn_take(sv_msg_t *m)
{
    uint32_t span, old, next;
    int tries;

    if (m->psn_taken || (m->sqp->qp.qp_type != IBV_QPT_RC)) {
        return 1;
    }
    span = sv_resp_psn_span(m);
    old  = SV_LOAD(&m->dqp->rq_psn);
    for (tries = 0; tries < SV_PSN_TAKE_TRIES; ++tries) {
        if (old & SV_RQ_PSN_CLOSED) {
            return 0;
        }
        next = (old + span) & SV_PSN_MASK;
        if (__atomic_compare_exchange_n(&m->dqp->rq_psn, &old, next, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            m->psn_taken = 1;
            return 1;
        }
    }
    return 0;
}

/* RC: a message taken that cannot execute after all (no receive WQE) is
 * given back, unless the owner closed the QP meanwhile: its PSN then
 * counts the message, as it counts the ones before */
static void sv_resp_psn_untake(sv_msg_t *m)
{
    uint32_t span, now;

    if (!m->psn_taken) {
        return;
    }
    span = sv_resp_psn_span(m);
    now  = SV_LOAD(&m->dqp->rq_psn);
    if (!(now & SV_RQ_PSN_CLOSED) &&
        __atomic_compare_exchange_n(&m->dqp->rq_psn, &now,
                                    (now - span) & SV_PSN_MASK, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        m->psn_taken = 0;
    }
}

/* The target QP moves to ERR; its owner flushes it when it notices, and
 * raises `event` (async) when non-zero. */
static void sv_resp_qp_error(sv_msg_t *m, enum ibv_event_type event)
{
    if (m->sqp->qp.qp_type == IBV_QPT_UD) {
        return;
    }
    if (event != 0) {
        SV_STORE(&m->dqp->err_event, (uint8_t)(event + 1));
    }
    SV_STORE(&m->dqp->state, IBV_QPS_ERR);
    sv_qp_psn_close(m->dqp);
    SV_ADD(&m->peer->seg->err_pending, 1);
}

/* RC responder access violation: NAK to the requester, the responder's QP
 * goes to ERR with an access-error async event (UC silently drops). */
static enum sv_resp sv_resp_access_error(sv_msg_t *m)
{
    if (m->sqp->qp.qp_type == IBV_QPT_RC) {
        sv_resp_qp_error(m, IBV_EVENT_QP_ACCESS_ERR);
    }
    return SV_RESP_ACCESS;
}

typedef struct sv_resp_rq {
    sv_rq_ring_t *q;
    void         *ring;
    uint32_t      size, max_sge, wqe_size, pd_id;
} sv_resp_rq_t;

static int sv_resp_rq(sv_msg_t *m, sv_resp_rq_t *rq)
{
    uint32_t srq = SV_LOAD_RELAXED(&m->dqp->srq);
    sv_srq_shm_t *s;

    if (srq != 0) {
        if (srq > SV_MAX_SRQ) {
            return -1;
        }
        s = &m->peer->seg->srq[srq - 1];
        if (!SV_LOAD(&s->valid)) {
            return -1;
        }
        rq->q     = &s->q;
        rq->pd_id = SV_LOAD_RELAXED(&s->pd_id);
    } else {
        rq->q     = &m->dqp->rq;
        rq->pd_id = SV_LOAD_RELAXED(&m->dqp->pd_id);
    }
    rq->size     = SV_LOAD_RELAXED(&rq->q->size);
    rq->max_sge  = SV_LOAD_RELAXED(&rq->q->max_sge);
    rq->wqe_size = SV_LOAD_RELAXED(&rq->q->wqe_size);
    if ((rq->size == 0) || (rq->size & (rq->size - 1)) ||
        (rq->size > SV_MAX_SRQ_WR * 2) || (rq->max_sge == 0) ||
        (rq->max_sge > SV_MAX_SGE) ||
        (rq->wqe_size != sv_rwqe_size(rq->max_sge))) {
        return -1;
    }
    rq->ring = sv_seg_ptr(m->peer, SV_LOAD_RELAXED(&rq->q->ring_off),
                          sv_rq_ring_bytes(rq->size, rq->wqe_size));
    return (rq->ring == NULL) ? -1 : 0;
}

/* Write the receive completion of the WQE claimed in `cl` and let the
 * claim go: done, or lost when the completion found no room. */
static void sv_resp_cqe(sv_msg_t *m, const sv_rq_claimed_t *cl,
                        enum ibv_wc_status st, enum ibv_wc_opcode op,
                        uint32_t byte_len, int imm)
{
    const sv_swqe_t *w = m->w;
    sv_cqe_t cqe;
    uint64_t ts = m->ts, last;

    memset(&cqe, 0, sizeof(cqe));
    if (m->sqp->qp.qp_type != IBV_QPT_UD) {
        /* one connection delivers in order */
        last = SV_LOAD_RELAXED(&m->dqp->recv_last_ts);
        if (ts < last) {
            ts = last;
        }
        SV_STORE(&m->dqp->recv_last_ts, ts);
    }
    cqe.ts       = ts;
    cqe.status   = st;
    cqe.opcode   = op;
    cqe.byte_len = byte_len;
    cqe.qp_num   = m->dqpn;
    cqe.src_qp   = m->sqp->qp.qp_num;
    cqe.slid     = sv_port_lid(m->sqp->port->index);
    cqe.sl       = w->sl;
    cqe.wqe_seq  = (uint32_t)cl->seq;
    cqe.wqe_idx  = cl->wqe;
    if (st == IBV_WC_SUCCESS) {
        if (imm) {
            cqe.imm       = w->imm;
            cqe.wc_flags |= IBV_WC_WITH_IMM;
        }
        if (m->sqp->qp.qp_type == IBV_QPT_UD) {
            cqe.wc_flags |= IBV_WC_GRH;
        }
    } else {
        cqe.vendor_err = 0x100 + st;
    }
    if (sv_comp_push(m->peer, m->dport, SV_LOAD_RELAXED(&m->dqp->rcq), &cqe,
                     (w->flags & IBV_SEND_SOLICITED) != 0) == 0) {
        sv_rq_ring_finish(cl, SV_RWQE_DONE);
    } else {
        sv_rq_ring_finish(cl, SV_RWQE_LOST(m->dqpn));
        SV_ADD(&sv_port_stats(m->sqp->port->index)->msg_drops, 1);
    }
}

/* Claim a receive WQE and translate its SGEs into the target's iovecs. */
static enum sv_resp sv_resp_recv(sv_msg_t *m, uint64_t need,
                                 sv_rq_claimed_t *cl, struct iovec *riov,
                                 int *rcnt)
{
    struct {
        sv_rwqe_t      w;
        struct ibv_sge sge[SV_MAX_SGE];
    } wqe;
    sv_port_t *sport = m->sqp->port;
    sv_resp_rq_t rq;
    uint64_t va, room = 0;
    uint32_t i;
    int n = 0;

    if (sv_resp_rq(m, &rq) != 0) {
        return SV_RESP_NOT_READY;
    }
    if (sv_rq_ring_claim(rq.q, rq.ring, rq.size, rq.wqe_size, rq.max_sge,
                         SV_RWQE_ID(sport->index, sport->gen, m->dqpn),
                         &wqe.w, cl) != 0) {
        return SV_RESP_RNR;
    }
    for (i = 0; (i < wqe.w.num_sge) && (room < need); ++i) {
        struct ibv_sge *s = &wqe.sge[i];

        if (s->length == 0) {
            continue;
        }
        if (sv_mr_lookup(m->peer, s->lkey, rq.pd_id, s->addr, s->length,
                         IBV_ACCESS_LOCAL_WRITE, &va) != 0) {
            sv_resp_cqe(m, cl, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0);
            sv_resp_qp_error(m, 0);
            return SV_RESP_OP_ERR;
        }
        riov[n].iov_base = (void*)(uintptr_t)va;
        riov[n].iov_len  = (s->length < need - room) ? s->length :
                           need - room;
        room            += riov[n].iov_len;
        ++n;
    }
    if (room < need) {
        sv_resp_cqe(m, cl, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0);
        sv_resp_qp_error(m, 0);
        return SV_RESP_INV_REQ;
    }
    *rcnt = n;
    return SV_RESP_OK;
}

/* Whether the requester's own iovecs are readable, probed one byte per page
 * by reading them from ourselves. A registered buffer the program unmapped
 * (or protected) while a WR still used it is pinned memory on a real NIC;
 * here the copy faults, and the fault is the requester's. Only asked after
 * a failed copy. */
static int sv_resp_local_readable(const struct iovec *iov, int cnt)
{
    static long page;
    struct iovec probe[64], dst;
    char scratch[64];
    uintptr_t a, end;
    int i, n;

    if (page == 0) {
        page = sysconf(_SC_PAGESIZE);
    }
    for (i = 0; i < cnt; ++i) {
        a   = (uintptr_t)iov[i].iov_base;
        end = a + iov[i].iov_len;
        while (a < end) {
            for (n = 0; (n < 64) && (a < end); ++n) {
                probe[n].iov_base = (void*)a;
                probe[n].iov_len  = 1;
                a = (a & ~(uintptr_t)(page - 1)) + page;
            }
            dst.iov_base = scratch;
            dst.iov_len  = n;
            if (process_vm_readv(getpid(), &dst, 1, probe, n, 0) != n) {
                return 0;
            }
        }
    }
    return 1;
}

enum sv_resp sv_resp_copy_status(ssize_t n, uint64_t len,
                                 const struct iovec *liov, int lcnt)
{
    if (n == -ESRCH) {
        return SV_RESP_DEAD;
    }
    if ((n >= 0) && ((uint64_t)n == len)) {
        return SV_RESP_OK;
    }
    return sv_resp_local_readable(liov, lcnt) ? SV_RESP_ACCESS :
                                              SV_RESP_LOCAL;
}

/* The checks of a WRITE without the copy or any effect: the target address
 * in *va. */
enum sv_resp sv_resp_write_check(sv_msg_t *m, uint64_t *va)
{
    const sv_swqe_t *w = m->w;

    *va = 0;
    if (!sv_resp_accepts(m)) {
        return SV_RESP_NOT_READY;
    }
    if ((m->len > 0) &&
        (!(SV_LOAD_RELAXED(&m->dqp->access) & IBV_ACCESS_REMOTE_WRITE) ||
         (sv_mr_lookup(m->peer, w->rkey, SV_LOAD_RELAXED(&m->dqp->pd_id),
                       w->raddr, m->len, IBV_ACCESS_REMOTE_WRITE, va) != 0))) {
        return SV_RESP_ACCESS;
    }
    return sv_resp_psn_take(m) ? SV_RESP_OK : SV_RESP_NOT_READY;
}

/* The data is placed: the immediate consumes a receive WQE at the last
 * packet; its buffers stay unused. */
enum sv_resp sv_resp_write_done(sv_msg_t *m)
{
    struct iovec riov[SV_MAX_SGE];
    sv_rq_claimed_t cl;
    enum sv_resp r;
    int rcnt;

    if ((m->w->opcode != IBV_WR_RDMA_WRITE_WITH_IMM) || m->partial) {
        return SV_RESP_OK;
    }
    r = sv_resp_recv(m, 0, &cl, riov, &rcnt);
    if (r == SV_RESP_OK) {
        sv_resp_cqe(m, &cl, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
                    (uint32_t)m->len, 1);
    }
    return r;
}

enum sv_resp sv_resp_write(sv_msg_t *m)
{
    struct iovec riov;
    enum sv_resp r;
    uint64_t va;

    r = sv_resp_write_check(m, &va);
    if (r == SV_RESP_ACCESS) {
        return sv_resp_access_error(m);
    }
    if ((r != SV_RESP_OK) || (m->len == 0)) {
        return (r != SV_RESP_OK) ? r : sv_resp_write_done(m);
    }
    riov.iov_base = (void*)(uintptr_t)va;
    riov.iov_len  = m->len;
    r = sv_resp_copy_status(sv_copy(m->peer, 1, m->liov, m->liovcnt, &riov,
                                    1), m->len, m->liov, m->liovcnt);
    return (r != SV_RESP_OK) ? r : sv_resp_write_done(m);
}

enum sv_resp sv_resp_send(sv_msg_t *m)
{
    const sv_swqe_t *w = m->w;
    int ud = (m->sqp->qp.qp_type == IBV_QPT_UD);
    struct iovec riov[SV_MAX_SGE], liov[SV_MAX_SGE + 2];
    uint64_t need = m->len + (ud ? SV_GRH_LEN : 0);
    sv_rq_claimed_t cl;
    struct ibv_grh grh;
    enum sv_resp r;
    int rcnt = 0, lcnt = m->liovcnt;

    if (!sv_resp_accepts(m)) {
        return SV_RESP_NOT_READY;
    }
    if (ud && (SV_LOAD_RELAXED(&m->dqp->qkey) != w->qkey)) {
        return SV_RESP_NOT_READY;        /* Q_Key violation: dropped */
    }
    if (!sv_resp_psn_take(m)) {
        return SV_RESP_NOT_READY;
    }
    r = sv_resp_recv(m, need, &cl, riov, &rcnt);
    if (r != SV_RESP_OK) {
        sv_resp_psn_untake(m);
        return r;
    }
    if (ud) {
        memset(&grh, 0, sizeof(grh));
        grh.version_tclass_flow = htobe32(6u << 28);
        grh.paylen    = htobe16((uint16_t)(m->len + 28)); /* BTH+DETH+ICRC */
        grh.next_hdr  = 0x1b;
        grh.hop_limit = 1;
        sv_port_gid_of(m->sqp->port->index, &grh.sgid);
        sv_port_gid_of(m->dport, &grh.dgid);
        liov[0].iov_base = &grh;
        liov[0].iov_len  = SV_GRH_LEN;
        memcpy(&liov[1], m->liov, m->liovcnt * sizeof(*liov));
        lcnt = m->liovcnt + 1;
    } else {
        memcpy(liov, m->liov, m->liovcnt * sizeof(*liov));
    }
    if (need > 0) {
        r = sv_resp_copy_status(sv_copy(m->peer, 1, liov, lcnt, riov, rcnt),
                                need, m->liov, m->liovcnt);
        if (r == SV_RESP_LOCAL) {
            /* the claimed WQE cannot be given back (other senders share
             * the queue): it completes as aborted, the QP stays up */
            sv_resp_cqe(m, &cl, IBV_WC_REM_ABORT_ERR, IBV_WC_RECV, 0, 0);
            return r;
        }
        if (r == SV_RESP_ACCESS) {
            sv_resp_cqe(m, &cl, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0);
            sv_resp_qp_error(m, 0);
            return SV_RESP_OP_ERR;
        }
        if (r != SV_RESP_OK) {
            /* the target is gone: nobody polls this WQE */
            sv_rq_ring_finish(&cl, SV_RWQE_LOST(m->dqpn));
            return r;
        }
    }
    sv_resp_cqe(m, &cl, IBV_WC_SUCCESS, IBV_WC_RECV, (uint32_t)need,
                w->opcode == IBV_WR_SEND_WITH_IMM);
    return SV_RESP_OK;
}

enum sv_resp sv_resp_read(sv_msg_t *m)
{
    const sv_swqe_t *w = m->w;
    struct iovec riov;
    uint64_t va = 0;

    if (!sv_resp_accepts(m)) {
        return SV_RESP_NOT_READY;
    }
    if (m->len == 0) {
        return SV_RESP_OK;
    }
    if (!(SV_LOAD_RELAXED(&m->dqp->access) & IBV_ACCESS_REMOTE_READ) ||
        (sv_mr_lookup(m->peer, w->rkey, SV_LOAD_RELAXED(&m->dqp->pd_id),
                      w->raddr, m->len, IBV_ACCESS_REMOTE_READ, &va) != 0)) {
        return sv_resp_access_error(m);
    }
    if (!sv_resp_psn_take(m)) {
        return SV_RESP_NOT_READY;
    }
    riov.iov_base = (void*)(uintptr_t)va;
    riov.iov_len  = m->len;
    return sv_resp_copy_status(sv_copy(m->peer, 0, m->liov, m->liovcnt,
                                       &riov, 1), m->len, m->liov,
                               m->liovcnt);
}

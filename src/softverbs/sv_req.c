/*
 * Requester: turns send work requests into packets on the fabric model and
 * into the responder's actions on the target, then completes them.
 *
 * A work request runs to completion inside ibv_post_send, except when the
 * target cannot take it yet (RNR, or an RC target not in RTR): it then waits
 * in the QP's deferred queue, with everything behind it, and is retried from
 * later post/poll calls when its timer expires, as a NIC retries.  Message
 * timing comes from the model. A receive completion becomes visible when
 * the last packet arrives; the send completion as a NIC gives it: RC when
 * the ACK of the last packet is back (after go-back-N recovered every
 * loss), a READ when its response arrived, UC and UD when the last packet
 * left the sender's link (nothing answers them).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { SV_REQ_DONE, SV_REQ_DEFER };

/* IB min RNR NAK timer encoding (spec table 45), in ns */
static const uint64_t sv_rnr_ns[32] = {
    655360000, 10000, 20000, 30000, 40000, 60000, 80000, 120000,
    160000, 240000, 320000, 480000, 640000, 960000, 1280000, 1920000,
    2560000, 3840000, 5120000, 7680000, 10240000, 15360000, 20480000,
    30720000, 40960000, 61440000, 81920000, 122880000, 163840000,
    245760000, 327680000, 491520000
};

#define SV_SEND_FLAGS (IBV_SEND_FENCE | IBV_SEND_SIGNALED | \
                       IBV_SEND_SOLICITED | IBV_SEND_INLINE | \
                       IBV_SEND_IP_CSUM)

typedef struct sv_wire {
    uint64_t ts;       /* last packet arrived (or was lost, or gave up) */
    uint64_t sent;     /* the last packet left the sender's link */
    uint64_t ack;      /* RC: an ACK's or NAK's way back (0: UC/UD) */
    uint64_t first;    /* RC: the first packet to arrive did (0: none) */
    uint64_t start;    /* the first try's first packet left the sender */
    uint64_t prefix;   /* UC: bytes before the first lost packet */
    int      ok;       /* 0: lost (UC/UD) or retries exhausted (RC) */
    int      ahead;    /* RC: it arrived at a time a timer set */
} sv_wire_t;

/* The packets of a message of `len` bytes: an empty one is one */
static inline uint64_t sv_req_npkts(const sv_qp_t *qp, uint64_t len)
{
    return (len == 0) ? 1 : (len + qp->mtu - 1) / qp->mtu;
}

/*
 * One message of `len` bytes from sport to dport through the model.  RC
 * recovers losses by go-back-N: a NAK when a later packet of the burst
 * arrives (the resend starts when the NAK is back), otherwise the
 * retransmission timer; every resent packet is charged to the links
 * again.  UC and UD lose the message.  A try at a time the timer set is
 * still ahead, and so is every later one: it reserves no time on the links
 * (sv_model_xmit_msg).  `ahead`: t0 itself is such a time (a READ's
 * response to a request the timer sent).
 */
static void sv_req_wire(sv_qp_t *qp, unsigned sport, unsigned dport,
                        uint32_t sqpn, uint32_t dqpn, uint64_t len,
                        uint64_t t0, int reliable, int ahead, sv_wire_t *out)
{
    sv_port_stats_t *st = sv_port_stats(qp->port->index);
    uint64_t mtu = qp->mtu, npkts, t = t0, t_nak, first = 0;
    unsigned retries = 0;
    sv_msg_fate_t fate;
    int64_t lost;

    npkts    = sv_req_npkts(qp, len);
    out->ack = 0;
    if (!sv_model_active()) {
        sv_model_count(sport, dport, sqpn, dqpn, npkts,
                       len + npkts * SV_PKT_HDR, &qp->acct);
        out->ts    = t0;
        out->sent  = t0;
        out->first = t0;
        out->start = t0;
        out->ok    = 1;
        out->ahead = 0;
        return;
    }
    if (reliable) {
        out->ack = sv_model_idle_ns(dport, sport, dqpn, sqpn, SV_ACK_BYTES);
    }
    out->start = 0;
    for (;;) {
        lost = sv_model_xmit_msg(sport, dport, sqpn, dqpn, first, npkts, len,
                                 (uint32_t)mtu, SV_PKT_HDR, t, ahead, &fate,
                                 &qp->acct);
        if (out->start == 0) {
            /* the first try: its first packet's ACK is the first answer,
             * unless it was lost (the timer or a NAK then answer, below) */
            out->start = fate.start_ns;
            out->first = (lost == 0) ? 0 : fate.first_ns;
        }
        out->ts    = fate.last_ns;
        out->sent  = fate.sent_ns;
        out->ahead = ahead;
        if (lost < 0) {
            out->ok = 1;
            return;
        }
        if (!reliable) {
            out->prefix = (uint64_t)lost * mtu;
            out->ok     = 0;
            return;
        }
        if ((uint64_t)lost > first) {
            retries = 0;               /* progress resets the retry count */
        }
        t_nak = fate.nak_ns;
        if ((t_nak == 0) &&
            (qp->sq_posted - SV_LOAD(&qp->sq_retired) > 1)) {
            /* A lost tail in a stream: the next message's first packet
             * (the QP keeps the pipe full) draws the NAK, not the timer. */
            t_nak = fate.last_ns;
        }
        if (t_nak != 0) {
            t = t_nak + out->ack;
        } else {
            t     = fate.last_ns + qp->timeout_ns;
            ahead = 1;
            SV_ADD(&st->rc_timeouts, 1);
        }
        if (++retries > qp->attr.retry_cnt) {
            out->ts = t;
            out->ok = 0;
            return;
        }
        SV_ADD(&st->rc_resends, npkts - lost);
        first = lost;
    }
}

/*
 * The RDMA WRITEs of one doorbell to one peer are placed with a single
 * process_vm_writev, as a NIC fetches a posted chain in one DMA batch: CMA
 * costs microseconds per call, as much as copying 20 KB. The checks run
 * when each WR executes; the copy, the immediates' receive completions and
 * the send completions follow in WR order when the batch is flushed, which
 * happens before any other WR of the QP has an effect.
 */
#define SV_BATCH_MAX  16

typedef struct sv_batch_ent {
    sv_swqe_t     w;
    sv_msg_t      m;
    struct iovec  liov[SV_MAX_SGE];
    struct iovec  riov;
} sv_batch_ent_t;

typedef struct sv_batch {
    unsigned       n;
    sv_batch_ent_t e[SV_BATCH_MAX];
    struct iovec   liov[SV_BATCH_MAX * SV_MAX_SGE];
    struct iovec   riov[SV_BATCH_MAX];
} sv_batch_t;

static int sv_req_finish(sv_qp_t *qp, sv_swqe_t *w, sv_msg_t *m,
                         enum sv_resp r, uint64_t now);
static void sv_req_drop(sv_qp_t *qp, sv_swqe_t *w, uint64_t ts);

/* Add `v` to an iovec list, joined to the last entry when it continues it:
 * the chunks of one large message are adjacent on both sides, and the
 * kernel pins and copies one long range faster than many short ones. */
static void sv_req_iov_append(struct iovec *iov, unsigned *count,
                              const struct iovec *v)
{
    struct iovec *last = (*count > 0) ? &iov[*count - 1] : NULL;

    if ((last != NULL) &&
        ((char*)last->iov_base + last->iov_len == (char*)v->iov_base)) {
        last->iov_len += v->iov_len;
    } else {
        iov[(*count)++] = *v;
    }
}

static void sv_req_batch_flush(sv_qp_t *qp)
{
    sv_batch_t *b = qp->batch;
    sv_batch_ent_t *e;
    uint64_t total = 0;
    unsigned i, j, n, nliov = 0, nriov = 0;
    enum sv_resp r;
    ssize_t done;

    if ((b == NULL) || (b->n == 0)) {
        return;
    }
    n    = b->n;
    b->n = 0;         /* completions below may flush again: nothing left */
    for (i = 0; i < n; ++i) {
        e      = &b->e[i];
        total += e->m.len;
        for (j = 0; j < (unsigned)e->m.liovcnt; ++j) {
            sv_req_iov_append(b->liov, &nliov, &e->liov[j]);
        }
        sv_req_iov_append(b->riov, &nriov, &e->riov);
    }
    done = process_vm_writev(b->e[0].m.peer->pid, b->liov, nliov, b->riov,
                             nriov, 0);
    for (i = 0; i < n; ++i) {
        e = &b->e[i];
        if (qp->attr.qp_state == IBV_QPS_ERR) {
            sv_comp_send(qp, &e->w, IBV_WC_WR_FLUSH_ERR, qp->sq_last_ts);
            continue;
        }
        if ((done >= 0) && ((uint64_t)done == total)) {
            r = SV_RESP_OK;
        } else {
            /* something failed: place each again to find which */
            r = sv_resp_copy_status(sv_copy(e->m.peer, 1, e->liov,
                                            e->m.liovcnt, &e->riov, 1),
                                    e->m.len, e->liov, e->m.liovcnt);
        }
        if (e->m.partial) {
            /* UC cut by a loss: the prefix is placed (if it could be),
             * the message is dropped all the same */
            sv_req_drop(qp, &e->w, e->m.sent);
            continue;
        }
        if (r == SV_RESP_OK) {
            r = sv_resp_write_done(&e->m);
        }
        (void)sv_req_finish(qp, &e->w, &e->m, r, e->m.ts);
    }
}

/* Can this WR join the batch? Only what needs no reply from the target: a
 * WRITE, or on UC a WRITE with immediate (an RC one may draw an RNR NAK). */
static int sv_req_batchable(const sv_qp_t *qp, const sv_swqe_t *w)
{
    return (w->opcode == IBV_WR_RDMA_WRITE) ||
           ((w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) &&
            (qp->qp.qp_type == IBV_QPT_UC));
}

/* Queue the copy of a checked WRITE; 0 if it did, so its completion waits
 * for the flush. */
static int sv_req_batch_add(sv_qp_t *qp, sv_swqe_t *w, sv_msg_t *m,
                            uint64_t va)
{
    sv_batch_t *b = qp->batch;
    sv_batch_ent_t *e;

    if (b == NULL) {
        b = qp->batch = calloc(1, sizeof(*b));
        if (b == NULL) {
            return -1;
        }
    }
    if ((b->n > 0) && ((b->e[0].m.peer != m->peer) || (b->n == SV_BATCH_MAX))) {
        sv_req_batch_flush(qp);
    }
    e    = &b->e[b->n++];
    e->w = *w;
    e->m = *m;
    memcpy(e->liov, m->liov, m->liovcnt * sizeof(*e->liov));
    e->m.w           = &e->w;
    e->m.liov        = e->liov;
    e->riov.iov_base = (void*)(uintptr_t)va;
    e->riov.iov_len  = m->len;
    return 0;
}

/* Check a WRITE and queue its copy in the batch; 1 if it joined (its
 * completion then waits for the flush), 0 if it must be placed now. */
static int sv_req_batch_try(sv_qp_t *qp, sv_swqe_t *w, sv_msg_t *m)
{
    uint64_t va;

    return !m->peer->self && (sv_resp_write_check(m, &va) == SV_RESP_OK) &&
           (sv_req_batch_add(qp, w, m, va) == 0);
}

void sv_req_batch_free(sv_qp_t *qp)
{
    free(qp->batch);
    qp->batch = NULL;
}

static void sv_req_complete(sv_qp_t *qp, sv_swqe_t *w, enum ibv_wc_status s,
                            uint64_t ts)
{
    sv_req_batch_flush(qp);   /* earlier WRs complete first */
    sv_comp_send(qp, w, s, ts);
}

/* RC to a peer that no longer answers: all retries time out. */
static void sv_req_dead(sv_qp_t *qp, sv_swqe_t *w, uint64_t now)
{
    SV_ADD(&sv_port_stats(qp->port->index)->rc_timeouts,
           qp->attr.retry_cnt + 1);
    sv_req_complete(qp, w, IBV_WC_RETRY_EXC_ERR,
                    now + qp->timeout_ns * (qp->attr.retry_cnt + 1));
}

static void sv_req_drop(sv_qp_t *qp, sv_swqe_t *w, uint64_t ts)
{
    SV_ADD(&sv_port_stats(qp->port->index)->msg_drops, 1);
    sv_req_complete(qp, w, IBV_WC_SUCCESS, ts);
}

/* The target did not answer (QP missing or not in RTR): retry after the
 * QP timeout; the last try's timer ends it with RETRY_EXC_ERR. */
static int sv_req_defer_timeout(sv_qp_t *qp, sv_swqe_t *w, uint64_t now)
{
    if (w->retries == 0) {
        SV_ADD(&sv_port_stats(qp->port->index)->rc_timeouts, 1);
        sv_req_complete(qp, w, IBV_WC_RETRY_EXC_ERR, now + qp->timeout_ns);
        return SV_REQ_DONE;
    }
    --w->retries;
    SV_ADD(&sv_port_stats(qp->port->index)->rc_timeouts, 1);
    qp->next_try_ns = now + qp->timeout_ns;
    return SV_REQ_DEFER;
}

static int sv_req_local_iov(sv_qp_t *qp, sv_swqe_t *w, struct iovec *iov,
                            int *cnt)
{
    unsigned acc = (w->opcode == IBV_WR_RDMA_READ) ? IBV_ACCESS_LOCAL_WRITE :
                   0;
    sv_peer_t *self = sv_fabric_peer(qp->port->index);
    uint64_t va;
    uint32_t i;
    int n = 0;

    for (i = 0; i < w->num_sge; ++i) {
        const struct ibv_sge *s = &w->sg[i];

        if (s->length == 0) {
            continue;
        }
        if (w->flags & IBV_SEND_INLINE) {
            va = s->addr;
        } else if (sv_mr_lookup(self, s->lkey, qp->pd->id, s->addr,
                                s->length, acc, &va) != 0) {
            return -1;
        }
        iov[n].iov_base = (void*)(uintptr_t)va;
        iov[n].iov_len  = s->length;
        ++n;
    }
    *cnt = n;
    return 0;
}

static void sv_iov_trunc(struct iovec *iov, int *cnt, uint64_t len)
{
    int i;

    for (i = 0; i < *cnt; ++i) {
        if (len <= iov[i].iov_len) {
            iov[i].iov_len = len;
            *cnt = (len == 0) ? i : i + 1;
            return;
        }
        len -= iov[i].iov_len;
    }
}

/* `now` is the doorbell's time: a NIC takes a posted chain at once, and
 * one clock read per WR cost as much as its bookkeeping */
static int sv_req_execute(sv_qp_t *qp, sv_swqe_t *w, uint64_t now)
{
    enum ibv_qp_type type = qp->qp.qp_type;
    struct iovec liov[SV_MAX_SGE];
    sv_msg_t m = { .sqp = qp, .w = w, .liov = liov, .len = w->len };
    unsigned sport = qp->port->index;
    int batch = sv_req_batchable(qp, w);
    enum sv_resp r;
    sv_wire_t wire;
    uint64_t start;

    if (!batch) {
        sv_req_batch_flush(qp);
    }
    if (!w->started) {
        w->started  = 1;
        w->retries  = qp->attr.retry_cnt;
        w->rnr_left = qp->attr.rnr_retry;
    }
    if (sv_req_local_iov(qp, w, liov, &m.liovcnt) != 0) {
        sv_req_complete(qp, w, IBV_WC_LOC_PROT_ERR, now);
        return SV_REQ_DONE;
    }
    if ((w->len > SV_MAX_MSG) ||
        ((type == IBV_QPT_UD) && (w->len > qp->mtu))) {
        sv_req_complete(qp, w, IBV_WC_LOC_LEN_ERR, now);
        return SV_REQ_DONE;
    }
    if (type == IBV_QPT_UD) {
        m.dport = w->dport;
        m.dqpn  = w->dqpn;
    } else {
        m.dport = qp->dport;
        m.dqpn  = qp->attr.dest_qp_num;
    }

    m.peer = sv_fabric_peer(m.dport);
    if ((m.peer == NULL) || !sv_fabric_peer_alive(m.peer)) {
        if (type == IBV_QPT_RC) {
            sv_req_dead(qp, w, now);
        } else {
            sv_req_drop(qp, w, now);
        }
        return SV_REQ_DONE;
    }
    m.dqp = sv_resp_qp(m.peer, m.dport, m.dqpn);

    if (w->opcode == IBV_WR_RDMA_READ) {
        /* request out, response back on the reverse path: the response
         * is the answer, no ACK follows it */
        sv_req_wire(qp, sport, m.dport, qp->qp.qp_num, m.dqpn, 0, now, 1,
                    0, &wire);
        start = wire.start;
        if (wire.ok) {
            sv_req_wire(qp, m.dport, sport, m.dqpn, qp->qp.qp_num, w->len,
                        wire.ts, 1, wire.ahead, &wire);
        }
        wire.ack   = 0;
        wire.start = start;
    } else {
        sv_req_wire(qp, sport, m.dport, qp->qp.qp_num, m.dqpn, w->len, now,
                    type == IBV_QPT_RC, 0, &wire);
    }
    m.ts    = wire.ts;
    m.sent  = wire.sent;
    m.ack   = wire.ack;
    m.first = wire.first;
    m.start = wire.start;
    if (!wire.ok) {
        if (type == IBV_QPT_RC) {
            sv_req_complete(qp, w, IBV_WC_RETRY_EXC_ERR, wire.ts);
            return SV_REQ_DONE;
        }
        if ((type == IBV_QPT_UC) && (m.dqp != NULL) && (wire.prefix > 0) &&
            ((w->opcode == IBV_WR_RDMA_WRITE) ||
             (w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM))) {
            /* the packets before the loss were placed: with the rest of
             * the chain's copy if it can join it (a loss must not cost
             * the batch), else now, after what is batched */
            m.partial = 1;
            m.len     = wire.prefix;
            sv_iov_trunc(liov, &m.liovcnt, m.len);
            if (sv_req_batch_try(qp, w, &m)) {
                return SV_REQ_DONE;
            }
            sv_req_batch_flush(qp);
            (void)sv_resp_write(&m);
        }
        sv_req_drop(qp, w, wire.sent);  /* completes after the batch */
        return SV_REQ_DONE;
    }

    if (m.dqp == NULL) {
        r = SV_RESP_NOT_READY;
    } else if (w->opcode == IBV_WR_RDMA_READ) {
        r = sv_resp_read(&m);
    } else if ((w->opcode == IBV_WR_SEND) ||
               (w->opcode == IBV_WR_SEND_WITH_IMM)) {
        r = sv_resp_send(&m);
    } else {
        if (batch && (m.len > 0) && sv_req_batch_try(qp, w, &m)) {
            return SV_REQ_DONE;
        }
        /* refused (or no memory for a batch, or nothing to copy): the
         * earlier WRs land first, then this one the slow way, with the
         * target's reaction; an empty WRITE_WITH_IMM must not overtake */
        sv_req_batch_flush(qp);
        r = sv_resp_write(&m);
    }

    return sv_req_finish(qp, w, &m, r, now);
}

/* Did the target answer (an ACK or a NAK)? Not when its QP was missing or
 * not ready (the packets were dropped), its process gone, or the
 * requester's own buffer unreadable: no answer came back to be late. */
static int sv_resp_answered(enum sv_resp r)
{
    return (r != SV_RESP_NOT_READY) && (r != SV_RESP_DEAD) &&
           (r != SV_RESP_LOCAL);
}

/* The copies the timer resent at t_ns of a message that had arrived: a
 * READ's request, and its response once more; anything else itself */
static void sv_req_late_dup(sv_qp_t *qp, const sv_swqe_t *w,
                            const sv_msg_t *m, uint64_t t_ns, uint64_t now)
{
    unsigned sport = qp->port->index;
    uint32_t sqpn  = qp->qp.qp_num;
    uint64_t npkts = sv_req_npkts(qp, m->len);

    if (w->opcode == IBV_WR_RDMA_READ) {
        t_ns = sv_model_xmit_dup(sport, m->dport, sqpn, m->dqpn, 1, 0,
                                 (uint32_t)qp->mtu, SV_PKT_HDR, t_ns, now,
                                 &qp->acct);
        (void)sv_model_xmit_dup(m->dport, sport, m->dqpn, sqpn, npkts,
                                m->len, (uint32_t)qp->mtu, SV_PKT_HDR, t_ns,
                                now, &qp->acct);
        return;
    }
    (void)sv_model_xmit_dup(sport, m->dport, sqpn, m->dqpn, npkts, m->len,
                            (uint32_t)qp->mtu, SV_PKT_HDR, t_ns, now,
                            &qp->acct);
}

/*
 * An RC answer that comes back later than the QP's ACK timeout: the timer
 * runs from the first packet's departure, or from the QP's previous answer
 * when one was still due then, to the first packet's ACK (a READ: its
 * response). Each timeout in between makes a NIC resend what it sent
 * since, go-back-N, for nothing; `retry_cnt` timeouts in a row fail the
 * WR, although its data arrived. The message's resent packets are counted
 * and take link time where the links are busy when they go
 * (sv_model_xmit_dup). Returns 1 if the WR fails; *ts is then when.
 */
static int sv_req_late(sv_qp_t *qp, const sv_swqe_t *w, const sv_msg_t *m,
                       uint64_t now, uint64_t *ts)
{
    sv_port_stats_t *st = sv_port_stats(qp->port->index);
    uint64_t start      = (qp->ack_clock_ns > m->start) ? qp->ack_clock_ns :
                          m->start;
    uint64_t answer     = m->first + m->ack;
    uint64_t late, resent, k;

    if (*ts > qp->ack_clock_ns) {
        qp->ack_clock_ns = *ts;
    }
    if ((m->first == 0) || (answer <= start + qp->timeout_ns)) {
        return 0;
    }
    late = (answer - start) / qp->timeout_ns;
    if (late > qp->attr.retry_cnt) {
        late = qp->attr.retry_cnt + 1;
        *ts  = start + late * qp->timeout_ns;
    }
    /* the expiry past retry_cnt fails the WR instead of resending */
    resent = (late > qp->attr.retry_cnt) ? qp->attr.retry_cnt : late;
    for (k = 1; k <= resent; ++k) {
        sv_req_late_dup(qp, w, m, start + k * qp->timeout_ns, now);
    }
    SV_ADD(&st->rc_timeouts, late);
    SV_ADD(&st->rc_late_acks, late);
    SV_ADD(&st->rc_resends, resent * sv_req_npkts(qp, m->len));
    return late > qp->attr.retry_cnt;
}

/* What the requester sees of the target's answer r, and when: RC once the
 * ACK or NAK is back, UC/UD once the last packet left. */
static int sv_req_finish(sv_qp_t *qp, sv_swqe_t *w, sv_msg_t *m,
                         enum sv_resp r, uint64_t now)
{
    enum ibv_qp_type type = qp->qp.qp_type;
    unsigned sport        = qp->port->index;
    uint64_t ts           = (type == IBV_QPT_RC) ? m->ts + m->ack : m->sent;

    if ((type == IBV_QPT_RC) && sv_resp_answered(r) &&
        sv_req_late(qp, w, m, now, &ts)) {
        sv_req_complete(qp, w, IBV_WC_RETRY_EXC_ERR, ts);
        return SV_REQ_DONE;
    }
    if (r == SV_RESP_OK) {
        sv_req_complete(qp, w, IBV_WC_SUCCESS, ts);
        return SV_REQ_DONE;
    }
    if (r == SV_RESP_DEAD) {
        sv_fabric_peer_dead(m->peer);
    }
    if (r == SV_RESP_LOCAL) {
        /* any QP type: the NIC could not read (or write) its own side */
        sv_req_complete(qp, w, IBV_WC_LOC_PROT_ERR, ts);
        return SV_REQ_DONE;
    }
    if (type != IBV_QPT_RC) {
        sv_req_drop(qp, w, ts);      /* UC/UD: silently discarded */
        return SV_REQ_DONE;
    }
    switch (r) {
    case SV_RESP_RNR:
        SV_ADD(&sv_port_stats(sport)->rnr_naks, 1);
        if (qp->attr.rnr_retry != 7) {
            if (w->rnr_left == 0) {
                sv_req_complete(qp, w, IBV_WC_RNR_RETRY_EXC_ERR, ts);
                return SV_REQ_DONE;
            }
            --w->rnr_left;
        }
        /* the RNR NAK's timer runs from its arrival */
        qp->next_try_ns = ts +
                          sv_rnr_ns[SV_LOAD_RELAXED(&m->dqp->min_rnr_timer) &
                                    31];
        return SV_REQ_DEFER;
    case SV_RESP_NOT_READY:
        return sv_req_defer_timeout(qp, w, now);
    case SV_RESP_ACCESS:
        sv_req_complete(qp, w, IBV_WC_REM_ACCESS_ERR, ts);
        return SV_REQ_DONE;
    case SV_RESP_INV_REQ:
        sv_req_complete(qp, w, IBV_WC_REM_INV_REQ_ERR, ts);
        return SV_REQ_DONE;
    case SV_RESP_OP_ERR:
        sv_req_complete(qp, w, IBV_WC_REM_OP_ERR, ts);
        return SV_REQ_DONE;
    default:
        sv_req_dead(qp, w, now);
        return SV_REQ_DONE;
    }
}

static void sv_swqe_release(sv_swqe_t *w)
{
    free(w->sg_copy);
    free(w->inl_copy);
    w->sg_copy  = NULL;
    w->inl_copy = NULL;
}

static void sv_req_pend_add(sv_qp_t *qp)
{
    sv_port_t *port = qp->port;

    pthread_mutex_lock(&port->pend_lock);
    if (!qp->on_pend_list) {
        qp->on_pend_list = 1;
        qp->pend_next    = port->pend_list;
        port->pend_list  = qp;
        __atomic_fetch_add(&port->npending, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&port->pend_lock);
}

/* Keep a copy of `w` (SGEs, inline data) at the tail of the deferred queue. */
static int sv_req_defer(sv_qp_t *qp, sv_swqe_t *w)
{
    uint32_t size;
    sv_swqe_t *d;
    uint64_t off = 0;
    uint32_t i;

    if (qp->pend == NULL) {
        size     = sv_roundup_pow2(qp->cap.max_send_wr + 1);
        qp->pend = calloc(size, sizeof(*qp->pend));
        if (qp->pend == NULL) {
            return -1;
        }
        qp->pend_size = size;
    }
    d  = &qp->pend[qp->pend_tail & (qp->pend_size - 1)];
    *d = *w;
    d->sg_copy  = NULL;
    d->inl_copy = NULL;
    if (w->flags & IBV_SEND_INLINE) {
        d->inl_copy = malloc(w->len ? w->len : 1);
        d->sg_copy  = malloc(sizeof(struct ibv_sge));
        if ((d->inl_copy == NULL) || (d->sg_copy == NULL)) {
            sv_swqe_release(d);
            return -1;
        }
        for (i = 0; i < w->num_sge; ++i) {
            if (w->sg[i].length > 0) {
                memcpy((char*)d->inl_copy + off,
                       (void*)(uintptr_t)w->sg[i].addr, w->sg[i].length);
            }
            off += w->sg[i].length;
        }
        d->sg_copy->addr   = (uintptr_t)d->inl_copy;
        d->sg_copy->length = w->len;
        d->sg_copy->lkey   = 0;
        d->num_sge         = 1;
    } else if (w->num_sge > 0) {
        d->sg_copy = malloc(w->num_sge * sizeof(struct ibv_sge));
        if (d->sg_copy == NULL) {
            return -1;
        }
        memcpy(d->sg_copy, w->sg, w->num_sge * sizeof(struct ibv_sge));
    }
    d->sg = d->sg_copy;
    ++qp->pend_tail;
    sv_req_pend_add(qp);
    return 0;
}

/* Called with the SQ lock held. */
static void sv_req_progress_locked(sv_qp_t *qp)
{
    uint64_t now = sv_now_ns();
    sv_swqe_t *w;

    while (qp->pend_head != qp->pend_tail) {
        if (now < qp->next_try_ns) {
            break;
        }
        w = &qp->pend[qp->pend_head & (qp->pend_size - 1)];
        ++qp->pend_head;
        if (qp->attr.qp_state == IBV_QPS_ERR) {
            sv_comp_send(qp, w, IBV_WC_WR_FLUSH_ERR, qp->sq_last_ts);
        } else if (sv_req_execute(qp, w, now) == SV_REQ_DEFER) {
            --qp->pend_head;
            break;
        }
        sv_swqe_release(w);
    }
    sv_req_batch_flush(qp);
    sv_model_acct_flush(&qp->acct);
}

void sv_req_progress(sv_qp_t *qp)
{
    if (pthread_spin_trylock(&qp->sq_lock) != 0) {
        return;
    }
    sv_req_progress_locked(qp);
    pthread_spin_unlock(&qp->sq_lock);
}

/* SQ lock held: complete (flush) or, in RESET, discard deferred work. */
void sv_req_flush(sv_qp_t *qp)
{
    uint64_t now = sv_now_ns();
    sv_swqe_t *w;

    sv_req_batch_flush(qp);     /* older than anything pending */
    while (qp->pend_head != qp->pend_tail) {
        w = &qp->pend[qp->pend_head++ & (qp->pend_size - 1)];
        if (qp->attr.qp_state != IBV_QPS_RESET) {
            sv_comp_send(qp, w, IBV_WC_WR_FLUSH_ERR, now);
        }
        sv_swqe_release(w);
    }
}

static int sv_req_check(sv_qp_t *qp, struct ibv_send_wr *wr, uint64_t *len)
{
    enum ibv_qp_type type = qp->qp.qp_type;
    uint64_t total = 0;
    int i;

    if ((wr->num_sge < 0) || (wr->num_sge > SV_MAX_SGE) ||
        (wr->send_flags & ~SV_SEND_FLAGS)) {
        return EINVAL;
    }
    switch (wr->opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        break;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        if (type == IBV_QPT_UD) {
            return EINVAL;
        }
        break;
    case IBV_WR_RDMA_READ:
        if ((type != IBV_QPT_RC) || (wr->send_flags & IBV_SEND_INLINE)) {
            return EINVAL;
        }
        break;
    default:
        return EINVAL;   /* atomics, MW binds, TSO: not supported */
    }
    for (i = 0; i < wr->num_sge; ++i) {
        total += wr->sg_list[i].length;
    }
    if ((wr->send_flags & IBV_SEND_INLINE) &&
        (total > qp->cap.max_inline_data)) {
        return EINVAL;
    }
    if ((type == IBV_QPT_UD) && (wr->wr.ud.ah == NULL)) {
        return EINVAL;
    }
    if (qp->sq_posted - __atomic_load_n(&qp->sq_retired, __ATOMIC_ACQUIRE) >=
        qp->cap.max_send_wr) {
        return ENOMEM;
    }
    *len = total;
    return 0;
}

int sv_req_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
                     struct ibv_send_wr **bad)
{
    sv_qp_t *qp = sv_qp_of(ibqp);
    sv_port_stats_t *st = sv_port_stats(qp->port->index);
    uint64_t nwr = 0, bytes = 0, now = sv_now_ns();
    sv_swqe_t w;
    int ret = 0;

    SV_ADD(&st->doorbells, 1);
    if (SV_LOAD_RELAXED(&qp->port->seg->err_pending) != qp->port->err_seen) {
        sv_port_progress(qp->port);
    }
    pthread_spin_lock(&qp->sq_lock);
    if ((qp->attr.qp_state != IBV_QPS_RTS) &&
        (qp->attr.qp_state != IBV_QPS_ERR) &&
        (qp->attr.qp_state != IBV_QPS_SQD)) {
        ret = EINVAL;
        goto out;
    }
    if (qp->pend_head != qp->pend_tail) {
        sv_req_progress_locked(qp);
    }
    for (; wr != NULL; wr = wr->next) {
        memset(&w, 0, sizeof(w));
        ret = sv_req_check(qp, wr, &w.len);
        if (ret != 0) {
            break;
        }
        w.wr_id   = wr->wr_id;
        w.opcode  = wr->opcode;
        w.flags   = wr->send_flags;
        w.imm     = wr->imm_data;
        w.num_sge = wr->num_sge;
        w.sg      = wr->sg_list;
        if (ibqp->qp_type == IBV_QPT_UD) {
            sv_ah_t *ah = (sv_ah_t*)wr->wr.ud.ah;

            w.dport = ah->dport;
            w.dqpn  = wr->wr.ud.remote_qpn & 0xffffff;
            w.qkey  = (wr->wr.ud.remote_qkey & SV_QKEY_PRIVILEGED) ?
                      qp->attr.qkey : wr->wr.ud.remote_qkey;
            w.sl    = ah->attr.sl;
        } else {
            w.raddr = wr->wr.rdma.remote_addr;
            w.rkey  = wr->wr.rdma.rkey;
            w.sl    = qp->attr.ah_attr.sl;
        }
        w.seq = qp->sq_posted;
        qp->sq_rec[w.seq & qp->sq_mask] = (sv_sq_rec_t){
            .wr_id = w.wr_id, .len = (uint32_t)w.len, .opcode = w.opcode };
        __atomic_store_n(&qp->sq_posted, w.seq + 1, __ATOMIC_RELAXED);
        nwr++;
        bytes += w.len;
        if (qp->attr.qp_state == IBV_QPS_ERR) {
            sv_req_batch_flush(qp);
            sv_comp_send(qp, &w, IBV_WC_WR_FLUSH_ERR, now);
        } else if ((qp->pend_head != qp->pend_tail) ||
                   (sv_req_execute(qp, &w, now) == SV_REQ_DEFER)) {
            if (sv_req_defer(qp, &w) != 0) {
                __atomic_store_n(&qp->sq_posted, w.seq, __ATOMIC_RELAXED);
                ret = ENOMEM;
                break;
            }
        }
    }
    sv_req_batch_flush(qp);
    sv_model_acct_flush(&qp->acct);
out:
    pthread_spin_unlock(&qp->sq_lock);
    SV_ADD(&st->wrs, nwr);
    SV_ADD(&st->msg_bytes, bytes);
    if (ret != 0) {
        *bad = wr;
    }
    return ret;
}

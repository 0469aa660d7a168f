/*
 * A port's upkeep, run from its owner's verbs calls (poll, post, a wait on
 * a completion channel) as a NIC's firmware would run it: QPs a peer moved
 * to ERR, deferred sends, SRQ limits, receive WQEs whose claimer died, and
 * the shared fields only the owner writes put back if someone else did.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_verbs.h"

/* Every SV_TEND_EVERY progress calls, at most every SV_TEND_NS: complete
 * with an error the receive WQEs whose claimer died, restore the shared
 * fields. Counted calls keep the clock off a busy poller's path. */
#define SV_TEND_EVERY 64
#define SV_TEND_NS    (100ull * 1000 * 1000)

/* The async event a peer asked for when it moved our QP to ERR (+1): only
 * those a responder raises; anything else a peer wrote is a fatal error. */
static enum ibv_event_type sv_port_err_event(uint8_t ev)
{
    switch (ev - 1) {
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_QP_REQ_ERR:
        return (enum ibv_event_type)(ev - 1);
    default:
        return IBV_EVENT_QP_FATAL;
    }
}

/* Store `v` in a shared field unless it holds it already (a store would
 * take the cache line from the peers that read it). */
#define SV_HEAL(_field, _v) \
    do { \
        if (SV_LOAD_RELAXED(&(_field)) != (_v)) { \
            SV_STORE(&(_field), (_v)); \
        } \
    } while (0)

static void sv_port_heal_rq(sv_rq_ring_t *q, const sv_rq_t *rq)
{
    SV_HEAL(q->size, rq->size);
    SV_HEAL(q->max_sge, rq->max_sge);
    SV_HEAL(q->wqe_size, rq->wqe_size);
    SV_HEAL(q->ring_off, rq->ring_off);
}

/* What a QP's entry says that never changes after ibv_create_qp. (State,
 * keys and access change in ibv_modify_qp, unlocked: not restored.) */
static void sv_port_heal_qp(sv_qp_t *qp)
{
    sv_qp_shm_t *e = qp->shm;

    SV_HEAL(e->qpn, qp->qp.qp_num);
    SV_HEAL(e->type, (uint8_t)qp->qp.qp_type);
    SV_HEAL(e->pd_id, qp->pd->id);
    SV_HEAL(e->rcq, (uint16_t)qp->rcq->idx);
    SV_HEAL(e->srq, (uint16_t)((qp->srq != NULL) ? qp->srq->idx + 1 : 0));
    if (qp->srq == NULL) {
        sv_port_heal_rq(&e->rq, &qp->rq);
    }
}

/* Called with port->lock held: MR entries change under it only. */
static void sv_port_heal_mrs(sv_port_t *port)
{
    const sv_mr_shadow_t *sh = sv_fabric_peer(port->index)->shadow;
    sv_mr_shm_t *e;
    unsigned i;

    for (i = 0; i < SV_MAX_MR; ++i) {
        e = &port->seg->mr[i];
        if (sh[i].key == 0) {
            SV_HEAL(e->key, 0);
            continue;
        }
        if ((SV_LOAD_RELAXED(&e->key) == sh[i].key) &&
            (e->vaddr == sh[i].vaddr) && (e->iova == sh[i].iova) &&
            (e->length == sh[i].length) && (e->pd_id == sh[i].pd_id) &&
            (e->access == sh[i].access)) {
            continue;
        }
        SV_STORE(&e->key, 0);      /* invalid while it is rewritten */
        e->vaddr  = sh[i].vaddr;
        e->iova   = sh[i].iova;
        e->length = sh[i].length;
        e->pd_id  = sh[i].pd_id;
        e->access = sh[i].access;
        SV_STORE(&e->key, sh[i].key);
    }
}

/* Called with port->lock held. */
static void sv_port_heal(sv_port_t *port)
{
    sv_srq_t *srq;
    sv_cq_t *cq;
    unsigned i;

    for (i = SV_FIRST_QP_IDX; i < SV_MAX_QP; ++i) {
        if ((port->qp[i] != NULL) && port->qp[i]->ready) {
            sv_port_heal_qp(port->qp[i]);
        }
    }
    for (i = 0; i < SV_MAX_SRQ; ++i) {
        srq = port->srq[i];
        if ((srq != NULL) && srq->ready) {
            SV_HEAL(srq->shm->valid, 1);
            SV_HEAL(srq->shm->pd_id, srq->pd->id);
            sv_port_heal_rq(&srq->shm->q, &srq->rq);
        }
    }
    for (i = 0; i < SV_MAX_CQ; ++i) {
        cq = port->cq[i];
        if ((cq != NULL) && cq->ready) {
            SV_HEAL(port->seg->cq[i].valid, 1);
            SV_HEAL(port->seg->cq[i].token, cq->token);
            sv_cq_heal(cq);
        }
    }
    sv_port_heal_mrs(port);
}

/* One pass of the upkeep (a function of its own: what it costs is per
 * SV_TEND_NS, not per call, and profiles can tell it apart). */
static void __attribute__((noinline)) sv_port_tend_pass(sv_port_t *port)
{
    unsigned i;

    pthread_mutex_lock(&port->lock);
    sv_port_heal(port);
    for (i = SV_FIRST_QP_IDX; i < SV_MAX_QP; ++i) {
        if ((port->qp[i] != NULL) && port->qp[i]->ready) {
            sv_qp_reap(port->qp[i]);
        }
    }
    for (i = 0; i < SV_MAX_SRQ; ++i) {
        if ((port->srq[i] != NULL) && port->srq[i]->ready) {
            sv_srq_reap(port->srq[i]);
        }
    }
    pthread_mutex_unlock(&port->lock);
}

void sv_port_tend(sv_port_t *port, int force)
{
    uint32_t n = __atomic_load_n(&port->nprogress, __ATOMIC_RELAXED) + 1;
    uint64_t now;

    __atomic_store_n(&port->nprogress, n, __ATOMIC_RELAXED);
    if (!force && ((n % SV_TEND_EVERY) != 0)) {
        return;
    }
    now = sv_now_ns();
    if (now - __atomic_load_n(&port->tend_ns, __ATOMIC_RELAXED) <
        SV_TEND_NS) {
        return;
    }
    __atomic_store_n(&port->tend_ns, now, __ATOMIC_RELAXED);
    sv_port_tend_pass(port);
}

/* QPs a peer moved to ERR (remote error) follow: flushed, and the async
 * event the peer asked for. */
static void sv_port_remote_errors(sv_port_t *port)
{
    sv_qp_t *qp;
    unsigned i;
    uint8_t ev;

    pthread_mutex_lock(&port->lock);
    for (i = SV_FIRST_QP_IDX; i < SV_MAX_QP; ++i) {
        qp = port->qp[i];
        if ((qp == NULL) || !qp->ready || (qp->attr.qp_state == IBV_QPS_ERR) ||
            (SV_LOAD(&qp->shm->state) != IBV_QPS_ERR)) {
            continue;
        }
        ev = SV_LOAD(&qp->shm->err_event);
        sv_qp_to_err(qp, 0);
        if (ev != 0) {
            sv_device_async_event(sv_ctx_of(qp->qp.context),
                                  sv_port_err_event(ev), &qp->qp);
        }
    }
    pthread_mutex_unlock(&port->lock);
}

void sv_port_progress(sv_port_t *port)
{
    uint32_t err = SV_LOAD(&port->seg->err_pending);
    sv_qp_t *qp, **pp;

    if (err != port->err_seen) {
        port->err_seen = err;
        sv_port_remote_errors(port);
    }
    if (SV_LOAD(&port->srq_armed) != 0) {
        sv_srq_check_limits(port);
    }
    sv_port_tend(port, 0);
    if (SV_LOAD(&port->npending) == 0) {
        return;
    }
    if (pthread_mutex_trylock(&port->pend_lock) != 0) {
        return;
    }
    for (pp = &port->pend_list; (qp = *pp) != NULL;) {
        sv_req_progress(qp);
        if (qp->pend_head == qp->pend_tail) {
            *pp = qp->pend_next;
            qp->on_pend_list = 0;
            __atomic_fetch_sub(&port->npending, 1, __ATOMIC_RELEASE);
        } else {
            pp = &qp->pend_next;
        }
    }
    pthread_mutex_unlock(&port->pend_lock);
}

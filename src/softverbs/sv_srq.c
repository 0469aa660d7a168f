/*
 * Shared receive queues: a receive queue (sv_rq.c) in the port segment that
 * consume from, like a QP's own receive queue.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct ibv_srq *sv_srq_create(struct ibv_pd *ibpd,
                              struct ibv_srq_init_attr *attr)
{
    sv_port_t *port = sv_ctx_of(ibpd->context)->port;
    sv_srq_shm_t *e = NULL;
    sv_srq_t *srq;
    int ret, slot;

    if ((attr->attr.max_wr == 0) || (attr->attr.max_wr > SV_MAX_SRQ_WR) ||
        (attr->attr.max_sge > SV_MAX_SGE) ||
        (attr->attr.srq_limit > attr->attr.max_wr)) {
        errno = EINVAL;
        return NULL;
    }
    srq = calloc(1, sizeof(*srq));
    if (srq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_lock(&port->lock);
    slot = sv_slots_take(&port->srq_slots, srq);
    if (slot < 0) {
        pthread_mutex_unlock(&port->lock);
        ret = ENOMEM;
        goto err_free;
    }
    e = &port->seg->srq[slot];
    pthread_mutex_unlock(&port->lock);

    memset(e, 0, sizeof(*e));
    ret = sv_rq_init(&srq->rq, port->index, &e->q, attr->attr.max_wr,
                     attr->attr.max_sge);
    if (ret != 0) {
        goto err_slot;
    }
    srq->port  = port;
    srq->idx   = slot;
    srq->shm   = e;
    srq->pd    = sv_pd_of(ibpd);
    e->pd_id   = srq->pd->id;
    SV_STORE(&e->valid, 1);

    srq->srq.context    = ibpd->context;
    srq->srq.srq_context = attr->srq_context;
    srq->srq.pd         = ibpd;
    srq->srq.handle     = slot;
    pthread_mutex_init(&srq->srq.mutex, NULL);
    pthread_cond_init(&srq->srq.cond, NULL);
    attr->attr.max_wr  = srq->rq.size;
    attr->attr.max_sge = srq->rq.max_sge;
    __atomic_fetch_add(&srq->pd->nobjs, 1, __ATOMIC_RELAXED);
    sv_port_get_obj(port);
    __atomic_store_n(&srq->ready, 1, __ATOMIC_RELEASE);
    return &srq->srq;

err_slot:
    pthread_mutex_lock(&port->lock);
    sv_slots_put(&port->srq_slots, slot);
    pthread_mutex_unlock(&port->lock);
err_free:
    free(srq);
    errno = ret;
    return NULL;
}

int sv_srq_modify(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
    sv_srq_t *srq = sv_srq_of(ibsrq);

    if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) {
        return EINVAL;
    }
    if (mask & IBV_SRQ_MAX_WR) {
        return EINVAL;       /* no resize (IBV_DEVICE_SRQ_RESIZE unset) */
    }
    if (mask & IBV_SRQ_LIMIT) {
        if (attr->srq_limit > srq->rq.size) {
            return EINVAL;
        }
        __atomic_store_n(&srq->limit, attr->srq_limit, __ATOMIC_RELAXED);
        SV_STORE(&srq->shm->q.limit, attr->srq_limit);
        if ((attr->srq_limit > 0) && !srq->armed) {
            srq->armed = 1;
            __atomic_fetch_add(&srq->port->srq_armed, 1, __ATOMIC_RELEASE);
        }
    }
    return 0;
}

int sv_srq_query(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
    sv_srq_t *srq = sv_srq_of(ibsrq);

    attr->max_wr    = srq->rq.size;
    attr->max_sge   = srq->rq.max_sge;
    attr->srq_limit = __atomic_load_n(&srq->limit, __ATOMIC_RELAXED);
    return 0;
}

int sv_srq_destroy(struct ibv_srq *ibsrq)
{
    sv_srq_t *srq = sv_srq_of(ibsrq);
    sv_port_t *port = srq->port;

    if (__atomic_load_n(&srq->nqps, __ATOMIC_RELAXED) > 0) {
        return EBUSY;
    }
    pthread_mutex_lock(&port->lock);
    if (srq->armed) {
        srq->armed = 0;
        __atomic_fetch_sub(&port->srq_armed, 1, __ATOMIC_RELEASE);
    }
    sv_slots_put(&port->srq_slots, srq->idx);
    pthread_mutex_unlock(&port->lock);
    SV_STORE(&srq->shm->valid, 0);
    sv_rq_cleanup(&srq->rq, port->index);
    __atomic_fetch_sub(&srq->pd->nobjs, 1, __ATOMIC_RELAXED);
    free(srq);
    sv_port_put_obj(port);
    return 0;
}

int sv_srq_post_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
                     struct ibv_recv_wr **bad)
{
    sv_srq_t *srq = sv_srq_of(ibsrq);
    sv_port_stats_t *st = sv_port_stats(srq->port->index);
    uint32_t n = 0;
    int ret;

    ret = sv_rq_post(&srq->rq, wr, bad, &n);
    SV_ADD(&st->recv_doorbells, 1);
    SV_ADD(&st->recv_wrs, n);
    return ret;
}

/* Senders consume WQEs: the owner raises SRQ_LIMIT_REACHED when it sees the
 * queue below its armed limit (then the limit is disarmed, as specified). */
void sv_srq_check_limits(sv_port_t *port)
{
    sv_srq_t *srq;
    unsigned i;

    pthread_mutex_lock(&port->lock);
    for (i = 0; i < SV_MAX_SRQ; ++i) {
        srq = port->srq[i];
        if ((srq == NULL) || !srq->armed) {
            continue;
        }
        if (sv_rq_unclaimed(&srq->rq) < srq->limit) {
            srq->armed = 0;
            srq->limit = 0;
            SV_STORE(&srq->shm->q.limit, 0);
            __atomic_fetch_sub(&port->srq_armed, 1, __ATOMIC_RELEASE);
            sv_device_async_event(sv_ctx_of(srq->srq.context),
                                  IBV_EVENT_SRQ_LIMIT_REACHED, &srq->srq);
        }
    }
    pthread_mutex_unlock(&port->lock);
}

/* A lost WQE's error completion goes to the QP its message was for, or to
 * any QP of the SRQ if that one is gone (or the claim word was garbage);
 * with no QP left on the SRQ nobody can take it: it is just freed. */
static int sv_srq_lost(void *arg, uint32_t qp_idx, uint32_t wqe, uint32_t seq)
{
    sv_srq_t *srq = arg;
    sv_port_t *port = srq->port;
    sv_qp_t *qp = (qp_idx < SV_MAX_QP) ? port->qp[qp_idx] : NULL;
    unsigned i;

    for (i = SV_FIRST_QP_IDX; (i < SV_MAX_QP) &&
         ((qp == NULL) || (qp->srq != srq) || !qp->ready); ++i) {
        qp = port->qp[i];
    }
    if ((qp == NULL) || (qp->srq != srq) || !qp->ready) {
        return 1;
    }
    return sv_comp_recv_error(qp, wqe, seq, IBV_WC_REM_ABORT_ERR);
}

/* Called with port->lock held. */
void sv_srq_reap(sv_srq_t *srq)
{
    sv_rq_reap(&srq->rq, sv_srq_lost, srq);
}

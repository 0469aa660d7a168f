/*
 * Shared receive queues: a receive ring in the port segment that senders
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
    uint32_t idx = 0, size, max_sge;
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
    max_sge         = attr->attr.max_sge ? attr->attr.max_sge : 1;
    size            = sv_roundup_pow2(attr->attr.max_wr);
    srq->ring_bytes = (size_t)size * sv_rwqe_size(max_sge);
    srq->ring_off   = sv_heap_alloc(port->index, srq->ring_bytes);
    if (srq->ring_off == 0) {
        ret = ENOMEM;
        goto err_free;
    }
    pthread_mutex_lock(&port->lock);
    slot = sv_slot_take((void *const*)port->srq, 0, SV_MAX_SRQ,
                        &port->next_srq);
    if (slot < 0) {
        pthread_mutex_unlock(&port->lock);
        ret = ENOMEM;
        goto err_heap;
    }
    idx            = slot;
    e              = &port->seg->srq[idx];
    port->srq[idx] = srq;
    pthread_mutex_unlock(&port->lock);

    pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
    srq->port    = port;
    srq->idx     = idx;
    srq->shm     = e;
    srq->ring    = (char*)port->seg + srq->ring_off;
    srq->max_wr  = size;
    srq->max_sge = max_sge;
    srq->pd      = sv_pd_of(ibpd);
    memset(&e->q, 0, sizeof(e->q));
    e->q.size     = size;
    e->q.max_sge  = max_sge;
    e->q.wqe_size = sv_rwqe_size(max_sge);
    e->q.ring_off = srq->ring_off;
    e->q.limit    = 0;     /* armed by ibv_modify_srq(IBV_SRQ_LIMIT) */
    e->pd_id      = srq->pd->id;
    SV_STORE(&e->valid, 1);

    srq->srq.context    = ibpd->context;
    srq->srq.srq_context = attr->srq_context;
    srq->srq.pd         = ibpd;
    srq->srq.handle     = idx;
    pthread_mutex_init(&srq->srq.mutex, NULL);
    pthread_cond_init(&srq->srq.cond, NULL);
    attr->attr.max_wr  = size;
    attr->attr.max_sge = max_sge;
    __atomic_fetch_add(&srq->pd->nobjs, 1, __ATOMIC_RELAXED);
    sv_port_get_obj(port);
    return &srq->srq;

err_heap:
    sv_heap_free(port->index, srq->ring_off, srq->ring_bytes);
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
        if (attr->srq_limit > srq->max_wr) {
            return EINVAL;
        }
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

    attr->max_wr    = srq->max_wr;
    attr->max_sge   = srq->max_sge;
    attr->srq_limit = SV_LOAD(&srq->shm->q.limit);
    return 0;
}

int sv_srq_destroy(struct ibv_srq *ibsrq)
{
    sv_srq_t *srq = sv_srq_of(ibsrq);
    sv_port_t *port = srq->port;

    if (__atomic_load_n(&srq->nqps, __ATOMIC_RELAXED) > 0) {
        return EBUSY;
    }
    SV_STORE(&srq->shm->valid, 0);
    pthread_mutex_lock(&port->lock);
    if (srq->armed) {
        srq->armed = 0;
        __atomic_fetch_sub(&port->srq_armed, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&port->lock);
    pthread_mutex_lock(&port->lock);
    port->srq[srq->idx] = NULL;
    pthread_mutex_unlock(&port->lock);
    sv_heap_free(port->index, srq->ring_off, srq->ring_bytes);
    __atomic_fetch_sub(&srq->pd->nobjs, 1, __ATOMIC_RELAXED);
    pthread_spin_destroy(&srq->lock);
    free(srq);
    sv_port_put_obj(port);
    return 0;
}

int sv_srq_post_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
                     struct ibv_recv_wr **bad)
{
    sv_srq_t *srq = sv_srq_of(ibsrq);
    sv_rq_ring_t *q = &srq->shm->q;
    uint32_t wqe_size = q->wqe_size, n = 0;
    uint64_t tail;
    sv_rwqe_t *s;
    int ret = 0;

    pthread_spin_lock(&srq->lock);
    tail = q->tail;
    for (; wr != NULL; wr = wr->next, ++n) {
        if ((wr->num_sge < 0) || ((uint32_t)wr->num_sge > srq->max_sge)) {
            ret = EINVAL;
            break;
        }
        if (tail - SV_LOAD(&q->head) >= srq->max_wr) {
            ret = ENOMEM;
            break;
        }
        s = (sv_rwqe_t*)((char*)srq->ring +
                         (size_t)(tail & (srq->max_wr - 1)) * wqe_size);
        s->wr_id   = wr->wr_id;
        s->num_sge = wr->num_sge;
        if (wr->num_sge > 0) {
            memcpy(s->sge, wr->sg_list, wr->num_sge * sizeof(*s->sge));
        }
        ++tail;
    }
    SV_STORE(&q->tail, tail);
    pthread_spin_unlock(&srq->lock);
    SV_ADD(&sv_port_stats(srq->port->index)->recv_doorbells, 1);
    SV_ADD(&sv_port_stats(srq->port->index)->recv_wrs, n);
    if (ret != 0) {
        *bad = wr;
    }
    return ret;
}

/* Senders consume WQEs: the owner raises SRQ_LIMIT_REACHED when it sees the
 * queue below its armed limit (then the limit is disarmed, as specified). */
void sv_srq_check_limits(sv_port_t *port)
{
    sv_srq_t *srq;
    sv_rq_ring_t *q;
    unsigned i;

    pthread_mutex_lock(&port->lock);
    for (i = 0; i < SV_MAX_SRQ; ++i) {
        srq = port->srq[i];
        if ((srq == NULL) || !srq->armed) {
            continue;
        }
        q = &srq->shm->q;
        if (SV_LOAD(&q->tail) - SV_LOAD(&q->head) < SV_LOAD(&q->limit)) {
            srq->armed = 0;
            SV_STORE(&q->limit, 0);
            __atomic_fetch_sub(&port->srq_armed, 1, __ATOMIC_RELEASE);
            sv_device_async_event(sv_ctx_of(srq->srq.context),
                                  IBV_EVENT_SRQ_LIMIT_REACHED, &srq->srq);
        }
    }
    pthread_mutex_unlock(&port->lock);
}

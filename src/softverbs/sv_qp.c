/*
 * Queue pairs: creation, the state machine with the attribute rules of the
 * IB spec (as the kernel enforces them), queries, the receive queue.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { SV_T_RC, SV_T_UC, SV_T_UD, SV_T_LAST };

typedef struct sv_qp_trans {
    int valid;
    int req[SV_T_LAST];
    int opt[SV_T_LAST];
} sv_qp_trans_t;

#define SV_RC_UC(_rc, _uc, _ud) { [SV_T_RC] = (_rc), [SV_T_UC] = (_uc), \
                                  [SV_T_UD] = (_ud) }

#define SV_M_INIT_RCUC (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define SV_M_INIT_UD   (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)
#define SV_M_RTS_RC    (IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | \
                        IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE | \
                        IBV_QP_MIN_RNR_TIMER)
#define SV_M_RTS_UC    (IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | \
                        IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE)
#define SV_M_RTS_UD    (IBV_QP_CUR_STATE | IBV_QP_QKEY)

/* [cur][next]; transitions to RESET and ERR are always valid, no attrs */
static const sv_qp_trans_t sv_qp_trans[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
    [IBV_QPS_RESET] = {
        [IBV_QPS_INIT] = { 1, SV_RC_UC(SV_M_INIT_RCUC, SV_M_INIT_RCUC,
                                       SV_M_INIT_UD), SV_RC_UC(0, 0, 0) },
    },
    [IBV_QPS_INIT] = {
        [IBV_QPS_INIT] = { 1, SV_RC_UC(0, 0, 0),
                           SV_RC_UC(SV_M_INIT_RCUC, SV_M_INIT_RCUC,
                                    SV_M_INIT_UD) },
        [IBV_QPS_RTR]  = { 1,
            SV_RC_UC(IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                     IBV_QP_MIN_RNR_TIMER,
                     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                     IBV_QP_RQ_PSN, 0),
            SV_RC_UC(IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                     IBV_QP_PKEY_INDEX,
                     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                     IBV_QP_PKEY_INDEX,
                     IBV_QP_PKEY_INDEX | IBV_QP_QKEY) },
    },
    [IBV_QPS_RTR] = {
        [IBV_QPS_RTS] = { 1,
            SV_RC_UC(IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
                     IBV_QP_SQ_PSN, IBV_QP_SQ_PSN),
            SV_RC_UC(SV_M_RTS_RC, SV_M_RTS_UC, SV_M_RTS_UD) },
    },
    [IBV_QPS_RTS] = {
        [IBV_QPS_RTS] = { 1, SV_RC_UC(0, 0, 0),
                          SV_RC_UC(SV_M_RTS_RC, SV_M_RTS_UC, SV_M_RTS_UD) },
        [IBV_QPS_SQD] = { 1, SV_RC_UC(0, 0, 0),
                          SV_RC_UC(IBV_QP_EN_SQD_ASYNC_NOTIFY,
                                   IBV_QP_EN_SQD_ASYNC_NOTIFY,
                                   IBV_QP_EN_SQD_ASYNC_NOTIFY) },
    },
    [IBV_QPS_SQD] = {
        [IBV_QPS_RTS] = { 1, SV_RC_UC(0, 0, 0),
                          SV_RC_UC(SV_M_RTS_RC, SV_M_RTS_UC, SV_M_RTS_UD) },
        [IBV_QPS_SQD] = { 1, SV_RC_UC(0, 0, 0),
                          SV_RC_UC(SV_M_RTS_RC, SV_M_RTS_UC, SV_M_RTS_UD) },
    },
    [IBV_QPS_SQE] = {
        [IBV_QPS_RTS] = { 1, SV_RC_UC(0, 0, 0),
                          SV_RC_UC(0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
                                   IBV_QP_CUR_STATE | IBV_QP_QKEY) },
    },
};

static int sv_qp_tindex(enum ibv_qp_type t)
{
    return (t == IBV_QPT_RC) ? SV_T_RC : (t == IBV_QPT_UC) ? SV_T_UC : SV_T_UD;
}

static int sv_qp_trans_ok(enum ibv_qp_type type, enum ibv_qp_state cur,
                          enum ibv_qp_state next, int mask)
{
    const sv_qp_trans_t *t;
    int ti = sv_qp_tindex(type), req, opt;

    if ((cur > IBV_QPS_ERR) || (next > IBV_QPS_ERR)) {
        return 0;
    }
    if ((next == IBV_QPS_RESET) || (next == IBV_QPS_ERR)) {
        req = 0;
        opt = 0;
    } else {
        t = &sv_qp_trans[cur][next];
        if (!t->valid) {
            return 0;
        }
        req = t->req[ti];
        opt = t->opt[ti];
        if (ti == SV_T_UD && cur == IBV_QPS_SQE && next == IBV_QPS_RTS) {
            opt = IBV_QP_CUR_STATE | IBV_QP_QKEY;
        }
        if ((ti == SV_T_RC) && (cur == IBV_QPS_SQE)) {
            return 0;      /* RC has no SQE state */
        }
    }
    mask &= ~IBV_QP_STATE;
    if ((mask & req) != req) {
        return 0;
    }
    return (mask & ~(req | opt)) == 0;
}

sv_qp_t *sv_qp_lookup(sv_port_t *port, uint32_t qpn)
{
    uint32_t idx = qpn & 0xffff;
    sv_qp_t *qp;

    if (((qpn >> 16) != port->index) || (idx >= SV_MAX_QP)) {
        return NULL;
    }
    qp = port->qp[idx];
    return ((qp != NULL) && __atomic_load_n(&qp->ready, __ATOMIC_ACQUIRE) &&
            (qp->qp.qp_num == qpn)) ? qp : NULL;
}

struct ibv_qp *sv_qp_create(struct ibv_context *c,
                            struct ibv_qp_init_attr_ex *a)
{
    sv_port_t *port = sv_ctx_of(c)->port;
    sv_qp_shm_t *e = NULL;
    uint32_t idx = 0, rq_size = 0, rq_sge = 0;
    sv_qp_t *qp;
    int ret, slot;

    if (a->comp_mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
                         IBV_QP_INIT_ATTR_CREATE_FLAGS)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || (a->pd == NULL) ||
        (a->send_cq == NULL) || (a->recv_cq == NULL) ||
        (a->pd->context != c) || (a->send_cq->context != c) ||
        (a->recv_cq->context != c) ||
        ((a->srq != NULL) && (a->srq->context != c))) {
        errno = EINVAL;
        return NULL;
    }
    if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
        (a->create_flags != 0)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
        (a->send_ops_flags & ~(uint64_t)(IBV_QP_EX_WITH_RDMA_WRITE |
                                         IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                                         IBV_QP_EX_WITH_SEND |
                                         IBV_QP_EX_WITH_SEND_WITH_IMM |
                                         IBV_QP_EX_WITH_RDMA_READ))) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if ((a->qp_type != IBV_QPT_RC) && (a->qp_type != IBV_QPT_UC) &&
        (a->qp_type != IBV_QPT_UD)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if ((a->cap.max_send_wr > SV_MAX_QP_WR) ||
        (a->cap.max_recv_wr > SV_MAX_QP_WR) ||
        (a->cap.max_send_sge > SV_MAX_SGE) ||
        (a->cap.max_recv_sge > SV_MAX_SGE) ||
        (a->cap.max_inline_data > SV_MAX_INLINE)) {
        errno = EINVAL;
        return NULL;
    }
    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    qp->sq_mask = sv_roundup_pow2(a->cap.max_send_wr ?
                                  a->cap.max_send_wr : 1) - 1;
    qp->sq_rec  = calloc(qp->sq_mask + 1, sizeof(*qp->sq_rec));
    if (qp->sq_rec == NULL) {
        ret = ENOMEM;
        goto err_free;
    }

    pthread_mutex_lock(&port->lock);
    slot = sv_slots_take(&port->qp_slots, qp);
    if (slot < 0) {
        pthread_mutex_unlock(&port->lock);
        ret = ENOMEM;
        goto err_free;
    }
    idx           = slot;
    e             = &port->seg->qp[idx];
    pthread_mutex_unlock(&port->lock);

    memset(e, 0, sizeof(*e));
    if (a->srq == NULL) {
        ret = sv_rq_init(&qp->rq, port->index, &e->rq, a->cap.max_recv_wr,
                         a->cap.max_recv_sge);
        if (ret != 0) {
            goto err_slot;
        }
        rq_size = qp->rq.size;
        rq_sge  = qp->rq.max_sge;
    }

    pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
    qp->port       = port;
    qp->idx        = idx;
    qp->shm        = e;
    qp->pd         = sv_pd_of(a->pd);
    qp->scq        = sv_cq_of(a->send_cq);
    qp->rcq        = sv_cq_of(a->recv_cq);
    qp->srq        = (a->srq != NULL) ? sv_srq_of(a->srq) : NULL;
    qp->sq_sig_all = a->sq_sig_all;
    qp->cap        = a->cap;
    qp->cap.max_send_sge  = SV_MAX_SGE;
    qp->cap.max_recv_wr   = rq_size;
    qp->cap.max_recv_sge  = rq_sge;
    qp->mtu        = sv_model_mtu();

    e->type        = a->qp_type;
    e->state       = IBV_QPS_RESET;
    e->pd_id       = qp->pd->id;
    e->rcq         = qp->rcq->idx;
    e->srq         = (qp->srq != NULL) ? qp->srq->idx + 1 : 0;
    SV_STORE(&e->qpn, sv_qpn(port->index, idx));

    qp->qp.context    = c;
    qp->qp.qp_context = a->qp_context;
    qp->qp.pd         = a->pd;
    qp->qp.send_cq    = a->send_cq;
    qp->qp.recv_cq    = a->recv_cq;
    qp->qp.srq        = a->srq;
    qp->qp.handle     = idx;
    qp->qp.qp_num     = e->qpn;
    qp->qp.state      = IBV_QPS_RESET;
    qp->qp.qp_type    = a->qp_type;
    pthread_mutex_init(&qp->qp.mutex, NULL);
    pthread_cond_init(&qp->qp.cond, NULL);
    qp->attr.qp_state = IBV_QPS_RESET;
    qp->attr.cap      = qp->cap;
    qp->attr.path_mtu = IBV_MTU_4096;
    if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
        sv_qp_wr_init(qp);
    }
    a->cap = qp->cap;

    __atomic_fetch_add(&qp->pd->nobjs, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&qp->scq->nqps, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&qp->rcq->nqps, 1, __ATOMIC_RELAXED);
    if (qp->srq != NULL) {
        __atomic_fetch_add(&qp->srq->nqps, 1, __ATOMIC_RELAXED);
    }
    sv_port_get_obj(port);
    __atomic_store_n(&qp->ready, 1, __ATOMIC_RELEASE);
    return &qp->qp;

err_slot:
    pthread_mutex_lock(&port->lock);
    sv_slots_put(&port->qp_slots, idx);
    pthread_mutex_unlock(&port->lock);
err_free:
    free(qp->sq_rec);
    free(qp);
    errno = ret;
    return NULL;
}

static int sv_qp_check_values(sv_qp_t *qp, struct ibv_qp_attr *a, int mask,
                              unsigned *dport)
{
    if ((mask & IBV_QP_PORT) && (a->port_num != 1)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_PKEY_INDEX) && (a->pkey_index != 0)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_PATH_MTU) && (sv_mtu_bytes(a->path_mtu) == 0)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_ACCESS_FLAGS) &&
        (a->qp_access_flags & ~(IBV_ACCESS_LOCAL_WRITE |
                                IBV_ACCESS_REMOTE_WRITE |
                                IBV_ACCESS_REMOTE_READ |
                                IBV_ACCESS_REMOTE_ATOMIC))) {
        return EINVAL;
    }
    if ((mask & IBV_QP_DEST_QPN) && (a->dest_qp_num > 0xffffff)) {
        return EINVAL;
    }
    if (((mask & IBV_QP_TIMEOUT) && (a->timeout > 31)) ||
        ((mask & IBV_QP_RETRY_CNT) && (a->retry_cnt > 7)) ||
        ((mask & IBV_QP_RNR_RETRY) && (a->rnr_retry > 7)) ||
        ((mask & IBV_QP_MIN_RNR_TIMER) && (a->min_rnr_timer > 31)) ||
        ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
         (a->max_rd_atomic > SV_MAX_RD_ATOM)) ||
        ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
         (a->max_dest_rd_atomic > SV_MAX_RD_ATOM))) {
        return EINVAL;
    }
    if (mask & IBV_QP_AV) {
        if (sv_ah_dport(&a->ah_attr, dport) != 0) {
            return EINVAL;
        }
    }
    return 0;
}

static void sv_qp_reset(sv_qp_t *qp)
{
    sv_qp_psn_close(qp->shm);
    pthread_spin_lock(&qp->sq_lock);
    sv_req_flush(qp);          /* state is RESET: discards, no CQEs */
    __atomic_store_n(&qp->sq_posted, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&qp->sq_retired, 0, __ATOMIC_RELAXED);
    pthread_spin_unlock(&qp->sq_lock);
    if (qp->srq == NULL) {
        sv_rq_reset(&qp->rq);
    }
    SV_STORE(&qp->shm->recv_last_ts, 0);
    SV_STORE(&qp->shm->err_event, 0);
}

/* The owner moves its QP to ERR: what it has out completes now, flushed
 * (sv_cq_flush_qp), and so do the WRs not executed yet */
static void sv_qp_flush_due(sv_qp_t *qp)
{
    uint64_t now = sv_now_ns();

    pthread_spin_lock(&qp->sq_lock);
    if (qp->scq != NULL) {
        sv_cq_flush_qp(qp->scq, qp->qp.qp_num, now);
    }
    if (qp->sq_last_ts > now) {
        qp->sq_last_ts = now;
    }
    pthread_spin_unlock(&qp->sq_lock);
}

int sv_qp_modify(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask)
{
    sv_qp_t *qp = sv_qp_of(ibqp);
    sv_qp_shm_t *e = qp->shm;
    enum ibv_qp_state cur = qp->attr.qp_state, next;
    unsigned dport = 0;
    int ret;

    /* a peer may have moved us to ERR (remote error) */
    if (SV_LOAD(&e->state) == IBV_QPS_ERR) {
        cur = IBV_QPS_ERR;
    }
    if ((mask & IBV_QP_CUR_STATE) && (a->cur_qp_state != cur)) {
        return EINVAL;
    }
    next = (mask & IBV_QP_STATE) ? a->qp_state : cur;
    if (!sv_qp_trans_ok(ibqp->qp_type, cur, next, mask)) {
        return EINVAL;
    }
    ret = sv_qp_check_values(qp, a, mask, &dport);
    if (ret != 0) {
        return ret;
    }

    if (mask & IBV_QP_ACCESS_FLAGS) {
        qp->attr.qp_access_flags = a->qp_access_flags;
        SV_STORE(&e->access, a->qp_access_flags);
    }
    if (mask & IBV_QP_PKEY_INDEX) {
        qp->attr.pkey_index = a->pkey_index;
    }
    if (mask & IBV_QP_PORT) {
        qp->attr.port_num = a->port_num;
    }
    if (mask & IBV_QP_QKEY) {
        qp->attr.qkey = a->qkey;
        SV_STORE(&e->qkey, a->qkey);
    }
    if (mask & IBV_QP_AV) {
        qp->attr.ah_attr = a->ah_attr;
        qp->dport        = dport;
    }
    if (mask & IBV_QP_PATH_MTU) {
        uint32_t m = sv_mtu_bytes(a->path_mtu);

        qp->attr.path_mtu = a->path_mtu;
        qp->mtu = (m < sv_model_mtu()) ? m : sv_model_mtu();
    }
    if (mask & IBV_QP_DEST_QPN) {
        qp->attr.dest_qp_num = a->dest_qp_num;
        SV_STORE(&e->dest_qpn, a->dest_qp_num);
    }
    if (mask & IBV_QP_RQ_PSN) {
        qp->attr.rq_psn = a->rq_psn & SV_PSN_MASK;
        SV_STORE(&e->rq_psn, qp->attr.rq_psn);
    }
    if (mask & IBV_QP_SQ_PSN) {
        qp->attr.sq_psn = a->sq_psn & SV_PSN_MASK;
    }
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
        qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
    }
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC) {
        qp->attr.max_rd_atomic = a->max_rd_atomic;
    }
    if (mask & IBV_QP_MIN_RNR_TIMER) {
        qp->attr.min_rnr_timer = a->min_rnr_timer;
        SV_STORE(&e->min_rnr_timer, a->min_rnr_timer);
    }
    if (mask & IBV_QP_TIMEOUT) {
        qp->attr.timeout = a->timeout;
        /* 4.096 us << timeout; 0 means infinite in the spec */
        qp->timeout_ns = (a->timeout == 0) ? (4096ull << 31) :
                         (4096ull << a->timeout);
        if (qp->timeout_ns < SV_RC_TIMEOUT_MIN_NS) {
            qp->timeout_ns = SV_RC_TIMEOUT_MIN_NS;
        }
    }
    if (mask & IBV_QP_RETRY_CNT) {
        qp->attr.retry_cnt = a->retry_cnt;
    }
    if (mask & IBV_QP_RNR_RETRY) {
        qp->attr.rnr_retry = a->rnr_retry;
    }
    if (mask & IBV_QP_ALT_PATH) {
        qp->attr.alt_ah_attr    = a->alt_ah_attr;
        qp->attr.alt_pkey_index = a->alt_pkey_index;
        qp->attr.alt_port_num   = a->alt_port_num;
        qp->attr.alt_timeout    = a->alt_timeout;
    }
    if (mask & IBV_QP_PATH_MIG_STATE) {
        qp->attr.path_mig_state = a->path_mig_state;
    }
    if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) {
        qp->attr.en_sqd_async_notify = a->en_sqd_async_notify;
    }

    if (mask & IBV_QP_STATE) {
        ibqp->state = next;
    }
    if (next != cur || (mask & IBV_QP_STATE)) {
        qp->attr.qp_state = next;
        if (next == IBV_QPS_ERR) {
            sv_qp_flush_due(qp);
            sv_qp_to_err(qp, 0);
        } else {
            SV_STORE(&e->state, next);
            if (next == IBV_QPS_RESET) {
                sv_qp_reset(qp);
            }
        }
    }
    return 0;
}

int sv_qp_query(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask,
                struct ibv_qp_init_attr *init)
{
    sv_qp_t *qp = sv_qp_of(ibqp);

    *a = qp->attr;
    if (SV_LOAD(&qp->shm->state) == IBV_QPS_ERR) {
        a->qp_state = IBV_QPS_ERR;
    }
    if (qp->qp.qp_type == IBV_QPT_RC) {
        a->rq_psn = SV_LOAD(&qp->shm->rq_psn) & SV_PSN_MASK;
    }
    a->cur_qp_state = a->qp_state;
    a->cap          = qp->cap;
    memset(init, 0, sizeof(*init));
    init->qp_context = ibqp->qp_context;
    init->send_cq    = ibqp->send_cq;
    init->recv_cq    = ibqp->recv_cq;
    init->srq        = ibqp->srq;
    init->cap        = qp->cap;
    init->qp_type    = ibqp->qp_type;
    init->sq_sig_all = qp->sq_sig_all;
    if (mask & IBV_QP_STATE) {
        ibqp->state = a->qp_state;   /* as libibverbs' ibv_query_qp does */
    }
    return 0;
}

int sv_qp_destroy(struct ibv_qp *ibqp)
{
    sv_qp_t *qp = sv_qp_of(ibqp);
    sv_port_t *port = qp->port;

    pthread_mutex_lock(&port->lock);
    __atomic_store_n(&qp->ready, 0, __ATOMIC_RELAXED);   /* ours again */
    pthread_mutex_unlock(&port->lock);
    SV_STORE(&qp->shm->state, IBV_QPS_RESET);
    SV_STORE(&qp->shm->qpn, 0);
    pthread_spin_lock(&qp->sq_lock);
    qp->attr.qp_state = IBV_QPS_RESET;
    sv_req_flush(qp);
    pthread_spin_unlock(&qp->sq_lock);

    pthread_mutex_lock(&port->pend_lock);
    if (qp->on_pend_list) {
        sv_qp_t **pp;

        for (pp = &port->pend_list; *pp != NULL; pp = &(*pp)->pend_next) {
            if (*pp == qp) {
                *pp = qp->pend_next;
                __atomic_fetch_sub(&port->npending, 1, __ATOMIC_RELAXED);
                break;
            }
        }
    }
    pthread_mutex_unlock(&port->pend_lock);

    pthread_mutex_lock(&port->lock);
    sv_slots_put(&port->qp_slots, qp->idx);
    pthread_mutex_unlock(&port->lock);
    sv_rq_cleanup(&qp->rq, port->index);
    __atomic_fetch_sub(&qp->pd->nobjs, 1, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&qp->scq->nqps, 1, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&qp->rcq->nqps, 1, __ATOMIC_RELAXED);
    if (qp->srq != NULL) {
        __atomic_fetch_sub(&qp->srq->nqps, 1, __ATOMIC_RELAXED);
    }
    free(qp->pend);
    sv_req_batch_free(qp);
    free(qp->wrx);
    free(qp->wrx_sge);
    free(qp->wrx_inl);
    pthread_spin_destroy(&qp->sq_lock);
    free(qp->sq_rec);
    free(qp);
    sv_port_put_obj(port);
    return 0;
}

/* The id the owner claims its own WQEs with (flush). */
static uint32_t sv_qp_own_id(const sv_qp_t *qp)
{
    return SV_RWQE_ID(qp->port->index, qp->port->gen, qp->idx);
}

static int sv_qp_flushed(void *arg, uint32_t qp_idx, uint32_t wqe,
                         uint32_t seq)
{
    (void)qp_idx;
    return sv_comp_recv_error(arg, wqe, seq, IBV_WC_WR_FLUSH_ERR);
}

/* Consume every receive WQE with a flush error (own RQ only). */
void sv_qp_flush_rq(sv_qp_t *qp)
{
    if (qp->srq == NULL) {
        sv_rq_flush(&qp->rq, sv_qp_own_id(qp), sv_qp_flushed, qp);
    }
}

static int sv_qp_lost(void *arg, uint32_t qp_idx, uint32_t wqe, uint32_t seq)
{
    sv_qp_t *qp = arg;

    (void)qp_idx;            /* an own RQ's WQEs are all this QP's */
    return sv_comp_recv_error(qp, wqe, seq, IBV_WC_REM_ABORT_ERR);
}

/* Receive WQEs of the own RQ whose claimer died complete with an error. */
void sv_qp_reap(sv_qp_t *qp)
{
    if (qp->srq == NULL) {
        sv_rq_reap(&qp->rq, sv_qp_lost, qp);
    }
}

void sv_qp_to_err(sv_qp_t *qp, int sq_locked)
{
    /* ibv_qp.state is the user's: only modify/query write it (libibverbs
     * semantics, UCX asserts on it); the real state is ours and in shm */
    qp->attr.qp_state = IBV_QPS_ERR;
    SV_STORE(&qp->shm->state, IBV_QPS_ERR);
    sv_qp_psn_close(qp->shm);
    if (!sq_locked) {
        pthread_spin_lock(&qp->sq_lock);
    }
    sv_req_flush(qp);
    if (!sq_locked) {
        pthread_spin_unlock(&qp->sq_lock);
    }
    sv_qp_flush_rq(qp);
}

int sv_qp_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
                    struct ibv_recv_wr **bad)
{
    sv_qp_t *qp = sv_qp_of(ibqp);
    uint8_t state = qp->attr.qp_state;
    sv_port_stats_t *st;
    uint32_t n = 0;
    int ret;

    if (SV_LOAD(&qp->shm->state) == IBV_QPS_ERR) {
        state = IBV_QPS_ERR;     /* a peer moved it there */
    }
    if ((qp->srq != NULL) || (state == IBV_QPS_RESET)) {
        *bad = wr;
        return EINVAL;
    }
    ret = sv_rq_post(&qp->rq, wr, bad, &n);
    st  = sv_port_stats(qp->port->index);
    SV_ADD(&st->recv_doorbells, 1);
    SV_ADD(&st->recv_wrs, n);
    if (state == IBV_QPS_ERR) {
        sv_qp_flush_rq(qp);
    }
    return ret;
}

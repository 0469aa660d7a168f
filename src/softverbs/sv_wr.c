/*
 * The ibv_qp_ex work request builder (ibv_wr_start ... ibv_wr_complete):
 * collects ibv_send_wr entries and posts them as one chain.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static inline sv_qp_t *sv_wr_qp(struct ibv_qp_ex *qpx)
{
    return (sv_qp_t*)qpx;
}

static void sv_wr_start(struct ibv_qp_ex *qpx)
{
    sv_qp_t *qp = sv_wr_qp(qpx);

    qp->wrx_n        = 0;
    qp->wrx_inl_used = 0;
    qp->wrx_err      = 0;
}

static struct ibv_send_wr *sv_wr_new(struct ibv_qp_ex *qpx,
                                     enum ibv_wr_opcode op)
{
    sv_qp_t *qp = sv_wr_qp(qpx);
    struct ibv_send_wr *wr;

    if (qp->wrx_err) {
        return NULL;
    }
    if (qp->wrx_n == qp->wrx_cap) {
        qp->wrx_err = ENOMEM;
        return NULL;
    }
    wr = &qp->wrx[qp->wrx_n++];
    memset(wr, 0, sizeof(*wr));
    wr->wr_id      = qpx->wr_id;
    wr->send_flags = qpx->wr_flags;
    wr->opcode     = op;
    return wr;
}

static struct ibv_send_wr *sv_wr_cur(struct ibv_qp_ex *qpx)
{
    sv_qp_t *qp = sv_wr_qp(qpx);

    if (qp->wrx_err || (qp->wrx_n == 0)) {
        if (!qp->wrx_err) {
            qp->wrx_err = EINVAL;
        }
        return NULL;
    }
    return &qp->wrx[qp->wrx_n - 1];
}

static void sv_wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
                       uint32_t rkey, uint64_t raddr, __be32 imm)
{
    struct ibv_send_wr *wr = sv_wr_new(qpx, op);

    if (wr != NULL) {
        wr->wr.rdma.rkey        = rkey;
        wr->wr.rdma.remote_addr = raddr;
        wr->imm_data            = imm;
    }
}

static void sv_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
                            uint64_t raddr)
{
    sv_wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, raddr, 0);
}

static void sv_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
                             uint64_t raddr)
{
    sv_wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, raddr, 0);
}

static void sv_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
                                 uint64_t raddr, __be32 imm)
{
    sv_wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, raddr, imm);
}

static void sv_wr_send(struct ibv_qp_ex *qpx)
{
    sv_wr_new(qpx, IBV_WR_SEND);
}

static void sv_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
    struct ibv_send_wr *wr = sv_wr_new(qpx, IBV_WR_SEND_WITH_IMM);

    if (wr != NULL) {
        wr->imm_data = imm;
    }
}

static void sv_wr_unsupported(struct ibv_qp_ex *qpx)
{
    sv_wr_qp(qpx)->wrx_err = EOPNOTSUPP;
}

static void sv_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
                                 uint64_t raddr, uint64_t cmp, uint64_t swp)
{
    sv_wr_unsupported(qpx);
}

static void sv_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
                                   uint64_t raddr, uint64_t add)
{
    sv_wr_unsupported(qpx);
}

static void sv_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
                          uint32_t rkey, const struct ibv_mw_bind_info *info)
{
    sv_wr_unsupported(qpx);
}

static void sv_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
    sv_wr_unsupported(qpx);
}

static void sv_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
    sv_wr_unsupported(qpx);
}

static void sv_wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz,
                           uint16_t mss)
{
    sv_wr_unsupported(qpx);
}

static void sv_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
    sv_wr_unsupported(qpx);
}

static void sv_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
                               uint64_t raddr, const void *data)
{
    sv_wr_unsupported(qpx);
}

static void sv_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
                              uint32_t qpn, uint32_t qkey)
{
    struct ibv_send_wr *wr = sv_wr_cur(qpx);

    if (wr != NULL) {
        wr->wr.ud.ah          = ah;
        wr->wr.ud.remote_qpn  = qpn;
        wr->wr.ud.remote_qkey = qkey;
    }
}

static void sv_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t n,
                               const struct ibv_sge *sg)
{
    sv_qp_t *qp = sv_wr_qp(qpx);
    struct ibv_send_wr *wr = sv_wr_cur(qpx);

    if (wr == NULL) {
        return;
    }
    if (n > SV_MAX_SGE) {
        qp->wrx_err = EINVAL;
        return;
    }
    wr->sg_list = &qp->wrx_sge[(qp->wrx_n - 1) * SV_MAX_SGE];
    wr->num_sge = n;
    if (n > 0) {
        memcpy(wr->sg_list, sg, n * sizeof(*sg));
    }
}

static void sv_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
                          uint32_t length)
{
    struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

    sv_wr_set_sge_list(qpx, 1, &sge);
}

static void sv_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t n,
                                       const struct ibv_data_buf *buf)
{
    sv_qp_t *qp = sv_wr_qp(qpx);
    struct ibv_send_wr *wr = sv_wr_cur(qpx);
    size_t i, len = 0;
    char *dst;

    if (wr == NULL) {
        return;
    }
    for (i = 0; i < n; ++i) {
        len += buf[i].length;
    }
    if ((len > qp->cap.max_inline_data) ||
        (qp->wrx_inl_used + len >
         (size_t)qp->wrx_cap * qp->cap.max_inline_data)) {
        qp->wrx_err = EINVAL;
        return;
    }
    /* copied now: inline data may be reused as soon as this returns */
    dst = qp->wrx_inl + qp->wrx_inl_used;
    for (i = 0; i < n; ++i) {
        if (buf[i].length > 0) {
            memcpy(dst, buf[i].addr, buf[i].length);
        }
        dst += buf[i].length;
    }
    wr->sg_list          = &qp->wrx_sge[(qp->wrx_n - 1) * SV_MAX_SGE];
    wr->sg_list[0].addr  = (uintptr_t)(qp->wrx_inl + qp->wrx_inl_used);
    wr->sg_list[0].length = len;
    wr->sg_list[0].lkey  = 0;
    wr->num_sge          = 1;
    wr->send_flags      |= IBV_SEND_INLINE;
    qp->wrx_inl_used    += len;
}

static void sv_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
                                  size_t length)
{
    struct ibv_data_buf b = { .addr = addr, .length = length };

    sv_wr_set_inline_data_list(qpx, 1, &b);
}

static int sv_wr_complete(struct ibv_qp_ex *qpx)
{
    sv_qp_t *qp = sv_wr_qp(qpx);
    struct ibv_send_wr *bad;
    uint32_t i;
    int ret;

    if (qp->wrx_err) {
        ret = qp->wrx_err;
        qp->wrx_n = 0;
        return ret;
    }
    if (qp->wrx_n == 0) {
        return 0;
    }
    for (i = 0; i + 1 < qp->wrx_n; ++i) {
        qp->wrx[i].next = &qp->wrx[i + 1];
    }
    qp->wrx[qp->wrx_n - 1].next = NULL;
    ret = sv_req_post_send(&qp->qp, qp->wrx, &bad);
    qp->wrx_n = 0;
    return ret;
}

static void sv_wr_abort(struct ibv_qp_ex *qpx)
{
    sv_wr_qp(qpx)->wrx_n = 0;
}

void sv_qp_wr_init(sv_qp_t *qp)
{
    struct ibv_qp_ex *x = &qp->qpx;

    qp->wrx_cap = qp->cap.max_send_wr ? qp->cap.max_send_wr : 1;
    qp->wrx     = calloc(qp->wrx_cap, sizeof(*qp->wrx));
    qp->wrx_sge = calloc((size_t)qp->wrx_cap * SV_MAX_SGE,
                         sizeof(*qp->wrx_sge));
    qp->wrx_inl = (qp->cap.max_inline_data > 0) ?
                  malloc((size_t)qp->wrx_cap * qp->cap.max_inline_data) : NULL;
    if ((qp->wrx == NULL) || (qp->wrx_sge == NULL)) {
        qp->wrx_cap = 0;    /* every builder call then fails with ENOMEM */
    }
    qp->comp_mask                 = SV_QP_EX;
    x->wr_atomic_cmp_swp          = sv_wr_atomic_cmp_swp;
    x->wr_atomic_fetch_add        = sv_wr_atomic_fetch_add;
    x->wr_bind_mw                 = sv_wr_bind_mw;
    x->wr_local_inv               = sv_wr_local_inv;
    x->wr_rdma_read               = sv_wr_rdma_read;
    x->wr_rdma_write              = sv_wr_rdma_write;
    x->wr_rdma_write_imm          = sv_wr_rdma_write_imm;
    x->wr_send                    = sv_wr_send;
    x->wr_send_imm                = sv_wr_send_imm;
    x->wr_send_inv                = sv_wr_send_inv;
    x->wr_send_tso                = sv_wr_send_tso;
    x->wr_set_ud_addr             = sv_wr_set_ud_addr;
    x->wr_set_xrc_srqn            = sv_wr_set_xrc_srqn;
    x->wr_set_inline_data         = sv_wr_set_inline_data;
    x->wr_set_inline_data_list    = sv_wr_set_inline_data_list;
    x->wr_set_sge                 = sv_wr_set_sge;
    x->wr_set_sge_list            = sv_wr_set_sge_list;
    x->wr_start                   = sv_wr_start;
    x->wr_complete                = sv_wr_complete;
    x->wr_abort                   = sv_wr_abort;
    x->wr_atomic_write            = sv_wr_atomic_write;
}

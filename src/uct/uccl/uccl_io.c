/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The engine's verbs resources: the registered pools (one memory region per
 * mpool chunk) and the UD control QP with its buffers (the CQs and the SRQ
 * are in uccl_cq.c). Lower layers post through them and return; nothing
 * here calls up.
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/datastruct/mpool.inl>
#include <string.h>


/* ------------------------------------------------------------------------ */
/* Registered pools: every mpool chunk is one memory region                 */
/* ------------------------------------------------------------------------ */

static ucs_status_t uct_uccl_mp_chunk_alloc(ucs_mpool_t *mp, size_t *size_p,
                                            void **chunk_p)
{
    uct_uccl_iface_t *iface = *(uct_uccl_iface_t**)ucs_mpool_priv(mp);
    uct_uccl_mp_chunk_hdr_t *hdr;
    size_t size;

    size = ucs_align_up(*size_p + sizeof(*hdr), ucs_get_page_size());
    if (ucs_posix_memalign((void**)&hdr, ucs_get_page_size(), size,
                           ucs_mpool_name(mp)) != 0) {
        return UCS_ERR_NO_MEMORY;
    }

    hdr->mr = uct_uccl_md_reg_local(iface->md, hdr, size);
    if (hdr->mr == NULL) {
        ucs_free(hdr);
        return UCS_ERR_IO_ERROR;
    }

    *size_p  = size - sizeof(*hdr);
    *chunk_p = hdr + 1;
    return UCS_OK;
}

static void uct_uccl_mp_chunk_release(ucs_mpool_t *mp, void *chunk)
{
    uct_uccl_mp_chunk_hdr_t *hdr = (uct_uccl_mp_chunk_hdr_t*)chunk - 1;

    ibv_dereg_mr(hdr->mr);
    ucs_free(hdr);
}

static void uct_uccl_tx_obj_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    uct_uccl_mp_chunk_hdr_t *hdr = (uct_uccl_mp_chunk_hdr_t*)chunk - 1;
    uct_uccl_chunk_t *desc       = obj;

    memset(desc, 0, sizeof(*desc));
    desc->lkey       = hdr->mr->lkey;
    desc->wr.wr_id   = (uintptr_t)desc;
    desc->wr.sg_list = desc->sge;
}

static void uct_uccl_rx_obj_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    uct_uccl_iface_t *iface      = *(uct_uccl_iface_t**)ucs_mpool_priv(mp);
    uct_uccl_mp_chunk_hdr_t *hdr = (uct_uccl_mp_chunk_hdr_t*)chunk - 1;
    uct_uccl_rx_desc_t *desc     = obj;

    desc->lkey = hdr->mr->lkey;
    desc->pad  = iface->config.rx_pad;
}

static ucs_mpool_ops_t uct_uccl_tx_mp_ops = {
    .chunk_alloc   = uct_uccl_mp_chunk_alloc,
    .chunk_release = uct_uccl_mp_chunk_release,
    .obj_init      = uct_uccl_tx_obj_init,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

static ucs_mpool_ops_t uct_uccl_rx_mp_ops = {
    .chunk_alloc   = uct_uccl_mp_chunk_alloc,
    .chunk_release = uct_uccl_mp_chunk_release,
    .obj_init      = uct_uccl_rx_obj_init,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

static ucs_mpool_ops_t uct_uccl_op_mp_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = NULL,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

/* elem_size bytes per element; the byte at align_offset of each is aligned
 * to `alignment` */
static ucs_status_t
uct_uccl_iface_mpool_init(uct_uccl_iface_t *iface, ucs_mpool_t *mp,
                          size_t elem_size, size_t align_offset,
                          size_t alignment, unsigned grow, unsigned max,
                          ucs_mpool_ops_t *ops, const char *name)
{
    ucs_status_t status;

    status = ucs_mpool_init(mp, sizeof(iface), elem_size, align_offset,
                            alignment, grow, max, ops, name);
    if (status == UCS_OK) {
        *(uct_uccl_iface_t**)ucs_mpool_priv(mp) = iface;
    }
    return status;
}

void uct_uccl_iface_chunk_put(uct_uccl_chunk_t *chunk)
{
    ucs_mpool_put_inline(chunk);
}


/* ------------------------------------------------------------------------ */
/* Control QP: UD, connection set-up and ACKs                               */
/* ------------------------------------------------------------------------ */

static inline char *uct_uccl_ctl_rx_buf(uct_uccl_iface_t *iface, unsigned i)
{
    return iface->ctl.bufs + (size_t)i * UCT_UCCL_CTL_BUF_SIZE;
}

static inline char *uct_uccl_ctl_tx_buf(uct_uccl_iface_t *iface, unsigned i)
{
    return uct_uccl_ctl_rx_buf(iface, UCT_UCCL_CTL_RX_DEPTH + i);
}

/* wr_id of control WRs: index, with the top bit for sends */
#define UCT_UCCL_CTL_WRID_TX  (1ull << 63)

static void uct_uccl_ctl_post_recv(uct_uccl_iface_t *iface,
                                   const unsigned *idx, unsigned count)
{
    struct ibv_recv_wr wrs[UCT_UCCL_CTL_RX_DEPTH], *bad_wr;
    struct ibv_sge sges[UCT_UCCL_CTL_RX_DEPTH];
    unsigned i;
    int ret;

    if (count == 0) {
        return;
    }

    for (i = 0; i < count; ++i) {
        sges[i].addr     = (uintptr_t)uct_uccl_ctl_rx_buf(iface, idx[i]);
        sges[i].length   = UCT_UCCL_CTL_BUF_SIZE;
        sges[i].lkey     = iface->ctl.mr->lkey;
        wrs[i].wr_id     = idx[i];
        wrs[i].sg_list   = &sges[i];
        wrs[i].num_sge   = 1;
        wrs[i].next      = (i + 1 < count) ? &wrs[i + 1] : NULL;
    }

    ret = ibv_post_recv(iface->ctl.qp, wrs, &bad_wr);
    if (ret != 0) {
        ucs_error("uccl: control QP ibv_post_recv() failed: %s",
                  strerror(ret));
    }
}

void *uct_uccl_iface_ctl_tx_buf(uct_uccl_iface_t *iface, unsigned *idx_p)
{
    /* the engine reaps sends once a pass; a burst of control packets
     * (replies to many requests) takes back what completed meanwhile */
    if ((iface->ctl.tx_nfree == 0) &&
        (uct_uccl_iface_poll_ctl_tx(iface) == 0)) {
        ++iface->stats.ctl_tx_busy;
        return NULL;
    }
    *idx_p = iface->ctl.tx_free[--iface->ctl.tx_nfree];
    return uct_uccl_ctl_tx_buf(iface, *idx_p);
}

/* Post `count` control packets on `qp` in one chain (one doorbell) */
void uct_uccl_iface_ctl_post(uct_uccl_iface_t *iface, struct ibv_qp *qp,
                             struct ibv_ah **ahs, const uint32_t *qpns,
                             const unsigned *idx, const size_t *lens,
                             unsigned count)
{
    struct ibv_send_wr wrs[UCT_UCCL_CTL_TX_DEPTH], *bad_wr;
    struct ibv_sge sges[UCT_UCCL_CTL_TX_DEPTH];
    unsigned i;
    int ret;

    if (count == 0) {
        return;
    }

    for (i = 0; i < count; ++i) {
        memset(&wrs[i], 0, sizeof(wrs[i]));
        sges[i].addr                = (uintptr_t)uct_uccl_ctl_tx_buf(iface,
                                                                     idx[i]);
        sges[i].length              = lens[i];
        sges[i].lkey                = iface->ctl.mr->lkey;
        wrs[i].wr_id                = UCT_UCCL_CTL_WRID_TX | idx[i];
        wrs[i].sg_list              = &sges[i];
        wrs[i].num_sge              = 1;
        wrs[i].opcode               = IBV_WR_SEND;
        wrs[i].send_flags           = IBV_SEND_SIGNALED |
                                      IBV_SEND_SOLICITED; /* uccl_wake.c */
        wrs[i].wr.ud.ah             = ahs[i];
        wrs[i].wr.ud.remote_qpn     = qpns[i];
        wrs[i].wr.ud.remote_qkey    = UCT_UCCL_WIRE_QKEY;
        wrs[i].next                 = (i + 1 < count) ? &wrs[i + 1] : NULL;
    }

    ++iface->stats.doorbells;
    iface->stats.wrs      += count;
    iface->stats.ctl_msgs += count;
    ret = ibv_post_send(qp, wrs, &bad_wr);
    if (ret != 0) {
        ucs_error("uccl: control QP ibv_post_send() failed: %s",
                  strerror(ret));
        /* give back the buffers of what was not posted */
        i = ((bad_wr >= wrs) && (bad_wr < wrs + count)) ? bad_wr - wrs : 0;
        for (; i < count; ++i) {
            iface->ctl.tx_free[iface->ctl.tx_nfree++] = idx[i];
        }
    }
}

static ucs_status_t uct_uccl_iface_ctl_send_on(uct_uccl_iface_t *iface,
                                               struct ibv_qp *qp,
                                               struct ibv_ah *ah,
                                               uint32_t qpn, const void *pkt,
                                               size_t len)
{
    unsigned idx;
    void *buf;

    ucs_assert(len <= UCT_UCCL_WIRE_CTL_MAX);
    buf = uct_uccl_iface_ctl_tx_buf(iface, &idx);
    if (buf == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    memcpy(buf, pkt, len);
    uct_uccl_iface_ctl_post(iface, qp, &ah, &qpn, &idx, &len, 1);
    return UCS_OK;
}

/* A packet from the QP our address names: the set-up's, before the peer
 * knows the others */
ucs_status_t uct_uccl_iface_ctl_send(uct_uccl_iface_t *iface,
                                     struct ibv_ah *ah, uint32_t qpn,
                                     const void *pkt, size_t len)
{
    return uct_uccl_iface_ctl_send_on(iface, iface->ctl.qp, ah, qpn, pkt,
                                      len);
}

/* A record of a conn to its peer's control QP */
ucs_status_t uct_uccl_conn_ctl_send(uct_uccl_conn_t *conn, const void *pkt,
                                    size_t len)
{
    uct_uccl_iface_t *iface = conn->iface;

    return uct_uccl_iface_ctl_send_on(iface,
                                      uct_uccl_iface_ctl_qp(iface,
                                                            conn->ctl_spread),
                                      conn->ah, conn->remote_ctl_qpn, pkt,
                                      len);
}

/* The control QP's send completions: its buffers come back */
unsigned uct_uccl_iface_poll_ctl_tx(uct_uccl_iface_t *iface)
{
    struct ibv_wc wcs[UCT_UCCL_CTL_TX_DEPTH];
    int i, n;

    n = ibv_poll_cq(iface->ctl.cq, UCT_UCCL_CTL_TX_DEPTH, wcs);
    if (n < 0) {
        ucs_error("uccl: control CQ poll failed: %d", n);
        return 0;
    }
    for (i = 0; i < n; ++i) {
        iface->ctl.tx_free[iface->ctl.tx_nfree++] =
                wcs[i].wr_id & ~UCT_UCCL_CTL_WRID_TX;
        if (wcs[i].status != IBV_WC_SUCCESS) {
            ++iface->stats.err_cqe;
            ucs_debug("uccl: control send failed: %s",
                      ibv_wc_status_str(wcs[i].status));
        }
    }
    return n;
}

/* A control packet in the receive CQ (it serves the data QPs too, so an
 * idle engine polls one CQ); its buffer is posted again with the others
 * of the poll (uct_uccl_iface_ctl_repost) */
void uct_uccl_iface_ctl_recv(uct_uccl_iface_t *iface, const struct ibv_wc *wc)
{
    uct_uccl_ctl_src_t src;
    char *buf;

    if (ucs_unlikely(wc->wr_id >= UCT_UCCL_CTL_RX_DEPTH)) {
        ucs_error("uccl: control receive of unknown buffer %lu",
                  (unsigned long)wc->wr_id);
        return;
    }
    iface->ctl.repost[iface->ctl.nrepost++] = wc->wr_id;
    if (wc->status != IBV_WC_SUCCESS) {
        ++iface->stats.err_cqe;
        return;
    }
    if (wc->byte_len <= UCT_UCCL_GRH_LEN) {
        ++iface->stats.bad_ctl;
        return;
    }
    buf     = uct_uccl_ctl_rx_buf(iface, wc->wr_id);
    src.qpn = wc->src_qp;
    src.lid = wc->slid;
    src.gid = (wc->wc_flags & IBV_WC_GRH) ?
              (const uint8_t*)buf + UCT_UCCL_GRH_SGID : NULL;
    uct_uccl_conn_handle_ctl(iface, buf + UCT_UCCL_GRH_LEN,
                             wc->byte_len - UCT_UCCL_GRH_LEN, &src);
}

void uct_uccl_iface_ctl_repost(uct_uccl_iface_t *iface)
{
    uct_uccl_ctl_post_recv(iface, iface->ctl.repost, iface->ctl.nrepost);
    iface->ctl.nrepost = 0;
}

/* Closing: wait (briefly) for control send buffers to come back; what
 * arrives meanwhile is dropped */
static void uct_uccl_iface_ctl_reclaim(uct_uccl_iface_t *iface)
{
    uint64_t deadline = uct_uccl_now_ns() + UCT_UCCL_CLOSE_WAIT_NS;

    while ((iface->ctl.tx_nfree == 0) && (uct_uccl_now_ns() < deadline)) {
        (void)uct_uccl_iface_poll_ctl_tx(iface);
    }
}

/* The iface goes: its peers hear it now, not after their PEER_TIMEOUT. A
 * peer's ep on a conn we serve fails with UCS_ERR_CONNECTION_RESET (as a
 * closed TCP connection would); a conn of ours that an ep never closed
 * releases the peer's side. */
void uct_uccl_iface_disconnect_all(uct_uccl_iface_t *iface)
{
    uct_uccl_conn_t *conn;

    ucs_list_for_each(conn, &iface->conns, list) {
        if (conn->state != UCT_UCCL_CONN_CONNECTED) {
            continue;
        }
        if (iface->ctl.tx_nfree == 0) {
            uct_uccl_iface_ctl_reclaim(iface);
        }
        uct_uccl_conn_send_disconnect(conn, conn->passive ?
                                            UCS_ERR_CONNECTION_RESET : UCS_OK);
    }
}

/* A UD control QP, brought up to RTS; `max_recv` 0: it only sends (its
 * receive queue holds a WR that is never posted). Its QP is the caller's
 * to take from the budget. A failure is logged at `level`: an optional
 * QP the device refuses is no error. */
static struct ibv_qp *uct_uccl_ctl_qp_create(uct_uccl_iface_t *iface,
                                             unsigned max_recv,
                                             ucs_log_level_t level)
{
    struct ibv_qp_init_attr qp_init = {
        .send_cq = iface->ctl.cq,
        .recv_cq = iface->recv_cq,
        .qp_type = IBV_QPT_UD,
        .cap     = {
            .max_send_wr  = UCT_UCCL_CTL_TX_DEPTH,
            .max_recv_wr  = ucs_max(max_recv, 1),
            .max_send_sge = 1,
            .max_recv_sge = 1
        }
    };
    struct ibv_qp_attr attr = {
        .qp_state   = IBV_QPS_INIT,
        .pkey_index = 0,
        .port_num   = iface->port_num,
        .qkey       = UCT_UCCL_WIRE_QKEY
    };
    struct ibv_qp *qp;

    qp = ibv_create_qp(iface->md->pd, &qp_init);
    if (qp == NULL) {
        ucs_log(level, "uccl: cannot create a UD control QP: %m");
        return NULL;
    }
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_QKEY)) {
        goto err_modify;
    }
    attr.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE)) {
        goto err_modify;
    }
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn   = 0;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
        goto err_modify;
    }
    return qp;

err_modify:
    ucs_log(level, "uccl: cannot bring up a control QP: %m");
    ibv_destroy_qp(qp);
    return NULL;
}

/* The other control QPs, while QPs are plentiful (the budget's share
 * rule grants them all: the conns' paths need QPs that run short more)
 * and as many as the device makes; none is no error */
static void uct_uccl_ctl_alt_create(uct_uccl_iface_t *iface)
{
    unsigned want = uct_uccl_budget_take(iface->md->budget,
                                         UCT_UCCL_WIRE_CTL_ALT);

    iface->ctl.nalt = 0;
    if (want < UCT_UCCL_WIRE_CTL_ALT) {
        uct_uccl_budget_give(iface->md->budget, want);
        return;
    }
    for (; iface->ctl.nalt < want; ++iface->ctl.nalt) {
        iface->ctl.alt[iface->ctl.nalt] =
                uct_uccl_ctl_qp_create(iface, 0, UCS_LOG_LEVEL_DIAG);
        if (iface->ctl.alt[iface->ctl.nalt] == NULL) {
            break;
        }
    }
    uct_uccl_budget_give(iface->md->budget, want - iface->ctl.nalt);
}

static void uct_uccl_ctl_alt_destroy(uct_uccl_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->ctl.nalt; ++i) {
        ibv_destroy_qp(iface->ctl.alt[i]);
    }
    uct_uccl_budget_give(iface->md->budget, iface->ctl.nalt);
    iface->ctl.nalt = 0;
}

ucs_status_t uct_uccl_iface_ctl_init(uct_uccl_iface_t *iface)
{
    unsigned idx[UCT_UCCL_CTL_RX_DEPTH];
    size_t size;
    unsigned i;

    size = (size_t)(UCT_UCCL_CTL_RX_DEPTH + UCT_UCCL_CTL_TX_DEPTH) *
           UCT_UCCL_CTL_BUF_SIZE;
    if (ucs_posix_memalign((void**)&iface->ctl.bufs, ucs_get_page_size(),
                           size, "uccl_ctl_bufs") != 0) {
        return UCS_ERR_NO_MEMORY;
    }

    iface->ctl.mr = ibv_reg_mr(iface->md->pd, iface->ctl.bufs, size,
                               IBV_ACCESS_LOCAL_WRITE);
    if (iface->ctl.mr == NULL) {
        ucs_error("uccl: cannot register control buffers: %m");
        goto err_free;
    }

    /* every control QP's sends: at most TX_DEPTH buffers are out */
    iface->ctl.cq = ibv_create_cq(iface->md->ctx, UCT_UCCL_CTL_TX_DEPTH,
                                  NULL, iface->event.chan, 0);
    if (iface->ctl.cq == NULL) {
        ucs_error("uccl: cannot create control CQ: %m");
        goto err_dereg;
    }

    if (uct_uccl_budget_take(iface->md->budget, 1) == 0) {
        ucs_error("uccl: %s: no QP left for a control QP", iface->md->name);
        goto err_cq;
    }
    iface->ctl.qp = uct_uccl_ctl_qp_create(iface, UCT_UCCL_CTL_RX_DEPTH,
                                           UCS_LOG_LEVEL_ERROR);
    if (iface->ctl.qp == NULL) {
        goto err_budget;
    }
    iface->ctl.qpn  = iface->ctl.qp->qp_num;
    iface->ctl.rng  = ucs_max(iface->ctl.qpn, 1); /* seeded, not 0 */
    uct_uccl_ctl_alt_create(iface);

    for (i = 0; i < UCT_UCCL_CTL_TX_DEPTH; ++i) {
        iface->ctl.tx_free[i] = i;
    }
    iface->ctl.tx_nfree = UCT_UCCL_CTL_TX_DEPTH;

    for (i = 0; i < UCT_UCCL_CTL_RX_DEPTH; ++i) {
        idx[i] = i;
    }
    uct_uccl_ctl_post_recv(iface, idx, UCT_UCCL_CTL_RX_DEPTH);
    return UCS_OK;

err_budget:
    uct_uccl_budget_give(iface->md->budget, 1);
err_cq:
    ibv_destroy_cq(iface->ctl.cq);
err_dereg:
    ibv_dereg_mr(iface->ctl.mr);
err_free:
    ucs_free(iface->ctl.bufs);
    return UCS_ERR_IO_ERROR;
}

void uct_uccl_iface_ctl_cleanup(uct_uccl_iface_t *iface)
{
    uct_uccl_ctl_alt_destroy(iface);
    ibv_destroy_qp(iface->ctl.qp);
    uct_uccl_budget_give(iface->md->budget, 1);
    ibv_destroy_cq(iface->ctl.cq);
    ibv_dereg_mr(iface->ctl.mr);
    ucs_free(iface->ctl.bufs);
}



/* The AM handler's data is the payload in our receive buffer: aligned as
 * the user asked (am_alignment, with am_align_offset: the byte at that
 * offset is aligned; an offset without an alignment is an error, one past
 * the buffer is ignored, as in UCX's transports), else to 8 bytes. The
 * buffer's data starts on the alignment and the SEND lands `pad` bytes
 * into it. */
static ucs_status_t uct_uccl_iface_rx_layout(uct_uccl_iface_t *iface,
                                             const uct_iface_params_t *params)
{
    size_t align  = UCT_UCCL_RX_ALIGN;
    size_t offset = 0;

    if (params->field_mask & UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT) {
        align = params->am_alignment;
        if ((align == 0) || !ucs_is_pow2(align)) {
            ucs_error("uccl: AM alignment %zu is not a power of 2", align);
            return UCS_ERR_INVALID_PARAM;
        }
        offset = UCT_IFACE_PARAM_VALUE(params, am_align_offset,
                                       AM_ALIGN_OFFSET, 0ul);
        if (offset >= iface->config.rx_buf_size) {
            ucs_diag("uccl: AM alignment offset %zu ignored: the buffer has "
                     "%zu bytes", offset, iface->config.rx_buf_size);
            offset = 0;
        }
    } else if (params->field_mask & UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET) {
        ucs_error("uccl: an AM alignment offset needs an alignment");
        return UCS_ERR_INVALID_PARAM;
    }

    iface->config.rx_align = ucs_max(align, UCS_SYS_CACHE_LINE_SIZE);
    iface->config.rx_pad   = (align - ((sizeof(uct_uccl_am_hdr_t) + offset) %
                                       align)) % align;
    return UCS_OK;
}

/* The engine's memory pools: bcopy chunks, zcopy chunk headers, receive
 * buffers, operations */
ucs_status_t
uct_uccl_iface_pools_init(uct_uccl_iface_t *iface,
                          const uct_uccl_iface_config_t *config,
                          const uct_iface_params_t *params)
{
    unsigned tx_max, tx_grow;
    ucs_status_t status;

    /* TX_MAX_BUFS bounds the send buffers; a pool grows by no more than
     * it may hold */
    tx_max  = (unsigned)config->tx_mp.max_bufs; /* -1: no limit */
    tx_grow = ucs_max(config->tx_mp.bufs_grow, UCT_UCCL_TX_GROW_MIN);
    status  = uct_uccl_iface_mpool_init(iface, &iface->tx_mp,
                                        sizeof(uct_uccl_chunk_t) +
                                        iface->config.seg_size, 0,
                                        UCS_SYS_CACHE_LINE_SIZE,
                                        ucs_min(tx_grow, tx_max), tx_max,
                                        &uct_uccl_tx_mp_ops, "uccl_tx");
    if (status != UCS_OK) {
        goto err;
    }

    /* zero-copy chunks (most of the traffic) without the bcopy segment:
     * dense descriptors, not one page each. They hold no buffer, and a
     * large zcopy takes all of its chunks at once: not bounded. */
    status = uct_uccl_iface_mpool_init(iface, &iface->hdr_mp,
                                       sizeof(uct_uccl_chunk_t), 0,
                                       UCS_SYS_CACHE_LINE_SIZE,
                                       UCT_UCCL_HDR_GROW, UINT_MAX,
                                       &uct_uccl_tx_mp_ops, "uccl_tx_hdr");
    if (status != UCS_OK) {
        goto err_tx_mp;
    }

    status = uct_uccl_iface_rx_layout(iface, params);
    if (status != UCS_OK) {
        goto err_hdr_mp;
    }

    status = uct_uccl_iface_mpool_init(iface, &iface->rx_mp,
                                       sizeof(uct_uccl_rx_desc_t) +
                                       iface->config.rx_pad +
                                       iface->config.rx_buf_size,
                                       ucs_offsetof(uct_uccl_rx_desc_t, data),
                                       iface->config.rx_align,
                                       UCT_UCCL_SRQ_BATCH,
                                       config->rx_max_bufs,
                                       &uct_uccl_rx_mp_ops, "uccl_rx");
    if (status != UCS_OK) {
        goto err_hdr_mp;
    }

    status = ucs_mpool_init(&iface->op_mp, 0, sizeof(uct_uccl_op_t), 0,
                            UCS_SYS_CACHE_LINE_SIZE, 128, UINT_MAX,
                            &uct_uccl_op_mp_ops, "uccl_op");
    if (status != UCS_OK) {
        goto err_rx_mp;
    }
    return UCS_OK;

err_rx_mp:
    ucs_mpool_cleanup(&iface->rx_mp, 0);
err_hdr_mp:
    ucs_mpool_cleanup(&iface->hdr_mp, 0);
err_tx_mp:
    ucs_mpool_cleanup(&iface->tx_mp, 0);
err:
    return status;
}

void uct_uccl_iface_pools_cleanup(uct_uccl_iface_t *iface)
{
    ucs_mpool_cleanup(&iface->op_mp, 0);
    ucs_mpool_cleanup(&iface->rx_mp, 0);
    ucs_mpool_cleanup(&iface->hdr_mp, 0);
    ucs_mpool_cleanup(&iface->tx_mp, 0);
}

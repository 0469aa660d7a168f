/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 */
#include "uccl_iface.h"

#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/type/class.h>
#include <ucs/datastruct/mpool.inl>
#include <signal.h>
#include <stdio.h>
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
    if (iface->ctl.tx_nfree == 0) {
        ++iface->stats.ctl_tx_busy;
        return NULL;
    }
    *idx_p = iface->ctl.tx_free[--iface->ctl.tx_nfree];
    return uct_uccl_ctl_tx_buf(iface, *idx_p);
}

/* Post `count` control packets in one chain (one doorbell) */
void uct_uccl_iface_ctl_post(uct_uccl_iface_t *iface, struct ibv_ah **ahs,
                             const uint32_t *qpns, const unsigned *idx,
                             const size_t *lens, unsigned count)
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
        wrs[i].send_flags           = IBV_SEND_SIGNALED;
        wrs[i].wr.ud.ah             = ahs[i];
        wrs[i].wr.ud.remote_qpn     = qpns[i];
        wrs[i].wr.ud.remote_qkey    = UCT_UCCL_WIRE_QKEY;
        wrs[i].next                 = (i + 1 < count) ? &wrs[i + 1] : NULL;
    }

    ++iface->stats.doorbells;
    iface->stats.wrs += count;
    ret = ibv_post_send(iface->ctl.qp, wrs, &bad_wr);
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

ucs_status_t uct_uccl_iface_ctl_send(uct_uccl_iface_t *iface,
                                     struct ibv_ah *ah, uint32_t qpn,
                                     const void *pkt, size_t len)
{
    unsigned idx;
    void *buf;

    ucs_assert(len <= UCT_UCCL_WIRE_CTL_MAX);
    buf = uct_uccl_iface_ctl_tx_buf(iface, &idx);
    if (buf == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    memcpy(buf, pkt, len);
    uct_uccl_iface_ctl_post(iface, &ah, &qpn, &idx, &len, 1);
    return UCS_OK;
}

static unsigned uct_uccl_iface_poll_ctl(uct_uccl_iface_t *iface)
{
    struct ibv_wc wcs[UCT_UCCL_CQ_BATCH];
    unsigned repost[UCT_UCCL_CQ_BATCH];
    uct_uccl_ctl_src_t src;
    char *buf;
    unsigned i, nrepost = 0;
    int n;

    n = ibv_poll_cq(iface->ctl.cq, UCT_UCCL_CQ_BATCH, wcs);
    if (n <= 0) {
        if (n < 0) {
            ucs_error("uccl: control CQ poll failed: %d", n);
        }
        return 0;
    }

    for (i = 0; i < n; ++i) {
        if (wcs[i].wr_id & UCT_UCCL_CTL_WRID_TX) {
            iface->ctl.tx_free[iface->ctl.tx_nfree++] =
                    wcs[i].wr_id & ~UCT_UCCL_CTL_WRID_TX;
            if (wcs[i].status != IBV_WC_SUCCESS) {
                ++iface->stats.err_cqe;
                ucs_debug("uccl: control send failed: %s",
                          ibv_wc_status_str(wcs[i].status));
            }
            continue;
        }

        repost[nrepost++] = wcs[i].wr_id;
        if (wcs[i].status != IBV_WC_SUCCESS) {
            ++iface->stats.err_cqe;
            continue;
        }
        if (wcs[i].byte_len <= UCT_UCCL_GRH_LEN) {
            ++iface->stats.bad_ctl;
            continue;
        }
        buf     = uct_uccl_ctl_rx_buf(iface, wcs[i].wr_id);
        src.qpn = wcs[i].src_qp;
        src.lid = wcs[i].slid;
        src.gid = (wcs[i].wc_flags & IBV_WC_GRH) ?
                  (const uint8_t*)buf + UCT_UCCL_GRH_SGID : NULL;
        uct_uccl_conn_handle_ctl(iface, buf + UCT_UCCL_GRH_LEN,
                                 wcs[i].byte_len - UCT_UCCL_GRH_LEN, &src);
    }

    uct_uccl_ctl_post_recv(iface, repost, nrepost);
    return n;
}

/* Closing: wait (briefly) for control send buffers to come back; what
 * arrives meanwhile is dropped */
static void uct_uccl_iface_ctl_reclaim(uct_uccl_iface_t *iface)
{
    uint64_t deadline = uct_uccl_now_ns() + UCT_UCCL_CLOSE_WAIT_NS;
    struct ibv_wc wcs[UCT_UCCL_CQ_BATCH];
    unsigned repost[UCT_UCCL_CQ_BATCH];
    unsigned nrepost;
    int i, n;

    while ((iface->ctl.tx_nfree == 0) && (uct_uccl_now_ns() < deadline)) {
        n = ibv_poll_cq(iface->ctl.cq, UCT_UCCL_CQ_BATCH, wcs);
        for (i = 0, nrepost = 0; i < n; ++i) {
            if (wcs[i].wr_id & UCT_UCCL_CTL_WRID_TX) {
                iface->ctl.tx_free[iface->ctl.tx_nfree++] =
                        wcs[i].wr_id & ~UCT_UCCL_CTL_WRID_TX;
            } else {
                repost[nrepost++] = wcs[i].wr_id;
            }
        }
        uct_uccl_ctl_post_recv(iface, repost, nrepost);
    }
}

/* The iface goes: its peers hear it now, not after their PEER_TIMEOUT. A
 * peer's ep on a conn we serve fails with UCS_ERR_CONNECTION_RESET (as a
 * closed TCP connection would); a conn of ours that an ep never closed
 * releases the peer's side. */
static void uct_uccl_iface_disconnect_all(uct_uccl_iface_t *iface)
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

static ucs_status_t uct_uccl_iface_ctl_init(uct_uccl_iface_t *iface)
{
    struct ibv_qp_init_attr qp_init = {};
    struct ibv_qp_attr attr         = {};
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

    iface->ctl.cq = ibv_create_cq(iface->md->ctx,
                                  UCT_UCCL_CTL_RX_DEPTH + UCT_UCCL_CTL_TX_DEPTH,
                                  NULL, iface->event.chan, 0);
    if (iface->ctl.cq == NULL) {
        ucs_error("uccl: cannot create control CQ: %m");
        goto err_dereg;
    }

    qp_init.send_cq          = iface->ctl.cq;
    qp_init.recv_cq          = iface->ctl.cq;
    qp_init.qp_type          = IBV_QPT_UD;
    qp_init.cap.max_send_wr  = UCT_UCCL_CTL_TX_DEPTH;
    qp_init.cap.max_recv_wr  = UCT_UCCL_CTL_RX_DEPTH;
    qp_init.cap.max_send_sge = 1;
    qp_init.cap.max_recv_sge = 1;
    if (uct_uccl_budget_take(iface->md->budget, 1) == 0) {
        ucs_error("uccl: %s: no QP left for a control QP", iface->md->name);
        goto err_cq;
    }
    iface->ctl.qp = ibv_create_qp(iface->md->pd, &qp_init);
    if (iface->ctl.qp == NULL) {
        ucs_error("uccl: cannot create the UD control QP: %m");
        goto err_budget;
    }

    attr.qp_state   = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num   = iface->port_num;
    attr.qkey       = UCT_UCCL_WIRE_QKEY;
    if (ibv_modify_qp(iface->ctl.qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_QKEY)) {
        goto err_modify;
    }

    attr.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(iface->ctl.qp, &attr, IBV_QP_STATE)) {
        goto err_modify;
    }

    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn   = 0;
    if (ibv_modify_qp(iface->ctl.qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
        goto err_modify;
    }

    for (i = 0; i < UCT_UCCL_CTL_TX_DEPTH; ++i) {
        iface->ctl.tx_free[i] = i;
    }
    iface->ctl.tx_nfree = UCT_UCCL_CTL_TX_DEPTH;

    for (i = 0; i < UCT_UCCL_CTL_RX_DEPTH; ++i) {
        idx[i] = i;
    }
    uct_uccl_ctl_post_recv(iface, idx, UCT_UCCL_CTL_RX_DEPTH);
    return UCS_OK;

err_modify:
    ucs_error("uccl: cannot bring up the control QP: %m");
    ibv_destroy_qp(iface->ctl.qp);
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

static void uct_uccl_iface_ctl_cleanup(uct_uccl_iface_t *iface)
{
    ibv_destroy_qp(iface->ctl.qp);
    uct_uccl_budget_give(iface->md->budget, 1);
    ibv_destroy_cq(iface->ctl.cq);
    ibv_dereg_mr(iface->ctl.mr);
    ucs_free(iface->ctl.bufs);
}


/* ------------------------------------------------------------------------ */
/* Scheduler and progress                                                   */
/* ------------------------------------------------------------------------ */

void uct_uccl_iface_sched_add(uct_uccl_iface_t *iface, uct_uccl_conn_t *conn)
{
    if (!conn->in_sched) {
        conn->in_sched = 1;
        ucs_list_add_tail(&iface->sched, &conn->sched);
    }
}

void uct_uccl_iface_ack_add(uct_uccl_iface_t *iface, uct_uccl_conn_t *conn)
{
    if (!conn->ack_pending) {
        conn->ack_pending = 1;
        ucs_list_add_tail(&iface->ack_list, &conn->ack_link);
    }
}

/* Deficit round robin: each conn with work posts up to a quantum, then
 * goes to the back; a conn the pacing holds back leaves the list until its
 * timer (pace_wheel) or an ACK brings it back. */
static unsigned uct_uccl_iface_transmit(uct_uccl_iface_t *iface)
{
    unsigned count = 0, nconns;
    uct_uccl_conn_t *conn;

    nconns = ucs_list_length(&iface->sched);
    while ((nconns-- > 0) && !ucs_list_is_empty(&iface->sched)) {
        conn = ucs_list_extract_head(&iface->sched, uct_uccl_conn_t, sched);
        conn->in_sched = 0;
        count         += uct_uccl_tx_pump(conn, iface->config.drr_quantum);
        if ((conn->tx_queued > 0) && !uct_uccl_conn_is_paced(conn)) {
            uct_uccl_iface_sched_add(iface, conn);
        }
        uct_uccl_ep_dispatch_pending(conn);
        /* what the pending requests queued goes out now, not on the next
         * progress call */
        if (conn->tx_queued > 0) {
            count += uct_uccl_tx_pump(conn, iface->config.drr_quantum);
        }
        if (ucs_unlikely(iface->async.active) &&
            !ucs_queue_is_empty(&conn->pending_q)) {
            /* the requests a background pass may not call: the user's
             * next progress call dispatches them */
            uct_uccl_iface_sched_add(iface, conn);
        }
    }

    return count;
}

static unsigned uct_uccl_iface_poll_send(uct_uccl_iface_t *iface)
{
    struct ibv_wc wcs[UCT_UCCL_CQ_BATCH];
    int i, n;

    n = ibv_poll_cq(iface->send_cq, UCT_UCCL_CQ_BATCH, wcs);
    if (n < 0) {
        ucs_error("uccl: send CQ poll failed: %d", n);
        return 0;
    }
    iface->stats.send_cqes += n;
    for (i = 0; i < n; ++i) {
        uct_uccl_tx_completion(iface, &wcs[i]);
    }
    return n;
}

/* Drain the receive CQ in batches, at most one SRQ's worth per call: so a
 * receive queue that ran dry is seen as such (srq_posted reaches 0) */
static unsigned uct_uccl_iface_poll_recv(uct_uccl_iface_t *iface)
{
    struct ibv_wc wcs[UCT_UCCL_CQ_BATCH];
    uint64_t now       = uct_uccl_now_ns();
    unsigned total = 0;
    int i, n;

    iface->rx_since_ns = (iface->rx_poll_ns != 0) ? iface->rx_poll_ns : now;
    iface->rx_poll_ns  = now;
    do {
        n = ibv_poll_cq(iface->recv_cq, UCT_UCCL_CQ_BATCH, wcs);
        if (n < 0) {
            ucs_error("uccl: receive CQ poll failed: %d", n);
            break;
        }
        for (i = 0; i < n; ++i) {
            uct_uccl_rx_completion(iface, &wcs[i]);
        }
        total += n;
    } while ((n == UCT_UCCL_CQ_BATCH) && (total < iface->config.srq_size));

    return total;
}

#define UCT_UCCL_TIMER_NS  50000ull   /* timers are checked every 50us */

/* SIGUSR2 asks every iface for a counter dump (UCX_UCCL_STATS_DUMP=y) */
static volatile sig_atomic_t uct_uccl_dump_requests;

static void uct_uccl_sigusr2(int signo)
{
    ++uct_uccl_dump_requests;
}

static void uct_uccl_iface_dump_all(uct_uccl_iface_t *iface);

/* One run of the engine, from the user's progress call or a background
 * pass (uccl_async.c), with the async context blocked */
unsigned uct_uccl_iface_engine_progress(uct_uccl_iface_t *iface)
{
    unsigned count;
    uint64_t now;

    ++iface->busy;
    count  = uct_uccl_iface_poll_recv(iface);
    count += uct_uccl_iface_poll_ctl(iface);
    count += uct_uccl_iface_poll_send(iface);

    now = uct_uccl_now_ns();
    if (!iface->async.active) {
        iface->async.last_user = now;
    }
    if (now >= iface->next_timer) {
        iface->next_timer = now + UCT_UCCL_TIMER_NS;
        uct_uccl_conn_timers(iface, now);
        if (ucs_unlikely(iface->dump_seen != uct_uccl_dump_requests)) {
            iface->dump_seen = uct_uccl_dump_requests;
            uct_uccl_iface_dump_all(iface);
        }
    }

    /* ACKs first: a transmit may copy megabytes (on softverbs the post
     * itself moves the data), and the peer would take the wait for loss */
    count += uct_uccl_rx_flush_acks(iface, now);
    ucs_twheel_sweep(&iface->pace_wheel, ucs_get_time());
    count += uct_uccl_iface_transmit(iface);
    uct_uccl_rx_refill(iface);
    --iface->busy;
    return count;
}


/* ------------------------------------------------------------------------ */
/* UCT iface operations                                                     */
/* ------------------------------------------------------------------------ */

ucs_status_t uct_uccl_iface_query(uct_iface_h tl_iface,
                                  uct_iface_attr_t *attr)
{
    uct_uccl_iface_t *iface = ucs_derived_of(tl_iface, uct_uccl_iface_t);
    size_t seg              = iface->config.seg_size;
    size_t max_zcopy        = UCT_UCCL_MAX_ZCOPY;

    uct_base_iface_query(&iface->super, attr);
    /* an ep takes one QP of the device at least (uccl_budget.h) */
    attr->max_num_eps     = ucs_min(attr->max_num_eps,
                                    uct_uccl_budget_max(iface->md->budget));

    attr->iface_addr_len  = sizeof(uct_uccl_iface_addr_t);
    attr->device_addr_len = sizeof(uct_uccl_device_addr_t);
    attr->ep_addr_len     = 0;
    attr->max_conn_priv   = 0;
    attr->cap.flags       = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                            UCT_IFACE_FLAG_AM_SHORT |
                            UCT_IFACE_FLAG_AM_BCOPY |
                            UCT_IFACE_FLAG_AM_ZCOPY |
                            UCT_IFACE_FLAG_PUT_SHORT |
                            UCT_IFACE_FLAG_PUT_BCOPY |
                            UCT_IFACE_FLAG_PUT_ZCOPY |
                            UCT_IFACE_FLAG_GET_BCOPY |
                            UCT_IFACE_FLAG_GET_ZCOPY |
                            UCT_IFACE_FLAG_PENDING |
                            UCT_IFACE_FLAG_CB_SYNC |
                            /* UCP sends wireup messages (remote ep ids for
                             * rendezvous) only to ifaces that take async
                             * callbacks; ours are called from the user's
                             * progress, also for what the async timer's
                             * background passes found (uccl_async.c) */
                            UCT_IFACE_FLAG_CB_ASYNC |
                            UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                            UCT_IFACE_FLAG_EP_CHECK |
                            UCT_UCCL_GLUE_IFACE_FLAG_INTER_NODE;
    attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                            UCT_IFACE_FLAG_EVENT_RECV |
                            UCT_IFACE_FLAG_EVENT_FD;

    attr->cap.put.max_short       = seg;
    attr->cap.put.max_bcopy       = seg;
    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = max_zcopy;
    attr->cap.put.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.put.align_mtu       = uct_uccl_mtu_bytes(iface->config.mtu);
    attr->cap.put.max_iov         = 1;

    attr->cap.get.max_bcopy       = seg;
    attr->cap.get.min_zcopy       = 0;
    attr->cap.get.max_zcopy       = max_zcopy;
    attr->cap.get.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.get.align_mtu       = uct_uccl_mtu_bytes(iface->config.mtu);
    attr->cap.get.max_iov         = 1;

    attr->cap.am.max_short        = uct_uccl_iface_am_max(iface);
    attr->cap.am.max_bcopy        = uct_uccl_iface_am_max(iface);
    attr->cap.am.min_zcopy        = 0;
    attr->cap.am.max_zcopy        = uct_uccl_iface_am_max(iface);
    attr->cap.am.opt_zcopy_align  = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.am.align_mtu        = uct_uccl_mtu_bytes(iface->config.mtu);
    attr->cap.am.max_hdr          = uct_uccl_iface_am_max_hdr(iface);
    attr->cap.am.max_iov          = 1;

    /* a software engine in front of the NIC: a few us of latency, the NIC's
     * bandwidth, and per-message CPU overhead of the engine */
    attr->latency                 = ucs_linear_func_make(3e-6, 0);
    attr->bandwidth.dedicated     = 0;
    attr->bandwidth.shared        = 10000.0 * UCS_MBYTE;
    attr->overhead                = 100e-9;
    attr->priority                = 0;
    return UCS_OK;
}

ucs_status_t uct_uccl_iface_get_device_address(uct_iface_h tl_iface,
                                               uct_device_addr_t *addr)
{
    uct_uccl_iface_t *iface        = ucs_derived_of(tl_iface, uct_uccl_iface_t);
    uct_uccl_device_addr_t *dev    = (uct_uccl_device_addr_t*)addr;

    dev->lid       = iface->port->lid;
    dev->is_global = iface->port->is_global;
    dev->rsvd      = 0;
    memcpy(dev->gid, iface->port->gid.raw, sizeof(dev->gid));
    return UCS_OK;
}

ucs_status_t uct_uccl_iface_get_address(uct_iface_h tl_iface,
                                        uct_iface_addr_t *addr)
{
    uct_uccl_iface_t *iface = ucs_derived_of(tl_iface, uct_uccl_iface_t);

    ((uct_uccl_iface_addr_t*)addr)->ctl_qpn = iface->ctl.qp->qp_num;
    return UCS_OK;
}

int uct_uccl_iface_is_reachable(const uct_iface_h tl_iface,
                                const uct_device_addr_t *dev_addr,
                                const uct_iface_addr_t *iface_addr)
{
    uct_uccl_iface_t *iface           = ucs_derived_of(tl_iface,
                                                       uct_uccl_iface_t);
    const uct_uccl_device_addr_t *dev = (const void*)dev_addr;

    if (dev == NULL) {
        return 0;
    }
    /* an InfiniBand port reaches LIDs, a RoCE port GIDs: not each other */
    return dev->is_global == iface->port->is_global;
}

ucs_status_t uct_uccl_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                  uct_completion_t *comp)
{
    uct_uccl_iface_t *iface = ucs_derived_of(tl_iface, uct_uccl_iface_t);
    uct_uccl_conn_t *conn;

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    /* done once the user heard of every operation before it */
    ucs_list_for_each(conn, &iface->conns, list) {
        if (!uct_uccl_tx_is_flushed(conn)) {
            UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
            return UCS_INPROGRESS;
        }
    }
    if (!ucs_list_is_empty(&iface->async.ops)) {
        UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
        return UCS_INPROGRESS;
    }

    UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    return UCS_OK;
}

/* Every ep's next operation waits for what its ep issued before */
ucs_status_t uct_uccl_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_uccl_iface_t *iface = ucs_derived_of(tl_iface, uct_uccl_iface_t);
    uct_uccl_conn_t *conn;

    ucs_list_for_each(conn, &iface->conns, list) {
        if (conn->ep != NULL) {
            uct_uccl_tx_fence(conn);
        }
    }
    UCT_TL_IFACE_STAT_FENCE(&iface->super);
    return UCS_OK;
}

static void uct_uccl_iface_dump_stats(uct_uccl_iface_t *iface)
{
    const uct_uccl_iface_stats_t *s = &iface->stats;

    fprintf(stderr, "uccl[%d] iface %s:%d mode %s: doorbells %lu wrs %lu "
            "send_cqes %lu "
            "bad_ctl %lu unknown_conn %lu forged_ctl %lu bad_ack %lu "
            "bad_data %lu "
            "bad_rkey %lu unknown_qpn %lu err_cqe %lu srq_empty %lu "
            "out_of_window %lu order_full %lu rx_no_desc %lu "
            "ctl_tx_busy %lu peers_lost %lu peers_refused %lu "
            "get_refused %lu defer_full %lu async_passes %lu\n",
            getpid(), iface->md->name, iface->port_num,
            iface->rc_mode ? "rc" : "uc", s->doorbells, s->wrs, s->send_cqes,
            s->bad_ctl,
            s->unknown_conn, s->forged_ctl, s->bad_ack, s->bad_data,
            s->bad_rkey,
            s->unknown_qpn, s->err_cqe, s->srq_empty, s->out_of_window,
            s->order_full, s->rx_no_desc, s->ctl_tx_busy, s->peers_lost,
            s->peers_refused, s->get_refused, s->defer_full,
            s->async_passes);
}

static void uct_uccl_iface_dump_all(uct_uccl_iface_t *iface)
{
    uct_uccl_conn_t *conn;

    uct_uccl_iface_dump_stats(iface);
    ucs_list_for_each(conn, &iface->conns, list) {
        uct_uccl_conn_dump_stats(conn, stderr);
    }
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

static void uct_uccl_iface_signal_init(void)
{
    struct sigaction sa, old;

    if ((sigaction(SIGUSR2, NULL, &old) != 0) ||
        (old.sa_handler != SIG_DFL)) {
        return; /* the application's signal */
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = uct_uccl_sigusr2;
    sa.sa_flags   = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGUSR2, &sa, NULL);
}

/* The congestion control every conn starts with, and the pacing wheel */
static ucs_status_t
uct_uccl_iface_cc_init(uct_uccl_iface_t *iface,
                       const uct_uccl_iface_config_t *config)
{
    ucs_status_t status;

    status = uct_uccl_cc_config_params(&config->cc, config->chunk_size,
                                       uct_uccl_mtu_bytes(iface->config.mtu),
                                       &iface->config.cc_params);
    if (status != UCS_OK) {
        return status;
    }
    iface->config.cc = uct_uccl_cc_find(config->cc.name)->name;
    return ucs_twheel_init(&iface->pace_wheel, iface->config.pace_res,
                           ucs_get_time());
}

/* The engine's memory pools: bcopy chunks, zcopy chunk headers, receive
 * buffers, operations */
static ucs_status_t
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

static void uct_uccl_iface_pools_cleanup(uct_uccl_iface_t *iface)
{
    ucs_mpool_cleanup(&iface->op_mp, 0);
    ucs_mpool_cleanup(&iface->rx_mp, 0);
    ucs_mpool_cleanup(&iface->hdr_mp, 0);
    ucs_mpool_cleanup(&iface->tx_mp, 0);
}

/* The send and receive CQs (on the event channel) and the shared SRQ */
static ucs_status_t uct_uccl_iface_queues_init(uct_uccl_iface_t *iface)
{
    struct ibv_srq_init_attr srq_attr = {};
    uct_uccl_md_t *md                 = iface->md;

    iface->send_cq = ibv_create_cq(md->ctx, iface->config.cq_size, NULL,
                                   iface->event.chan, 0);
    iface->recv_cq = ibv_create_cq(md->ctx, iface->config.cq_size, NULL,
                                   iface->event.chan, 0);
    if ((iface->send_cq == NULL) || (iface->recv_cq == NULL)) {
        ucs_error("uccl: cannot create CQs of %u entries: %m",
                  iface->config.cq_size);
        goto err_cq;
    }

    srq_attr.attr.max_wr  = iface->config.srq_size;
    srq_attr.attr.max_sge = 1;
    iface->srq            = ibv_create_srq(md->pd, &srq_attr);
    if (iface->srq == NULL) {
        ucs_error("uccl: cannot create an SRQ of %u entries: %m",
                  iface->config.srq_size);
        goto err_cq;
    }
    return UCS_OK;

err_cq:
    if (iface->send_cq != NULL) {
        ibv_destroy_cq(iface->send_cq);
    }
    if (iface->recv_cq != NULL) {
        ibv_destroy_cq(iface->recv_cq);
    }
    return UCS_ERR_IO_ERROR;
}

static void uct_uccl_iface_queues_cleanup(uct_uccl_iface_t *iface)
{
    ibv_destroy_srq(iface->srq);
    ibv_destroy_cq(iface->send_cq);
    ibv_destroy_cq(iface->recv_cq);
}

static UCS_CLASS_INIT_FUNC(uct_uccl_iface_t, uct_md_h tl_md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_uccl_iface_config_t *config = ucs_derived_of(tl_config,
                                                     uct_uccl_iface_config_t);
    uct_uccl_md_t *md               = ucs_derived_of(tl_md, uct_uccl_md_t);
    const char *dev_name, *colon;
    unsigned port_num;
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_uccl_iface_tl_ops,
                              UCT_UCCL_GLUE_IFACE_INTERNAL_OPS, tl_md, worker,
                              params, tl_config
                              UCS_STATS_ARG(params->stats_root)
                              UCS_STATS_ARG(UCT_UCCL_NAME));

    /* the class allocator does not zero: start from a clean engine */
    memset(UCS_PTR_BYTE_OFFSET(self, sizeof(self->super)), 0,
           sizeof(*self) - sizeof(self->super));

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) ||
        !(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("uccl: iface needs a device name");
        return UCS_ERR_INVALID_PARAM;
    }

    dev_name = params->mode.device.dev_name;
    colon    = strrchr(dev_name, ':');
    if ((colon == NULL) || (sscanf(colon + 1, "%u", &port_num) != 1) ||
        (uct_uccl_md_port(md, port_num) == NULL)) {
        ucs_error("uccl: '%s' is not an active <device>:<port> of %s",
                  dev_name, md->name);
        return UCS_ERR_NO_DEVICE;
    }

    status = uct_uccl_iface_config_check(config);
    if (status != UCS_OK) {
        return status;
    }

    self->md       = md;
    self->port_num = port_num;
    self->port     = uct_uccl_md_port(md, port_num);
    self->uuid     = ucs_generate_uuid((uintptr_t)self);

    status = uct_uccl_iface_mode_select(self, md, config->mode);
    if (status != UCS_OK) {
        return status;
    }
    uct_uccl_iface_config_set(self, config);

    status = uct_uccl_iface_cc_init(self, config);
    if (status != UCS_OK) {
        return status;
    }

    ucs_list_head_init(&self->conns);
    ucs_list_head_init(&self->sched);
    ucs_list_head_init(&self->ack_list);
    kh_init_inplace(uct_uccl_qpn, &self->qpn_hash);
    ucs_ptr_array_init(&self->conn_ids, "uccl_conn_ids");

    status = uct_uccl_iface_pools_init(self, config, params);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_uccl_event_init(self);
    if (status != UCS_OK) {
        goto err_pools;
    }

    status = uct_uccl_iface_queues_init(self);
    if (status != UCS_OK) {
        goto err_event;
    }

    status = uct_uccl_iface_ctl_init(self);
    if (status != UCS_OK) {
        goto err_queues;
    }

    if (self->config.stats_dump) {
        uct_uccl_iface_signal_init();
    }
    self->dump_seen  = uct_uccl_dump_requests;
    self->srq_posted = 1; /* not "ran dry" before the first fill */
    uct_uccl_rx_refill(self);
    --self->srq_posted;

    /* last: from here on the timer may run the engine */
    status = uct_uccl_async_init(self, config->async_idle);
    if (status != UCS_OK) {
        goto err_ctl;
    }
    ucs_debug("uccl: iface %s mode %s paths %u chunk %zu ctl qpn 0x%x",
              dev_name, self->rc_mode ? "rc" : "uc", self->config.num_paths,
              self->config.chunk_size, self->ctl.qp->qp_num);
    return UCS_OK;

err_ctl:
    uct_uccl_iface_ctl_cleanup(self);
err_queues:
    uct_uccl_iface_queues_cleanup(self);
err_event:
    uct_uccl_event_cleanup(self);
err_pools:
    uct_uccl_iface_pools_cleanup(self);
err:
    ucs_ptr_array_cleanup(&self->conn_ids, 0);
    kh_destroy_inplace(uct_uccl_qpn, &self->qpn_hash);
    ucs_twheel_cleanup(&self->pace_wheel);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_uccl_iface_t)
{
    uct_uccl_conn_t *conn, *tmp;
    uct_uccl_qp_t *path;

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    uct_uccl_async_cleanup(self);
    if (self->config.stats_dump) {
        uct_uccl_iface_dump_stats(self);
    }

    uct_uccl_iface_disconnect_all(self);
    ucs_list_for_each_safe(conn, tmp, &self->conns, list) {
        uct_uccl_conn_destroy(conn);
    }
    /* QPs of destroyed conns still draining */
    kh_foreach_value(&self->qpn_hash, path, {
        if (path->conn == NULL) {
            uct_uccl_iface_qp_drained(self, path);  /* kh_del is safe here */
        }
    });

    uct_uccl_iface_ctl_cleanup(self);
    uct_uccl_iface_queues_cleanup(self);
    uct_uccl_event_cleanup(self);
    /* descs posted on destroyed QPs never complete: no leak check */
    uct_uccl_iface_pools_cleanup(self);
    ucs_ptr_array_cleanup(&self->conn_ids, 0);
    kh_destroy_inplace(uct_uccl_qpn, &self->qpn_hash);
    ucs_twheel_cleanup(&self->pace_wheel);
}

UCS_CLASS_DEFINE(uct_uccl_iface_t, uct_base_iface_t);

UCS_CLASS_DEFINE_NEW_FUNC(uct_uccl_iface_t, uct_iface_t, uct_md_h,
                          uct_worker_h, const uct_iface_params_t*,
                          const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_uccl_iface_t, uct_iface_t);


/* uct_uccl_iface_tl_ops is in uccl_async.c: every entry point blocks the
 * async context */
void uct_uccl_iface_close(uct_iface_h tl_iface)
{
    UCS_CLASS_DELETE_FUNC_NAME(uct_uccl_iface_t)(tl_iface);
}


ucs_status_t
uct_uccl_query_tl_devices(uct_md_h tl_md,
                          uct_tl_device_resource_t **tl_devices_p,
                          unsigned *num_tl_devices_p)
{
    uct_uccl_md_t *md = ucs_derived_of(tl_md, uct_uccl_md_t);
    uct_tl_device_resource_t *devices;
    unsigned i, num = 0;

    devices = ucs_calloc(md->num_ports, sizeof(*devices), "uccl_devices");
    if (devices == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 1; i <= md->num_ports; ++i) {
        if (uct_uccl_md_port(md, i) == NULL) {
            continue;
        }
        ucs_snprintf_zero(devices[num].name, sizeof(devices[num].name),
                          "%s:%u", md->name, i);
        devices[num].type       = UCT_DEVICE_TYPE_NET;
        devices[num].sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
        ++num;
    }

    *tl_devices_p     = devices;
    *num_tl_devices_p = num;
    return UCS_OK;
}

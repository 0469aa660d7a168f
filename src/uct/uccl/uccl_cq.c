/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The engine's completion queues and shared receive queue: the send CQ,
 * the receive CQ (data QPs and the control QP), and the SRQ of all data
 * QPs. Where the device stamps completions, the receive CQ is read with
 * the extended poll and each completion's time mapped onto our clock
 * (proto/uccl_clock), sampled while completions arrive.
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <errno.h>
#include <time.h>


/* ------------------------------------------------------------------------ */
/* The receive CQ's completion timestamps                                   */
/* ------------------------------------------------------------------------ */

/* A reading of the clock the completions are stamped with, between two of
 * ours; 0 if the device would not give one. The raw clock comes as a
 * timespec whose nanoseconds field holds the ticks where the provider
 * counts ticks (mlx5: seconds 0), seconds and nanoseconds where it counts
 * time: both add up to the count. */
static int uct_uccl_iface_clock_read(uct_uccl_iface_t *iface, uint64_t *tick,
                                     uint64_t *before, uint64_t *after)
{
    struct ibv_values_ex values = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
    struct timespec ts;
    int ret;

    *before = uct_uccl_now_ns();
    if (iface->cq_ts == UCT_UCCL_CQ_TS_RAW) {
        ret = ibv_query_rt_values_ex(iface->md->ctx, &values);
        if ((ret != 0) || !(values.comp_mask & IBV_VALUES_MASK_RAW_CLOCK)) {
            return 0;
        }
        ts = values.raw_clock;
    } else if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
        return 0;
    }
    *after = uct_uccl_now_ns();
    *tick  = (uint64_t)ts.tv_sec * UCS_NSEC_PER_SEC + ts.tv_nsec;
    return 1;
}

/* A sample of the timestamps' clock (a function of its own: it runs per
 * UCT_UCCL_CLOCK_SYNC_NS of wall time, and profiles tell it apart) */
static UCS_F_NOINLINE void uct_uccl_iface_clock_sync(uct_uccl_iface_t *iface)
{
    uint64_t tick, before, after;

    if (uct_uccl_iface_clock_read(iface, &tick, &before, &after)) {
        (void)uct_uccl_clock_sample(&iface->cq_clock, tick, before, after);
    }
}

/* The receive CQ with timestamps of iface->cq_ts, and the first sample of
 * their clock */
static struct ibv_cq *uct_uccl_iface_recv_cq_ts(uct_uccl_iface_t *iface,
                                                unsigned cqe)
{
    const uct_uccl_md_t *md            = iface->md;
    struct ibv_cq_init_attr_ex cq_attr = {
        .cqe      = cqe,
        .channel  = iface->event.chan,
        .wc_flags = UCT_UCCL_CQ_WC_FLAGS |
                    ((iface->cq_ts == UCT_UCCL_CQ_TS_RAW) ?
                     IBV_WC_EX_WITH_COMPLETION_TIMESTAMP :
                     IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
    };
    ucs_status_t status;

    status = (iface->cq_ts == UCT_UCCL_CQ_TS_RAW) ?
             uct_uccl_clock_init(&iface->cq_clock, md->caps.ts_khz,
                                 md->caps.ts_mask) :
             uct_uccl_clock_init(&iface->cq_clock,
                                 UCS_NSEC_PER_SEC / UCS_MSEC_PER_SEC,
                                 UINT64_MAX);
    if (status != UCS_OK) {
        ucs_error("uccl: %s: bad timestamp clock (%lu kHz, mask 0x%lx)",
                  md->name, md->caps.ts_khz, md->caps.ts_mask);
        return NULL;
    }
    iface->recv_cq_ex = ibv_create_cq_ex(md->ctx, &cq_attr);
    if (iface->recv_cq_ex == NULL) {
        return NULL;
    }
    uct_uccl_iface_clock_sync(iface);
    return ibv_cq_ex_to_cq(iface->recv_cq_ex);
}

/* The completion at the CQ's cursor as ibv_poll_cq would give it (what
 * the receive path reads of it) and its timestamp */
static UCS_F_ALWAYS_INLINE void
uct_uccl_iface_cqe_read(uct_uccl_iface_t *iface, struct ibv_cq_ex *cq,
                        struct ibv_wc *wc, uint64_t *tick)
{
    wc->wr_id  = cq->wr_id;
    wc->status = cq->status;
    wc->qp_num = ibv_wc_read_qp_num(cq);
    if (ucs_unlikely(wc->status != IBV_WC_SUCCESS)) {
        *tick = iface->cq_clock.ref_tick;
        return;
    }
    if (ucs_likely(wc->qp_num != iface->ctl.qpn)) {
        wc->opcode   = ibv_wc_read_opcode(cq);
        wc->imm_data = ibv_wc_read_imm_data(cq);
        if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
            /* a WRITE completes at the target only with an immediate; its
             * length only the cc may count */
            wc->wc_flags = IBV_WC_WITH_IMM;
            wc->byte_len = iface->config.cc_rx_bytes ?
                           ibv_wc_read_byte_len(cq) : 0;
        } else {
            wc->wc_flags = ibv_wc_read_wc_flags(cq);
            wc->byte_len = ibv_wc_read_byte_len(cq);
        }
    } else {
        wc->byte_len = ibv_wc_read_byte_len(cq);
        wc->wc_flags = ibv_wc_read_wc_flags(cq);
        wc->src_qp   = ibv_wc_read_src_qp(cq);
        wc->slid     = ibv_wc_read_slid(cq);
    }
    *tick = (iface->cq_ts == UCT_UCCL_CQ_TS_RAW) ?
            ibv_wc_read_completion_ts(cq) :
            ibv_wc_read_completion_wallclock_ns(cq);
}

/* Up to max completions of the timestamped receive CQ into wcs, their raw
 * timestamps into ts (uct_uccl_iface_rx_ts maps one onto our clock); sets
 * rx_poll_ns to the time they were found. The clock is sampled again here
 * once the latest sample is old: only while completions arrive. < 0: an
 * error. */
int uct_uccl_iface_recv_read_ts(uct_uccl_iface_t *iface, struct ibv_wc *wcs,
                                uint64_t *ts, int max)
{
    struct ibv_poll_cq_attr attr = {};
    struct ibv_cq_ex *cq         = iface->recv_cq_ex;
    uint64_t now;
    int n, ret;

    ret = ibv_start_poll(cq, &attr);
    if (ret != 0) {
        return (ret == ENOENT) ? 0 : -ret;
    }
    n = 0;
    do {
        uct_uccl_iface_cqe_read(iface, cq, &wcs[n], &ts[n]);
    } while ((++n < max) && (ibv_next_poll(cq) == 0));
    ibv_end_poll(cq);

    now = uct_uccl_now_ns();
    if (ucs_unlikely(uct_uccl_clock_stale(&iface->cq_clock, now))) {
        uct_uccl_iface_clock_sync(iface);
    }
    iface->rx_poll_ns = now;
    return n;
}


/* ------------------------------------------------------------------------ */
/* CQs and SRQ                                                              */
/* ------------------------------------------------------------------------ */

/* The refill's chain of receive WRs: each with its SGE of a whole buffer,
 * linked to the next (uct_uccl_rx_refill cuts it where a post ends) */
static void uct_uccl_iface_srq_chain_init(uct_uccl_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < UCT_UCCL_SRQ_BATCH; ++i) {
        iface->srq_sges[i].length = iface->config.rx_buf_size;
        iface->srq_wrs[i]         = (struct ibv_recv_wr){
            .sg_list = &iface->srq_sges[i],
            .num_sge = 1,
            .next    = (i + 1 < UCT_UCCL_SRQ_BATCH) ?
                       &iface->srq_wrs[i + 1] : NULL
        };
    }
}

/* The send and receive CQs (on the event channel) and the shared SRQ */
ucs_status_t uct_uccl_iface_queues_init(uct_uccl_iface_t *iface)
{
    struct ibv_srq_init_attr srq_attr = {};
    uct_uccl_md_t *md                 = iface->md;
    /* the control QP's receives share it (uct_uccl_iface_ctl_recv) */
    unsigned recv_cqe                 = iface->config.cq_size +
                                        UCT_UCCL_CTL_RX_DEPTH;

    iface->send_cq = ibv_create_cq(md->ctx, iface->config.cq_size, NULL,
                                   iface->event.chan, 0);
    iface->recv_cq = (iface->cq_ts != UCT_UCCL_CQ_TS_NONE) ?
                     uct_uccl_iface_recv_cq_ts(iface, recv_cqe) :
                     ibv_create_cq(md->ctx, recv_cqe, NULL, iface->event.chan,
                                   0);
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
    uct_uccl_iface_srq_chain_init(iface);
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

void uct_uccl_iface_queues_cleanup(uct_uccl_iface_t *iface)
{
    ibv_destroy_srq(iface->srq);
    ibv_destroy_cq(iface->send_cq);
    ibv_destroy_cq(iface->recv_cq);
}


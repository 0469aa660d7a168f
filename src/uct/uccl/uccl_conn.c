/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Connections: P data QP pairs between two ifaces, set up by a request/reply
 * over the UD control QPs (retried until answered, idempotent on
 * duplicates), failed when the peer stops answering. The initiator asks
 * for P paths, the reply grants P or fewer (each side's QP budget,
 * uccl_budget.h).
 */
#include "uccl_iface.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <ucs/datastruct/mpool.inl>
#include <string.h>
#include <sys/random.h>


/* A conn's token: unpredictable (not a counter or the clock), never 0 */
static uint64_t uct_uccl_conn_random_token(void)
{
    uint64_t token = 0;

    while ((token == 0) &&
           (getrandom(&token, sizeof(token), 0) != sizeof(token))) {
        token = ucs_generate_uuid((uintptr_t)&token);
    }
    return token;
}

static void uct_uccl_conn_ah_attr(uct_uccl_iface_t *iface,
                                  const uct_uccl_device_addr_t *dev,
                                  struct ibv_ah_attr *ah_attr)
{
    memset(ah_attr, 0, sizeof(*ah_attr));
    ah_attr->port_num = iface->port_num;
    ah_attr->dlid     = dev->lid;
    if (dev->is_global || (iface->port->gid_index >= 0 && dev->lid == 0)) {
        ah_attr->is_global      = 1;
        ah_attr->grh.sgid_index = ucs_max(iface->port->gid_index, 0);
        ah_attr->grh.hop_limit  = 64;
        memcpy(ah_attr->grh.dgid.raw, dev->gid, sizeof(dev->gid));
    }
}

static ucs_status_t uct_uccl_conn_qp_init(uct_uccl_conn_t *conn,
                                          uct_uccl_qp_t *path)
{
    uct_uccl_iface_t *iface         = conn->iface;
    struct ibv_qp_init_attr qp_init = {};
    struct ibv_qp_attr attr         = {};
    khiter_t it;
    int ret;

    qp_init.send_cq          = iface->send_cq;
    qp_init.recv_cq          = iface->recv_cq;
    qp_init.srq              = iface->srq;
    qp_init.qp_type          = conn->rc ? IBV_QPT_RC : IBV_QPT_UC;
    qp_init.cap.max_send_wr  = iface->config.tx_queue_len;
    qp_init.cap.max_send_sge = 3;
    qp_init.sq_sig_all       = 0;     /* the last WR of each chain */
    path->sent = ucs_malloc((iface->config.tx_ring_mask + 1) *
                            sizeof(*path->sent), "uccl_path_sent");
    if (path->sent == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    path->qp = ibv_create_qp(iface->md->pd, &qp_init);
    if (path->qp == NULL) {
        /* the caller decides: fewer paths, or no conn */
        ucs_debug("uccl: cannot create a %s data QP: %m",
                  conn->rc ? "RC" : "UC");
        ucs_free(path->sent);
        path->sent = NULL;
        return UCS_ERR_NO_RESOURCE;
    }

    attr.qp_state        = IBV_QPS_INIT;
    attr.pkey_index      = 0;
    attr.port_num        = iface->port_num;
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           (conn->rc ? IBV_ACCESS_REMOTE_READ : 0);
    if (ibv_modify_qp(path->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        ucs_error("uccl: data QP 0x%x to INIT failed: %m", path->qp->qp_num);
        goto err_destroy;
    }

    it = kh_put(uct_uccl_qpn, &iface->qpn_hash, path->qp->qp_num, &ret);
    if (ret <= 0) {
        ucs_error("uccl: QPN 0x%x already known", path->qp->qp_num);
        goto err_destroy;
    }
    kh_val(&iface->qpn_hash, it) = path;
    return UCS_OK;

err_destroy:
    ibv_destroy_qp(path->qp);
    path->qp = NULL;
    ucs_free(path->sent);
    path->sent = NULL;
    return UCS_ERR_IO_ERROR;
}

static ucs_status_t uct_uccl_conn_qp_connect(uct_uccl_conn_t *conn,
                                             uct_uccl_qp_t *path,
                                             enum ibv_mtu mtu)
{
    uct_uccl_iface_t *iface = conn->iface;
    struct ibv_qp_attr attr = {};
    int mask;

    attr.qp_state    = IBV_QPS_RTR;
    attr.path_mtu    = mtu;
    attr.dest_qp_num = path->remote_qpn;
    attr.rq_psn      = conn->remote_psn;
    uct_uccl_conn_ah_attr(iface, &conn->remote_dev, &attr.ah_attr);
    mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
           IBV_QP_RQ_PSN;
    if (conn->rc) {
        attr.max_dest_rd_atomic = ucs_min(iface->md->dev_attr.max_qp_rd_atom,
                                          16);
        attr.min_rnr_timer      = 1;
        mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
    if (ibv_modify_qp(path->qp, &attr, mask)) {
        ucs_error("uccl: data QP 0x%x to RTR failed: %m", path->qp->qp_num);
        return UCS_ERR_IO_ERROR;
    }

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn   = conn->psn;
    mask          = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (conn->rc) {
        attr.timeout       = 14;
        attr.retry_cnt     = 7;
        attr.rnr_retry     = 7;
        attr.max_rd_atomic = ucs_max(ucs_min(iface->md->dev_attr.max_qp_rd_atom,
                                             16), 1);
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                IBV_QP_MAX_QP_RD_ATOMIC;
    }
    if (ibv_modify_qp(path->qp, &attr, mask)) {
        ucs_error("uccl: data QP 0x%x to RTS failed: %m", path->qp->qp_num);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

/* The state that depends on the number of paths: SACK tracker, path
 * scoreboard, congestion control */
static ucs_status_t uct_uccl_conn_paths_state_init(uct_uccl_conn_t *conn)
{
    uct_uccl_iface_t *iface = conn->iface;
    uct_uccl_tracker_params_t tparams;
    uct_uccl_path_params_t pparams;
    uct_uccl_cc_params_t ccparams;
    ucs_status_t status;

    tparams.size          = ucs_roundup_pow2(ucs_max(iface->config.sack_window,
                                                     64));
    tparams.init_csn      = conn->init_csn;
    tparams.dupack_thresh = iface->config.dupack_thresh;
    tparams.reorder_csns  = iface->config.reorder_thresh;
    tparams.num_paths     = conn->num_paths;
    status = uct_uccl_tracker_init(&conn->tracker, &tparams);
    if (status != UCS_OK) {
        return status;
    }

    pparams.num_paths       = conn->num_paths;
    pparams.seed            = ucs_generate_uuid((uintptr_t)conn + 2);
    pparams.init_rtt_ns     = 50000;
    pparams.loss_penalty_ns = 100000;
    pparams.max_penalty_ns  = 10000000;
    pparams.halflife_shift  = 24;  /* ~17 ms */
    pparams.small_size      = UCT_UCCL_SMALL_MSG;
    pparams.explore_shift   = 4;
    status = uct_uccl_paths_init(&conn->sel, &pparams);
    if (status != UCS_OK) {
        return status;
    }

    ccparams           = iface->config.cc_params;
    ccparams.num_paths = conn->num_paths;
    status = uct_uccl_cc_init(&conn->cc, iface->config.cc, &ccparams);
    if (status != UCS_OK) {
        ucs_error("uccl: congestion control '%s' failed to start: %s",
                  iface->config.cc, ucs_status_string(status));
        return status;
    }
    conn->cc_valid = 1;
    return UCS_OK;
}

static void uct_uccl_conn_paths_state_cleanup(uct_uccl_conn_t *conn)
{
    uct_uccl_cc_cleanup(&conn->cc);
    conn->cc_valid = 0;
    uct_uccl_paths_cleanup(&conn->sel);
    uct_uccl_tracker_cleanup(&conn->tracker);
}

/* Up to `want` data QPs, as many as the device's QP budget grants and the
 * device creates: at least one, or no conn */
static ucs_status_t uct_uccl_conn_paths_create(uct_uccl_conn_t *conn,
                                               unsigned want)
{
    uct_uccl_iface_t *iface     = conn->iface;
    uct_uccl_budget_t *budget   = iface->md->budget;
    ucs_status_t status         = UCS_OK;
    unsigned granted, i;

    /* a passive side retries with every request: no error each time */
    granted = uct_uccl_budget_take(budget, want);
    if (granted == 0) {
        ucs_log(conn->passive ? UCS_LOG_LEVEL_DIAG : UCS_LOG_LEVEL_ERROR,
                "uccl: %s: all %u QPs of the device are in use",
                iface->md->name, uct_uccl_budget_max(budget));
        return UCS_ERR_NO_RESOURCE;
    }

    conn->paths = ucs_calloc(granted, sizeof(*conn->paths), "uccl_paths");
    if (conn->paths == NULL) {
        uct_uccl_budget_give(budget, granted);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < granted; ++i) {
        conn->paths[i].conn  = conn;
        conn->paths[i].index = i;
        status = uct_uccl_conn_qp_init(conn, &conn->paths[i]);
        if (status != UCS_OK) {
            break;
        }
    }
    uct_uccl_budget_give(budget, granted - i);
    conn->num_paths = i;

    if (i == 0) {
        ucs_log(conn->passive ? UCS_LOG_LEVEL_DIAG : UCS_LOG_LEVEL_ERROR,
                "uccl: %s: cannot create a %s data QP: %s", iface->md->name,
                conn->rc ? "RC" : "UC", ucs_status_string(status));
        return status;
    }
    if (i < want) {
        ucs_debug("uccl: conn %u: %u of %u paths (QP budget)", conn->id, i,
                  want);
    }
    return UCS_OK;
}

/* The pacing time of a held-back conn came: back to the scheduler */
static void uct_uccl_conn_pace_cb(ucs_wtimer_t *timer)
{
    uct_uccl_conn_t *conn = ucs_container_of(timer, uct_uccl_conn_t,
                                             pace_timer);

    uct_uccl_iface_sched_add(conn->iface, conn);
}

/* A conn with `want_paths` data QPs at most (fewer when the device's QPs
 * run short, see uccl_budget.h) */
ucs_status_t uct_uccl_conn_create(uct_uccl_iface_t *iface, int passive,
                                  const uct_uccl_device_addr_t *dev,
                                  uint32_t remote_ctl_qpn, unsigned want_paths,
                                  uct_uccl_conn_t **conn_p)
{
    struct ibv_ah_attr ah_attr;
    uct_uccl_conn_t *conn;
    ucs_status_t status;

    conn = ucs_calloc(1, sizeof(*conn), "uccl_conn");
    if (conn == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    conn->iface          = iface;
    conn->passive        = passive;
    conn->rc             = iface->rc_mode;
    conn->state          = UCT_UCCL_CONN_CONNECTING;
    conn->remote_id      = UCT_UCCL_CONN_ID_NONE;
    conn->remote_ctl_qpn = remote_ctl_qpn;
    conn->remote_dev     = *dev;
    conn->psn            = ucs_generate_uuid((uintptr_t)conn) & 0xffffff;
    conn->init_csn       = ucs_generate_uuid((uintptr_t)conn + 1) &
                           UCT_UCCL_SEQ_MASK;
    conn->rc_csn         = conn->init_csn;
    conn->token          = uct_uccl_conn_random_token();
    conn->chains         = NULL;
    conn->chains_tail    = &conn->chains;
    ucs_queue_head_init(&conn->tx_queue);
    ucs_queue_head_init(&conn->pending_q);
    ucs_list_head_init(&conn->ops);
    ucs_list_head_init(&conn->flushes);
    ucs_list_head_init(&conn->zombies);
    ucs_list_head_init(&conn->rc_inflight);
    ucs_list_head_init(&conn->gets);
    ucs_wtimer_init(&conn->pace_timer, uct_uccl_conn_pace_cb);

    status = uct_uccl_rto_init(&conn->rto, &iface->config.rto);
    if (status != UCS_OK) {
        goto err_free;
    }

    uct_uccl_conn_ah_attr(iface, dev, &ah_attr);
    conn->ah = ibv_create_ah(iface->md->pd, &ah_attr);
    if (conn->ah == NULL) {
        ucs_error("uccl: cannot create an address handle to lid %u: %m",
                  dev->lid);
        status = UCS_ERR_UNREACHABLE;
        goto err_free;
    }

    /* from here on uct_uccl_conn_destroy() undoes everything */
    conn->id = ucs_ptr_array_insert(&iface->conn_ids, conn);
    ucs_list_add_tail(&iface->conns, &conn->list);
    iface->num_passive += passive;

    status = uct_uccl_conn_paths_create(conn, want_paths);
    if (status == UCS_OK) {
        status = uct_uccl_conn_paths_state_init(conn);
    }
    if (status != UCS_OK) {
        uct_uccl_conn_destroy(conn);
        return status;
    }

    *conn_p = conn;
    return UCS_OK;

err_free:
    ucs_free(conn);
    return status;
}

static void uct_uccl_conn_qp_destroy(uct_uccl_iface_t *iface,
                                     uct_uccl_qp_t *path)
{
    khiter_t it = kh_get(uct_uccl_qpn, &iface->qpn_hash, path->qp->qp_num);

    if (it != kh_end(&iface->qpn_hash)) {
        kh_del(uct_uccl_qpn, &iface->qpn_hash, it);
    }
    ibv_destroy_qp(path->qp);
    ucs_free(path->sent);
    uct_uccl_budget_give(iface->md->budget, 1);
}

/* The peer granted fewer paths than we made (its QP budget): the others
 * were never connected nor used */
static ucs_status_t uct_uccl_conn_paths_trim(uct_uccl_conn_t *conn,
                                             unsigned num_paths)
{
    unsigned i;

    ucs_debug("uccl: conn %u: peer grants %u of %u paths", conn->id,
              num_paths, conn->num_paths);
    for (i = num_paths; i < conn->num_paths; ++i) {
        uct_uccl_conn_qp_destroy(conn->iface, &conn->paths[i]);
        conn->paths[i].qp = NULL;
    }
    conn->num_paths = num_paths;
    uct_uccl_conn_paths_state_cleanup(conn);
    return uct_uccl_conn_paths_state_init(conn);
}

/* A NIC completes (flushes) the WRs of a QP only while the QP exists, and
 * the chunks they carry are freed by those completions: a QP with WRs out
 * moves to ERR and stays, without its conn, until the send CQ drained it. */
static void uct_uccl_conn_qp_release(uct_uccl_iface_t *iface,
                                     uct_uccl_qp_t *path)
{
    struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
    uct_uccl_qp_t *drain    = NULL;
    khiter_t it;

    it = kh_get(uct_uccl_qpn, &iface->qpn_hash, path->qp->qp_num);
    if ((path->outstanding > 0) && (it != kh_end(&iface->qpn_hash))) {
        drain = ucs_malloc(sizeof(*drain), "uccl_drain_qp");
    }
    if ((drain == NULL) || ibv_modify_qp(path->qp, &attr, IBV_QP_STATE)) {
        iface->tx_outstanding -= path->outstanding;
        uct_uccl_conn_qp_destroy(iface, path);
        ucs_free(drain);
        return;
    }

    *drain       = *path;
    drain->conn  = NULL;
    drain->chain = NULL;
    kh_val(&iface->qpn_hash, it) = drain;
}

void uct_uccl_iface_qp_drained(uct_uccl_iface_t *iface, uct_uccl_qp_t *drain)
{
    uct_uccl_conn_qp_destroy(iface, drain);
    ucs_free(drain);
}

void uct_uccl_conn_destroy(uct_uccl_conn_t *conn)
{
    uct_uccl_iface_t *iface = conn->iface;
    uct_uccl_qp_t *path;
    unsigned i;

    if (iface->config.stats_dump) {
        uct_uccl_conn_dump_stats(conn, stderr);
    }
    if (conn->ack_pending && (conn->state == UCT_UCCL_CONN_CONNECTED)) {
        /* what arrived is acknowledged before we go: a peer waiting on the
         * ACK of its last message would resend it into the void until its
         * peer timeout */
        conn->ack_due = 0;
        (void)uct_uccl_rx_flush_acks(iface, uct_uccl_now_ns());
    }
    uct_uccl_tx_purge(conn, UCS_ERR_CANCELED);
    uct_uccl_rx_conn_cleanup(conn);
    uct_uccl_tx_orphan(conn);

    if (conn->in_sched) {
        ucs_list_del(&conn->sched);
    }
    ucs_wtimer_remove(&iface->pace_wheel, &conn->pace_timer);
    if (conn->ack_pending) {
        ucs_list_del(&conn->ack_link);
    }
    uct_uccl_async_conn_cleanup(conn);

    for (i = 0; i < conn->num_paths; ++i) {
        path = &conn->paths[i];
        if (path->qp != NULL) {
            uct_uccl_conn_qp_release(iface, path);
        }
    }

    if (conn->sack_valid) {
        uct_uccl_order_cleanup(&conn->order);
        uct_uccl_sack_cleanup(&conn->sack);
    }
    uct_uccl_cc_cleanup(&conn->cc);
    uct_uccl_paths_cleanup(&conn->sel);
    uct_uccl_tracker_cleanup(&conn->tracker);
    ibv_destroy_ah(conn->ah);
    ucs_ptr_array_remove(&iface->conn_ids, conn->id);
    ucs_list_del(&conn->list);
    iface->num_passive -= conn->passive;
    ucs_free(conn->paths);
    ucs_free(conn);
}

/* A conn packet of `type` for `num_paths` paths: the header and what the
 * iface tells every peer (its address, chunk and receive sizes) */
static void uct_uccl_conn_pkt_init(uct_uccl_iface_t *iface,
                                   uct_uccl_conn_pkt_t *pkt,
                                   uct_uccl_ctl_type_t type,
                                   unsigned num_paths)
{
    memset(pkt, 0, uct_uccl_wire_conn_size(num_paths));
    uct_uccl_wire_hdr_init(&pkt->hdr, type,
                           uct_uccl_wire_conn_size(num_paths));
    pkt->magic       = UCT_UCCL_WIRE_MAGIC;
    pkt->iface_uuid  = iface->uuid;
    pkt->num_paths   = num_paths;
    pkt->mtu         = uct_uccl_mtu_bytes(iface->config.mtu);
    pkt->lid         = iface->port->lid;
    pkt->ctl_qpn     = iface->ctl.qp->qp_num;
    pkt->chunk_size  = iface->config.chunk_size;
    pkt->rx_buf_size = iface->config.rx_buf_size;
    pkt->sack_bits   = iface->config.rx_window;
    memcpy(pkt->gid, iface->port->gid.raw, sizeof(pkt->gid));
}

static void uct_uccl_conn_pkt_fill(uct_uccl_conn_t *conn,
                                   uct_uccl_conn_pkt_t *pkt,
                                   uct_uccl_ctl_type_t type,
                                   ucs_status_t status)
{
    uct_uccl_iface_t *iface = conn->iface;
    unsigned i;

    uct_uccl_conn_pkt_init(iface, pkt, type, conn->num_paths);
    pkt->token       = conn->token;
    pkt->echo_token  = (type == UCT_UCCL_CTL_CONN_REP) ? conn->remote_token :
                                                        0;
    pkt->src_conn_id = conn->id;
    pkt->dst_conn_id = conn->remote_id;
    pkt->status      = status;
    pkt->mode        = conn->rc ? UCT_UCCL_MODE_RC : UCT_UCCL_MODE_UC;
    pkt->init_csn    = conn->init_csn;
    pkt->psn         = conn->psn;
    for (i = 0; i < conn->num_paths; ++i) {
        pkt->qpn[i] = conn->paths[i].qp->qp_num;
    }
}

static ucs_status_t uct_uccl_conn_send_pkt(uct_uccl_conn_t *conn,
                                           uct_uccl_ctl_type_t type,
                                           ucs_status_t status)
{
    char buf[UCT_UCCL_WIRE_CTL_MAX];
    uct_uccl_conn_pkt_t *pkt = (uct_uccl_conn_pkt_t*)buf;

    uct_uccl_conn_pkt_fill(conn, pkt, type, status);
    return uct_uccl_iface_ctl_send(conn->iface, conn->ah, conn->remote_ctl_qpn,
                                   pkt, pkt->hdr.length);
}

ucs_status_t uct_uccl_conn_start(uct_uccl_conn_t *conn)
{
    uint64_t now = uct_uccl_now_ns();

    conn->conn_start    = now;
    conn->conn_next_try = now + conn->iface->config.conn_retry_ns;
    conn->conn_tries    = 1;
    /* a lost or unsent request is retried by the timer */
    (void)uct_uccl_conn_send_pkt(conn, UCT_UCCL_CTL_CONN_REQ, UCS_OK);
    return UCS_OK;
}

/* Peer's parameters from a REQ (passive) or REP (initiator) */
static ucs_status_t uct_uccl_conn_apply_peer(uct_uccl_conn_t *conn,
                                             const uct_uccl_conn_pkt_t *pkt)
{
    uct_uccl_iface_t *iface = conn->iface;
    enum ibv_mtu mtu        = iface->config.mtu;
    ucs_status_t status;
    unsigned i;

    conn->remote_id         = pkt->src_conn_id;
    conn->remote_uuid       = pkt->iface_uuid;
    conn->remote_token      = pkt->token;
    conn->remote_psn        = pkt->psn & 0xffffff;
    conn->remote_chunk_size = pkt->rx_buf_size;
    conn->remote_dev.lid    = pkt->lid;
    memcpy(conn->remote_dev.gid, pkt->gid, sizeof(conn->remote_dev.gid));
    while ((mtu > IBV_MTU_256) && (uct_uccl_mtu_bytes(mtu) > pkt->mtu)) {
        --mtu;
    }

    /* never send more than the peer can receive in one SRQ buffer, nor keep
     * more in flight than its SACK window */
    uct_uccl_tracker_set_limit(&conn->tracker,
                               ucs_min(pkt->sack_bits,
                                       iface->config.sack_window));

    if (!conn->rc) {
        /* a well-behaved peer keeps at most rx_window chunks in flight:
         * as many messages may wait for the chunks before them */
        status = uct_uccl_order_init(&conn->order, iface->config.sack_window,
                                     iface->config.rx_window);
        if (status != UCS_OK) {
            return status;
        }
        status = uct_uccl_sack_init(&conn->sack, iface->config.sack_window,
                                    pkt->init_csn & UCT_UCCL_SEQ_MASK);
        if (status != UCS_OK) {
            return status;
        }
        conn->sack_valid = 1;
    }

    for (i = 0; i < conn->num_paths; ++i) {
        conn->paths[i].remote_qpn = pkt->qpn[i] & 0xffffff;
        status = uct_uccl_conn_qp_connect(conn, &conn->paths[i], mtu);
        if (status != UCS_OK) {
            return status;
        }
    }

    conn->state         = UCT_UCCL_CONN_CONNECTED;
    conn->last_progress = uct_uccl_now_ns();
    return UCS_OK;
}

/* A reply refusing a request: no conn of ours behind it */
static void uct_uccl_conn_send_reject(uct_uccl_iface_t *iface,
                                      const uct_uccl_conn_pkt_t *req,
                                      ucs_status_t status)
{
    uint64_t buf[UCT_UCCL_WIRE_CTL_MAX / 8];
    uct_uccl_conn_pkt_t *pkt = (uct_uccl_conn_pkt_t*)buf;
    uct_uccl_device_addr_t dev = { .lid = req->lid,
                                   .is_global = iface->port->is_global };
    struct ibv_ah_attr ah_attr;
    struct ibv_ah *ah;

    memcpy(dev.gid, req->gid, sizeof(dev.gid));
    uct_uccl_conn_pkt_init(iface, pkt, UCT_UCCL_CTL_CONN_REP, 1);
    pkt->token       = uct_uccl_conn_random_token();
    pkt->echo_token  = req->token;
    pkt->src_conn_id = UCT_UCCL_CONN_ID_NONE;
    pkt->dst_conn_id = req->src_conn_id;
    pkt->status      = status;
    pkt->mode        = req->mode;

    uct_uccl_conn_ah_attr(iface, &dev, &ah_attr);
    ah = ibv_create_ah(iface->md->pd, &ah_attr);
    if (ah == NULL) {
        return;
    }
    (void)uct_uccl_iface_ctl_send(iface, ah, req->ctl_qpn, pkt,
                                  pkt->hdr.length);
    ibv_destroy_ah(ah);
}

static uct_uccl_conn_t *uct_uccl_conn_lookup(uct_uccl_iface_t *iface,
                                             uint32_t id)
{
    uct_uccl_conn_t *conn;

    if (!ucs_ptr_array_lookup(&iface->conn_ids, id, conn)) {
        return NULL;
    }
    return conn;
}

/* Did the packet come from the port and control QP of `dev`/`qpn`? */
static int uct_uccl_conn_src_is(const uct_uccl_ctl_src_t *src,
                                const uct_uccl_device_addr_t *dev,
                                uint32_t qpn)
{
    if (src->qpn != qpn) {
        return 0;
    }
    return dev->is_global ?
           ((src->gid != NULL) && !memcmp(src->gid, dev->gid, 16)) :
           (src->lid == dev->lid);
}

/* The conn a control packet names, if it came from that conn's peer: the
 * peer's control QP and port, and the token we gave it in the set-up.
 * Anything else is counted and dropped. */
uct_uccl_conn_t *uct_uccl_conn_bound(uct_uccl_iface_t *iface, uint32_t id,
                                     uint64_t token,
                                     const uct_uccl_ctl_src_t *src)
{
    uct_uccl_conn_t *conn = uct_uccl_conn_lookup(iface, id);

    if (conn == NULL) {
        ++iface->stats.unknown_conn;
        return NULL;
    }
    if ((token != conn->token) ||
        !uct_uccl_conn_src_is(src, &conn->remote_dev, conn->remote_ctl_qpn)) {
        ++iface->stats.forged_ctl;
        return NULL;
    }
    return conn;
}

static int uct_uccl_conn_pkt_compatible(uct_uccl_iface_t *iface,
                                        const uct_uccl_conn_pkt_t *pkt)
{
    return (pkt->mode == (iface->rc_mode ? UCT_UCCL_MODE_RC :
                                           UCT_UCCL_MODE_UC)) &&
           (pkt->rx_buf_size >= UCT_UCCL_SEND_HDR_MAX + 1024) &&
           (pkt->sack_bits >= 64);
}

static void uct_uccl_conn_handle_req(uct_uccl_iface_t *iface,
                                     const uct_uccl_conn_pkt_t *pkt,
                                     const uct_uccl_ctl_src_t *src)
{
    uct_uccl_device_addr_t dev = {};
    uct_uccl_conn_t *conn;
    ucs_status_t status;

    dev.lid       = pkt->lid;
    dev.is_global = iface->port->is_global;
    memcpy(dev.gid, pkt->gid, sizeof(dev.gid));
    /* the request comes from the control QP and port it names: a reply
     * to someone else's address would be a reflection */
    if (!uct_uccl_conn_src_is(src, &dev, pkt->ctl_qpn)) {
        ++iface->stats.forged_ctl;
        return;
    }

    /* a duplicate request: answer again with the same conn */
    ucs_list_for_each(conn, &iface->conns, list) {
        if (conn->passive && (conn->remote_uuid == pkt->iface_uuid) &&
            (conn->remote_id == pkt->src_conn_id) &&
            (conn->remote_token == pkt->token)) {
            ucs_debug("uccl: duplicate CONN_REQ for conn %u", conn->id);
            (void)uct_uccl_conn_send_pkt(conn, UCT_UCCL_CTL_CONN_REP,
                                         (conn->state ==
                                          UCT_UCCL_CONN_FAILED) ?
                                         conn->fail_status : UCS_OK);
            return;
        }
    }

    if (!uct_uccl_conn_pkt_compatible(iface, pkt)) {
        ucs_error("uccl: rejecting a connection from a peer in %s mode "
                  "(we are in %s mode; set UCX_UCCL_MODE alike)",
                  pkt->mode == UCT_UCCL_MODE_RC ? "rc" : "uc",
                  iface->rc_mode ? "rc" : "uc");
        ++iface->stats.bad_ctl;
        return;
    }

    if (iface->num_passive >= iface->config.max_peers) {
        ++iface->stats.peers_refused;
        ucs_diag("uccl: refusing a connection: %u peers connected "
                 "(UCX_UCCL_MAX_PEERS)", iface->num_passive);
        uct_uccl_conn_send_reject(iface, pkt, UCS_ERR_EXCEEDS_LIMIT);
        return;
    }

    /* the initiator's path count, at most ours, or fewer if our QPs run
     * short: the reply tells it how many */
    status = uct_uccl_conn_create(iface, 1, &dev, pkt->ctl_qpn,
                                  ucs_min(pkt->num_paths,
                                          iface->config.num_paths), &conn);
    if (status != UCS_OK) {
        /* unanswered: the initiator retries, then fails the conn */
        return;
    }

    status = uct_uccl_conn_apply_peer(conn, pkt);
    if (status != UCS_OK) {
        uct_uccl_conn_destroy(conn);
        return;
    }

    ucs_debug("uccl: passive conn %u <- peer conn %u (%u paths)", conn->id,
              conn->remote_id, conn->num_paths);
    (void)uct_uccl_conn_send_pkt(conn, UCT_UCCL_CTL_CONN_REP, UCS_OK);
}


static void uct_uccl_conn_handle_rep(uct_uccl_iface_t *iface,
                                     const uct_uccl_conn_pkt_t *pkt,
                                     const uct_uccl_ctl_src_t *src)
{
    uct_uccl_conn_t *conn = uct_uccl_conn_bound(iface, pkt->dst_conn_id,
                                                pkt->echo_token, src);
    ucs_status_t status;

    if ((conn == NULL) || conn->passive) {
        return;
    }

    if (conn->state != UCT_UCCL_CONN_CONNECTING) {
        return; /* duplicate reply */
    }

    if ((pkt->status != UCS_OK) || (pkt->num_paths > conn->num_paths) ||
        !uct_uccl_conn_pkt_compatible(iface, pkt)) {
        ucs_error("uccl: peer rejected connection %u: %s", conn->id,
                  ucs_status_string(pkt->status != UCS_OK ? pkt->status :
                                    UCS_ERR_UNSUPPORTED));
        uct_uccl_conn_fail(conn, UCS_ERR_UNREACHABLE);
        return;
    }

    status = UCS_OK;
    if (pkt->num_paths < conn->num_paths) {
        status = uct_uccl_conn_paths_trim(conn, pkt->num_paths);
    }
    if (status == UCS_OK) {
        status = uct_uccl_conn_apply_peer(conn, pkt);
    }
    if (status != UCS_OK) {
        uct_uccl_conn_fail(conn, status);
        return;
    }

    ucs_debug("uccl: conn %u connected to peer conn %u after %u tries",
              conn->id, conn->remote_id, conn->conn_tries);
    /* what waited for the connection: queued chunks, pending requests */
    if ((conn->tx_queued > 0) || !ucs_queue_is_empty(&conn->pending_q)) {
        uct_uccl_iface_sched_add(iface, conn);
    }
    uct_uccl_tx_check_flush(conn); /* flushes requested while connecting */
}

/* The peer's side of the conn is gone. Operations outstanding, or a
 * keepalive probe (uct_ep_check), cannot complete: the conn fails now. An
 * idle conn fails at its next operation or check, while a flush of what
 * completed before succeeds, as over a connected QP whose peer vanished. */
static void uct_uccl_conn_peer_closed(uct_uccl_conn_t *conn)
{
    if (!uct_uccl_tx_is_flushed(conn) ||
        !ucs_queue_is_empty(&conn->pending_q) || (conn->ka_start != 0)) {
        uct_uccl_conn_fail(conn, UCS_ERR_CONNECTION_RESET);
    } else {
        conn->peer_closed = 1;
    }
}

static void uct_uccl_conn_handle_disconnect(uct_uccl_iface_t *iface,
                                            const uct_uccl_disconnect_t *pkt,
                                            const uct_uccl_ctl_src_t *src)
{
    uct_uccl_conn_t *conn = uct_uccl_conn_bound(iface, pkt->dst_conn_id,
                                                pkt->token, src);

    if ((conn == NULL) || (conn->remote_id != pkt->src_conn_id)) {
        return;
    }

    if (conn->passive) {
        ucs_debug("uccl: peer %s conn %u", (pkt->reason == UCS_OK) ?
                  "closed" : "failed", conn->id);
        uct_uccl_conn_destroy(conn);
    } else if (pkt->reason != UCS_OK) {
        /* the serving side failed (a broken QP, say) or its iface closed:
         * UCX hears it now or at the next operation, not after the peer
         * timeout */
        ucs_diag("uccl: peer closed conn %u: %s", conn->id,
                 ucs_status_string((ucs_status_t)pkt->reason));
        uct_uccl_conn_peer_closed(conn);
    }
}

static void uct_uccl_conn_send_keepalive(uct_uccl_conn_t *conn,
                                         uint32_t flags, uint64_t ts_ns)
{
    uct_uccl_keepalive_t pkt;

    memset(&pkt, 0, sizeof(pkt));
    uct_uccl_wire_hdr_init(&pkt.hdr, UCT_UCCL_CTL_KEEPALIVE, sizeof(pkt));
    pkt.dst_conn_id = conn->remote_id;
    pkt.token       = conn->remote_token;
    pkt.src_conn_id = conn->id;
    pkt.flags       = flags;
    pkt.ts_ns       = ts_ns;
    /* a probe lost here or on the wire is resent by the timer */
    (void)uct_uccl_iface_ctl_send(conn->iface, conn->ah, conn->remote_ctl_qpn,
                                  &pkt, sizeof(pkt));
}

/* uct_ep_check: an idle conn (a rendezvous waiting for its peer, say) has
 * no chunk whose timeout would notice a dead peer, so ask the peer's
 * engine; no answer within PEER_TIMEOUT fails the conn */
ucs_status_t uct_uccl_conn_check(uct_uccl_conn_t *conn)
{
    uint64_t now;

    /* set-up has its own timer; a failed conn was reported already */
    if ((conn->state != UCT_UCCL_CONN_CONNECTED) || (conn->ka_start != 0)) {
        return UCS_OK;
    }
    if (conn->peer_closed) {
        (void)uct_uccl_conn_fail_later(conn);
        return UCS_OK;
    }

    now               = uct_uccl_now_ns();
    conn->ka_start    = now;
    conn->ka_next_try = now + conn->iface->config.conn_retry_ns;
    uct_uccl_conn_send_keepalive(conn, 0, now);
    return UCS_OK;
}

static void uct_uccl_conn_handle_keepalive(uct_uccl_iface_t *iface,
                                           const uct_uccl_keepalive_t *pkt,
                                           const uct_uccl_ctl_src_t *src)
{
    uct_uccl_conn_t *conn = uct_uccl_conn_bound(iface, pkt->dst_conn_id,
                                                pkt->token, src);

    /* no answer: the prober's conn times out, as it should */
    if ((conn == NULL) || (conn->remote_id != pkt->src_conn_id) ||
        (conn->state != UCT_UCCL_CONN_CONNECTED)) {
        return;
    }

    ++conn->ka_rx;
    if (!(pkt->flags & UCT_UCCL_KEEPALIVE_REPLY)) {
        uct_uccl_conn_send_keepalive(conn, UCT_UCCL_KEEPALIVE_REPLY,
                                     pkt->ts_ns);
    } else if (pkt->ts_ns == conn->ka_start) {
        conn->ka_start = 0; /* a late reply to an older probe is ignored */
    }
}

static void uct_uccl_conn_keepalive_timer(uct_uccl_conn_t *conn,
                                          uint64_t now)
{
    uct_uccl_iface_t *iface = conn->iface;

    if ((conn->ka_start == 0) || (now < conn->ka_next_try)) {
        return;
    }

    if (now - conn->ka_start >= iface->config.peer_timeout_ns) {
        ucs_debug("uccl: conn %u: no keepalive reply for %.1f ms", conn->id,
                  (now - conn->ka_start) / 1e6);
        iface->stats.peers_lost += conn->passive;
        uct_uccl_conn_fail(conn, UCS_ERR_ENDPOINT_TIMEOUT);
        return;
    }

    conn->ka_next_try = now + iface->config.conn_retry_ns;
    uct_uccl_conn_send_keepalive(conn, 0, conn->ka_start);
}

/* No ep watches a passive conn: when its peer has been silent for
 * IDLE_TIMEOUT, probe it, so that a peer that died while idle does not
 * hold the conn's QPs and buffers until the iface closes */
static void uct_uccl_conn_idle_check(uct_uccl_conn_t *conn, uint64_t now)
{
    const uct_uccl_conn_stats_t *s = &conn->stats;
    uint64_t seen = s->chunks_rx + s->dup_rx + s->acks_rx + conn->ka_rx;

    if ((seen != conn->idle_seen) || (conn->idle_since == 0)) {
        conn->idle_seen  = seen;
        conn->idle_since = now;
    } else if (now - conn->idle_since >= conn->iface->config.idle_timeout_ns) {
        conn->idle_since = now;
        (void)uct_uccl_conn_check(conn);
    }
}

static void uct_uccl_conn_handle_ack(uct_uccl_iface_t *iface,
                                     const uct_uccl_ack_t *ack,
                                     const uct_uccl_ctl_src_t *src)
{
    uct_uccl_conn_t *conn = uct_uccl_conn_bound(iface, ack->dst_conn_id,
                                                ack->token, src);

    if ((conn == NULL) || (conn->state != UCT_UCCL_CONN_CONNECTED) ||
        conn->rc) {
        return;
    }
    uct_uccl_tx_handle_ack(conn, ack);
}

void uct_uccl_conn_handle_ctl(uct_uccl_iface_t *iface, const void *pkt,
                              size_t len, const uct_uccl_ctl_src_t *src)
{
    const uct_uccl_ctl_hdr_t *hdr = pkt, *rec;
    const uct_uccl_ack_batch_t *batch;
    ucs_status_t status;
    unsigned i;

    status = uct_uccl_wire_ctl_check(pkt, len);
    if (status != UCS_OK) {
        ++iface->stats.bad_ctl;
        ucs_debug("uccl: dropped a malformed control packet (%zu bytes): %s",
                  len, ucs_status_string(status));
        return;
    }

    switch (hdr->type) {
    case UCT_UCCL_CTL_CONN_REQ:
        uct_uccl_conn_handle_req(iface, pkt, src);
        break;
    case UCT_UCCL_CTL_CONN_REP:
        uct_uccl_conn_handle_rep(iface, pkt, src);
        break;
    case UCT_UCCL_CTL_ACK:
        uct_uccl_conn_handle_ack(iface, pkt, src);
        break;
    case UCT_UCCL_CTL_ACK_BATCH:
        batch = pkt;
        rec   = uct_uccl_wire_batch_first(batch);
        for (i = 0; i < batch->count; ++i) {
            uct_uccl_conn_handle_ack(iface, (const uct_uccl_ack_t*)rec, src);
            rec = uct_uccl_wire_batch_next(rec);
        }
        break;
    case UCT_UCCL_CTL_DISCONNECT:
        uct_uccl_conn_handle_disconnect(iface, pkt, src);
        break;
    case UCT_UCCL_CTL_KEEPALIVE:
        uct_uccl_conn_handle_keepalive(iface, pkt, src);
        break;
    default:
        /* wire_ctl_check accepts no other type */
        break;
    }
}

void uct_uccl_conn_fail(uct_uccl_conn_t *conn, ucs_status_t status)
{
    struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
    uct_uccl_ep_t *ep       = conn->ep;
    unsigned i;

    if (conn->state == UCT_UCCL_CONN_FAILED) {
        return;
    }

    ucs_diag("uccl: %s conn %u failed: %s",
             conn->passive ? "passive" : "active", conn->id,
             ucs_status_string(status));
    conn->state       = UCT_UCCL_CONN_FAILED;
    conn->fail_status = status;

    /* stop the wire: outstanding WRs flush back with errors */
    for (i = 0; i < conn->num_paths; ++i) {
        if (conn->paths[i].qp != NULL) {
            (void)ibv_modify_qp(conn->paths[i].qp, &attr, IBV_QP_STATE);
        }
    }

    /* unless the peer is gone, it learns at once (its ep errors out, or its
     * passive side is reaped) */
    if ((status != UCS_ERR_ENDPOINT_TIMEOUT) &&
        (status != UCS_ERR_CONNECTION_RESET)) {
        uct_uccl_conn_send_disconnect(conn, status);
    }
    uct_uccl_tx_purge(conn, status);
    if (ep != NULL) {
        /* UCX may destroy the ep (and this conn) from the callback: it
         * runs when the engine is done (uccl_async.c) */
        uct_uccl_async_defer_err(conn);
    }
}

/* An operation found the peer gone (peer_closed): the conn fails, UCX
 * hears of it from the next progress call (not from inside the operation,
 * whose ep the error callback may destroy) */
ucs_status_t uct_uccl_conn_fail_later(uct_uccl_conn_t *conn)
{
    uct_uccl_conn_fail(conn, UCS_ERR_CONNECTION_RESET);
    return conn->fail_status;
}

void uct_uccl_conn_timers(uct_uccl_iface_t *iface, uint64_t now)
{
    uct_uccl_conn_t *conn, *tmp;

    ucs_list_for_each_safe(conn, tmp, &iface->conns, list) {
        if (conn->state == UCT_UCCL_CONN_CONNECTING) {
            if (conn->passive || (now < conn->conn_next_try)) {
                continue;
            }
            if (now - conn->conn_start >= iface->config.conn_timeout_ns) {
                ucs_error("uccl: no reply to %u connection requests",
                          conn->conn_tries);
                uct_uccl_conn_fail(conn, UCS_ERR_UNREACHABLE);
                /* the callback may have destroyed anything: start over */
                return;
            }
            ++conn->conn_tries;
            conn->conn_next_try = now + iface->config.conn_retry_ns;
            (void)uct_uccl_conn_send_pkt(conn, UCT_UCCL_CTL_CONN_REQ, UCS_OK);
        } else if (conn->state == UCT_UCCL_CONN_CONNECTED) {
            uct_uccl_tx_timers(conn, now);
            if (conn->passive && (conn->state == UCT_UCCL_CONN_CONNECTED) &&
                (iface->config.idle_timeout_ns != UINT64_MAX)) {
                uct_uccl_conn_idle_check(conn, now);
            }
            if (conn->state == UCT_UCCL_CONN_CONNECTED) {
                uct_uccl_conn_keepalive_timer(conn, now);
            }
            if (conn->state == UCT_UCCL_CONN_FAILED) {
                return;
            }
        } else if (conn->passive) {
            /* failed, and no ep will ever destroy it */
            uct_uccl_conn_destroy(conn);
        }
    }
}

void uct_uccl_conn_send_disconnect(uct_uccl_conn_t *conn, ucs_status_t reason)
{
    uct_uccl_disconnect_t pkt;

    if ((conn->state == UCT_UCCL_CONN_CONNECTING) ||
        (conn->remote_id == UCT_UCCL_CONN_ID_NONE)) {
        return;
    }

    memset(&pkt, 0, sizeof(pkt));
    uct_uccl_wire_hdr_init(&pkt.hdr, UCT_UCCL_CTL_DISCONNECT, sizeof(pkt));
    pkt.dst_conn_id = conn->remote_id;
    pkt.token       = conn->remote_token;
    pkt.src_conn_id = conn->id;
    pkt.reason      = reason;
    (void)uct_uccl_iface_ctl_send(conn->iface, conn->ah, conn->remote_ctl_qpn,
                                  &pkt, sizeof(pkt));
}

/* The congestion control's state and counters, on the conn's line */
static void uct_uccl_conn_dump_cc(uct_uccl_conn_t *conn, FILE *stream)
{
    uct_uccl_cc_stats_t cs;

    uct_uccl_cc_query(&conn->cc, &cs);
    fprintf(stream, " cc %s cc_cwnd %lu cc_rate_mbps %lu cc_srtt_us %.1f "
            "cc_min_rtt_us %.1f cc_target_us %.1f cc_incr %lu cc_decr %lu "
            "cc_paced %lu cc_samples %lu cc_lost_bytes %lu cc_timeouts %lu",
            (conn->cc.ops != NULL) ? conn->cc.ops->name : "none",
            cs.cwnd_bytes, cs.rate_bps / 1000000, cs.srtt_ns / 1e3,
            cs.min_rtt_ns / 1e3, cs.target_ns / 1e3, cs.increases,
            cs.decreases, conn->stats.cc_paced, conn->stats.cc_samples,
            cs.lost_bytes, cs.timeouts);
}

void uct_uccl_conn_dump_stats(uct_uccl_conn_t *conn, FILE *stream)
{
    const uct_uccl_conn_stats_t *s = &conn->stats;

    fprintf(stream, "uccl[%d]   conn %u%s peer %u %s paths %u: chunks_tx %lu "
            "bytes_tx %lu chunks_rx %lu retx %lu fast_retx %lu "
            "tail_probes %lu timeouts %lu retx_bytes %lu retx_obsolete %lu "
            "retx_direct %lu tail_marks %lu dup_rx %lu acks_tx %lu "
            "acks_rx %lu sq_full %lu am_held %lu srtt_us %.1f rto_us %.1f "
            "cwnd %lu inflight %u queued %u ops %lu zombies %lu",
            getpid(), conn->id, conn->passive ? " (passive)" : "",
            conn->remote_id,
            (conn->state == UCT_UCCL_CONN_CONNECTED) ? "connected" :
            (conn->state == UCT_UCCL_CONN_FAILED) ? "failed" : "connecting",
            conn->num_paths, s->chunks_tx, s->bytes_tx, s->chunks_rx, s->retx,
            s->fast_retx, s->tail_probes, s->timeouts, s->retx_bytes,
            s->retx_obsolete, s->retx_direct, s->tail_marks, s->dup_rx,
            s->acks_tx, s->acks_rx,
            s->sq_full, s->am_held, conn->rto.srtt_ns / 1e3,
            uct_uccl_rto_current(&conn->rto) / 1e3, conn->cc.cwnd_bytes,
            conn->rc ? conn->rc_outstanding :
                       uct_uccl_tracker_outstanding(&conn->tracker),
            conn->tx_queued, ucs_list_length(&conn->ops),
            ucs_list_length(&conn->zombies));
    uct_uccl_conn_dump_cc(conn, stream);
    fputc('\n', stream);
}

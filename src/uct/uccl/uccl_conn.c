/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Connections: P data QP pairs between two ifaces, set up by a request/reply
 * over the UD control QPs (retried until answered, idempotent on
 * duplicates), failed when the peer stops answering. The initiator asks
 * for P paths, the reply grants P or fewer (each side's QP budget,
 * uccl_budget.h).
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <ucs/datastruct/mpool.inl>
#include <string.h>
#include <sys/random.h>


/* A conn's token: unpredictable (not a counter or the clock), never 0 */
uint64_t uct_uccl_conn_random_token(void)
{
    uint64_t token = 0;

    while ((token == 0) &&
           (getrandom(&token, sizeof(token), 0) != sizeof(token))) {
        token = ucs_generate_uuid((uintptr_t)&token);
    }
    return token;
}

void uct_uccl_conn_ah_attr(uct_uccl_iface_t *iface,
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

/* completions and arrivals on `qp` belong to `path` */
static ucs_status_t uct_uccl_conn_qpn_add(uct_uccl_iface_t *iface,
                                          struct ibv_qp *qp,
                                          uct_uccl_qp_t *path)
{
    khiter_t it;
    int ret;

    uct_uccl_iface_qp_forget(iface, qp->qp_num);
    it = kh_put(uct_uccl_qpn, &iface->qpn_hash, qp->qp_num, &ret);
    if (ret <= 0) {
        ucs_error("uccl: QPN 0x%x already known", qp->qp_num);
        return UCS_ERR_ALREADY_EXISTS;
    }
    kh_val(&iface->qpn_hash, it) = path;
    return UCS_OK;
}

/* A data QP of the conn's type in INIT, on the iface's SRQ and CQs, its
 * completions and arrivals known to be path's */
static ucs_status_t uct_uccl_conn_ibqp_create(uct_uccl_conn_t *conn,
                                              uct_uccl_qp_t *path,
                                              struct ibv_qp **qp_p)
{
    uct_uccl_iface_t *iface         = conn->iface;
    struct ibv_qp_init_attr qp_init = {};
    struct ibv_qp_attr attr         = {};
    struct ibv_qp *qp;

    qp_init.send_cq          = iface->send_cq;
    qp_init.recv_cq          = iface->recv_cq;
    qp_init.srq              = iface->srq;
    qp_init.qp_type          = conn->rc ? IBV_QPT_RC : IBV_QPT_UC;
    qp_init.cap.max_send_wr  = iface->config.tx_queue_len;
    qp_init.cap.max_send_sge = 3;
    qp_init.cap.max_inline_data = UCT_UCCL_INLINE_MAX;
    qp_init.sq_sig_all       = 0;     /* the last WR of each chain */
    qp = ibv_create_qp(iface->md->pd, &qp_init);
    if (qp == NULL) {
        /* the caller decides: fewer paths, or no conn */
        ucs_debug("uccl: cannot create a %s data QP: %m",
                  conn->rc ? "RC" : "UC");
        return UCS_ERR_NO_RESOURCE;
    }
    /* the device may grant less inline room than asked: the least of
     * the conn's paths holds for all (conn create starts it at the most) */
    conn->max_inline = ucs_min(conn->max_inline,
                               qp_init.cap.max_inline_data);

    attr.qp_state        = IBV_QPS_INIT;
    attr.pkey_index      = 0;
    attr.port_num        = iface->port_num;
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           (conn->rc ? IBV_ACCESS_REMOTE_READ : 0);
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        ucs_error("uccl: data QP 0x%x to INIT failed: %m", qp->qp_num);
        goto err_destroy;
    }
    if (uct_uccl_conn_qpn_add(iface, qp, path) != UCS_OK) {
        goto err_destroy;
    }
    *qp_p = qp;
    return UCS_OK;

err_destroy:
    ibv_destroy_qp(qp);
    return UCS_ERR_IO_ERROR;
}

/* The QP, its QPN's entry and its share of the QP budget */
static void uct_uccl_conn_ibqp_drop(uct_uccl_iface_t *iface,
                                    struct ibv_qp *qp)
{
    khiter_t it = kh_get(uct_uccl_qpn, &iface->qpn_hash, qp->qp_num);

    uct_uccl_iface_qp_forget(iface, qp->qp_num);
    if (it != kh_end(&iface->qpn_hash)) {
        kh_del(uct_uccl_qpn, &iface->qpn_hash, it);
    }
    ibv_destroy_qp(qp);
    uct_uccl_budget_give(iface->md->budget, 1);
}

static ucs_status_t uct_uccl_conn_qp_init(uct_uccl_conn_t *conn,
                                          uct_uccl_qp_t *path)
{
    ucs_status_t status;

    ucs_queue_head_init(&path->held);
    path->sent = ucs_malloc((conn->iface->config.tx_ring_mask + 1) *
                            sizeof(*path->sent), "uccl_path_sent");
    if (path->sent == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = uct_uccl_conn_ibqp_create(conn, path, &path->qp);
    if (status != UCS_OK) {
        ucs_free(path->sent);
        path->sent = NULL;
    }
    return status;
}

/* RC path reset: a new QP for `path`, in INIT, known by its QPN */
ucs_status_t uct_uccl_conn_qp_next_create(uct_uccl_conn_t *conn,
                                          uct_uccl_qp_t *path)
{
    uct_uccl_iface_t *iface = conn->iface;
    ucs_status_t status;

    ucs_assert(path->next_qp == NULL);
    if (uct_uccl_budget_take(iface->md->budget, 1) == 0) {
        return UCS_ERR_NO_RESOURCE;
    }
    status = uct_uccl_conn_ibqp_create(conn, path, &path->next_qp);
    if (status != UCS_OK) {
        uct_uccl_budget_give(iface->md->budget, 1);
    }
    return status;
}

void uct_uccl_conn_qp_next_drop(uct_uccl_conn_t *conn, uct_uccl_qp_t *path)
{
    if (path->next_qp != NULL) {
        uct_uccl_conn_ibqp_drop(conn->iface, path->next_qp);
        path->next_qp = NULL;
    }
}

/* The new QP takes the old one's place; the old one has nothing out */
void uct_uccl_conn_qp_swap(uct_uccl_conn_t *conn, uct_uccl_qp_t *path)
{
    ucs_assert((path->outstanding == 0) && (path->chain == NULL) &&
               ucs_queue_is_empty(&path->held));
    uct_uccl_conn_ibqp_drop(conn->iface, path->qp);
    path->qp            = path->next_qp;
    path->remote_qpn    = path->next_remote_qpn;
    path->next_qp       = NULL;
    path->psn_used      = 0;   /* the new pair starts at the conn's PSNs */
    /* what the peer told was of the old pair; ours stays for a CONFIRM
     * the peer may ask for again */
    path->psn_flags    &= ~UCT_UCCL_QP_F_PEER_TOLD;
}

/* `qp` to RTR and RTS, paired with the peer's `remote_qpn` */
ucs_status_t uct_uccl_conn_ibqp_connect(uct_uccl_conn_t *conn,
                                        struct ibv_qp *qp,
                                        uint32_t remote_qpn)
{
    uct_uccl_iface_t *iface = conn->iface;
    struct ibv_qp_attr attr = {};
    int mask;

    attr.qp_state    = IBV_QPS_RTR;
    attr.path_mtu    = conn->path_mtu;
    attr.dest_qp_num = remote_qpn;
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
    if (ibv_modify_qp(qp, &attr, mask)) {
        ucs_error("uccl: data QP 0x%x to RTR failed: %m", qp->qp_num);
        return UCS_ERR_IO_ERROR;
    }

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn   = conn->psn;
    mask          = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (conn->rc) {
        attr.timeout       = iface->config.rc_timeout;
        attr.retry_cnt     = UCT_UCCL_RC_RETRY_CNT;
        attr.rnr_retry     = 7;
        attr.max_rd_atomic = ucs_max(ucs_min(iface->md->dev_attr.max_qp_rd_atom,
                                             16), 1);
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                IBV_QP_MAX_QP_RD_ATOMIC;
    }
    if (ibv_modify_qp(qp, &attr, mask)) {
        ucs_error("uccl: data QP 0x%x to RTS failed: %m", qp->qp_num);
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
    pparams.init_rtt_ns     = UCT_UCCL_PATH_INIT_RTT_NS;
    pparams.loss_penalty_ns = UCT_UCCL_PATH_LOSS_PENALTY_NS;
    pparams.max_penalty_ns  = UCT_UCCL_PATH_MAX_PENALTY_NS;
    pparams.halflife_shift  = UCT_UCCL_PATH_HALFLIFE_SHIFT;
    pparams.small_size      = UCT_UCCL_PATH_STICKY_MAX;
    pparams.explore_shift   = UCT_UCCL_PATH_EXPLORE_SHIFT;
    pparams.park_losses     = UCT_UCCL_PATH_PARK_LOSSES;
    pparams.max_parked      = conn->num_paths / UCT_UCCL_PATH_PARK_DIV;
    pparams.probe_ns        = UCT_UCCL_PATH_PROBE_NS;
    pparams.probe_max_shift = UCT_UCCL_PATH_PROBE_MAX_SHIFT;
    pparams.rtt_min_win_ns  = UCT_UCCL_PATH_RTT_MIN_WIN_NS;
    pparams.queue_slack_ns  = UCT_UCCL_PATH_QUEUE_SLACK_NS;
    pparams.lag_scores      = conn->rc; /* completions are its samples */
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
    uct_uccl_credit_conn_attach(conn);
    return UCS_OK;
}

static void uct_uccl_conn_paths_state_cleanup(uct_uccl_conn_t *conn)
{
    uct_uccl_cc_cleanup(&conn->cc);
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
    conn->max_inline = UCT_UCCL_INLINE_MAX;

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

    --conn->iface->paced;
    uct_uccl_iface_sched_add(conn->iface, conn);
}

/* RC: the completion-time estimators of the stall rule */
static void uct_uccl_conn_rc_dirs_init(uct_uccl_conn_t *conn)
{
    const uct_uccl_rto_params_t params = {
        .init_ns     = UCT_UCCL_RC_STALL_RTO_INIT_NS,
        .min_ns      = 1,
        .max_ns      = UCT_UCCL_RC_STALL_RTO_MAX_NS,
        .max_retries = 1
    };
    unsigned i;

    for (i = 0; i < UCT_UCCL_RC_DIRS; ++i) {
        (void)uct_uccl_rto_init(&conn->rc_dir[i].lat, &params); /* valid */
    }
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
    conn->chunk_cur      = iface->config.chunk_size;
    conn->chunk_grow_at  = 0;
    ucs_queue_head_init(&conn->tx_queue);
    ucs_queue_head_init(&conn->pending_q);
    ucs_list_head_init(&conn->ops);
    ucs_list_head_init(&conn->flushes);
    ucs_list_head_init(&conn->zombies);
    ucs_list_head_init(&conn->rc_inflight);
    ucs_list_head_init(&conn->gets);
    kh_init_inplace(uct_uccl_gets, &conn->get_ids);
    ucs_wtimer_init(&conn->pace_timer, uct_uccl_conn_pace_cb);
    uct_uccl_conn_timer_init(conn);
    uct_uccl_sched_conn_init(conn);

    status = uct_uccl_rto_init(&conn->rto, &iface->config.rto);
    if (status != UCS_OK) {
        goto err_free;
    }
    uct_uccl_conn_rc_dirs_init(conn);

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
    uct_uccl_conn_timer_start(conn); /* set-up retries */

    status = uct_uccl_stats_conn_init(conn);
    if (status == UCS_OK) {
        status = uct_uccl_conn_paths_create(conn, want_paths);
    }
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
    uct_uccl_conn_ibqp_drop(iface, path->qp);
    ucs_free(path->sent);
}

/* The peer granted fewer paths than we made (its QP budget): the others
 * were never connected nor used */
ucs_status_t uct_uccl_conn_paths_trim(uct_uccl_conn_t *conn,
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

    /* inline AMs posted unsignaled after its last signaled WR read no
     * memory and may complete never: nothing to wait for */
    path->outstanding -= path->unsig_run;
    path->nosig       -= path->unsig_run;
    path->unsig_run    = 0;
    it = kh_get(uct_uccl_qpn, &iface->qpn_hash, path->qp->qp_num);
    if ((path->outstanding > 0) && (it != kh_end(&iface->qpn_hash))) {
        drain = ucs_malloc(sizeof(*drain), "uccl_drain_qp");
    }
    if ((drain == NULL) || ibv_modify_qp(path->qp, &attr, IBV_QP_STATE)) {
        iface->tx_outstanding -= path->outstanding - path->nosig;
        uct_uccl_conn_qp_destroy(iface, path);
        ucs_free(drain);
        return;
    }

    *drain       = *path;
    drain->conn  = NULL;
    drain->chain = NULL;
    ucs_queue_head_init(&drain->held);
    uct_uccl_iface_qp_forget(iface, path->qp->qp_num);
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

    uct_uccl_sched_conn_cleanup(conn);
    if (uct_uccl_conn_is_paced(conn)) {
        ucs_wtimer_remove(&iface->pace_wheel, &conn->pace_timer);
        --iface->paced;
    }
    if (conn->ack_pending) {
        ucs_list_del(&conn->ack_link);
    }
    if (conn->ack_in_held) {
        ucs_list_del(&conn->ack_in_link);
    }
    uct_uccl_credit_conn_detach(conn);
    uct_uccl_async_conn_cleanup(conn);
    uct_uccl_conn_timer_cleanup(conn);
    uct_uccl_stats_conn_cleanup(conn);

    for (i = 0; i < conn->num_paths; ++i) {
        path = &conn->paths[i];
        uct_uccl_conn_qp_next_drop(conn, path);
        if (path->qp != NULL) {
            uct_uccl_conn_qp_release(iface, path);
        }
    }

    if (conn->order_valid) {
        uct_uccl_order_cleanup(&conn->order);
    }
    if (conn->sack_valid) {
        uct_uccl_sack_cleanup(&conn->sack);
    }
    uct_uccl_cc_cleanup(&conn->cc);
    uct_uccl_paths_cleanup(&conn->sel);
    uct_uccl_tracker_cleanup(&conn->tracker);
    kh_destroy_inplace(uct_uccl_gets, &conn->get_ids);
    ibv_destroy_ah(conn->ah);
    uct_uccl_conn_peer_remove(conn);
    ucs_ptr_array_remove(&iface->conn_ids, conn->id);
    ucs_list_del(&conn->list);
    iface->num_passive -= conn->passive;
    ucs_free(conn->paths);
    ucs_free(conn);
}


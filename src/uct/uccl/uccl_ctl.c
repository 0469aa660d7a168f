/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The control protocol over the UD control QP: conn set-up by request and
 * reply (retried until answered, idempotent on duplicates), binding of
 * every control packet to its conn and peer, and the dispatcher of control
 * packets (set-up, ACKs, credit, disconnect, keepalive).
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <string.h>


/* A conn packet of `type` for `num_paths` paths: the header and what the
 * iface tells every peer (its address, chunk and receive sizes) */
static void uct_uccl_conn_pkt_init(uct_uccl_iface_t *iface,
                                   uct_uccl_conn_pkt_t *pkt,
                                   uct_uccl_ctl_type_t type,
                                   unsigned num_paths)
{
    unsigned i;

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
    for (i = 0; i < iface->ctl.nalt; ++i) {
        pkt->ctl_alt_qpn[i] = iface->ctl.alt[i]->qp_num;
    }
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

ucs_status_t uct_uccl_conn_send_pkt(uct_uccl_conn_t *conn,
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

    conn->remote_id          = pkt->src_conn_id;
    conn->remote_uuid        = pkt->iface_uuid;
    conn->remote_token       = pkt->token;
    conn->remote_psn         = pkt->psn & 0xffffff;
    conn->remote_rx_buf_size = pkt->rx_buf_size;
    conn->remote_dev.lid     = pkt->lid;
    memcpy(conn->remote_dev.gid, pkt->gid, sizeof(conn->remote_dev.gid));
    memcpy(conn->remote_ctl_alt, pkt->ctl_alt_qpn,
           sizeof(conn->remote_ctl_alt));
    while ((mtu > IBV_MTU_256) && (uct_uccl_mtu_bytes(mtu) > pkt->mtu)) {
        --mtu;
    }

    /* never send more than the peer can receive in one SRQ buffer, nor keep
     * more in flight than its SACK window; all our conns to its iface
     * together no more than its receive window */
    uct_uccl_tracker_set_limit(&conn->tracker,
                               ucs_min(pkt->sack_bits,
                                       iface->config.sack_window));
    status = uct_uccl_dest_attach(conn, pkt->sack_bits);
    if (status != UCS_OK) {
        return status;
    }

    /* a well-behaved peer keeps at most rx_window chunks in flight: as
     * many messages may wait for the chunks (UC) or AMs (RC) before them */
    status = uct_uccl_order_init(&conn->order, iface->config.sack_window,
                                 iface->config.rx_window);
    if (status != UCS_OK) {
        return status;
    }
    conn->order_valid = 1;
    if (!conn->rc) {
        status = uct_uccl_sack_init(&conn->sack, iface->config.sack_window,
                                    pkt->init_csn & UCT_UCCL_SEQ_MASK);
        if (status != UCS_OK) {
            return status;
        }
        conn->sack_valid = 1;
    } else {
        /* the peer's first AM is numbered init_csn */
        conn->rc_am_csn = uct_uccl_seq_add(pkt->init_csn, UCT_UCCL_SEQ_MASK);
    }

    conn->path_mtu = mtu;
    for (i = 0; i < conn->num_paths; ++i) {
        conn->paths[i].remote_qpn = pkt->qpn[i] & 0xffffff;
        status = uct_uccl_conn_ibqp_connect(conn, conn->paths[i].qp,
                                            conn->paths[i].remote_qpn);
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

/* Did the packet come from one of the control QPs of the conn's peer:
 * the one of the set-up, or one it named there (0: none yet)? */
static int uct_uccl_conn_src_ok(const uct_uccl_conn_t *conn,
                                const uct_uccl_ctl_src_t *src)
{
    unsigned i;

    if (uct_uccl_conn_src_is(src, &conn->remote_dev, conn->remote_ctl_qpn)) {
        return 1;
    }
    for (i = 0; i < UCT_UCCL_WIRE_CTL_ALT; ++i) {
        if ((conn->remote_ctl_alt[i] != 0) &&
            uct_uccl_conn_src_is(src, &conn->remote_dev,
                                 conn->remote_ctl_alt[i])) {
            return 1;
        }
    }
    return 0;
}

/* The conn a control packet names, if it came from that conn's peer: the
 * peer's control QPs and port, and the token we gave it in the set-up.
 * Anything else is counted and dropped. A record of the connected peer
 * shows that it has our set-up packet, so it knows our other control
 * QPs: ours may come from any of them from now on. */
uct_uccl_conn_t *uct_uccl_conn_bound(uct_uccl_iface_t *iface, uint32_t id,
                                     uint64_t token,
                                     const uct_uccl_ctl_src_t *src)
{
    uct_uccl_conn_t *conn = uct_uccl_conn_lookup(iface, id);

    if (conn == NULL) {
        ++iface->stats.unknown_conn;
        return NULL;
    }
    if ((token != conn->token) || !uct_uccl_conn_src_ok(conn, src)) {
        ++iface->stats.forged_ctl;
        return NULL;
    }
    conn->ctl_spread |= (conn->state == UCT_UCCL_CONN_CONNECTED);
    return conn;
}

/* The conn an ACK carried by an AM of `via` names: one of ours to the same
 * peer iface (control QP and port) as via, with the token we gave it */
uct_uccl_conn_t *uct_uccl_conn_sibling(const uct_uccl_conn_t *via, uint32_t id,
                                       uint64_t token)
{
    uct_uccl_iface_t *iface = via->iface;
    uct_uccl_conn_t *conn   = uct_uccl_conn_lookup(iface, id);

    if (conn == NULL) {
        ++iface->stats.unknown_conn;
        return NULL;
    }
    if ((token != conn->token) ||
        (((conn->dest != via->dest) || (conn->dest == NULL)) &&
         !uct_uccl_conn_same_peer(conn, via))) {
        ++iface->stats.forged_ctl;
        return NULL;
    }
    return conn;
}

static uct_uccl_peer_key_t
uct_uccl_conn_peer_key(const uct_uccl_conn_t *conn)
{
    return (uct_uccl_peer_key_t){ .uuid  = conn->remote_uuid,
                                  .token = conn->remote_token,
                                  .id    = conn->remote_id };
}

/* The passive conn that answered the peer conn (uuid, token, id), or NULL.
 * Only passive conns are in the table, so MAX_PEERS bounds it. */
static uct_uccl_conn_t *uct_uccl_conn_peer_find(uct_uccl_iface_t *iface,
                                                uint64_t uuid, uint64_t token,
                                                uint32_t id)
{
    uct_uccl_peer_key_t key = { .uuid = uuid, .token = token, .id = id };
    khiter_t it             = kh_get(uct_uccl_peers, &iface->peers, key);

    return (it == kh_end(&iface->peers)) ? NULL : kh_val(&iface->peers, it);
}

/* A passive conn, set up from its request, answers the repeats of it */
ucs_status_t uct_uccl_conn_peer_add(uct_uccl_conn_t *conn)
{
    khiter_t it;
    int ret;

    it = kh_put(uct_uccl_peers, &conn->iface->peers,
                uct_uccl_conn_peer_key(conn), &ret);
    if (ret <= 0) {
        return UCS_ERR_NO_MEMORY; /* a repeat finds the conn: not present */
    }
    kh_val(&conn->iface->peers, it) = conn;
    return UCS_OK;
}

void uct_uccl_conn_peer_remove(uct_uccl_conn_t *conn)
{
    khash_t(uct_uccl_peers) *peers = &conn->iface->peers;
    khiter_t it;

    if (!conn->passive) {
        return;
    }
    it = kh_get(uct_uccl_peers, peers, uct_uccl_conn_peer_key(conn));
    if ((it != kh_end(peers)) && (kh_val(peers, it) == conn)) {
        kh_del(uct_uccl_peers, peers, it);
    }
}

/* Why a peer's REQ or REP cannot make a conn with us, or NULL: another
 * mode, malformed limits, or receive buffers that our largest SEND (an AM
 * of a segment) would overflow, breaking the peer's QP */
static const char *
uct_uccl_conn_pkt_mismatch(uct_uccl_iface_t *iface,
                           const uct_uccl_conn_pkt_t *pkt)
{
    if (pkt->mode != (iface->rc_mode ? UCT_UCCL_MODE_RC : UCT_UCCL_MODE_UC)) {
        return "another mode (set UCX_UCCL_MODE alike)";
    }
    if ((pkt->rx_buf_size < UCT_UCCL_SEND_HDR_MAX + 1024) ||
        (pkt->sack_bits < 64)) {
        return "malformed limits";
    }
    if (pkt->rx_buf_size < iface->config.seg_size) {
        return "receive buffers smaller than our segment (set "
               "UCX_UCCL_SEG_SIZE and UCX_UCCL_CHUNK_SIZE alike)";
    }
    return NULL;
}

static void uct_uccl_conn_handle_req(uct_uccl_iface_t *iface,
                                     const uct_uccl_conn_pkt_t *pkt,
                                     const uct_uccl_ctl_src_t *src)
{
    uct_uccl_device_addr_t dev = {};
    const char *mismatch;
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
    conn = uct_uccl_conn_peer_find(iface, pkt->iface_uuid, pkt->token,
                                   pkt->src_conn_id);
    if (conn != NULL) {
        ucs_debug("uccl: duplicate CONN_REQ for conn %u", conn->id);
        (void)uct_uccl_conn_send_pkt(conn, UCT_UCCL_CTL_CONN_REP,
                                     (conn->state == UCT_UCCL_CONN_FAILED) ?
                                     conn->fail_status : UCS_OK);
        return;
    }

    mismatch = uct_uccl_conn_pkt_mismatch(iface, pkt);
    if (mismatch != NULL) {
        /* refused, not ignored: the initiator fails at once instead of
         * asking again until its CONN_TIMEOUT */
        ucs_error("uccl: rejecting a connection from a peer: %s", mismatch);
        ++iface->stats.bad_ctl;
        uct_uccl_conn_send_reject(iface, pkt, UCS_ERR_UNSUPPORTED);
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
    if (status == UCS_OK) {
        status = uct_uccl_conn_peer_add(conn);
    }
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
    const char *refusal;
    ucs_status_t status;

    if ((conn == NULL) || conn->passive) {
        return;
    }

    if (conn->state != UCT_UCCL_CONN_CONNECTING) {
        return; /* duplicate reply */
    }

    refusal = (pkt->status != UCS_OK) ?
              ucs_status_string((ucs_status_t)pkt->status) :
              (pkt->num_paths > conn->num_paths) ?
              "more paths than asked for" :
              uct_uccl_conn_pkt_mismatch(iface, pkt);
    if (refusal != NULL) {
        ucs_error("uccl: connection %u refused: %s", conn->id, refusal);
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

    conn->ctl_spread = 1; /* the peer had our REQ */
    ucs_debug("uccl: conn %u connected to peer conn %u after %u tries",
              conn->id, conn->remote_id, conn->conn_tries);
    /* what waited for the connection: queued chunks, pending requests */
    if ((conn->tx_queued > 0) || !ucs_queue_is_empty(&conn->pending_q)) {
        uct_uccl_iface_sched_add(iface, conn);
    }
    uct_uccl_tx_check_flush(conn); /* flushes requested while connecting */
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
    uct_uccl_rx_ack_in_flush(conn); /* ACKs in the order they came */
    uct_uccl_tx_handle_ack(conn, ack, uct_uccl_iface_rx_cqe_ns(iface),
                           iface->rx_poll_ns);
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
            if (rec->type == UCT_UCCL_CTL_CREDIT) {
                uct_uccl_conn_handle_credit(iface,
                                            (const uct_uccl_credit_t*)rec,
                                            src);
            } else {
                uct_uccl_conn_handle_ack(iface, (const uct_uccl_ack_t*)rec,
                                         src);
            }
            rec = uct_uccl_wire_batch_next(rec);
        }
        break;
    case UCT_UCCL_CTL_CREDIT:
        uct_uccl_conn_handle_credit(iface, pkt, src);
        break;
    case UCT_UCCL_CTL_DISCONNECT:
        uct_uccl_conn_handle_disconnect(iface, pkt, src);
        break;
    case UCT_UCCL_CTL_KEEPALIVE:
        uct_uccl_conn_handle_keepalive(iface, pkt, src);
        break;
    case UCT_UCCL_CTL_PATH_RESET:
        uct_uccl_conn_handle_path_reset(iface, pkt, src);
        break;
    default:
        /* wire_ctl_check accepts no other type */
        break;
    }
}


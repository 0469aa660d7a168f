/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * RC path reset: a path whose QP failed (its NIC spent its retries) or
 * stalled (uct_uccl_path_health_rc) gets a new QP pair, which the fabric
 * hashes to another route, instead of staying out for the conn's life.
 *
 * The asker makes a new QP and sends its QPN (REQUEST). The answerer
 * retires the path, moves its old QP to ERR (what it had out flushes back
 * and goes again on other paths; what the asker's old QP still carries is
 * dropped from now on), pairs a new QP with the asker's and answers with
 * its QPN (REPLY). The asker pairs its new QP, moves its old one to ERR
 * (its WRs flush back and go again: none of them can land any more) and
 * confirms (CONFIRM); the answerer waits for that before it sends, as the
 * asker's new QP was not ready before. Each side puts its new QP in the
 * old one's place once the old one has nothing out. REQUEST and REPLY go
 * again every CONN_RETRY until the next step is seen, for CONN_TIMEOUT at
 * most; the path stays retired if the reset gives up. When both sides ask
 * at once, the passive side drops its own request and answers.
 *
 * A WRITE the old pair flushed may have landed (its ACK lost or late):
 * written again after a newer WRITE to the same place, it would undo that
 * one. So REPLY and CONFIRM tell the rq_psn of the sender's old QP, taken
 * once it is in ERR: its peer's flushed WRITEs up to there landed and are
 * done, the others go again (uct_uccl_tx_rc_resolve); until it is told, a
 * side holds them.
 *
 * The control QPs' own route may be down too. An asker unanswered for
 * RESET_ALONE_NS stops its old QP itself when nothing it holds is an RDMA
 * WRITE: a READ's late response dies at a QP in ERR, and an AM the peer
 * gets twice is dropped by its number; a late WRITE could land on what a
 * newer one wrote, so WRITEs wait for the peer's answer or the NIC.
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>


static void uct_uccl_reset_send(uct_uccl_conn_t *conn, unsigned p,
                                uct_uccl_path_reset_step_t step, uint32_t gen,
                                uint32_t qpn)
{
    const uct_uccl_qp_t *path = &conn->paths[p];
    int tell_psn              = (step != UCT_UCCL_PATH_RESET_REQUEST) &&
                                (path->psn_flags & UCT_UCCL_QP_F_OWN_PSN);
    uct_uccl_path_reset_t pkt = {
        .dst_conn_id = conn->remote_id,
        .token       = conn->remote_token,
        .src_conn_id = conn->id,
        .path        = p,
        .step        = step,
        .gen         = gen,
        .qpn         = qpn,
        .flags       = tell_psn ? UCT_UCCL_PATH_RESET_F_PSN : 0,
        .psn         = tell_psn ? path->own_rq_psn : 0
    };

    uct_uccl_wire_hdr_init(&pkt.hdr, UCT_UCCL_CTL_PATH_RESET, sizeof(pkt));
    (void)uct_uccl_conn_ctl_send(conn, &pkt, sizeof(pkt));
}

static void uct_uccl_reset_enter(uct_uccl_conn_t *conn, uct_uccl_qp_t *path,
                                 uct_uccl_reset_state_t state, uint64_t now)
{
    conn->rc_resets     += (path->reset == UCT_UCCL_RESET_NONE);
    path->reset          = state;
    path->reset_start    = now;
    path->reset_next_try = now + conn->iface->config.conn_retry_ns;
    uct_uccl_conn_timer_wake(conn);
}

static void uct_uccl_reset_leave(uct_uccl_conn_t *conn, uct_uccl_qp_t *path)
{
    uct_uccl_conn_qp_next_drop(conn, path);
    conn->rc_resets -= (path->reset != UCT_UCCL_RESET_NONE);
    path->reset      = UCT_UCCL_RESET_NONE;
}

/* Our request is dropped: a late REPLY to it is not confirmed. WRITEs
 * held for the peer's word are not sent again: the conn fails. */
static void uct_uccl_reset_give_up(uct_uccl_conn_t *conn, uct_uccl_qp_t *path)
{
    path->reset_gen_tx += (path->reset == UCT_UCCL_RESET_ASKED);
    uct_uccl_reset_leave(conn, path);
    if (!ucs_queue_is_empty(&path->held)) {
        uct_uccl_conn_fail(conn, UCS_ERR_ENDPOINT_TIMEOUT);
    }
}

/* What the peer's REPLY or CONFIRM tells of its old QP's rq_psn */
static void uct_uccl_reset_peer_psn(uct_uccl_conn_t *conn,
                                    uct_uccl_qp_t *path,
                                    const uct_uccl_path_reset_t *pkt)
{
    if (pkt->flags & UCT_UCCL_PATH_RESET_F_PSN) {
        path->peer_rq_psn  = pkt->psn;
        path->psn_flags   |= UCT_UCCL_QP_F_PEER_PSN;
    } else {
        path->psn_flags   |= UCT_UCCL_QP_F_PEER_MUTE;
    }
    uct_uccl_tx_rc_resolve(conn, path);
}

/* The old QP of p stops: retired (nothing new goes there), moved to ERR
 * (what it has out flushes back and goes again, uct_uccl_tx_rc_failed);
 * its rq_psn is final from then on */
static void uct_uccl_reset_stop_old(uct_uccl_conn_t *conn, unsigned p)
{
    struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
    uct_uccl_qp_t *path     = &conn->paths[p];
    struct ibv_qp_init_attr init;

    if (!uct_uccl_paths_retired(&conn->sel, p)) {
        uct_uccl_paths_retire(&conn->sel, p);
        conn->burst_left = 0;
    }
    path->psn_flags &= ~UCT_UCCL_QP_F_OWN_PSN; /* an older pair's */
    if (ibv_modify_qp(path->qp, &attr, IBV_QP_STATE)) {
        ucs_diag("uccl: conn %u: QP 0x%x to ERR failed: %m", conn->id,
                 path->qp->qp_num);
        return;
    }
    if (ibv_query_qp(path->qp, &attr, IBV_QP_RQ_PSN, &init)) {
        ucs_diag("uccl: conn %u: QP 0x%x: no rq_psn: %m", conn->id,
                 path->qp->qp_num);
        return;
    }
    path->own_rq_psn  = attr.rq_psn & UCT_UCCL_SEQ_MASK;
    path->psn_flags  |= UCT_UCCL_QP_F_OWN_PSN;
}

/* Does the old QP of `path` hold an RDMA WRITE? */
static int uct_uccl_reset_holds_write(const uct_uccl_conn_t *conn,
                                      const uct_uccl_qp_t *path)
{
    unsigned mask = conn->iface->config.tx_ring_mask;
    unsigned i;

    for (i = 0; i < path->outstanding; ++i) {
        if (uct_uccl_chunk_is_rc_write(path->sent[(path->sent_head + i) &
                                                  mask])) {
            return 1;
        }
    }
    return 0;
}

/* May p stop? The conn keeps a path to send on. */
static int uct_uccl_reset_may_stop(const uct_uccl_conn_t *conn, unsigned p)
{
    return uct_uccl_paths_parked(&conn->sel, p) ||
           (uct_uccl_paths_usable(&conn->sel) > 1);
}

void uct_uccl_reset_start(uct_uccl_conn_t *conn, unsigned p, uint64_t now)
{
    uct_uccl_qp_t *path = &conn->paths[p];
    ucs_status_t status;

    if (!conn->rc || (conn->state != UCT_UCCL_CONN_CONNECTED) ||
        (path->reset != UCT_UCCL_RESET_NONE)) {
        return;
    }
    status = uct_uccl_conn_qp_next_create(conn, path);
    if (status != UCS_OK) {
        ucs_diag("uccl: conn %u: no new QP for path %u: %s", conn->id, p,
                 ucs_status_string(status));
        return;
    }
    ++path->reset_gen_tx;
    uct_uccl_reset_enter(conn, path, UCT_UCCL_RESET_ASKED, now);
    uct_uccl_reset_send(conn, p, UCT_UCCL_PATH_RESET_REQUEST,
                        path->reset_gen_tx, path->next_qp->qp_num);
}

static void uct_uccl_reset_answer(uct_uccl_conn_t *conn, unsigned p,
                                  uint32_t gen, uint32_t qpn, uint64_t now)
{
    uct_uccl_qp_t *path = &conn->paths[p];

    if ((int32_t)(gen - path->reset_gen_rx) <= 0) {
        if ((gen == path->reset_gen_rx) &&
            (path->reset == UCT_UCCL_RESET_OFFERED)) {
            uct_uccl_reset_send(conn, p, UCT_UCCL_PATH_RESET_REPLY, gen,
                                path->next_qp->qp_num); /* a repeat */
        }
        return; /* answered and confirmed, or older than that */
    }
    if ((path->reset == UCT_UCCL_RESET_ASKED) && !conn->passive) {
        return; /* both asked: the passive side answers ours */
    }
    if (path->reset == UCT_UCCL_RESET_ASKED) {
        ++path->reset_gen_tx; /* dropped for the peer's */
    }
    if (!uct_uccl_reset_may_stop(conn, p)) {
        ucs_diag("uccl: conn %u: peer asks to reset path %u, the last one",
                 conn->id, p);
        return;
    }
    uct_uccl_reset_leave(conn, path); /* a reset of ours, or an older one */
    if ((uct_uccl_conn_qp_next_create(conn, path) != UCS_OK) ||
        (uct_uccl_conn_ibqp_connect(conn, path->next_qp, qpn) != UCS_OK)) {
        uct_uccl_conn_qp_next_drop(conn, path);
        return; /* the peer asks again */
    }
    uct_uccl_reset_stop_old(conn, p);
    path->next_remote_qpn = qpn;
    path->reset_gen_rx    = gen;
    uct_uccl_reset_enter(conn, path, UCT_UCCL_RESET_OFFERED, now);
    uct_uccl_reset_send(conn, p, UCT_UCCL_PATH_RESET_REPLY, gen,
                        path->next_qp->qp_num);
}

static void uct_uccl_reset_on_reply(uct_uccl_conn_t *conn,
                                    const uct_uccl_path_reset_t *pkt)
{
    unsigned p          = pkt->path;
    uct_uccl_qp_t *path = &conn->paths[p];

    if (pkt->gen != path->reset_gen_tx) {
        return;
    }
    if (path->reset == UCT_UCCL_RESET_ASKED) {
        if (!uct_uccl_reset_may_stop(conn, p) ||
            (uct_uccl_conn_ibqp_connect(conn, path->next_qp, pkt->qpn) !=
             UCS_OK)) {
            uct_uccl_reset_give_up(conn, path);
            return;
        }
        uct_uccl_reset_stop_old(conn, p);
        path->next_remote_qpn = pkt->qpn;
        path->reset           = UCT_UCCL_RESET_READY;
        uct_uccl_reset_send(conn, p, UCT_UCCL_PATH_RESET_CONFIRM, pkt->gen,
                            0);
        uct_uccl_reset_peer_psn(conn, path, pkt); /* may fail the conn */
        return;
    }
    if ((path->reset == UCT_UCCL_RESET_READY) ||
        (path->reset == UCT_UCCL_RESET_NONE)) {
        /* the answerer did not see our CONFIRM */
        uct_uccl_reset_send(conn, p, UCT_UCCL_PATH_RESET_CONFIRM, pkt->gen,
                            0);
    }
}

void uct_uccl_conn_handle_path_reset(uct_uccl_iface_t *iface,
                                     const uct_uccl_path_reset_t *pkt,
                                     const uct_uccl_ctl_src_t *src)
{
    uct_uccl_conn_t *conn = uct_uccl_conn_bound(iface, pkt->dst_conn_id,
                                                pkt->token, src);
    uct_uccl_qp_t *path;

    if ((conn == NULL) || !conn->rc ||
        (conn->state != UCT_UCCL_CONN_CONNECTED) ||
        (pkt->path >= conn->num_paths)) {
        return;
    }
    path = &conn->paths[pkt->path];
    switch (pkt->step) {
    case UCT_UCCL_PATH_RESET_REQUEST:
        uct_uccl_reset_answer(conn, pkt->path, pkt->gen, pkt->qpn,
                              iface->rx_poll_ns);
        break;
    case UCT_UCCL_PATH_RESET_REPLY:
        uct_uccl_reset_on_reply(conn, pkt);
        break;
    default: /* CONFIRM (uct_uccl_wire_ctl_check) */
        if ((pkt->gen == path->reset_gen_rx) &&
            (path->reset == UCT_UCCL_RESET_OFFERED)) {
            path->reset = UCT_UCCL_RESET_READY;
            uct_uccl_reset_peer_psn(conn, path, pkt);
        }
        break;
    }
}

/* The new pair takes the path once the old QP has nothing out */
static void uct_uccl_reset_swap(uct_uccl_conn_t *conn, unsigned p,
                                uint64_t now)
{
    uct_uccl_qp_t *path = &conn->paths[p];

    uct_uccl_conn_qp_swap(conn, path);
    conn->rc_resets -= 1;
    path->reset      = UCT_UCCL_RESET_NONE;
    uct_uccl_paths_restore(&conn->sel, p, now);
    ++conn->stats.rc_path_resets;
    ucs_diag("uccl: conn %u: path %u has a new QP pair (qp 0x%x)", conn->id,
             p, path->qp->qp_num);
    uct_uccl_conn_kick(conn);
}

/* From the conn's timer while paths are being reset */
void uct_uccl_reset_timers(uct_uccl_conn_t *conn, uint64_t now)
{
    uct_uccl_iface_t *iface = conn->iface;
    uct_uccl_qp_t *path;
    unsigned p;

    for (p = 0; (p < conn->num_paths) && (conn->rc_resets > 0); ++p) {
        path = &conn->paths[p];
        if (path->reset == UCT_UCCL_RESET_NONE) {
            continue;
        }
        if (!ucs_queue_is_empty(&path->held) && (conn->rc_fail_since != 0) &&
            (now - conn->rc_fail_since >= iface->config.peer_timeout_ns)) {
            /* WRITEs wait for the peer's word, and the peer is silent */
            uct_uccl_conn_fail(conn, UCS_ERR_ENDPOINT_TIMEOUT);
            return;
        }
        if (path->reset == UCT_UCCL_RESET_READY) {
            if (path->outstanding == 0) {
                uct_uccl_reset_swap(conn, p, now);
            }
            continue;
        }
        if (now - path->reset_start >= iface->config.conn_timeout_ns) {
            ucs_diag("uccl: conn %u: reset of path %u unanswered", conn->id,
                     p);
            uct_uccl_reset_give_up(conn, path);
            if (conn->state == UCT_UCCL_CONN_FAILED) {
                return;
            }
            continue;
        }
        if ((path->reset == UCT_UCCL_RESET_ASKED) &&
            (now - path->reset_start >= UCT_UCCL_RESET_ALONE_NS) &&
            !uct_uccl_paths_retired(&conn->sel, p) &&
            uct_uccl_reset_may_stop(conn, p) &&
            !uct_uccl_reset_holds_write(conn, path)) {
            uct_uccl_reset_stop_old(conn, p);
        }
        if (now < path->reset_next_try) {
            continue;
        }
        path->reset_next_try = now + iface->config.conn_retry_ns;
        if (path->reset == UCT_UCCL_RESET_ASKED) {
            uct_uccl_reset_send(conn, p, UCT_UCCL_PATH_RESET_REQUEST,
                                path->reset_gen_tx, path->next_qp->qp_num);
        } else {
            uct_uccl_reset_send(conn, p, UCT_UCCL_PATH_RESET_REPLY,
                                path->reset_gen_rx, path->next_qp->qp_num);
        }
    }
}

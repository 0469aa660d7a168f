/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * A conn's liveness: the peer's disconnect, keepalive probes
 * (uct_ep_check), idle passive conns, set-up retries and timeouts, and
 * failure, which UCX hears of as an ep error.
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <string.h>


/* The peer's side of the conn is gone. Operations outstanding, or a
 * keepalive probe (uct_ep_check), cannot complete: the conn fails now. An
 * idle conn fails with its next operation (at the timer tick after it) or
 * check, while a flush of what completed before succeeds, as over a
 * connected QP whose peer vanished. */
static void uct_uccl_conn_peer_closed(uct_uccl_conn_t *conn)
{
    if (!uct_uccl_tx_is_flushed(conn) ||
        !ucs_queue_is_empty(&conn->pending_q) || (conn->ka_start != 0)) {
        uct_uccl_conn_fail(conn, UCS_ERR_CONNECTION_RESET);
    } else {
        conn->peer_closed = 1;
    }
}

void uct_uccl_conn_handle_disconnect(uct_uccl_iface_t *iface,
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
    (void)uct_uccl_conn_ctl_send(conn, &pkt, sizeof(pkt));
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
        /* UCX hears it from the next progress call */
        uct_uccl_conn_fail(conn, UCS_ERR_CONNECTION_RESET);
        return UCS_OK;
    }

    uct_uccl_conn_timer_wake(conn);
    now               = uct_uccl_now_ns();
    conn->ka_start    = now;
    conn->ka_next_try = now + conn->iface->config.conn_retry_ns;
    uct_uccl_conn_send_keepalive(conn, 0, now);
    return UCS_OK;
}

void uct_uccl_conn_handle_keepalive(uct_uccl_iface_t *iface,
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
    uct_uccl_conn_timer_wake(conn); /* the peer is alive: idle_check */
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
    uint64_t seen = s->chunks_rx + s->dup_rx + s->acks_rx + conn->ka_rx +
                    s->credit_req_rx + s->credit_rx;

    if ((seen != conn->idle_seen) || (conn->idle_since == 0)) {
        conn->idle_seen  = seen;
        conn->idle_since = now;
    } else if (now - conn->idle_since >= conn->iface->config.idle_timeout_ns) {
        conn->idle_since = now;
        (void)uct_uccl_conn_check(conn);
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
    uct_uccl_conn_timer_wake(conn); /* a passive conn is destroyed there */

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
    uct_uccl_dest_detach(conn);
    uct_uccl_credit_conn_detach(conn);
    if (ep != NULL) {
        /* UCX may destroy the ep (and this conn) from the callback: it
         * runs when the engine is done (uccl_async.c) */
        uct_uccl_async_defer_err(conn);
    }
}

/* Does conn have work for its timers at the next tick? An active conn
 * while it connects, a connected one while a probe is out, it is not
 * flushed (chunks wait or are unacknowledged, an operation awaits the
 * peer) or it waits for credit (uct_uccl_tx_timers), a failed passive one
 * until it is destroyed; and any while the scheduler holds it
 * (uct_uccl_iface_sched_add wakes only a conn it adds). An armed event
 * finds the conns whose timers must run on this list (uccl_event.c). */
static int uct_uccl_conn_timer_busy(uct_uccl_conn_t *conn)
{
    if (uct_uccl_conn_in_sched(conn)) {
        return 1;
    }
    switch (conn->state) {
    case UCT_UCCL_CONN_CONNECTING:
        return !conn->passive;
    case UCT_UCCL_CONN_CONNECTED:
        return (conn->ka_start != 0) || !uct_uccl_tx_is_flushed(conn) ||
               (conn->credit.wait_ns != 0) || (conn->rc_resets > 0);
    default:
        return conn->passive;
    }
}

static int uct_uccl_conn_idle_watched(const uct_uccl_conn_t *conn)
{
    return conn->passive && (conn->state == UCT_UCCL_CONN_CONNECTED) &&
           (conn->iface->config.idle_timeout_ns != UINT64_MAX);
}

/* An idle passive conn sleeps on the idle wheel until its peer has been
 * silent for IDLE_TIMEOUT (if nothing wakes it before) */
static void uct_uccl_conn_idle_park(uct_uccl_conn_t *conn, uint64_t now)
{
    uct_uccl_iface_t *iface = conn->iface;
    uint64_t deadline       = conn->idle_since +
                              iface->config.idle_timeout_ns;
    uint64_t delta_ns       = (deadline > now) ? deadline - now : 0;

    /* a slot late rather than early: an early visit only parks again */
    ucs_wtimer_add(&iface->timers.idle_wheel, &conn->idle_timer,
                   ucs_time_from_sec(delta_ns / 1e9) +
                   iface->timers.idle_wheel.res);
}

static void uct_uccl_conn_idle_cb(ucs_wtimer_t *timer)
{
    uct_uccl_conn_t *conn = ucs_container_of(timer, uct_uccl_conn_t,
                                             idle_timer);
    uint64_t now          = uct_uccl_now_ns();

    uct_uccl_conn_idle_check(conn, now); /* a probe wakes the conn */
    uct_uccl_stats_conn_sync(conn);
    if (!conn->timer_active) {
        uct_uccl_conn_idle_park(conn, now);
    }
}

void uct_uccl_conn_timer_init(uct_uccl_conn_t *conn)
{
    ucs_wtimer_init(&conn->idle_timer, uct_uccl_conn_idle_cb);
}

void uct_uccl_conn_timer_start(uct_uccl_conn_t *conn)
{
    uct_uccl_iface_t *iface = conn->iface;

    ucs_wtimer_remove(&iface->timers.idle_wheel, &conn->idle_timer);
    ucs_list_add_tail(&iface->timers.active, &conn->timer_link);
    conn->timer_active = 1;
    conn->timer_idle   = 0;
}

static void uct_uccl_conn_timer_stop(uct_uccl_conn_t *conn)
{
    if (conn->timer_active) {
        ucs_list_del(&conn->timer_link);
        conn->timer_active = 0;
    }
}

void uct_uccl_conn_timer_cleanup(uct_uccl_conn_t *conn)
{
    uct_uccl_conn_timer_stop(conn);
    ucs_wtimer_remove(&conn->iface->timers.idle_wheel, &conn->idle_timer);
}

/* Set-up: the request again until answered, failure after CONN_TIMEOUT */
static void uct_uccl_conn_connect_timer(uct_uccl_conn_t *conn, uint64_t now)
{
    uct_uccl_iface_t *iface = conn->iface;

    if (conn->passive || (now < conn->conn_next_try)) {
        return;
    }
    if (now - conn->conn_start >= iface->config.conn_timeout_ns) {
        ucs_error("uccl: no reply to %u connection requests",
                  conn->conn_tries);
        uct_uccl_conn_fail(conn, UCS_ERR_UNREACHABLE);
        return;
    }
    ++conn->conn_tries;
    conn->conn_next_try = now + iface->config.conn_retry_ns;
    (void)uct_uccl_conn_send_pkt(conn, UCT_UCCL_CTL_CONN_REQ, UCS_OK);
}

/* One tick of an active conn's timers; 0 if it was destroyed */
static int uct_uccl_conn_timer_tick(uct_uccl_conn_t *conn, uint64_t now)
{
    switch (conn->state) {
    case UCT_UCCL_CONN_CONNECTING:
        uct_uccl_conn_connect_timer(conn, now);
        break;
    case UCT_UCCL_CONN_CONNECTED:
        if (ucs_unlikely(conn->peer_closed) &&
            !uct_uccl_tx_is_flushed(conn)) {
            /* an operation came after the peer left (uct_uccl_ep_check) */
            uct_uccl_conn_fail(conn, UCS_ERR_CONNECTION_RESET);
            break;
        }
        uct_uccl_tx_timers(conn, now);
        if (uct_uccl_conn_idle_watched(conn)) {
            uct_uccl_conn_idle_check(conn, now);
        }
        if (conn->state == UCT_UCCL_CONN_CONNECTED) {
            uct_uccl_conn_keepalive_timer(conn, now);
        }
        break;
    default:
        if (conn->passive) {
            /* failed, and no ep will ever destroy it */
            uct_uccl_conn_destroy(conn);
            return 0;
        }
        break;
    }
    return 1;
}

/* Every tick: the conns with work for their timers, then the deadlines of
 * idle passive conns that came. A conn whose work is done leaves the
 * active list after LINGER ticks, so an idle iface visits none of its
 * conns. */
void uct_uccl_conn_timers(uct_uccl_iface_t *iface, uint64_t now)
{
    uct_uccl_conn_t *conn, *tmp;

    ucs_list_for_each_safe(conn, tmp, &iface->timers.active, timer_link) {
        if (!uct_uccl_conn_timer_tick(conn, now)) {
            continue;
        }
        uct_uccl_stats_conn_sync(conn);
        if (uct_uccl_conn_timer_busy(conn)) {
            conn->timer_idle = 0;
            continue;
        }
        if (++conn->timer_idle < UCT_UCCL_TIMER_LINGER) {
            continue;
        }
        uct_uccl_conn_timer_stop(conn);
        if (uct_uccl_conn_idle_watched(conn)) {
            uct_uccl_conn_idle_park(conn, now);
        }
    }
    ucs_twheel_sweep(&iface->timers.idle_wheel, ucs_get_time());
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
    (void)uct_uccl_conn_ctl_send(conn, &pkt, sizeof(pkt));
}

/* The congestion control's state on the conn's line; a receiver-driven
 * one's credit too (as sender: credit held, speculative bytes issued and
 * sent, bytes granted by the peer; as receiver: bytes granted) */
static void uct_uccl_conn_dump_cc(uct_uccl_conn_t *conn, FILE *stream)
{
    uct_uccl_cc_stats_t cs;

    uct_uccl_cc_query(&conn->cc, &cs);
    fprintf(stream, " cc %s cc_cwnd %lu cc_rate_mbps %lu cc_srtt_us %.1f "
            "cc_min_rtt_us %.1f cc_target_us %.1f cc_incr %lu cc_decr %lu "
            "cc_lost_bytes %lu cc_timeouts %lu",
            (conn->cc.ops != NULL) ? conn->cc.ops->name : "none",
            cs.cwnd_bytes, cs.rate_bps / 1000000, cs.srtt_ns / 1e3,
            cs.min_rtt_ns / 1e3, cs.target_ns / 1e3, cs.increases,
            cs.decreases, cs.lost_bytes, cs.timeouts);
    if ((conn->cc.ops == NULL) || (conn->cc.ops->tx_request == NULL)) {
        return;
    }
    fprintf(stream, " cc_credit %lu cc_spec %lu cc_spec_sent %lu "
            "cc_granted %lu cc_rx_granted %lu cc_gone %lu cc_returned %lu "
            "cc_returned_drained %lu cc_inflight %lu", cs.credit_bytes,
            cs.spec_bytes, cs.spec_sent_bytes, cs.granted_bytes,
            cs.rx_granted_bytes, cs.gone_bytes, cs.returned_bytes,
            cs.drained_bytes, conn->cc.inflight_bytes);
}

void uct_uccl_conn_dump_stats(uct_uccl_conn_t *conn, FILE *stream)
{
    uint64_t fab_min;

    fprintf(stream, "uccl[%d]   conn %u%s peer %u %s paths %u:", getpid(),
            conn->id, conn->passive ? " (passive)" : "", conn->remote_id,
            (conn->state == UCT_UCCL_CONN_CONNECTED) ? "connected" :
            (conn->state == UCT_UCCL_CONN_FAILED) ? "failed" : "connecting",
            conn->num_paths);
    uct_uccl_conn_dump_counters(conn, stream);
    fprintf(stream, " srtt_us %.1f rto_us %.1f cwnd %lu inflight %u "
            "queued %u ops %lu zombies %lu", conn->rto.srtt_ns / 1e3,
            uct_uccl_rto_current(&conn->rto) / 1e3, conn->cc.cwnd_bytes,
            conn->rc ? conn->rc_outstanding :
                       uct_uccl_tracker_outstanding(&conn->tracker),
            conn->tx_queued, ucs_list_length(&conn->ops),
            ucs_list_length(&conn->zombies));
    uct_uccl_conn_dump_cc(conn, stream);
    fprintf(stream, " path_parks_loss %lu path_parks_stall %lu path_probes "
            "%lu path_unparks %lu path_parked %u path_usable %u "
            "path_resetting %u", conn->sel.stats.parks_loss,
            conn->sel.stats.parks_stall, conn->sel.stats.probes,
            conn->sel.stats.unparks, conn->sel.nparked,
            uct_uccl_paths_usable(&conn->sel), conn->rc_resets);
    fab_min = uct_uccl_paths_fab_min(&conn->sel);
    fprintf(stream, " path_fab_srtt_us %.1f path_fab_min_us %.1f "
            "path_ooo_pct %.0f", conn->sel.fab_srtt_ns / 1e3,
            (fab_min == UINT64_MAX) ? 0.0 : fab_min / 1e3,
            conn->sel.ooo_frac * 100.0 / UCT_UCCL_PATHS_OOO_ONE);
    fputc('\n', stream);
}


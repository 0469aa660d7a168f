/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Receiver-driven congestion control (UCX_UCCL_CC=eqds) on the wire. Each
 * end of a conn may send data and receive it; its one uct_uccl_cc_t keeps
 * the two roles apart (sender: its credit; receiver: the peer's demand and
 * the grant to it), and so does uct_uccl_conn_credit_t.
 *
 * Sender. When what waits in its queue outgrows its credit, the pump asks
 * the peer for more: a CREDIT record with REQUEST (uct_uccl_cc_request_t,
 * cumulative), at most every REQ_GAP, as soon as the peer's outstanding
 * grants (what it was asked for and did not grant yet) no longer cover
 * what waits, and, while no new grant comes, again after RETRY_MIN, twice
 * as long each time. Grants come in the peer's ACKs
 * (UCT_UCCL_ACK_F_CREDIT) or in CREDIT records with GRANT.
 *
 * Receiver. The iface's pacer (one per iface, shared by its conns) grants
 * the peers' demand at the link rate, round robin. The engine ticks it in
 * every pass (uct_uccl_rx_flush_acks), from the user's progress call or
 * from the background pass when the user does not call it; a conn it
 * granted owes its peer the grant: an ACK packed in that pass carries it,
 * else a CREDIT record goes. A request repeated unchanged (the sender
 * heard nothing) is answered at once with the current grant, which
 * repairs a lost one.
 *
 * Resends (UC) spend credit too, and under credit wait for it: after a
 * loss, a burst of them would overflow the receiver's buffer again.
 *
 * GETs. The data's receiver is the requester, so it schedules them: a GET
 * request (RC: an RDMA READ) goes once the requester's own pacer granted
 * its bytes, as a turn of its round robin, and the responder sends the
 * reply without credit (its length is the request's, which the responder
 * checked); a peer that grants credit pulls its GETs so. A reply's
 * resend is not pulled: it spends credit like any resend.
 *
 * RC mode works alike; no ACK is sent in software there, so every grant
 * goes alone.
 */
#include "uccl_tx.h"
#include "proto/cc/uccl_cc_def.h"

#include <ucs/debug/log.h>
#include <string.h>


ucs_status_t uct_uccl_credit_init(uct_uccl_iface_t *iface,
                                  const uct_uccl_cc_config_t *config)
{
    uct_uccl_cc_eqds_pacer_params_t params;
    ucs_status_t status;

    ucs_list_head_init(&iface->credit.owed);
    iface->credit.on = uct_uccl_cc_config_rx_driven(config);
    if (!iface->credit.on) {
        return UCS_OK;
    }

    status = uct_uccl_cc_config_pacer(config, iface->config.chunk_size,
                                      iface->port->rate_bps, &params);
    if (status != UCS_OK) {
        return status;
    }
    if (iface->rc_mode && (params.max_out != UCT_UCCL_CC_EQDS_MAX_OUT_NONE)) {
        /* RC: a READ's data and the NIC's resends reach this port unseen
         * by its CPU, so arrivals cannot be counted: no bound */
        ucs_debug("uccl: RC mode: UCX_UCCL_CC_EQDS_INFLIGHT ignored");
        params.max_out = UCT_UCCL_CC_EQDS_MAX_OUT_NONE;
    }
    return uct_uccl_cc_eqds_pacer_init(&iface->credit.pacer, &params,
                                       uct_uccl_now_ns());
}

/* after every conn was destroyed (and so detached) */
void uct_uccl_credit_cleanup(uct_uccl_iface_t *iface)
{
    if (iface->credit.on) {
        uct_uccl_cc_eqds_pacer_cleanup(&iface->credit.pacer);
    }
}

/* The conn's cc was (re)initialized: its receiver side joins the pacer */
void uct_uccl_credit_conn_attach(uct_uccl_conn_t *conn)
{
    uct_uccl_iface_t *iface = conn->iface;

    conn->credit.retry_ns = UCT_UCCL_CREDIT_RETRY_MIN_NS;
    if (iface->credit.on) {
        uct_uccl_cc_rx_attach(&conn->cc, &iface->credit.pacer, conn);
    }
}

/* A failed or closing conn is granted nothing more and owes nothing */
void uct_uccl_credit_conn_detach(uct_uccl_conn_t *conn)
{
    if (conn->cc.ops != NULL) {
        uct_uccl_cc_rx_attach(&conn->cc, NULL, NULL);
    }
    uct_uccl_credit_paid(conn);
}

void uct_uccl_credit_owe(uct_uccl_conn_t *conn)
{
    if (!conn->credit.owed) {
        conn->credit.owed = 1;
        ucs_list_add_tail(&conn->iface->credit.owed, &conn->credit.owed_link);
    }
}

void uct_uccl_credit_paid(uct_uccl_conn_t *conn)
{
    if (conn->credit.owed) {
        ucs_list_del(&conn->credit.owed_link);
        conn->credit.owed = 0;
    }
}

/* A CREDIT record to conn's peer: the request when req is not NULL, and
 * our grant when our side grants (uct_uccl_credit_sent once it went) */
size_t uct_uccl_credit_pack(uct_uccl_conn_t *conn, uct_uccl_credit_t *rec,
                            const uct_uccl_cc_request_t *req, uint64_t now)
{
    memset(rec, 0, sizeof(*rec));
    uct_uccl_wire_hdr_init(&rec->hdr, UCT_UCCL_CTL_CREDIT, sizeof(*rec));
    rec->dst_conn_id = conn->remote_id;
    rec->token       = conn->remote_token;
    if (req != NULL) {
        rec->flags |= UCT_UCCL_CREDIT_F_REQUEST;
        rec->want   = req->want;
        rec->spec   = req->spec;
        rec->lost   = req->lost;
        rec->held   = req->held;
        rec->seen   = req->seen;
    }
    if (uct_uccl_cc_rx_driven(&conn->cc)) {
        rec->flags |= UCT_UCCL_CREDIT_F_GRANT |
                      (uct_uccl_cc_rx_idle(&conn->cc) ?
                       UCT_UCCL_CREDIT_F_IDLE : 0);
        rec->grant  = uct_uccl_cc_rx_credit(&conn->cc, now);
    }
    return sizeof(*rec);
}

void uct_uccl_credit_sent(uct_uccl_conn_t *conn, const uct_uccl_credit_t *rec)
{
    if (rec->flags & UCT_UCCL_CREDIT_F_GRANT) {
        ++conn->stats.credit_tx;
        uct_uccl_credit_paid(conn);
    }
    if (rec->flags & UCT_UCCL_CREDIT_F_REQUEST) {
        ++conn->stats.credit_req_tx;
    }
}

/* Does a resend wait for credit? Not once everything was acknowledged
 * (the chunk it would have resent arrived after all) */
static int uct_uccl_credit_resend_due(uct_uccl_conn_t *conn)
{
    if (conn->credit.resend_wait && (uct_uccl_conn_inflight(conn) == 0)) {
        conn->credit.resend_wait  = 0;
        conn->credit.resend_bytes = 0;
    }
    return conn->credit.resend_wait;
}

/* The credit a waiting resend needs: a chunk of the conn's size, or the
 * resend refused, which may be larger (cut before the conn's chunks
 * shrank): asking for less, the sender would hold credit that never
 * covers it */
static uint32_t uct_uccl_credit_resend_need(const uct_uccl_conn_t *conn)
{
    return ucs_max(uct_uccl_conn_chunk_size(conn),
                   conn->credit.resend_bytes);
}

/* What waits: the chunks a refused resend stands for (every SACK hole,
 * at most a chunk each), then the queue (but the replies to the peer's
 * GETs, which it pulls), up to what a request may ask for. The queue's
 * bytes are counted as it changes (tx_queued_bytes), so that a pump costs
 * the same however long the queue is. */
static uint64_t uct_uccl_credit_backlog(uct_uccl_conn_t *conn)
{
    const uct_uccl_tracker_t *t = &conn->tracker;
    uint64_t cap   = conn->iface->config.cc_params.eqds.demand_cap;
    uint64_t bytes = 0;

    if (cap == 0) {
        cap = UCT_UCCL_CC_EQDS_DEMAND_CAP;
    }
    if (uct_uccl_credit_resend_due(conn)) {
        bytes = (uint64_t)(uct_uccl_seq_dist(t->high_sacked, t->una) -
                           ucs_min(t->sacked_cnt,
                                   uct_uccl_seq_dist(t->high_sacked,
                                                     t->una))) *
                uct_uccl_conn_chunk_size(conn);
        bytes = ucs_max(bytes, uct_uccl_credit_resend_need(conn));
    }
    return ucs_min(bytes + conn->tx_queued_bytes, cap);
}

/* What a request would tell as held: credit not spent and bytes in
 * flight, which is the window a credit algorithm publishes */
static uint32_t uct_uccl_credit_held(const uct_uccl_cc_t *cc)
{
    return (uint32_t)ucs_min(cc->cwnd_bytes, UINT32_MAX);
}

/* Did the cc judge bytes lost, or give credit back, and the peer did not
 * hear of it? Its pacer counts them as on their way until it does. So it
 * does with what a drained sender no longer holds (a loss no path proved,
 * say): once drained, the sender tells its holdings if they changed. */
static int uct_uccl_credit_news(uct_uccl_conn_t *conn)
{
    const uct_uccl_cc_t *cc = &conn->cc;
    uct_uccl_cc_stats_t stats;

    uct_uccl_cc_query(cc, &stats);
    if (((uint32_t)stats.gone_bytes != conn->credit.lost) ||
        ((uint32_t)stats.returned_bytes != conn->credit.returned)) {
        return 1;
    }
    return (cc->flags & UCT_UCCL_CC_F_STRICT) && (cc->inflight_bytes == 0) &&
           ucs_queue_is_empty(&conn->tx_queue) &&
           (uct_uccl_credit_held(cc) != conn->credit.held);
}

/* Chunks wait (the pump left some queued, or a resend waits for credit).
 * The peer must hear of what the credit does not cover: ask when what it
 * still means to grant (the last request's want less its grant so far)
 * falls short of that, or when nothing was heard from it for too long, or
 * when it did not hear of resends yet; never with the last control
 * buffers, which the ACKs need more. */
void uct_uccl_credit_tx_request(uct_uccl_conn_t *conn, uint64_t now)
{
    uct_uccl_conn_credit_t *cr = &conn->credit;
    uct_uccl_cc_t *cc          = &conn->cc;
    int32_t pending            = (int32_t)(cr->want - cr->grant);
    uint64_t backlog, credit;
    uct_uccl_cc_stats_t stats;
    uct_uccl_cc_request_t req;
    uct_uccl_credit_t rec;

    if ((now - cr->req_ns < UCT_UCCL_CREDIT_REQ_GAP_NS) ||
        (conn->iface->ctl.tx_nfree <= UCT_UCCL_CREDIT_CTL_RESERVE)) {
        return;
    }
    backlog = uct_uccl_credit_backlog(conn);
    credit  = (cc->cwnd_bytes > cc->inflight_bytes) ?
              cc->cwnd_bytes - cc->inflight_bytes : 0;
    if (((backlog <= credit) ||
         ((pending > 0) && ((uint64_t)pending >= backlog - credit) &&
          (now - cr->heard_ns < cr->retry_ns)) ||
         (!cr->resend_wait && uct_uccl_cc_tx_refills(cc, backlog))) &&
        !uct_uccl_credit_news(conn)) {
        return; /* covered, asked for already, or the next ACK covers it */
    }

    uct_uccl_cc_tx_request(cc, backlog, &req);
    uct_uccl_cc_query(cc, &stats);
    (void)uct_uccl_credit_pack(conn, &rec, &req, now);
    if (uct_uccl_conn_ctl_send(conn, &rec, sizeof(rec)) != UCS_OK) {
        return; /* the next pump tries again */
    }
    uct_uccl_credit_sent(conn, &rec);
    if ((req.want == cr->want) && (req.spec == cr->spec) &&
        (req.lost == cr->lost)) {
        /* unanswered: the next time later */
        cr->retry_ns = ucs_min(2 * cr->retry_ns, UCT_UCCL_CREDIT_RETRY_MAX_NS);
    }
    cr->want     = req.want;
    cr->spec     = req.spec;
    cr->lost     = req.lost;
    cr->returned = (uint32_t)stats.returned_bytes;
    cr->held     = req.held;
    cr->req_ns   = now;
    cr->heard_ns = now;
}

/* Granted credit the cc gives back (drained, short of the next send or
 * unused for too long: see uct_uccl_cc_tx_release) is told to the peer at
 * once. The next send: a resend that waits for credit, else the queue's
 * head. From the timers, and before the pump sends: a sender back from a
 * long descheduling does not spend grants its peer may have forgotten.
 * UC only: an RC receiver's pacer has no bound. */
void uct_uccl_credit_release(uct_uccl_conn_t *conn, uint64_t now)
{
    uct_uccl_credit_release_before(
        conn, ucs_queue_is_empty(&conn->tx_queue) ? 0 :
              uct_uccl_chunk_cc_bytes(conn, ucs_queue_head_elem_non_empty(
                                                &conn->tx_queue,
                                                uct_uccl_chunk_t, queue)),
        now);
}

/* The same before a send of `bytes` that is not queued (the AM fast
 * path) */
void uct_uccl_credit_release_before(uct_uccl_conn_t *conn, uint32_t bytes,
                                    uint64_t now)
{
    uint32_t next = uct_uccl_credit_resend_due(conn) ?
                    uct_uccl_credit_resend_need(conn) : bytes;

    if (uct_uccl_cc_tx_release(&conn->cc, next, now) > 0) {
        uct_uccl_credit_tx_request(conn, now);
    }
}

/* From the conn's timers: credit held too long goes back, and news the
 * peer did not hear of yet (a request that could not go) is told again */
void uct_uccl_credit_timer(uct_uccl_conn_t *conn, uint64_t now)
{
    uct_uccl_credit_release(conn, now);
    if (uct_uccl_credit_news(conn)) {
        uct_uccl_credit_tx_request(conn, now);
    }
}

/* May a resend of `bytes` go now? Always under a window. Under credit
 * only what the credit covers: resends are bytes on the receiver's link
 * like any (its pacer grants them), and a burst of them at once, after a
 * loss, is what overflows its buffer again. One that may not go asks for
 * credit, and the ACKs and timers that found it try again. */
int uct_uccl_credit_may_resend(uct_uccl_conn_t *conn, uint32_t bytes,
                               uint64_t now)
{
    uct_uccl_cc_t *cc = &conn->cc;

    if (!(cc->flags & UCT_UCCL_CC_F_STRICT) ||
        (cc->cwnd_bytes >= cc->inflight_bytes + bytes)) {
        conn->credit.resend_wait  = 0;
        conn->credit.resend_bytes = 0;
        return 1;
    }
    conn->credit.resend_wait  = 1;
    conn->credit.resend_bytes = ucs_max(conn->credit.resend_bytes, bytes);
    uct_uccl_credit_tx_request(conn, now);
    return 0;
}

/* A sender short of credit sends nothing, so no send completion or
 * timeout can show that its peer died: a peer that answers none of its
 * requests for PEER_TIMEOUT (a live one answers every repeated request)
 * is taken for dead, as one silent on outstanding chunks is. From the
 * timers. */
int uct_uccl_credit_starved(uct_uccl_conn_t *conn, uint64_t now)
{
    uct_uccl_conn_credit_t *cr = &conn->credit;
    uct_uccl_cc_t *cc          = &conn->cc;
    uct_uccl_chunk_t *head;
    int waiting;

    waiting = uct_uccl_credit_resend_due(conn);
    if (!waiting && (cc->flags & UCT_UCCL_CC_F_STRICT) &&
        !ucs_queue_is_empty(&conn->tx_queue)) {
        head    = ucs_queue_head_elem_non_empty(&conn->tx_queue,
                                                uct_uccl_chunk_t, queue);
        waiting = (cc->cwnd_bytes < cc->inflight_bytes +
                                    uct_uccl_chunk_cc_bytes(conn, head));
    }
    if (!waiting) {
        cr->wait_ns = 0;
        return 0;
    }
    if ((cr->wait_ns == 0) || (cr->peer_ns > cr->wait_ns)) {
        cr->wait_ns = (cr->wait_ns == 0) ? now : cr->peer_ns;
    }
    return now - cr->wait_ns >= conn->iface->config.peer_timeout_ns;
}

/* The peer's cumulative grant, from an ACK or a CREDIT record, and its
 * hint that no other sender waits for its grants */
void uct_uccl_credit_tx_grant(uct_uccl_conn_t *conn, uint32_t grant,
                              int idle, uint64_t now)
{
    uct_uccl_conn_credit_t *cr = &conn->credit;

    uct_uccl_cc_on_credit(&conn->cc, grant, idle, now);
    cr->peer_ns = now;
    if ((int32_t)(grant - cr->grant) > 0) {
        cr->grant    = grant;
        cr->heard_ns = now;
        cr->retry_ns = UCT_UCCL_CREDIT_RETRY_MIN_NS;
    }
}

/* The pacer grants what the link allows by now; the conns it granted owe
 * their peers the grant (this pass's ACKs or CREDIT records) */
void uct_uccl_credit_tick(uct_uccl_iface_t *iface, uint64_t now)
{
    uct_uccl_cc_eqds_sender_t *out[UCT_UCCL_CREDIT_TICK_MAX];
    uint64_t next;
    unsigned i, n;

    if (!iface->credit.on) {
        return;
    }
    next = uct_uccl_cc_eqds_pacer_next_ns(&iface->credit.pacer);
    if ((next == 0) || (next > now)) {
        return;
    }
    n = uct_uccl_cc_eqds_pacer_tick(&iface->credit.pacer, now, out,
                                    UCT_UCCL_CREDIT_TICK_MAX);
    for (i = 0; i < n; ++i) {
        if (out[i]->credit_due) {
            uct_uccl_credit_owe(out[i]->arg);
        }
        if (out[i]->pull_due) {
            uct_uccl_conn_kick(out[i]->arg); /* its GET may go */
        }
    }
}

/* A GET of ours (UC: its request; RC: a READ) makes the peer send us its
 * bytes without credit: the request is the grant. So it goes only once
 * our own pacer scheduled those bytes, as it schedules its grants; until
 * then the conn waits for the tick that names it. */
int uct_uccl_credit_may_pull(uct_uccl_conn_t *conn,
                             const uct_uccl_chunk_t *chunk, uint64_t now)
{
    uint64_t bytes = uct_uccl_chunk_pull_bytes(chunk);

    if ((bytes == 0) || uct_uccl_cc_rx_pull(&conn->cc, bytes, now)) {
        return 1;
    }
    conn->stats.pull_waits  += !conn->credit.pull_wait;
    conn->credit.pull_wait   = 1;
    return 0;
}

/* The chunk went: the bytes the pacer scheduled for it are spent */
void uct_uccl_credit_pull_spent(uct_uccl_conn_t *conn,
                                const uct_uccl_chunk_t *chunk)
{
    uint64_t bytes = uct_uccl_chunk_pull_bytes(chunk);

    if (bytes > 0) {
        uct_uccl_cc_rx_pulled(&conn->cc, bytes);
        conn->credit.pull_wait = 0;
    }
}

void uct_uccl_conn_handle_credit(uct_uccl_iface_t *iface,
                                 const uct_uccl_credit_t *rec,
                                 const uct_uccl_ctl_src_t *src)
{
    uct_uccl_conn_t *conn = uct_uccl_conn_bound(iface, rec->dst_conn_id,
                                                rec->token, src);
    uct_uccl_cc_request_t req;
    uint64_t now;

    if ((conn == NULL) || (conn->state != UCT_UCCL_CONN_CONNECTED)) {
        return;
    }

    now = uct_uccl_now_ns();
    if (rec->flags & UCT_UCCL_CREDIT_F_GRANT) {
        ++conn->stats.credit_rx;
        uct_uccl_credit_tx_grant(conn, rec->grant,
                                 !!(rec->flags & UCT_UCCL_CREDIT_F_IDLE), now);
        uct_uccl_conn_kick(conn);
    }
    if (rec->flags & UCT_UCCL_CREDIT_F_REQUEST) {
        ++conn->stats.credit_req_rx;
        if (!uct_uccl_cc_rx_driven(&conn->cc)) {
            return; /* we grant nothing: the peer keeps its own window */
        }
        req.want = rec->want;
        req.spec = rec->spec;
        req.lost = rec->lost;
        req.held = rec->held;
        req.seen = rec->seen;
        uct_uccl_cc_rx_on_request(&conn->cc, &req, now);
        if ((rec->want == conn->credit.rx_want) &&
            (rec->spec == conn->credit.rx_spec) &&
            (rec->lost == conn->credit.rx_lost)) {
            uct_uccl_credit_owe(conn); /* asked again: a grant was lost */
        }
        conn->credit.rx_want = rec->want;
        conn->credit.rx_spec = rec->spec;
        conn->credit.rx_lost = rec->lost;
    }
}

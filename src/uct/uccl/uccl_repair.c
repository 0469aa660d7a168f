/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Loss repair (UC): ACKs retire chunks and feed the RTT estimators and the
 * congestion control; SACK holes, stalled tails and timeouts are resent.
 * RC: the chunks of a path whose QP failed go again on the others. A
 * failed or destroyed conn completes everything it held.
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <ucs/datastruct/mpool.inl>



/* What the chunks one ACK acknowledges leave for their path and their
 * operation, counted over a run of chunks that share them (a clean
 * stream's ACK covers a chain: one path, few operations) and applied once
 * the run ends */
typedef struct {
    uct_uccl_conn_t         *conn;
    uct_uccl_op_t           *op;        /* the run's operation, or NULL */
    unsigned                op_parts;   /* its parts acknowledged */
    unsigned                path;       /* the run's path */
    unsigned                path_acked; /* chunks of it acknowledged (0:
                                           no run) */
    uint64_t                path_sent;  /* the latest one's send time */
} uct_uccl_ack_run_t;

static UCS_F_ALWAYS_INLINE void
uct_uccl_ack_run_path_end(uct_uccl_ack_run_t *run)
{
    if (run->path_acked > 0) {
        uct_uccl_paths_acked_n(&run->conn->sel, run->path, run->path_acked,
                               run->path_sent);
        run->path_acked = 0;
        run->path_sent  = 0;
    }
}

static UCS_F_ALWAYS_INLINE void
uct_uccl_ack_run_op_end(uct_uccl_ack_run_t *run)
{
    uct_uccl_op_t *op = run->op;

    if (op == NULL) {
        return;
    }
    run->op = NULL;
    ucs_assert(op->pending >= run->op_parts);
    op->pending -= run->op_parts;
    if (op->pending == 0) {
        uct_uccl_op_complete(run->conn, op);
    }
}

/* The common case is done here: a chunk of an operation, no WR of it left
 * at the NIC, goes back to its pool, and its operation has one part less
 * (uct_uccl_chunk_done does the same for every case, after the run's
 * counts before it are applied) */
static UCS_F_ALWAYS_INLINE void
uct_uccl_tracker_acked_cb(void *arg, uint32_t csn,
                          uct_uccl_tx_entry_t *e)
{
    uct_uccl_ack_run_t *run = arg;
    uct_uccl_chunk_t *chunk = e->desc;
    uct_uccl_op_t *op       = chunk->op;

    if (ucs_unlikely(e->path != run->path)) {
        uct_uccl_ack_run_path_end(run);
        run->path = e->path;
    }
    ++run->path_acked;
    run->path_sent = ucs_max(run->path_sent, e->send_time);
    if (ucs_likely((chunk->posted == 0) &&
                   !(chunk->flags & UCT_UCCL_CHUNK_F_SERVED))) {
        ucs_mpool_put_inline(chunk); /* its flags start anew in the pool */
        if (op == NULL) {
            return; /* AM short or bcopy: nothing waits for it */
        }
        if (ucs_unlikely(op != run->op)) {
            uct_uccl_ack_run_op_end(run);
            run->op       = op;
            run->op_parts = 0;
        }
        ++run->op_parts;
        return;
    }
    uct_uccl_ack_run_op_end(run);
    chunk->flags &= ~UCT_UCCL_CHUNK_F_TRACKED;
    uct_uccl_chunk_done(run->conn, chunk, UCS_OK);
}

/* Resend the chunk of tracker entry e. `evident`: the ACKs showed its
 * loss (a SACK hole that later arrivals passed); a loss its own path
 * showed (a later chunk on it arrived) is evident too. Only an evident
 * loss makes the conn lossy: a resend after the ACKs merely stalled (tail
 * probe, RTO) is as often of a chunk that was only late, its peer
 * descheduled, and marks on every chain for LOSSY_RTOS would then cost a
 * WR, a CQE and an ACK per chain on a clean fabric. */
static ucs_status_t uct_uccl_tracker_resend(uct_uccl_conn_t *conn,
                                            uct_uccl_tx_entry_t *e,
                                            int evident)
{
    uct_uccl_chunk_t *chunk = e->desc;
    uct_uccl_qp_t *path;
    int obsolete, path_lost;
    uint64_t now, lossy_end;

    if (uct_uccl_chunk_is_chained(conn, chunk)) {
        /* its resend waits for this pass's transmit step: its WR is linked
         * in that chain and must not be rebuilt */
        return UCS_ERR_ALREADY_EXISTS;
    }
    if (conn->iface->tx_outstanding >= conn->iface->config.cq_size) {
        return UCS_ERR_NO_RESOURCE;
    }
    now = uct_uccl_now_ns();
    path_lost = uct_uccl_tracker_path_lost(&conn->tracker, e);
    evident  |= path_lost;
    if (!e->gone && path_lost) {
        /* told first: a receiver that counts it as on its way may hold
         * back the credit its resend waits for. Only a loss proven by its
         * path (a later chunk on it arrived): one merely late still lands,
         * and a receiver told otherwise would grant its bytes again on top
         * of it (the sender's holdings bound what the receiver counts
         * from above, so a loss not told costs grants, never its buffer) */
        e->gone = 1;
        uct_uccl_cc_on_gone(&conn->cc, e->length, now);
    }
    if (!uct_uccl_credit_may_resend(conn, chunk->length, now)) {
        return UCS_ERR_NO_RESOURCE; /* the credit it asked for brings it */
    }

    /* a path that lost a chunk is used less, and the resend avoids it */
    uct_uccl_paths_loss(&conn->sel, e->path, now);
    path = uct_uccl_path_select(conn, chunk->length, e->path, now);
    if (path == NULL) {
        ++conn->stats.sq_full;
        return UCS_ERR_NO_RESOURCE;
    }

    if ((chunk->kind == UCT_UCCL_KIND_PUT) ||
        (chunk->kind == UCT_UCCL_KIND_GET_RESP)) {
        /* a GET is complete at the requester once every reply chunk
         * arrived, and then the source may be deregistered: reading it
         * would break the QP, and the resend is not needed anyway */
        obsolete = uct_uccl_put_is_obsolete(conn, chunk) ||
                   ((chunk->kind == UCT_UCCL_KIND_GET_RESP) &&
                    !uct_uccl_md_rkey_check(conn->iface->md, chunk->src_rkey,
                                            chunk->laddr, chunk->length,
                                            NULL));
        conn->stats.retx_obsolete += obsolete;
        if (!obsolete && !e->doubt) {
            /* every earlier transmission was overtaken on its path, so
             * none can land any more: this one is the only live copy and
             * may write the target itself, as the original would have
             * (no bounce buffer, no copy by the receiver's CPU) */
            ++conn->stats.retx_direct;
            uct_uccl_chunk_build_wr(conn, chunk);
        } else {
            uct_uccl_chunk_build_retx(chunk, obsolete);
        }
    } else {
        if (chunk->kind == UCT_UCCL_KIND_GET_DATA) {
            uct_uccl_get_data_resend(conn, chunk);
        }
        uct_uccl_chunk_build_wr(conn, chunk);
    }
    uct_uccl_path_chain(conn, path, chunk, now);
    uct_uccl_cc_on_resend(&conn->cc, chunk->length, now);
    e->gone          = 0;
    e->path          = path->index;
    lossy_end        = now + UCT_UCCL_LOSSY_RTOS * conn->rto.rto_ns;
    if (evident) {
        conn->lossy_until = lossy_end;
    }
    uct_uccl_conn_chunk_shrink(conn, lossy_end);
    ++conn->stats.retx;
    conn->stats.retx_bytes += chunk->length;
    return UCS_OK;
}

/* A SACK hole judged lost (uct_uccl_tx_fast_retx) */
static ucs_status_t uct_uccl_tracker_retx_cb(void *arg, uint32_t csn,
                                             uct_uccl_tx_entry_t *e)
{
    return uct_uccl_tracker_resend(arg, e, 1);
}

/* An aged chunk while the ACKs stalled (tail probe, RTO) */
static ucs_status_t uct_uccl_tracker_stall_cb(void *arg, uint32_t csn,
                                              uct_uccl_tx_entry_t *e)
{
    return uct_uccl_tracker_resend(arg, e, 0);
}

/* Resend SACK holes judged lost. Sprayed chunks arrive out of order across
 * paths but in order on each: a hole that a later chunk of its own path
 * overtook is lost at once. Otherwise a hole is lost only when it is older
 * than the RTT plus its variation (or the recent peak RTT; not the RTO,
 * whose RTO_MIN floor held a lost resend for a millisecond), and
 * REORDER_THRESH chunks after it arrived. Run on every ACK and from the
 * timer. A shorter age (srtt + srtt/4) resends chunks that were only
 * reordered. */
static void uct_uccl_tx_fast_retx(uct_uccl_conn_t *conn, uint64_t now)
{
    unsigned n;

    if (!uct_uccl_tracker_has_holes(&conn->tracker)) {
        return;
    }

    n = uct_uccl_tracker_fast_retx(&conn->tracker, now,
                                   uct_uccl_rto_retx_age(&conn->rto),
                                   UCT_UCCL_FAST_RETX_MAX,
                                   uct_uccl_tracker_retx_cb, conn);
    if (n > 0) {
        conn->stats.fast_retx += n;
        uct_uccl_cc_on_loss(&conn->cc,
                            (uint64_t)n * conn->iface->config.chunk_size, now);
        /* ACKs and timers run before the engine's transmit step in the
         * same pass: the resends wait for it, and new data joins them */
        uct_uccl_iface_sched_add(conn->iface, conn);
    }
}

/* An ACK of conn's peer (uct_uccl_conn_bound checked where it came from),
 * found by the receive poll at `now`: that is the time of what it sets
 * off. The congestion control's and the paths' RTT sample ends when it
 * arrived (`arrived_ns`: its completion's timestamp, or `now`), so that
 * our own CPU's lateness is no delay of the fabric. The RTO's ends when we
 * saw it, as without timestamps: the RTO and the tail probes wait for ACKs
 * on our clock, and a peer's time to answer is in their samples only in
 * part (its ACK delay is not), so a machine whose CPUs are slow to poll
 * (at both ends alike) would probe and resend what is on its way. */
void uct_uccl_tx_handle_ack(uct_uccl_conn_t *conn, const uct_uccl_ack_t *ack,
                            uint64_t arrived_ns, uint64_t now)
{
    uct_uccl_iface_t *iface = conn->iface;
    uct_uccl_ack_run_t run  = {
        .conn = conn
    };
    uct_uccl_ack_info_t info;
    ucs_status_t status;
    uint64_t rtt;

    uct_uccl_paths_ack_time(&conn->sel, now);
    status = uct_uccl_tracker_ack_inline(&conn->tracker, ack, arrived_ns,
                                         uct_uccl_tracker_acked_cb, &run,
                                         &info);
    uct_uccl_ack_run_path_end(&run);
    uct_uccl_ack_run_op_end(&run);
    if (status != UCS_OK) {
        ++iface->stats.bad_ack;
        ucs_debug("uccl: conn %u: bogus ACK cum %u (una %u nxt %u)", conn->id,
                  ack->cum_csn, conn->tracker.una, conn->tracker.nxt);
        return;
    }

    ++conn->stats.acks_rx;
    uct_uccl_dest_sync(conn); /* room it freed at the peer */
    iface->stats.bad_ack += (info.bad_bits > 0);
    if (ack->flags & UCT_UCCL_ACK_F_CREDIT) {
        /* before on_ack; most ACKs repeat the grant the cc knows */
        uct_uccl_credit_ack_grant(conn, ack->credit,
                                  !!(ack->flags & UCT_UCCL_ACK_F_IDLE), now);
    }
    /* the fabric's part of the sample; none when the peer's CQ wait may
     * have been all of it */
    rtt                     = (info.rtt_ns > info.rx_wait_ns) ?
                              info.rtt_ns - info.rx_wait_ns : 0;
    conn->stats.cc_samples += (rtt > 0);
    conn->stats.cc_rtt_ns  += rtt;
    if (rtt > 0) {
        uct_uccl_paths_fabric_rtt(&conn->sel, rtt, now);
    }
    uct_uccl_paths_ack_order(&conn->sel, conn->tracker.sacked_cnt > 0);
    conn->stats.acks_holes += (conn->tracker.sacked_cnt > 0);
    uct_uccl_cc_on_ack(&conn->cc, info.acked_bytes, rtt, now);
    if (info.rtt_ns > 0) {
        uct_uccl_rto_sample(&conn->rto,
                            info.rtt_ns + (now - arrived_ns));
        if (info.rtt_path < conn->num_paths) {
            uct_uccl_paths_rtt(&conn->sel, info.rtt_path, info.rtt_ns);
        }
    }
    if (info.una_advanced || (info.acked > 0)) {
        conn->last_progress = now;
        conn->probes        = 0;
    }
    if (info.una_advanced) {
        uct_uccl_rto_on_ack(&conn->rto, now,
                            uct_uccl_tracker_outstanding(&conn->tracker));
        uct_uccl_conn_chunk_grow(conn, now);
    }
    if (ack->flags & UCT_UCCL_ACK_F_BUSY) {
        /* alive, but its user holds what it took: what it refused goes
         * again with the timer, not at once */
        conn->last_busy        = now;
        conn->tracker.dupacks  = 0;
    } else {
        uct_uccl_tx_fast_retx(conn, now);
    }
    uct_uccl_conn_kick(conn);
}

/* A tail probe: the aged chunks it resends, the paths it marks */
typedef struct {
    uct_uccl_conn_t         *conn;
    int                     may_mark;
    unsigned                resent;
    unsigned                nmarks;
    struct {
        uint16_t            path;
        uint32_t            rkey;
        uint64_t            raddr;
    } mark[UCT_UCCL_RTO_RESEND_MAX];
} uct_uccl_probe_t;

/* An aged chunk: a small one is resent (as cheap as any probe, and it
 * repairs at once); at the first probe a bulk WRITE only has its path
 * marked, so a peer that is merely slow (descheduled, say) costs an empty
 * WRITE per path instead of the chunks again, and a real loss is resent
 * when the mark's ACK shows it was overtaken on its path. A later probe
 * resends it, on another path: its own may be down. */
static ucs_status_t uct_uccl_tracker_probe_cb(void *arg, uint32_t csn,
                                              uct_uccl_tx_entry_t *e)
{
    uct_uccl_probe_t *probe = arg;
    uct_uccl_chunk_t *chunk = e->desc;
    ucs_status_t status;
    unsigned i;

    if (!probe->may_mark || !uct_uccl_chunk_is_bulk_write(chunk)) {
        status         = uct_uccl_tracker_stall_cb(probe->conn, csn, e);
        probe->resent += (status == UCS_OK);
        return status;
    }
    for (i = 0; i < probe->nmarks; ++i) {
        if (probe->mark[i].path == e->path) {
            return UCS_ERR_ALREADY_EXISTS;
        }
    }
    if (probe->nmarks == UCT_UCCL_RTO_RESEND_MAX) {
        return UCS_ERR_NO_RESOURCE; /* enough: the scan stops */
    }
    probe->mark[probe->nmarks].path  = e->path;
    probe->mark[probe->nmarks].rkey  = chunk->rkey;
    probe->mark[probe->nmarks].raddr = chunk->raddr;
    ++probe->nmarks;
    return UCS_ERR_ALREADY_EXISTS;
}

/* The ACKs stopped while chunks are out: typically the tail of a burst was
 * lost, and no later chunk on its path can show it. Probe what is older
 * than two RTTs rather than stall for the RTO (>= RTO_MIN); while nothing
 * is acknowledged, probe again after twice the wait each time: a probe
 * is lost as often as the original, and a lost probe must not wait for
 * the RTO. */
static void uct_uccl_tx_tail_probe(uct_uccl_conn_t *conn, uint64_t now,
                                   uint32_t inflight)
{
    const uct_uccl_rto_t *rto = &conn->rto;
    uint64_t pto = ucs_min(ucs_max(2 * uct_uccl_rto_srtt(rto),
                                   rto->srtt_ns + 4 * rto->rttvar_ns),
                           rto->rto_ns);
    uint64_t since = conn->probes ? conn->probe_time : conn->last_progress;
    uct_uccl_probe_t probe = {
        .conn     = conn,
        .may_mark = (conn->probes == 0)
    };
    unsigned i, marks = 0;

    if ((inflight == 0) || (conn->probes >= UCT_UCCL_TAIL_PROBES_MAX) ||
        (now - since < (pto << conn->probes))) {
        return;
    }

    uct_uccl_tracker_expire(&conn->tracker, now, pto, UCT_UCCL_RTO_RESEND_MAX,
                            uct_uccl_tracker_probe_cb, &probe);
    for (i = 0; i < probe.nmarks; ++i) {
        if ((probe.mark[i].path < conn->num_paths) &&
            (uct_uccl_tx_mark(conn, &conn->paths[probe.mark[i].path],
                              probe.mark[i].raddr, probe.mark[i].rkey,
                              now) == UCS_OK)) {
            ++marks;
        }
    }
    if ((probe.resent + marks) > 0) {
        ++conn->probes;
        conn->probe_time         = now;
        conn->stats.tail_probes += probe.resent;
        conn->stats.probe_marks += marks;
        uct_uccl_conn_post_chains(conn);
    }
}

void uct_uccl_tx_timers(uct_uccl_conn_t *conn, uint64_t now)
{
    uct_uccl_iface_t *iface = conn->iface;
    uint32_t inflight;

    if (ucs_unlikely(conn->cc.ops->tx_request != NULL) &&
        uct_uccl_credit_starved(conn, now)) {
        ucs_debug("uccl: conn %u: no grant from the peer for %.1f ms",
                  conn->id, (now - conn->credit.wait_ns) / 1e6);
        uct_uccl_conn_fail(conn, UCS_ERR_ENDPOINT_TIMEOUT);
        return;
    }
    if (ucs_unlikely(conn->tx_shut)) {
        /* out of the scheduler while its window is shut: a turn now and
         * then asks for credit again, and finds a window that opened
         * with no ACK or completion to say so (a timeout's loss) */
        uct_uccl_iface_sched_add(iface, conn);
    }
    if (ucs_unlikely(conn->cc.ops->tx_release != NULL) && !conn->rc) {
        uct_uccl_credit_timer(conn, now);
    }
    if (conn->rc) {
        /* the NIC retransmits, errors come as completions; a path that
         * stalls takes no more chunks and gets a new QP pair */
        uct_uccl_path_health(conn, now, conn->rc_outstanding);
        if (ucs_unlikely(conn->rc_resets > 0)) {
            uct_uccl_reset_timers(conn, now);
        }
        return;
    }

    if (now - conn->last_busy >= uct_uccl_rto_srtt(&conn->rto)) {
        uct_uccl_tx_fast_retx(conn, now);
    }
    inflight = uct_uccl_tracker_outstanding(&conn->tracker);
    if (inflight == 0) {
        /* idle: the peer owes nothing, so its silence is no sign of death;
         * the time budget starts with the next chunk */
        conn->last_progress = now;
    }
    uct_uccl_path_health(conn, now, inflight);
    uct_uccl_tx_tail_probe(conn, now, inflight);
    switch (uct_uccl_rto_check(&conn->rto, now, inflight)) {
    case UCT_UCCL_RTO_WAIT:
        return;
    case UCT_UCCL_RTO_GIVE_UP:
        /* a peer that says it is busy is alive */
        if (now - ucs_max(conn->last_progress, conn->last_busy) >=
            iface->config.peer_timeout_ns) {
            ucs_debug("uccl: conn %u: no progress for %.1f ms after %u "
                      "timeouts", conn->id,
                      (now - conn->last_progress) / 1e6, conn->rto.backoff);
            uct_uccl_conn_fail(conn, UCS_ERR_ENDPOINT_TIMEOUT);
            return;
        }
        /* retries are spent but the time budget is not: keep probing */
        break;
    case UCT_UCCL_RTO_RETRANSMIT:
        break;
    }

    ++conn->stats.timeouts;
    uct_uccl_cc_on_timeout(&conn->cc, now);
    /* The backoff spaces the timer out, but what is resent is aged against
     * the base RTO: against the backed-off one, a lost chunk (age 1, 3,
     * 7.. RTOs) never caught up with it (2, 4, 8..), ~100 ms per loss in a
     * ping-pong. Only the oldest few go: a silent peer (descheduled, say)
     * should not cost a window of resends; SACK holes have fast_retx. */
    if (uct_uccl_tracker_expire(&conn->tracker, now, conn->rto.rto_ns,
                                UCT_UCCL_RTO_RESEND_MAX,
                                uct_uccl_tracker_stall_cb, conn) > 0) {
        uct_uccl_conn_post_chains(conn);
    }
}

/* RC: does a retired path hold WRs its QP has not flushed yet, or WRITEs
 * flushed whose fate its peer has not told yet? The conn sends nothing
 * meanwhile: what they carry goes again before anything issued after it,
 * and uct_uccl_tx_rc_redo keeps the issue order only among the chunks it
 * was given. */
int uct_uccl_tx_rc_draining(const uct_uccl_conn_t *conn)
{
    const uct_uccl_qp_t *path;
    unsigned i;

    for (i = 0; i < conn->num_paths; ++i) {
        path = &conn->paths[i];
        if (uct_uccl_paths_retired(&conn->sel, i) &&
            ((path->outstanding > 0) || !ucs_queue_is_empty(&path->held))) {
            return 1;
        }
    }
    return 0;
}

/* RC: the chunk is out of flight without a completion of its own */
static void uct_uccl_tx_rc_unflight(uct_uccl_conn_t *conn,
                                    uct_uccl_chunk_t *chunk)
{
    --conn->rc_outstanding;
    conn->rc_writes -= uct_uccl_chunk_is_rc_write(chunk);
    ucs_list_del(&chunk->zlink);
    uct_uccl_dest_done(conn, 1);
    conn->cc.inflight_bytes -= ucs_min(uct_uccl_chunk_cc_flight(conn, chunk),
                                       conn->cc.inflight_bytes);
}

/* RC: the chunk, out of flight, goes back into the send queue ahead of
 * everything issued after it and behind the chunks queued again that were
 * issued before it, so a fence, AMs and READs after WRITEs, and AMs among
 * themselves keep the order of their first sending */
static void uct_uccl_tx_rc_redo(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk)
{
    ucs_queue_head_t *queue = &conn->tx_queue;
    const uct_uccl_chunk_t *other;
    ucs_queue_iter_t iter;

    uct_uccl_tx_rc_unflight(conn, chunk);
    for (iter = ucs_queue_iter_begin(queue); !ucs_queue_iter_end(queue, iter);
         iter = ucs_queue_iter_next(iter)) {
        other = ucs_queue_iter_elem(other, iter, queue);
        if (!(other->flags & UCT_UCCL_CHUNK_F_REDO) ||
            ((int32_t)(chunk->rc_seq - other->rc_seq) < 0)) {
            break;
        }
    }
    chunk->flags     |= UCT_UCCL_CHUNK_F_REDO;
    chunk->queue.next = *iter;
    *iter             = &chunk->queue;
    if (queue->ptail == iter) {
        queue->ptail = &chunk->queue.next;
    }
    ++conn->tx_queued;
    conn->tx_queued_bytes += uct_uccl_chunk_asks(chunk);
    ++conn->stats.rc_redo;
    uct_uccl_iface_sched_add(conn->iface, conn);
}

/* RC: a flushed WRITE the peer's old QP of its path executed is done:
 * written again, it could land on what a newer WRITE wrote there since */
static void uct_uccl_tx_rc_landed(uct_uccl_conn_t *conn,
                                  uct_uccl_chunk_t *chunk)
{
    uct_uccl_tx_rc_unflight(conn, chunk);
    ++conn->stats.rc_landed;
    uct_uccl_chunk_done(conn, chunk, UCS_OK);
    uct_uccl_conn_kick(conn);
}

/* RC: a flushed WRITE of `path`, once the peer told its old QP's rq_psn
 * (it executed in order up to there), is done or goes again */
static void uct_uccl_tx_rc_settle(uct_uccl_conn_t *conn,
                                  const uct_uccl_qp_t *path,
                                  uct_uccl_chunk_t *chunk)
{
    if (uct_uccl_seq_le(chunk->rc_psn_end, path->peer_rq_psn)) {
        uct_uccl_tx_rc_landed(conn, chunk);
    } else {
        uct_uccl_tx_rc_redo(conn, chunk);
    }
}

/* RC: the WRITEs `path` held, now that the peer told its rq_psn (or that
 * it cannot: then no WRITE may go again, and the conn fails) */
void uct_uccl_tx_rc_resolve(uct_uccl_conn_t *conn, uct_uccl_qp_t *path)
{
    uct_uccl_chunk_t *chunk;

    if (ucs_queue_is_empty(&path->held)) {
        return;
    }
    if (!(path->psn_flags & UCT_UCCL_QP_F_PEER_PSN)) {
        ucs_diag("uccl: conn %u: path %u: the peer cannot tell which "
                 "WRITEs landed", conn->id, path->index);
        uct_uccl_conn_fail(conn, UCS_ERR_IO_ERROR);
        return;
    }
    do {
        chunk = ucs_queue_pull_elem_non_empty(&path->held, uct_uccl_chunk_t,
                                              queue);
        uct_uccl_tx_rc_settle(conn, path, chunk);
    } while (!ucs_queue_is_empty(&path->held));
}

/* RC: a WR of `chunk` failed. A QP that spent its retries (RETRY_EXC_ERR:
 * its path lost everything for the NIC's retry time) retires its path,
 * and the chunks it failed and flushed go again on the other paths, as
 * long as another path is usable and the peer may still answer within
 * PEER_TIMEOUT of the first failed WR's post with no completion since: a
 * dead peer fails every path in turn (a window's chunks at a time), a
 * live one completes what the other paths carry. The peer's QP of the
 * path is left to its own NIC: what it sends there fails the same way.
 * A WRITE waits until the path's reset tells whether it landed (the
 * peer's rq_psn): one that did is done. Any other error is the conn's. */
ucs_status_t uct_uccl_tx_rc_failed(uct_uccl_conn_t *conn,
                                   uct_uccl_chunk_t *chunk,
                                   enum ibv_wc_status status)
{
    uct_uccl_paths_t *sel = &conn->sel;
    unsigned p            = chunk->path;
    uct_uccl_qp_t *path;
    uint64_t now;

    if (uct_uccl_paths_retired(sel, p)) {
        if ((status != IBV_WC_WR_FLUSH_ERR) &&
            (status != IBV_WC_RETRY_EXC_ERR)) {
            return UCS_ERR_IO_ERROR;
        }
    } else {
        if (status != IBV_WC_RETRY_EXC_ERR) {
            return UCS_ERR_IO_ERROR;
        }
        now = uct_uccl_now_ns();
        if (conn->rc_fail_since == 0) {
            conn->rc_fail_since = chunk->sent_ns;
        }
        /* a resend fails, if it does, a retry time from now */
        if ((uct_uccl_paths_usable(sel) <= 1) ||
            (now + conn->iface->config.rc_retry_ns - conn->rc_fail_since >
             conn->iface->config.peer_timeout_ns)) {
            return UCS_ERR_ENDPOINT_TIMEOUT;
        }
        uct_uccl_paths_retire(sel, p);
        conn->burst_left = 0;
        ++conn->stats.rc_path_fails;
        uct_uccl_cc_on_timeout(&conn->cc, now);
        ucs_diag("uccl: conn %u: path %u failed (qp 0x%x), %u of %u left",
                 conn->id, p, conn->paths[p].qp->qp_num,
                 uct_uccl_paths_usable(sel), conn->num_paths);
        uct_uccl_reset_start(conn, p, now);
    }
    if (!uct_uccl_chunk_is_rc_write(chunk)) {
        uct_uccl_tx_rc_redo(conn, chunk); /* READs and AMs land once */
        return UCS_OK;
    }
    path = &conn->paths[p];
    if (!(path->psn_flags & UCT_UCCL_QP_F_PEER_TOLD) &&
        (path->reset == UCT_UCCL_RESET_NONE)) {
        return UCS_ERR_ENDPOINT_TIMEOUT; /* no reset will tell */
    }
    ucs_queue_push(&path->held, &chunk->queue);
    if (path->psn_flags & UCT_UCCL_QP_F_PEER_TOLD) {
        uct_uccl_tx_rc_resolve(conn, path);
    }
    return UCS_OK;
}

/* What a purge completes its chunks with */
typedef struct {
    uct_uccl_conn_t         *conn;
    ucs_status_t            status;
} uct_uccl_purge_arg_t;

static void uct_uccl_tracker_purge_cb(void *arg, uint32_t csn,
                          uct_uccl_tx_entry_t *e)
{
    const uct_uccl_purge_arg_t *purge = arg;
    uct_uccl_chunk_t *chunk           = e->desc;

    chunk->flags &= ~UCT_UCCL_CHUNK_F_TRACKED;
    uct_uccl_chunk_done(purge->conn, chunk, purge->status);
}

/* Complete everything outstanding with `status` (failure or destroy).
 * Chunks still carried by a WR stay allocated until that WR completes. */
void uct_uccl_tx_purge(uct_uccl_conn_t *conn, ucs_status_t status)
{
    uct_uccl_purge_arg_t purge = { .conn = conn, .status = status };
    uct_uccl_chunk_t *chunk;
    uct_uccl_op_t *op;
    unsigned i;

    /* resends chained for the transmit step go out first, so that their
     * WRs complete (or flush) like every other posted one */
    if (conn->chains != NULL) {
        uct_uccl_conn_post_chains(conn);
    }

    while (!ucs_queue_is_empty(&conn->tx_queue)) {
        chunk = ucs_queue_pull_elem_non_empty(&conn->tx_queue,
                                              uct_uccl_chunk_t, queue);
        --conn->tx_queued;
        uct_uccl_chunk_done(conn, chunk, status);
    }
    conn->tx_queued_bytes = 0;

    if (!conn->rc) {
        uct_uccl_tracker_purge(&conn->tracker, uct_uccl_tracker_purge_cb,
                               &purge);
    }
    while (!ucs_list_is_empty(&conn->rc_inflight)) {
        chunk = ucs_list_extract_head(&conn->rc_inflight, uct_uccl_chunk_t,
                                      zlink);
        uct_uccl_chunk_done(conn, chunk, status);
    }
    for (i = 0; i < conn->num_paths; ++i) {
        ucs_queue_head_init(&conn->paths[i].held); /* done above */
    }
    conn->rc_outstanding    = 0;
    conn->rc_writes         = 0;
    conn->cc.inflight_bytes = 0;

    /* acknowledged chunks whose resend is still on the wire: their ops
     * complete below, the chunks when the WRs flush */
    ucs_list_for_each(chunk, &conn->zombies, zlink) {
        chunk->op = NULL;
    }

    /* what is left waits for a GET_DONE or a READ: complete it now */
    while (!ucs_list_is_empty(&conn->ops)) {
        op = ucs_list_head(&conn->ops, uct_uccl_op_t, list);
        op->status  = status;
        op->pending = 1;
        uct_uccl_op_part_done(conn, op, status);
    }
    if (conn->state == UCT_UCCL_CONN_FAILED) {
        uct_uccl_tx_check_flush(conn);  /* with the failure's status */
    } else {
        while (!ucs_list_is_empty(&conn->flushes)) {
            op = ucs_list_extract_head(&conn->flushes, uct_uccl_op_t, list);
            ucs_list_add_tail(&conn->ops, &op->list);
            op->status = status;
            uct_uccl_op_complete(conn, op);
        }
    }
}

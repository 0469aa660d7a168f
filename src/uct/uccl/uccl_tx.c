/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Transmit side of a conn: chunks wait in the conn's queue until the window
 * and a path's send queue have room, get a CSN and a path, and go out as one
 * chain per path (one ibv_post_send per chain). In UC mode the tracker keeps
 * them until ACKed and resends SACK holes and timed-out chunks; in RC mode a
 * successful send completion is the acknowledgement.
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <string.h>


static inline int uct_uccl_conn_window_open(uct_uccl_conn_t *conn,
                                            uint32_t length, uint64_t now)
{
    uct_uccl_iface_t *iface = conn->iface;

    if ((iface->tx_outstanding >= iface->config.cq_size) ||
        !uct_uccl_cc_can_send(&conn->cc, length, now)) {
        return 0;
    }
    return conn->rc ? (conn->rc_outstanding < conn->tracker.limit) :
                      !uct_uccl_tracker_full(&conn->tracker);
}

/* Refused only for its pacing time: the timer wheel brings the conn back
 * to the scheduler then, and nothing polls it meanwhile. The wheel is
 * brought up to date first, since its slots count from its last sweep. */
static void uct_uccl_tx_pace_wait(uct_uccl_conn_t *conn, uint64_t now)
{
    ucs_twheel_t *wheel = &conn->iface->pace_wheel;
    ucs_time_t delta;

    if (uct_uccl_conn_is_paced(conn)) {
        return;
    }
    ucs_twheel_sweep(wheel, ucs_get_time());
    delta = ucs_time_from_sec((conn->cc.next_send_ns - now) * 1e-9);
    if (ucs_wtimer_add(wheel, &conn->pace_timer,
                       ucs_max(delta, wheel->res)) == UCS_OK) {
        ++conn->iface->paced;
    }
    ++conn->stats.cc_paced;
}

/* The last chunk of a chain has nothing after it on its path to show that
 * it was lost: its loss waits for the tail probe (twice an RTT that the
 * chain's own transfer inflates, then a mark's RTT). While the conn is
 * losing chunks every bulk chain therefore ends with an empty
 * WRITE_WITH_IMM, tracked like any chunk: its arrival (or its loss) tells
 * within one RTT. A clean conn sends none: a mark costs one WR, one CQE
 * and one ACK per chain, as much as the chunk itself when a message is
 * one chunk, and the probe finds the rare first loss. */
static void uct_uccl_tx_mark_tails(uct_uccl_conn_t *conn, uint64_t now)
{
    uct_uccl_chunk_t *tail;
    uct_uccl_qp_t *path;
    ucs_status_t status;

    for (path = conn->chains; path != NULL; path = path->chain_next) {
        tail = (uct_uccl_chunk_t*)path->chain_tail->wr_id;
        if (!uct_uccl_chunk_is_bulk_write(tail) ||
            !uct_uccl_conn_window_open(conn, 0, now)) {
            continue;
        }
        status = uct_uccl_tx_mark(conn, path, tail->raddr, tail->rkey, now);
        if (status == UCS_ERR_NO_MEMORY) {
            return;
        }
        conn->stats.tail_marks += (status == UCS_OK);
    }
}

ucs_status_t uct_uccl_tx_mark(uct_uccl_conn_t *conn, uct_uccl_qp_t *path,
                              uint64_t raddr, uint32_t rkey, uint64_t now)
{
    uct_uccl_chunk_t *mark;

    if (!uct_uccl_path_has_room(conn, path) ||
        uct_uccl_tracker_full(&conn->tracker) ||
        (conn->iface->tx_outstanding >= conn->iface->config.cq_size)) {
        return UCS_ERR_NO_RESOURCE;
    }
    mark = uct_uccl_chunk_get_hdr(conn->iface);
    if (mark == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    /* no byte is written, and no PUT guard kept */
    mark->conn   = conn;
    mark->kind   = UCT_UCCL_KIND_PUT;
    mark->last   = 1;    /* the receiver ACKs at once */
    mark->raddr  = raddr;
    mark->rkey   = rkey;
    mark->csn    = uct_uccl_tracker_add(&conn->tracker, 0, path->index, now,
                                        mark);
    mark->flags |= UCT_UCCL_CHUNK_F_TRACKED;
    uct_uccl_chunk_build_wr(conn, mark);
    uct_uccl_path_chain(conn, path, mark, now);
    return UCS_OK;
}

/* A burst is one chain and starts here; in UC a bulk burst joins the
 * chain of resends the ACKs just asked for: one doorbell, and where the
 * NIC is the CPU (softverbs) one copy (RC: uct_uccl_conn_path_burst) */
static UCS_F_ALWAYS_INLINE void uct_uccl_tx_burst_start(uct_uccl_conn_t *conn)
{
    conn->burst_left = 0;
    if (!conn->rc && (conn->chains != NULL) &&
        !ucs_queue_is_empty(&conn->tx_queue) &&
        uct_uccl_path_has_room(conn, conn->chains) &&
        !uct_uccl_paths_parked(&conn->sel, conn->chains->index) &&
        (ucs_queue_head_elem_non_empty(&conn->tx_queue, uct_uccl_chunk_t,
                                       queue)->length > UCT_UCCL_BULK_MIN)) {
        conn->sel.last   = conn->chains->index;
        conn->burst_left = uct_uccl_paths_burst(&conn->sel,
                                                conn->iface->config.path_burst);
    }
}

/* In RC mode a chunk is in flight until its send completion. Only AMs
 * are numbered (the peer drops one it handed over already); a chunk sent
 * again after its QP failed keeps its numbers. */
static UCS_F_ALWAYS_INLINE void
uct_uccl_tx_track_rc(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk,
                     uint64_t now)
{
    chunk->sent_ns = now;
    if (ucs_likely(!(chunk->flags & UCT_UCCL_CHUNK_F_REDO))) {
        chunk->rc_seq = conn->rc_seq++;
        chunk->csn    = conn->rc_csn;
        conn->rc_csn  = uct_uccl_seq_add(conn->rc_csn,
                                         chunk->kind == UCT_UCCL_KIND_AM);
    }
    chunk->flags &= ~UCT_UCCL_CHUNK_F_REDO;
    ++conn->rc_outstanding;
    conn->rc_writes += uct_uccl_chunk_is_rc_write(chunk);
    ucs_list_add_tail(&conn->rc_inflight, &chunk->zlink);
}

/* A PUT's target is remembered for the resend's obsolete check */
static UCS_F_ALWAYS_INLINE void
uct_uccl_tx_guard_put(uct_uccl_conn_t *conn, const uct_uccl_chunk_t *chunk)
{
    if (chunk->kind == UCT_UCCL_KIND_PUT) {
        uct_uccl_put_runs_sent(&conn->put_runs, chunk->raddr, chunk->rkey,
                               chunk->length, chunk->csn);
    }
}

/* The same for a burst's follower: the chunks of one op after its first
 * join its run (a burst's head, often a small message, pays no test) */
static UCS_F_ALWAYS_INLINE void
uct_uccl_tx_guard_follower(uct_uccl_conn_t *conn,
                           const uct_uccl_chunk_t *chunk)
{
    if (ucs_likely(chunk->flags & UCT_UCCL_CHUNK_F_RUN) &&
        uct_uccl_put_runs_extend(&conn->put_runs, chunk->raddr,
                                 chunk->length)) {
        return;
    }
    uct_uccl_tx_guard_put(conn, chunk);
}

/* In UC mode the tracker keeps a chunk until it is ACKed */
static UCS_F_ALWAYS_INLINE void
uct_uccl_tx_track_uc(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk,
                     const uct_uccl_qp_t *path, uint64_t now)
{
    if (uct_uccl_tracker_outstanding(&conn->tracker) == 0) {
        /* the peer owed nothing: its silence counts from now (a paced
         * sender is idle between chunks) */
        conn->last_progress = now;
    }
    chunk->csn    = uct_uccl_tracker_add(&conn->tracker, chunk->length,
                                         path->index, now, chunk);
    chunk->flags |= UCT_UCCL_CHUNK_F_TRACKED;
    uct_uccl_rto_on_send(&conn->rto, now);
    uct_uccl_tx_guard_put(conn, chunk);
}

/* UC: how many more chunks may follow the head of a burst on its path
 * (chained, `count` chunks in this pump so far): the burst's, the path's
 * send queue's, the CQ's, the tracker's and the dest's room, whichever
 * is least; none when the next chunk would not take the burst's path
 * anyway (a small one kept its own, uct_uccl_path_sticky) or may bring
 * a probe (uct_uccl_path_link) */
static UCS_F_ALWAYS_INLINE unsigned
uct_uccl_tx_follow_room(uct_uccl_conn_t *conn, const uct_uccl_qp_t *path,
                        unsigned count, uint32_t dest_room)
{
    const uct_uccl_iface_t *iface = conn->iface;
    const uct_uccl_tracker_t *t   = &conn->tracker;
    unsigned room                 = conn->burst_left;
    uint32_t out                  = uct_uccl_tracker_outstanding(t);

    if ((path->index != conn->sel.last) ||
        ucs_unlikely(conn->sel.probe_due != 0)) {
        return 0;
    }
    room = ucs_min(room, (path->outstanding < iface->config.tx_queue_len) ?
                         iface->config.tx_queue_len - path->outstanding : 0);
    room = ucs_min(room, (iface->tx_outstanding < iface->config.cq_size) ?
                         iface->config.cq_size - iface->tx_outstanding : 0);
    room = ucs_min(room, (out < t->limit) ? t->limit - out : 0);
    room = ucs_min(room, conn->tx_queued);
    return ucs_min(room, (count < dest_room) ? dest_room - count : 0);
}

/* UC: the chunks behind the head of a burst join its chain on `path`
 * while they may, at most `room`. What the head was admitted with (the
 * rooms, the GETs in flight) holds for them; what may change from one to
 * the next is checked for each (a fence, the cc's window, the quantum),
 * and the first that fails ends the burst: the pump's checks then see it.
 * The path's counts are taken once. Returns the chunks chained. */
static UCS_F_ALWAYS_INLINE unsigned
uct_uccl_tx_follow_uc(uct_uccl_conn_t *conn, uct_uccl_qp_t *path,
                      unsigned room, size_t quantum, size_t *bytes_p,
                      size_t *payload_p, uint64_t now)
{
    uct_uccl_iface_t *iface   = conn->iface;
    uct_uccl_tracker_t *t     = &conn->tracker;
    unsigned p                = path->index;
    uint32_t mask             = iface->config.tx_ring_mask;
    uint32_t pos              = path->sent_head + path->outstanding;
    uct_uccl_chunk_t **sent   = path->sent;
    uct_uccl_tx_entry_t *ent  = t->ent;
    uint32_t ent_mask         = t->mask;
    uint32_t csn              = t->nxt;
    uint32_t path_seq         = t->path_sent[p];
    uint32_t gen              = conn->chain_gen;
    uint32_t max_inline       = conn->max_inline;
    struct ibv_send_wr *tail  = path->chain_tail;
    size_t bytes              = *bytes_p;
    size_t payload            = *payload_p;
    size_t first              = payload;
    uint64_t asks             = 0;
    unsigned n                = 0;
    uct_uccl_chunk_t *chunk;
    uint32_t charged;
    int plain;

    /* the queue holds `room` chunks at least */
    if ((room == 0) || !ucs_list_is_empty(&conn->gets)) {
        return 0;
    }
    while ((n < room) && (bytes < quantum)) {
        chunk = ucs_queue_head_elem_non_empty(&conn->tx_queue,
                                              uct_uccl_chunk_t, queue);
        /* the common follower, a zero-copy PUT's chunk after its first
         * (F_RUN and no other flag): no fence, a WRITE, all of it spent
         * of the window and asked of the peer's credit */
        plain   = (chunk->flags == UCT_UCCL_CHUNK_F_RUN);
        charged = plain ? chunk->length : uct_uccl_chunk_cc_bytes(conn, chunk);
        if ((!plain &&
             (ucs_unlikely(chunk->flags & UCT_UCCL_CHUNK_F_FENCE) ||
              ucs_unlikely((chunk->kind == UCT_UCCL_KIND_GET_REQ) &&
                           iface->credit.on))) ||
            !uct_uccl_cc_can_send(&conn->cc, charged, now)) {
            break; /* a GET pulled by our pacer: uct_uccl_tx_may_send */
        }
        ucs_queue_pull_non_empty(&conn->tx_queue);
        uct_uccl_tracker_entry_init(&ent[csn & ent_mask], chunk->length, p,
                                    path_seq++, now, chunk);
        chunk->csn    = csn;
        csn           = uct_uccl_seq_add(csn, 1);
        chunk->flags |= UCT_UCCL_CHUNK_F_TRACKED;
        uct_uccl_tx_guard_follower(conn, chunk);
        if (ucs_likely(plain)) {
            uct_uccl_chunk_build_write_as(chunk, IBV_WR_RDMA_WRITE_WITH_IMM,
                                          UCT_UCCL_KIND_PUT, max_inline);
        } else if (uct_uccl_chunk_is_write(chunk)) {
            uct_uccl_chunk_build_write_as(chunk, IBV_WR_RDMA_WRITE_WITH_IMM,
                                          (uct_uccl_kind_t)chunk->kind,
                                          max_inline);
        } else {
            uct_uccl_chunk_build_wr(conn, chunk);
        }
        tail->next       = &chunk->wr;
        tail             = &chunk->wr;
        chunk->chain_gen = gen;
        chunk->path      = p;
        ++chunk->posted;
        sent[pos++ & mask] = chunk;
        uct_uccl_cc_on_send_part(&conn->cc, chunk->length, charged, now);
        payload += chunk->length;
        asks    += uct_uccl_chunk_asks(chunk);
        bytes   += chunk->length + UCT_UCCL_DRR_CHUNK_COST;
        ++n;
    }
    tail->next             = NULL;
    uct_uccl_tracker_add_burst(t, p, n, payload - first);
    path->chain_tail       = tail;
    path->chain_len       += n;
    path->outstanding     += n;
    iface->tx_outstanding += n;
    conn->tx_queued       -= n;
    conn->tx_queued_bytes -= asks;
    conn->burst_left      -= n;
    uct_uccl_paths_sent_n(&conn->sel, p, n);
    *bytes_p               = bytes;
    *payload_p             = payload;
    return n;
}

/* May the chunk at the head of the queue go now? Pacing, a fence, RC's
 * order of AMs after writes or a GET in flight, and the peer iface's
 * window can hold it back. */
static UCS_F_ALWAYS_INLINE int
uct_uccl_tx_may_send(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk,
                     unsigned count, uint32_t dest_room, uint64_t now)
{
    if (!uct_uccl_conn_window_open(conn, uct_uccl_chunk_cc_bytes(conn, chunk),
                                   now)) {
        if (now < conn->cc.next_send_ns) {
            uct_uccl_tx_pace_wait(conn, now);
        } else {
            conn->tx_shut = 1;
        }
        return 0;
    }
    if (ucs_unlikely((chunk->flags & UCT_UCCL_CHUNK_F_FENCE) ||
                     conn->rc || !ucs_list_is_empty(&conn->gets)) &&
        !uct_uccl_tx_may_leave(conn, chunk)) {
        return 0;
    }
    if (ucs_unlikely(conn->iface->credit.on) &&
        !uct_uccl_credit_may_pull(conn, chunk, now)) {
        return 0;
    }
    if (ucs_unlikely(count >= dest_room)) {
        uct_uccl_dest_refused(conn);
        return 0;
    }
    return 1;
}

/* The burst's chains go out, with tail marks while losing; what the
 * receiver's credit does not cover is asked for */
static UCS_F_ALWAYS_INLINE void uct_uccl_tx_burst_end(uct_uccl_conn_t *conn,
                                                      unsigned count,
                                                      uint64_t now)
{
    uct_uccl_dest_sent(conn, count);
    if (!conn->rc && (conn->chains != NULL) && (now < conn->lossy_until)) {
        uct_uccl_tx_mark_tails(conn, now);
    }
    uct_uccl_conn_post_chains(conn);
    if (ucs_unlikely(conn->cc.ops->tx_request != NULL) &&
        (conn->tx_queued > 0)) {
        uct_uccl_credit_tx_request(conn, now);
    }
}

unsigned uct_uccl_tx_pump(uct_uccl_conn_t *conn, size_t quantum)
{
    size_t bytes   = 0;
    size_t payload = 0;
    unsigned count = 0;
    uct_uccl_chunk_t *chunk;
    uct_uccl_qp_t *path;
    uint32_t dest_room;
    uint64_t now;

    if ((conn->state != UCT_UCCL_CONN_CONNECTED) ||
        (ucs_unlikely(conn->sel.nretired > 0) &&
         uct_uccl_tx_rc_draining(conn))) {
        return 0;
    }

    now       = uct_uccl_now_ns();
    if (ucs_unlikely(conn->cc.flags & UCT_UCCL_CC_F_HELD) && !conn->rc) {
        uct_uccl_credit_release(conn, now);
    }
    dest_room     = uct_uccl_dest_room(conn);
    conn->tx_shut = 0;
    uct_uccl_tx_burst_start(conn);
    while (!ucs_queue_is_empty(&conn->tx_queue) && (bytes < quantum)) {
        chunk = ucs_queue_head_elem_non_empty(&conn->tx_queue,
                                              uct_uccl_chunk_t, queue);
        if (!uct_uccl_tx_may_send(conn, chunk, count, dest_room, now)) {
            break;
        }

        path = (conn->rc && (chunk->kind == UCT_UCCL_KIND_AM)) ?
               uct_uccl_path_select_ordered(conn, now) :
               uct_uccl_path_next(conn, chunk->length, now);
        if (path == NULL) {
            ++conn->stats.sq_full;
            break;
        }

        ucs_queue_pull_non_empty(&conn->tx_queue);
        --conn->tx_queued;
        conn->tx_queued_bytes -= uct_uccl_chunk_asks(chunk);
        if (conn->rc) {
            uct_uccl_tx_track_rc(conn, chunk, now);
        } else {
            uct_uccl_tx_track_uc(conn, chunk, path, now);
        }

        uct_uccl_chunk_build(conn, chunk);
        uct_uccl_path_link(conn, path, chunk, now);
        uct_uccl_cc_on_send_part(&conn->cc,
                                 uct_uccl_chunk_cc_flight(conn, chunk),
                                 uct_uccl_chunk_cc_bytes(conn, chunk), now);
        if (ucs_unlikely(conn->iface->credit.on)) {
            uct_uccl_credit_pull_spent(conn, chunk);
        }
        payload += chunk->length;
        bytes   += chunk->length + UCT_UCCL_DRR_CHUNK_COST;
        ++count;
        if (!conn->rc && (conn->tx_queued > 0)) {
            count += uct_uccl_tx_follow_uc(conn, path,
                                           uct_uccl_tx_follow_room(
                                               conn, path, count, dest_room),
                                           quantum, &bytes, &payload, now);
        }
    }
    conn->stats.chunks_tx += count;
    conn->stats.bytes_tx  += payload;
    uct_uccl_tx_burst_end(conn, count, now);
    return count;
}


/* Under credit, the ACK an AM carried may free what the queue's head
 * needs: a ping-pong's reply carries the ACK of the message before it,
 * which the next pass would handle only after this send had asked the
 * peer for credit (a request and a grant per message). It is handled
 * first when the head does not fit otherwise. */
static void uct_uccl_tx_ack_in_first(uct_uccl_conn_t *conn)
{
    uct_uccl_chunk_t *head;

    if (ucs_likely(!conn->ack_in_held) ||
        !(conn->cc.flags & UCT_UCCL_CC_F_STRICT) ||
        ucs_queue_is_empty(&conn->tx_queue)) {
        return;
    }
    head = ucs_queue_head_elem_non_empty(&conn->tx_queue, uct_uccl_chunk_t,
                                         queue);
    if (!uct_uccl_cc_can_send(&conn->cc, uct_uccl_chunk_cc_bytes(conn, head),
                              uct_uccl_now_ns())) {
        uct_uccl_rx_ack_in_flush(conn);
    }
}

/* An operation posted outside progress goes on the wire at once: UCX may
 * consider it sent (am_short, put_short) and not progress for a long time,
 * e.g. a rank that leaves a barrier and sleeps. What cannot go yet, and
 * everything queued inside an engine pass, the scheduler posts before the
 * pass ends: user code runs inside a pass only in a conn's scheduler turn
 * (pending requests) and in a background pass (async AM handlers, from the
 * receive loop), neither of which may pump another conn. */
void uct_uccl_tx_post_now(uct_uccl_conn_t *conn)
{
    uct_uccl_iface_t *iface = conn->iface;

    if (!iface->async.active && (iface->sched_current == NULL) &&
        (conn->state == UCT_UCCL_CONN_CONNECTED)) {
        uct_uccl_tx_ack_in_first(conn);
        (void)uct_uccl_tx_pump(conn, iface->config.drr_quantum);
        uct_uccl_conn_timer_wake(conn); /* what went out is timed */
    }
    if (conn->tx_queued > 0) {
        uct_uccl_iface_sched_add(iface, conn);
    }
}



/* The AM's WR: its header and payload inline, then the ACK owed to the
 * peer iface if one is (uct_uccl_chunk_build_wr builds the same for a
 * resend, keeping the ACK flag while the first WR is out) */
static UCS_F_ALWAYS_INLINE void
uct_uccl_tx_am_build(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk,
                     uint64_t now)
{
    struct ibv_send_wr *wr = &chunk->wr;
    uct_uccl_am_hdr_t *am  = &chunk->hdr.am;
    uint32_t length        = chunk->length;

    wr->opcode         = IBV_WR_SEND_WITH_IMM;
    wr->imm_data       = uct_uccl_imm_to_wire(
                             uct_uccl_imm_pack(chunk->csn, UCT_UCCL_KIND_AM,
                                               chunk->last));
    wr->send_flags     = IBV_SEND_INLINE | IBV_SEND_SOLICITED;
    wr->next           = NULL;
    chunk->sge[0].addr   = (uintptr_t)am;
    chunk->sge[0].length = chunk->hdr_len;
    chunk->sge[0].lkey   = chunk->lkey;
    chunk->sge[1].addr   = (uintptr_t)chunk->data;
    chunk->sge[1].length = length;
    chunk->sge[1].lkey   = chunk->lkey;
    am->flags            = 0;
    if (!ucs_list_is_empty(&conn->iface->ack_list) &&
        (sizeof(*am) + length + sizeof(uct_uccl_ack_t) <=
         conn->remote_rx_buf_size) &&
        uct_uccl_rx_ack_piggyback(conn, chunk->data + length, now)) {
        am->flags             = UCT_UCCL_AM_F_ACK;
        chunk->sge[1].length += sizeof(uct_uccl_ack_t);
    }
    wr->num_sge = 1 + (chunk->sge[1].length > 0);
}

/* UC: an AM posted outside progress on an idle conn (uct_uccl_tx_am_may_go)
 * goes out here, alone on the conn's path for small messages: the pump's
 * work for one chunk (tracked, timed, counted against every window)
 * without its queue, its loop and its chains. UCS_ERR_NO_RESOURCE: not
 * taken (a window or the path is full), the caller queues it. */
ucs_status_t uct_uccl_tx_am_now(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk)
{
    uct_uccl_iface_t *iface = conn->iface;
    struct ibv_send_wr *bad_wr;
    uct_uccl_qp_t *path;
    int ret, signaled;
    uint64_t now;

    now = uct_uccl_now_ns();
    if (ucs_unlikely(conn->cc.flags & UCT_UCCL_CC_F_HELD)) {
        /* credit held too long goes back first, as the pump does */
        uct_uccl_credit_release_before(conn, chunk->length, now);
    }
    if (!uct_uccl_conn_window_open(conn, chunk->length, now)) {
        return UCS_ERR_NO_RESOURCE;
    }
    path = uct_uccl_path_sticky(conn, &conn->small, chunk->length, now);
    if (!uct_uccl_path_has_room(conn, path)) {
        return UCS_ERR_NO_RESOURCE;
    }

    chunk->conn    = conn;
    chunk->barrier = conn->gets_issued;
    uct_uccl_tx_track_uc(conn, chunk, path, now);
    uct_uccl_tx_am_build(conn, chunk, now);
    uct_uccl_paths_sent(&conn->sel, path->index, now);
    signaled = (path->unsig_run + 1u >=
                ucs_min(UCT_UCCL_TX_UNSIGNALED_MAX,
                        iface->config.tx_queue_len / 2));
    /* unsignaled, the device copied it at post: nothing of the chunk is
     * read later, its slot is freed by the next signaled WR's CQE, and a
     * flush CQE of its own (a failed QP) names no chunk */
    path->sent[(path->sent_head + path->outstanding) &
               iface->config.tx_ring_mask] = signaled ? chunk : NULL;
    if (signaled) {
        chunk->wr.send_flags |= IBV_SEND_SIGNALED;
        ++chunk->posted;
        ++iface->tx_outstanding;
    } else {
        chunk->wr.wr_id = 0;
        ++path->nosig;
    }
    ++path->outstanding;
    chunk->path      = path->index;
    /* chained by no one: a resend in a later pass may rebuild it */
    chunk->chain_gen = conn->chain_gen++;
    uct_uccl_cc_on_send(&conn->cc, chunk->length, now);
    uct_uccl_dest_sent(conn, 1);
    ++conn->stats.am_now;
    ++conn->stats.chunks_tx;
    conn->stats.bytes_tx += chunk->length;
    ++iface->stats.doorbells;
    ++iface->stats.wrs;

    ret             = ibv_post_send(path->qp, &chunk->wr, &bad_wr);
    chunk->wr.wr_id = (uintptr_t)chunk;
    if (ucs_unlikely(ret != 0)) {
        /* it stays tracked: the timer sends it again */
        ucs_error("uccl: ibv_post_send(qp 0x%x, AM) failed: %s",
                  path->qp->qp_num, strerror(ret));
        --path->outstanding;
        if (signaled) {
            --chunk->posted;
            --iface->tx_outstanding;
        } else {
            --path->nosig;
        }
    } else if (signaled) {
        path->unsig_run = 0;
    } else {
        ++path->unsig_run;
    }
    uct_uccl_conn_timer_wake(conn); /* what went out is timed */
    return UCS_OK;
}

void uct_uccl_conn_kick(uct_uccl_conn_t *conn)
{
    if ((conn->tx_queued > 0) || !ucs_queue_is_empty(&conn->pending_q)) {
        uct_uccl_iface_sched_add(conn->iface, conn);
    }
    if (!ucs_list_is_empty(&conn->flushes)) {
        uct_uccl_tx_check_flush(conn);
    }
}

/* RC: the completion of a WR whose data went that way (dir) */
static void uct_uccl_tx_rc_dir_done(uct_uccl_rc_dir_t *dir, uint64_t sent_ns,
                                    uint64_t lat)
{
    dir->done_sent = ucs_max(dir->done_sent, sent_ns);
    uct_uccl_rto_sample(&dir->lat, lat);
}

/* RC: a chunk's WR completed, so the NIC delivered it */
static void uct_uccl_tx_rc_done(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk)
{
    uint64_t now, lat;

    conn->rc_fail_since = 0; /* the peer is alive */
    --conn->rc_outstanding;
    uct_uccl_dest_done(conn, 1);
    conn->rc_writes -= uct_uccl_chunk_is_rc_write(chunk);
    ucs_list_del(&chunk->zlink);
    /* the NIC's ACK is not seen: the RTT sample is post to completion;
     * the path carries (uct_uccl_path_health_rc) */
    now = uct_uccl_now_ns();
    lat = (now > chunk->sent_ns) ? now - chunk->sent_ns : 0;
    uct_uccl_tx_rc_dir_done(&conn->rc_dir[uct_uccl_chunk_rc_dir(chunk)],
                            chunk->sent_ns, lat);
    if ((lat > 0) && (chunk->length > UCT_UCCL_BULK_MIN)) {
        /* bulk chunks only: their times compare paths, not sizes */
        uct_uccl_paths_rtt(&conn->sel, chunk->path, lat);
    }
    uct_uccl_paths_ack_time(&conn->sel, now);
    uct_uccl_paths_completed(&conn->sel, chunk->path);
    conn->stats.cc_samples += (lat > 0);
    uct_uccl_cc_on_ack(&conn->cc, uct_uccl_chunk_cc_flight(conn, chunk), lat,
                       now);
    uct_uccl_chunk_wr_done(chunk);
    uct_uccl_chunk_done(conn, chunk, UCS_OK);
    uct_uccl_conn_kick(conn);
}

/* One WR carrying `chunk` is done, with `status` */
static void uct_uccl_tx_wr_complete(uct_uccl_iface_t *iface,
                                    uct_uccl_chunk_t *chunk,
                                    enum ibv_wc_status status, uint32_t qp_num)
{
    uct_uccl_conn_t *conn = chunk->conn;

    if (conn == NULL) {
        /* its conn is gone; only this WR kept it alive */
        uct_uccl_chunk_wr_done(chunk);
        return;
    }

    if (ucs_unlikely(status != IBV_WC_SUCCESS)) {
        if (status != IBV_WC_WR_FLUSH_ERR) {
            ++iface->stats.err_cqe;
            ucs_diag("uccl: conn %u: send completion error %s (qp 0x%x)",
                     conn->id, ibv_wc_status_str(status), qp_num);
        }
        if ((conn->state == UCT_UCCL_CONN_FAILED) ||
            (chunk->flags & UCT_UCCL_CHUNK_F_ACKED)) {
            uct_uccl_chunk_wr_done(chunk);
            return;
        }

        uct_uccl_chunk_wr_done(chunk); /* still tracked: not freed */
        if (conn->rc) {
            if (uct_uccl_tx_rc_failed(conn, chunk, status) == UCS_OK) {
                return; /* it goes again on another path */
            }
        } else if ((status != IBV_WC_RETRY_EXC_ERR) &&
                   (status != IBV_WC_WR_FLUSH_ERR)) {
            /* UC: a local error on one WR; the chunk stays tracked and the
             * timer resends it */
            return;
        }
        uct_uccl_conn_fail(conn, (status == IBV_WC_RETRY_EXC_ERR) ?
                                 UCS_ERR_ENDPOINT_TIMEOUT : UCS_ERR_IO_ERROR);
        return;
    }

    if (conn->rc && !(chunk->flags & UCT_UCCL_CHUNK_F_ACKED)) {
        uct_uccl_tx_rc_done(conn, chunk);
        return;
    }

    uct_uccl_chunk_wr_done(chunk);
    if (conn->tx_queued > 0) {
        uct_uccl_iface_sched_add(iface, conn);
    }
}

/* The common completion, done inline: a UC WR that succeeded while its
 * chunk waits for its ACK (which releases it) */
static UCS_F_ALWAYS_INLINE int
uct_uccl_tx_wr_still_tracked(uct_uccl_chunk_t *chunk,
                             enum ibv_wc_status status)
{
    uct_uccl_conn_t *conn = chunk->conn;

    if ((status != IBV_WC_SUCCESS) || (conn == NULL) ||
        conn->rc || (chunk->flags & UCT_UCCL_CHUNK_F_ACKED)) {
        return 0;
    }
    ucs_assert(chunk->posted > 0);
    --chunk->posted;
    if (conn->tx_queued > 0) {
        uct_uccl_iface_sched_add(conn->iface, conn);
    }
    return 1;
}

/* The status a CQE gives a WR it completes: its own to the WR it names;
 * success to those posted before it, unless it is a flush: the QP failed
 * before them (a NIC may flush an unsignaled WR without a CQE of its own) */
static UCS_F_ALWAYS_INLINE enum ibv_wc_status
uct_uccl_tx_wr_status(const uct_uccl_chunk_t *chunk,
                      const uct_uccl_chunk_t *done, const struct ibv_wc *wc)
{
    return ((chunk == done) || (wc->status == IBV_WC_WR_FLUSH_ERR)) ?
           wc->status : IBV_WC_SUCCESS;
}

/* A successful CQE of a UC conn's path: the WRs it completes are taken
 * off the path with one count, and a chunk still tracked only has a WR
 * less (its ACK frees it); one whose ACK came first (ACKED) goes to
 * `batch`, to be completed by the caller. Returns the chunks in `batch`;
 * *found tells whether `done` was reached. */
static UCS_F_ALWAYS_INLINE unsigned
uct_uccl_tx_completion_uc(uct_uccl_iface_t *iface, uct_uccl_qp_t *path,
                          const uct_uccl_chunk_t *done,
                          uct_uccl_chunk_t **batch, unsigned *found)
{
    uint32_t mask           = iface->config.tx_ring_mask;
    uint32_t head           = path->sent_head;
    uint32_t end            = head + path->outstanding;
    uct_uccl_chunk_t **sent = path->sent;
    unsigned n              = 0;
    unsigned nosig          = 0;
    int hit                 = 0;
    uct_uccl_chunk_t *chunk;

    while (head != end) {
        chunk = sent[head++ & mask];
        if (chunk == NULL) {
            ++nosig; /* an unsignaled inline AM: done at post */
            continue;
        }
        hit   = (chunk == done);
        if (ucs_unlikely(chunk->flags & UCT_UCCL_CHUNK_F_ACKED)) {
            batch[n++] = chunk;
            if (n == UCT_UCCL_CQ_BATCH) {
                break;
            }
        } else {
            ucs_assert(chunk->posted > 0);
            --chunk->posted;
        }
        if (hit) {
            break;
        }
    }
    *found                 = hit;
    iface->tx_outstanding -= head - path->sent_head - nosig;
    path->outstanding     -= head - path->sent_head;
    path->nosig           -= nosig;
    path->sent_head        = head;
    if (path->conn->tx_queued > 0) {
        uct_uccl_iface_sched_add(iface, path->conn);
    }
    return n;
}

/* Take the WRs a CQE completes off its path: every WR posted before the
 * one it names, and that one. The common completion is done on the way;
 * the others in batches, each with a fresh look-up: completing a chunk
 * may run user callbacks that destroy the conn, and a QP then lives on as
 * a draining copy of its path (or goes). */
void uct_uccl_tx_completion(uct_uccl_iface_t *iface, struct ibv_wc *wc)
{
    uct_uccl_chunk_t *done = (uct_uccl_chunk_t*)wc->wr_id;
    uct_uccl_chunk_t *batch[UCT_UCCL_CQ_BATCH];
    unsigned i, n, found = 0;
    uct_uccl_chunk_t *chunk;
    uct_uccl_qp_t *path;

    do {
        path = uct_uccl_iface_qp_find(iface, wc->qp_num);
        if (ucs_likely((path != NULL) && (wc->status == IBV_WC_SUCCESS) &&
                       (path->conn != NULL) && !path->conn->rc)) {
            n = uct_uccl_tx_completion_uc(iface, path, done, batch, &found);
            if (ucs_unlikely(!found && (path->outstanding == 0))) {
                ucs_error("uccl: qp 0x%x: completion of a WR it does not "
                          "hold", wc->qp_num);
                found = 1;
            }
            for (i = 0; i < n; ++i) {
                uct_uccl_tx_wr_complete(iface, batch[i], IBV_WC_SUCCESS,
                                        wc->qp_num);
            }
            continue;
        }
        if (ucs_unlikely(path == NULL)) {
            if (!found && (done != NULL)) { /* its QP is gone: only this
                                             * WR is known */
                --iface->tx_outstanding;
                uct_uccl_tx_wr_complete(iface, done, wc->status, wc->qp_num);
            }
            return;
        }

        n = 0;
        while ((n < UCT_UCCL_CQ_BATCH) && !found && (path->outstanding > 0)) {
            chunk = path->sent[path->sent_head++ & iface->config.tx_ring_mask];
            --path->outstanding;
            if (chunk == NULL) {
                /* an unsignaled inline AM (its flush CQE names none) */
                --path->nosig;
                found = (done == NULL);
                continue;
            }
            found = (chunk == done);
            --iface->tx_outstanding;
            if (ucs_unlikely(!uct_uccl_tx_wr_still_tracked(
                                 chunk, uct_uccl_tx_wr_status(chunk, done,
                                                              wc)))) {
                batch[n++] = chunk;
            }
        }
        if (ucs_unlikely(!found && (path->outstanding == 0))) {
            ucs_error("uccl: qp 0x%x: completion of a WR it does not hold",
                      wc->qp_num);
            found = 1;
        }
        if ((path->outstanding == 0) && (path->conn == NULL)) {
            uct_uccl_iface_qp_drained(iface, path);
        }

        for (i = 0; i < n; ++i) {
            uct_uccl_tx_wr_complete(iface, batch[i],
                                    uct_uccl_tx_wr_status(batch[i], done, wc),
                                    wc->qp_num);
        }
    } while (!found);
}

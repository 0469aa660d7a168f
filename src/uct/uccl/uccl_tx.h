/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The data path's interface: transmit (queue, pump, completions), loss
 * repair (ACKs, timers, purge), posting (path choice, chains, WRs), the
 * receive side and the UC GET protocol.
 */
#ifndef UCT_UCCL_TX_H_
#define UCT_UCCL_TX_H_

#include "uccl_iface.h"

#include <ucs/datastruct/mpool.inl>


static inline uint32_t uct_uccl_conn_inflight(uct_uccl_conn_t *conn)
{
    return conn->rc ? conn->rc_outstanding :
                      uct_uccl_tracker_outstanding(&conn->tracker);
}

/* UC: an ACK that moved una, with nothing resent for an RTO (since the
 * last doubling, or since the lossy time a resend began): new chunks may
 * be twice as large, up to the iface's chunk_max. A chunk already cut
 * keeps its size. */
static UCS_F_ALWAYS_INLINE void uct_uccl_conn_chunk_grow(uct_uccl_conn_t *conn,
                                                         uint64_t now)
{
    size_t max = conn->iface->config.chunk_max;

    if (ucs_likely(conn->chunk_cur >= max) || (now < conn->chunk_grow_at)) {
        return;
    }
    conn->chunk_cur     = ucs_min(2 * (size_t)conn->chunk_cur, max);
    conn->chunk_grow_at = now + conn->rto.rto_ns;
    ++conn->stats.chunk_grows;
}

/* UC: a resend, so the fabric may lose: new chunks are CHUNK_SIZE again
 * (a loss costs a whole chunk, and a large one is more likely to be hit),
 * and may grow only from `grow_at` on */
static inline void uct_uccl_conn_chunk_shrink(uct_uccl_conn_t *conn,
                                              uint64_t grow_at)
{
    conn->chunk_grow_at = grow_at;
    if (conn->chunk_cur > conn->iface->config.chunk_size) {
        conn->chunk_cur = conn->iface->config.chunk_size;
        ++conn->stats.chunk_shrinks;
    }
}

/* Chunks conn may put in flight to its peer iface now: while no conn
 * contends for room there, what the dest's window has left (a conn alone
 * there is held by its own window first, the same); else only the conn
 * whose turn it is, up to its quota (uccl_sched.c) */
static UCS_F_ALWAYS_INLINE uint32_t uct_uccl_dest_room(uct_uccl_conn_t *conn)
{
    const uct_uccl_dest_t *dest = conn->dest;

    if (ucs_likely(dest->contenders == 0)) {
        return ucs_max(dest->room, 0);
    }
    return uct_uccl_dest_room_turn(conn);
}

/* conn put `count` more chunks in flight to its dest */
static UCS_F_ALWAYS_INLINE void uct_uccl_dest_sent(uct_uccl_conn_t *conn,
                                                   unsigned count)
{
    uct_uccl_dest_t *dest = conn->dest;

    dest->room         -= count;
    conn->dest_counted += count;
    if (ucs_unlikely(dest->turn == conn)) {
        dest->claimed += count;
    }
}

/* `count` chunks of conn left flight (RC: completed): the room goes back
 * to its dest, to the conn whose turn it is or to the first that waits.
 * A failed conn left its dest. */
static UCS_F_ALWAYS_INLINE void uct_uccl_dest_done(uct_uccl_conn_t *conn,
                                                   unsigned count)
{
    uct_uccl_dest_t *dest = conn->dest;

    if (ucs_unlikely(dest == NULL)) {
        return;
    }
    dest->room         += count;
    conn->dest_counted -= count;
    if (ucs_unlikely(dest->contenders > 0)) {
        uct_uccl_dest_wake(conn->iface, dest);
    }
}

/* The same after an ACK (UC): what is in flight now, tail marks and
 * probes (sent outside the pump) included, is what the dest counts */
static UCS_F_ALWAYS_INLINE void uct_uccl_dest_sync(uct_uccl_conn_t *conn)
{
    uct_uccl_dest_t *dest = conn->dest;
    uint32_t inflight     = uct_uccl_conn_inflight(conn);

    if (ucs_unlikely(dest == NULL)) {
        return;
    }
    dest->room        += (int32_t)(conn->dest_counted - inflight);
    conn->dest_counted = inflight;
    if (ucs_unlikely(dest->contenders > 0)) {
        uct_uccl_dest_wake(conn->iface, dest);
    }
}

static inline int uct_uccl_path_has_room(uct_uccl_conn_t *conn,
                                         uct_uccl_qp_t *path)
{
    return path->outstanding < conn->iface->config.tx_queue_len;
}

/* Chunks a path choice takes at most (PATH_BURST). RC: one; its chunks are
 * large (CHUNK_SIZE auto: 256k), so a doorbell per chunk costs little
 * beside one, and a burst puts megabytes behind one choice: on a slow path
 * they queue past the NIC's ACK timeout, which resends them there. */
static UCS_F_ALWAYS_INLINE unsigned
uct_uccl_conn_path_burst(const uct_uccl_conn_t *conn)
{
    return conn->rc ? 1 : conn->iface->config.path_burst;
}

/* A PUT chunk or GET reply goes as a WRITE (UC: with the immediate that
 * names it) to its target */
static UCS_F_ALWAYS_INLINE int
uct_uccl_chunk_is_write(const uct_uccl_chunk_t *chunk)
{
    return ((chunk->kind == UCT_UCCL_KIND_PUT) ||
            (chunk->kind == UCT_UCCL_KIND_GET_RESP)) &&
           !(chunk->flags & UCT_UCCL_CHUNK_F_READ);
}

/* What the conn's cc counts in flight of a chunk: all of it, but an RC
 * READ that our own pacer scheduled (receiver-driven cc): the data comes
 * to us, and neither the window nor the peer's credit has a say in it */
static UCS_F_ALWAYS_INLINE uint32_t
uct_uccl_chunk_cc_flight(const uct_uccl_conn_t *conn,
                         const uct_uccl_chunk_t *chunk)
{
    return ucs_unlikely((chunk->flags & UCT_UCCL_CHUNK_F_READ) &&
                        conn->iface->credit.on) ? 0 : chunk->length;
}

/* What a chunk spends of its conn's window or credit: a reply to the
 * peer's GET is pulled by its receiver, whose pacer scheduled it
 * (uct_uccl_cc_charge); our READ, see uct_uccl_chunk_cc_flight */
static UCS_F_ALWAYS_INLINE uint32_t
uct_uccl_chunk_cc_bytes(const uct_uccl_conn_t *conn,
                        const uct_uccl_chunk_t *chunk)
{
    return uct_uccl_cc_charge(&conn->cc, uct_uccl_chunk_cc_flight(conn, chunk),
                              chunk->flags & UCT_UCCL_CHUNK_F_SERVED);
}

/* The WR of a WRITE chunk, with `opcode` and the chunk's `kind` (a
 * caller that knows it passes a constant); up to max_inline bytes go
 * inline */
static UCS_F_ALWAYS_INLINE void
uct_uccl_chunk_build_write_as(uct_uccl_chunk_t *chunk,
                              enum ibv_wr_opcode opcode, uct_uccl_kind_t kind,
                              uint32_t max_inline)
{
    struct ibv_send_wr *wr = &chunk->wr;
    uint32_t length        = chunk->length;

    wr->opcode              = opcode;
    wr->imm_data            = uct_uccl_imm_to_wire(
                                  uct_uccl_imm_pack(chunk->csn, kind,
                                                    chunk->last));
    /* post_chains signals the end of a chain */
    wr->send_flags          = (length <= max_inline) ? IBV_SEND_INLINE : 0;
    wr->wr.rdma.remote_addr = chunk->raddr;
    wr->wr.rdma.rkey        = chunk->rkey;
    chunk->sge[0].addr      = chunk->laddr;
    chunk->sge[0].length    = length;
    chunk->sge[0].lkey      = chunk->payload_lkey;
    wr->num_sge             = (length > 0);
}

static UCS_F_ALWAYS_INLINE void
uct_uccl_chunk_build_write(const uct_uccl_conn_t *conn,
                           uct_uccl_chunk_t *chunk)
{
    /* RC: the send completion says the data landed; an immediate would
     * only cost the target a receive WQE and a CQE */
    uct_uccl_chunk_build_write_as(chunk,
                                  (conn->rc &&
                                   (chunk->kind == UCT_UCCL_KIND_PUT)) ?
                                  IBV_WR_RDMA_WRITE :
                                  IBV_WR_RDMA_WRITE_WITH_IMM,
                                  (uct_uccl_kind_t)chunk->kind,
                                  conn->max_inline);
}

void uct_uccl_path_probe_send(uct_uccl_conn_t *conn,
                              const uct_uccl_chunk_t *chunk);

/* RC: the PSNs a WR takes on its QP, one a packet of the path MTU (a
 * READ's request those of its response), one when it carries nothing */
static UCS_F_ALWAYS_INLINE uint32_t
uct_uccl_wr_psn_span(const struct ibv_send_wr *wr, enum ibv_mtu mtu)
{
    uint64_t len = 0;
    int i;

    for (i = 0; i < wr->num_sge; ++i) {
        len += wr->sg_list[i].length;
    }
    return (len == 0) ? 1 :
           (uint32_t)ucs_div_round_up(len, uct_uccl_mtu_bytes(mtu));
}

/* Chunk's WR joins path's chain of this transmit step (the chain goes out
 * with uct_uccl_conn_post_chains) at `now` */
static UCS_F_ALWAYS_INLINE void uct_uccl_path_link(uct_uccl_conn_t *conn,
                                                   uct_uccl_qp_t *path,
                                                   uct_uccl_chunk_t *chunk,
                                                   uint64_t now)
{
    uct_uccl_iface_t *iface = conn->iface;

    chunk->wr.next = NULL;
    if (path->chain == NULL) {
        path->chain        = &chunk->wr;
        path->chain_next   = NULL;
        *conn->chains_tail = path;
        conn->chains_tail  = &path->chain_next;
    } else {
        path->chain_tail->next = &chunk->wr;
    }
    path->chain_tail = &chunk->wr;
    chunk->chain_gen = conn->chain_gen;
    if ((chunk->flags & UCT_UCCL_CHUNK_F_TRACKED) || conn->rc) {
        /* its ACK, loss or completion will be told to the path's health */
        uct_uccl_paths_sent(&conn->sel, path->index, now);
    }
    if (conn->rc) {
        path->psn_used    += uct_uccl_wr_psn_span(&chunk->wr, conn->path_mtu);
        chunk->rc_psn_end  = uct_uccl_seq_add(conn->psn, path->psn_used);
    }
    ++path->chain_len;
    path->sent[(path->sent_head + path->outstanding) &
               iface->config.tx_ring_mask] = chunk;
    ++path->outstanding;
    ++chunk->posted;
    ++iface->tx_outstanding;
    chunk->path = path->index;
    if (ucs_unlikely(conn->sel.probe_due != 0) &&
        (chunk->flags & UCT_UCCL_CHUNK_F_TRACKED) &&
        uct_uccl_chunk_is_bulk_write(chunk)) {
        uct_uccl_path_probe_send(conn, chunk);
    }
}

static UCS_F_ALWAYS_INLINE uct_uccl_chunk_t *
uct_uccl_chunk_from(ucs_mpool_t *mp)
{
    uct_uccl_chunk_t *chunk = ucs_mpool_get_inline(mp);

    if (ucs_unlikely(chunk == NULL)) {
        return NULL;
    }

    chunk->conn      = NULL;
    chunk->op        = NULL;
    chunk->flags     = 0;
    chunk->posted    = 0;
    chunk->last      = 0;
    chunk->length    = 0;
    chunk->hdr_len   = 0;
    chunk->extra_len = 0;
    return chunk;
}

/* a chunk with a seg_size segment (chunk->data) for copied payloads */
static UCS_F_ALWAYS_INLINE uct_uccl_chunk_t *
uct_uccl_chunk_get(uct_uccl_iface_t *iface)
{
    return uct_uccl_chunk_from(&iface->tx_mp);
}

/* a chunk whose payload stays in registered memory elsewhere (zero-copy,
 * GET replies) or that carries only its SEND header */
static UCS_F_ALWAYS_INLINE uct_uccl_chunk_t *
uct_uccl_chunk_get_hdr(uct_uccl_iface_t *iface)
{
    return uct_uccl_chunk_from(&iface->hdr_mp);
}

/* The chunk waits in conn's queue for the pump */
static UCS_F_ALWAYS_INLINE void
uct_uccl_tx_enqueue(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk)
{
    chunk->conn    = conn;
    chunk->barrier = conn->gets_issued;
    if (conn->fence) {
        chunk->flags |= UCT_UCCL_CHUNK_F_FENCE;
        conn->fence   = 0;
    }
    ucs_queue_push(&conn->tx_queue, &chunk->queue);
    ++conn->tx_queued;
    conn->tx_queued_bytes += uct_uccl_chunk_asks(chunk);
}

/* May an AM go out at once, past the queue and the pump? In UC mode, when
 * nothing waits before it (queue, chains, fence, GETs in flight), no pass is
 * running (post_now), its dest has room uncontended, and it goes inline
 * with an ACK behind it (the window, or a receiver's credit, is checked by
 * uct_uccl_tx_am_now). */
static UCS_F_ALWAYS_INLINE int
uct_uccl_tx_am_may_go(uct_uccl_conn_t *conn, const uct_uccl_chunk_t *chunk)
{
    const uct_uccl_iface_t *iface = conn->iface;

    return !conn->rc && (conn->state == UCT_UCCL_CONN_CONNECTED) &&
           (conn->tx_queued == 0) && (conn->chains == NULL) && !conn->fence &&
           ucs_list_is_empty(&conn->gets) && !iface->async.active &&
           (iface->sched_current == NULL) &&
           (conn->dest->contenders == 0) && (conn->dest->room > 0) &&
           (chunk->hdr_len + chunk->length + sizeof(uct_uccl_ack_t) <=
            conn->max_inline);
}

/* tx (uccl_tx.c) */
unsigned uct_uccl_tx_pump(uct_uccl_conn_t *conn, size_t quantum);
void uct_uccl_tx_post_now(uct_uccl_conn_t *conn);
ucs_status_t uct_uccl_tx_am_now(uct_uccl_conn_t *conn,
                                uct_uccl_chunk_t *chunk);
/* An empty WRITE_WITH_IMM to raddr/rkey, tracked like a chunk and chained
 * on path after what it carries: its arrival, ACKed at once, shows what
 * was lost before it there (SACK and path order) */
ucs_status_t uct_uccl_tx_mark(uct_uccl_conn_t *conn, uct_uccl_qp_t *path,
                              uint64_t raddr, uint32_t rkey, uint64_t now);
void uct_uccl_tx_completion(uct_uccl_iface_t *iface, struct ibv_wc *wc);
void uct_uccl_tx_handle_ack(uct_uccl_conn_t *conn, const uct_uccl_ack_t *ack,
                            uint64_t arrived_ns, uint64_t now);
void uct_uccl_tx_timers(uct_uccl_conn_t *conn, uint64_t now);
void uct_uccl_tx_purge(uct_uccl_conn_t *conn, ucs_status_t status);
int uct_uccl_tx_rc_draining(const uct_uccl_conn_t *conn);
/* RC: a WR of chunk failed; UCS_OK if it goes again on another path, or
 * waits for the peer to tell whether it landed */
ucs_status_t uct_uccl_tx_rc_failed(uct_uccl_conn_t *conn,
                                   uct_uccl_chunk_t *chunk,
                                   enum ibv_wc_status status);
void uct_uccl_tx_rc_resolve(uct_uccl_conn_t *conn, uct_uccl_qp_t *path);
void uct_uccl_tx_orphan(uct_uccl_conn_t *conn);
int uct_uccl_tx_is_flushed(uct_uccl_conn_t *conn);
void uct_uccl_tx_fence(uct_uccl_conn_t *conn);
void uct_uccl_tx_check_flush(uct_uccl_conn_t *conn);
void uct_uccl_conn_kick(uct_uccl_conn_t *conn);

/* posting (uccl_post.c) */
int uct_uccl_tx_may_leave(uct_uccl_conn_t *conn,
                          const uct_uccl_chunk_t *chunk);
uct_uccl_qp_t *uct_uccl_path_select(uct_uccl_conn_t *conn, size_t length,
                                    int avoid, uint64_t now);
uct_uccl_qp_t *uct_uccl_path_select_ordered(uct_uccl_conn_t *conn,
                                            uint64_t now);
void uct_uccl_path_health(uct_uccl_conn_t *conn, uint64_t now,
                          uint32_t inflight);
/* uct_uccl_path_link out of line, for the cold paths (resends, marks):
 * the pump alone inlines it */
void uct_uccl_path_chain(uct_uccl_conn_t *conn, uct_uccl_qp_t *path,
                         uct_uccl_chunk_t *chunk, uint64_t now);

/* Does the chunk's WR wait in a chain of conn (its last link came after
 * the last uct_uccl_conn_post_chains)? Then it must not be rebuilt. */
static UCS_F_ALWAYS_INLINE int
uct_uccl_chunk_is_chained(const uct_uccl_conn_t *conn,
                          const uct_uccl_chunk_t *chunk)
{
    return (conn->chains != NULL) && (chunk->chain_gen == conn->chain_gen);
}

void uct_uccl_conn_post_chains(uct_uccl_conn_t *conn);
void uct_uccl_chunk_build_wr(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk);
void uct_uccl_chunk_build_retx(uct_uccl_chunk_t *chunk, int obsolete);
int uct_uccl_put_is_obsolete(uct_uccl_conn_t *conn,
                             const uct_uccl_chunk_t *chunk);

/* The path small messages keep (`st`): the scoreboard's choice, taken
 * again once nothing is outstanding on it and it was theirs for
 * PATH_STICKY_NS, or at once when it is parked */
static inline uct_uccl_qp_t *
uct_uccl_path_sticky(uct_uccl_conn_t *conn, uct_uccl_sticky_t *st,
                     size_t length, uint64_t now)
{
    uct_uccl_qp_t *path = &conn->paths[st->path];

    if (((path->outstanding == path->nosig) && (now >= st->until)) ||
        uct_uccl_paths_parked(&conn->sel, path->index)) {
        st->path  = uct_uccl_paths_select(&conn->sel, length, now);
        st->until = now + UCT_UCCL_PATH_STICKY_NS;
        path      = &conn->paths[st->path];
    }
    return path;
}

/* The path for the next new chunk: the current burst's while it lasts
 * and has room, else uct_uccl_path_select's choice */
static UCS_F_ALWAYS_INLINE uct_uccl_qp_t *
uct_uccl_path_next(uct_uccl_conn_t *conn, size_t length, uint64_t now)
{
    uct_uccl_qp_t *path = &conn->paths[conn->sel.last];

    if ((conn->burst_left > 0) && uct_uccl_path_has_room(conn, path)) {
        --conn->burst_left;
        return path;
    }
    return uct_uccl_path_select(conn, length, -1, now);
}

/* The WR of a chunk about to be chained */
static UCS_F_ALWAYS_INLINE void uct_uccl_chunk_build(uct_uccl_conn_t *conn,
                                                     uct_uccl_chunk_t *chunk)
{
    if (ucs_likely(uct_uccl_chunk_is_write(chunk))) {
        uct_uccl_chunk_build_write(conn, chunk);
    } else {
        uct_uccl_chunk_build_wr(conn, chunk);
    }
}

/* the UC GET protocol (uccl_get.c) */
int uct_uccl_get_admit(uct_uccl_conn_t *conn, const uct_uccl_get_req_t *req,
                       int first_missing);
ucs_status_t uct_uccl_get_serve(uct_uccl_conn_t *conn,
                                const uct_uccl_get_req_t *req);
ucs_status_t uct_uccl_get_done_send(uct_uccl_conn_t *conn, uint64_t op_id,
                                    ucs_status_t status, uint64_t length);
void uct_uccl_get_data_hdr(uct_uccl_chunk_t *chunk, uint64_t op_id,
                           ucs_status_t status, uint32_t length);
/* A GET_DATA reply goes again. Its requester completes on the first copy
 * that arrives, and the source's owner may free it then: the resend
 * carries a copy taken now into the reply's own segment, never the source
 * a later WR would read, or an error where the source is no longer
 * registered or readable (a requester that completed drops it) */
void uct_uccl_get_data_resend(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk);
void uct_uccl_get_handle_done(uct_uccl_conn_t *conn, uint64_t op_id,
                              ucs_status_t status);
void uct_uccl_get_handle_data(uct_uccl_conn_t *conn,
                              uct_uccl_rx_desc_t *desc);


/* rx (uccl_rx.c) */
void uct_uccl_rx_completions(uct_uccl_iface_t *iface,
                             const struct ibv_wc *wcs, const uint64_t *ts,
                             int n);
void uct_uccl_rx_refill(uct_uccl_iface_t *iface);
void uct_uccl_rx_conn_cleanup(uct_uccl_conn_t *conn);
void uct_uccl_rx_am_handle(uct_uccl_iface_t *iface,
                           uct_uccl_rx_desc_t *desc);
unsigned uct_uccl_rx_acks_in(uct_uccl_iface_t *iface);
void uct_uccl_rx_ack_in_flush(uct_uccl_conn_t *conn);

/* the ACKs owed, on their way out (uccl_ack.c) */
unsigned uct_uccl_rx_flush_acks(uct_uccl_iface_t *iface, uint64_t now);

/* Does a pass have ACKs or grants to send? Not when the only ACKs owed
 * were held in this pass for a reply to carry (uct_uccl_iface_ack_add).
 * The credit pacer, when on and a sender waits for it, decides that
 * itself (its tick grants nothing while none waits). */
static UCS_F_ALWAYS_INLINE int
uct_uccl_rx_acks_owed(uct_uccl_iface_t *iface)
{
    return (!ucs_list_is_empty(&iface->ack_list) &&
            ((int32_t)(iface->pass - iface->ack_pass) >= 0)) ||
           (uct_uccl_credit_next_ns(iface) != 0) ||
           !ucs_list_is_empty(&iface->credit.owed);
}

/* The grant an ACK of the peer carries: most repeat the one the cc knows
 * (uct_uccl_cc_credit_known), and then only the peer's sign of life is
 * new (UC: the bytes in flight never change there without the cc's
 * window following) */
static UCS_F_ALWAYS_INLINE void
uct_uccl_credit_ack_grant(uct_uccl_conn_t *conn, uint32_t grant, int idle,
                          uint64_t now)
{
    if (uct_uccl_cc_credit_known(&conn->cc, grant, idle)) {
        conn->credit.peer_ns = now;
        return;
    }
    uct_uccl_credit_tx_grant(conn, grant, idle, now);
}

/* A held ACK is looked at from the next pass on (unless another ACK is
 * owed sooner); any other from this one */
static UCS_F_ALWAYS_INLINE void
uct_uccl_iface_ack_add(uct_uccl_iface_t *iface, uct_uccl_conn_t *conn)
{
    if (!conn->ack_pending) {
        if (!conn->ack_hold) {
            iface->ack_pass = iface->pass;
        } else if (ucs_list_is_empty(&iface->ack_list)) {
            iface->ack_pass = iface->pass + 1;
        }
        conn->ack_hold_pass = iface->pass;
        conn->ack_pending   = 1;
        ucs_list_add_tail(&iface->ack_list, &conn->ack_link);
        uct_uccl_conn_timer_wake(conn); /* the peer is alive: idle_check */
    }
}

/* An ACK owed is due in this pass (uct_uccl_rx_acks_owed) */
static UCS_F_ALWAYS_INLINE void uct_uccl_rx_ack_due_now(uct_uccl_conn_t *conn)
{
    conn->ack_due         = 0;
    conn->iface->ack_pass = conn->iface->pass;
}

/* Has the SRQ room for a batch of half an SRQ_BATCH or more, the least
 * uct_uccl_rx_refill posts? */
static UCS_F_ALWAYS_INLINE int
uct_uccl_rx_srq_wants(const uct_uccl_iface_t *iface)
{
    return iface->config.srq_size - iface->srq_posted >=
           UCT_UCCL_SRQ_BATCH / 2;
}

/* Does the SRQ want buffers back (or has it run dry, which is counted)? */
static UCS_F_ALWAYS_INLINE int
uct_uccl_rx_refill_due(const uct_uccl_iface_t *iface)
{
    return uct_uccl_rx_srq_wants(iface) || (iface->srq_posted == 0);
}
int uct_uccl_rx_ack_piggyback(uct_uccl_conn_t *conn, void *dst, uint64_t now);

#endif

/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Transmit side of a conn: chunks wait in the conn's queue until the window
 * and a path's send queue have room, get a CSN and a path, and go out as one
 * chain per path (one ibv_post_send per chain). In UC mode the tracker keeps
 * them until ACKed and resends SACK holes and timed-out chunks; in RC mode a
 * successful send completion is the acknowledgement.
 */
#include "uccl_iface.h"

#include <ucs/debug/log.h>
#include <ucs/datastruct/mpool.inl>
#include <string.h>


/* chunks resent when the retransmission timer fires */
#define UCT_UCCL_RTO_RESEND_MAX  4
#define UCT_UCCL_TAIL_PROBES_MAX 4  /* per stall; then only the RTO */
#define UCT_UCCL_LOSSY_RTOS      16 /* a resend: every chain marked for as
                                       many base RTOs */


static inline int uct_uccl_op_is_get(const uct_uccl_op_t *op)
{
    return (op->type == UCT_UCCL_OP_GET_BCOPY) ||
           (op->type == UCT_UCCL_OP_GET_ZCOPY);
}

/* an RC chunk that writes the peer's memory (a PUT; not a READ) */
static inline int uct_uccl_chunk_is_rc_write(const uct_uccl_chunk_t *chunk)
{
    return (chunk->kind == UCT_UCCL_KIND_PUT) &&
           !(chunk->flags & UCT_UCCL_CHUNK_F_READ);
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
uct_uccl_chunk_t *uct_uccl_chunk_get(uct_uccl_iface_t *iface)
{
    return uct_uccl_chunk_from(&iface->tx_mp);
}

/* a chunk whose payload stays in registered memory elsewhere (zero-copy,
 * GET replies) or that carries only its SEND header */
uct_uccl_chunk_t *uct_uccl_chunk_get_hdr(uct_uccl_iface_t *iface)
{
    return uct_uccl_chunk_from(&iface->hdr_mp);
}

/* The reliability layer is done with it: free once no WR carries it */
static void uct_uccl_chunk_release(uct_uccl_chunk_t *chunk)
{
    if ((chunk->flags & UCT_UCCL_CHUNK_F_SERVED) && (chunk->conn != NULL)) {
        --chunk->conn->serve_chunks;
    }
    chunk->flags |= UCT_UCCL_CHUNK_F_ACKED;
    chunk->flags &= ~UCT_UCCL_CHUNK_F_SERVED;
    if (chunk->posted == 0) {
        uct_uccl_iface_chunk_put(chunk);
    } else if (chunk->conn != NULL) {
        chunk->flags |= UCT_UCCL_CHUNK_F_ZOMBIE;
        ucs_list_add_tail(&chunk->conn->zombies, &chunk->zlink);
    }
}

/* A WR carrying the chunk completed. An acknowledged chunk whose operation
 * waited for this WR (a resend still reading the user's buffer) completes
 * its part now. */
static void uct_uccl_chunk_wr_done(uct_uccl_chunk_t *chunk)
{
    uct_uccl_conn_t *conn = chunk->conn;
    uct_uccl_op_t *op     = chunk->op;

    ucs_assert(chunk->posted > 0);
    if ((--chunk->posted > 0) || !(chunk->flags & UCT_UCCL_CHUNK_F_ACKED)) {
        return;
    }
    if ((chunk->flags & UCT_UCCL_CHUNK_F_ZOMBIE) && (conn != NULL)) {
        ucs_list_del(&chunk->zlink);
    }
    uct_uccl_iface_chunk_put(chunk);
    if (op != NULL) {
        ucs_assert(conn != NULL); /* a purge detaches ops from zombies */
        uct_uccl_op_part_done(conn, op, UCS_OK);
        uct_uccl_tx_check_flush(conn);
    }
}

/* The conn goes away: chunks still on the wire complete without it */
void uct_uccl_tx_orphan(uct_uccl_conn_t *conn)
{
    uct_uccl_chunk_t *chunk;

    while (!ucs_list_is_empty(&conn->zombies)) {
        chunk       = ucs_list_extract_head(&conn->zombies, uct_uccl_chunk_t,
                                            zlink);
        chunk->conn = NULL;
    }
}

uct_uccl_op_t *uct_uccl_op_get(uct_uccl_conn_t *conn, uct_uccl_op_type_t type,
                               uct_completion_t *comp)
{
    uct_uccl_op_t *op = ucs_mpool_get_inline(&conn->iface->op_mp);

    if (op == NULL) {
        return NULL;
    }

    op->owner      = conn;
    op->type       = type;
    op->pending    = 0;
    op->status     = UCS_OK;
    op->comp       = comp;
    op->buf        = NULL;
    op->data_desc  = NULL;
    op->unpack_cb  = NULL;
    op->length     = 0;
    op->id         = conn->next_op_id++;
    ucs_list_add_tail(&conn->ops, &op->list);
    if (uct_uccl_op_is_get(op)) {
        op->gseq = conn->gets_issued++;
        ucs_list_add_tail(&conn->gets, &op->get_link);
    }
    return op;
}

/* What UCX sees of a completed operation: GET bcopy data unpacked, the
 * completion called; then the op goes */
void uct_uccl_op_report(uct_uccl_op_t *op)
{
    const uct_uccl_get_data_t *data;

    if ((op->type == UCT_UCCL_OP_GET_BCOPY) && (op->status == UCS_OK)) {
        if (op->data_desc != NULL) {
            data = uct_uccl_rx_data(op->data_desc);
            op->unpack_cb(op->unpack_arg, data + 1, op->length);
        } else {
            op->unpack_cb(op->unpack_arg, op->buf->data, op->length);
        }
    }
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, op->status);
    }
    if (op->buf != NULL) {
        uct_uccl_iface_chunk_put(op->buf);
    }
    if (op->data_desc != NULL) {
        ucs_mpool_put_inline(op->data_desc);
    }
    ucs_mpool_put_inline(op);
}

static void uct_uccl_op_complete(uct_uccl_conn_t *conn, uct_uccl_op_t *op)
{
    ucs_list_del(&op->list);
    if (uct_uccl_op_is_get(op)) {
        /* what was issued after it may go now */
        ucs_list_del(&op->get_link);
        if (conn->tx_queued > 0) {
            uct_uccl_iface_sched_add(conn->iface, conn);
        }
    }
    if ((op->type == UCT_UCCL_OP_GET_SERVE) &&
        (conn->state == UCT_UCCL_CONN_CONNECTED) &&
        (uct_uccl_get_done_send(conn, op->id, op->status,
                                   (op->status == UCS_OK) ? op->length : 0) !=
         UCS_OK)) {
        ucs_error("uccl: conn %u: no memory to complete the peer's GET",
                  conn->id);
    }
    /* the user hears of it when the engine is done (uccl_async.c) */
    uct_uccl_async_defer_op(conn->iface, op);
}

void uct_uccl_op_part_done(uct_uccl_conn_t *conn, uct_uccl_op_t *op,
                           ucs_status_t status)
{
    if ((status != UCS_OK) && (op->status == UCS_OK)) {
        op->status = status;
    }
    ucs_assert(op->pending > 0);
    if (--op->pending == 0) {
        uct_uccl_op_complete(conn, op);
    }
}

static void uct_uccl_chunk_done(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk,
                                ucs_status_t status)
{
    uct_uccl_op_t *op = chunk->op;

    if ((op != NULL) && (status == UCS_OK) && (chunk->posted > 0)) {
        /* acknowledged, but a resend of it is still queued at the NIC and
         * may read the user's buffer: the user gets it back (and may free
         * or deregister it) only when that WR completes */
        uct_uccl_chunk_release(chunk);
        return;
    }
    chunk->op = NULL;
    uct_uccl_chunk_release(chunk);
    if (op != NULL) {
        uct_uccl_op_part_done(conn, op, status);
    }
}

void uct_uccl_tx_enqueue(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk)
{
    chunk->conn    = conn;
    chunk->barrier = conn->gets_issued;
    if (conn->fence) {
        chunk->flags |= UCT_UCCL_CHUNK_F_FENCE;
        conn->fence   = 0;
    }
    ucs_queue_push(&conn->tx_queue, &chunk->queue);
    ++conn->tx_queued;
    if (conn->state == UCT_UCCL_CONN_CONNECTED) {
        uct_uccl_iface_sched_add(conn->iface, conn);
    }
}

/* The next operation waits until everything issued before it completed */
void uct_uccl_tx_fence(uct_uccl_conn_t *conn)
{
    if ((conn->tx_queued > 0) || !uct_uccl_tx_is_flushed(conn)) {
        conn->fence = 1;
    }
}

static inline uint32_t uct_uccl_conn_inflight(uct_uccl_conn_t *conn)
{
    return conn->rc ? conn->rc_outstanding :
                      uct_uccl_tracker_outstanding(&conn->tracker);
}

int uct_uccl_tx_is_flushed(uct_uccl_conn_t *conn)
{
    if (conn->state == UCT_UCCL_CONN_FAILED) {
        return 1;
    }
    return (conn->tx_queued == 0) && (uct_uccl_conn_inflight(conn) == 0) &&
           ucs_list_is_empty(&conn->ops);
}

void uct_uccl_tx_check_flush(uct_uccl_conn_t *conn)
{
    uct_uccl_op_t *op;

    if (ucs_list_is_empty(&conn->flushes) || !uct_uccl_tx_is_flushed(conn)) {
        return;
    }

    while (!ucs_list_is_empty(&conn->flushes)) {
        op = ucs_list_extract_head(&conn->flushes, uct_uccl_op_t, list);
        ucs_list_add_tail(&conn->ops, &op->list); /* op_complete unlinks */
        op->status = (conn->state == UCT_UCCL_CONN_FAILED) ?
                     conn->fail_status : UCS_OK;
        uct_uccl_op_complete(conn, op);
    }
}


/* ------------------------------------------------------------------------ */
/* Order of operations at the target                                        */
/* ------------------------------------------------------------------------ */

static inline int uct_uccl_chunk_is_read(const uct_uccl_chunk_t *chunk)
{
    return (chunk->kind == UCT_UCCL_KIND_GET_REQ) ||
           (chunk->flags & UCT_UCCL_CHUNK_F_READ);
}

/* May the chunk at the head of the queue leave? The target sees the
 * operations of a conn in the order they were issued (docs/STATUS.md):
 *  - nothing issued after a GET goes before that GET completed, so no
 *    later write reaches the target before the GET read it, and no later
 *    AM's reply overtakes the GET's data (a GET after a GET does not
 *    wait: reads do not conflict);
 *  - a fenced chunk waits for everything before it;
 *  - RC: an AM or READ waits for the WRITEs before it (they take other
 *    QPs); in UC the receiver holds AMs and GET requests for them.
 * Chunks behind the head wait with it: the queue keeps issue order. */
static int uct_uccl_tx_may_leave(uct_uccl_conn_t *conn,
                                 const uct_uccl_chunk_t *chunk)
{
    int fenced = !!(chunk->flags & UCT_UCCL_CHUNK_F_FENCE);
    const uct_uccl_op_t *oldest;

    if (!ucs_list_is_empty(&conn->gets) &&
        (fenced || !uct_uccl_chunk_is_read(chunk))) {
        oldest = ucs_list_head(&conn->gets, uct_uccl_op_t, get_link);
        if ((int32_t)(oldest->gseq - chunk->barrier) < 0) {
            return 0;
        }
    }
    if (fenced && (uct_uccl_conn_inflight(conn) > 0)) {
        return 0;
    }
    return !conn->rc || (conn->rc_writes == 0) ||
           ((chunk->kind != UCT_UCCL_KIND_AM) &&
            !(chunk->flags & UCT_UCCL_CHUNK_F_READ));
}


/* ------------------------------------------------------------------------ */
/* Path choice and chained posting                                          */
/* ------------------------------------------------------------------------ */

static inline int uct_uccl_path_has_room(uct_uccl_conn_t *conn,
                                         uct_uccl_qp_t *path)
{
    return path->outstanding < conn->iface->config.tx_queue_len;
}

/* The path for the next chunk: a burst of PATH_BURST chunks stays on one
 * path (one chain, one doorbell), then the scoreboard picks the better of
 * two random paths (small messages stay on the last one). A path whose send
 * queue is full is skipped; NULL when every path is full. `avoid` is the
 * path a resent chunk was lost on. */
static uct_uccl_qp_t *uct_uccl_path_select(uct_uccl_conn_t *conn,
                                           size_t length, int avoid,
                                           uint64_t now)
{
    uct_uccl_qp_t *path = &conn->paths[conn->sel.last];
    unsigned i, n = conn->num_paths;

    if ((avoid < 0) && (conn->burst_left > 0) &&
        uct_uccl_path_has_room(conn, path)) {
        --conn->burst_left;
        return path;
    }

    if (avoid >= 0) {
        /* a resend joins a chain already built (another resend's): order
         * does not matter for it, and it saves a doorbell */
        for (path = conn->chains; path != NULL; path = path->chain_next) {
            if ((path->index != avoid) && uct_uccl_path_has_room(conn, path)) {
                return path;
            }
        }
    } else if (length <= UCT_UCCL_SMALL_MSG) {
        /* small messages keep their order on one path: they move to another
         * only once everything posted on the current one completed (paths
         * reorder), and wait when its send queue is full */
        if (path->outstanding == 0) {
            path = &conn->paths[uct_uccl_paths_select(&conn->sel, length,
                                                      now)];
        }
        return uct_uccl_path_has_room(conn, path) ? path : NULL;
    }

    /* a path that already has a chain in this round is not taken again:
     * its chain goes out first, and the chunks added to it now would
     * overtake those on the paths chosen in between */
    for (i = 0; i < 4; ++i) {
        path = &conn->paths[uct_uccl_paths_select(&conn->sel, length, now)];
        if ((path->index != avoid) && (path->chain == NULL) &&
            uct_uccl_path_has_room(conn, path)) {
            goto found;
        }
    }

    for (i = 0; i < n; ++i) {
        path = &conn->paths[(conn->sel.last + 1 + i) % n];
        if (((path->index != avoid) || (n == 1)) &&
            uct_uccl_path_has_room(conn, path)) {
            conn->sel.last = path->index;
            goto found;
        }
    }
    return NULL;

found:
    conn->burst_left = conn->iface->config.path_burst - 1;
    return path;
}

/* RC: AMs keep one path while any of them is outstanding there, so the
 * peer receives them in order; they move once everything on it completed
 * (an RC completion means delivered) */
static uct_uccl_qp_t *uct_uccl_path_select_ordered(uct_uccl_conn_t *conn,
                                                   uint64_t now)
{
    uct_uccl_qp_t *path = &conn->paths[conn->ord_path];

    if (path->outstanding == 0) {
        conn->ord_path = uct_uccl_paths_select(&conn->sel, 0, now);
        path           = &conn->paths[conn->ord_path];
    }
    return uct_uccl_path_has_room(conn, path) ? path : NULL;
}

static void uct_uccl_path_chain(uct_uccl_conn_t *conn, uct_uccl_qp_t *path,
                                uct_uccl_chunk_t *chunk)
{
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
    chunk->flags    |= UCT_UCCL_CHUNK_F_CHAINED;
    ++path->chain_len;
    path->sent[(path->sent_head + path->outstanding) &
               conn->iface->config.tx_ring_mask] = chunk;
    ++path->outstanding;
    ++chunk->posted;
    ++conn->iface->tx_outstanding;
    chunk->path = path->index;
}

/* One ibv_post_send per path that has a chain, in the order the chains
 * began, so chunks leave in CSN order as far as the paths allow. Only the
 * last WR of a chain asks for a completion: the QP completes in order, so
 * its CQE tells that every WR before it is done too (half the CQEs the NIC
 * writes and the engine polls). */
static void uct_uccl_conn_post_chains(uct_uccl_conn_t *conn)
{
    uct_uccl_iface_t *iface = conn->iface;
    struct ibv_send_wr *bad_wr, *wr;
    uct_uccl_chunk_t *chunk;
    uct_uccl_qp_t *path, *next;
    int ret, failed = 0;

    next              = conn->chains;
    conn->chains      = NULL;
    conn->chains_tail = &conn->chains;
    while ((path = next) != NULL) {
        next = path->chain_next;

        ++iface->stats.doorbells;
        iface->stats.wrs += path->chain_len;
        for (wr = path->chain; wr != NULL; wr = wr->next) {
            ((uct_uccl_chunk_t*)wr->wr_id)->flags &= ~UCT_UCCL_CHUNK_F_CHAINED;
        }
        path->chain_tail->send_flags = IBV_SEND_SIGNALED;
        ret = ibv_post_send(path->qp, path->chain, &bad_wr);
        if (ucs_unlikely(ret != 0)) {
            /* cannot happen while we respect max_send_wr; undo the
             * accounting and let the reliability layer (or the error
             * path) deal with what was not posted. A posted part without
             * its signaled end never completes: the conn cannot go on. */
            ucs_error("uccl: ibv_post_send(qp 0x%x, %u WRs) failed: %s",
                      path->qp->qp_num, path->chain_len, strerror(ret));
            failed |= conn->rc || (bad_wr != path->chain);
            for (wr = bad_wr; wr != NULL; wr = wr->next) {
                chunk = (uct_uccl_chunk_t*)wr->wr_id;
                --chunk->posted;
                --path->outstanding;
                --iface->tx_outstanding;
            }
        }
        path->chain     = NULL;
        path->chain_len = 0;
    }
    if (failed) {
        uct_uccl_conn_fail(conn, UCS_ERR_IO_ERROR);
    }
}

static void uct_uccl_chunk_build_wr(uct_uccl_conn_t *conn,
                                    uct_uccl_chunk_t *chunk)
{
    struct ibv_send_wr *wr = &chunk->wr;
    unsigned n             = 0;

    wr->send_flags = 0;     /* post_chains signals the end of a chain */
    if (chunk->flags & UCT_UCCL_CHUNK_F_READ) {
        wr->opcode              = IBV_WR_RDMA_READ;
        wr->wr.rdma.remote_addr = chunk->raddr;
        wr->wr.rdma.rkey        = chunk->rkey;
        chunk->sge[0].addr      = chunk->laddr;
        chunk->sge[0].length    = chunk->length;
        chunk->sge[0].lkey      = chunk->payload_lkey;
        wr->num_sge             = 1;
        return;
    }

    wr->imm_data = uct_uccl_imm_to_wire(uct_uccl_imm_pack(chunk->csn,
                                                          chunk->kind,
                                                          chunk->last));
    if ((chunk->kind == UCT_UCCL_KIND_PUT) ||
        (chunk->kind == UCT_UCCL_KIND_GET_RESP)) {
        /* RC: the send completion says the data landed; an immediate
         * would only cost the target a receive WQE and a CQE */
        wr->opcode              = (conn->rc &&
                                   (chunk->kind == UCT_UCCL_KIND_PUT)) ?
                                  IBV_WR_RDMA_WRITE :
                                  IBV_WR_RDMA_WRITE_WITH_IMM;
        wr->wr.rdma.remote_addr = chunk->raddr;
        wr->wr.rdma.rkey        = chunk->rkey;
    } else {
        wr->opcode              = IBV_WR_SEND_WITH_IMM;
        chunk->sge[n].addr      = (uintptr_t)&chunk->hdr;
        chunk->sge[n].length    = chunk->hdr_len;
        chunk->sge[n].lkey      = chunk->lkey;
        ++n;
        if (chunk->extra_len > 0) {
            chunk->sge[n].addr   = (uintptr_t)chunk->data;
            chunk->sge[n].length = chunk->extra_len;
            chunk->sge[n].lkey   = chunk->lkey;
            ++n;
        }
    }

    if (chunk->length > 0) {
        chunk->sge[n].addr   = chunk->laddr;
        chunk->sge[n].length = chunk->length;
        chunk->sge[n].lkey   = chunk->payload_lkey;
        ++n;
    }
    wr->num_sge = n;
}

static inline uct_uccl_put_guard_t *
uct_uccl_put_guard(uct_uccl_conn_t *conn, const uct_uccl_chunk_t *chunk)
{
    uint64_t h = (chunk->raddr ^ ((uint64_t)chunk->rkey << 32)) *
                 0x9e3779b97f4a7c15ull;

    return &conn->put_guard[(h >> 58) % UCT_UCCL_PUT_GUARD];
}

/* A later PUT chunk to the same target, at least as long, was sent after
 * this one: its data wins, a resend of this one must not overwrite it */
static int uct_uccl_put_is_obsolete(uct_uccl_conn_t *conn,
                                    const uct_uccl_chunk_t *chunk)
{
    const uct_uccl_put_guard_t *g = uct_uccl_put_guard(conn, chunk);

    return (chunk->kind == UCT_UCCL_KIND_PUT) && g->valid &&
           (g->raddr == chunk->raddr) && (g->rkey == chunk->rkey) &&
           uct_uccl_seq_gt(g->csn, chunk->csn) && (g->length >= chunk->length);
}

/* A lost WRITE chunk whose earlier transmission may still be on its way
 * goes again as a SEND into a bounce buffer: header with the target, then
 * the original payload (still in the user's registered buffer); the
 * receiver copies it only if it is still missing, so a spurious resend
 * never writes memory the user may own again. An obsolete chunk goes
 * without payload: it only marks its CSN as arrived. */
static void uct_uccl_chunk_build_retx(uct_uccl_chunk_t *chunk, int obsolete)
{
    struct ibv_send_wr *wr    = &chunk->wr;
    uct_uccl_retx_hdr_t *retx = &chunk->hdr.retx;

    memset(retx, 0, sizeof(*retx));
    retx->type        = UCT_UCCL_KIND_RETX;
    retx->imm         = uct_uccl_imm_pack(chunk->csn, chunk->kind,
                                          chunk->last);
    retx->remote_addr = chunk->raddr;
    retx->rkey        = chunk->rkey;
    retx->length      = obsolete ? 0 : chunk->length;

    wr->opcode         = IBV_WR_SEND_WITH_IMM;
    wr->send_flags     = 0;
    wr->imm_data       = uct_uccl_imm_to_wire(
                            uct_uccl_imm_pack(chunk->csn, UCT_UCCL_KIND_RETX,
                                              chunk->last));
    chunk->sge[0].addr   = (uintptr_t)retx;
    chunk->sge[0].length = sizeof(*retx);
    chunk->sge[0].lkey   = chunk->lkey;
    wr->num_sge          = 1;
    if (retx->length > 0) {
        chunk->sge[1].addr   = chunk->laddr;
        chunk->sge[1].length = chunk->length;
        chunk->sge[1].lkey   = chunk->payload_lkey;
        wr->num_sge          = 2;
    }
}

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
    (void)ucs_wtimer_add(wheel, &conn->pace_timer, ucs_max(delta, wheel->res));
    ++conn->stats.cc_paced;
}

/* The last chunk of a chain has nothing after it on its path to show that
 * it was lost: with nothing more to send, its loss would wait for the tail
 * probe (twice an RTT that the chain's own transfer inflates) and, never
 * proven, go again through a bounce buffer. So a bulk chain that empties
 * the queue ends with an empty WRITE_WITH_IMM, tracked like any chunk:
 * its arrival (or its loss) tells within one RTT. While the conn is losing
 * chunks every bulk chain gets one: a tail whose path carries nothing new
 * soon is otherwise resent by age, into a bounce buffer (12% of resends
 * at 1% loss; tag_bw +4%, one WR and one CQE per chain). */
static void uct_uccl_tx_mark_tails(uct_uccl_conn_t *conn, uint64_t now)
{
    uct_uccl_chunk_t *tail, *mark;
    uct_uccl_qp_t *path;

    for (path = conn->chains; path != NULL; path = path->chain_next) {
        tail = (uct_uccl_chunk_t*)path->chain_tail->wr_id;
        if ((tail->length <= UCT_UCCL_SMALL_MSG) ||
            ((tail->kind != UCT_UCCL_KIND_PUT) &&
             (tail->kind != UCT_UCCL_KIND_GET_RESP)) ||
            !uct_uccl_path_has_room(conn, path) ||
            !uct_uccl_conn_window_open(conn, 0, now)) {
            continue;
        }
        mark = uct_uccl_chunk_get_hdr(conn->iface);
        if (mark == NULL) {
            return;
        }
        /* the tail's target: no byte is written, and no PUT guard kept */
        mark->conn   = conn;
        mark->kind   = UCT_UCCL_KIND_PUT;
        mark->last   = 1;    /* the receiver ACKs at once */
        mark->raddr  = tail->raddr;
        mark->rkey   = tail->rkey;
        mark->csn    = uct_uccl_tracker_add(&conn->tracker, 0, path->index,
                                            now, mark);
        mark->flags |= UCT_UCCL_CHUNK_F_TRACKED;
        uct_uccl_chunk_build_wr(conn, mark);
        uct_uccl_path_chain(conn, path, mark);
        ++conn->stats.tail_marks;
    }
}

unsigned uct_uccl_tx_pump(uct_uccl_conn_t *conn, size_t quantum)
{
    size_t bytes   = 0;
    unsigned count = 0;
    uct_uccl_put_guard_t *guard;
    uct_uccl_chunk_t *chunk;
    uct_uccl_qp_t *path;
    uint64_t now;

    if (conn->state != UCT_UCCL_CONN_CONNECTED) {
        return 0;
    }

    now = uct_uccl_now_ns();
    /* a burst is one chain and starts here; a bulk burst joins the chain
     * of resends the ACKs just asked for: one doorbell, and where the NIC
     * is the CPU (softverbs) one copy */
    conn->burst_left = 0;
    if ((conn->chains != NULL) && !ucs_queue_is_empty(&conn->tx_queue) &&
        uct_uccl_path_has_room(conn, conn->chains) &&
        (ucs_queue_head_elem_non_empty(&conn->tx_queue, uct_uccl_chunk_t,
                                       queue)->length > UCT_UCCL_SMALL_MSG)) {
        conn->sel.last   = conn->chains->index;
        conn->burst_left = conn->iface->config.path_burst;
    }
    while (!ucs_queue_is_empty(&conn->tx_queue) && (bytes < quantum)) {
        chunk = ucs_queue_head_elem_non_empty(&conn->tx_queue,
                                              uct_uccl_chunk_t, queue);
        if (!uct_uccl_conn_window_open(conn, chunk->length, now)) {
            if (now < conn->cc.next_send_ns) {
                uct_uccl_tx_pace_wait(conn, now);
            }
            break;
        }
        if (ucs_unlikely((chunk->flags & UCT_UCCL_CHUNK_F_FENCE) ||
                         conn->rc || !ucs_list_is_empty(&conn->gets)) &&
            !uct_uccl_tx_may_leave(conn, chunk)) {
            break;
        }

        path = (conn->rc && (chunk->kind == UCT_UCCL_KIND_AM)) ?
               uct_uccl_path_select_ordered(conn, now) :
               uct_uccl_path_select(conn, chunk->length, -1, now);
        if (path == NULL) {
            ++conn->stats.sq_full;
            break;
        }

        ucs_queue_pull_non_empty(&conn->tx_queue);
        --conn->tx_queued;

        if (conn->rc) {
            chunk->sent_ns = now;
            chunk->csn = conn->rc_csn;
            conn->rc_csn = uct_uccl_seq_add(conn->rc_csn, 1);
            ++conn->rc_outstanding;
            conn->rc_writes += uct_uccl_chunk_is_rc_write(chunk);
            ucs_list_add_tail(&conn->rc_inflight, &chunk->zlink);
        } else {
            if (uct_uccl_tracker_outstanding(&conn->tracker) == 0) {
                /* the peer owed nothing: its silence counts from now (a
                 * paced sender is idle between chunks) */
                conn->last_progress = now;
            }
            chunk->csn    = uct_uccl_tracker_add(&conn->tracker, chunk->length,
                                                 path->index, now, chunk);
            chunk->flags |= UCT_UCCL_CHUNK_F_TRACKED;
            uct_uccl_rto_on_send(&conn->rto, now);
            if (chunk->kind == UCT_UCCL_KIND_PUT) {
                guard         = uct_uccl_put_guard(conn, chunk);
                guard->raddr  = chunk->raddr;
                guard->rkey   = chunk->rkey;
                guard->csn    = chunk->csn;
                guard->length = chunk->length;
                guard->valid  = 1;
            }
        }

        uct_uccl_chunk_build_wr(conn, chunk);
        uct_uccl_path_chain(conn, path, chunk);
        uct_uccl_cc_on_send(&conn->cc, chunk->length, now);
        ++conn->stats.chunks_tx;
        conn->stats.bytes_tx += chunk->length;
        bytes                += chunk->length + 64;
        ++count;
    }

    if (!conn->rc && (conn->chains != NULL) &&
        (ucs_queue_is_empty(&conn->tx_queue) || (now < conn->lossy_until))) {
        uct_uccl_tx_mark_tails(conn, now);
    }
    uct_uccl_conn_post_chains(conn);
    return count;
}


/* An operation posted outside progress goes on the wire at once: UCX may
 * consider it sent (am_short, put_short) and not progress for a long time,
 * e.g. a rank that leaves a barrier and sleeps. Inside progress (callbacks,
 * purges) the scheduler posts it before progress returns. */
void uct_uccl_tx_post_now(uct_uccl_conn_t *conn)
{
    if (!conn->iface->busy && (conn->tx_queued > 0)) {
        (void)uct_uccl_tx_pump(conn, conn->iface->config.drr_quantum);
    }
}


/* ------------------------------------------------------------------------ */
/* Completions and acknowledgements                                         */
/* ------------------------------------------------------------------------ */

void uct_uccl_conn_kick(uct_uccl_conn_t *conn)
{
    if ((conn->tx_queued > 0) || !ucs_queue_is_empty(&conn->pending_q)) {
        uct_uccl_iface_sched_add(conn->iface, conn);
    }
    uct_uccl_tx_check_flush(conn);
}

/* One WR carrying `chunk` is done, with `status` */
static void uct_uccl_tx_wr_complete(uct_uccl_iface_t *iface,
                                    uct_uccl_chunk_t *chunk,
                                    enum ibv_wc_status status, uint32_t qp_num)
{
    uct_uccl_conn_t *conn = chunk->conn;
    uint64_t now;

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
        if (!conn->rc && (status != IBV_WC_RETRY_EXC_ERR) &&
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
        --conn->rc_outstanding;
        conn->rc_writes -= uct_uccl_chunk_is_rc_write(chunk);
        ucs_list_del(&chunk->zlink);
        /* the NIC's ACK is not seen: the RTT sample is post to completion */
        now = uct_uccl_now_ns();
        conn->stats.cc_samples += (now > chunk->sent_ns);
        uct_uccl_cc_on_ack(&conn->cc, chunk->length,
                           (now > chunk->sent_ns) ? now - chunk->sent_ns : 0,
                           now);
        uct_uccl_chunk_wr_done(chunk);
        uct_uccl_chunk_done(conn, chunk, UCS_OK);
        uct_uccl_conn_kick(conn);
        return;
    }

    uct_uccl_chunk_wr_done(chunk);
    if (conn->tx_queued > 0) {
        uct_uccl_iface_sched_add(iface, conn);
    }
}

/* Take the WRs a CQE completes off its path: every WR posted before the
 * one it names, and that one. Done in batches, each with a fresh look-up:
 * completing a chunk may run user callbacks that destroy the conn, and a
 * QP then lives on as a draining copy of its path (or goes). */
void uct_uccl_tx_completion(uct_uccl_iface_t *iface, struct ibv_wc *wc)
{
    uct_uccl_chunk_t *done = (uct_uccl_chunk_t*)wc->wr_id;
    uct_uccl_chunk_t *batch[UCT_UCCL_CQ_BATCH];
    unsigned i, n, found = 0;
    uct_uccl_qp_t *path;
    khiter_t it;

    do {
        it = kh_get(uct_uccl_qpn, &iface->qpn_hash, wc->qp_num);
        if (ucs_unlikely(it == kh_end(&iface->qpn_hash))) {
            if (!found) {   /* its QP is gone: only this WR is known */
                --iface->tx_outstanding;
                uct_uccl_tx_wr_complete(iface, done, wc->status, wc->qp_num);
            }
            return;
        }

        path = kh_val(&iface->qpn_hash, it);
        for (n = 0; (n < UCT_UCCL_CQ_BATCH) && !found &&
                    (path->outstanding > 0); ++n) {
            batch[n] = path->sent[path->sent_head++ &
                                  iface->config.tx_ring_mask];
            found    = (batch[n] == done);
            --path->outstanding;
            --iface->tx_outstanding;
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
                                    (batch[i] == done) ? wc->status :
                                                         IBV_WC_SUCCESS,
                                    wc->qp_num);
        }
    } while (!found);
}

static void uct_uccl_tracker_acked_cb(void *arg, uint32_t csn,
                                      uct_uccl_tx_entry_t *e)
{
    uct_uccl_conn_t *conn   = arg;
    uct_uccl_chunk_t *chunk = e->desc;

    chunk->flags &= ~UCT_UCCL_CHUNK_F_TRACKED;
    uct_uccl_chunk_done(conn, chunk, UCS_OK);
}

static ucs_status_t uct_uccl_tracker_retx_cb(void *arg, uint32_t csn,
                                             uct_uccl_tx_entry_t *e)
{
    uct_uccl_conn_t *conn   = arg;
    uct_uccl_chunk_t *chunk = e->desc;
    uct_uccl_qp_t *path;
    int obsolete;
    uint64_t now;

    if (chunk->flags & UCT_UCCL_CHUNK_F_CHAINED) {
        /* its resend waits for this pass's transmit step: its WR is linked
         * in that chain and must not be rebuilt */
        return UCS_ERR_ALREADY_EXISTS;
    }
    if (conn->iface->tx_outstanding >= conn->iface->config.cq_size) {
        return UCS_ERR_NO_RESOURCE;
    }

    /* a path that lost a chunk is used less, and the resend avoids it */
    now = uct_uccl_now_ns();
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
        if ((chunk->kind == UCT_UCCL_KIND_GET_DATA) && (chunk->length > 0) &&
            !uct_uccl_md_rkey_check(conn->iface->md, chunk->src_rkey,
                                    chunk->laddr, chunk->length, NULL)) {
            /* its source was deregistered while the reply was in flight:
             * the requester hears of an error, and nothing is read */
            uct_uccl_get_data_hdr(chunk, chunk->hdr.get_data.op_id,
                                  UCS_ERR_INVALID_ADDR, 0);
        }
        uct_uccl_chunk_build_wr(conn, chunk);
    }
    uct_uccl_path_chain(conn, path, chunk);
    e->path          = path->index;
    conn->lossy_until = now + UCT_UCCL_LOSSY_RTOS * conn->rto.rto_ns;
    ++conn->stats.retx;
    conn->stats.retx_bytes += chunk->length;
    return UCS_OK;
}

/* Resend SACK holes judged lost. Sprayed chunks arrive out of order across
 * paths but in order on each: a hole that a later chunk of its own path
 * overtook is lost at once. Otherwise a hole is lost only when it is older
 * than the RTT plus its variation (or the recent peak RTT; not the RTO,
 * whose RTO_MIN floor held a lost resend for a millisecond), and
 * REORDER_THRESH chunks after it arrived. Run on every ACK and from the
 * timer. (A RACK-like srtt + srtt/4 age was tried: at 1% loss it resent a
 * fifth more than was lost, for no gain here.) */
static void uct_uccl_tx_fast_retx(uct_uccl_conn_t *conn, uint64_t now)
{
    unsigned n;

    if (!uct_uccl_tracker_has_holes(&conn->tracker)) {
        return;
    }

    n = uct_uccl_tracker_fast_retx(&conn->tracker, now,
                                   uct_uccl_rto_retx_age(&conn->rto), 64,
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

/* An ACK of conn's peer (uct_uccl_conn_bound checked where it came from) */
void uct_uccl_tx_handle_ack(uct_uccl_conn_t *conn, const uct_uccl_ack_t *ack)
{
    uct_uccl_iface_t *iface = conn->iface;
    uct_uccl_ack_info_t info;
    ucs_status_t status;
    uint64_t now;

    now    = uct_uccl_now_ns();
    status = uct_uccl_tracker_ack(&conn->tracker, ack, now,
                                  uct_uccl_tracker_acked_cb, conn, &info);
    if (status != UCS_OK) {
        ++iface->stats.bad_ack;
        ucs_debug("uccl: conn %u: bogus ACK cum %u (una %u nxt %u)", conn->id,
                  ack->cum_csn, conn->tracker.una, conn->tracker.nxt);
        return;
    }

    ++conn->stats.acks_rx;
    iface->stats.bad_ack += (info.bad_bits > 0);
    /* the fabric's part of the sample; none when the peer's CQ wait may
     * have been all of it */
    conn->stats.cc_samples += (info.rtt_ns > info.rx_wait_ns);
    uct_uccl_cc_on_ack(&conn->cc, info.acked_bytes,
                       (info.rtt_ns > info.rx_wait_ns) ?
                       info.rtt_ns - info.rx_wait_ns : 0, now);
    if (info.rtt_ns > 0) {
        uct_uccl_rto_sample(&conn->rto, info.rtt_ns);
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

/* The ACKs stopped while chunks are out: typically the tail of a burst was
 * lost, and no later chunk on its path can show it. Resend what is older
 * than two RTTs rather than stall for the RTO (>= RTO_MIN); while nothing
 * is acknowledged, probe again after twice the wait each time (a resend
 * is lost as often as the original: one probe per stall left every lost
 * probe to the RTO, most of a 1 MiB ping-pong's time at 1% loss). */
static void uct_uccl_tx_tail_probe(uct_uccl_conn_t *conn, uint64_t now,
                                   uint32_t inflight)
{
    const uct_uccl_rto_t *rto = &conn->rto;
    uint64_t pto = ucs_min(ucs_max(2 * uct_uccl_rto_srtt(rto),
                                   rto->srtt_ns + 4 * rto->rttvar_ns),
                           rto->rto_ns);
    uint64_t since = conn->probes ? conn->probe_time : conn->last_progress;
    unsigned n;

    if ((inflight == 0) || (conn->probes >= UCT_UCCL_TAIL_PROBES_MAX) ||
        (now - since < (pto << conn->probes))) {
        return;
    }

    n = uct_uccl_tracker_expire(&conn->tracker, now, pto,
                                UCT_UCCL_RTO_RESEND_MAX,
                                uct_uccl_tracker_retx_cb, conn);
    if (n > 0) {
        ++conn->probes;
        conn->probe_time         = now;
        conn->stats.tail_probes += n;
        uct_uccl_conn_post_chains(conn);
    }
}

void uct_uccl_tx_timers(uct_uccl_conn_t *conn, uint64_t now)
{
    uct_uccl_iface_t *iface = conn->iface;
    uint32_t inflight;

    if (conn->rc) {
        return; /* the NIC retransmits; errors come as completions */
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
                                uct_uccl_tracker_retx_cb, conn) > 0) {
        uct_uccl_conn_post_chains(conn);
    }
}


/* ------------------------------------------------------------------------ */
/* Failure                                                                  */
/* ------------------------------------------------------------------------ */

static void uct_uccl_tracker_purge_cb(void *arg, uint32_t csn,
                                      uct_uccl_tx_entry_t *e)
{
    uct_uccl_chunk_t *chunk = e->desc;
    uct_uccl_conn_t *conn   = arg;

    chunk->flags &= ~UCT_UCCL_CHUNK_F_TRACKED;
    uct_uccl_chunk_done(conn, chunk, conn->fail_status);
}

/* Complete everything outstanding with `status` (failure or destroy).
 * Chunks still carried by a WR stay allocated until that WR completes. */
void uct_uccl_tx_purge(uct_uccl_conn_t *conn, ucs_status_t status)
{
    ucs_status_t saved = conn->fail_status;
    uct_uccl_chunk_t *chunk;
    uct_uccl_op_t *op;

    /* resends chained for the transmit step go out first, so that their
     * WRs complete (or flush) like every other posted one */
    if (conn->chains != NULL) {
        uct_uccl_conn_post_chains(conn);
    }

    /* completions may start new operations: they must not post while the
     * tracker is being emptied */
    ++conn->iface->busy;
    conn->fail_status = status;
    while (!ucs_queue_is_empty(&conn->tx_queue)) {
        chunk = ucs_queue_pull_elem_non_empty(&conn->tx_queue,
                                              uct_uccl_chunk_t, queue);
        --conn->tx_queued;
        uct_uccl_chunk_done(conn, chunk, status);
    }

    if (!conn->rc) {
        uct_uccl_tracker_purge(&conn->tracker, uct_uccl_tracker_purge_cb,
                               conn);
    }
    while (!ucs_list_is_empty(&conn->rc_inflight)) {
        chunk = ucs_list_extract_head(&conn->rc_inflight, uct_uccl_chunk_t,
                                      zlink);
        uct_uccl_chunk_done(conn, chunk, status);
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
        conn->fail_status = status;
        uct_uccl_tx_check_flush(conn);
    } else {
        conn->fail_status = saved;
        while (!ucs_list_is_empty(&conn->flushes)) {
            op = ucs_list_extract_head(&conn->flushes, uct_uccl_op_t, list);
            ucs_list_add_tail(&conn->ops, &op->list);
            op->status = status;
            uct_uccl_op_complete(conn, op);
        }
    }
    --conn->iface->busy;
}

/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Chunks and operations, from their pools to their end: a chunk is freed
 * once the reliability layer is done with it and no WR carries it; an
 * operation completes when all its parts did, and UCX hears of it at the
 * end of the engine's pass. Enqueueing, fences and flush state of a conn.
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <ucs/datastruct/mpool.inl>


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
void uct_uccl_chunk_wr_done(uct_uccl_chunk_t *chunk)
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
    if (uct_uccl_op_is_get(op) && (uct_uccl_get_track(conn, op) != UCS_OK)) {
        ucs_mpool_put_inline(op);
        return NULL;
    }
    ucs_list_add_tail(&conn->ops, &op->list);
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

void uct_uccl_op_complete(uct_uccl_conn_t *conn, uct_uccl_op_t *op)
{
    ucs_list_del(&op->list);
    if (uct_uccl_op_is_get(op)) {
        /* what was issued after it may go now */
        uct_uccl_get_untrack(conn, op);
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

void uct_uccl_chunk_done(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk,
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

/* The next operation waits until everything issued before it completed */
void uct_uccl_tx_fence(uct_uccl_conn_t *conn)
{
    if ((conn->tx_queued > 0) || !uct_uccl_tx_is_flushed(conn)) {
        conn->fence = 1;
    }
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


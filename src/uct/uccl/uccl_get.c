/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The UC GET protocol (RC reads with RDMA READ instead). The requester
 * sends a GET_REQ, ordered like an AM. The server admits it against
 * MAX_QUEUED and answers a GET zcopy with WRITE_WITH_IMM reply chunks into
 * the requester's buffer, then a GET_DONE once every chunk was
 * acknowledged; a GET bcopy with one GET_DATA SEND. The requester completes
 * on GET_DONE or GET_DATA.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_readv */
#endif
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <ucs/datastruct/mpool.inl>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>


ucs_status_t uct_uccl_get_done_send(uct_uccl_conn_t *conn, uint64_t op_id,
                                    ucs_status_t status, uint64_t length)
{
    uct_uccl_chunk_t *chunk = uct_uccl_chunk_get_hdr(conn->iface);
    uct_uccl_get_done_t *done;

    if (chunk == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    done = &chunk->hdr.get_done;
    memset(done, 0, sizeof(*done));
    done->type     = UCT_UCCL_KIND_GET_DONE;
    done->status   = status;
    done->op_id    = op_id;
    done->length   = length;
    chunk->kind    = UCT_UCCL_KIND_GET_DONE;
    chunk->hdr_len = sizeof(*done);
    chunk->last    = 1;
    uct_uccl_tx_enqueue(conn, chunk);
    uct_uccl_iface_sched_add(conn->iface, conn);
    return UCS_OK;
}

/* Reply chunks a GET request asks us for, at most (uct_uccl_get_admit
 * reserves them, uct_uccl_get_serve releases as many) */
static uint32_t uct_uccl_get_nchunks(const uct_uccl_conn_t *conn,
                                     const uct_uccl_get_req_t *req)
{
    size_t chunk_size = uct_uccl_conn_chunk_base(conn);

    if (req->flags & UCT_UCCL_GET_F_SEND) {
        return 1;
    }
    return ucs_max(1, ucs_min(ucs_div_round_up(req->length, chunk_size),
                              UINT32_MAX / 2));
}

/* Take a peer's GET request only while its reply chunks fit MAX_QUEUED
 * beside those of the GETs already taken (a larger one goes alone, as an
 * operation of ours does); reserve them. The first missing message is
 * taken when messages wait behind it: GETs among them hold reservations
 * that only it can release. */
int uct_uccl_get_admit(uct_uccl_conn_t *conn, const uct_uccl_get_req_t *req,
                       int first_missing)
{
    uint32_t n    = uct_uccl_get_nchunks(conn, req);
    uint32_t busy = conn->serve_reserved + conn->serve_chunks;

    if (!first_missing && (busy > 0) &&
        (busy + n > conn->iface->config.max_queued)) {
        return 0;
    }
    conn->serve_reserved += n;
    return 1;
}

/* The GET_DATA chunk's header, with its payload unless status says no */
void uct_uccl_get_data_hdr(uct_uccl_chunk_t *chunk, uint64_t op_id,
                           ucs_status_t status, uint32_t length)
{
    uct_uccl_get_data_t *data = &chunk->hdr.get_data;

    memset(data, 0, sizeof(*data));
    data->type     = UCT_UCCL_KIND_GET_DATA;
    data->status   = status;
    data->op_id    = op_id;
    data->length   = (status == UCS_OK) ? length : 0;
    chunk->hdr_len = sizeof(*data);
    chunk->length  = data->length;
}

/* GET bcopy: the data in one SEND, straight from the registered source,
 * into the requester's receive buffer (which it must fit); or, with an
 * error status, no data. A reply that fits our segment takes a chunk with
 * one, for a resend's copy (uct_uccl_get_data_resend). */
static ucs_status_t uct_uccl_get_serve_send(uct_uccl_conn_t *conn,
                                            const uct_uccl_get_req_t *req,
                                            uint32_t lkey, ucs_status_t status)
{
    uct_uccl_iface_t *iface = conn->iface;
    uct_uccl_chunk_t *chunk;

    chunk = ((status == UCS_OK) && (req->length <= iface->config.seg_size)) ?
            uct_uccl_chunk_get(iface) : uct_uccl_chunk_get_hdr(iface);
    if (chunk == NULL) {
        return UCS_ERR_NO_MEMORY;  /* unanswered: the peer asks again */
    }
    if ((status == UCS_OK) &&
        (req->length > conn->remote_rx_buf_size -
                       sizeof(uct_uccl_get_data_t))) {
        ++iface->stats.bad_data;
        status = UCS_ERR_MESSAGE_TRUNCATED;
    }
    chunk->kind         = UCT_UCCL_KIND_GET_DATA;
    chunk->flags       |= UCT_UCCL_CHUNK_F_SERVED;
    ++conn->serve_chunks;
    chunk->last         = 1;
    chunk->laddr        = req->remote_addr;
    chunk->payload_lkey = lkey;
    chunk->src_rkey     = req->rkey;
    uct_uccl_get_data_hdr(chunk, req->op_id, status, req->length);
    uct_uccl_tx_enqueue(conn, chunk);
    uct_uccl_iface_sched_add(iface, conn);
    return UCS_OK;
}

/* Read our own registered memory as the NIC would: a region its owner
 * unmapped while it was still registered is an error, not a crash */
static int uct_uccl_get_copy_source(void *dst, uint64_t addr, size_t length)
{
    struct iovec local  = { .iov_base = dst, .iov_len = length };
    struct iovec remote = { .iov_base = (void*)addr, .iov_len = length };

    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) ==
           (ssize_t)length;
}

void uct_uccl_get_data_resend(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk)
{
    uct_uccl_iface_t *iface = conn->iface;

    if ((chunk->length == 0) || (chunk->laddr == (uintptr_t)chunk->data)) {
        return; /* an error, or a copy already */
    }
    if (uct_uccl_md_rkey_check(iface->md, chunk->src_rkey, chunk->laddr,
                               chunk->length, NULL)) {
        if (chunk->length > iface->config.seg_size) {
            return; /* no segment to copy into: from the source again */
        }
        if (uct_uccl_get_copy_source(chunk->data, chunk->laddr,
                                     chunk->length)) {
            chunk->laddr        = (uintptr_t)chunk->data;
            chunk->payload_lkey = chunk->lkey;
            return;
        }
    }
    uct_uccl_get_data_hdr(chunk, chunk->hdr.get_data.op_id,
                          UCS_ERR_INVALID_ADDR, 0);
}

ucs_status_t uct_uccl_get_serve(uct_uccl_conn_t *conn,
                                const uct_uccl_get_req_t *req)
{
    uct_uccl_iface_t *iface = conn->iface;
    size_t chunk_size       = uct_uccl_conn_chunk_size(conn);
    uct_uccl_chunk_t *chunk;
    uct_uccl_op_t *op;
    uint64_t offset;
    uint32_t lkey;

    /* what uct_uccl_get_admit reserved becomes chunks in flight */
    conn->serve_reserved -= ucs_min(conn->serve_reserved,
                                    uct_uccl_get_nchunks(conn, req));

    if (!uct_uccl_md_rkey_check(iface->md, req->rkey, req->remote_addr,
                                req->length, &lkey)) {
        ++iface->stats.bad_rkey;
        ucs_debug("uccl: GET request with a bad key 0x%x or range %p+%lu",
                  req->rkey, (void*)req->remote_addr, req->length);
        if (req->flags & UCT_UCCL_GET_F_SEND) {
            return uct_uccl_get_serve_send(conn, req, 0,
                                           UCS_ERR_INVALID_ADDR);
        }
        return uct_uccl_get_done_send(conn, req->op_id,
                                         UCS_ERR_INVALID_ADDR, 0);
    }

    if (req->flags & UCT_UCCL_GET_F_SEND) {
        return uct_uccl_get_serve_send(conn, req, lkey, UCS_OK);
    }

    /* GET_DONE goes out when every reply chunk is acknowledged and no WR
     * reads the source any more: the requester completes on it, and its
     * owner may then free the source at once */
    op = uct_uccl_op_get(conn, UCT_UCCL_OP_GET_SERVE, NULL);
    if (op == NULL) {
        return uct_uccl_get_done_send(conn, req->op_id, UCS_ERR_NO_MEMORY,
                                         0);
    }
    op->id      = req->op_id;
    op->length  = req->length;
    op->pending = 1; /* until every chunk is queued */
    for (offset = 0; offset < req->length; offset += chunk_size) {
        chunk = uct_uccl_chunk_get_hdr(iface);
        if (chunk == NULL) {
            op->status = UCS_ERR_NO_MEMORY;
            break;
        }
        chunk->op           = op;
        ++op->pending;
        chunk->flags       |= UCT_UCCL_CHUNK_F_SERVED;
        ++conn->serve_chunks;
        chunk->kind         = UCT_UCCL_KIND_GET_RESP;
        chunk->length       = ucs_min(chunk_size, req->length - offset);
        chunk->laddr        = req->remote_addr + offset;
        chunk->payload_lkey = lkey;
        chunk->src_rkey     = req->rkey;
        chunk->raddr        = req->reply_addr + offset;
        chunk->rkey         = req->reply_rkey;
        uct_uccl_tx_enqueue(conn, chunk);
    }
    uct_uccl_iface_sched_add(conn->iface, conn);

    uct_uccl_op_part_done(conn, op, UCS_OK);
    return UCS_OK;
}

/* A GET of ours, in issue order and by its id (the peer's GET_DONE or
 * GET_DATA names it). Only our own operations enter the table, so a peer
 * cannot grow it. */
ucs_status_t uct_uccl_get_track(uct_uccl_conn_t *conn, uct_uccl_op_t *op)
{
    khiter_t it;
    int ret;

    it = kh_put(uct_uccl_gets, &conn->get_ids, op->id, &ret);
    if (ret <= 0) {
        return UCS_ERR_NO_MEMORY; /* ids are never reused: not present */
    }
    kh_val(&conn->get_ids, it) = op;
    op->gseq = conn->gets_issued++;
    ucs_list_add_tail(&conn->gets, &op->get_link);
    return UCS_OK;
}

void uct_uccl_get_untrack(uct_uccl_conn_t *conn, uct_uccl_op_t *op)
{
    khiter_t it = kh_get(uct_uccl_gets, &conn->get_ids, op->id);

    ucs_assert(it != kh_end(&conn->get_ids));
    kh_del(uct_uccl_gets, &conn->get_ids, it);
    ucs_list_del(&op->get_link);
}

/* The outstanding GET of this conn with op_id, or NULL */
static uct_uccl_op_t *uct_uccl_get_find(uct_uccl_conn_t *conn,
                                        uint64_t op_id)
{
    khiter_t it = kh_get(uct_uccl_gets, &conn->get_ids, op_id);

    return (it == kh_end(&conn->get_ids)) ? NULL : kh_val(&conn->get_ids, it);
}

/* GET_DONE arrived: the GET is complete. The peer sends it once we
 * acknowledged every reply chunk, and we acknowledge a chunk only after its
 * data landed, so nothing else is awaited: not the cumulative point, which
 * would make every GET wait for every loss before it on the conn. */
void uct_uccl_get_handle_done(uct_uccl_conn_t *conn, uint64_t op_id,
                              ucs_status_t status)
{
    uct_uccl_op_t *op = uct_uccl_get_find(conn, op_id);

    /* GET zcopy: its data was written already; GET bcopy completes with
     * GET_DATA, never this */
    if ((op == NULL) || (op->type != UCT_UCCL_OP_GET_ZCOPY)) {
        ++conn->iface->stats.bad_data;
        return;
    }
    uct_uccl_op_part_done(conn, op, status);
    uct_uccl_conn_kick(conn);
}

/* GET_DATA (checked by uct_uccl_wire_data_check): the GET bcopy it
 * answers takes the receive buffer and completes */
void uct_uccl_get_handle_data(uct_uccl_conn_t *conn, uct_uccl_rx_desc_t *desc)
{
    const uct_uccl_get_data_t *data = uct_uccl_rx_data(desc);
    uct_uccl_op_t *op = uct_uccl_get_find(conn, data->op_id);

    if ((op == NULL) || (op->type != UCT_UCCL_OP_GET_BCOPY) ||
        (op->data_desc != NULL) ||
        ((data->status == UCS_OK) && (data->length != op->length))) {
        ++conn->iface->stats.bad_data;
        ucs_mpool_put_inline(desc);
        return;
    }
    op->data_desc = desc;
    uct_uccl_op_part_done(conn, op, (ucs_status_t)data->status);
    uct_uccl_conn_kick(conn);
}

/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Endpoint operations. Every operation becomes chunks queued on the conn;
 * the engine posts them from progress (so they chain). A full queue, or a
 * zero-copy PUT or GET before the conn is up, gets UCS_ERR_NO_RESOURCE and
 * UCX retries through the pending queue.
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <ucs/type/class.h>
#include <uct/base/uct_iov.inl>
#include <ucs/datastruct/mpool.inl>
#include <string.h>


/* Room for an operation of nchunks. A conn still connecting takes
 * operations of one segment (AM, short and bcopy PUT): they wait in its
 * queue and leave when the peer answers, as the first send on a new ep of
 * a connect-to-iface transport should. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_uccl_ep_check(uct_uccl_conn_t *conn, unsigned nchunks)
{
    if (ucs_unlikely(conn->state == UCT_UCCL_CONN_FAILED)) {
        return conn->fail_status;
    }
    /* the peer's side is gone: the operation is taken and the conn fails
     * with it at the next timer tick (UCX hears it from the error
     * callback), as an operation posted to a QP whose peer vanished */
    if (ucs_unlikely(conn->peer_closed)) {
        uct_uccl_conn_timer_wake(conn);
    }
    /* keep the order of what waits in the pending queue, except for what
     * the request being dispatched issues (UCT keeps it at the head while
     * its callback runs): requests run only in their conn's scheduler
     * turn (uct_uccl_ep_dispatch_pending) */
    if (ucs_unlikely(!ucs_queue_is_empty(&conn->pending_q) &&
                     (conn != conn->iface->sched_current))) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* an operation larger than the queue limit goes when the queue is empty,
     * so it is never starved */
    if (ucs_unlikely((conn->tx_queued + nchunks >
                      conn->iface->config.max_queued) &&
                     (conn->tx_queued > 0))) {
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

/* Zero-copy PUT and GET are cut by the peer's buffer size: connected only */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_uccl_ep_check_connected(uct_uccl_conn_t *conn)
{
    if (ucs_unlikely(conn->state != UCT_UCCL_CONN_CONNECTED)) {
        return (conn->state == UCT_UCCL_CONN_FAILED) ? conn->fail_status :
                                                       UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

static uct_uccl_chunk_t *uct_uccl_ep_am_chunk(uct_uccl_conn_t *conn,
                                              uint8_t id)
{
    uct_uccl_chunk_t *chunk = uct_uccl_chunk_get(conn->iface);
    uct_uccl_am_hdr_t *hdr;

    if (ucs_unlikely(chunk == NULL)) {
        return NULL;
    }

    hdr               = &chunk->hdr.am;
    hdr->type         = UCT_UCCL_KIND_AM;
    hdr->am_id        = id;
    hdr->flags        = 0;
    chunk->kind       = UCT_UCCL_KIND_AM;
    chunk->hdr_len    = sizeof(*hdr);
    chunk->last       = 1;
    chunk->laddr      = (uintptr_t)chunk->data;
    chunk->payload_lkey = chunk->lkey;
    return chunk;
}

/* An AM of one segment: at once when the conn is idle, else queued */
static UCS_F_ALWAYS_INLINE void uct_uccl_ep_am_send(uct_uccl_conn_t *conn,
                                                    uct_uccl_chunk_t *chunk)
{
    if (uct_uccl_tx_am_may_go(conn, chunk) &&
        (uct_uccl_tx_am_now(conn, chunk) == UCS_OK)) {
        return;
    }
    uct_uccl_tx_enqueue(conn, chunk);
    uct_uccl_tx_post_now(conn);
}

ucs_status_t uct_uccl_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                  const void *payload, unsigned length)
{
    uct_uccl_ep_t *ep       = ucs_derived_of(tl_ep, uct_uccl_ep_t);
    uct_uccl_conn_t *conn   = ep->conn;
    uct_uccl_chunk_t *chunk;
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(length + sizeof(header), 0,
                     uct_uccl_iface_am_max(conn->iface), "am_short");
    status = uct_uccl_ep_check(conn, 1);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    chunk = uct_uccl_ep_am_chunk(conn, id);
    if (ucs_unlikely(chunk == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    *(uint64_t*)chunk->data = header;
    if (length > 0) { /* payload may be NULL */
        memcpy(chunk->data + sizeof(header), payload, length);
    }
    chunk->length       = length + sizeof(header);
    chunk->hdr.am.length = chunk->length;
    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, chunk->length);
    uct_uccl_ep_am_send(conn, chunk);
    return UCS_OK;
}

ssize_t uct_uccl_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                             uct_pack_callback_t pack_cb, void *arg,
                             unsigned flags)
{
    uct_uccl_ep_t *ep       = ucs_derived_of(tl_ep, uct_uccl_ep_t);
    uct_uccl_conn_t *conn   = ep->conn;
    uct_uccl_chunk_t *chunk;
    ucs_status_t status;
    size_t length;

    UCT_CHECK_AM_ID(id);
    status = uct_uccl_ep_check(conn, 1);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    chunk = uct_uccl_ep_am_chunk(conn, id);
    if (ucs_unlikely(chunk == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    length = pack_cb(chunk->data, arg);
    ucs_assertv(length <= uct_uccl_iface_am_max(conn->iface),
                "am_bcopy packed %zu bytes", length);
    chunk->length        = length;
    chunk->hdr.am.length = length;
    UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, length);
    uct_uccl_ep_am_send(conn, chunk);
    return length;
}

ucs_status_t uct_uccl_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                  const void *header, unsigned header_length,
                                  const uct_iov_t *iov, size_t iovcnt,
                                  unsigned flags, uct_completion_t *comp)
{
    uct_uccl_ep_t *ep       = ucs_derived_of(tl_ep, uct_uccl_ep_t);
    uct_uccl_conn_t *conn   = ep->conn;
    const uct_uccl_mem_t *memh;
    uct_uccl_chunk_t *chunk;
    ucs_status_t status;
    size_t length;
    uct_uccl_op_t *op;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_PARAM(iovcnt <= 1, "uccl am_zcopy takes one iov, got %zu",
                    iovcnt);
    length = (iovcnt > 0) ? uct_iov_get_length(iov) : 0;
    UCT_CHECK_LENGTH(header_length, 0, uct_uccl_iface_am_max_hdr(conn->iface),
                     "am_zcopy header");
    UCT_CHECK_LENGTH(header_length + length, 0,
                     uct_uccl_iface_am_max(conn->iface), "am_zcopy");
    status = uct_uccl_ep_check(conn, 1);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    memh = (length > 0) ? iov->memh : NULL;
    if ((length > 0) && (memh == UCT_MEM_HANDLE_NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    chunk = uct_uccl_ep_am_chunk(conn, id);
    if (ucs_unlikely(chunk == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    op = uct_uccl_op_get(conn, UCT_UCCL_OP_ZCOPY, comp);
    if (op == NULL) {
        uct_uccl_iface_chunk_put(chunk);
        return UCS_ERR_NO_RESOURCE;
    }

    if (header_length > 0) { /* header may be NULL */
        memcpy(chunk->data, header, header_length);
    }
    chunk->extra_len     = header_length;
    chunk->length        = length;
    chunk->laddr         = (length > 0) ? (uintptr_t)iov->buffer : 0;
    chunk->payload_lkey  = (length > 0) ? memh->lkey : 0;
    chunk->hdr.am.length = header_length + length;
    chunk->op            = op;
    op->pending          = 1;
    UCT_TL_EP_STAT_OP(&ep->super, AM, ZCOPY, header_length + length);
    uct_uccl_tx_enqueue(conn, chunk);
    uct_uccl_tx_post_now(conn);
    return UCS_INPROGRESS;
}

static uct_uccl_chunk_t *uct_uccl_ep_put_chunk(uct_uccl_conn_t *conn,
                                               uint64_t remote_addr,
                                               uct_rkey_t rkey)
{
    uct_uccl_chunk_t *chunk = uct_uccl_chunk_get(conn->iface);

    if (ucs_unlikely(chunk == NULL)) {
        return NULL;
    }
    chunk->kind         = UCT_UCCL_KIND_PUT;
    chunk->last         = 1;
    chunk->raddr        = remote_addr;
    chunk->rkey         = rkey;
    chunk->laddr        = (uintptr_t)chunk->data;
    chunk->payload_lkey = chunk->lkey;
    return chunk;
}

ucs_status_t uct_uccl_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                   unsigned length, uint64_t remote_addr,
                                   uct_rkey_t rkey)
{
    uct_uccl_ep_t *ep       = ucs_derived_of(tl_ep, uct_uccl_ep_t);
    uct_uccl_conn_t *conn   = ep->conn;
    uct_uccl_chunk_t *chunk;
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, conn->iface->config.seg_size, "put_short");
    status = uct_uccl_ep_check(conn, 1);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    chunk = uct_uccl_ep_put_chunk(conn, remote_addr, rkey);
    if (ucs_unlikely(chunk == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (length > 0) { /* buffer may be NULL */
        memcpy(chunk->data, buffer, length);
    }
    chunk->length = length;
    UCT_TL_EP_STAT_OP(&ep->super, PUT, SHORT, length);
    uct_uccl_tx_enqueue(conn, chunk);
    uct_uccl_tx_post_now(conn);
    return UCS_OK;
}

ssize_t uct_uccl_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                              void *arg, uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_uccl_ep_t *ep       = ucs_derived_of(tl_ep, uct_uccl_ep_t);
    uct_uccl_conn_t *conn   = ep->conn;
    uct_uccl_chunk_t *chunk;
    ucs_status_t status;
    size_t length;

    status = uct_uccl_ep_check(conn, 1);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    chunk = uct_uccl_ep_put_chunk(conn, remote_addr, rkey);
    if (ucs_unlikely(chunk == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    length        = pack_cb(chunk->data, arg);
    chunk->length = length;
    ucs_assertv(length <= conn->iface->config.seg_size,
                "put_bcopy packed %zu bytes", length);
    UCT_TL_EP_STAT_OP(&ep->super, PUT, BCOPY, length);
    uct_uccl_tx_enqueue(conn, chunk);
    uct_uccl_tx_post_now(conn);
    return length;
}

/* Cut [buffer, +length) into chunks of one op; kind PUT (WRITE_WITH_IMM)
 * or READ (RC GET). All or nothing: the queue room was checked. */
static ucs_status_t
uct_uccl_ep_zcopy_chunks(uct_uccl_conn_t *conn, uct_uccl_op_t *op, int read,
                         void *buffer, size_t length, uint32_t lkey,
                         uint64_t remote_addr, uct_rkey_t rkey)
{
    size_t chunk_size = uct_uccl_conn_chunk_size(conn);
    uint8_t flags     = read ? UCT_UCCL_CHUNK_F_READ : 0;
    uct_uccl_chunk_t *chunk;
    size_t offset = 0;

    do {
        chunk = uct_uccl_chunk_get_hdr(conn->iface);
        if (ucs_unlikely(chunk == NULL)) {
            /* the chunks already queued complete the op with an error */
            op->status = UCS_ERR_NO_MEMORY;
            return UCS_ERR_NO_MEMORY;
        }
        chunk->kind         = UCT_UCCL_KIND_PUT;
        chunk->flags        = flags;
        chunk->length       = ucs_min(chunk_size, length - offset);
        chunk->laddr        = (uintptr_t)buffer + offset;
        chunk->payload_lkey = lkey;
        chunk->raddr        = remote_addr + offset;
        chunk->rkey         = rkey;
        chunk->op           = op;
        offset             += chunk->length;
        chunk->last         = (offset >= length);
        flags               = read ? UCT_UCCL_CHUNK_F_READ :
                                     UCT_UCCL_CHUNK_F_RUN;
        ++op->pending;
        uct_uccl_tx_enqueue(conn, chunk);
    } while (offset < length);

    return UCS_OK;
}

static inline unsigned uct_uccl_ep_nchunks(uct_uccl_conn_t *conn,
                                           size_t length)
{
    return ucs_max(ucs_div_round_up(length, uct_uccl_conn_chunk_base(conn)),
                   1);
}

ucs_status_t uct_uccl_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                   size_t iovcnt, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp)
{
    uct_uccl_ep_t *ep     = ucs_derived_of(tl_ep, uct_uccl_ep_t);
    uct_uccl_conn_t *conn = ep->conn;
    const uct_uccl_mem_t *memh;
    ucs_status_t status;
    uct_uccl_op_t *op;
    size_t length;

    UCT_CHECK_PARAM(iovcnt == 1, "uccl put_zcopy takes one iov, got %zu",
                    iovcnt);
    length = uct_iov_get_length(iov);
    memh   = iov->memh;
    if ((length > 0) && (memh == UCT_MEM_HANDLE_NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_uccl_ep_check_connected(conn);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    status = uct_uccl_ep_check(conn, uct_uccl_ep_nchunks(conn, length));
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    op = uct_uccl_op_get(conn, UCT_UCCL_OP_ZCOPY, comp);
    if (op == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    UCT_TL_EP_STAT_OP(&ep->super, PUT, ZCOPY, length);
    ++op->pending; /* hold the op while its chunks are queued */
    (void)uct_uccl_ep_zcopy_chunks(conn, op, 0, iov->buffer, length,
                                   (length > 0) ? memh->lkey : 0, remote_addr,
                                   rkey);
    uct_uccl_op_part_done(conn, op, UCS_OK);
    uct_uccl_tx_post_now(conn);
    return UCS_INPROGRESS;
}

/* The chunk that carries a GET: in UC a request the peer's engine serves,
 * in RC the op's READ chunks are made when it is posted (NULL here) */
static ucs_status_t uct_uccl_ep_get_req(uct_uccl_conn_t *conn,
                                        uct_uccl_chunk_t **req_p)
{
    *req_p = NULL;
    if (conn->rc) {
        return UCS_OK;
    }
    *req_p = uct_uccl_chunk_get_hdr(conn->iface);
    return (*req_p == NULL) ? UCS_ERR_NO_RESOURCE : UCS_OK;
}

/* Post a GET whose op and request chunk (UC) are allocated: nothing can
 * fail any more, the op completes through its completion. UC GET bcopy
 * (no reply key) asks for its data in a SEND: we expose no memory. */
static ucs_status_t
uct_uccl_ep_get_post(uct_uccl_conn_t *conn, uct_uccl_op_t *op,
                     uct_uccl_chunk_t *chunk, void *buffer, size_t length,
                     uint32_t lkey, uint32_t reply_rkey, uint64_t remote_addr,
                     uct_rkey_t rkey)
{
    uct_uccl_get_req_t *req;

    if (conn->rc) {
        ++op->pending;
        (void)uct_uccl_ep_zcopy_chunks(conn, op, 1, buffer, length, lkey,
                                       remote_addr, rkey);
        uct_uccl_op_part_done(conn, op, UCS_OK);
        uct_uccl_tx_post_now(conn);
        return UCS_INPROGRESS;
    }

    /* UC has no READ: the peer's engine writes the data back */
    req = &chunk->hdr.get_req;
    memset(req, 0, sizeof(*req));
    req->type        = UCT_UCCL_KIND_GET_REQ;
    req->flags       = (buffer == NULL) ? UCT_UCCL_GET_F_SEND : 0;
    req->rkey        = rkey;
    req->remote_addr = remote_addr;
    req->length      = length;
    req->reply_addr  = (uintptr_t)buffer;
    req->reply_rkey  = reply_rkey;
    req->op_id       = op->id;
    chunk->kind      = UCT_UCCL_KIND_GET_REQ;
    chunk->hdr_len   = sizeof(*req);
    chunk->last      = 1;
    op->pending      = 1; /* completes with GET_DONE or GET_DATA */
    uct_uccl_tx_enqueue(conn, chunk);
    uct_uccl_tx_post_now(conn);
    return UCS_INPROGRESS;
}

ucs_status_t uct_uccl_ep_get_bcopy(uct_ep_h tl_ep,
                                   uct_unpack_callback_t unpack_cb,
                                   void *arg, size_t length,
                                   uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp)
{
    uct_uccl_ep_t *ep     = ucs_derived_of(tl_ep, uct_uccl_ep_t);
    uct_uccl_conn_t *conn = ep->conn;
    uct_uccl_chunk_t *buf, *req;
    ucs_status_t status;
    uct_uccl_op_t *op;

    UCT_CHECK_LENGTH(length, 0, conn->iface->config.seg_size, "get_bcopy");
    status = uct_uccl_ep_check_connected(conn);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    status = uct_uccl_ep_check(conn, conn->rc ?
                                     uct_uccl_ep_nchunks(conn, length) : 1);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    /* RC reads into a buffer of ours; UC gets its data in a SEND */
    buf = conn->rc ? uct_uccl_chunk_get(conn->iface) : NULL;
    if (conn->rc && (buf == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (uct_uccl_ep_get_req(conn, &req) != UCS_OK) {
        goto err_put_buf;
    }
    op = uct_uccl_op_get(conn, UCT_UCCL_OP_GET_BCOPY, comp);
    if (op == NULL) {
        goto err_put_req;
    }

    op->buf         = buf;
    op->unpack_cb   = unpack_cb;
    op->unpack_arg  = arg;
    op->length      = length;
    UCT_TL_EP_STAT_OP(&ep->super, GET, BCOPY, length);
    return uct_uccl_ep_get_post(conn, op, req,
                                (buf != NULL) ? buf->data : NULL, length,
                                (buf != NULL) ? buf->lkey : 0, 0,
                                remote_addr, rkey);

err_put_req:
    if (req != NULL) {
        uct_uccl_iface_chunk_put(req);
    }
err_put_buf:
    if (buf != NULL) {
        uct_uccl_iface_chunk_put(buf);
    }
    return UCS_ERR_NO_RESOURCE;
}

ucs_status_t uct_uccl_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                   size_t iovcnt, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp)
{
    uct_uccl_ep_t *ep     = ucs_derived_of(tl_ep, uct_uccl_ep_t);
    uct_uccl_conn_t *conn = ep->conn;
    const uct_uccl_mem_t *memh;
    uct_uccl_chunk_t *req;
    ucs_status_t status;
    uct_uccl_op_t *op;
    size_t length;

    UCT_CHECK_PARAM(iovcnt == 1, "uccl get_zcopy takes one iov, got %zu",
                    iovcnt);
    length = uct_iov_get_length(iov);
    memh   = iov->memh;
    if (memh == UCT_MEM_HANDLE_NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_uccl_ep_check_connected(conn);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    status = uct_uccl_ep_check(conn, conn->rc ?
                                     uct_uccl_ep_nchunks(conn, length) : 1);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    status = uct_uccl_ep_get_req(conn, &req);
    if (status != UCS_OK) {
        return status;
    }
    op = uct_uccl_op_get(conn, UCT_UCCL_OP_GET_ZCOPY, comp);
    if (op == NULL) {
        if (req != NULL) {
            uct_uccl_iface_chunk_put(req);
        }
        return UCS_ERR_NO_RESOURCE;
    }

    UCT_TL_EP_STAT_OP(&ep->super, GET, ZCOPY, length);
    return uct_uccl_ep_get_post(conn, op, req, iov->buffer, length,
                                memh->lkey, memh->rkey, remote_addr, rkey);
}

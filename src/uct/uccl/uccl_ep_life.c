/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The ep's life and its ordering operations: flush, fence, keepalive check,
 * the pending queue (UCX retries what got UCS_ERR_NO_RESOURCE), creation
 * (connect to an iface) and destruction.
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <ucs/type/class.h>
#include <string.h>


ucs_status_t uct_uccl_ep_flush(uct_ep_h tl_ep, unsigned flags,
                               uct_completion_t *comp)
{
    uct_uccl_ep_t *ep     = ucs_derived_of(tl_ep, uct_uccl_ep_t);
    uct_uccl_conn_t *conn = ep->conn;
    uct_uccl_op_t *op;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        /* UCS_OK: every operation before it completed, its completion
         * called (canceled), as when an ep is destroyed */
        if (conn->state != UCT_UCCL_CONN_FAILED) {
            uct_uccl_tx_purge(conn, UCS_ERR_CANCELED);
        }
        uct_uccl_async_report_ops_of(conn->iface, conn);
        return UCS_OK;
    }

    if (conn->state == UCT_UCCL_CONN_FAILED) {
        return conn->fail_status;
    }

    if (!ucs_queue_is_empty(&conn->pending_q)) {
        return UCS_ERR_NO_RESOURCE;
    }

    /* done once the user heard of every operation before it */
    if (uct_uccl_tx_is_flushed(conn) &&
        (conn->state == UCT_UCCL_CONN_CONNECTED) &&
        !uct_uccl_async_ops_pending(conn->iface, conn)) {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
        return UCS_OK;
    }

    if (comp != NULL) {
        op = ucs_mpool_get_inline(&conn->iface->op_mp);
        if (op == NULL) {
            return UCS_ERR_NO_RESOURCE;
        }
        op->owner      = conn;
        op->type       = UCT_UCCL_OP_FLUSH;
        op->pending    = 1;
        op->status     = UCS_OK;
        op->comp       = comp;
        op->buf        = NULL;
        op->data_desc  = NULL;
        ucs_list_add_tail(&conn->flushes, &op->list);
        uct_uccl_tx_check_flush(conn);  /* queued behind what is reported */
    }

    UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    return UCS_INPROGRESS;
}

ucs_status_t uct_uccl_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    uct_uccl_ep_t *ep = ucs_derived_of(tl_ep, uct_uccl_ep_t);

    uct_uccl_tx_fence(ep->conn);
    UCT_TL_EP_STAT_FENCE(&ep->super);
    return UCS_OK;
}

/* UCP's keepalive: with the peer's ep id known it sends an AM (whose chunk
 * times out like any other); before that, or on an idle lane, it asks here */
ucs_status_t uct_uccl_ep_check_alive(uct_ep_h tl_ep, unsigned flags,
                                    uct_completion_t *comp)
{
    uct_uccl_ep_t *ep = ucs_derived_of(tl_ep, uct_uccl_ep_t);

    UCT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);
    return uct_uccl_conn_check(ep->conn);
}

/* A pending request's private part: its queue element and its flags */
typedef struct uct_uccl_pending_priv {
    uct_pending_req_priv_queue_t super;
    unsigned                     flags;   /* UCT_CB_FLAG_ASYNC */
} uct_uccl_pending_priv_t;

static UCS_F_ALWAYS_INLINE uct_uccl_pending_priv_t *
uct_uccl_pending_priv(uct_pending_req_t *req)
{
    UCS_STATIC_ASSERT(sizeof(uct_uccl_pending_priv_t) <=
                      UCT_PENDING_REQ_PRIV_LEN);
    return (uct_uccl_pending_priv_t*)&req->priv;
}

ucs_status_t uct_uccl_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                     unsigned flags)
{
    uct_uccl_ep_t *ep     = ucs_derived_of(tl_ep, uct_uccl_ep_t);
    uct_uccl_conn_t *conn = ep->conn;

    /* "busy" only when any operation would be accepted now (an empty queue
     * takes even an operation larger than MAX_QUEUED), else the caller
     * would retry the same operation forever */
    if ((conn->state == UCT_UCCL_CONN_CONNECTED) &&
        ucs_queue_is_empty(&conn->pending_q) && (conn->tx_queued == 0)) {
        return UCS_ERR_BUSY;
    }

    uct_uccl_pending_priv(req)->flags = flags;
    uct_pending_req_queue_push(&conn->pending_q, req);
    UCT_TL_EP_STAT_PEND(&ep->super);
    return UCS_OK;
}

void uct_uccl_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                               void *arg)
{
    uct_uccl_ep_t *ep     = ucs_derived_of(tl_ep, uct_uccl_ep_t);
    uct_uccl_conn_t *conn = ep->conn;
    uct_pending_req_priv_queue_t *priv;

    uct_pending_queue_purge(priv, &conn->pending_q, 1, cb, arg);
}

/* Call pending requests in their order while the conn has room; only in
 * the conn's scheduler turn (iface->sched_current), which lets the
 * operations they issue pass the pending queue's order check. A
 * background pass (uccl_async.c) calls only those added with
 * UCT_CB_FLAG_ASYNC, up to the first other one; the user's next progress
 * call goes on from there. */
void uct_uccl_ep_dispatch_pending(uct_uccl_conn_t *conn)
{
    int async = conn->iface->async.active;
    uct_uccl_pending_priv_t *priv;

    if ((conn->ep == NULL) || ucs_queue_is_empty(&conn->pending_q)) {
        return;
    }

    ucs_assert(conn == conn->iface->sched_current);
    uct_pending_queue_dispatch(priv, &conn->pending_q,
                               (conn->state == UCT_UCCL_CONN_CONNECTED) &&
                               (conn->tx_queued <
                                conn->iface->config.max_queued) &&
                               (!async || (priv->flags & UCT_CB_FLAG_ASYNC)));
}

/* Paths for a new conn to a peer iface. Conns between the same two ifaces
 * cross the same fabric paths: the k-th one (eps of several UCP endpoints
 * to one worker, say) asks for NUM_PATHS / k, so that many of them share
 * the device's QPs rather than run it dry. */
static unsigned uct_uccl_ep_want_paths(uct_uccl_iface_t *iface,
                                       const uct_uccl_device_addr_t *dev,
                                       uint32_t ctl_qpn)
{
    unsigned same = 0;
    uct_uccl_conn_t *conn;

    ucs_list_for_each(conn, &iface->conns, list) {
        same += !conn->passive && (conn->state != UCT_UCCL_CONN_FAILED) &&
                (conn->remote_ctl_qpn == ctl_qpn) &&
                (conn->remote_dev.lid == dev->lid) &&
                !memcmp(conn->remote_dev.gid, dev->gid, sizeof(dev->gid));
    }
    return ucs_max(iface->config.num_paths / (same + 1), 1);
}

static UCS_CLASS_INIT_FUNC(uct_uccl_ep_t, const uct_ep_params_t *params)
{
    uct_uccl_iface_t *iface = ucs_derived_of(params->iface, uct_uccl_iface_t);
    const uct_uccl_device_addr_t *dev;
    const uct_uccl_iface_addr_t *addr;
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_DEV_ADDR) ||
        !(params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR)) {
        ucs_error("uccl: ep create needs the peer's device and iface address");
        return UCS_ERR_INVALID_PARAM;
    }

    dev  = (const void*)params->dev_addr;
    addr = (const void*)params->iface_addr;
    if (dev->is_global != iface->port->is_global) {
        return UCS_ERR_UNREACHABLE;
    }

    status = uct_uccl_conn_create(iface, 0, dev, addr->ctl_qpn,
                                  uct_uccl_ep_want_paths(iface, dev,
                                                         addr->ctl_qpn),
                                  &self->conn);
    if (status != UCS_OK) {
        return status;
    }

    self->conn->ep = self;
    return uct_uccl_conn_start(self->conn);
}

static UCS_CLASS_CLEANUP_FUNC(uct_uccl_ep_t)
{
    uct_uccl_conn_t *conn = self->conn;

    conn->ep = NULL;
    if (conn->state == UCT_UCCL_CONN_CONNECTED) {
        uct_uccl_conn_send_disconnect(conn, UCS_OK);
    }
    uct_uccl_conn_destroy(conn);
}

UCS_CLASS_DEFINE(uct_uccl_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_uccl_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_uccl_ep_t, uct_ep_t);


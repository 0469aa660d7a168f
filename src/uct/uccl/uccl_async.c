/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The engine runs when the user does not. In UC mode a peer hears of its
 * data only through our ACKs, so a process that computes without calling
 * progress would look dead to its peers. A timer on the worker's async
 * context runs the engine while the user has not called progress for
 * ASYNC_IDLE: it ACKs, answers keepalives and connection requests, serves
 * GETs, resends and sends what is queued. What UCX must hear (AMs,
 * completions, ep errors) waits for the user's next progress call, which
 * reports it first, in order.
 *
 * The timer runs with the async context blocked, so every entry point of
 * the transport blocks it too: the ops table below wraps each operation.
 *
 * With UCX's default async thread (thread-spinlock mode) the tick is a
 * timerfd, not a UCX timer: UCX 1.13's thread sleeps in whole milliseconds
 * and polls out the rest of each timer period (epoll_wait with a zero
 * timeout), CPU taken from the user's thread when both share a core. The
 * timerfd wakes the thread itself, on time.
 */
#include "uccl_tx.h"

#include <ucs/async/async.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/debug/log.h>
#include <ucs/type/class.h>
#include <uct/base/uct_worker.h>

#include <errno.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define UCT_UCCL_ASYNC_ROUNDS  64   /* engine runs per timer tick, at most */


static UCS_F_ALWAYS_INLINE ucs_async_context_t *
uct_uccl_async_ctx(uct_iface_h tl_iface)
{
    return ucs_derived_of(tl_iface, uct_base_iface_t)->worker->async;
}

/* The engine's runs for the user, with the async context blocked */
void uct_uccl_async_run(uct_uccl_iface_t *iface)
{
    unsigned i;

    iface->async.active = 1;
    for (i = 0; (i < UCT_UCCL_ASYNC_ROUNDS) &&
                (uct_uccl_iface_engine_progress(iface) > 0); ++i) {
    }
    iface->async.active = 0;
    if (iface->async.deferred > 0) {
        uct_uccl_event_signal(iface); /* wake a user asleep on events */
    }
}

/* One background pass, with the async context blocked: the engine runs
 * only when the user has not called progress for idle_ns. A user away
 * has the CQs armed for its peers' requests (uccl_wake.c). */
static void uct_uccl_async_pass(uct_uccl_iface_t *iface)
{
    uint64_t now = uct_uccl_now_ns();

    if (uct_uccl_wake_user_away(iface, now)) {
        uct_uccl_wake_arm(iface);
    }
    if (now - iface->async.last_user >= iface->async.idle_ns) {
        ++iface->stats.async_passes;
        uct_uccl_async_run(iface);
    }
}

/* UCX timer (async modes other than the thread-spinlock one): UCX calls
 * it with the context blocked, or queues it while the user holds it */
static void uct_uccl_async_timer(int id, ucs_event_set_types_t events,
                                 void *arg)
{
    uct_uccl_async_pass(arg);
}

/* timerfd tick, called by the async thread without the context. It reads
 * the fd every time: a periodic timerfd arms its next expiry only when
 * read, and a tick UCX queued for later (context held by the user) would
 * wait for ucs_async_check_miss, which a UCT program need not call. A
 * context held by the user means the user is not idle: nothing to do. */
static void uct_uccl_async_tick(int id, ucs_event_set_types_t events,
                                void *arg)
{
    uct_uccl_iface_t *iface    = arg;
    ucs_async_context_t *async = iface->super.worker->async;
    uint64_t expirations;

    if ((read(iface->async.timer_fd, &expirations, sizeof(expirations)) < 0) &&
        (errno != EAGAIN)) {
        ucs_debug("uccl: async timerfd read: %m");
    }
    if (uct_uccl_glue_async_try_block(async)) {
        uct_uccl_async_pass(iface);
        UCS_ASYNC_UNBLOCK(async);
    }
}

/* A timerfd of period idle_ns on the async thread's epoll, edge triggered
 * (read at every tick) */
static ucs_status_t uct_uccl_async_timerfd_add(uct_uccl_iface_t *iface,
                                               ucs_async_context_t *async)
{
    struct itimerspec its;
    ucs_status_t status;
    int fd;

    fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) {
        ucs_error("uccl: timerfd_create: %m");
        return UCS_ERR_IO_ERROR;
    }

    its.it_interval.tv_sec  = iface->async.idle_ns / UCS_NSEC_PER_SEC;
    its.it_interval.tv_nsec = iface->async.idle_ns % UCS_NSEC_PER_SEC;
    its.it_value            = its.it_interval;
    if (timerfd_settime(fd, 0, &its, NULL) != 0) {
        ucs_error("uccl: timerfd_settime: %m");
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    /* no context: UCX would queue the tick unread while the user holds
     * it; the tick blocks the context itself */
    iface->async.timer_fd = fd;
    status = ucs_async_set_event_handler(async->mode, fd,
                                         UCS_EVENT_SET_EVREAD |
                                         UCS_EVENT_SET_EDGE_TRIGGERED,
                                         uct_uccl_async_tick, iface, NULL);
    if (status != UCS_OK) {
        goto err_close;
    }
    iface->async.timer_id = fd; /* an fd handler's id is the fd */
    return UCS_OK;

err_close:
    iface->async.timer_fd = -1;
    close(fd);
    return status;
}

ucs_status_t uct_uccl_async_init(uct_uccl_iface_t *iface, double idle)
{
    ucs_async_context_t *async = iface->super.worker->async;
    ucs_status_t status;

    ucs_queue_head_init(&iface->async.ams);
    ucs_list_head_init(&iface->async.ops);
    ucs_list_head_init(&iface->async.errs);
    iface->async.timer_id  = -1;
    iface->async.timer_fd  = -1;
    iface->async.wake_id   = -1;
    iface->async.last_user = uct_uccl_now_ns();
    iface->async.user_gap  = 0;
    iface->async.user_exit = iface->async.last_user;
    iface->async.ops_seen  = uct_uccl_thread.ops;
    iface->async.busy_seen = uct_uccl_thread.busy_ns;
    if ((async == NULL) || (idle * 1e9 >= (double)UINT64_MAX)) {
        return UCS_OK; /* ASYNC_IDLE=inf: the user drives everything */
    }

    /* a pass runs the whole engine: allocations, locks, verbs calls, none
     * of which a signal handler may make */
    if (async->mode == UCS_ASYNC_MODE_SIGNAL) {
        ucs_error("uccl: background progress (UCX_UCCL_ASYNC_IDLE) needs a "
                  "thread async context, not signal mode: use "
                  "UCX_ASYNC_MODE=thread or UCX_UCCL_ASYNC_IDLE=inf");
        return UCS_ERR_UNSUPPORTED;
    }

    iface->async.idle_ns = ucs_max(idle, 1e-3) * 1e9;
    if (async->mode == UCS_ASYNC_MODE_THREAD_SPINLOCK) {
        status = uct_uccl_async_timerfd_add(iface, async);
        if (status == UCS_OK) {
            status = uct_uccl_wake_init(iface, async);
        }
    } else {
        status = ucs_async_add_timer(async->mode,
                                     ucs_time_from_sec(iface->async.idle_ns /
                                                       1e9),
                                     uct_uccl_async_timer, iface, async,
                                     &iface->async.timer_id);
    }
    if (status != UCS_OK) {
        ucs_error("uccl: cannot add the async progress timer: %s",
                  ucs_status_string(status));
        iface->async.timer_id = -1;
    }
    return status;
}

void uct_uccl_async_cleanup(uct_uccl_iface_t *iface)
{
    uct_uccl_conn_t *conn;

    uct_uccl_wake_cleanup(iface);
    if (iface->async.timer_id >= 0) {
        /* waits for a pass in flight */
        ucs_async_remove_handler(iface->async.timer_id, 1);
        iface->async.timer_id = -1;
    }
    if (iface->async.timer_fd >= 0) {
        close(iface->async.timer_fd);
        iface->async.timer_fd = -1;
    }

    /* every operation completes once; AMs and ep errors concern no one
     * once the iface goes */
    while (!ucs_queue_is_empty(&iface->async.ams)) {
        ucs_mpool_put(ucs_queue_pull_elem_non_empty(&iface->async.ams,
                                                    uct_uccl_rx_desc_t,
                                                    queue));
        --iface->async.deferred;
    }
    while (!ucs_list_is_empty(&iface->async.errs)) {
        conn = ucs_list_head(&iface->async.errs, uct_uccl_conn_t, err_link);
        uct_uccl_async_conn_cleanup(conn);
    }
    uct_uccl_async_dispatch(iface);
}

void uct_uccl_async_defer_op(uct_uccl_iface_t *iface, uct_uccl_op_t *op)
{
    ucs_list_add_tail(&iface->async.ops, &op->list);
    ++iface->async.deferred;
}

int uct_uccl_async_ops_pending(const uct_uccl_iface_t *iface,
                               const uct_uccl_conn_t *conn)
{
    const uct_uccl_op_t *op;

    ucs_list_for_each(op, &iface->async.ops, list) {
        if (op->owner == conn) {
            return 1;
        }
    }
    return 0;
}

/* The completions of conn's operations that wait in the queue, now: an ep
 * destroy completes its operations before it returns (UCX's rule), while
 * the queue's other entries keep their turn */
void uct_uccl_async_report_ops_of(uct_uccl_iface_t *iface,
                                  const uct_uccl_conn_t *conn)
{
    UCS_LIST_HEAD(ops);
    uct_uccl_op_t *op, *tmp;

    ucs_list_for_each_safe(op, tmp, &iface->async.ops, list) {
        if (op->owner == conn) {
            ucs_list_del(&op->list);
            ucs_list_add_tail(&ops, &op->list);
            --iface->async.deferred;
        }
    }
    /* a callback may destroy other eps: the list is a local one */
    while (!ucs_list_is_empty(&ops)) {
        op = ucs_list_extract_head(&ops, uct_uccl_op_t, list);
        uct_uccl_op_report(op);
    }
}

void uct_uccl_async_defer_err(uct_uccl_conn_t *conn)
{
    if (!conn->err_deferred) {
        conn->err_deferred = 1;
        ucs_list_add_tail(&conn->iface->async.errs, &conn->err_link);
        ++conn->iface->async.deferred;
    }
}

void uct_uccl_async_conn_cleanup(uct_uccl_conn_t *conn)
{
    if (conn->err_deferred) {
        conn->err_deferred = 0;
        ucs_list_del(&conn->err_link);
        --conn->iface->async.deferred;
    }
}

/* Tell UCX what the background passes did: AMs in their order, then
 * completions, then ep errors (a callback may destroy eps and conns, so
 * each entry leaves its list before it is reported) */
void uct_uccl_async_dispatch(uct_uccl_iface_t *iface)
{
    uct_uccl_rx_desc_t *desc;
    uct_uccl_conn_t *conn;
    uct_uccl_op_t *op;

    while (!ucs_queue_is_empty(&iface->async.ams)) {
        desc = ucs_queue_pull_elem_non_empty(&iface->async.ams,
                                             uct_uccl_rx_desc_t, queue);
        --iface->async.deferred;
        uct_uccl_rx_am_handle(iface, desc);
    }

    while (!ucs_list_is_empty(&iface->async.ops)) {
        op = ucs_list_extract_head(&iface->async.ops, uct_uccl_op_t, list);
        --iface->async.deferred;
        uct_uccl_op_report(op);
    }

    while (!ucs_list_is_empty(&iface->async.errs)) {
        conn = ucs_list_head(&iface->async.errs, uct_uccl_conn_t, err_link);
        uct_uccl_async_conn_cleanup(conn);
        uct_iface_handle_ep_err(&iface->super.super, &conn->ep->super.super,
                                conn->fail_status);
    }
}


/* ------------------------------------------------------------------------ */
/* Entry points: each blocks the async context around the operation         */
/* ------------------------------------------------------------------------ */

#define UCT_UCCL_ASYNC_CALL(_async, _ret, _call) \
    ({ \
        ucs_async_context_t *__async = (_async); \
        _ret __ret; \
        UCS_ASYNC_BLOCK(__async); \
        __ret = _call; \
        UCS_ASYNC_UNBLOCK(__async); \
        __ret; \
    })

/* uct_uccl_async_<op>: the locked version of uct_uccl_<op>, counted as
 * the user's (uccl_wake.c: a user who calls operations is not away) */
#define UCT_UCCL_ASYNC_EP_OP(_ret, _op, _params, _args) \
    static _ret uct_uccl_async_##_op _params \
    { \
        return UCT_UCCL_ASYNC_CALL(uct_uccl_async_ctx(tl_ep->iface), _ret, \
                                   (++uct_uccl_thread.ops, \
                                    uct_uccl_##_op _args)); \
    }

UCT_UCCL_ASYNC_EP_OP(ucs_status_t, ep_put_short,
                     (uct_ep_h tl_ep, const void *buffer, unsigned length,
                      uint64_t remote_addr, uct_rkey_t rkey),
                     (tl_ep, buffer, length, remote_addr, rkey))

UCT_UCCL_ASYNC_EP_OP(ssize_t, ep_put_bcopy,
                     (uct_ep_h tl_ep, uct_pack_callback_t pack_cb, void *arg,
                      uint64_t remote_addr, uct_rkey_t rkey),
                     (tl_ep, pack_cb, arg, remote_addr, rkey))

UCT_UCCL_ASYNC_EP_OP(ucs_status_t, ep_put_zcopy,
                     (uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                      uint64_t remote_addr, uct_rkey_t rkey,
                      uct_completion_t *comp),
                     (tl_ep, iov, iovcnt, remote_addr, rkey, comp))

UCT_UCCL_ASYNC_EP_OP(ucs_status_t, ep_get_bcopy,
                     (uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                      void *arg, size_t length, uint64_t remote_addr,
                      uct_rkey_t rkey, uct_completion_t *comp),
                     (tl_ep, unpack_cb, arg, length, remote_addr, rkey, comp))

UCT_UCCL_ASYNC_EP_OP(ucs_status_t, ep_get_zcopy,
                     (uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                      uint64_t remote_addr, uct_rkey_t rkey,
                      uct_completion_t *comp),
                     (tl_ep, iov, iovcnt, remote_addr, rkey, comp))

UCT_UCCL_ASYNC_EP_OP(ucs_status_t, ep_am_short,
                     (uct_ep_h tl_ep, uint8_t id, uint64_t header,
                      const void *payload, unsigned length),
                     (tl_ep, id, header, payload, length))

UCT_UCCL_ASYNC_EP_OP(ssize_t, ep_am_bcopy,
                     (uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                      void *arg, unsigned flags),
                     (tl_ep, id, pack_cb, arg, flags))

UCT_UCCL_ASYNC_EP_OP(ucs_status_t, ep_am_zcopy,
                     (uct_ep_h tl_ep, uint8_t id, const void *header,
                      unsigned header_length, const uct_iov_t *iov,
                      size_t iovcnt, unsigned flags, uct_completion_t *comp),
                     (tl_ep, id, header, header_length, iov, iovcnt, flags,
                      comp))

UCT_UCCL_ASYNC_EP_OP(ucs_status_t, ep_pending_add,
                     (uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags),
                     (tl_ep, req, flags))

UCT_UCCL_ASYNC_EP_OP(ucs_status_t, ep_flush,
                     (uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp),
                     (tl_ep, flags, comp))

UCT_UCCL_ASYNC_EP_OP(ucs_status_t, ep_fence,
                     (uct_ep_h tl_ep, unsigned flags), (tl_ep, flags))

UCT_UCCL_ASYNC_EP_OP(ucs_status_t, ep_check_alive,
                     (uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp),
                     (tl_ep, flags, comp))

static void uct_uccl_async_ep_pending_purge(uct_ep_h tl_ep,
                                            uct_pending_purge_callback_t cb,
                                            void *arg)
{
    ucs_async_context_t *async = uct_uccl_async_ctx(tl_ep->iface);

    UCS_ASYNC_BLOCK(async);
    uct_uccl_ep_pending_purge(tl_ep, cb, arg);
    UCS_ASYNC_UNBLOCK(async);
}

static ucs_status_t uct_uccl_async_ep_create(const uct_ep_params_t *params,
                                             uct_ep_h *ep_p)
{
    return UCT_UCCL_ASYNC_CALL(uct_uccl_async_ctx(params->iface),
                               ucs_status_t,
                               UCS_CLASS_NEW_FUNC_NAME(uct_uccl_ep_t)(params,
                                                                      ep_p));
}

static void uct_uccl_async_ep_destroy(uct_ep_h tl_ep)
{
    uct_uccl_iface_t *iface    = ucs_derived_of(tl_ep->iface,
                                                uct_uccl_iface_t);
    ucs_async_context_t *async = uct_uccl_async_ctx(tl_ep->iface);
    const uct_uccl_conn_t *conn;

    UCS_ASYNC_BLOCK(async);
    conn = ucs_derived_of(tl_ep, uct_uccl_ep_t)->conn;
    UCS_CLASS_DELETE_FUNC_NAME(uct_uccl_ep_t)(tl_ep);
    /* its operations were canceled: they complete before we return */
    uct_uccl_async_report_ops_of(iface, conn);
    UCS_ASYNC_UNBLOCK(async);
}

static ucs_status_t uct_uccl_async_iface_flush(uct_iface_h tl_iface,
                                               unsigned flags,
                                               uct_completion_t *comp)
{
    return UCT_UCCL_ASYNC_CALL(uct_uccl_async_ctx(tl_iface), ucs_status_t,
                               uct_uccl_iface_flush(tl_iface, flags, comp));
}

static ucs_status_t uct_uccl_async_iface_fence(uct_iface_h tl_iface,
                                               unsigned flags)
{
    return UCT_UCCL_ASYNC_CALL(uct_uccl_async_ctx(tl_iface), ucs_status_t,
                               uct_uccl_iface_fence(tl_iface, flags));
}

static ucs_status_t uct_uccl_async_iface_event_arm(uct_iface_h tl_iface,
                                                   unsigned events)
{
    return UCT_UCCL_ASYNC_CALL(uct_uccl_async_ctx(tl_iface), ucs_status_t,
                               uct_uccl_iface_event_arm(tl_iface, events));
}

/* The user's progress call: first what the background passes left for UCX,
 * then the engine. A user who calls progress is awake (an event arm comes
 * before a sleep); one who calls it rarely leaves the CQs armed for its
 * peers' requests (uccl_wake.c). */
static unsigned uct_uccl_async_iface_progress(uct_iface_h tl_iface)
{
    uct_uccl_iface_t *iface    = ucs_derived_of(tl_iface, uct_uccl_iface_t);
    ucs_async_context_t *async = uct_uccl_async_ctx(tl_iface);
    uct_uccl_thread_t *thread  = &uct_uccl_thread;
    unsigned count;

    /* opaque to the compiler, which would otherwise compute the address
     * again (another __tls_get_addr) instead of keeping it */
    __asm__("" : "+r"(thread));
    UCS_ASYNC_BLOCK(async);
    iface->event.armed = 0;
    count  = iface->async.deferred;
    count += uct_uccl_iface_engine_progress(iface);
    uct_uccl_wake_user_back(iface, thread);
    /* what the background passes and this run left for UCX: the engine
     * calls no user callback itself, so they may destroy anything */
    while (ucs_unlikely(iface->async.deferred > 0)) {
        uct_uccl_async_dispatch(iface);
    }
    uct_uccl_wake_user_leaves(iface, thread, count);
    UCS_ASYNC_UNBLOCK(async);
    return count;
}

uct_iface_ops_t uct_uccl_iface_tl_ops = {
    .ep_put_short             = uct_uccl_async_ep_put_short,
    .ep_put_bcopy             = uct_uccl_async_ep_put_bcopy,
    .ep_put_zcopy             = uct_uccl_async_ep_put_zcopy,
    .ep_get_bcopy             = uct_uccl_async_ep_get_bcopy,
    .ep_get_zcopy             = uct_uccl_async_ep_get_zcopy,
    .ep_am_short              = uct_uccl_async_ep_am_short,
    .ep_am_short_iov          = uct_base_ep_am_short_iov,
    .ep_am_bcopy              = uct_uccl_async_ep_am_bcopy,
    .ep_am_zcopy              = uct_uccl_async_ep_am_zcopy,
    .ep_pending_add           = uct_uccl_async_ep_pending_add,
    .ep_pending_purge         = uct_uccl_async_ep_pending_purge,
    .ep_flush                 = uct_uccl_async_ep_flush,
    .ep_fence                 = uct_uccl_async_ep_fence,
    .ep_check                 = uct_uccl_async_ep_check_alive,
    .ep_create                = uct_uccl_async_ep_create,
    .ep_destroy               = uct_uccl_async_ep_destroy,
    .iface_flush              = uct_uccl_async_iface_flush,
    .iface_fence              = uct_uccl_async_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_uccl_async_iface_progress,
    .iface_event_fd_get       = uct_uccl_iface_event_fd_get,
    .iface_event_arm          = uct_uccl_async_iface_event_arm,
    .iface_close              = uct_uccl_iface_close,
    .iface_query              = uct_uccl_iface_query,
    .iface_get_device_address = uct_uccl_iface_get_device_address,
    .iface_get_address        = uct_uccl_iface_get_address,
    .iface_is_reachable       = uct_uccl_iface_is_reachable
};

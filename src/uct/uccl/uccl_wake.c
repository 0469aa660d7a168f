/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Peers served at once while the user computes. In UC mode our CPU does
 * what a NIC would: it serves a peer's GETs and ACKs its chunks. The
 * background pass (uccl_async.c) runs only once per ASYNC_IDLE, so a user
 * who calls progress rarely would keep a peer's GET waiting for that long.
 * While the user is away (out of the transport for UCT_UCCL_WAKE_AWAY_NS
 * between two progress calls with no operation between them, or for that
 * long since its last call), the receive and control CQs are therefore
 * armed for solicited completions, and every WR a peer must act on ends
 * its chain solicited (uccl_post.c, uccl_io.c): its arrival wakes the
 * async thread on the completion channel, and the thread runs a pass at
 * once. A user who spins in progress or keeps calling operations arms
 * nothing, and its peers' solicited WRs cost nothing.
 *
 * The channel is also what the user's event fd watches (uccl_event.c).
 * While the user sleeps on it, its CQs are armed for every completion and
 * the user wakes for them itself: the thread leaves them alone.
 */
#include "uccl_tx.h"

#include <ucs/async/async.h>
#include <ucs/debug/log.h>
#include <uct/base/uct_worker.h>


/* Arm the CQs for a peer's solicited WR, unless the user's own arm (every
 * completion) is in place. Notifications of an earlier arm are taken
 * first: softverbs fires at once for completions already queued. */
void uct_uccl_wake_arm(uct_uccl_iface_t *iface)
{
    if ((iface->async.wake_id < 0) || iface->event.armed) {
        return;
    }
    uct_uccl_event_drain_cqs(iface);
    (void)uct_uccl_event_req_notify(iface, 1);
    ++iface->stats.async_arms;
}

/* The user stays out of the transport for long (it calls progress rarely
 * and nothing else), or has been out for a while */
int uct_uccl_wake_user_away(const uct_uccl_iface_t *iface, uint64_t now)
{
    return (iface->async.user_gap >= UCT_UCCL_WAKE_AWAY_NS) ||
           ((now - iface->async.user_exit) >= UCT_UCCL_WAKE_AWAY_NS);
}

/* What the user's thread did inside uccl, over all its ifaces: a user
 * who progresses another iface (one that copies a megabyte, say) or calls
 * an operation is busy with the transport, not away from it */
__thread uct_uccl_thread_t uct_uccl_thread;

/* A solicited completion (or one the user armed for) woke the async
 * thread: run a pass unless the user is inside the transport, whose
 * progress call then does the work. Armed again only while the user is
 * away: a user who is back spinning serves its peers itself. */
static void uct_uccl_wake_handler(int fd, ucs_event_set_types_t events,
                                  void *arg)
{
    uct_uccl_iface_t *iface    = arg;
    ucs_async_context_t *async = iface->super.worker->async;

    if (!uct_uccl_glue_async_try_block(async)) {
        return;
    }
    if (!iface->event.armed) {
        uct_uccl_event_drain_cqs(iface);
        ++iface->stats.async_wakes;
        uct_uccl_async_run(iface);
        if (uct_uccl_wake_user_away(iface, uct_uccl_now_ns())) {
            uct_uccl_wake_arm(iface);
        }
    }
    UCS_ASYNC_UNBLOCK(async);
}

/* The completion channel on the async thread's epoll, edge triggered (the
 * handler takes its notifications). The caller's async context is the
 * thread-spinlock one, whose lock the handler can try without blocking
 * its thread. */
ucs_status_t uct_uccl_wake_init(uct_uccl_iface_t *iface,
                                ucs_async_context_t *async)
{
    int fd = iface->event.chan->fd;
    ucs_status_t status;

    ucs_assert(async->mode == UCS_ASYNC_MODE_THREAD_SPINLOCK);
    status = ucs_async_set_event_handler(async->mode, fd,
                                         UCS_EVENT_SET_EVREAD |
                                         UCS_EVENT_SET_EDGE_TRIGGERED,
                                         uct_uccl_wake_handler, iface, NULL);
    if (status != UCS_OK) {
        ucs_error("uccl: cannot watch the completion channel: %s",
                  ucs_status_string(status));
        return status;
    }
    iface->async.wake_id = fd; /* an fd handler's id is the fd */
    return UCS_OK;
}

void uct_uccl_wake_cleanup(uct_uccl_iface_t *iface)
{
    if (iface->async.wake_id >= 0) {
        /* waits for a handler in flight */
        ucs_async_remove_handler(iface->async.wake_id, 1);
        iface->async.wake_id = -1;
    }
}

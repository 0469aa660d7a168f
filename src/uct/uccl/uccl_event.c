/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * UCT events: a user (a UCP worker created with UCP_FEATURE_WAKEUP) may
 * sleep in epoll instead of calling progress. The iface's event fd is an
 * epoll set of three sources, each of which means "call progress":
 *
 *  - the completion channel of the send, receive and control CQs (armed
 *    with ibv_req_notify_cq): packets or completions arrived;
 *  - an eventfd the background pass (uccl_async.c) writes when it left AMs,
 *    completions or ep errors for UCX while the user slept;
 *  - a one-shot timerfd, set while data is unacknowledged or a connection
 *    or keepalive is in progress: the engine's timers (resends, retries,
 *    peer timeouts) must run although no packet arrives; and for the
 *    credit pacer's next grant while a peer's sender waits for one.
 *
 * Arming returns UCS_ERR_BUSY while there is work a progress call would do
 * right away; such work never waits for an event.
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define UCT_UCCL_EVENT_TIMER_MIN_NS  50000ull  /* engine timer granularity */


static ucs_status_t uct_uccl_event_watch(int epfd, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        ucs_error("uccl: epoll_ctl(ADD %d): %m", fd);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

static ucs_status_t uct_uccl_event_set_nonblock(int fd)
{
    int flags = fcntl(fd, F_GETFL);

    if ((flags < 0) || (fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)) {
        ucs_error("uccl: cannot make fd %d non-blocking: %m", fd);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t uct_uccl_event_init(uct_uccl_iface_t *iface)
{
    ucs_status_t status;

    iface->event.epfd     = -1;
    iface->event.wake_fd  = -1;
    iface->event.timer_fd = -1;
    iface->event.armed    = 0;

    iface->event.chan = ibv_create_comp_channel(iface->md->ctx);
    if (iface->event.chan == NULL) {
        ucs_error("uccl: cannot create a completion channel: %m");
        return UCS_ERR_IO_ERROR;
    }
    status = uct_uccl_event_set_nonblock(iface->event.chan->fd);
    if (status != UCS_OK) {
        goto err;
    }

    iface->event.epfd     = epoll_create1(EPOLL_CLOEXEC);
    iface->event.wake_fd  = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    iface->event.timer_fd = timerfd_create(CLOCK_MONOTONIC,
                                           TFD_NONBLOCK | TFD_CLOEXEC);
    if ((iface->event.epfd < 0) || (iface->event.wake_fd < 0) ||
        (iface->event.timer_fd < 0)) {
        ucs_error("uccl: cannot create the event fds: %m");
        status = UCS_ERR_IO_ERROR;
        goto err;
    }

    status = uct_uccl_event_watch(iface->event.epfd, iface->event.chan->fd);
    if (status == UCS_OK) {
        status = uct_uccl_event_watch(iface->event.epfd,
                                      iface->event.wake_fd);
    }
    if (status == UCS_OK) {
        status = uct_uccl_event_watch(iface->event.epfd,
                                      iface->event.timer_fd);
    }
    if (status != UCS_OK) {
        goto err;
    }
    return UCS_OK;

err:
    uct_uccl_event_cleanup(iface);
    return status;
}

/* After the CQs that use the channel are destroyed */
void uct_uccl_event_cleanup(uct_uccl_iface_t *iface)
{
    int *fds[] = {&iface->event.epfd, &iface->event.wake_fd,
                  &iface->event.timer_fd};
    unsigned i;

    for (i = 0; i < ucs_static_array_size(fds); ++i) {
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
    }
    if (iface->event.chan != NULL) {
        ibv_destroy_comp_channel(iface->event.chan);
        iface->event.chan = NULL;
    }
}

/* The background pass left something for the user's next progress call */
void uct_uccl_event_signal(uct_uccl_iface_t *iface)
{
    uint64_t one = 1;

    if (!iface->event.armed) {
        return;
    }
    iface->event.armed = 0;
    if ((write(iface->event.wake_fd, &one, sizeof(one)) < 0) &&
        (errno != EAGAIN)) {
        ucs_debug("uccl: event fd write: %m");
    }
}

/* Takes the completion channel's notifications; returns how many */
unsigned uct_uccl_event_drain_cqs(uct_uccl_iface_t *iface)
{
    unsigned count = 0;
    struct ibv_cq *cq;
    void *cq_ctx;

    while (ibv_get_cq_event(iface->event.chan, &cq, &cq_ctx) == 0) {
        ibv_ack_cq_events(cq, 1);
        ++count;
    }
    return count;
}

/* Asks the channel for the next completion on every CQ, or (solicited) for
 * a solicited one on the CQs a peer's packets complete on */
ucs_status_t uct_uccl_event_req_notify(uct_uccl_iface_t *iface, int solicited)
{
    struct ibv_cq *cqs[] = {iface->recv_cq, iface->ctl.cq, iface->send_cq};
    unsigned n           = solicited ? 2 : ucs_static_array_size(cqs);
    unsigned i;

    for (i = 0; i < n; ++i) {
        if (ibv_req_notify_cq(cqs[i], solicited) != 0) {
            ucs_error("uccl: ibv_req_notify_cq: %m");
            return UCS_ERR_IO_ERROR;
        }
    }
    return UCS_OK;
}

/* Takes what woke the fd; returns how many notifications there were */
static unsigned uct_uccl_event_drain(uct_uccl_iface_t *iface)
{
    unsigned count = uct_uccl_event_drain_cqs(iface);
    uint64_t value;

    if (read(iface->event.wake_fd, &value, sizeof(value)) == sizeof(value)) {
        ++count;
    }
    if (read(iface->event.timer_fd, &value, sizeof(value)) == sizeof(value)) {
        ++count;
    }
    return count;
}

/* Engine timers that must run although no packet may arrive: a conn
 * connecting, probing its peer or not flushed (data queued or in flight,
 * an operation awaiting its peer, a GET's GET_DONE say). Such a conn has
 * work for its timers, so it is on their active list (uccl_conn_live.c):
 * the conns that sleep do not count. */
static int uct_uccl_event_timers_due(uct_uccl_iface_t *iface)
{
    uct_uccl_conn_t *conn;

    ucs_list_for_each(conn, &iface->timers.active, timer_link) {
        if ((conn->state == UCT_UCCL_CONN_CONNECTING) ||
            (conn->ka_start != 0) || !uct_uccl_tx_is_flushed(conn)) {
            return 1;
        }
    }
    return 0;
}

/* ns until the engine must run although no packet may arrive; 0: never */
static uint64_t uct_uccl_event_timer_ns(uct_uccl_iface_t *iface)
{
    uint64_t ns    = uct_uccl_event_timers_due(iface) ?
                     ucs_max(iface->config.rto.min_ns,
                             UCT_UCCL_EVENT_TIMER_MIN_NS) : 0;
    uint64_t grant = uct_uccl_credit_next_ns(iface);
    uint64_t now;

    if (grant != 0) {
        now   = uct_uccl_now_ns();
        grant = (grant > now) ? grant - now : 1; /* 0 would disarm */
        ns    = (ns == 0) ? grant : ucs_min(ns, grant);
    }
    return ns;
}

static ucs_status_t uct_uccl_event_arm_timer(uct_uccl_iface_t *iface,
                                             uint64_t ns)
{
    struct itimerspec its = {
        .it_value.tv_sec  = ns / UCS_NSEC_PER_SEC,
        .it_value.tv_nsec = ns % UCS_NSEC_PER_SEC
    };

    if (timerfd_settime(iface->event.timer_fd, 0, &its, NULL) != 0) {
        ucs_error("uccl: timerfd_settime: %m");
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t uct_uccl_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    uct_uccl_iface_t *iface = ucs_derived_of(tl_iface, uct_uccl_iface_t);

    *fd_p = iface->event.epfd;
    return UCS_OK;
}

/* Every kind of event is armed alike: any of them means "call progress" */
ucs_status_t uct_uccl_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    uct_uccl_iface_t *iface = ucs_derived_of(tl_iface, uct_uccl_iface_t);
    uint64_t ns;

    iface->event.armed = 0;
    if ((uct_uccl_event_drain(iface) > 0) || (iface->async.deferred > 0) ||
        !ucs_list_is_empty(&iface->ack_list) ||
        !ucs_list_is_empty(&iface->acks_in) ||
        !ucs_arbiter_is_empty(&iface->tx_arb)) {
        return UCS_ERR_BUSY;
    }

    /* softverbs fires the channel at once for a completion already queued;
     * a NIC that does not is covered by the timer below and the
     * background pass */
    if (uct_uccl_event_req_notify(iface, 0) != UCS_OK) {
        return UCS_ERR_IO_ERROR;
    }

    ns = uct_uccl_event_timer_ns(iface);
    if ((ns != 0) && (uct_uccl_event_arm_timer(iface, ns) != UCS_OK)) {
        return UCS_ERR_IO_ERROR;
    }
    iface->event.armed = 1;
    return UCS_OK;
}

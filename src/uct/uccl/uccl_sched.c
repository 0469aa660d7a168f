/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The transmit scheduler. Conns with work take turns on the iface's
 * ucs_arbiter, each in a group of its own (as UCX's transports keep one per
 * ep). In its turn a conn posts up to DRR_QUANTUM, its pending requests run
 * while its queue has room, and what they queued goes out; then it goes to
 * the back. A conn held by its pacing leaves until its timer, one refused
 * for its peer's receive window until its turn there comes; when the send
 * CQ is full the pass stops, and the next one starts with the conn that
 * was refused.
 *
 * Our conns to one peer iface (a dest) share its receive window: together
 * they keep at most that many chunks in flight, so its shared receive
 * queue does not run dry (UC would drop, RC wait out RNR retries) however
 * many eps lead there. While none was refused room there, any conn takes
 * what the window has left. Once one was, the conns refused queue up in
 * the order they were refused and take turns: the first claims its share
 * of the window beside those contending with it (at least
 * DEST_QUOTA_MIN chunks, a chain worth a doorbell), keeping its turn while
 * it waits for room to claim it; then it goes to the back if it wants
 * more. Whichever conn's chunks come back, the room goes in turn, so the
 * conns sharing a peer send alike however bursty the room comes back.
 */
#include "uccl_tx.h"

#include <string.h>


static uct_uccl_dest_key_t uct_uccl_dest_key(const uct_uccl_conn_t *conn)
{
    uct_uccl_dest_key_t key;

    memset(&key, 0, sizeof(key));  /* no padding bytes left undefined */
    memcpy(key.gid, conn->remote_dev.gid, sizeof(key.gid));
    key.ctl_qpn = conn->remote_ctl_qpn;
    key.lid     = conn->remote_dev.lid;
    return key;
}

static void uct_uccl_dest_enqueue(uct_uccl_dest_t *dest,
                                  uct_uccl_conn_t *conn)
{
    ucs_list_add_tail(&dest->waiters, &conn->dest_link);
    conn->dest_waiting = 1;
    ++dest->contenders;
}

/* The first waiter gets the turn, with its share of the window beside the
 * conns that contend with it */
void uct_uccl_dest_wake(uct_uccl_iface_t *iface, uct_uccl_dest_t *dest)
{
    uct_uccl_conn_t *conn = dest->turn;

    if (dest->room <= 0) {
        return;
    }
    if (conn == NULL) {
        if (ucs_list_is_empty(&dest->waiters)) {
            return;
        }
        conn = ucs_list_extract_head(&dest->waiters, uct_uccl_conn_t,
                                     dest_link);
        conn->dest_waiting = 0;
        dest->turn         = conn;
        dest->claimed      = 0;
        dest->quota        = ucs_min(ucs_max(dest->window / dest->contenders,
                                             UCT_UCCL_DEST_QUOTA_MIN),
                                     dest->window);
    }
    uct_uccl_iface_sched_add(iface, conn);
}

uint32_t uct_uccl_dest_room_turn(uct_uccl_conn_t *conn)
{
    const uct_uccl_dest_t *dest = conn->dest;

    /* not from an operation outside progress: the conn's scheduler turn
     * is still to come */
    if ((dest->turn != conn) || (conn != conn->iface->sched_current) ||
        (dest->room <= 0) || (dest->claimed >= dest->quota)) {
        return 0;
    }
    return ucs_min((uint32_t)dest->room, dest->quota - dest->claimed);
}

void uct_uccl_dest_refused(uct_uccl_conn_t *conn)
{
    uct_uccl_dest_t *dest = conn->dest;

    if (dest->turn != conn) {
        if (!conn->dest_waiting) {
            uct_uccl_dest_enqueue(dest, conn);
        }
    } else if (conn == conn->iface->sched_current) {
        /* else its turn goes on until room comes */
        conn->dest_quota_used = (dest->claimed >= dest->quota);
    }
}

/* The scheduler turn of conn ended. Its dest turn goes on while it waits
 * for room to claim its quota; it ends when the quota is used (the conn
 * waits again, behind the others, if it wants more) or the conn stopped
 * for reasons of its own. */
static void uct_uccl_dest_turn_end(uct_uccl_conn_t *conn)
{
    uct_uccl_dest_t *dest = conn->dest;

    if ((dest->turn == conn) &&
        (conn->dest_quota_used || (conn->tx_queued == 0) ||
         (dest->room > 0))) {
        dest->turn = NULL;
        --dest->contenders;
        if (conn->dest_quota_used && (conn->tx_queued > 0)) {
            uct_uccl_dest_enqueue(dest, conn);
        }
    }
    conn->dest_quota_used = 0;
    uct_uccl_dest_wake(conn->iface, dest);
}

ucs_status_t uct_uccl_dest_attach(uct_uccl_conn_t *conn, uint32_t window)
{
    uct_uccl_iface_t *iface = conn->iface;
    uct_uccl_dest_t *dest;
    khiter_t it;
    int ret;

    uct_uccl_dest_detach(conn);
    it = kh_put(uct_uccl_dests, &iface->dests, uct_uccl_dest_key(conn), &ret);
    if (ret < 0) {
        return UCS_ERR_NO_MEMORY;
    }
    if (ret == 0) {
        dest = kh_val(&iface->dests, it);
    } else {
        dest = ucs_calloc(1, sizeof(*dest), "uccl_dest");
        if (dest == NULL) {
            kh_del(uct_uccl_dests, &iface->dests, it);
            return UCS_ERR_NO_MEMORY;
        }
        dest->key = kh_key(&iface->dests, it);
        ucs_list_head_init(&dest->waiters);
        kh_val(&iface->dests, it) = dest;
    }

    /* every conn to it hears the same window; the newest word holds */
    window              = ucs_min(ucs_max(window, 1), INT32_MAX);
    dest->room         += (int32_t)(window - dest->window);
    dest->window        = window;
    conn->dest          = dest;
    conn->dest_counted  = 0;
    ++dest->nconns;
    uct_uccl_dest_sync(conn);
    return UCS_OK;
}

void uct_uccl_dest_detach(uct_uccl_conn_t *conn)
{
    uct_uccl_iface_t *iface = conn->iface;
    uct_uccl_dest_t *dest   = conn->dest;
    khiter_t it;

    if (dest == NULL) {
        return;
    }
    if (conn->dest_waiting) {
        ucs_list_del(&conn->dest_link);
        conn->dest_waiting = 0;
        --dest->contenders;
    }
    if (dest->turn == conn) {
        dest->turn = NULL;
        --dest->contenders;
    }
    dest->room += (int32_t)conn->dest_counted;
    conn->dest  = NULL;
    if (--dest->nconns > 0) {
        uct_uccl_dest_wake(iface, dest);
        return;
    }

    ucs_assert(dest->contenders == 0);
    it = kh_get(uct_uccl_dests, &iface->dests, dest->key);
    ucs_assert(it != kh_end(&iface->dests));
    kh_del(uct_uccl_dests, &iface->dests, it);
    ucs_free(dest);
}


void uct_uccl_iface_sched_add(uct_uccl_iface_t *iface, uct_uccl_conn_t *conn)
{
    /* a conn in its turn is placed when the turn ends (what woke it may
     * have opened its window); one not connected is added when it
     * connects */
    if (conn == iface->sched_current) {
        conn->tx_shut = 0;
        return;
    }
    if (conn->dest == NULL) {
        return;
    }
    ucs_arbiter_group_push_elem(&conn->sched_group, &conn->sched);
    ucs_arbiter_group_schedule(&iface->tx_arb, &conn->sched_group);
    uct_uccl_conn_timer_wake(conn); /* it stays while scheduled */
}

/* Where a conn goes after its turn, in which it posted `sent` chunks */
static ucs_arbiter_cb_result_t
uct_uccl_sched_after_turn(uct_uccl_conn_t *conn, unsigned sent)
{
    uct_uccl_iface_t *iface = conn->iface;

    if (conn->state != UCT_UCCL_CONN_CONNECTED) {
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM; /* connecting adds it */
    }
    if (conn->tx_queued == 0) {
        /* in a background pass, requests it may not call wait for the
         * user's next progress call */
        return (ucs_unlikely(iface->async.active) &&
                !ucs_queue_is_empty(&conn->pending_q)) ?
               UCS_ARBITER_CB_RESULT_RESCHED_GROUP :
               UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    }
    if (conn->dest->turn == conn) {
        /* its turn goes on: now if room came, else when it comes */
        return (conn->dest->room > 0) ? UCS_ARBITER_CB_RESULT_NEXT_GROUP :
                                        UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    }
    /* what it waits for brings it back: the dest's room, the pacing
     * timer, or the ACK, credit or completion that opens its window (and
     * the conn's timer, uct_uccl_tx_timers, should any be missed) */
    if (conn->dest_waiting || uct_uccl_conn_is_paced(conn) || conn->tx_shut) {
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    }
    if ((sent == 0) && (iface->tx_outstanding >= iface->config.cq_size)) {
        return UCS_ARBITER_CB_RESULT_STOP;
    }
    return UCS_ARBITER_CB_RESULT_RESCHED_GROUP;
}

static ucs_arbiter_cb_result_t
uct_uccl_sched_turn(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                    ucs_arbiter_elem_t *elem, void *arg)
{
    uct_uccl_conn_t *conn   = ucs_container_of(elem, uct_uccl_conn_t, sched);
    uct_uccl_iface_t *iface = conn->iface;
    unsigned *count         = arg;
    unsigned sent;

    iface->sched_current = conn;
    sent = uct_uccl_tx_pump(conn, iface->config.drr_quantum);
    uct_uccl_ep_dispatch_pending(conn);
    /* what the pending requests queued goes out now, not on the next
     * progress call, unless the window holds the queue */
    if ((conn->tx_queued > 0) && !conn->tx_shut) {
        sent += uct_uccl_tx_pump(conn, iface->config.drr_quantum);
    }
    *count += sent;

    if (conn->dest != NULL) {
        uct_uccl_dest_turn_end(conn);
    }
    iface->sched_current = NULL;
    return uct_uccl_sched_after_turn(conn, sent);
}

unsigned uct_uccl_sched_transmit(uct_uccl_iface_t *iface)
{
    unsigned count = 0;

    ucs_arbiter_dispatch(&iface->tx_arb, 1, uct_uccl_sched_turn, &count);
    return count;
}


void uct_uccl_sched_conn_init(uct_uccl_conn_t *conn)
{
    ucs_arbiter_group_init(&conn->sched_group);
    ucs_arbiter_elem_init(&conn->sched);
    conn->dest         = NULL;
    conn->dest_waiting = 0;
    conn->dest_quota_used = 0;
}

static ucs_arbiter_cb_result_t
uct_uccl_sched_remove(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                      ucs_arbiter_elem_t *elem, void *arg)
{
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}

void uct_uccl_sched_conn_cleanup(uct_uccl_conn_t *conn)
{
    ucs_arbiter_group_purge(&conn->iface->tx_arb, &conn->sched_group,
                            uct_uccl_sched_remove, NULL);
    ucs_arbiter_group_cleanup(&conn->sched_group);
    uct_uccl_dest_detach(conn);
}

void uct_uccl_sched_init(uct_uccl_iface_t *iface)
{
    ucs_arbiter_init(&iface->tx_arb);
    kh_init_inplace(uct_uccl_dests, &iface->dests);
    iface->sched_current = NULL;
}

/* After every conn was destroyed */
void uct_uccl_sched_cleanup(uct_uccl_iface_t *iface)
{
    ucs_assert(kh_size(&iface->dests) == 0);
    kh_destroy_inplace(uct_uccl_dests, &iface->dests);
    ucs_arbiter_cleanup(&iface->tx_arb);
}

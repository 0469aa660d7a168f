/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Receive side: a completion's QP number finds (conn, path), its immediate
 * names the chunk. UC mode records every CSN in the SACK state (a duplicate
 * is dropped before its data is used) and owes the sender an ACK, which
 * goes out with the others (uccl_ack.c). Active messages reach UCX in their
 * sending order.
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <ucs/datastruct/mpool.inl>
#include <string.h>


void uct_uccl_rx_refill(uct_uccl_iface_t *iface)
{
    struct ibv_recv_wr *bad_wr, *last, *rest;
    uct_uccl_rx_desc_t *desc;
    unsigned i, n;
    int ret;

    if (ucs_unlikely(iface->srq_posted == 0)) {
        /* the SRQ ran dry: UC drops, RC waits for receiver-not-ready */
        ++iface->stats.srq_empty;
    }

    while (uct_uccl_rx_srq_wants(iface)) {
        n = ucs_min(UCT_UCCL_SRQ_BATCH,
                    iface->config.srq_size - iface->srq_posted);
        for (i = 0; i < n; ++i) {
            desc = ucs_mpool_get_inline(&iface->rx_mp);
            if (desc == NULL) {
                ++iface->stats.rx_no_desc;
                break;
            }
            iface->srq_sges[i].addr = (uintptr_t)uct_uccl_rx_data(desc);
            iface->srq_sges[i].lkey = desc->lkey;
            iface->srq_wrs[i].wr_id = (uintptr_t)desc;
        }
        if (i == 0) {
            return;
        }

        /* the chain ends at the last buffer named, for this post only */
        last       = &iface->srq_wrs[i - 1];
        rest       = last->next;
        last->next = NULL;
        ret        = ibv_post_srq_recv(iface->srq, iface->srq_wrs, &bad_wr);
        last->next = rest;
        if (ret != 0) {
            ucs_error("uccl: ibv_post_srq_recv(%u) failed: %s", i,
                      strerror(ret));
            for (; bad_wr != NULL; bad_wr = bad_wr->next) {
                ucs_mpool_put_inline((void*)bad_wr->wr_id);
                --i;
                if (bad_wr == last) {
                    break;
                }
            }
            iface->srq_posted += i;
            return;
        }
        iface->srq_posted += i;
        if (i < n) {
            return;
        }
    }
}

static void uct_uccl_rx_desc_put(uct_uccl_rx_desc_t *desc)
{
    ucs_mpool_put_inline(desc);
}

static void uct_uccl_rx_am_invoke(uct_uccl_iface_t *iface,
                                  uct_uccl_rx_desc_t *desc)
{
    const uct_uccl_am_hdr_t *hdr = (const void*)uct_uccl_rx_data(desc);

    (void)uct_iface_invoke_am(&iface->super, hdr->am_id, (void*)(hdr + 1),
                              hdr->length, 0);
}

/* A background pass calls the handlers registered with UCT_CB_FLAG_ASYNC
 * (UCX promises them to be called without progress: UCP's wireup handler is
 * one); any other AM waits for the user's next progress call, and so does
 * an async one behind it: AMs are handled in order. */
static UCS_F_ALWAYS_INLINE void
uct_uccl_rx_am_deliver(uct_uccl_iface_t *iface, uct_uccl_rx_desc_t *desc)
{
    const uct_uccl_am_hdr_t *hdr = (const void*)uct_uccl_rx_data(desc);

    /* a background pass calls a handler UCX registered as async at once
     * (nothing else waits before it); all others run when the user's
     * progress call has run the engine, in order */
    if (ucs_unlikely(iface->async.active) &&
        (iface->super.am[hdr->am_id].flags & UCT_CB_FLAG_ASYNC) &&
        ucs_queue_is_empty(&iface->async.ams)) {
        uct_uccl_rx_am_handle(iface, desc);
        return;
    }
    uct_uccl_async_defer_am(iface, desc);
}

/* The user's AM handler, then the receive buffer goes back */
void uct_uccl_rx_am_handle(uct_uccl_iface_t *iface, uct_uccl_rx_desc_t *desc)
{
    uct_uccl_rx_am_invoke(iface, desc);
    uct_uccl_rx_desc_put(desc);
}

/* An ordered message (AM, UC GET request) takes effect now */
static UCS_F_ALWAYS_INLINE void
uct_uccl_rx_ordered_deliver(uct_uccl_conn_t *conn, uct_uccl_rx_desc_t *desc)
{
    const uint8_t *type = uct_uccl_rx_data(desc);

    if (*type == UCT_UCCL_KIND_AM) {
        uct_uccl_rx_am_deliver(conn->iface, desc);
        return;
    }
    if (uct_uccl_get_serve(conn, uct_uccl_rx_data(desc)) != UCS_OK) {
        ++conn->iface->stats.bad_data;
    }
    uct_uccl_rx_desc_put(desc);
}

static void uct_uccl_rx_order_deliver_held(uct_uccl_conn_t *conn)
{
    uct_uccl_rx_desc_t *desc;

    while ((desc = uct_uccl_order_pop(&conn->order, conn->sack.cum)) != NULL) {
        --conn->iface->rx_held;
        uct_uccl_rx_ordered_deliver(conn, desc);
    }
}

/* The cumulative point moved: parked messages it passed go, in order (a
 * stream of PUT chunks parks none) */
static UCS_F_ALWAYS_INLINE void
uct_uccl_rx_order_release(uct_uccl_conn_t *conn)
{
    if (conn->order.held > 0) {
        uct_uccl_rx_order_deliver_held(conn);
    }
}

/* RC: an AM ahead of the next in line waits for it. It holds a receive
 * buffer meanwhile, so the parked ones are bounded as in UC; a gap that
 * outlasts them fails the conn, which cannot keep its order. */
static void uct_uccl_rx_rc_am_hold(uct_uccl_conn_t *conn,
                                   uct_uccl_rx_desc_t *desc, uint32_t csn)
{
    uct_uccl_iface_t *iface = conn->iface;
    uint32_t next           = uct_uccl_seq_add(conn->rc_am_csn, 1);

    if ((uct_uccl_seq_dist(csn, next) >= conn->order.size) ||
        (iface->rx_held >= iface->config.rx_held_max) ||
        (uct_uccl_order_hold(&conn->order, csn, next, desc) != UCS_OK)) {
        ucs_error("uccl: conn %u: AM %u cannot wait for AM %u", conn->id,
                  csn, next);
        uct_uccl_rx_desc_put(desc);
        uct_uccl_conn_fail(conn, UCS_ERR_IO_ERROR);
        return;
    }
    ++iface->rx_held;
    ++conn->stats.am_held;
}

/* RC: the next AM in line goes with those parked behind it, in order */
static void uct_uccl_rx_rc_ordered(uct_uccl_conn_t *conn,
                                   uct_uccl_rx_desc_t *desc, uint32_t csn)
{
    if (ucs_unlikely(csn != uct_uccl_seq_add(conn->rc_am_csn, 1))) {
        uct_uccl_rx_rc_am_hold(conn, desc, csn);
        return;
    }
    for (;;) {
        conn->rc_am_csn = csn;
        uct_uccl_rx_ordered_deliver(conn, desc);
        if (ucs_likely(conn->order.held == 0)) {
            return;
        }
        csn  = uct_uccl_seq_add(csn, 1);
        desc = uct_uccl_order_take(&conn->order, csn);
        if (desc == NULL) {
            return;
        }
        --conn->iface->rx_held;
    }
}

/* A new ordered message (CSN recorded): UC holds it until every chunk sent
 * before it arrived, so it sees what earlier PUTs wrote */
static void uct_uccl_rx_ordered(uct_uccl_conn_t *conn,
                                uct_uccl_rx_desc_t *desc, uint32_t csn)
{
    if (conn->rc) {
        uct_uccl_rx_rc_ordered(conn, desc, csn);
        return;
    }
    if (uct_uccl_order_ready(&conn->order, csn, conn->sack.cum)) {
        uct_uccl_rx_ordered_deliver(conn, desc);
        return;
    }
    if (uct_uccl_order_hold(&conn->order, csn, conn->sack.cum, desc) !=
        UCS_OK) {
        /* recorded and acknowledged: losing it would lose an AM */
        ucs_error("uccl: conn %u: cannot hold message %u for its order",
                  conn->id, csn);
        uct_uccl_rx_desc_put(desc);
        uct_uccl_conn_fail(conn, UCS_ERR_NO_MEMORY);
        return;
    }
    ++conn->iface->rx_held;
    ++conn->stats.am_held;
}

/* May a new ordered message be taken (recorded, acknowledged)? Not when
 * it would exceed what may wait for its order, AMs the user has not
 * picked up yet, or the GETs being served; the sender then sends it
 * again later. A GET request taken reserves its reply chunks. */
static int uct_uccl_rx_may_take(uct_uccl_conn_t *conn, const void *hdr,
                                uct_uccl_kind_t kind, uint32_t csn)
{
    uct_uccl_iface_t *iface = conn->iface;

    if ((uint32_t)uct_uccl_seq_diff(csn, conn->sack.cum) >=
        conn->sack.window) {
        ++iface->stats.out_of_window;  /* the SACK state would drop it */
        return 0;
    }
    if (!uct_uccl_order_may_take(&conn->order, csn, conn->sack.cum)) {
        ++iface->stats.order_full;
        return 0;
    }
    /* the iface's receive buffers are shared: what all conns park must
     * leave room for the message each of them waits for (that one, the
     * first missing, is taken anyway) */
    if ((iface->rx_held >= iface->config.rx_held_max) &&
        (csn != conn->sack.cum)) {
        ++iface->stats.order_full;
        return 0;
    }
    if ((kind == UCT_UCCL_KIND_AM) && iface->async.active &&
        (iface->async.deferred >= iface->config.rx_window)) {
        ++iface->stats.defer_full;
        return 0;
    }
    if ((kind == UCT_UCCL_KIND_GET_REQ) &&
        !uct_uccl_get_admit(conn, hdr, (csn == conn->sack.cum) &&
                                          (conn->order.held > 0))) {
        ++iface->stats.get_refused;
        return 0;
    }
    return 1;
}

/* A message was refused: tell the sender at once that we live (as a NIC's
 * receiver-not-ready), so that it resends later and does not take the
 * silence for a dead peer */
static void uct_uccl_rx_owe_busy(uct_uccl_conn_t *conn)
{
    conn->ack_busy = 1;
    uct_uccl_rx_ack_due_now(conn);
    uct_uccl_iface_ack_add(conn->iface, conn);
}

/* A resent WRITE chunk: copy it to its place if it is still missing and
 * the target is one of our regions (a resend without payload needs none) */
static int uct_uccl_rx_retx(uct_uccl_conn_t *conn, uct_uccl_rx_desc_t *desc,
                            uint32_t *csn_p)
{
    uct_uccl_iface_t *iface         = conn->iface;
    const uct_uccl_retx_hdr_t *retx = (const void*)uct_uccl_rx_data(desc);
    uint32_t csn                    = uct_uccl_imm_csn(retx->imm);
    uct_uccl_sack_result_t r;
    uct_uccl_kind_t kind;

    kind = uct_uccl_imm_kind(retx->imm);
    if ((uct_uccl_imm_check(retx->imm) != UCS_OK) ||
        ((kind != UCT_UCCL_KIND_PUT) && (kind != UCT_UCCL_KIND_GET_RESP))) {
        ++iface->stats.bad_data;
        return 0;
    }

    /* a late resend of a chunk we have: the target may be deregistered
     * by now, but the sender still needs the ACK */
    *csn_p = csn;
    if (uct_uccl_sack_has(&conn->sack, csn)) {
        ++conn->stats.dup_rx;
        return 1;
    }

    /* one without payload (obsolete, or an empty chain-end marker) writes
     * nothing: its target may be gone already, and dropping it unacked
     * would have the sender resend it until the conn fails */
    if ((retx->length > 0) &&
        !uct_uccl_md_rkey_check(iface->md, retx->rkey, retx->remote_addr,
                                retx->length, NULL)) {
        ++iface->stats.bad_rkey;
        ucs_debug("uccl: resent chunk for %p+%u with unknown key 0x%x",
                  (void*)retx->remote_addr, retx->length, retx->rkey);
        return 0;
    }

    r = uct_uccl_sack_record(&conn->sack, csn);
    if (r == UCT_UCCL_SACK_DUPLICATE) {
        ++conn->stats.dup_rx;
        return 1; /* still worth an ACK: the sender did not see ours */
    } else if (r == UCT_UCCL_SACK_OUT_OF_WINDOW) {
        ++iface->stats.out_of_window;
        return 0;
    }

    if (retx->length > 0) { /* an empty one may name no address */
        memcpy((void*)retx->remote_addr, retx + 1, retx->length);
    }
    ++conn->stats.chunks_rx;
    return 1;
}

/* The sender must hear of this arrival: soon (ACK_DELAY, coalescing), or at
 * once after ACK_EVERY chunks, a duplicate (our ACK was lost) or the last
 * chunk of a PUT or GET reply (the sender waits for it to complete the
 * operation or to release the GET source). Arrivals out of order are
 * normal when chunks are sprayed: they wait like others. An ACK owed only
 * for AMs in order is held for one engine pass: the user's reply (from its
 * AM handler, or once progress returned) carries it instead
 * (uct_uccl_rx_ack_piggyback), and a ping-pong sends no ACK packet. */
typedef enum {
    UCT_UCCL_ACK_SOON,      /* at the end of this pass, or ACK_DELAY */
    UCT_UCCL_ACK_NOW,       /* the sender waits for it */
    UCT_UCCL_ACK_REPLY      /* an AM: the user's reply may carry it */
} uct_uccl_ack_when_t;

static UCS_F_ALWAYS_INLINE void
uct_uccl_rx_owe_ack(uct_uccl_conn_t *conn, uint32_t csn, unsigned path,
                    uct_uccl_sack_result_t r, uct_uccl_ack_when_t when)
{
    uct_uccl_iface_t *iface = conn->iface;
    uint64_t now            = iface->rx_poll_ns; /* when it was seen */

    conn->echo_csn  = csn;
    conn->echo_path = path;
    conn->echo_time = now;
    conn->echo_since = uct_uccl_iface_rx_since(iface);
    if (ucs_unlikely(!conn->ack_pending)) {
        /* the peer sends only once connected: it knows our control QPs */
        conn->ctl_spread = 1;
        conn->ack_due    = now + iface->config.ack_delay_ns;
        conn->ack_hold   = (when == UCT_UCCL_ACK_REPLY) &&
                           (r == UCT_UCCL_SACK_IN_ORDER) &&
                           !iface->async.active;
        uct_uccl_iface_ack_add(iface, conn);
    }
    if ((++conn->rx_since_ack >= iface->config.ack_every) ||
        (r == UCT_UCCL_SACK_DUPLICATE) || (when == UCT_UCCL_ACK_NOW)) {
        uct_uccl_rx_ack_due_now(conn);
    }
}

/* The ACK conn holds, handled now (before a later one of the peer's);
 * dropped if the conn failed since */
void uct_uccl_rx_ack_in_flush(uct_uccl_conn_t *conn)
{
    if (!conn->ack_in_held) {
        return;
    }
    ucs_list_del(&conn->ack_in_link);
    conn->ack_in_held = 0;
    if (conn->state != UCT_UCCL_CONN_CONNECTED) {
        return;
    }
    uct_uccl_tx_handle_ack(conn, &conn->ack_in, conn->ack_in_cqe_ns,
                           conn->ack_in_seen_ns);
}

/* The ACKs AMs carried in the last pass, handled first in this one. An AM
 * is often the reply its user waits for (a ping-pong): the user sees it,
 * and sends again, before we release what the ACK acknowledges. */
unsigned uct_uccl_rx_acks_in(uct_uccl_iface_t *iface)
{
    unsigned count = 0;
    uct_uccl_conn_t *conn;

    while (!ucs_list_is_empty(&iface->acks_in)) {
        conn = ucs_list_head(&iface->acks_in, uct_uccl_conn_t, ack_in_link);
        uct_uccl_rx_ack_in_flush(conn);
        ++count;
    }
    return count;
}

/* The ACK an AM carried: as if it came alone, for the conn it names, which
 * must be one of ours to the same peer iface as `via` (the AM's conn);
 * held until the next pass, one per conn */
static void uct_uccl_rx_am_ack(uct_uccl_conn_t *via,
                               const uct_uccl_am_hdr_t *am)
{
    uct_uccl_iface_t *iface = via->iface;
    uct_uccl_conn_t *conn;
    uct_uccl_ack_t ack;

    uct_uccl_wire_am_ack(am, &ack);
    conn = uct_uccl_conn_sibling(via, ack.dst_conn_id, ack.token);
    if ((conn == NULL) || (conn->state != UCT_UCCL_CONN_CONNECTED) ||
        conn->rc) {
        return;
    }
    uct_uccl_rx_ack_in_flush(conn);
    conn->ack_in         = ack;
    conn->ack_in_cqe_ns  = uct_uccl_iface_rx_cqe_ns(iface);
    conn->ack_in_seen_ns = iface->rx_poll_ns;
    conn->ack_in_held    = 1;
    ucs_list_add_tail(&iface->acks_in, &conn->ack_in_link);
}

/* The connected conn a data QP's receive completion is for, and the path;
 * NULL (counted) for an error, an unknown or a dead QP, or no immediate */
static UCS_F_ALWAYS_INLINE uct_uccl_conn_t *
uct_uccl_rx_conn(uct_uccl_iface_t *iface, const struct ibv_wc *wc,
                 uct_uccl_qp_t **path_p)
{
    uct_uccl_qp_t *path;

    if (ucs_unlikely(wc->status != IBV_WC_SUCCESS)) {
        if (wc->status != IBV_WC_WR_FLUSH_ERR) {
            ++iface->stats.err_cqe;
            ucs_diag("uccl: receive completion error %s on qp 0x%x",
                      ibv_wc_status_str(wc->status), wc->qp_num);
        }
        return NULL;
    }

    path = uct_uccl_iface_qp_find(iface, wc->qp_num);
    if (ucs_unlikely(path == NULL)) {
        ++iface->stats.unknown_qpn;
        return NULL;
    }
    if (ucs_unlikely(path->conn == NULL)) {
        ++iface->stats.unknown_qpn;   /* a QP of a destroyed conn */
        return NULL;
    }
    if (ucs_unlikely((path->conn->state != UCT_UCCL_CONN_CONNECTED) ||
                     !(wc->wc_flags & IBV_WC_WITH_IMM))) {
        ++iface->stats.bad_data;
        return NULL;
    }
    *path_p = path;
    return path->conn;
}

/* A WRITE_WITH_IMM landed: the data is in place already; only the arrival
 * is news */
static UCS_F_ALWAYS_INLINE void
uct_uccl_rx_write_imm(uct_uccl_conn_t *conn, const uct_uccl_qp_t *path,
                      uint32_t imm)
{
    uct_uccl_kind_t kind = uct_uccl_imm_kind(imm);
    uint32_t csn         = uct_uccl_imm_csn(imm);
    uct_uccl_sack_result_t r;

    if ((kind != UCT_UCCL_KIND_PUT) && (kind != UCT_UCCL_KIND_GET_RESP)) {
        ++conn->iface->stats.bad_data;
        return;
    }
    if (conn->rc) {
        ++conn->stats.chunks_rx;
        return;
    }

    r = uct_uccl_sack_record(&conn->sack, csn);
    if (r == UCT_UCCL_SACK_OUT_OF_WINDOW) {
        ++conn->iface->stats.out_of_window;
        return;
    }
    conn->stats.dup_rx    += (r == UCT_UCCL_SACK_DUPLICATE);
    conn->stats.chunks_rx += (r != UCT_UCCL_SACK_DUPLICATE);
    uct_uccl_rx_owe_ack(conn, csn, path->index, r,
                        uct_uccl_imm_last(imm) ? UCT_UCCL_ACK_NOW :
                                                 UCT_UCCL_ACK_SOON);
    if (r == UCT_UCCL_SACK_IN_ORDER) {
        uct_uccl_rx_order_release(conn);
    }
}

/* RC: AMs come numbered without gaps. One the sender sent again after its
 * QP failed may arrive a second time (the first copy's ACK was lost, or
 * its late completion still came), and copies that took different QPs may
 * overtake each other: one handed over or parked already is dropped. The
 * ring is looked at only within its window: a number beyond would name
 * the slot of another, and goes on to fail the conn (rc_am_hold). */
static int uct_uccl_rx_rc_am_new(uct_uccl_conn_t *conn, uint32_t csn)
{
    uint32_t ahead = uct_uccl_seq_dist(csn,
                                       uct_uccl_seq_add(conn->rc_am_csn, 1));

    if (ucs_unlikely(!uct_uccl_seq_gt(csn, conn->rc_am_csn) ||
                     ((ahead < conn->order.size) &&
                      uct_uccl_order_has(&conn->order, csn)))) {
        ++conn->stats.dup_rx;
        return 0;
    }
    return 1;
}

/* UC: record a SEND's CSN (an ordered one only if it may be taken) and owe
 * its ACK; 0 if it is not to be handled (refused, outside the window or
 * a duplicate). RC: the NIC did all that. */
static int uct_uccl_rx_record(uct_uccl_conn_t *conn, const uct_uccl_qp_t *path,
                              const void *hdr, uct_uccl_kind_t kind,
                              uint32_t csn, uct_uccl_sack_result_t *r_p)
{
    int ordered = (kind == UCT_UCCL_KIND_AM) ||
                  (kind == UCT_UCCL_KIND_GET_REQ);

    *r_p = UCT_UCCL_SACK_IN_ORDER;
    if (conn->rc) {
        return (kind != UCT_UCCL_KIND_AM) || uct_uccl_rx_rc_am_new(conn, csn);
    }
    if (ordered && !uct_uccl_sack_has(&conn->sack, csn) &&
        !uct_uccl_rx_may_take(conn, hdr, kind, csn)) {
        uct_uccl_rx_owe_busy(conn); /* unrecorded: it comes again */
        return 0;
    }
    *r_p = uct_uccl_sack_record(&conn->sack, csn);
    if (*r_p == UCT_UCCL_SACK_OUT_OF_WINDOW) {
        ++conn->iface->stats.out_of_window;
        return 0;
    }
    uct_uccl_rx_owe_ack(conn, csn, path->index, *r_p,
                        (kind == UCT_UCCL_KIND_AM) ? UCT_UCCL_ACK_REPLY :
                                                     UCT_UCCL_ACK_SOON);
    if (*r_p == UCT_UCCL_SACK_DUPLICATE) {
        ++conn->stats.dup_rx;
        return 0;
    }
    return 1;
}

/* A new message in a SEND takes effect; 1 if it kept the receive buffer */
static int uct_uccl_rx_dispatch(uct_uccl_conn_t *conn, uct_uccl_rx_desc_t *desc,
                                uct_uccl_kind_t kind, uint32_t csn)
{
    const uct_uccl_get_done_t *done;

    /* RC reads with RDMA READ: no GET messages */
    if (conn->rc && (kind != UCT_UCCL_KIND_AM)) {
        ++conn->iface->stats.bad_data;
        return 0;
    }
    switch (kind) {
    case UCT_UCCL_KIND_AM:
    case UCT_UCCL_KIND_GET_REQ:
        uct_uccl_rx_ordered(conn, desc, csn);
        return 1;
    case UCT_UCCL_KIND_GET_DONE:
        done = (const void*)uct_uccl_rx_data(desc);
        uct_uccl_get_handle_done(conn, done->op_id, done->status);
        return 0;
    case UCT_UCCL_KIND_GET_DATA:
        uct_uccl_get_handle_data(conn, desc);
        return 1;
    default:
        ++conn->iface->stats.bad_data;
        return 0;
    }
}

/* A SEND (a message, a resend of a chunk, a GET's parts) arrived in desc;
 * its conn and immediate checked. 1 if it kept desc. */
static UCS_F_ALWAYS_INLINE int
uct_uccl_rx_send(uct_uccl_conn_t *conn, const uct_uccl_qp_t *path,
                 uct_uccl_rx_desc_t *desc, const struct ibv_wc *wc,
                 uint32_t imm)
{
    uct_uccl_kind_t kind = uct_uccl_imm_kind(imm);
    uint32_t csn         = uct_uccl_imm_csn(imm);
    uct_uccl_sack_result_t r;
    int kept;

    if (ucs_unlikely((wc->opcode != IBV_WC_RECV) ||
                     (uct_uccl_wire_data_check(uct_uccl_rx_data(desc),
                                               wc->byte_len, imm) !=
                      UCS_OK))) {
        ++conn->iface->stats.bad_data;
        return 0;
    }

    if ((kind == UCT_UCCL_KIND_AM) && !conn->rc &&
        (((const uct_uccl_am_hdr_t*)uct_uccl_rx_data(desc))->flags &
         UCT_UCCL_AM_F_ACK)) {
        uct_uccl_rx_am_ack(conn, uct_uccl_rx_data(desc));
    }
    if (kind == UCT_UCCL_KIND_RETX) {
        if (!conn->rc && uct_uccl_rx_retx(conn, desc, &csn)) {
            /* a resend means a loss: answer at once */
            uct_uccl_rx_owe_ack(conn, csn, path->index,
                                UCT_UCCL_SACK_DUPLICATE, UCT_UCCL_ACK_NOW);
            uct_uccl_rx_order_release(conn);
        }
        return 0;
    }

    if (!uct_uccl_rx_record(conn, path, uct_uccl_rx_data(desc), kind, csn,
                            &r)) {
        return 0;
    }
    ++conn->stats.chunks_rx;
    kept = uct_uccl_rx_dispatch(conn, desc, kind, csn);
    if ((r == UCT_UCCL_SACK_IN_ORDER) && !conn->rc) {
        uct_uccl_rx_order_release(conn);
    }
    return kept;
}

/* A data QP's receive completion, done inline in the poll's loop */
static UCS_F_ALWAYS_INLINE void
uct_uccl_rx_completion(uct_uccl_iface_t *iface, const struct ibv_wc *wc)
{
    uct_uccl_rx_desc_t *desc = (uct_uccl_rx_desc_t*)wc->wr_id;
    uct_uccl_conn_t *conn;
    uct_uccl_qp_t *path;
    uint32_t imm;

    --iface->srq_posted;
    conn = uct_uccl_rx_conn(iface, wc, &path);
    if (conn == NULL) {
        goto out_put;
    }
    /* what crossed the link, duplicates too (receiver-driven cc) */
    if (ucs_unlikely(iface->config.cc_rx_bytes)) {
        uct_uccl_cc_rx_on_data(&conn->cc, wc->byte_len, iface->rx_poll_ns);
    }

    imm = uct_uccl_imm_from_wire(wc->imm_data);
    if (ucs_unlikely(uct_uccl_imm_check(imm) != UCS_OK)) {
        ++iface->stats.bad_data;
        goto out_put;
    }
    if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        uct_uccl_rx_write_imm(conn, path, imm);
    } else if (uct_uccl_rx_send(conn, path, desc, wc, imm)) {
        return;
    }

out_put:
    uct_uccl_rx_desc_put(desc);
}

/* One poll's receive completions, in order (the control QP's among them);
 * ts[i] is the raw timestamp of wcs[i], or ts is NULL. A loop of its own:
 * a data QP's completion is handled inline, without a call per CQE. */
void uct_uccl_rx_completions(uct_uccl_iface_t *iface,
                             const struct ibv_wc *wcs, const uint64_t *ts,
                             int n)
{
    int i;

    for (i = 0; i < n; ++i) {
        if (ts != NULL) {
            iface->rx_tick = ts[i];
        }
        if (ucs_unlikely(wcs[i].qp_num == iface->ctl.qpn)) {
            uct_uccl_iface_ctl_recv(iface, &wcs[i]);
        } else {
            uct_uccl_rx_completion(iface, &wcs[i]);
        }
    }
}

static void uct_uccl_rx_desc_drop(void *arg, void *desc)
{
    uct_uccl_rx_desc_put(desc);
}

void uct_uccl_rx_conn_cleanup(uct_uccl_conn_t *conn)
{
    if (conn->order_valid) {
        conn->iface->rx_held -= conn->order.held;
        uct_uccl_order_drain(&conn->order, uct_uccl_rx_desc_drop, NULL);
    }
}

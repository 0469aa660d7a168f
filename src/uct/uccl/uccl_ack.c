/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The ACKs a receiver owes (uccl_rx.c records them): one record per conn
 * from its SACK state, carried by an AM to the same peer iface when one
 * goes (uct_uccl_rx_ack_piggyback), else coalesced at the end of the
 * engine's pass with the credit grants owed: the records for one peer
 * share a control SEND, all SENDs go out in one chain.
 */
#include "uccl_tx.h"

#include <string.h>


/* One ACK record of conn into `rec` (at most max_bytes). Every field is
 * set here (no SACK word beyond those packed: sack_words tells). */
static size_t uct_uccl_rx_ack_pack(uct_uccl_conn_t *conn, uct_uccl_ack_t *ack,
                                   size_t max_bytes, uint64_t now)
{
    unsigned words;
    uint64_t since;

    words = uct_uccl_sack_ack_pack(&conn->sack, ack,
                                   uct_uccl_wire_ack_max_words(max_bytes));
    uct_uccl_wire_hdr_init(&ack->hdr, UCT_UCCL_CTL_ACK,
                           uct_uccl_wire_ack_size(words));
    ack->dst_conn_id = conn->remote_id;
    ack->token       = conn->remote_token;
    ack->echo_csn    = conn->echo_csn;
    ack->echo_path   = conn->echo_path;
    ack->rx_delay_ns = ucs_min(now - conn->echo_time, UINT32_MAX);
    since            = uct_uccl_iface_rx_since_ns(conn->iface,
                                                  conn->echo_since,
                                                  conn->echo_time);
    ack->rx_wait_ns  = ucs_min(conn->echo_time - ucs_min(conn->echo_time,
                                                         since),
                               UINT32_MAX);
    ack->flags       = conn->ack_busy ? UCT_UCCL_ACK_F_BUSY : 0;
    ack->credit      = 0;
    conn->ack_busy   = 0;
    if (uct_uccl_cc_rx_driven(&conn->cc)) {
        /* the grant rides along: no CREDIT record needed */
        ack->credit  = uct_uccl_cc_rx_credit(&conn->cc, now);
        ack->flags  |= UCT_UCCL_ACK_F_CREDIT |
                       (uct_uccl_cc_rx_idle(&conn->cc) ? UCT_UCCL_ACK_F_IDLE :
                                                         0);
        uct_uccl_credit_paid(conn);
    }
    return ack->hdr.length;
}

/* conn owes no ACK any more */
static void uct_uccl_rx_ack_paid(uct_uccl_conn_t *conn)
{
    ucs_list_del(&conn->ack_link);
    conn->ack_pending  = 0;
    conn->ack_hold     = 0;
    conn->rx_since_ack = 0;
}

/* The AM conn sends carries an ACK owed to conn's peer iface (by conn or
 * by another of ours to that iface, which shares conn's dest: a reply
 * goes on our ep's conn, the request came on the peer's), in `dst` after
 * its payload, if that ACK needs no SACK words; 1 if it does, and then no
 * ACK packet goes. `now`: the caller's clock, or 0 to read it here. */
int uct_uccl_rx_ack_piggyback(uct_uccl_conn_t *conn, void *dst, uint64_t now)
{
    uct_uccl_conn_t *owing;
    uct_uccl_ack_t ack;

    if (conn->dest == NULL) {
        return 0;
    }
    ucs_list_for_each(owing, &conn->iface->ack_list, ack_link) {
        if ((owing->dest != conn->dest) ||
            (owing->state != UCT_UCCL_CONN_CONNECTED) || !owing->sack_valid ||
            uct_uccl_sack_has_holes(&owing->sack)) {
            continue;
        }
        (void)uct_uccl_rx_ack_pack(owing, &ack, sizeof(ack),
                                   (now != 0) ? now : uct_uccl_now_ns());
        memcpy(dst, &ack, sizeof(ack));
        uct_uccl_rx_ack_paid(owing);
        ++owing->stats.acks_piggy;
        return 1;
    }
    return 0;
}

/* Control records on their way out: those for the same peer share a SEND
 * (a batch), all SENDs go out in one chain */
typedef struct {
    struct ibv_ah           *ahs[UCT_UCCL_CTL_TX_DEPTH];
    uint32_t                qpns[UCT_UCCL_CTL_TX_DEPTH];
    unsigned                idx[UCT_UCCL_CTL_TX_DEPTH];
    size_t                  lens[UCT_UCCL_CTL_TX_DEPTH];
    uct_uccl_ack_batch_t    *batch;
    unsigned                count;
    int                     spread; /* every conn's peer knows our other
                                       control QPs */
} uct_uccl_rx_batcher_t;

/* Append a record of `len` bytes for conn's peer (copied from rec); 0 when
 * no control buffer is left (it goes on a later progress) */
static int uct_uccl_rx_batch_add(uct_uccl_iface_t *iface,
                                 uct_uccl_rx_batcher_t *b,
                                 uct_uccl_conn_t *conn, const void *rec,
                                 size_t len)
{
    void *dst = NULL;

    if ((b->count > 0) && (b->ahs[b->count - 1] == conn->ah) &&
        (b->qpns[b->count - 1] == conn->remote_ctl_qpn)) {
        dst = uct_uccl_wire_batch_add(b->batch, len, UCT_UCCL_WIRE_CTL_MAX);
    }
    if (dst == NULL) {
        if (b->count == UCT_UCCL_CTL_TX_DEPTH) {
            return 0;
        }
        b->batch = uct_uccl_iface_ctl_tx_buf(iface, &b->idx[b->count]);
        if (b->batch == NULL) {
            return 0;
        }
        uct_uccl_wire_batch_init(b->batch);
        b->ahs[b->count]  = conn->ah;
        b->qpns[b->count] = conn->remote_ctl_qpn;
        ++b->count;
        dst = uct_uccl_wire_batch_add(b->batch, len, UCT_UCCL_WIRE_CTL_MAX);
        ucs_assert(dst != NULL);
    }

    memcpy(dst, rec, len);
    b->spread &= conn->ctl_spread;
    b->lens[b->count - 1] = b->batch->hdr.length;
    return 1;
}

/* Every owed ACK that is due */
static unsigned uct_uccl_rx_batch_acks(uct_uccl_iface_t *iface,
                                       uct_uccl_rx_batcher_t *b, uint64_t now)
{
    uint64_t rec_buf[UCT_UCCL_WIRE_CTL_MAX / 8];
    uct_uccl_conn_t *conn, *tmp;
    unsigned acks = 0;
    size_t len;

    ucs_list_for_each_safe(conn, tmp, &iface->ack_list, ack_link) {
        if ((conn->state != UCT_UCCL_CONN_CONNECTED) || !conn->sack_valid) {
            ucs_list_del(&conn->ack_link);
            conn->ack_pending = 0;
            continue;
        }
        if (conn->ack_due > now) {
            continue; /* still coalescing */
        }
        if (conn->ack_hold && (conn->ack_due != 0) && !iface->async.active &&
            (conn->ack_hold_pass == iface->pass)) {
            continue; /* the next pass sends it, unless an AM carries it */
        }

        len = uct_uccl_rx_ack_pack(conn, (uct_uccl_ack_t*)rec_buf,
                                   UCT_UCCL_WIRE_CTL_MAX, now);
        if (!uct_uccl_rx_batch_add(iface, b, conn, rec_buf, len)) {
            break;
        }
        uct_uccl_rx_ack_paid(conn);
        ++conn->stats.acks_tx;
        ++acks;
    }
    return acks;
}

/* Every grant owed that no ACK carried */
static unsigned uct_uccl_rx_batch_credits(uct_uccl_iface_t *iface,
                                          uct_uccl_rx_batcher_t *b,
                                          uint64_t now)
{
    uct_uccl_conn_t *conn, *tmp;
    uct_uccl_credit_t rec;
    unsigned count = 0;

    ucs_list_for_each_safe(conn, tmp, &iface->credit.owed, credit.owed_link) {
        if (conn->state != UCT_UCCL_CONN_CONNECTED) {
            uct_uccl_credit_paid(conn);
            continue;
        }
        (void)uct_uccl_credit_pack(conn, &rec, NULL, now);
        if (!uct_uccl_rx_batch_add(iface, b, conn, &rec, sizeof(rec))) {
            break;
        }
        uct_uccl_credit_sent(conn, &rec);
        ++count;
    }
    return count;
}

/* Send every owed ACK and grant (the credit pacer grants first, so that
 * the ACKs carry what it granted) */
unsigned uct_uccl_rx_flush_acks(uct_uccl_iface_t *iface, uint64_t now)
{
    uct_uccl_rx_batcher_t b;
    unsigned count;

    b.count  = 0;
    b.batch  = NULL;
    b.spread = 1;
    uct_uccl_credit_tick(iface, now);
    count  = uct_uccl_rx_batch_acks(iface, &b, now);
    count += uct_uccl_rx_batch_credits(iface, &b, now);
    uct_uccl_iface_ctl_post(iface, uct_uccl_iface_ctl_qp(iface, b.spread),
                            b.ahs, b.qpns, b.idx, b.lens, b.count);
    /* what is left (coalescing, held, no buffer) is looked at next pass */
    iface->ack_pass = iface->pass + 1;
    return count;
}

/*
 * EQDS (Olteanu et al., NSDI 2022): receiver-driven credit.
 *
 * Sender. It may send only what its credit covers (UCT_UCCL_CC_F_STRICT):
 * speculative credit of about one BDP (derived, at least one chunk, so a
 * burst can start before its request is answered; given, as given: below
 * a chunk, bulk waits for its grants and only small messages go
 * unscheduled), plus what the receiver
 * grants; speculative credit is spent first. A request (uct_uccl_cc_
 * request_t) asks for `want`, the cumulative grant needed for everything
 * sent and queued (backlog capped at demand_cap), and tells `spec`, the
 * bytes sent or about to be sent on speculative credit. The receiver
 * answers with its cumulative grant. All are 32-bit serial numbers: a
 * lost, repeated or reordered one is harmless. A sender that has drained
 * (all acknowledged, nothing queued at its last request) gets speculative
 * credit back: as a new flow would until the peer grants, and once it
 * does at most RESPEC_BYTES (small messages go at once; a chunk waits
 * for its grant, since unscheduled bursts of several senders on top of
 * the grants the receiver counts overflow its port), or a window (alone,
 * at least the speculative credit) while the peer's latest grant said
 * that no other sender waits for its grants: a lone flow's next messages
 * wait for no grant, so a receiver whose CPU is elsewhere (descheduled)
 * holds them up no more than a window's ACKs would. A grant that says
 * others wait takes back what is left of it beyond the speculative
 * credit, so a stale hint costs at most what went before that grant
 * came. Credit beyond credit_cap
 * is dropped; what it dropped of the grants the sender asked for (its
 * bytes still wait) is asked for again, on top of the want. Until the
 * first grant shows that the peer is receiver-driven,
 * ACKed bytes return their credit: a fixed window of the speculative size,
 * so a peer that grants nothing cannot stall the conn.
 *
 * Receiver. The peer's demand is its want less what was granted. With an
 * iface pacer attached, the pacer grants it round robin at the link rate,
 * and the peer's speculative bytes are charged to the pacer as they are
 * announced (they cross the link unscheduled); without one, each arrival
 * is granted back (a window of the sender's speculative credit).
 *
 * The sender's accounting, all cumulative bytes: credit = spec_total +
 * grant_total - sent_total, never negative (a send the transport forced
 * past it is a debt the next credit pays). Resends count as sent: the
 * receiver's link carries them too, so they are asked for and granted
 * like new bytes. A request also tells `lost`, the bytes of
 * transmissions judged lost (on_gone, before their resends are due): the
 * receiver's pacer then stops counting them as on their way (its bound on
 * granted bytes not arrived would fill with lost ones, and hold back the
 * very grants their resends wait for).
 *
 * Granted credit the sender cannot use goes back (tx_release): all of it
 * once the sender drained, all of it once it was short of its next send
 * for HOLD_NS without a new grant (the receiver's bound holds the rest:
 * credit spread over senders that each hold part of a chunk would fill
 * the bound until the receiver forgets it), and any not spent nor added
 * to for EXPIRE_NS (a descheduled sender). Given back, it counts as
 * sent: the receiver's grants so far cover it, so the wants that follow
 * ask for what the sender needs from then on. The next request's `held`
 * tells the receiver, whose count of grants not arrived falls to it.
 * EXPIRE_NS is within half the receiver's OUT_STALE_NS: once a full
 * pacer forgets its counts, the grants it forgot are no longer spent (a
 * credit never waits to be sent while newer grants cross the link).
 */
#include "uccl_cc_int.h"
#include "uccl_cc_eqds_pacer.h"


typedef struct uct_uccl_cc_eqds {
    /* sender */
    uint64_t spec;          /* speculative credit of a burst */
    uint64_t cap;           /* most credit held */
    uint64_t demand_cap;    /* most asked for beyond what was sent */
    uint64_t alone;         /* speculative credit of a drained sender
                             * whose receiver serves no one else */
    uint64_t spec_total;    /* speculative credit issued */
    uint64_t spec_avail;    /* of it, not spent */
    uint64_t spec_sent;     /* of it, spent */
    uint64_t grant_seen;    /* the peer's cumulative grant */
    uint64_t grant_total;   /* of it, what was credited (cap) */
    uint64_t sent_total;    /* bytes sent against credit */
    uint64_t want_total;    /* largest want asked for */
    uint64_t dropped;       /* asked-for grants the cap dropped */
    uint64_t spec_told;     /* largest spec told */
    uint64_t backlog_end;   /* sent_total once the known backlog is out */
    uint64_t gone;          /* bytes of transmissions judged lost */
    uint64_t returned;      /* granted credit given back unused */
    uint64_t drained_ret;   /* of it, given back drained */
    uint64_t held_ns;       /* the last send or grant came then */
    double   byte_ns;       /* the link's time per byte */
    uint64_t pull_t;        /* the link is done with the pulled bytes */
    int      peer_grants;   /* the peer grants: credit is strict */
    /* receiver */
    uct_uccl_cc_eqds_sender_t rx;  /* the peer as the pacer sees it */
    uint64_t rx_want;       /* the peer's cumulative want */
    uint64_t rx_spec;       /* the peer's cumulative speculative bytes */
    uint64_t rx_lost;       /* the peer's cumulative resent bytes */
} uct_uccl_cc_eqds_t;


/* credit left; negative: a debt */
static int64_t uct_uccl_cc_eqds_raw(const uct_uccl_cc_eqds_t *e)
{
    return (int64_t)(e->spec_total + e->grant_total - e->sent_total);
}

static uint64_t uct_uccl_cc_eqds_credit(const uct_uccl_cc_eqds_t *e)
{
    int64_t raw = uct_uccl_cc_eqds_raw(e);

    return (raw > 0) ? (uint64_t)raw : 0;
}

/* window = in flight + credit: can_send admits exactly the credit */
static void uct_uccl_cc_eqds_publish(uct_uccl_cc_t *cc)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);

    cc->cwnd_bytes = cc->inflight_bytes + uct_uccl_cc_eqds_credit(e);
}

/* speculative credit that the credit, as a whole, still covers */
static void uct_uccl_cc_eqds_add_spec(uct_uccl_cc_eqds_t *e, uint64_t bytes)
{
    uint64_t credit;

    e->spec_total += bytes;
    credit         = uct_uccl_cc_eqds_credit(e);
    e->spec_avail  = uct_uccl_cc_min_u64(e->spec_avail + bytes, credit);
}

/* a 32-bit serial number's advance over the low bits of *total */
static uint32_t uct_uccl_cc_eqds_serial(uint64_t *total, uint32_t value)
{
    int32_t delta = (int32_t)(value - (uint32_t)*total);

    if (delta <= 0) {
        return 0;
    }
    *total += (uint32_t)delta;
    return (uint32_t)delta;
}

static ucs_status_t uct_uccl_cc_eqds_init(uct_uccl_cc_t *cc,
                                          const uct_uccl_cc_params_t *params)
{
    const uct_uccl_cc_eqds_params_t *p = &params->eqds;
    uint64_t bdp                       = UCT_UCCL_CC_EQDS_SPEC_BYTES;
    uint64_t chunk                     = (uint64_t)uct_uccl_cc_chunk(params);
    uct_uccl_cc_eqds_t *e;

    e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);
    memset(e, 0, sizeof(*e));
    if ((params->base_rtt_ns != 0) && (params->link_bps != 0)) {
        bdp = (uint64_t)((double)params->base_rtt_ns * params->link_bps /
                         8e9);
    }
    /* a derived BDP is at least a chunk; a value given is taken as is */
    e->spec       = (p->spec_bytes != 0) ? p->spec_bytes :
                    ((bdp > chunk) ? bdp : chunk);
    e->cap        = uct_uccl_cc_def_u64(p->credit_cap,
                                        UCT_UCCL_CC_EQDS_CREDIT_CAP);
    if (p->credit_cap == 0) {
        e->cap = (e->cap > 2 * e->spec) ? e->cap : 2 * e->spec;
    }
    e->demand_cap = uct_uccl_cc_def_u64(p->demand_cap,
                                        UCT_UCCL_CC_EQDS_DEMAND_CAP);
    e->alone      = uct_uccl_cc_def_u64(p->alone_bytes,
                                        UCT_UCCL_CC_EQDS_ALONE_BYTES);
    e->alone      = (e->alone > e->cap) ? e->cap :
                    (e->alone < e->spec) ? e->spec : e->alone;
    e->byte_ns    = 8e9 / (double)uct_uccl_cc_def_u64(params->link_bps,
                                                      UCT_UCCL_CC_DEF_LINK_BPS);
    /* requests and grants are 32-bit serial numbers */
    if ((e->cap < e->spec) || (e->cap >= (1ull << 31)) ||
        (e->demand_cap >= (1ull << 31))) {
        return UCS_ERR_INVALID_PARAM;
    }

    uct_uccl_cc_eqds_add_spec(e, e->spec);
    cc->flags       &= ~UCT_UCCL_CC_F_STRICT;
    cc->next_send_ns = 0;
    uct_uccl_cc_eqds_publish(cc);
    return UCS_OK;
}

static void uct_uccl_cc_eqds_cleanup(uct_uccl_cc_t *cc)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);

    uct_uccl_cc_eqds_pacer_remove(&e->rx);
}

static void uct_uccl_cc_eqds_on_send(uct_uccl_cc_t *cc, uint32_t bytes,
                                     uint64_t now)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);
    uint64_t spec         = uct_uccl_cc_min_u64(bytes, e->spec_avail);

    e->spec_avail -= spec;
    e->spec_sent  += spec;
    e->sent_total += bytes;
    e->held_ns     = now;
    uct_uccl_cc_eqds_publish(cc);
}

/* Bytes the receiver pulled (a reply to its GET) go without credit, but
 * no faster than the link: once they keep it busy for more than
 * PULL_BURST_NS ahead, the next send waits. The receiver's pacer
 * scheduled the reply, not its burst: a whole reply at once would queue
 * in our own port (and its tail there would look lost), and several at
 * once in the receiver's. */
static void uct_uccl_cc_eqds_on_send_pulled(uct_uccl_cc_t *cc, uint32_t bytes,
                                            uint64_t now)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);

    e->pull_t        = ((e->pull_t > now) ? e->pull_t : now) +
                       (uint64_t)(bytes * e->byte_ns);
    cc->next_send_ns = (e->pull_t > now + UCT_UCCL_CC_EQDS_PULL_BURST_NS) ?
                       e->pull_t - UCT_UCCL_CC_EQDS_PULL_BURST_NS : 0;
}

/* a resend crossed the link too: once the peer grants, it spends credit
 * (into debt) and so is asked for and granted like new bytes */
static void uct_uccl_cc_eqds_on_resend(uct_uccl_cc_t *cc, uint32_t bytes,
                                       uint64_t now)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);

    if (!e->peer_grants) {
        return; /* ACK-clocked: a window, which resends do not count in */
    }
    e->sent_total += bytes;
    e->spec_avail  = uct_uccl_cc_min_u64(e->spec_avail,
                                         uct_uccl_cc_eqds_credit(e));
    uct_uccl_cc_eqds_publish(cc);
}

static void uct_uccl_cc_eqds_on_gone(uct_uccl_cc_t *cc, uint32_t bytes,
                                     uint64_t now)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);

    e->gone += bytes;
}

/* Drained (nothing in flight, the backlog sent): the next burst starts
 * with speculative credit (a debt for resends is paid by grants first) */
static void uct_uccl_cc_eqds_respec(uct_uccl_cc_t *cc, uct_uccl_cc_eqds_t *e)
{
    /* once the peer grants, only small messages go unscheduled, unless
     * no other sender waits for its grants: then a window (alone) */
    int64_t top = (int64_t)(!e->peer_grants ? e->spec :
                            (cc->flags & UCT_UCCL_CC_F_IDLE) ? e->alone :
                            uct_uccl_cc_min_u64(e->spec,
                                                UCT_UCCL_CC_EQDS_RESPEC_BYTES));
    int64_t raw = uct_uccl_cc_eqds_raw(e);

    if ((cc->inflight_bytes == 0) && (e->sent_total >= e->backlog_end) &&
        (raw < top) && (!e->peer_grants || (raw >= 0))) {
        uct_uccl_cc_eqds_add_spec(e, (uint64_t)(top - raw));
    }
}

static void uct_uccl_cc_eqds_on_ack(uct_uccl_cc_t *cc,
                                    const uct_uccl_cc_ack_t *ack)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);

    if (!e->peer_grants) {
        uct_uccl_cc_eqds_add_spec(e, ack->acked_bytes);
    }
    uct_uccl_cc_eqds_respec(cc, e);
    uct_uccl_cc_eqds_publish(cc);
}

static void uct_uccl_cc_eqds_on_credit(uct_uccl_cc_t *cc, uint32_t granted,
                                       int idle, uint64_t now)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);
    uint64_t before       = e->grant_seen;
    uint64_t delta, credit, accepted, asked;

    cc->flags = idle ? (cc->flags | UCT_UCCL_CC_F_IDLE) :
                       (cc->flags & ~UCT_UCCL_CC_F_IDLE);
    if (!idle && (e->spec_avail > e->spec)) {
        /* other senders wait: what is left of a lone sender's window is
         * not sent unscheduled on top of their grants (it is asked for) */
        e->spec_total -= e->spec_avail - e->spec;
        e->spec_avail  = e->spec;
    }
    if (!e->peer_grants) {
        e->peer_grants = 1;
        cc->flags     |= UCT_UCCL_CC_F_STRICT;
    }
    delta = uct_uccl_cc_eqds_serial(&e->grant_seen, granted);
    if (delta > 0) {
        credit          = uct_uccl_cc_eqds_credit(e);
        accepted        = uct_uccl_cc_min_u64(delta, (credit < e->cap) ?
                                                     e->cap - credit : 0);
        e->grant_total += accepted;
        if (accepted > 0) {
            e->held_ns   = now;
            cc->flags   |= UCT_UCCL_CC_F_HELD; /* tx_release may give it */
        }
        /* of the grant, what was asked for (a lie beyond it is not) */
        asked           = (e->want_total + e->dropped > before) ?
                          uct_uccl_cc_min_u64(delta, e->want_total +
                                              e->dropped - before) : 0;
        e->dropped     += (asked > accepted) ? asked - accepted : 0;
    }
    cc->peer_grant = (uint32_t)e->grant_seen;
    uct_uccl_cc_eqds_publish(cc);
}

static void uct_uccl_cc_eqds_tx_request(uct_uccl_cc_t *cc,
                                        uint64_t backlog_bytes,
                                        uct_uccl_cc_request_t *req)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);
    uint64_t backlog      = uct_uccl_cc_min_u64(backlog_bytes, e->demand_cap);
    uint64_t spec         = e->spec_sent +
                            uct_uccl_cc_min_u64(e->spec_avail, backlog);
    int64_t want;

    e->backlog_end = e->sent_total + backlog;
    want           = (int64_t)(e->backlog_end - e->spec_total);
    if (want > (int64_t)e->want_total) {
        e->want_total = (uint64_t)want;
    }
    if (spec > e->spec_told) {
        e->spec_told = spec;
    }
    req->want = (uint32_t)(e->want_total + e->dropped);
    req->spec = (uint32_t)e->spec_told;
    req->lost = (uint32_t)e->gone;
    req->held = (uint32_t)uct_uccl_cc_min_u64(cc->inflight_bytes +
                                              uct_uccl_cc_eqds_credit(e),
                                              UINT32_MAX);
    req->seen = (uint32_t)e->grant_seen;
}

/* granted credit not spent (speculative credit is spent first) */
static uint64_t uct_uccl_cc_eqds_granted_left(const uct_uccl_cc_eqds_t *e)
{
    uint64_t credit = uct_uccl_cc_eqds_credit(e);

    return credit - uct_uccl_cc_min_u64(e->spec_avail, credit);
}

static uint64_t uct_uccl_cc_eqds_tx_release(uct_uccl_cc_t *cc,
                                            uint32_t next_bytes, uint64_t now)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);
    uint64_t left         = uct_uccl_cc_eqds_granted_left(e);
    uint64_t idle_ns      = now - e->held_ns;
    int drained           = (cc->inflight_bytes == 0) && (next_bytes == 0);
    int short_of_next     = uct_uccl_cc_eqds_credit(e) < next_bytes;

    if (left == 0) {
        /* only a grant (on_credit) makes granted credit held again */
        cc->flags &= ~UCT_UCCL_CC_F_HELD;
        return 0;
    }
    if (!e->peer_grants) {
        return 0;
    }
    if (!drained && (idle_ns < UCT_UCCL_CC_EQDS_EXPIRE_NS) &&
        (!short_of_next || (idle_ns < UCT_UCCL_CC_EQDS_HOLD_NS))) {
        return 0; /* it may still send, or waits for a recent grant */
    }
    /* spent on nothing, as the receiver hears from `held`: the grants
     * the sender needs from now on are asked for anew */
    e->sent_total += left;
    e->returned   += left;
    cc->flags     &= ~UCT_UCCL_CC_F_HELD;
    if (drained) {
        e->drained_ret += left;
        e->backlog_end  = e->sent_total;
        uct_uccl_cc_eqds_respec(cc, e);
    }
    uct_uccl_cc_eqds_publish(cc);
    return left;
}

/* the drain that the ACK of what is in flight brings gives back a lone
 * sender's window (uct_uccl_cc_eqds_respec), enough for the backlog */
static int uct_uccl_cc_eqds_tx_refills(const uct_uccl_cc_t *cc,
                                       uint64_t backlog_bytes)
{
    const uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_CPRIV(cc, uct_uccl_cc_eqds_t);

    return e->peer_grants && (cc->flags & UCT_UCCL_CC_F_IDLE) &&
           (cc->inflight_bytes > 0) &&
           (backlog_bytes <= e->alone) && (e->sent_total >= e->backlog_end);
}

/* the peer's demand from its want, to the pacer when there is one */
static void uct_uccl_cc_eqds_rx_demand(uct_uccl_cc_eqds_t *e)
{
    uint64_t demand = (e->rx_want > e->rx.granted) ?
                      e->rx_want - e->rx.granted : 0;

    uct_uccl_cc_eqds_pacer_demand(&e->rx, uct_uccl_cc_min_u64(demand,
                                                             e->demand_cap));
}

static void uct_uccl_cc_eqds_rx_on_request(uct_uccl_cc_t *cc,
                                           const uct_uccl_cc_request_t *req,
                                           uint64_t now)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);
    uint32_t spec;
    int32_t since;

    /* speculative bytes cross the link unscheduled: the pacer waits for
     * them (a lie is bounded by the pacer's charge limit) */
    spec = uct_uccl_cc_eqds_serial(&e->rx_spec, req->spec);
    if ((spec > 0) && (e->rx.pacer != NULL)) {
        uct_uccl_cc_eqds_pacer_charge(e->rx.pacer, spec, now);
        uct_uccl_cc_eqds_pacer_expect(&e->rx, spec, now);
    }
    /* what the peer judged lost will not arrive; and no more can arrive
     * than it held when it asked, plus what was granted since */
    uct_uccl_cc_eqds_pacer_arrived(&e->rx,
                                   uct_uccl_cc_eqds_serial(&e->rx_lost,
                                                           req->lost));
    since = (int32_t)((uint32_t)e->rx.granted - req->seen);
    uct_uccl_cc_eqds_pacer_bound(&e->rx, (uint64_t)req->held +
                                         ((since > 0) ? (uint32_t)since : 0));
    if (uct_uccl_cc_eqds_serial(&e->rx_want, req->want) > 0) {
        uct_uccl_cc_eqds_rx_demand(e);
    }
}

static void uct_uccl_cc_eqds_rx_on_data(uct_uccl_cc_t *cc, uint32_t bytes,
                                        uint64_t now)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);

    /* a count of 0 stays 0 (uct_uccl_cc_eqds_pacer_arrived) */
    if (e->rx.out > 0) {
        uct_uccl_cc_eqds_pacer_arrived(&e->rx, bytes);
    }
    if (e->rx.pacer == NULL) {
        /* no pacer: what arrived is granted again, up to the demand */
        e->rx.granted += uct_uccl_cc_min_u64(bytes, e->rx.demand);
        uct_uccl_cc_eqds_rx_demand(e);
    }
}

static uint32_t uct_uccl_cc_eqds_rx_credit(uct_uccl_cc_t *cc, uint64_t now)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);

    return (uint32_t)e->rx.granted;
}

static int uct_uccl_cc_eqds_rx_idle(const uct_uccl_cc_t *cc)
{
    const uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_CPRIV(cc, uct_uccl_cc_eqds_t);

    return (e->rx.pacer != NULL) &&
           uct_uccl_cc_eqds_pacer_alone(e->rx.pacer, &e->rx);
}

static int uct_uccl_cc_eqds_rx_pull(uct_uccl_cc_t *cc, uint64_t bytes,
                                    uint64_t now)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);

    return uct_uccl_cc_eqds_pacer_pull(&e->rx, bytes, now);
}

static void uct_uccl_cc_eqds_rx_pulled(uct_uccl_cc_t *cc, uint64_t bytes)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);

    uct_uccl_cc_eqds_pacer_pulled(&e->rx, bytes);
}

static void uct_uccl_cc_eqds_rx_attach(uct_uccl_cc_t *cc,
                                       uct_uccl_cc_eqds_pacer_t *pacer,
                                       void *arg)
{
    uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_eqds_t);

    uct_uccl_cc_eqds_pacer_remove(&e->rx);
    if (pacer != NULL) {
        uct_uccl_cc_eqds_pacer_add(pacer, &e->rx, arg);
    }
}

static void uct_uccl_cc_eqds_query(const uct_uccl_cc_t *cc,
                                   uct_uccl_cc_stats_t *stats)
{
    const uct_uccl_cc_eqds_t *e = UCT_UCCL_CC_CPRIV(cc, uct_uccl_cc_eqds_t);

    stats->credit_bytes     = uct_uccl_cc_eqds_credit(e);
    stats->spec_bytes       = e->spec_total;
    stats->spec_sent_bytes  = e->spec_sent;
    stats->granted_bytes    = e->grant_total;
    stats->rx_granted_bytes = e->rx.granted;
    stats->gone_bytes       = e->gone;
    stats->returned_bytes   = e->returned;
    stats->drained_bytes    = e->drained_ret;
}

const uct_uccl_cc_ops_t uct_uccl_cc_eqds_ops = {
    .name          = "eqds",
    .desc          = "EQDS: receiver-driven credit, one BDP speculative, the "
                     "receiver's pacer grants at its link rate round robin",
    .priv_size     = sizeof(uct_uccl_cc_eqds_t),
    .init          = uct_uccl_cc_eqds_init,
    .cleanup       = uct_uccl_cc_eqds_cleanup,
    .on_send       = uct_uccl_cc_eqds_on_send,
    .on_send_pulled = uct_uccl_cc_eqds_on_send_pulled,
    .on_ack        = uct_uccl_cc_eqds_on_ack,
    .on_resend     = uct_uccl_cc_eqds_on_resend,
    .on_gone       = uct_uccl_cc_eqds_on_gone,
    .on_credit     = uct_uccl_cc_eqds_on_credit,
    .tx_request    = uct_uccl_cc_eqds_tx_request,
    .tx_release    = uct_uccl_cc_eqds_tx_release,
    .tx_refills    = uct_uccl_cc_eqds_tx_refills,
    .rx_on_data    = uct_uccl_cc_eqds_rx_on_data,
    .rx_on_request = uct_uccl_cc_eqds_rx_on_request,
    .rx_credit     = uct_uccl_cc_eqds_rx_credit,
    .rx_idle       = uct_uccl_cc_eqds_rx_idle,
    .rx_pull       = uct_uccl_cc_eqds_rx_pull,
    .rx_pulled     = uct_uccl_cc_eqds_rx_pulled,
    .rx_attach     = uct_uccl_cc_eqds_rx_attach,
    .query         = uct_uccl_cc_eqds_query,
};

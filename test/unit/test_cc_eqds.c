/*
 * EQDS: the sender's credit (speculative + granted, strict once the peer
 * grants, cumulative 32-bit grants robust to loss, repeats, reordering,
 * wrap and lies), its requests, the receiver's demand and grants, the
 * pacer (rate bound over every interval, round-robin fairness, demand
 * limits, burst after idle, charges), and a seeded simulation of N senders
 * into one receiving link: credit conservation at every send, fairness,
 * goodput, a bounded queue, and every byte delivered when credit messages
 * are lost.
 */
#include "cc_test.h"

#include <uct/uccl/proto/cc/uccl_cc_eqds_pacer.h>


#define LINK_BPS 10000000000ull
#define UT_MAX(_a, _b) (((_a) > (_b)) ? (_a) : (_b))

static uct_uccl_cc_stats_t st(const uct_uccl_cc_t *cc)
{
    return cc_stats(cc);
}

static uint32_t want_of(uct_uccl_cc_t *cc, uint64_t backlog)
{
    uct_uccl_cc_request_t req;

    UT_EQ(uct_uccl_cc_tx_request(cc, backlog, &req), 1);
    return req.want;
}

static void rx_req(uct_uccl_cc_t *cc, uint32_t want, uint32_t spec)
{
    uct_uccl_cc_request_t req = {.want = want, .spec = spec};

    uct_uccl_cc_rx_on_request(cc, &req, CC_T0);
}

/* credit conservation: what went out is covered by what was issued */
static void check_conserved(const uct_uccl_cc_t *cc, uint64_t sent)
{
    uct_uccl_cc_stats_t s = st(cc);

    UT_TRUE(sent <= s.spec_bytes + s.granted_bytes);
    if (cc->flags & UCT_UCCL_CC_F_STRICT) {
        UT_EQ(cc->cwnd_bytes, cc->inflight_bytes + s.credit_bytes);
    }
}

static void test_sender_basics(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0;
    int i;

    /* speculative credit: one BDP (10 us x 100 Gbit/s = 125000 B) */
    cc_params(&p);
    p.link_bps = 100000000000ull;
    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    UT_TRUE(uct_uccl_cc_rx_driven(&cc));
    UT_EQ(st(&cc).credit_bytes, 125000);
    UT_EQ(cc.cwnd_bytes, 125000);
    UT_EQ(cc.flags & UCT_UCCL_CC_F_STRICT, 0);
    uct_uccl_cc_cleanup(&cc);

    /* at least one chunk, so a burst's first chunk (with its request)
     * always goes: 10 us x 10 Gbit/s is only 12500 B */
    cc_params(&p);
    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    UT_EQ(st(&cc).credit_bytes, CC_CHUNK);

    /* a speculative credit given below a chunk is taken as given: once
     * the peer grants, a chunk waits for its grant, a small message not */
    {
        uct_uccl_cc_params_t q;
        uct_uccl_cc_t c2;

        cc_params(&q);
        q.eqds.spec_bytes = 4096;
        UT_EQ(uct_uccl_cc_init(&c2, "eqds", &q), UCS_OK);
        UT_EQ(st(&c2).credit_bytes, 4096);
        uct_uccl_cc_on_credit(&c2, 0, 0, now);
        UT_TRUE(!uct_uccl_cc_can_send(&c2, CC_CHUNK, now));
        UT_TRUE(uct_uccl_cc_can_send(&c2, 64, now));
        UT_EQ(want_of(&c2, CC_CHUNK), CC_CHUNK - 4096);
        uct_uccl_cc_on_credit(&c2, CC_CHUNK - 4096, 0, now);
        UT_TRUE(uct_uccl_cc_can_send(&c2, CC_CHUNK, now));
        uct_uccl_cc_cleanup(&c2);
    }

    /* before the peer grants anything: ACKs return credit (a window of
     * the speculative size), so a peer that never grants cannot stall */
    for (i = 0; i < 10; ++i) {
        UT_TRUE(uct_uccl_cc_can_send(&cc, CC_CHUNK, now));
        /* ACKed credit counts as speculative: the want stays */
        UT_EQ(want_of(&cc, 100 * CC_CHUNK), 99 * CC_CHUNK);
        uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
        UT_TRUE(!uct_uccl_cc_can_send(&cc, 1, now));
        cc_ack(&cc, CC_CHUNK, 10 * CC_US, 0, now);
    }
    /* the first grant makes credit strict: nothing beyond it, even with
     * nothing in flight */
    uct_uccl_cc_on_credit(&cc, 0, 0, now);
    UT_TRUE(cc.flags & UCT_UCCL_CC_F_STRICT);
    uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
    cc_ack(&cc, CC_CHUNK, 10 * CC_US, 0, now);
    UT_EQ(cc.inflight_bytes, 0);
    UT_EQ(st(&cc).credit_bytes, 0);
    UT_TRUE(!uct_uccl_cc_can_send(&cc, 1, now));
    /* a grant of half a chunk: a half chunk may go, not a whole one */
    uct_uccl_cc_on_credit(&cc, CC_CHUNK / 2, 0, now);
    UT_TRUE(uct_uccl_cc_can_send(&cc, CC_CHUNK / 2, now));
    UT_TRUE(!uct_uccl_cc_can_send(&cc, CC_CHUNK, now));
    uct_uccl_cc_on_credit(&cc, CC_CHUNK, 0, now);
    UT_TRUE(uct_uccl_cc_can_send(&cc, CC_CHUNK, now));
    uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
    UT_EQ(st(&cc).credit_bytes, 0);
    check_conserved(&cc, 12 * CC_CHUNK);
    /* losses and timeouts neither give nor take credit */
    uct_uccl_cc_on_loss(&cc, CC_CHUNK, now);
    uct_uccl_cc_on_timeout(&cc, now);
    UT_EQ(st(&cc).credit_bytes, 0);
    UT_TRUE(!uct_uccl_cc_can_send(&cc, 1, now));
    uct_uccl_cc_cleanup(&cc);
    printf("  sender: one BDP (>= a chunk) speculative; ACK-clocked until "
           "the first grant, then strict credit\n");
}

/* Grants are cumulative 32-bit serial numbers: repeats and old ones are
 * ignored, wrap is handled, a lie is bounded by the credit cap */
static void test_sender_grants(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0, g = 0, sent = 0, step = 1500ull << 20;
    int i;

    cc_params(&p);
    p.eqds.credit_cap = (1ull << 31) - 1;
    p.eqds.demand_cap = (1ull << 31) - 1;
    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    uct_uccl_cc_on_send(&cc, CC_CHUNK, now); /* the speculative chunk */
    sent += CC_CHUNK;
    uct_uccl_cc_on_credit(&cc, 0, 0, now);
    for (i = 0; i < 12; ++i) { /* 17.6 GiB granted: wraps 4 times */
        g += step;
        uct_uccl_cc_on_credit(&cc, (uint32_t)g, 0, now);
        UT_EQ(st(&cc).credit_bytes, step);
        uct_uccl_cc_on_credit(&cc, (uint32_t)g, 0, now);          /* repeat */
        uct_uccl_cc_on_credit(&cc, (uint32_t)(g - step / 2), 0, now); /* old */
        UT_EQ(st(&cc).credit_bytes, step);
        UT_TRUE(uct_uccl_cc_can_send(&cc, (uint32_t)step, now));
        (void)want_of(&cc, step + 1); /* more queued: no respec */
        uct_uccl_cc_on_send(&cc, (uint32_t)step, now);
        sent += step;
        cc_ack(&cc, step, 10 * CC_US, 0, now);
        check_conserved(&cc, sent);
    }
    UT_EQ(st(&cc).granted_bytes, g);
    uct_uccl_cc_cleanup(&cc);

    /* a peer that grants 2 GiB at once gets no more than the cap */
    cc_params(&p);
    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    uct_uccl_cc_on_credit(&cc, 0x7fffffffu, 0, now);
    UT_EQ(st(&cc).credit_bytes, UCT_UCCL_CC_EQDS_CREDIT_CAP);
    /* and what it asked beyond the cap is not credited later */
    uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
    uct_uccl_cc_on_credit(&cc, 0x7fffffffu, 0, now);
    UT_EQ(st(&cc).credit_bytes, UCT_UCCL_CC_EQDS_CREDIT_CAP - CC_CHUNK);
    uct_uccl_cc_cleanup(&cc);
    printf("  grants: cumulative, repeats/old ignored, 4 wraps of 32 bits, "
           "a 2 GiB lie capped at %llu MiB\n",
           UCT_UCCL_CC_EQDS_CREDIT_CAP >> 20);
}

/* Credit the cap drops of a grant the sender asked for is asked for again
 * (its bytes still wait): a receiver that grants faster than the sender
 * sends cannot leave it starved with an unchanged request */
static void test_sender_cap_reask(void)
{
    const uint64_t cap = 4 * CC_CHUNK, total = 16 * CC_CHUNK;
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0, sent = 0;
    uint32_t w, rounds = 0;

    cc_params(&p);
    p.eqds.spec_bytes = CC_CHUNK;
    p.eqds.credit_cap = cap;
    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    uct_uccl_cc_on_credit(&cc, 0, 0, now);
    w = want_of(&cc, total);
    UT_EQ(w, total - CC_CHUNK);
    /* the receiver grants all it was asked for at once: the cap keeps 4 */
    uct_uccl_cc_on_credit(&cc, w, 0, now);
    UT_EQ(st(&cc).credit_bytes, cap);
    while (sent < total) {
        UT_TRUE(++rounds <= 8);
        while (uct_uccl_cc_can_send(&cc, CC_CHUNK, now)) {
            uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
            sent += CC_CHUNK;
        }
        /* stuck for credit with bytes queued: the want grows by what was
         * dropped, and granting it lets the rest go */
        if (sent < total) {
            UT_EQ(st(&cc).credit_bytes, 0);
            UT_EQ(want_of(&cc, total - sent), w + (total - sent));
            w += total - sent;
            uct_uccl_cc_on_credit(&cc, w, 0, now);
        }
        check_conserved(&cc, sent);
    }
    UT_EQ(sent, total);
    /* a lie beyond the want is dropped and not asked for again */
    w = want_of(&cc, 0);
    uct_uccl_cc_on_credit(&cc, w + (1u << 30), 0, now);
    UT_EQ(want_of(&cc, 0), w);
    uct_uccl_cc_cleanup(&cc);
    printf("  cap: granted 16 chunks at once, 4 held, the dropped 12 asked "
           "again; all sent in %u rounds\n", rounds);
}

/* A resend spends credit once the peer grants (into debt: it is never
 * held back), is asked for like new bytes, and a debt is paid by grants,
 * not forgiven when the sender drains; before the first grant a resend
 * is outside the window, as with the window algorithms */
static void test_sender_resend(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0;
    uint32_t w;

    cc_params(&p);
    p.eqds.spec_bytes = CC_CHUNK;
    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
    uct_uccl_cc_on_resend(&cc, CC_CHUNK, now);   /* ACK-clocked: free */
    cc_ack(&cc, CC_CHUNK, 10 * CC_US, 0, now);
    UT_EQ(st(&cc).credit_bytes, CC_CHUNK);

    uct_uccl_cc_on_credit(&cc, 0, 0, now);
    w = want_of(&cc, 3 * CC_CHUNK);
    UT_EQ(w, 2 * CC_CHUNK);
    uct_uccl_cc_on_credit(&cc, w, 0, now);
    UT_EQ(st(&cc).credit_bytes, 3 * CC_CHUNK);
    uct_uccl_cc_on_send(&cc, 3 * CC_CHUNK, now);
    uct_uccl_cc_on_resend(&cc, CC_CHUNK, now);
    uct_uccl_cc_on_resend(&cc, CC_CHUNK, now);
    UT_EQ(st(&cc).credit_bytes, 0);
    UT_TRUE(!uct_uccl_cc_can_send(&cc, 1, now));
    /* drained with a debt: no speculative credit back */
    cc_ack(&cc, 3 * CC_CHUNK, 10 * CC_US, 0, now);
    UT_EQ(cc.inflight_bytes, 0);
    UT_EQ(st(&cc).credit_bytes, 0);
    /* one chunk queued: asked for with the two resent */
    UT_EQ(want_of(&cc, CC_CHUNK), w + 3 * CC_CHUNK);
    uct_uccl_cc_on_credit(&cc, w + 2 * CC_CHUNK, 0, now);
    UT_EQ(st(&cc).credit_bytes, 0);               /* the debt paid */
    uct_uccl_cc_on_credit(&cc, w + 3 * CC_CHUNK, 0, now);
    UT_EQ(st(&cc).credit_bytes, CC_CHUNK);
    uct_uccl_cc_cleanup(&cc);
    printf("  resends: spend credit once granted (debt, paid by grants, "
           "not forgiven); free while ACK-clocked\n");
}

/* Requests: want = sent + backlog - speculative, never backwards; a
 * drained sender gets its speculative credit back, a starved one not */
static void test_sender_requests(void)
{
    uct_uccl_cc_request_t req;
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0;
    uint32_t w;

    cc_params(&p);
    p.eqds.demand_cap = 1 << 20;
    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    /* speculative bytes about to go are told before they go */
    UT_EQ(uct_uccl_cc_tx_request(&cc, 10 * CC_CHUNK, &req), 1);
    UT_EQ(req.spec, CC_CHUNK);
    UT_EQ(uct_uccl_cc_tx_request(&cc, 100, &req), 1);
    UT_EQ(req.spec, CC_CHUNK); /* never backwards */
    uct_uccl_cc_cleanup(&cc);

    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    uct_uccl_cc_on_credit(&cc, 0, 0, now);
    UT_EQ(want_of(&cc, 4 * CC_CHUNK), 3 * CC_CHUNK);
    uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
    /* less queued now (not yet asked again): the want does not go back */
    UT_EQ(want_of(&cc, CC_CHUNK), 3 * CC_CHUNK);
    /* a huge backlog asks for demand_cap ahead of what was sent */
    w = want_of(&cc, 1ull << 40);
    UT_EQ(w, CC_CHUNK + (1 << 20) - CC_CHUNK);

    /* credit-starved: all acked, but the last request said more is
     * queued: no speculative credit (it waits for grants) */
    cc_ack(&cc, CC_CHUNK, 10 * CC_US, 0, now);
    UT_EQ(cc.inflight_bytes, 0);
    UT_EQ(st(&cc).credit_bytes, 0);
    /* granted what it asked, it sends it all; the last request says
     * nothing is left; drained, it gets speculative credit again, for
     * small messages only now that the peer grants */
    uct_uccl_cc_on_credit(&cc, w, 0, now);
    UT_EQ(st(&cc).credit_bytes, 1 << 20);
    while (uct_uccl_cc_can_send(&cc, CC_CHUNK, now)) {
        uint64_t left = (1 << 20) - (st(&cc).granted_bytes -
                                     st(&cc).credit_bytes);

        want_of(&cc, left);
        uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
    }
    UT_EQ(st(&cc).credit_bytes, 0);
    cc_ack(&cc, cc.inflight_bytes - CC_CHUNK, 10 * CC_US, 0, now);
    UT_EQ(st(&cc).credit_bytes, 0);   /* one chunk still in flight */
    cc_ack(&cc, CC_CHUNK, 10 * CC_US, 0, now);
    UT_EQ(st(&cc).credit_bytes, UCT_UCCL_CC_EQDS_RESPEC_BYTES);
    UT_TRUE(!uct_uccl_cc_can_send(&cc, CC_CHUNK, now));
    UT_TRUE(uct_uccl_cc_can_send(&cc, UCT_UCCL_CC_EQDS_RESPEC_BYTES, now));
    check_conserved(&cc, 17 * CC_CHUNK);
    /* a grant that says no other sender waits: the next drain gives a
     * window back (a lone flow's next messages wait for no grant); one
     * that says otherwise takes back what is left of it beyond the
     * speculative credit, and the drain after it gives small messages
     * only again */
    uct_uccl_cc_on_credit(&cc, w, 1, now);
    UT_TRUE(!uct_uccl_cc_tx_refills(&cc, CC_CHUNK)); /* nothing in flight */
    uct_uccl_cc_on_send(&cc, UCT_UCCL_CC_EQDS_RESPEC_BYTES, now);
    want_of(&cc, 0);
    /* its ACK will bring the window: up to it waits without asking, more
     * than that asks */
    UT_TRUE(uct_uccl_cc_tx_refills(&cc, UCT_UCCL_CC_EQDS_ALONE_BYTES));
    UT_TRUE(!uct_uccl_cc_tx_refills(&cc, UCT_UCCL_CC_EQDS_ALONE_BYTES + 1));
    cc_ack(&cc, UCT_UCCL_CC_EQDS_RESPEC_BYTES, 10 * CC_US, 0, now);
    UT_EQ(st(&cc).credit_bytes, UCT_UCCL_CC_EQDS_ALONE_BYTES);
    UT_TRUE(uct_uccl_cc_can_send(&cc, UCT_UCCL_CC_EQDS_ALONE_BYTES, now));
    UT_TRUE(!uct_uccl_cc_can_send(&cc, UCT_UCCL_CC_EQDS_ALONE_BYTES + 1,
                                  now));
    uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
    uct_uccl_cc_on_credit(&cc, w, 0, now);
    UT_EQ(st(&cc).credit_bytes, CC_CHUNK); /* the speculative credit */
    UT_TRUE(!uct_uccl_cc_tx_refills(&cc, 1)); /* others wait: it asks */
    want_of(&cc, 0);
    uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
    cc_ack(&cc, 2 * CC_CHUNK, 10 * CC_US, 0, now);
    UT_EQ(st(&cc).credit_bytes, UCT_UCCL_CC_EQDS_RESPEC_BYTES);
    check_conserved(&cc, 19 * CC_CHUNK + UCT_UCCL_CC_EQDS_RESPEC_BYTES);
    uct_uccl_cc_cleanup(&cc);
    printf("  requests: want = sent + backlog - speculative, monotonic, "
           "capped; speculative again only when drained, and small once "
           "the peer grants, unless its pacer serves no one else\n");
}

/* Speculative bytes the sender holds beyond its granted credit: what a
 * grant saying that others wait leaves it to send unscheduled */
static uint64_t unscheduled_left(const uct_uccl_cc_t *cc, uint64_t sent)
{
    uct_uccl_cc_stats_t s = st(cc);
    uint64_t used         = sent + s.returned_bytes - s.spec_sent_bytes;
    uint64_t granted_left = (s.granted_bytes > used) ?
                            s.granted_bytes - used : 0;

    return (s.credit_bytes > granted_left) ? s.credit_bytes - granted_left :
                                             0;
}

/* A lone sender (its receiver's grants say no one else waits) keeps a
 * window: drained, its next messages up to `alone` go without a grant.
 * The parameter is bounded by the speculative credit and the cap. */
static void test_sender_alone(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0;

    cc_params(&p);
    p.eqds.alone_bytes = 1 << 20;
    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    uct_uccl_cc_on_credit(&cc, 0, 1, now);
    uct_uccl_cc_on_send(&cc, CC_CHUNK, now);       /* its first chunk */
    cc_ack(&cc, CC_CHUNK, 10 * CC_US, 0, now);
    UT_EQ(st(&cc).credit_bytes, 1 << 20);
    /* a message of the window goes whole, asking nothing */
    UT_TRUE(uct_uccl_cc_can_send(&cc, 1 << 20, now));
    uct_uccl_cc_on_send(&cc, 1 << 20, now);
    UT_TRUE(!uct_uccl_cc_can_send(&cc, 1, now));
    UT_EQ(want_of(&cc, 0), 0);
    cc_ack(&cc, 1 << 20, 10 * CC_US, 0, now);
    UT_EQ(st(&cc).credit_bytes, 1 << 20);
    check_conserved(&cc, CC_CHUNK + (1 << 20));
    uct_uccl_cc_cleanup(&cc);

    /* bounded: below the speculative credit it is that, above the cap
     * the cap */
    cc_params(&p);
    p.eqds.spec_bytes  = 4 * CC_CHUNK;
    p.eqds.alone_bytes = CC_CHUNK;
    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    uct_uccl_cc_on_credit(&cc, 0, 1, now);
    uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
    cc_ack(&cc, CC_CHUNK, 10 * CC_US, 0, now);
    UT_EQ(st(&cc).credit_bytes, 4 * CC_CHUNK);
    uct_uccl_cc_cleanup(&cc);
    cc_params(&p);
    p.eqds.credit_cap  = 512 << 10;
    p.eqds.alone_bytes = 8 << 20;
    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    uct_uccl_cc_on_credit(&cc, 0, 1, now);
    uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
    cc_ack(&cc, CC_CHUNK, 10 * CC_US, 0, now);
    UT_EQ(st(&cc).credit_bytes, 512 << 10);
    uct_uccl_cc_cleanup(&cc);
    printf("  alone: a lone sender's drain gives a window of CC_EQDS_ALONE "
           "(at least the speculative credit, at most the cap)\n");
}

/* Seeded: a sender whose receiver's hint comes and goes, messages of
 * random sizes, grants of what it asked, late or never, ACKs of random
 * parts. Credit is conserved at every step; after any grant saying that
 * others wait, what it may still send unscheduled is at most its
 * speculative credit; and while the hint says it is alone, a message no
 * larger than the window that starts drained goes whole at once. */
static void test_sender_alone_seeded(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0, sent = 0, inflight = 0, asked = 0, granted = 0;
    uint64_t alone = 1 << 20, msg = 0, spec;
    unsigned i, whole = 0, cuts = 0;
    int idle = 1, drained_alone = 0;

    cc_params(&p);
    p.eqds.alone_bytes = alone;
    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    spec = st(&cc).credit_bytes;
    uct_uccl_cc_on_credit(&cc, 0, idle, now);
    for (i = 0; i < 20000; ++i) {
        now += ut_rand_below(20 * CC_US);
        if ((msg == 0) && ((inflight == 0) || !ut_rand_below(8))) {
            /* a new message: one that fits the window of a sender that
             * drained alone (and heard nothing else since) goes at once */
            msg = 1 + ut_rand_below(2 * alone);
            if (drained_alone && (msg <= alone)) {
                UT_TRUE(uct_uccl_cc_can_send(&cc, (uint32_t)msg, now));
                ++whole;
            }
        }
        switch (ut_rand_below(4)) {
        case 0: {
            /* send what the credit allows of the message, in chunks */
            uint32_t b = (uint32_t)((msg < CC_CHUNK) ? msg : CC_CHUNK);

            while ((b > 0) && uct_uccl_cc_can_send(&cc, b, now)) {
                uct_uccl_cc_on_send(&cc, b, now);
                drained_alone = 0;
                sent     += b;
                inflight += b;
                msg      -= b;
                b         = (uint32_t)((msg < CC_CHUNK) ? msg : CC_CHUNK);
            }
            if (msg > 0) {
                uct_uccl_cc_request_t req;

                if (uct_uccl_cc_tx_request(&cc, msg, &req)) {
                    asked = req.want;
                }
            }
            break;
        }
        case 1: {
            uint64_t b = ut_rand_below(2) ? inflight :
                         (inflight > 0) ? 1 + ut_rand_below(inflight) : 0;

            inflight -= b;
            cc_ack(&cc, b, 10 * CC_US, 0, now);
            drained_alone = (b > 0) && (inflight == 0) && (msg == 0) &&
                            (cc.flags & UCT_UCCL_CC_F_IDLE);
            (void)uct_uccl_cc_tx_release(&cc, (uint32_t)((msg < CC_CHUNK) ?
                                                         msg : CC_CHUNK),
                                         now);
            break;
        }
        case 2:
            /* the receiver grants what was asked, or part of it; its hint
             * changes now and then (another sender comes or goes) */
            if (ut_rand_below(32) == 0) {
                idle = !idle;
            }
            if ((int32_t)((uint32_t)asked - (uint32_t)granted) > 0) {
                granted += ut_rand_below((uint32_t)(asked - granted) + 1);
            }
            uct_uccl_cc_on_credit(&cc, (uint32_t)granted, idle, now);
            if (!idle) {
                drained_alone = 0;
                UT_TRUE(unscheduled_left(&cc, sent) <= spec);
                ++cuts;
            }
            break;
        default:
            break;
        }
        check_conserved(&cc, sent);
        UT_TRUE(st(&cc).credit_bytes <= 4ull << 20);
    }
    UT_TRUE(whole > 20);
    UT_TRUE(cuts > 100);
    uct_uccl_cc_cleanup(&cc);
    printf("  alone seeded: %u messages went whole on a lone sender's "
           "window; %u grants saying others wait left at most the "
           "speculative credit unscheduled\n", whole, cuts);
}

/* The pacer's count of grants not arrived: up with grants, down with
 * arrivals and reported losses (never below 0), bounded by what the
 * sender tells it holds; grants stop at max_out */
static void test_receiver_out(void)
{
    uct_uccl_cc_eqds_pacer_params_t pp = {.link_bps = LINK_BPS};
    uct_uccl_cc_eqds_sender_t *out[4];
    uct_uccl_cc_eqds_pacer_t pacer;
    uct_uccl_cc_request_t req = {0};
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t rx;
    uint64_t now = CC_T0;

    cc_params(&p);
    UT_EQ(uct_uccl_cc_init(&rx, "eqds", &p), UCS_OK);
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now), UCS_OK);
    UT_EQ(pacer.max_out, UCT_UCCL_CC_EQDS_MAX_OUT_QUANTA * pacer.quantum);
    uct_uccl_cc_rx_attach(&rx, &pacer, &rx);
    req.want = 10 * CC_CHUNK;
    req.held = UINT32_MAX;
    uct_uccl_cc_rx_on_request(&rx, &req, now);
    /* however late the tick, no more than max_out on its way */
    now += 1000 * CC_US;
    uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 4);
    UT_EQ(pacer.out, pacer.max_out);
    UT_EQ(uct_uccl_cc_rx_credit(&rx, now), pacer.max_out);
    /* waits for arrivals, or for its counts to go stale */
    UT_EQ(uct_uccl_cc_eqds_pacer_next_ns(&pacer),
          now + UCT_UCCL_CC_EQDS_OUT_STALE_NS);
    now += UCT_UCCL_CC_EQDS_OUT_STALE_NS - 1;
    uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 4);
    UT_EQ(uct_uccl_cc_rx_credit(&rx, now), pacer.max_out);
    /* an arrival lets one more go */
    uct_uccl_cc_rx_on_data(&rx, CC_CHUNK, now);
    UT_EQ(pacer.out, pacer.max_out - CC_CHUNK);
    UT_TRUE(uct_uccl_cc_eqds_pacer_next_ns(&pacer) > 0);
    uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 4);
    UT_EQ(pacer.out, pacer.max_out);
    /* a loss the sender reports counts as gone, once */
    req.lost = CC_CHUNK;
    uct_uccl_cc_rx_on_request(&rx, &req, now);
    uct_uccl_cc_rx_on_request(&rx, &req, now);
    UT_EQ(pacer.out, pacer.max_out - CC_CHUNK);
    /* what the sender holds bounds the count: here 1000 bytes, and it
     * had not seen the last 10000 granted yet */
    req.held = 1000;
    req.seen = (uint32_t)(uct_uccl_cc_rx_credit(&rx, now) - 10000);
    uct_uccl_cc_rx_on_request(&rx, &req, now);
    UT_EQ(pacer.out, 11000);
    /* a seen ahead of the grant (a lie) counts as nothing granted since */
    req.held = 10;
    req.seen = uct_uccl_cc_rx_credit(&rx, now) + 5;
    uct_uccl_cc_rx_on_request(&rx, &req, now);
    UT_EQ(pacer.out, 10);
    /* never below 0: more arrived than was granted (speculative) */
    uct_uccl_cc_rx_on_data(&rx, 10 * CC_CHUNK, now);
    UT_EQ(pacer.out, 0);
    /* grants that never arrive are forgotten after OUT_STALE_NS, once */
    uct_uccl_cc_eqds_pacer_tick(&pacer, now + 1000 * CC_US, out, 4);
    UT_EQ(pacer.out, pacer.max_out);
    now += UCT_UCCL_CC_EQDS_OUT_STALE_NS + 1000 * CC_US;
    uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 4);
    UT_EQ(pacer.forgot, 1);
    UT_EQ(pacer.out, pacer.max_out); /* granted again, counted anew */
    uct_uccl_cc_rx_on_data(&rx, CC_CHUNK, now);
    UT_EQ(pacer.out, pacer.max_out - CC_CHUNK);
    uct_uccl_cc_rx_on_data(&rx, 10 * CC_CHUNK, now);
    UT_EQ(pacer.out, 0);
    /* leaving takes the sender's count with it */
    uct_uccl_cc_eqds_pacer_tick(&pacer, now + 1000 * CC_US, out, 4);
    UT_TRUE(pacer.out > 0);
    uct_uccl_cc_cleanup(&rx);
    UT_EQ(pacer.out, 0);
    uct_uccl_cc_eqds_pacer_cleanup(&pacer);

    /* max_out below a quantum is refused */
    pp.max_out = pacer.quantum - 1;
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now),
          UCS_ERR_INVALID_PARAM);
    printf("  receiver: grants not arrived <= max_out; arrivals, reported "
           "losses and the sender's holdings bring the count down\n");
}

/* every byte of credit issued is spent, given back or still held */
static void check_exact(const uct_uccl_cc_t *cc, uint64_t sent)
{
    uct_uccl_cc_stats_t s = st(cc);

    UT_EQ(s.spec_bytes + s.granted_bytes,
          sent + s.returned_bytes + s.credit_bytes);
}

/* Granted credit the sender cannot use goes back: when it falls short of
 * its next send for HOLD_NS without a new grant, and all of it once
 * drained; it counts as spent (the wants that follow ask for what is
 * needed from then on), and the sender's holdings in its next request
 * tell the receiver */
static void test_sender_release(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_request_t req;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0, sent = 0;
    const uint32_t part = CC_CHUNK - 48;
    uint32_t w;

    cc_params(&p);
    p.eqds.spec_bytes = CC_CHUNK;
    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    UT_EQ(uct_uccl_cc_tx_release(&cc, 0, now), 0); /* nothing granted */
    uct_uccl_cc_on_credit(&cc, 0, 0, now);
    uct_uccl_cc_on_send(&cc, CC_CHUNK, now);        /* the speculative one */
    sent += CC_CHUNK;
    uct_uccl_cc_on_credit(&cc, part, 0, now);          /* short of a chunk */
    UT_TRUE(!uct_uccl_cc_can_send(&cc, CC_CHUNK, now));
    UT_EQ(uct_uccl_cc_tx_release(&cc, CC_CHUNK,
                                 now + UCT_UCCL_CC_EQDS_HOLD_NS - 1), 0);
    /* what it holds covers a smaller next send: kept */
    UT_EQ(uct_uccl_cc_tx_release(&cc, part,
                                 now + UCT_UCCL_CC_EQDS_HOLD_NS), 0);
    now += UCT_UCCL_CC_EQDS_HOLD_NS;
    UT_EQ(uct_uccl_cc_tx_release(&cc, CC_CHUNK, now), part);
    UT_EQ(uct_uccl_cc_tx_release(&cc, CC_CHUNK, now), 0);  /* once */
    UT_EQ(st(&cc).credit_bytes, 0);
    UT_EQ(st(&cc).returned_bytes, part);
    check_exact(&cc, sent);
    /* asked for again; it holds only the chunk in flight */
    UT_EQ(uct_uccl_cc_tx_request(&cc, CC_CHUNK, &req), 1);
    UT_EQ(req.want, part + CC_CHUNK);
    UT_EQ(req.held, CC_CHUNK);
    /* a new grant starts the time again; credit that covers the next send
     * is kept until EXPIRE_NS */
    uct_uccl_cc_on_credit(&cc, req.want - CC_MSS, 0, now);
    now += UCT_UCCL_CC_EQDS_HOLD_NS - 1;
    UT_EQ(uct_uccl_cc_tx_release(&cc, CC_CHUNK, now), 0);
    uct_uccl_cc_on_credit(&cc, req.want, 0, now);
    UT_TRUE(uct_uccl_cc_can_send(&cc, CC_CHUNK, now));
    UT_EQ(uct_uccl_cc_tx_release(&cc, CC_CHUNK,
                                 now + UCT_UCCL_CC_EQDS_EXPIRE_NS - 1), 0);
    uct_uccl_cc_on_send(&cc, CC_CHUNK / 2, now);
    sent += CC_CHUNK / 2;
    /* drained: all of it at once, and speculative credit for small
     * messages as before */
    cc_ack(&cc, CC_CHUNK, 10 * CC_US, 0, now);
    UT_EQ(uct_uccl_cc_tx_release(&cc, CC_CHUNK / 2, now), 0); /* it waits */
    cc_ack(&cc, CC_CHUNK / 2, 10 * CC_US, 0, now);
    w = want_of(&cc, 0);
    UT_EQ(uct_uccl_cc_tx_release(&cc, 0, now), CC_CHUNK / 2);
    /* granted already: the next burst's want counts it as spent (sent:
     * a chunk, a half, part and a half given back; speculative: a chunk
     * and the small messages' credit) */
    UT_TRUE(w < 2 * CC_CHUNK + part);
    UT_EQ(want_of(&cc, CC_CHUNK), 2 * CC_CHUNK + part -
                                  UCT_UCCL_CC_EQDS_RESPEC_BYTES);
    UT_EQ(st(&cc).credit_bytes, UCT_UCCL_CC_EQDS_RESPEC_BYTES);
    UT_EQ(st(&cc).spec_bytes, CC_CHUNK + UCT_UCCL_CC_EQDS_RESPEC_BYTES);
    check_exact(&cc, sent);
    uct_uccl_cc_cleanup(&cc);
    printf("  release: credit short of the next send for %llu ms, or all "
           "once drained, goes back, counted once\n",
           UCT_UCCL_CC_EQDS_HOLD_NS / 1000000);
}

/* The transport's gates skip the cc where it has nothing to do: tx_release
 * while no granted credit is held (UCT_UCCL_CC_F_HELD clear), on_credit
 * for a grant and hint it heard last (uct_uccl_cc_credit_known). Random
 * sends, ACKs, resends, requests and grants (repeated, new, stale, lies)
 * check at every step that the algorithm itself, asked anyway, would
 * give nothing back and change nothing. */
static void test_sender_gates(void)
{
    static const uint32_t sizes[] = {8, 100, 4096, CC_CHUNK / 2, CC_CHUNK};
    uct_uccl_cc_request_t req;
    uct_uccl_cc_stats_t before, after;
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc, copy;
    uint64_t now = CC_T0, inflight = 0;
    uint32_t grant = 0, newest = 0, bytes;
    unsigned i, skipped = 0, held = 0;
    int idle = 0;

    cc_params(&p);
    p.eqds.spec_bytes = 8192;
    UT_EQ(uct_uccl_cc_init(&cc, "eqds", &p), UCS_OK);
    for (i = 0; i < 20000; ++i) {
        now += ut_rand_below(4) ? ut_rand_below(20 * CC_US) :
                                  ut_rand_below(2 * UCT_UCCL_CC_EQDS_EXPIRE_NS);
        switch (ut_rand_below(6)) {
        case 0:
            bytes = sizes[ut_rand_below(5)];
            if (uct_uccl_cc_can_send(&cc, bytes, now)) {
                uct_uccl_cc_on_send(&cc, bytes, now);
                inflight += bytes;
            }
            break;
        case 1:
            bytes     = (inflight > 0) ?
                        1 + ut_rand_below((uint32_t)inflight) : 0;
            inflight -= bytes;
            cc_ack(&cc, bytes, 10 * CC_US, 0, now);
            break;
        case 2:
            if (inflight > 0) {
                uct_uccl_cc_on_resend(&cc, 4096, now);
            }
            break;
        case 3:
            (void)uct_uccl_cc_tx_request(&cc, sizes[ut_rand_below(5)], &req);
            break;
        default:
            /* mostly the grant heard last; else new, stale or a lie */
            switch (ut_rand_below(8)) {
            case 0:
                grant += ut_rand_below(2 * CC_CHUNK);
                break;
            case 1:
                grant -= ut_rand_below(CC_CHUNK);
                break;
            case 2:
                idle = !idle;
                break;
            }
            if (uct_uccl_cc_credit_known(&cc, grant, idle)) {
                /* asked anyway, the cc changes nothing */
                copy   = cc;
                before = st(&cc);
                cc.ops->on_credit(&cc, grant, idle, now);
                after  = st(&cc);
                UT_EQ(memcmp(&before, &after, sizeof(before)), 0);
                UT_EQ(memcmp(&copy, &cc, sizeof(cc)), 0);
                ++skipped;
            } else {
                uct_uccl_cc_on_credit(&cc, grant, idle, now);
                newest = ((int32_t)(grant - newest) > 0) ? grant : newest;
                UT_EQ(cc.peer_grant, newest); /* a stale one is not */
                UT_EQ(!(cc.flags & UCT_UCCL_CC_F_IDLE), !idle);
            }
            break;
        }
        bytes = ut_rand_below(2) ? 0 : sizes[ut_rand_below(5)];
        if (!(cc.flags & UCT_UCCL_CC_F_HELD)) {
            /* nothing granted held: nothing to give back, whenever */
            UT_EQ(cc.ops->tx_release(&cc, bytes, now), 0);
            UT_EQ(cc.ops->tx_release(&cc, bytes,
                                     now + 2 * UCT_UCCL_CC_EQDS_EXPIRE_NS),
                  0);
        } else {
            ++held;
            (void)uct_uccl_cc_tx_release(&cc, bytes, now);
        }
        check_conserved(&cc, st(&cc).spec_sent_bytes);
    }
    UT_TRUE(skipped > 500);
    UT_TRUE(held > 100);
    uct_uccl_cc_cleanup(&cc);
    printf("  gates: %u grants known and %u steps without granted credit "
           "held skipped, the cc asked anyway changed nothing\n", skipped,
           20000 - held);
}

/* The pacer's bound spread over two senders: one holds a whole chunk's
 * credit it does not use yet (busy elsewhere), the other spent part of
 * its grant on small messages still on their way and is short of its
 * next chunk. Neither sends, and the pacer would sit full until its
 * counts go stale. The one short of its next send gives back what it
 * holds after HOLD_NS; its request lowers the count to what is on its
 * way, and the pacer grants on, forgetting nothing. */
static void test_release_pacer(void)
{
    uct_uccl_cc_eqds_pacer_params_t pp = {.link_bps = LINK_BPS,
                                          .max_out  = 3 * CC_CHUNK};
    uct_uccl_cc_eqds_sender_t *out[4];
    uct_uccl_cc_eqds_pacer_t pacer;
    uct_uccl_cc_request_t req;
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t tx[2], rx[2];
    uint64_t now = CC_T0, before, left;
    int i;

    cc_params(&p);
    p.eqds.spec_bytes = CC_MSS;
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now), UCS_OK);
    for (i = 0; i < 2; ++i) {
        UT_EQ(uct_uccl_cc_init(&tx[i], "eqds", &p), UCS_OK);
        UT_EQ(uct_uccl_cc_init(&rx[i], "eqds", &p), UCS_OK);
        uct_uccl_cc_rx_attach(&rx[i], &pacer, &rx[i]);
        uct_uccl_cc_on_credit(&tx[i], 0, 0, now);
        uct_uccl_cc_tx_request(&tx[i], 8 * CC_CHUNK, &req);
        uct_uccl_cc_rx_on_request(&rx[i], &req, now);
    }
    /* the speculative bytes they announced are on their way too */
    UT_EQ(pacer.out, 2 * CC_MSS);
    now += 1000 * CC_US;
    uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 4);
    /* a whole quantum each, never a part of one */
    UT_EQ(pacer.out, 2 * CC_MSS + 2 * CC_CHUNK);
    UT_TRUE(uct_uccl_cc_eqds_pacer_full(&pacer));
    for (i = 0; i < 2; ++i) {
        uct_uccl_cc_on_credit(&tx[i], uct_uccl_cc_rx_credit(&rx[i], now),
                              0, now);
    }
    uct_uccl_cc_on_send(&tx[1], 2 * CC_MSS, now); /* small messages */
    UT_TRUE(uct_uccl_cc_can_send(&tx[0], CC_CHUNK, now));
    UT_TRUE(!uct_uccl_cc_can_send(&tx[1], CC_CHUNK, now));
    left = st(&tx[1]).credit_bytes;
    /* the one that could send keeps its credit while it may be busy */
    UT_EQ(uct_uccl_cc_tx_release(&tx[0], CC_CHUNK,
                                 now + UCT_UCCL_CC_EQDS_EXPIRE_NS - 1), 0);
    UT_EQ(uct_uccl_cc_tx_release(&tx[1], CC_CHUNK,
                                 now + UCT_UCCL_CC_EQDS_HOLD_NS - 1), 0);
    now += UCT_UCCL_CC_EQDS_HOLD_NS;
    UT_EQ(uct_uccl_cc_tx_release(&tx[1], CC_CHUNK, now), left);
    check_exact(&tx[1], 2 * CC_MSS);
    uct_uccl_cc_tx_request(&tx[1], 8 * CC_CHUNK, &req);
    UT_EQ(req.held, 2 * CC_MSS);
    before = pacer.out;
    uct_uccl_cc_rx_on_request(&rx[1], &req, now);
    UT_EQ(pacer.out, before - left);
    /* the pacer grants again, well before its counts would go stale */
    before = pacer.granted_bytes;
    uct_uccl_cc_eqds_pacer_tick(&pacer, now + 100 * CC_US, out, 4);
    UT_TRUE(pacer.granted_bytes > before);
    UT_EQ(pacer.forgot, 0);
    UT_TRUE(pacer.out <= pacer.max_out);
    /* the busy one, back after EXPIRE_NS (well before the pacer would
     * forget), gives its grant back instead of sending it */
    now  = CC_T0 + 1000 * CC_US + UCT_UCCL_CC_EQDS_EXPIRE_NS;
    left = st(&tx[0]).credit_bytes - CC_MSS;
    UT_TRUE(UCT_UCCL_CC_EQDS_EXPIRE_NS < UCT_UCCL_CC_EQDS_OUT_STALE_NS);
    UT_EQ(uct_uccl_cc_tx_release(&tx[0], CC_CHUNK, now), left);
    UT_TRUE(!uct_uccl_cc_can_send(&tx[0], CC_CHUNK, now));
    check_exact(&tx[0], 0);
    for (i = 0; i < 2; ++i) {
        uct_uccl_cc_cleanup(&tx[i]);
        uct_uccl_cc_cleanup(&rx[i]);
    }
    uct_uccl_cc_eqds_pacer_cleanup(&pacer);
    printf("  release: the bound held by a sender busy elsewhere and one "
           "short of a chunk: that one gives its credit back after HOLD, "
           "the pacer grants on, forgetting nothing; the busy one's grant "
           "expires\n");
}

static void test_receiver(void)
{
    uct_uccl_cc_eqds_pacer_params_t pp = {.link_bps = LINK_BPS};
    uct_uccl_cc_eqds_sender_t *out[4];
    uct_uccl_cc_eqds_pacer_t pacer;
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t rx;
    uint64_t now = CC_T0;
    unsigned n;

    cc_params(&p);
    UT_EQ(uct_uccl_cc_init(&rx, "eqds", &p), UCS_OK);
    /* no pacer: arrivals are granted back, up to the demand */
    UT_EQ(uct_uccl_cc_rx_credit(&rx, now), 0);
    rx_req(&rx, 3 * CC_CHUNK, CC_CHUNK);
    uct_uccl_cc_rx_on_data(&rx, CC_CHUNK, now);
    UT_EQ(uct_uccl_cc_rx_credit(&rx, now), CC_CHUNK);
    rx_req(&rx, 2 * CC_CHUNK, CC_CHUNK); /* old: ignored */
    uct_uccl_cc_rx_on_data(&rx, CC_CHUNK, now);
    uct_uccl_cc_rx_on_data(&rx, CC_CHUNK, now);
    uct_uccl_cc_rx_on_data(&rx, CC_CHUNK, now);
    UT_EQ(uct_uccl_cc_rx_credit(&rx, now), 3 * CC_CHUNK);

    /* with a pacer: the demand goes to the pacer, which grants it */
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now), UCS_OK);
    uct_uccl_cc_rx_attach(&rx, &pacer, &rx);
    UT_EQ(pacer.num_senders, 1);
    UT_EQ(pacer.num_active, 0);
    UT_TRUE(uct_uccl_cc_rx_idle(&rx));
    rx_req(&rx, 3 * CC_CHUNK + 100000, CC_CHUNK);
    UT_EQ(pacer.num_active, 1);
    UT_TRUE(uct_uccl_cc_rx_idle(&rx)); /* it alone waits */
    UT_EQ(pacer.charged_bytes, 0); /* no new speculative bytes */
    n = uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 4);
    UT_EQ(n, 1);
    UT_TRUE(out[0]->arg == &rx);
    UT_EQ(uct_uccl_cc_rx_credit(&rx, now), 3 * CC_CHUNK + pacer.quantum);
    /* the rest, then nothing more: the demand is met */
    n = uct_uccl_cc_eqds_pacer_tick(&pacer, now + 1000 * CC_US, out, 4);
    UT_EQ(n, 1);
    UT_EQ(uct_uccl_cc_rx_credit(&rx, now), 3 * CC_CHUNK + 100000);
    UT_EQ(pacer.num_active, 0);
    /* announced speculative bytes are charged to the pacer, once */
    rx_req(&rx, 3 * CC_CHUNK + 100000, 3 * CC_CHUNK);
    UT_EQ(pacer.charged_bytes, 2 * CC_CHUNK);
    rx_req(&rx, 3 * CC_CHUNK + 100000, 3 * CC_CHUNK);
    rx_req(&rx, 3 * CC_CHUNK + 100000, 2 * CC_CHUNK);
    UT_EQ(pacer.charged_bytes, 2 * CC_CHUNK);
    uct_uccl_cc_rx_on_data(&rx, CC_CHUNK, now); /* arrivals: no charge */
    UT_EQ(pacer.charged_bytes, 2 * CC_CHUNK);
    /* cleanup detaches */
    uct_uccl_cc_cleanup(&rx);
    UT_EQ(pacer.num_senders, 0);
    uct_uccl_cc_eqds_pacer_cleanup(&pacer);
    test_receiver_out();

    /* the other algorithms do not grant */
    UT_EQ(uct_uccl_cc_init(&rx, "swift", &p), UCS_OK);
    UT_TRUE(!uct_uccl_cc_rx_driven(&rx));
    uct_uccl_cc_rx_attach(&rx, &pacer, NULL);
    {
        uct_uccl_cc_request_t req;

        UT_EQ(uct_uccl_cc_tx_request(&rx, 1000, &req), 0);
        UT_EQ(req.want, 0);
    }
    uct_uccl_cc_cleanup(&rx);
    printf("  receiver: demand = want - granted; no pacer: arrivals "
           "granted back; pacer: grants, speculative bytes charged once\n");
}

/* time of `bytes` at the pacer's rate, ns */
static double pacer_ns(const uct_uccl_cc_eqds_pacer_t *pacer, double bytes)
{
    return bytes * 8e9 / pacer->rate_bps;
}

/* One sender that always wants more, ticks at random times: the grants
 * between any two ticks fit the rate, plus one burst and one quantum */
/* everything granted arrived at once: the tests of the rate and of the
 * round robin leave the bound on bytes on their way out of it */
static void arrive_all(uct_uccl_cc_eqds_sender_t *s, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; ++i) {
        uct_uccl_cc_eqds_pacer_arrived(&s[i], s[i].out);
    }
}

static void test_pacer_rate(void)
{
    uct_uccl_cc_eqds_pacer_params_t pp = {.link_bps = LINK_BPS};
    enum { N = 600 };
    uct_uccl_cc_eqds_sender_t s = {0}, *out[1];
    uct_uccl_cc_eqds_pacer_t pacer;
    uint64_t t[N], g[N], now = CC_T0;
    double slack;
    unsigned i, j;

    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now), UCS_OK);
    UT_EQ(pacer.rate_bps, (uint64_t)(LINK_BPS * UCT_UCCL_CC_EQDS_RATE_FRAC));
    uct_uccl_cc_eqds_pacer_add(&pacer, &s, NULL);
    uct_uccl_cc_eqds_pacer_demand(&s, 1ull << 40);
    for (i = 0; i < N; ++i) {
        /* mostly short gaps, sometimes a long stall */
        now += (ut_rand_below(10) == 0) ? ut_rand_below(200000) :
                                          ut_rand_below(8000);
        uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 1);
        arrive_all(&s, 1);
        t[i] = now;
        g[i] = s.granted;
        UT_TRUE(uct_uccl_cc_eqds_pacer_next_ns(&pacer) > 0);
    }
    slack = UCT_UCCL_CC_EQDS_MAX_BURST + pacer.quantum;
    for (i = 0; i < N; ++i) {
        for (j = i + 1; j < N; ++j) {
            UT_TRUE((double)(g[j] - g[i]) <=
                    (double)(t[j] - t[i]) * pacer.rate_bps / 8e9 + slack);
        }
    }
    /* and it does not lag: at most a burst behind the rate when ticked
     * often (ticks every 1 us for 1 ms) */
    g[0] = s.granted;
    for (i = 0; i < 1000; ++i) {
        now += CC_US;
        uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 1);
        arrive_all(&s, 1);
    }
    UT_TRUE((double)(s.granted - g[0]) >=
            1000 * CC_US * pacer.rate_bps / 8e9 - slack);
    printf("  pacer rate: grants in any interval <= %.2f Gbit/s x time + "
           "burst + quantum; keeps up when ticked\n", pacer.rate_bps / 1e9);
    uct_uccl_cc_eqds_pacer_cleanup(&pacer);
    UT_EQ(pacer.num_senders, 0);
}

/* A receiving link of 1 Gbit/s (10^9 bit/s, as the fabric counts it), its
 * pacer at the default share and no bound on grants not arrived: over 100
 * ms of ticks at random times (each within a burst's time of the last),
 * three senders that always want credit and a GET of 256 KiB pulled
 * whenever the last one went are granted the pacer's share of that link,
 * within a burst and a GET: what reaches the port, all of it granted
 * (credit or pulls), is that share, not more. */
static void test_pacer_link_share(void)
{
    enum { NS = 3, PULL = 256 * 1024 };
    uct_uccl_cc_eqds_pacer_params_t pp = {0};
    uct_uccl_cc_eqds_sender_t s[NS + 1], *out[NS + 1];
    uct_uccl_cc_eqds_pacer_t pacer;
    uint64_t now = CC_T0, end = CC_T0 + 100000 * CC_US, pulled = 0;
    double share, slack;
    unsigned i, n;
    int waits = 0;

    memset(s, 0, sizeof(s));
    pp.link_bps = 1000000000ull;
    pp.quantum = CC_CHUNK;
    pp.max_out = UCT_UCCL_CC_EQDS_MAX_OUT_NONE;
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now), UCS_OK);
    for (i = 0; i <= NS; ++i) {
        uct_uccl_cc_eqds_pacer_add(&pacer, &s[i], NULL);
    }
    for (i = 0; i < NS; ++i) {
        uct_uccl_cc_eqds_pacer_demand(&s[i], 1ull << 40);
    }
    while (now < end) {
        /* the GET of s[NS] goes once its pull is granted */
        if (!waits) {
            waits = !uct_uccl_cc_eqds_pacer_pull(&s[NS], PULL, now);
        }
        if (!waits) {
            uct_uccl_cc_eqds_pacer_pulled(&s[NS], PULL);
            pulled += PULL;
        }
        now += 1 + ut_rand_below(200 * CC_US);
        n = uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, NS + 1);
        for (i = 0; i < n; ++i) {
            waits &= !out[i]->pull_due;
        }
        arrive_all(s, NS + 1);
    }
    share = (double)(now - CC_T0) * UCT_UCCL_CC_EQDS_RATE_FRAC * 1e9 / 8e9;
    slack = UCT_UCCL_CC_EQDS_MAX_BURST + PULL;
    printf("  pacer of a 1 Gbit/s link: granted %" PRIu64 " B (%" PRIu64
           " B of it pulled) in %.1f ms, its share %.0f B\n",
           pacer.granted_bytes, pacer.pulled_bytes,
           (now - CC_T0) / 1e6, share);
    UT_TRUE((double)pacer.granted_bytes <= share + slack);
    UT_TRUE((double)pacer.granted_bytes >= share - slack);
    UT_EQ(pacer.rate_bps, (uint64_t)(1e9 * UCT_UCCL_CC_EQDS_RATE_FRAC));
    UT_TRUE(pacer.pulled_bytes >= pulled);
    UT_TRUE(pulled > PULL);
    for (i = 0; i <= NS; ++i) {
        uct_uccl_cc_eqds_pacer_remove(&s[i]);
    }
    uct_uccl_cc_eqds_pacer_cleanup(&pacer);
}

static void test_pacer_fair(void)
{
    uct_uccl_cc_eqds_pacer_params_t pp = {.link_bps = LINK_BPS};
    enum { NS = 7 };
    uct_uccl_cc_eqds_sender_t s[NS + 1], *out[NS + 1];
    uct_uccl_cc_eqds_pacer_t pacer;
    uint64_t now = CC_T0, lo, hi, total;
    unsigned i, k, n, seen[NS + 1];

    memset(s, 0, sizeof(s));
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now), UCS_OK);
    for (i = 0; i < NS; ++i) {
        uct_uccl_cc_eqds_pacer_add(&pacer, &s[i], &s[i]);
        uct_uccl_cc_eqds_pacer_demand(&s[i], 1ull << 40);
    }
    /* one sender wants little: it gets exactly that; others wait, so
     * the pacer is not idle for it, nor for one on the ring */
    uct_uccl_cc_eqds_pacer_add(&pacer, &s[NS], &s[NS]);
    UT_TRUE(!uct_uccl_cc_eqds_pacer_alone(&pacer, &s[NS]));
    uct_uccl_cc_eqds_pacer_demand(&s[NS], 5000);
    UT_TRUE(!uct_uccl_cc_eqds_pacer_alone(&pacer, &s[0]));
    for (k = 0; k < 3000; ++k) {
        now += ut_rand_below(20000);
        n    = uct_uccl_cc_eqds_pacer_tick(&pacer, now, out,
                                           1 + ut_rand_below(NS + 1));
        arrive_all(s, NS + 1);
        memset(seen, 0, sizeof(seen));
        for (i = 0; i < n; ++i) {  /* each listed once */
            UT_TRUE(!seen[out[i] - s]);
            seen[out[i] - s] = 1;
        }
        lo = hi = s[0].granted;
        for (i = 1; i < NS; ++i) {
            lo = (s[i].granted < lo) ? s[i].granted : lo;
            hi = (s[i].granted > hi) ? s[i].granted : hi;
        }
        /* round robin: never more than one quantum apart */
        UT_TRUE(hi - lo <= pacer.quantum);
    }
    UT_EQ(s[NS].granted, 5000);
    UT_EQ(s[NS].active, 0);
    for (total = 0, i = 0; i <= NS; ++i) {
        total += s[i].granted;
    }
    UT_EQ(total, pacer.granted_bytes);
    /* a late joiner is served from its arrival on, as much as the rest */
    lo = s[0].granted;
    uct_uccl_cc_eqds_pacer_demand(&s[NS], 1ull << 40);
    for (k = 0; k < 200; ++k) {
        now += 5 * CC_US;
        uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, NS + 1);
        arrive_all(s, NS + 1);
    }
    hi = s[NS].granted - 5000;
    UT_TRUE(hi + pacer.quantum >= s[0].granted - lo);
    UT_TRUE(hi <= s[0].granted - lo + pacer.quantum);
    /* leaving mid-round keeps the ring whole */
    uct_uccl_cc_eqds_pacer_remove(&s[3]);
    uct_uccl_cc_eqds_pacer_demand(&s[5], 0);
    UT_EQ(pacer.num_active, NS - 1);
    memset(seen, 0, sizeof(seen));
    for (k = 0; k < 20; ++k) {
        now += 20 * CC_US;
        n = uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, NS + 1);
        arrive_all(s, NS + 1);
        for (i = 0; i < n; ++i) {
            seen[out[i] - s] = 1;
        }
    }
    for (i = 0; i <= NS; ++i) {
        UT_EQ(seen[i], (i != 3) && (i != 5));
    }
    printf("  pacer fairness: %d senders within one quantum at every tick; "
           "a small demand met exactly; join/leave mid-round\n", NS);
}

/* A GET of the receiver's own: its pacer schedules the reply's bytes as a
 * pull, a whole turn of the ring (the request is one unit), at once when
 * nobody waits; else in its turn, round robin with the grants, the link's
 * rate over both; not spent until the request goes (a request the
 * transport could not send keeps its pull); counted on their way like a
 * grant, never as credit to the peer */
static void test_pull_pacer(void)
{
    uct_uccl_cc_eqds_pacer_params_t pp = {.link_bps = LINK_BPS,
                                          .max_out  = 3 * CC_CHUNK};
    enum { N = 3000 };
    uct_uccl_cc_eqds_sender_t s[2], *out[2];
    uct_uccl_cc_eqds_pacer_t pacer;
    uint64_t now = CC_T0, t_next, pulls = 0, credit0, pulled0, bytes;
    uint64_t t[N], g[N], most_pull = 0;
    unsigned i, j, n, turns_pull = 0, turns_credit = 0;
    double slack;

    memset(s, 0, sizeof(s));
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now), UCS_OK);
    uct_uccl_cc_eqds_pacer_add(&pacer, &s[0], &s[0]);
    uct_uccl_cc_eqds_pacer_add(&pacer, &s[1], &s[1]);
    /* idle: granted at once, the link's time taken, on its way */
    t_next = pacer.t_next;
    UT_EQ(uct_uccl_cc_eqds_pacer_pull(&s[0], 3 * CC_CHUNK, now), 1);
    UT_EQ(s[0].pulled, 3 * CC_CHUNK);
    UT_EQ(s[0].granted, 0);             /* no credit to the peer */
    UT_EQ(pacer.pulled_bytes, 3 * CC_CHUNK);
    UT_EQ(pacer.out, 3 * CC_CHUNK);
    UT_TRUE(pacer.t_next - UT_MAX(t_next, now) >=
            (uint64_t)(3.0 * CC_CHUNK * 8e9 / pacer.rate_bps) - 1);
    /* not sent yet: asked again, it is still granted, once */
    UT_EQ(uct_uccl_cc_eqds_pacer_pull(&s[0], 3 * CC_CHUNK, now), 1);
    UT_EQ(pacer.pulled_bytes, 3 * CC_CHUNK);
    uct_uccl_cc_eqds_pacer_pulled(&s[0], 3 * CC_CHUNK);
    UT_EQ(s[0].pulled, 0);
    /* the link is busy with it: the next pull waits for its turn */
    UT_EQ(uct_uccl_cc_eqds_pacer_pull(&s[0], CC_CHUNK, now), 0);
    UT_EQ(s[0].active, 1);
    UT_EQ(uct_uccl_cc_eqds_pacer_pull(&s[0], CC_CHUNK, now), 0); /* once */
    /* a bound larger than the room: nothing until arrivals */
    n = uct_uccl_cc_eqds_pacer_tick(&pacer, now + 1000 * CC_US, out, 2);
    UT_EQ(n, 0);
    uct_uccl_cc_eqds_pacer_arrived(&s[0], 3 * CC_CHUNK);
    now += 1000 * CC_US;
    n = uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 2);
    UT_EQ(n, 1);
    UT_TRUE((out[0] == &s[0]) && s[0].pull_due && !s[0].credit_due);
    UT_EQ(s[0].pulled, CC_CHUNK);
    UT_EQ(s[0].active, 0);
    UT_EQ(uct_uccl_cc_eqds_pacer_pull(&s[0], CC_CHUNK, now), 1);
    uct_uccl_cc_eqds_pacer_pulled(&s[0], CC_CHUNK);
    arrive_all(s, 2);

    /* pulls of random sizes beside a sender that always wants credit:
     * turns alternate, and grants and pulls together keep the rate */
    uct_uccl_cc_eqds_pacer_demand(&s[1], 1ull << 40);
    credit0 = s[1].granted;
    pulled0 = pacer.pulled_bytes;
    for (i = 0; i < N; ++i) {
        now += ut_rand_below(40000);
        if (s[0].pull == 0) {
            bytes = CC_MSS * (1 + ut_rand_below(3 * CC_CHUNK / CC_MSS));
            if (uct_uccl_cc_eqds_pacer_pull(&s[0], bytes, now)) {
                uct_uccl_cc_eqds_pacer_pulled(&s[0], bytes);
                pulls    += bytes;
                most_pull = UT_MAX(most_pull, bytes);
            }
        }
        n = uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 2);
        for (j = 0; j < n; ++j) {
            UT_TRUE(out[j]->credit_due + out[j]->pull_due == 1);
            turns_pull   += out[j]->pull_due;
            turns_credit += out[j]->credit_due;
            if (out[j]->pull_due) {
                UT_TRUE(out[j] == &s[0]);
                /* granted in its turn: the request goes */
                UT_TRUE(s[0].pulled > 0);
                UT_EQ(uct_uccl_cc_eqds_pacer_pull(&s[0], s[0].pulled, now),
                      1);
                pulls    += s[0].pulled;
                most_pull = UT_MAX(most_pull, s[0].pulled);
                uct_uccl_cc_eqds_pacer_pulled(&s[0], s[0].pulled);
            }
        }
        arrive_all(s, 2);
        t[i] = now;
        g[i] = pacer.granted_bytes;
    }
    UT_EQ(pacer.pulled_bytes - pulled0, pulls);
    UT_EQ(s[0].granted, 0);
    UT_EQ(pacer.granted_bytes, s[1].granted + pacer.pulled_bytes);
    /* round robin: a pull's turn is followed by a quantum of credit */
    UT_TRUE(turns_pull > N / 20);
    UT_TRUE(s[1].granted - credit0 >= (uint64_t)turns_pull * CC_CHUNK);
    UT_TRUE(turns_pull <= turns_credit + 1);
    slack = UCT_UCCL_CC_EQDS_MAX_BURST + UT_MAX(most_pull, pacer.quantum);
    for (i = 0; i < N; i += 7) {
        for (j = i + 1; j < N; ++j) {
            UT_TRUE((double)(g[j] - g[i]) <=
                    (double)(t[j] - t[i]) * pacer.rate_bps / 8e9 + slack);
        }
    }
    /* a sender that leaves forgets its pull */
    (void)uct_uccl_cc_eqds_pacer_pull(&s[0], 1ull << 30, now);
    uct_uccl_cc_eqds_pacer_remove(&s[0]);
    UT_EQ(s[0].pull, 0);
    uct_uccl_cc_eqds_pacer_cleanup(&pacer);
    printf("  pull: a GET's bytes granted at once when idle, else a whole "
           "turn of the ring (%u pulls, %u grants), the rate kept over "
           "both, never credit\n", turns_pull, turns_credit);
}

/* The responder's side of a pulled reply: under credit it spends none
 * (in flight, acknowledged like any; paced at the link's rate), and the
 * credit's conservation
 * (issued = sent + given back + held) holds for the rest; before the
 * peer grants (ACK-clocked) it counts like any send. The requester's
 * rx_pull goes through its pacer; with no pacer it is granted. */
static void test_pull_sender(void)
{
    uct_uccl_cc_eqds_pacer_params_t pp = {.link_bps = LINK_BPS};
    uct_uccl_cc_eqds_sender_t *out[1];
    uct_uccl_cc_eqds_pacer_t pacer;
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t tx, rx, fixed;
    uint64_t now = CC_T0, sent = 0, credit;

    cc_params(&p);
    p.eqds.spec_bytes = CC_CHUNK;
    UT_EQ(uct_uccl_cc_init(&tx, "eqds", &p), UCS_OK);
    p.window_chunks = 4;
    UT_EQ(uct_uccl_cc_init(&fixed, "fixed", &p), UCS_OK);
    /* ACK-clocked, and a window: everything counts */
    UT_EQ(uct_uccl_cc_charge(&tx, CC_CHUNK, 1), CC_CHUNK);
    UT_EQ(uct_uccl_cc_charge(&fixed, CC_CHUNK, 1), CC_CHUNK);
    UT_EQ(uct_uccl_cc_rx_pull(&fixed, CC_CHUNK, now), 1);
    /* the peer grants: a pulled reply spends no credit */
    uct_uccl_cc_on_credit(&tx, 0, 0, now);
    UT_EQ(uct_uccl_cc_charge(&tx, CC_CHUNK, 1), 0);
    UT_EQ(uct_uccl_cc_charge(&tx, CC_CHUNK, 0), CC_CHUNK);
    credit = st(&tx).credit_bytes;
    uct_uccl_cc_on_send_part(&tx, 4 * CC_CHUNK, 0, now);
    UT_EQ(tx.inflight_bytes, 4 * CC_CHUNK);
    UT_EQ(st(&tx).credit_bytes, credit);
    /* but no faster than the link: the next send waits for its time
     * beyond a burst */
    UT_EQ(tx.next_send_ns, now + (uint64_t)(4.0 * CC_CHUNK * 8e9 /
                                            p.link_bps) -
                           UCT_UCCL_CC_EQDS_PULL_BURST_NS);
    UT_TRUE(!uct_uccl_cc_can_send(&tx, 0, tx.next_send_ns - 1));
    now = tx.next_send_ns;
    UT_TRUE(uct_uccl_cc_can_send(&tx, 0, now));
    UT_TRUE(uct_uccl_cc_can_send(&tx, CC_CHUNK, now)); /* its own credit */
    uct_uccl_cc_on_send(&tx, CC_CHUNK, now);
    sent += CC_CHUNK;
    UT_TRUE(!uct_uccl_cc_can_send(&tx, CC_MSS, now));
    UT_TRUE(uct_uccl_cc_can_send(&tx, 0, now));  /* a reply still goes */
    check_conserved(&tx, sent);
    check_exact(&tx, sent);
    /* acknowledged: in flight falls, no credit appears */
    cc_ack(&tx, 4 * CC_CHUNK, 10 * CC_US, 0, now);
    UT_EQ(tx.inflight_bytes, CC_CHUNK);
    UT_EQ(st(&tx).credit_bytes, 0);
    check_exact(&tx, sent);
    /* and it does not ask for what it need not */
    UT_EQ(want_of(&tx, 0), 0);

    /* the requester: its own pacer, no credit for the peer */
    UT_EQ(uct_uccl_cc_init(&rx, "eqds", &p), UCS_OK);
    UT_EQ(uct_uccl_cc_rx_pull(&rx, CC_CHUNK, now), 1);  /* no pacer */
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now), UCS_OK);
    uct_uccl_cc_rx_attach(&rx, &pacer, &rx);
    UT_EQ(uct_uccl_cc_rx_pull(&rx, 2 * CC_CHUNK, now), 1);
    uct_uccl_cc_rx_pulled(&rx, 2 * CC_CHUNK);
    UT_EQ(uct_uccl_cc_rx_pull(&rx, CC_CHUNK, now), 0);
    UT_TRUE(uct_uccl_cc_eqds_pacer_full(&pacer)); /* the reply is coming */
    UT_EQ(uct_uccl_cc_eqds_pacer_tick(&pacer, now + 100 * CC_US, out, 1), 0);
    uct_uccl_cc_rx_on_data(&rx, 2 * CC_CHUNK, now);
    UT_EQ(uct_uccl_cc_eqds_pacer_tick(&pacer, now + 1000 * CC_US, out, 1), 1);
    UT_TRUE(out[0]->pull_due && (out[0]->arg == &rx));
    UT_EQ(uct_uccl_cc_rx_pull(&rx, CC_CHUNK, now), 1);
    uct_uccl_cc_rx_pulled(&rx, CC_CHUNK);
    UT_EQ(uct_uccl_cc_rx_credit(&rx, now), 0);
    UT_EQ(st(&rx).rx_granted_bytes, 0);
    uct_uccl_cc_cleanup(&rx);
    uct_uccl_cc_eqds_pacer_cleanup(&pacer);
    uct_uccl_cc_cleanup(&tx);
    uct_uccl_cc_cleanup(&fixed);
    printf("  pull: a reply the receiver pulled spends no credit of the "
           "responder's (conservation kept), a window counts it; the "
           "requester's pacer grants the pull, no credit\n");
}

/* A full pacer forgets its counts of grants after OUT_STALE_NS, but not
 * of pulls: a GET's reply comes however late its sender is, and a grant
 * on top of it overflows the port; those only after PULL_STALE_NS (a peer
 * that never answers) */
static void test_pull_stale(void)
{
    uct_uccl_cc_eqds_pacer_params_t pp = {.link_bps = LINK_BPS,
                                          .max_out  = 3 * CC_CHUNK};
    uct_uccl_cc_eqds_sender_t s[2], *out[2];
    uct_uccl_cc_eqds_pacer_t pacer;
    uint64_t now = CC_T0, full;

    memset(s, 0, sizeof(s));
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now), UCS_OK);
    uct_uccl_cc_eqds_pacer_add(&pacer, &s[0], &s[0]);
    uct_uccl_cc_eqds_pacer_add(&pacer, &s[1], &s[1]);
    uct_uccl_cc_eqds_pacer_demand(&s[1], CC_CHUNK);
    UT_EQ(uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 2), 1);
    UT_EQ(uct_uccl_cc_eqds_pacer_pull(&s[0], 2 * CC_CHUNK, now), 0);
    now += 1000 * CC_US;
    UT_EQ(uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 2), 1);
    UT_TRUE(s[0].pull_due && uct_uccl_cc_eqds_pacer_full(&pacer));
    UT_EQ(pacer.pull_out, 2 * CC_CHUNK);
    uct_uccl_cc_eqds_pacer_pulled(&s[0], 2 * CC_CHUNK);
    /* what the peer says it holds bounds its grants, not our pulls (it
     * may have told it before the GET reached it) */
    uct_uccl_cc_eqds_pacer_bound(&s[0], 0);
    UT_EQ(pacer.out, 3 * CC_CHUNK);
    full = now;
    uct_uccl_cc_eqds_pacer_demand(&s[1], 4 * CC_CHUNK);
    UT_EQ(uct_uccl_cc_eqds_pacer_next_ns(&pacer),
          full + UCT_UCCL_CC_EQDS_OUT_STALE_NS);
    UT_EQ(uct_uccl_cc_eqds_pacer_tick(&pacer, full +
                                      UCT_UCCL_CC_EQDS_OUT_STALE_NS - 1,
                                      out, 2), 0);
    /* the grant that never arrived is forgotten, the pull is not */
    now = full + UCT_UCCL_CC_EQDS_OUT_STALE_NS;
    UT_EQ(uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 2), 1);
    UT_TRUE(out[0] == &s[1]);
    UT_EQ(pacer.forgot, 1);
    UT_EQ(pacer.pull_out, 2 * CC_CHUNK);
    UT_EQ(pacer.out, 3 * CC_CHUNK);
    /* arrivals: the pull's bytes were the last to count */
    uct_uccl_cc_eqds_pacer_arrived(&s[0], CC_CHUNK);
    UT_EQ(s[0].pull_out, CC_CHUNK);
    UT_EQ(pacer.pull_out, CC_CHUNK);
    uct_uccl_cc_eqds_pacer_arrived(&s[0], CC_CHUNK);
    uct_uccl_cc_eqds_pacer_arrived(&s[1], CC_CHUNK);
    UT_EQ(pacer.out, 0);
    UT_EQ(pacer.pull_out, 0);
    /* full of pulls alone: held past OUT_STALE_NS, forgotten after
     * PULL_STALE_NS */
    uct_uccl_cc_eqds_pacer_demand(&s[1], 0);
    now += 1000 * CC_US;
    UT_EQ(uct_uccl_cc_eqds_pacer_pull(&s[0], 3 * CC_CHUNK, now), 1);
    uct_uccl_cc_eqds_pacer_pulled(&s[0], 3 * CC_CHUNK);
    full = now;
    uct_uccl_cc_eqds_pacer_demand(&s[1], CC_CHUNK);
    UT_EQ(uct_uccl_cc_eqds_pacer_next_ns(&pacer),
          full + UCT_UCCL_CC_EQDS_PULL_STALE_NS);
    UT_EQ(uct_uccl_cc_eqds_pacer_tick(&pacer, full +
                                      UCT_UCCL_CC_EQDS_OUT_STALE_NS, out, 2),
          0);
    UT_EQ(uct_uccl_cc_eqds_pacer_tick(&pacer, full +
                                      UCT_UCCL_CC_EQDS_PULL_STALE_NS - 1,
                                      out, 2), 0);
    UT_EQ(uct_uccl_cc_eqds_pacer_tick(&pacer, full +
                                      UCT_UCCL_CC_EQDS_PULL_STALE_NS, out, 2),
          1);
    UT_EQ(pacer.pull_out, 0);
    UT_EQ(pacer.out, CC_CHUNK);
    uct_uccl_cc_eqds_pacer_arrived(&s[0], CC_CHUNK); /* forgotten: none */
    UT_EQ(pacer.out, CC_CHUNK);
    uct_uccl_cc_eqds_pacer_cleanup(&pacer);
    uct_uccl_cc_eqds_pacer_remove(&s[0]);
    uct_uccl_cc_eqds_pacer_remove(&s[1]);
    printf("  pull: a full pacer forgets its grants after %llu ms, pulls "
           "after %llu ms\n", UCT_UCCL_CC_EQDS_OUT_STALE_NS / 1000000,
           UCT_UCCL_CC_EQDS_PULL_STALE_NS / 1000000);
}

static void test_pacer_misc(void)
{
    uct_uccl_cc_eqds_pacer_params_t pp = {.link_bps = LINK_BPS};
    uct_uccl_cc_eqds_sender_t s = {0}, *out[1];
    uct_uccl_cc_eqds_pacer_t pacer;
    uint64_t now = CC_T0, t0;

    /* after a long idle time, one burst (and one quantum) at most */
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now), UCS_OK);
    UT_EQ(uct_uccl_cc_eqds_pacer_next_ns(&pacer), 0);
    uct_uccl_cc_eqds_pacer_add(&pacer, &s, NULL);
    now += 1000000 * CC_US;
    uct_uccl_cc_eqds_pacer_demand(&s, 1ull << 40);
    uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 1);
    arrive_all(&s, 1);
    UT_TRUE(s.granted <= UCT_UCCL_CC_EQDS_MAX_BURST + pacer.quantum);
    UT_TRUE(s.granted >= UCT_UCCL_CC_EQDS_MAX_BURST);
    /* unscheduled bytes push the next grant back by their time */
    t0 = uct_uccl_cc_eqds_pacer_next_ns(&pacer);
    uct_uccl_cc_eqds_pacer_charge(&pacer, 1 << 20, now);
    UT_NEAR(uct_uccl_cc_eqds_pacer_next_ns(&pacer) - t0,
            pacer_ns(&pacer, 1 << 20), 1e-5);
    /* a huge charge is bounded */
    uct_uccl_cc_eqds_pacer_charge(&pacer, 1ull << 50, now);
    UT_EQ(uct_uccl_cc_eqds_pacer_next_ns(&pacer),
          now + UCT_UCCL_CC_EQDS_MAX_CHARGE_NS);
    uct_uccl_cc_eqds_pacer_cleanup(&pacer);

    pp.quantum = UCT_UCCL_CC_EQDS_MAX_QUANTUM + 1;
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now),
          UCS_ERR_INVALID_PARAM);
    pp.quantum   = 0;
    pp.rate_frac = 1.5;
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now),
          UCS_ERR_INVALID_PARAM);
    pp.rate_frac = 0;
    pp.link_bps  = UCT_UCCL_CC_EQDS_MIN_RATE_BPS;
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now),
          UCS_ERR_INVALID_PARAM); /* 0.95 of it is below the least rate */
    printf("  pacer: burst after idle, charges, bounds, bad params\n");
}

/* The time of bytes charged a quantum at a time is never shorter than at
 * the exact rate, and longer by under a ns for all of them: the pacer
 * keeps the fraction of a ns between grants */
static void test_pacer_exact(void)
{
    static const uint64_t rates[] = { 1000000000ull, 9500000000ull,
                                      100000000000ull, 3333333333ull,
                                      400000000000ull, 25000000000ull };
    uct_uccl_cc_eqds_pacer_params_t pp = {.rate_frac = 1};
    uct_uccl_cc_eqds_pacer_t pacer;
    unsigned __int128 exact;
    uint64_t t0, bytes, took;
    unsigned i, n;

    for (i = 0; i < sizeof(rates) / sizeof(rates[0]); ++i) {
        pp.link_bps = rates[i];
        UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, CC_T0), UCS_OK);
        t0    = pacer.t_next;
        bytes = 0;
        for (n = 0; n < 100000; ++n) {
            uct_uccl_cc_eqds_pacer_charge(&pacer, 65536 - n % 7, CC_T0);
            bytes += 65536 - n % 7;
            if (pacer.t_next >=
                CC_T0 + UCT_UCCL_CC_EQDS_MAX_CHARGE_NS / 2) {
                break; /* before the charge's bound cuts it */
            }
        }
        took  = pacer.t_next - t0;
        exact = (unsigned __int128)bytes * 8000000000ull / rates[i];
        UT_TRUE(took >= (uint64_t)exact);
        UT_TRUE(took <= (uint64_t)exact + 1);
        uct_uccl_cc_eqds_pacer_cleanup(&pacer);
    }
    printf("  pacer: charges of ~64 KiB at six rates take their exact time "
           "to within 1 ns, never less\n");
}

/* --- N senders into one receiving link, simulated ---
 *
 * Data crosses the receiver's link (a FIFO at the link rate) and carries
 * the sender's request; control messages (ACKs with the cumulative grant,
 * credit messages from the pacer, and the requests a sender blocked on
 * credit repeats every SIM_REFRESH) take the propagation delay only, and
 * credit and request messages may be lost. */

#define SIM_MAX_SENDERS 16
#define SIM_QLEN        4096
#define SIM_REFRESH     (20 * CC_US)

typedef struct {
    uint64_t time;      /* when it gets there */
    uint64_t sent;      /* when its data was sent */
    uint32_t bytes;     /* data bytes (0: control only) */
    uct_uccl_cc_request_t req;
    uint32_t granted;
    int      has_credit;
} sim_msg_t;

typedef struct {
    sim_msg_t q[SIM_QLEN];
    unsigned  head, tail;
} sim_queue_t;

typedef struct {
    uct_uccl_cc_t tx;          /* at the sender */
    uct_uccl_cc_t rx;          /* its peer at the receiver */
    sim_queue_t   data;        /* to the receiver, in link order */
    sim_queue_t   req;         /* requests to the receiver */
    sim_queue_t   ctl;         /* ACKs and credit to the sender */
    uint64_t      backlog;
    uint64_t      sent;
    uint64_t      delivered;
    uint64_t      window_delivered; /* after the warm-up */
    uint64_t      last_req;
    uint64_t      asleep_until; /* descheduled: takes and sends nothing */
    uct_uccl_cc_request_t told;
} sim_flow_t;

typedef struct {
    int      n;
    int      pacer;            /* the receiver's pacer on */
    int      grants;           /* the receiver grants at all */
    double   loss;             /* credit and request messages lost */
    double   sleep;            /* chance per step that a sender sleeps */
    uint64_t max_sleep;        /* for up to this long (ns) */
    uint64_t max_out;          /* the pacer's; 0: its default */
    uint64_t backlog;          /* per sender; 0: unlimited */
    uint64_t duration;
} sim_cfg_t;

typedef struct {
    double   goodput;          /* of the link rate, after the warm-up */
    double   fairness;         /* min / max delivered, after it */
    uint64_t max_queue;        /* bytes waiting at the link, after it */
    uint64_t max_unsched;      /* of them, most sent without a grant */
    uint64_t max_out;          /* most granted and not arrived, after
                                * the warm-up */
    int      done;             /* every byte delivered */
    uint64_t requests;
} sim_result_t;

static void sim_push(sim_queue_t *q, const sim_msg_t *m)
{
    UT_TRUE(q->tail - q->head < SIM_QLEN);
    q->q[q->tail++ % SIM_QLEN] = *m;
}

static sim_msg_t *sim_peek(sim_queue_t *q, uint64_t now)
{
    sim_msg_t *m = &q->q[q->head % SIM_QLEN];

    return ((q->head != q->tail) && (m->time <= now)) ? m : NULL;
}

static int sim_lost(const sim_cfg_t *cfg)
{
    return ut_rand_below(1000000) < cfg->loss * 1e6;
}

/* the receiver's answer to a request or to data: its cumulative grant */
static void sim_credit(sim_flow_t *f, uint64_t time, const sim_msg_t *data)
{
    sim_msg_t m = {.time = time};

    if (data != NULL) {
        m.bytes = data->bytes;
        m.sent  = data->sent;
    }
    m.has_credit = uct_uccl_cc_rx_driven(&f->rx);
    m.granted    = uct_uccl_cc_rx_credit(&f->rx, time);
    sim_push(&f->ctl, &m);
}

/* the sender's side of one step: take ACKs and credit, send, ask */
static void sim_sender(const sim_cfg_t *cfg, sim_flow_t *f, uint64_t now,
                       uint64_t prop, uint64_t *link_free,
                       sim_result_t *res, int measure)
{
    sim_msg_t *in, m;
    uint64_t released;
    uint32_t len;

    if (now < f->asleep_until) {
        return;
    }
    if ((cfg->sleep > 0) && (ut_rand_below(1000000) < cfg->sleep * 1e6)) {
        f->asleep_until = now + ut_rand_below(cfg->max_sleep);
        return;
    }
    while ((in = sim_peek(&f->ctl, now)) != NULL) {
        if (in->has_credit) { /* credit first, then the ACK */
            uct_uccl_cc_on_credit(&f->tx, in->granted, 0, now);
        }
        if (in->bytes > 0) {
            cc_ack(&f->tx, in->bytes, now - in->sent, 0, now);
        }
        ++f->ctl.head;
    }
    released = uct_uccl_cc_tx_release(&f->tx, (f->backlog < CC_CHUNK) ?
                                      (uint32_t)f->backlog : CC_CHUNK, now);
    for (;;) {
        len = (f->backlog < CC_CHUNK) ? f->backlog : CC_CHUNK;
        if ((len == 0) || !uct_uccl_cc_can_send(&f->tx, len, now)) {
            break;
        }
        memset(&m, 0, sizeof(m));
        m.bytes = len;
        uct_uccl_cc_tx_request(&f->tx, f->backlog, &m.req);
        uct_uccl_cc_on_send(&f->tx, len, now);
        f->sent    += len;
        f->backlog -= len;
        check_conserved(&f->tx, f->sent);
        *link_free  = ((*link_free > now + prop) ? *link_free : now + prop) +
                      len * 8e9 / LINK_BPS;
        if (measure) {
            uint64_t q = (uint64_t)((*link_free - now - prop) *
                                    (LINK_BPS / 8e9));

            res->max_queue = (q > res->max_queue) ? q : res->max_queue;
        }
        m.time = *link_free;
        m.sent = now;
        sim_push(&f->data, &m);
    }
    /* a request on the control path when it says something new, and
     * again now and then while blocked on credit (requests get lost) */
    memset(&m, 0, sizeof(m));
    uct_uccl_cc_tx_request(&f->tx, f->backlog, &m.req);
    if ((m.req.want != f->told.want) || (m.req.spec != f->told.spec) ||
        (released > 0) ||
        ((len > 0) && (now - f->last_req >= SIM_REFRESH))) {
        f->last_req = now;
        f->told     = m.req;
        ++res->requests;
        if (!sim_lost(cfg)) {
            m.time = now + prop;
            sim_push(&f->req, &m);
        }
    }
}

/* the receiver's side: requests, then data (each ACKed with credit) */
static void sim_receiver(sim_flow_t *f, uint64_t now, uint64_t prop,
                         int measure)
{
    sim_msg_t *in;

    while ((in = sim_peek(&f->req, now)) != NULL) {
        uct_uccl_cc_rx_on_request(&f->rx, &in->req, now);
        sim_credit(f, now + prop, NULL);
        ++f->req.head;
    }
    while ((in = sim_peek(&f->data, now)) != NULL) {
        uct_uccl_cc_rx_on_request(&f->rx, &in->req, now);
        uct_uccl_cc_rx_on_data(&f->rx, in->bytes, now);
        f->delivered        += in->bytes;
        f->window_delivered += measure ? in->bytes : 0;
        sim_credit(f, now + prop, in);
        ++f->data.head;
    }
}

static void sim_run(const sim_cfg_t *cfg, sim_result_t *res)
{
    static sim_flow_t f[SIM_MAX_SENDERS];
    const uint64_t prop = 2 * CC_US, dt = 200, warm = 2000 * CC_US;
    uct_uccl_cc_eqds_pacer_params_t pp = {.link_bps = LINK_BPS,
                                          .max_out  = cfg->max_out};
    uct_uccl_cc_eqds_sender_t *out[SIM_MAX_SENDERS];
    uct_uccl_cc_eqds_pacer_t pacer;
    uct_uccl_cc_params_t p;
    uint64_t now = CC_T0, end = CC_T0 + cfg->duration, link_free = 0;
    uint64_t lo = UINT64_MAX, hi = 0, total = 0, all = 0, granted;
    unsigned n, k;
    int i, busy, measure;

    cc_params(&p);
    p.window_chunks = 16; /* for a "fixed" receiver */
    memset(res, 0, sizeof(*res));
    memset(f, 0, sizeof(f));
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now), UCS_OK);
    for (i = 0; i < cfg->n; ++i) {
        UT_EQ(uct_uccl_cc_init(&f[i].tx, "eqds", &p), UCS_OK);
        UT_EQ(uct_uccl_cc_init(&f[i].rx, cfg->grants ? "eqds" : "fixed", &p),
              UCS_OK);
        if (cfg->pacer) {
            uct_uccl_cc_rx_attach(&f[i].rx, &pacer, &f[i]);
        }
        f[i].backlog = cfg->backlog ? cfg->backlog : UINT64_MAX / 2;
    }

    for (busy = 1; busy && (now < end); now += dt) {
        busy    = 0;
        measure = (now > CC_T0 + warm);
        for (i = 0; i < cfg->n; ++i) {
            sim_sender(cfg, &f[i], now, prop, &link_free, res, measure);
            sim_receiver(&f[i], now, prop, measure);
            busy |= (f[i].backlog > 0) || (f[i].tx.inflight_bytes > 0);
        }
        if (!cfg->pacer) {
            continue;
        }
        granted = pacer.granted_bytes;
        n = uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, SIM_MAX_SENDERS);
        /* no grant takes what did not arrive over the pacer's bound
         * (announced speculative bytes may: they come anyway) */
        UT_TRUE((pacer.granted_bytes == granted) ||
                (pacer.out <= pacer.max_out));
        if (measure) {
            res->max_out = (pacer.out > res->max_out) ? pacer.out :
                                                        res->max_out;
        }
        for (k = 0; k < n; ++k) {
            if (!sim_lost(cfg)) {
                sim_credit(out[k]->arg, now + prop, NULL);
            }
        }
    }

    res->done = !busy;
    for (i = 0; i < cfg->n; ++i) {
        lo     = (f[i].window_delivered < lo) ? f[i].window_delivered : lo;
        hi     = (f[i].window_delivered > hi) ? f[i].window_delivered : hi;
        total += f[i].window_delivered;
        all   += f[i].delivered;
        if (res->done && cfg->backlog) {
            UT_EQ(f[i].delivered, cfg->backlog);
        }
        uct_uccl_cc_cleanup(&f[i].tx);
        uct_uccl_cc_cleanup(&f[i].rx);
    }
    UT_EQ(pacer.num_senders, 0);
    /* what crossed the link was granted, or announced speculative */
    UT_TRUE(!cfg->pacer ||
            (all <= pacer.granted_bytes + pacer.charged_bytes));
    uct_uccl_cc_eqds_pacer_cleanup(&pacer);
    if (now > CC_T0 + warm) {
        res->goodput = total * 8e9 / LINK_BPS / (double)(now - CC_T0 - warm);
    }
    res->fairness = (hi > 0) ? (double)lo / hi : 0;
}

static void test_sim(void)
{
    sim_cfg_t cfg = {.n = 8, .pacer = 1, .grants = 1,
                     .duration = 20000 * CC_US};
    sim_result_t r;

    /* incast of 8 long flows through the pacer */
    sim_run(&cfg, &r);
    printf("  sim pacer, 8 senders: goodput %.3f of the link, min/max "
           "%.3f, queue after warm-up <= %" PRIu64 " B\n", r.goodput,
           r.fairness, r.max_queue);
    UT_TRUE(r.goodput >= 0.9 * UCT_UCCL_CC_EQDS_RATE_FRAC);
    /* the link carries the pacer's share, not more */
    UT_TRUE(r.goodput <= UCT_UCCL_CC_EQDS_RATE_FRAC + 0.02);
    UT_TRUE(r.fairness >= 0.9);
    /* once the speculative burst has drained, grants of one chunk at the
     * link rate keep at most one chunk waiting at the link */
    UT_TRUE(r.max_queue <= 2 * CC_CHUNK);

    /* the senders' CPUs are busy: each sleeps now and then for up to
     * 200 us (two chunks take 105 us at the link) and then uses every
     * grant it got meanwhile at once. The rate alone lets those grants
     * pile up and land together; the bound on grants not arrived keeps
     * the queue within it */
    cfg.sleep     = 0.0005;
    cfg.max_sleep = 200 * CC_US;
    cfg.max_out   = UCT_UCCL_CC_EQDS_MAX_OUT_NONE;
    sim_run(&cfg, &r);
    printf("  sim, senders asleep up to 200 us, pacer rate only: goodput "
           "%.3f, queue <= %" PRIu64 " B\n", r.goodput, r.max_queue);
    UT_TRUE(r.max_queue > UCT_UCCL_CC_EQDS_MAX_OUT_QUANTA * CC_CHUNK);
    cfg.max_out = 0;
    sim_run(&cfg, &r);
    printf("  sim, the same with the pacer's bound: goodput %.3f, queue <= "
           "%" PRIu64 " B, granted and not arrived <= %" PRIu64 " B\n",
           r.goodput, r.max_queue, r.max_out);
    UT_TRUE(r.max_queue <= UCT_UCCL_CC_EQDS_MAX_OUT_QUANTA * CC_CHUNK);
    UT_TRUE(r.max_out <= UCT_UCCL_CC_EQDS_MAX_OUT_QUANTA * CC_CHUNK);
    UT_TRUE(r.goodput >= 0.85);
    cfg.sleep = 0;

    /* finite flows, 10% of the credit and request messages lost: all
     * delivered (the next grant, ACK or answer to a repeated request
     * carries the cumulative count) */
    cfg.backlog     = 3 << 20;
    cfg.loss = 0.1;
    cfg.n           = 5;
    cfg.duration    = 200000 * CC_US;
    sim_run(&cfg, &r);
    UT_TRUE(r.done);
    printf("  sim pacer, 5 x 3 MiB, 10%% of credit and requests lost: all "
           "delivered (%" PRIu64 " requests)\n", r.requests);

    /* no pacer at the receiver: arrivals granted back, a window each */
    cfg.pacer = 0;
    sim_run(&cfg, &r);
    UT_TRUE(r.done);
    /* a receiver that grants nothing: ACK-clocked speculative window */
    cfg.grants = 0;
    sim_run(&cfg, &r);
    UT_TRUE(r.done);
    printf("  sim without pacer, and with a peer that never grants: all "
           "delivered\n");

    /* random mixes */
    for (int k = 0; k < 4; ++k) {
        cfg.n           = 1 + ut_rand_below(SIM_MAX_SENDERS);
        cfg.pacer       = ut_rand_below(2);
        cfg.grants      = cfg.pacer || ut_rand_below(2);
        cfg.loss = ut_rand_below(3) * 0.1;
        cfg.backlog     = 1 + ut_rand_below(2 << 20);
        cfg.duration    = 400000 * CC_US;
        sim_run(&cfg, &r);
        UT_TRUE(r.done);
    }
    printf("  sim random mixes (senders, pacer, loss, sizes): all "
           "delivered, credit conserved at every send\n");
}

int main(int argc, char **argv)
{
    ut_init(argc, argv, "test_cc_eqds");
    test_sender_basics();
    test_sender_grants();
    test_sender_release();
    test_sender_gates();
    test_release_pacer();
    test_sender_requests();
    test_sender_alone();
    test_sender_alone_seeded();
    test_sender_cap_reask();
    test_sender_resend();
    test_receiver();
    test_pacer_rate();
    test_pacer_link_share();
    test_pacer_fair();
    test_pacer_misc();
    test_pacer_exact();
    test_pull_pacer();
    test_pull_sender();
    test_pull_stale();
    test_sim();
    return ut_done("test_cc_eqds");
}

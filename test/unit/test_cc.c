/*
 * Congestion control interface: registry lookup (unknown names fail
 * cleanly), fixed window admission, accounting through ack/loss/timeout,
 * the credit (strict) admission, the stats query, the helpers, and every
 * algorithm under random event sequences: no overflow, no wrap, no NaN,
 * windows within their bounds, pacing within its limit.
 */
#include "cc_test.h"

#include <uct/uccl/proto/cc/uccl_cc_int.h>
#include <uct/uccl/proto/cc/uccl_cc_eqds_pacer.h>
#include <uct/uccl/proto/uccl_link.h>

static void test_registry(void)
{
    uct_uccl_cc_params_t p = {.window_bytes = 1 << 20};
    const uct_uccl_cc_ops_t *ops;
    uct_uccl_cc_t cc;
    unsigned i;

    ops = uct_uccl_cc_find("fixed");
    UT_TRUE(ops == &uct_uccl_cc_fixed_ops);
    UT_TRUE(uct_uccl_cc_find("FIXED") == NULL);
    UT_TRUE(uct_uccl_cc_find("") == NULL);
    UT_TRUE(uct_uccl_cc_find("swift-not-yet") == NULL);
    UT_TRUE(uct_uccl_cc_find("swift") == &uct_uccl_cc_swift_ops);
    UT_TRUE(uct_uccl_cc_find("timely") == &uct_uccl_cc_timely_ops);
    UT_TRUE(uct_uccl_cc_find("eqds") == &uct_uccl_cc_eqds_ops);
    UT_TRUE(uct_uccl_cc_find(NULL) == NULL);
    UT_EQ(uct_uccl_cc_init(&cc, "no-such-cc", &p), UCS_ERR_NO_ELEM);
    UT_TRUE(cc.ops == NULL);
    uct_uccl_cc_cleanup(&cc);          /* harmless after a failed init */

    for (i = 0; uct_uccl_cc_get(i) != NULL; ++i) {
        ops = uct_uccl_cc_get(i);
        UT_TRUE(ops->name != NULL && ops->desc != NULL && ops->init != NULL);
        UT_TRUE(uct_uccl_cc_find(ops->name) == ops);
        UT_TRUE(ops->priv_size <= sizeof(cc.priv));
        printf("  registered: %-8s %s\n", ops->name, ops->desc);
    }
    UT_EQ(i, 4);
}

static void test_fixed(void)
{
    uct_uccl_cc_params_t p = {.window_chunks = 4, .chunk_size = 65536};
    const uint32_t chunk   = 65536;
    uct_uccl_cc_t cc;
    unsigned n;

    /* window from chunks x chunk size */
    UT_EQ(uct_uccl_cc_init(&cc, "fixed", &p), UCS_OK);
    UT_EQ(cc.cwnd_bytes, 4 * 65536);
    UT_EQ(cc.next_send_ns, 0);
    for (n = 0; uct_uccl_cc_can_send(&cc, chunk, 0); ++n) {
        uct_uccl_cc_on_send(&cc, chunk, 0);
    }
    UT_EQ(n, 4);
    UT_EQ(cc.inflight_bytes, 4 * 65536);
    /* losses and timeouts do not move a fixed window */
    uct_uccl_cc_on_loss(&cc, chunk, 10);
    uct_uccl_cc_on_timeout(&cc, 20);
    UT_EQ(cc.cwnd_bytes, 4 * 65536);
    UT_EQ(cc.lost_bytes, chunk);
    UT_EQ(cc.timeouts, 1);
    UT_TRUE(!uct_uccl_cc_can_send(&cc, 1, 30));
    /* one chunk acked: exactly one more may go */
    uct_uccl_cc_on_ack(&cc, chunk, 5000, 40);
    UT_EQ(cc.inflight_bytes, 3 * 65536);
    UT_TRUE(uct_uccl_cc_can_send(&cc, chunk, 50));
    UT_TRUE(!uct_uccl_cc_can_send(&cc, chunk + 1, 50));
    /* over-acking cannot underflow */
    uct_uccl_cc_on_ack(&cc, 10 * chunk, 5000, 60);
    UT_EQ(cc.inflight_bytes, 0);
    UT_EQ(cc.acked_bytes, 11 * 65536);
    /* not receiver-driven: no credit, hooks are no-ops */
    UT_EQ(uct_uccl_cc_rx_credit(&cc, 0), 0);
    uct_uccl_cc_rx_on_data(&cc, 100, 0);
    uct_uccl_cc_on_credit(&cc, 100, 0, 0);
    uct_uccl_cc_cleanup(&cc);

    /* bytes win over chunks; caps apply; a chunk bigger than the window
     * still goes when nothing is in flight (no deadlock) */
    p.window_bytes     = 1000;
    p.max_window_bytes = 600;
    UT_EQ(uct_uccl_cc_init(&cc, "fixed", &p), UCS_OK);
    UT_EQ(cc.cwnd_bytes, 600);
    UT_TRUE(uct_uccl_cc_can_send(&cc, chunk, 0));
    uct_uccl_cc_on_send(&cc, chunk, 0);
    UT_TRUE(!uct_uccl_cc_can_send(&cc, 1, 0));
    uct_uccl_cc_cleanup(&cc);
    p.max_window_bytes = 0;
    p.min_window_bytes = 5000;
    UT_EQ(uct_uccl_cc_init(&cc, "fixed", &p), UCS_OK);
    UT_EQ(cc.cwnd_bytes, 5000);
    uct_uccl_cc_cleanup(&cc);

    /* no window at all is a configuration error */
    memset(&p, 0, sizeof(p));
    UT_EQ(uct_uccl_cc_init(&cc, "fixed", &p), UCS_ERR_INVALID_PARAM);

    /* pacing gate: a rate-based algorithm sets next_send_ns */
    p.window_bytes = 1 << 20;
    UT_EQ(uct_uccl_cc_init(&cc, "fixed", &p), UCS_OK);
    cc.next_send_ns = 1000;
    UT_TRUE(!uct_uccl_cc_can_send(&cc, 1, 999));
    UT_TRUE(uct_uccl_cc_can_send(&cc, 1, 1000));
    uct_uccl_cc_cleanup(&cc);
    printf("  fixed: window of 4 chunks admits exactly 4, one per ack; "
           "caps, min, pacing gate\n");
}

/* Admission: a window admits one send when nothing is in flight; a
 * credit (UCT_UCCL_CC_F_STRICT) never goes beyond itself */
static void test_strict(void)
{
    uct_uccl_cc_t cc;

    memset(&cc, 0, sizeof(cc));
    cc.cwnd_bytes = 1000;
    UT_TRUE(uct_uccl_cc_can_send(&cc, 1000, 0));
    UT_TRUE(uct_uccl_cc_can_send(&cc, 5000, 0));    /* empty: one goes */
    cc.flags = UCT_UCCL_CC_F_STRICT;
    UT_TRUE(uct_uccl_cc_can_send(&cc, 1000, 0));
    UT_TRUE(!uct_uccl_cc_can_send(&cc, 1001, 0));
    cc.cwnd_bytes = 0;
    UT_TRUE(!uct_uccl_cc_can_send(&cc, 1, 0));
    cc.cwnd_bytes     = 3000;
    cc.inflight_bytes = 2000;
    UT_TRUE(uct_uccl_cc_can_send(&cc, 1000, 0));
    UT_TRUE(!uct_uccl_cc_can_send(&cc, 1001, 0));
    printf("  admission: window (one send when empty) and strict credit\n");
}

static void test_helpers(void)
{
    uct_uccl_cc_stats_t s;
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    double x;
    int i;

    for (i = 0; i < 2000; ++i) {
        x = ldexp((double)(ut_rand() >> 11) / (1ull << 53) + 0.5,
                  (int)ut_rand_below(120) - 60);
        UT_NEAR(uct_uccl_cc_sqrt(x), sqrt(x), 1e-14);
    }
    UT_TRUE(uct_uccl_cc_sqrt(0) == 0);
    UT_TRUE(uct_uccl_cc_sqrt(-1) == 0);
    UT_TRUE(uct_uccl_cc_sqrt(NAN) == 0);
    UT_NEAR(uct_uccl_cc_sqrt(4), 2, 1e-15);

    /* query: common counters for every algorithm, zeros after a failed
     * init */
    cc_params(&p);
    p.window_bytes = 1 << 20;
    UT_EQ(uct_uccl_cc_init(&cc, "fixed", &p), UCS_OK);
    uct_uccl_cc_on_send(&cc, 100, 0);
    cc_ack(&cc, 100, 1000, 0, 1);
    uct_uccl_cc_on_loss(&cc, 7, 2);
    uct_uccl_cc_on_timeout(&cc, 3);
    uct_uccl_cc_query(&cc, &s);
    UT_EQ(s.cwnd_bytes, 1 << 20);
    UT_EQ(s.acked_bytes, 100);
    UT_EQ(s.lost_bytes, 7);
    UT_EQ(s.timeouts, 1);
    UT_EQ(s.rate_bps, 0);
    uct_uccl_cc_cleanup(&cc);
    uct_uccl_cc_query(&cc, &s);
    UT_EQ(s.cwnd_bytes, 0);
    printf("  helpers: sqrt without libm (2000 values), the stats query\n");
}

/* bounds each algorithm keeps its window in, for the random test */
static void cc_bounds(const char *name, uint64_t *lo, uint64_t *hi)
{
    *lo = 1;
    *hi = UINT64_MAX;
    if (!strcmp(name, "swift")) {
        *lo = UCT_UCCL_CC_SWIFT_MIN_WINDOW;
        *hi = UCT_UCCL_CC_DEF_MAX_WINDOW;
    } else if (!strcmp(name, "timely")) {
        *lo = UCT_UCCL_CC_TIMELY_MIN_WINDOW;
        *hi = UCT_UCCL_CC_DEF_MAX_WINDOW;
    } else if (!strcmp(name, "eqds")) {
        *lo = 0; /* a credit may be used up */
    }
}

static uint64_t rand_time(void)
{
    switch (ut_rand_below(6)) {
    case 0:  return 0;
    case 1:  return ut_rand_below(1000);
    case 2:  return ut_rand_below(1000000);
    case 3:  return ut_rand_below(100000000);
    case 4:  return ut_rand();               /* garbage */
    default: return 10000 + ut_rand_below(200000);
    }
}

/* Random events in random order; the invariants hold after each one */
static void test_random_one(const char *name)
{
    uct_uccl_cc_eqds_pacer_params_t pp = {.link_bps = 10000000000ull};
    uct_uccl_cc_eqds_sender_t *out[4];
    uct_uccl_cc_eqds_pacer_t pacer;
    uct_uccl_cc_request_t req;
    uct_uccl_cc_params_t p;
    uct_uccl_cc_stats_t s;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0, lo, hi, sent = 0, acked = 0;
    uint32_t bytes;
    int i;

    cc_params(&p);
    p.window_bytes = (ut_rand_below(4) == 0) ? 0 : 1 + ut_rand_below(8 << 20);
    p.window_chunks = 4;
    UT_EQ(uct_uccl_cc_init(&cc, name, &p), UCS_OK);
    UT_EQ(uct_uccl_cc_eqds_pacer_init(&pacer, &pp, now), UCS_OK);
    uct_uccl_cc_rx_attach(&cc, &pacer, &cc);
    cc_bounds(name, &lo, &hi);
    for (i = 0; i < 20000; ++i) {
        now  += ut_rand_below(4) ? ut_rand_below(20000) : 0;
        bytes = (ut_rand_below(8) == 0) ? (uint32_t)ut_rand() :
                                          1 + ut_rand_below(CC_CHUNK);
        switch (ut_rand_below(10)) {
        case 0: case 1: case 2:
            if (uct_uccl_cc_can_send(&cc, bytes, now)) {
                /* a credit covers every byte it lets go */
                uct_uccl_cc_query(&cc, &s);
                UT_TRUE(!(cc.flags & UCT_UCCL_CC_F_STRICT) ||
                        (bytes <= s.credit_bytes));
                uct_uccl_cc_on_send(&cc, bytes, now);
                sent += bytes;
            }
            break;
        case 3: case 4: case 5:
            bytes = ut_rand_below(4) ? ut_rand_below(cc.inflight_bytes + 1) :
                                       bytes;
            cc_ack(&cc, bytes, rand_time(), rand_time(), now);
            acked += bytes;
            break;
        case 6:
            uct_uccl_cc_on_loss(&cc, bytes, now);
            break;
        case 7:
            uct_uccl_cc_on_timeout(&cc, now);
            break;
        case 8:
            uct_uccl_cc_on_credit(&cc, (uint32_t)ut_rand(), 0, now);
            uct_uccl_cc_tx_request(&cc, ut_rand() >> ut_rand_below(64), &req);
            break;
        default:
            req.want = (uint32_t)ut_rand();
            req.spec = (uint32_t)ut_rand();
            uct_uccl_cc_rx_on_request(&cc, &req, now);
            uct_uccl_cc_rx_on_data(&cc, bytes, now);
            (void)uct_uccl_cc_rx_credit(&cc, now);
            uct_uccl_cc_eqds_pacer_tick(&pacer, now, out, 4);
            break;
        }
        /* the bytes in flight never wrap */
        UT_TRUE(cc.inflight_bytes <= sent);
        UT_TRUE(cc.cwnd_bytes >= lo);
        if (!(cc.flags & UCT_UCCL_CC_F_STRICT)) {
            UT_TRUE(cc.cwnd_bytes <= hi);
        }
        /* no gap longer than the longest one allowed */
        UT_TRUE((cc.next_send_ns == 0) ||
                (cc.next_send_ns <= now + UCT_UCCL_CC_MAX_DELAY_NS));
        uct_uccl_cc_query(&cc, &s);
        UT_TRUE(s.rate_bps < (1ull << 62));
        UT_TRUE(s.srtt_ns <= UCT_UCCL_CC_MAX_DELAY_NS);
    }
    uct_uccl_cc_cleanup(&cc);
    UT_EQ(pacer.num_senders, 0);
    uct_uccl_cc_eqds_pacer_cleanup(&pacer);
}

static void test_random(void)
{
    const uct_uccl_cc_ops_t *ops;
    unsigned i, r;

    for (i = 0; (ops = uct_uccl_cc_get(i)) != NULL; ++i) {
        for (r = 0; r < 5; ++r) {
            test_random_one(ops->name);
        }
    }
    printf("  random: 5 x 20000 events per algorithm (garbage RTTs, "
           "grants, requests): no wrap, bounds, finite rates\n");
}

/* CC_LINK_RATE=auto: a port's data rate from ibv_port_attr's codes */
static void test_link_rate(void)
{
    UT_EQ(uct_uccl_link_rate_bps(32, 2), 100000000000ull);  /* 4x EDR */
    UT_EQ(uct_uccl_link_rate_bps(64, 2), 200000000000ull);  /* 4x HDR */
    UT_EQ(uct_uccl_link_rate_bps(128, 2), 400000000000ull); /* 4x NDR */
    UT_EQ(uct_uccl_link_rate_bps(32, 1), 25000000000ull);   /* 25GbE */
    UT_EQ(uct_uccl_link_rate_bps(4, 2), 32000000000ull);    /* 4x QDR */
    UT_EQ(uct_uccl_link_rate_bps(1, 1), 2000000000ull);     /* 1x SDR */
    UT_EQ(uct_uccl_link_rate_bps(64, 16), 100000000000ull); /* 2x HDR */
    UT_EQ(uct_uccl_link_rate_bps(16, 8), 163632000000ull);  /* 12x FDR */
    UT_EQ(uct_uccl_link_rate_bps(0, 2), 0);                 /* unknown */
    UT_EQ(uct_uccl_link_rate_bps(3, 2), 0);
    UT_EQ(uct_uccl_link_rate_bps(32, 0), 0);
    UT_EQ(uct_uccl_link_rate_bps(32, 3), 0);
    printf("  link rate: speed x width codes, unknown ones 0\n");
}

int main(int argc, char **argv)
{
    ut_init(argc, argv, "test_cc");
    test_registry();
    test_fixed();
    test_strict();
    test_helpers();
    test_link_rate();
    test_random();
    return ut_done("test_cc");
}

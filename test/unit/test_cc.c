/*
 * Congestion control interface: registry lookup (unknown names fail
 * cleanly), fixed window admission, accounting through ack/loss/timeout,
 * the credit (strict) admission, the stats query and the helpers.
 */
#include "cc_test.h"

#include <uct/uccl/cc/uccl_cc_int.h>

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
    UT_EQ(i, 3);
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
    uct_uccl_cc_on_credit(&cc, 100, 0);
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

int main(int argc, char **argv)
{
    ut_init(argc, argv, "test_cc");
    test_registry();
    test_fixed();
    test_strict();
    test_helpers();
    return ut_done("test_cc");
}

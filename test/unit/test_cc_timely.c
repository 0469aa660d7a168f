/*
 * Timely: the rate's response to the RTT (flat and low -> additive
 * increase, rising -> decrease by the gradient, falling -> increase and
 * hyperactive increase, above T_high -> decrease by the excess), the time
 * scaling of each step, the bounds [min_rate, line rate], the window
 * (gain x rate x RTT) and the pacing that enforces the rate.
 */
#include "cc_test.h"


#define LINK 10000000000.0 /* the cc_params() link, bits/s */
#define AI   (LINK / UCT_UCCL_CC_TIMELY_AI_DIV)

static void timely_init(uct_uccl_cc_t *cc, uct_uccl_cc_params_t *p)
{
    UT_EQ(uct_uccl_cc_init(cc, "timely", p), UCS_OK);
}

static double rate_of(const uct_uccl_cc_t *cc)
{
    return (double)cc_stats(cc).rate_bps;
}

/* n RTT samples `step` apart; returns the time after the last */
static uint64_t samples(uct_uccl_cc_t *cc, uint64_t now, int n, uint64_t rtt,
                        int64_t drift, uint64_t step)
{
    int i;

    for (i = 0; i < n; ++i, now += step) {
        cc_ack(cc, CC_CHUNK, rtt, 0, now);
        rtt += drift;
    }
    return now;
}

static void test_low_rtt_increase(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0;
    double r0;

    cc_params(&p);
    p.timely.min_rtt_ns = 10 * CC_US;
    timely_init(&cc, &p);
    UT_NEAR(rate_of(&cc), LINK, 1e-9); /* starts at line rate */
    /* way above T_high: down */
    now = samples(&cc, now, 20, 2000 * CC_US, 0, 10 * CC_US);
    r0  = rate_of(&cc);
    UT_TRUE(r0 < LINK / 2);
    /* flat and below T_low, one sample per min RTT: one step each */
    now = samples(&cc, now, 100, 20 * CC_US, 0, 10 * CC_US);
    UT_NEAR(rate_of(&cc), r0 + 100 * AI, 1e-6);
    /* samples closer than the min RTT make proportionally smaller steps
     * (the first comes a min RTT after the last one above) */
    r0  = rate_of(&cc);
    now = samples(&cc, now, 100, 20 * CC_US, 0, 2500);
    UT_NEAR(rate_of(&cc), r0 + AI + 99 * AI / 4, 1e-6);
    /* and the rate never passes the line rate */
    now = samples(&cc, now, 20000, 20 * CC_US, 0, 10 * CC_US);
    UT_NEAR(rate_of(&cc), LINK, 1e-9);
    printf("  low RTT: +%.0f Mbit/s per min RTT (link / %u), scaled by "
           "time, capped at the link\n", AI / 1e6, UCT_UCCL_CC_TIMELY_AI_DIV);
    uct_uccl_cc_cleanup(&cc);
}

/* ewma 1: the gradient is the last RTT difference over the min RTT, so
 * each step can be checked exactly */
static void test_gradient(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0, rtt = 100 * CC_US;
    double r0, r1, g = 0.1; /* 1 us per sample over a 10 us min RTT */
    int i, hai;

    for (hai = 1; hai >= 0; --hai) {
        cc_params(&p);
        p.timely.min_rtt_ns = 10 * CC_US;
        p.timely.ewma       = 1.0;
        p.timely.hai_thresh = hai ? 0 : -1;
        timely_init(&cc, &p);
        rtt = 100 * CC_US;
        cc_ack(&cc, CC_CHUNK, rtt, 0, now);
        /* rising between T_low and T_high: each sample cuts beta x g */
        for (i = 0; i < 30; ++i) {
            now += 10 * CC_US;
            r0   = rate_of(&cc);
            rtt += CC_US;
            cc_ack(&cc, CC_CHUNK, rtt, 0, now);
            UT_NEAR(rate_of(&cc), r0 * (1 - UCT_UCCL_CC_TIMELY_BETA * g),
                    1e-6);
        }
        UT_EQ(cc_stats(&cc).decreases, 30);
        /* falling: one step up per sample, hai_mult steps once hai_thresh
         * samples in a row fell (unless HAI is off) */
        for (i = 1; i <= 40; ++i) {
            now += 10 * CC_US;
            r0   = rate_of(&cc);
            rtt -= CC_US;
            cc_ack(&cc, CC_CHUNK, rtt, 0, now);
            r1   = rate_of(&cc);
            UT_NEAR(r1 - r0, (hai && (i >= UCT_UCCL_CC_TIMELY_HAI_THRESH)) ?
                             UCT_UCCL_CC_TIMELY_HAI_MULT * AI : AI, 1e-6);
        }
        uct_uccl_cc_cleanup(&cc);
    }
    printf("  gradient: rising RTT -> x(1 - beta g) per sample; falling "
           "-> +1 step, +%u after %d falls (HAI), or +1 (HAI off)\n",
           UCT_UCCL_CC_TIMELY_HAI_MULT, UCT_UCCL_CC_TIMELY_HAI_THRESH);
}

static void test_high_rtt(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0, rtt = 1000 * CC_US;
    double r0, cut;

    cc_params(&p);
    p.timely.min_rtt_ns = 10 * CC_US;
    timely_init(&cc, &p);
    r0 = rate_of(&cc);
    cc_ack(&cc, CC_CHUNK, rtt, 0, now);
    cut = UCT_UCCL_CC_TIMELY_BETA *
          (1 - (double)UCT_UCCL_CC_TIMELY_T_HIGH_NS / rtt);
    UT_NEAR(rate_of(&cc), r0 * (1 - cut), 1e-6);
    /* never below the minimum rate, however long it lasts */
    now = samples(&cc, now + 10 * CC_US, 500, 5000 * CC_US, 0, 10 * CC_US);
    UT_NEAR(rate_of(&cc), UCT_UCCL_CC_TIMELY_MIN_RATE_BPS, 1e-9);
    /* a timeout halves the rate, within the bounds too */
    uct_uccl_cc_on_timeout(&cc, now);
    UT_NEAR(rate_of(&cc), UCT_UCCL_CC_TIMELY_MIN_RATE_BPS, 1e-9);
    uct_uccl_cc_cleanup(&cc);
    timely_init(&cc, &p);
    uct_uccl_cc_on_timeout(&cc, now);
    UT_NEAR(rate_of(&cc), LINK / 2, 1e-9);
    /* a fast retransmit is not a delay signal */
    uct_uccl_cc_on_loss(&cc, CC_CHUNK, now);
    UT_NEAR(rate_of(&cc), LINK / 2, 1e-9);
    uct_uccl_cc_cleanup(&cc);
    printf("  high RTT: x(1 - beta (1 - T_high / rtt)), floor at min "
           "rate; timeout halves\n");
}

/* The receiver's queueing time is not the fabric's: subtracted */
static void test_remote_delay(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0;
    double r0;

    cc_params(&p);
    p.timely.min_rtt_ns = 10 * CC_US;
    timely_init(&cc, &p);
    now = samples(&cc, now, 10, 2000 * CC_US, 0, 10 * CC_US);
    r0  = rate_of(&cc);
    /* 900 us RTT, 880 us of it in the receiver: the fabric is at 20 us */
    cc_ack(&cc, CC_CHUNK, 900 * CC_US, 880 * CC_US, now);
    UT_NEAR(rate_of(&cc), r0 + AI, 1e-6);
    /* a report larger than the RTT is not trusted beyond it */
    cc_ack(&cc, CC_CHUNK, 30 * CC_US, 5000 * CC_US, now + 10 * CC_US);
    UT_TRUE(cc_stats(&cc).min_rtt_ns >= 1);
    uct_uccl_cc_cleanup(&cc);
    printf("  remote delay: the receiver's queueing is subtracted\n");
}

/* window = gain x rate x RTT; sends paced at the rate */
static void test_window_pacing(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0, start, sent = 0, rtt = 40 * CC_US;
    double rate, w;
    int i;

    cc_params(&p);
    p.timely.min_rtt_ns = 10 * CC_US;
    timely_init(&cc, &p);
    now  = samples(&cc, now, 5, 800 * CC_US, 0, 10 * CC_US);
    now  = samples(&cc, now, 1, rtt, 0, 10 * CC_US);
    rate = rate_of(&cc);
    w    = UCT_UCCL_CC_TIMELY_WINDOW_GAIN * rate / 8e9 *
           cc_stats(&cc).srtt_ns;
    UT_NEAR(cc.cwnd_bytes, w, 1e-3);
    UT_TRUE(rate < LINK);

    /* a sender with data always waiting, ACKs without samples (the rate
     * stays): it sends at the rate, not faster */
    start = now;
    for (i = 0; i < 2000; ++i) {
        UT_TRUE(uct_uccl_cc_can_send(&cc, CC_CHUNK, now));
        uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
        sent += CC_CHUNK;
        UT_TRUE(!uct_uccl_cc_can_send(&cc, CC_CHUNK, now));
        cc_ack(&cc, CC_CHUNK, 0, 0, now + 1);
        now = cc.next_send_ns;
    }
    UT_NEAR(sent * 8e9 / (double)(now - start), rate, 1e-4);
    UT_NEAR(cc_stats(&cc).pacing_ns, CC_CHUNK * 8e9 / rate, 1e-3);
    printf("  window %.0f KiB = %.0f x %.2f Gbit/s x %.0f us; paced "
           "sender achieves %.3f Gbit/s\n", w / 1024,
           UCT_UCCL_CC_TIMELY_WINDOW_GAIN, rate / 1e9,
           cc_stats(&cc).srtt_ns / 1e3,
           sent * 8.0 / (double)(now - start));
    uct_uccl_cc_cleanup(&cc);
}

static void test_params(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;

    cc_params(&p);
    p.timely.t_low_ns  = 500 * CC_US;
    p.timely.t_high_ns = 100 * CC_US;
    UT_EQ(uct_uccl_cc_init(&cc, "timely", &p), UCS_ERR_INVALID_PARAM);
    cc_params(&p);
    p.timely.min_rate_bps = 2 * (uint64_t)LINK;
    UT_EQ(uct_uccl_cc_init(&cc, "timely", &p), UCS_ERR_INVALID_PARAM);
    cc_params(&p);
    p.timely.ewma = 1.5;
    UT_EQ(uct_uccl_cc_init(&cc, "timely", &p), UCS_ERR_INVALID_PARAM);
    /* no link rate given: the default line rate */
    cc_params(&p);
    p.link_bps = 0;
    timely_init(&cc, &p);
    UT_NEAR(rate_of(&cc), UCT_UCCL_CC_DEF_LINK_BPS, 1e-9);
    uct_uccl_cc_cleanup(&cc);
    printf("  params: bad ranges refused; unknown link -> %.0f Gbit/s\n",
           UCT_UCCL_CC_DEF_LINK_BPS / 1e9);
}

int main(int argc, char **argv)
{
    ut_init(argc, argv, "test_cc_timely");
    test_low_rtt_increase();
    test_gradient();
    test_high_rtt();
    test_remote_delay();
    test_window_pacing();
    test_params();
    return ut_done("test_cc_timely");
}

/*
 * Swift: the delay target (flow and hop scaling), additive increase of
 * `ai` packets per RTT below it (measured), multiplicative decrease above
 * it bounded by max_mdf and at most once per RTT (the gate re-arms on
 * every decrease), loss and timeout responses, the endpoint window, and
 * pacing below one chunk (the rate a paced sender achieves).
 */
#include "cc_test.h"

#include <uct/uccl/proto/cc/uccl_cc_int.h>


static void swift_init(uct_uccl_cc_t *cc, uct_uccl_cc_params_t *p)
{
    UT_EQ(uct_uccl_cc_init(cc, "swift", p), UCS_OK);
}

/* the flow scaling term the paper defines, computed independently */
static double swift_fs(double pkts, double range, double lo, double hi)
{
    double a = range / (1 / sqrt(lo) - 1 / sqrt(hi));
    double v = a / sqrt(pkts) - a / sqrt(hi);

    return (v < 0) ? 0 : ((v > range) ? range : v);
}

static void test_target(void)
{
    static const double pkts[] = {0.05, 0.1, 0.125, 0.5, 1, 4, 16, 64, 100,
                                  1000};
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    double prev = 1e18, t, e;
    unsigned i;

    for (i = 0; i < sizeof(pkts) / sizeof(pkts[0]); ++i) {
        cc_params(&p);
        p.window_bytes = (uint64_t)(pkts[i] * CC_MSS);
        p.min_window_bytes = 128;
        p.hops = (i % 3);
        swift_init(&cc, &p);
        /* a sample well below target updates the target, not the window
         * much: the target is computed from the window before the ACK */
        cc_ack(&cc, 1, 5 * CC_US, 0, CC_T0);
        t = cc_stats(&cc).target_ns - (double)p.hops *
            UCT_UCCL_CC_SWIFT_HOP_SCALE_NS;
        e = UCT_UCCL_CC_SWIFT_BASE_TARGET_NS +
            swift_fs((double)p.window_bytes / CC_MSS,
                     UCT_UCCL_CC_SWIFT_FS_RANGE_NS,
                     UCT_UCCL_CC_SWIFT_FS_MIN_CWND,
                     UCT_UCCL_CC_SWIFT_FS_MAX_CWND);
        UT_TRUE(fabs(t - e) <= 1.0); /* whole ns */
        UT_TRUE(t <= prev + 1e-6); /* larger windows, less delay allowed */
        prev = t;
        uct_uccl_cc_cleanup(&cc);
    }
    /* the ends of the range */
    UT_NEAR(swift_fs(0.1, 250000, 0.1, 100), 250000, 1e-9);
    UT_TRUE(swift_fs(100, 250000, 0.1, 100) < 1e-6);
    printf("  target: base + flow scaling in [0, fs_range], decreasing "
           "in the window; + hops x hop_scale\n");
}

/* Grow below target for `rounds` RTTs, acking `ack` bytes at a time; the
 * growth per RTT must be ai packets (the paper's semantics) */
static void swift_ai_rounds(double ai, uint32_t ack, uint64_t window)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0, w0, acked, a, rtt = 20 * CC_US;
    double per_rtt;
    int r;

    cc_params(&p);
    p.window_bytes = window;
    p.swift.ai     = ai;
    swift_init(&cc, &p);
    w0 = cc.cwnd_bytes;
    for (r = 0; r < 50; ++r) {
        /* one RTT: a window's worth of ACKs */
        uint64_t round = cc.cwnd_bytes;

        for (acked = 0; acked < round; acked += a) {
            a = (ack < round - acked) ? ack : round - acked;
            uct_uccl_cc_on_send(&cc, a, now);
            cc_ack(&cc, a, rtt, 0, now);
            now += rtt * a / round;
        }
        UT_TRUE(cc.cwnd_bytes >= w0);
    }
    per_rtt = (double)(cc.cwnd_bytes - w0) / 50;
    /* a round acks the window it started with while the window grows: a
     * little under ai packets, never over */
    UT_TRUE(per_rtt <= ai * CC_MSS * 1.001);
    UT_TRUE(per_rtt >= ai * CC_MSS * 0.97);
    UT_EQ(cc_stats(&cc).decreases, 0);
    printf("  AI: ai %.1f, ACKs of %u B, window %" PRIu64 " KiB: +%.0f B per "
           "RTT (ai x MSS = %.0f)\n", ai, ack, window >> 10, per_rtt,
           ai * CC_MSS);
    uct_uccl_cc_cleanup(&cc);
}

/* A window under one chunk is paced: one chunk per RTT x chunk / cwnd.
 * Each chunk's ACK adds ai x MSS x chunk / cwnd, so the window still grows
 * by ai packets per RTT of elapsed time (the paper's rule, per packet) */
static void test_ai_paced(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0, rtt = 10 * CC_US, w0, next;
    double rtts = 0;
    int i;

    cc_params(&p);
    p.window_bytes = 8192;
    swift_init(&cc, &p);
    w0 = cc.cwnd_bytes;
    for (i = 0; (i < 100) && (cc.cwnd_bytes < CC_CHUNK); ++i) {
        UT_TRUE(uct_uccl_cc_can_send(&cc, CC_CHUNK, now));
        uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
        /* one chunk in flight: nothing more, by window or by pacing */
        UT_TRUE(!uct_uccl_cc_can_send(&cc, CC_CHUNK, now));
        UT_TRUE(fabs((double)(cc.next_send_ns - now) -
                     (double)rtt * CC_CHUNK / cc.cwnd_bytes) <= 1.0);
        rtts += (double)(cc.next_send_ns - now) / rtt;
        next = cc.next_send_ns;
        cc_ack(&cc, CC_CHUNK, rtt, 0, now + rtt);
        if (cc.cwnd_bytes >= CC_CHUNK) {
            UT_EQ(cc.next_send_ns, 0); /* a chunk's window: not paced */
            break;
        }
        /* before the gap is over nothing goes */
        UT_EQ(cc.next_send_ns, next);
        UT_TRUE(!uct_uccl_cc_can_send(&cc, CC_CHUNK, next - 1));
        now = next;
    }
    UT_TRUE(cc.cwnd_bytes >= CC_CHUNK);
    UT_NEAR((double)(cc.cwnd_bytes - w0) / CC_MSS, rtts, 1e-3);
    printf("  AI paced: window 8 KiB -> %" PRIu64 " B after %d chunks in "
           "%.1f RTTs: +%.2f packets per RTT\n", cc.cwnd_bytes, i, rtts,
           (double)(cc.cwnd_bytes - w0) / CC_MSS / rtts);
    uct_uccl_cc_cleanup(&cc);
}

static void test_md_once_per_rtt(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0, rtt = 70 * CC_US, last = 0, w, n0;
    double target, f;
    unsigned decreases = 0, acks = 0;

    cc_params(&p);
    p.window_bytes      = 8 << 20;
    p.swift.fs_range_ns = 1; /* no flow scaling: the target stays put */
    swift_init(&cc, &p);
    /* ACKs every microsecond for 2 ms, all above target */
    for (; now < CC_T0 + 2000 * CC_US; now += CC_US, ++acks) {
        w  = cc.cwnd_bytes;
        n0 = cc_stats(&cc).decreases;
        uct_uccl_cc_on_send(&cc, 4096, now);
        cc_ack(&cc, 4096, rtt, 0, now);
        if (cc_stats(&cc).decreases == n0) {
            UT_TRUE(cc.cwnd_bytes == w);
            continue;
        }
        /* a decrease: not within an RTT of the last, by the rule */
        UT_TRUE((last == 0) || (now - last >= rtt));
        target = cc_stats(&cc).target_ns;
        f      = 1 - UCT_UCCL_CC_SWIFT_BETA * (rtt - target) / rtt;
        f      = (f > 1 - UCT_UCCL_CC_SWIFT_MAX_MDF) ? f :
                 1 - UCT_UCCL_CC_SWIFT_MAX_MDF;
        UT_NEAR(cc.cwnd_bytes, w * f, 2e-3);
        last = now;
        ++decreases;
    }
    /* and the gate re-opens every RTT: 2 ms / 70 us */
    UT_TRUE(decreases >= 2000 / 70 - 1);
    UT_TRUE(decreases <= 2000 / 70 + 1);
    printf("  MD: %u ACKs above target in 2 ms, %u decreases (RTT 70 us), "
           "each by max(1 - beta (d - t) / d, 1 - max_mdf)\n", acks,
           decreases);
    uct_uccl_cc_cleanup(&cc);

    /* a delay far above target is cut by max_mdf, not more */
    swift_init(&cc, &p);
    w = cc.cwnd_bytes;
    cc_ack(&cc, 1, 5000 * CC_US, 0, now);
    UT_EQ(cc.cwnd_bytes, w / 2);
    uct_uccl_cc_cleanup(&cc);
}

static void test_loss_timeout(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0, w;

    cc_params(&p);
    p.window_bytes = 1 << 20;
    swift_init(&cc, &p);
    uct_uccl_cc_on_loss(&cc, CC_CHUNK, now);
    UT_EQ(cc.cwnd_bytes, 1 << 19);
    uct_uccl_cc_on_loss(&cc, CC_CHUNK, now + 5 * CC_US);   /* same RTT */
    UT_EQ(cc.cwnd_bytes, 1 << 19);
    uct_uccl_cc_on_loss(&cc, CC_CHUNK, now + 10 * CC_US);  /* srtt later */
    UT_EQ(cc.cwnd_bytes, 1 << 18);
    /* retx_reset 1 (default): a timeout drops to the minimum window */
    uct_uccl_cc_on_timeout(&cc, now + 11 * CC_US);
    UT_EQ(cc.cwnd_bytes, UCT_UCCL_CC_SWIFT_MIN_WINDOW);
    uct_uccl_cc_cleanup(&cc);

    /* losses ignored (loss_mdf < 0); three timeouts in a row to reset */
    p.swift.loss_mdf   = -1;
    p.swift.retx_reset = 3;
    swift_init(&cc, &p);
    w = cc.cwnd_bytes;
    uct_uccl_cc_on_loss(&cc, CC_CHUNK, now);
    UT_EQ(cc.cwnd_bytes, w);
    uct_uccl_cc_on_timeout(&cc, now);
    UT_EQ(cc.cwnd_bytes, w / 2);
    uct_uccl_cc_on_timeout(&cc, now + 1);                  /* gated */
    UT_EQ(cc.cwnd_bytes, w / 2);
    uct_uccl_cc_on_timeout(&cc, now + 2);                  /* third */
    UT_EQ(cc.cwnd_bytes, UCT_UCCL_CC_SWIFT_MIN_WINDOW);
    /* an ACK ends the run of timeouts */
    cc_ack(&cc, 4096, 5 * CC_US, 0, now + 100 * CC_US);
    w = cc.cwnd_bytes;
    uct_uccl_cc_on_timeout(&cc, now + 200 * CC_US);
    UT_EQ(cc.cwnd_bytes, w / 2 < UCT_UCCL_CC_SWIFT_MIN_WINDOW ?
                         UCT_UCCL_CC_SWIFT_MIN_WINDOW : w / 2);
    uct_uccl_cc_cleanup(&cc);
    printf("  loss: max_mdf once per RTT (or off); timeout: min window "
           "after retx_reset in a row, else max_mdf\n");
}

/* The receiver's queueing time drives the endpoint window, the rest of
 * the RTT the fabric window; the effective window is the smaller */
static void test_endpoint(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t now = CC_T0, rtt = 300 * CC_US, w;
    int i;

    cc_params(&p);
    p.window_bytes = 1 << 20;
    swift_init(&cc, &p);
    w = cc.cwnd_bytes;
    /* 300 us RTTs of which 290 us waiting in the receiver: the fabric is
     * fine (10 us: its window grows), the endpoint is not (290 > 100 us:
     * its window, from the maximum, halves every RTT) */
    for (i = 0; i < 8; ++i, now += rtt) {
        cc_ack(&cc, 4096, rtt, 290 * CC_US, now);
    }
    UT_TRUE(cc.cwnd_bytes < w);
    UT_EQ(cc.cwnd_bytes, UCT_UCCL_CC_DEF_MAX_WINDOW >> 8);
    /* 4 and 2 MiB are above the fabric window: 1 MiB .. 32 KiB count */
    UT_EQ(cc_stats(&cc).decreases, 6);
    uct_uccl_cc_cleanup(&cc);

    /* the same RTTs unexplained by the receiver are fabric delay */
    swift_init(&cc, &p);
    for (i = 0, now = CC_T0; i < 8; ++i, now += rtt) {
        cc_ack(&cc, 4096, rtt, 0, now);
    }
    UT_EQ(cc.cwnd_bytes, (1 << 20) >> 8);
    uct_uccl_cc_cleanup(&cc);

    /* a receiver at ease and a fabric at ease: the window grows */
    swift_init(&cc, &p);
    for (i = 0, now = CC_T0; i < 100; ++i) {
        cc_ack(&cc, 4096, 30 * CC_US, 10 * CC_US, now + i * CC_US);
    }
    UT_TRUE(cc.cwnd_bytes > w);
    uct_uccl_cc_cleanup(&cc);
    printf("  endpoint: receiver queueing -> its own window; the fabric "
           "window sees the RTT less it\n");
}

/* Paced sends at the earliest allowed moment, or late by a random amount:
 * the bytes sent in any stretch stay within rate x time + two chunks */
static void test_pacing(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;
    uint64_t times[400], now = CC_T0, rtt = 10 * CC_US;
    double rate, gap;
    unsigned i, j, n = 400;

    cc_params(&p);
    p.window_bytes = 16384; /* a quarter chunk: 1 chunk per 4 RTTs */
    swift_init(&cc, &p);
    gap  = (double)rtt * CC_CHUNK / 16384;
    rate = 16384.0 / rtt; /* bytes per ns */
    for (i = 0; i < n; ++i) {
        UT_TRUE(uct_uccl_cc_can_send(&cc, CC_CHUNK, now));
        uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
        times[i] = now;
        UT_TRUE(cc.next_send_ns <= now + (uint64_t)gap);
        /* an ACK without an RTT sample leaves the window alone */
        cc_ack(&cc, CC_CHUNK, 0, 0, now + 1);
        UT_EQ(cc.cwnd_bytes, 16384);
        UT_TRUE(!uct_uccl_cc_can_send(&cc, CC_CHUNK, cc.next_send_ns - 1));
        /* late by up to two gaps, half the time */
        now = cc.next_send_ns + ((ut_rand() & 1) ?
                                 ut_rand_below((uint32_t)(2 * gap)) : 0);
    }
    for (i = 0; i < n; ++i) {
        for (j = i + 1; j < n; ++j) {
            /* chunks i..j-1 fit in [times[i], times[j]) */
            UT_TRUE((double)(j - i) * CC_CHUNK <=
                    rate * (double)(times[j] - times[i]) + 2.0 * CC_CHUNK);
        }
    }
    /* late ones catch up by one gap at most */
    UT_TRUE((double)(times[n - 1] - times[0]) >= gap * (n - 2));
    printf("  pacing: window 16 KiB, chunk 64 KiB: one chunk per %.0f us; "
           "any stretch <= rate x time + 2 chunks (late senders too)\n",
           gap / 1e3);
    uct_uccl_cc_cleanup(&cc);

    /* a window of at least one chunk is not paced */
    p.window_bytes = CC_CHUNK;
    swift_init(&cc, &p);
    uct_uccl_cc_on_send(&cc, CC_CHUNK, now);
    UT_EQ(cc.next_send_ns, 0);
    uct_uccl_cc_cleanup(&cc);
}

static void test_params(void)
{
    uct_uccl_cc_params_t p;
    uct_uccl_cc_t cc;

    cc_params(&p);
    p.swift.fs_min_cwnd = 200; /* above fs_max */
    UT_EQ(uct_uccl_cc_init(&cc, "swift", &p), UCS_ERR_INVALID_PARAM);
    UT_TRUE(cc.ops == NULL);
    cc_params(&p);
    p.swift.max_mdf = 1.0;
    UT_EQ(uct_uccl_cc_init(&cc, "swift", &p), UCS_ERR_INVALID_PARAM);
    cc_params(&p);
    p.min_window_bytes = 1 << 20;
    p.max_window_bytes = 1 << 10;
    UT_EQ(uct_uccl_cc_init(&cc, "swift", &p), UCS_ERR_INVALID_PARAM);
    /* the window starts within its bounds */
    cc_params(&p);
    p.window_bytes     = 64 << 20;
    p.max_window_bytes = 4 << 20;
    swift_init(&cc, &p);
    UT_EQ(cc.cwnd_bytes, 4 << 20);
    UT_EQ(cc.flags, 0);
    uct_uccl_cc_cleanup(&cc);
    printf("  params: bad ranges refused, the window starts in bounds\n");
}

int main(int argc, char **argv)
{
    ut_init(argc, argv, "test_cc_swift");
    test_target();
    swift_ai_rounds(1.0, CC_MSS, 256 << 10);
    swift_ai_rounds(1.0, CC_CHUNK, 4 << 20);
    swift_ai_rounds(2.5, CC_MSS, 1 << 20);
    test_ai_paced();
    test_md_once_per_rtt();
    test_loss_timeout();
    test_endpoint();
    test_pacing();
    test_params();
    return ut_done("test_cc_swift");
}

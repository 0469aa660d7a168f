/*
 * Unit test of the softverbs fabric model alone (no devices, no fabric shm):
 * serialization times, tail drop, random loss rate, per-path loss, outage
 * windows, ECMP spread, a receiving link that serves packets in arrival
 * order, configuration errors and cross-process agreement.
 */
#include "softverbs/sv_model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *vars[] = {
    "SOFTVERBS_LINK_GBPS", "SOFTVERBS_PATH_GBPS", "SOFTVERBS_BUF_BYTES",
    "SOFTVERBS_DELAY_US", "SOFTVERBS_PATH_SKEW_US", "SOFTVERBS_LOSS",
    "SOFTVERBS_PATH_LOSS", "SOFTVERBS_PATH_DOWN", "SOFTVERBS_PATHS",
    "SOFTVERBS_MTU", "SOFTVERBS_SEED", NULL
};

static int failures;

#define CHECK(_cond, _fmt, ...) \
    do { \
        if (_cond) { \
            printf("  ok   " _fmt "\n", ## __VA_ARGS__); \
        } else { \
            printf("  FAIL " _fmt "   [%s:%d]\n", ## __VA_ARGS__, \
                   __FILE__, __LINE__); \
            ++failures; \
        } \
    } while (0)

/* Fresh model from a list of NAME=VALUE settings (NULL-terminated). */
static void *model_setup(void *area, const char *const *settings,
                         int expect_ret)
{
    char buf[512], *eq;
    const char *const *s;
    const char **v;
    int ret;

    for (v = vars; *v != NULL; ++v) {
        unsetenv(*v);
    }
    for (s = settings; *s != NULL; ++s) {
        snprintf(buf, sizeof(buf), "%s", *s);
        eq  = strchr(buf, '=');
        *eq = '\0';
        setenv(buf, eq + 1, 1);
    }
    memset(area, 0, SV_MODEL_SHM_SIZE);
    ret = sv_model_attach(area, 1);
    if (ret != expect_ret) {
        printf("  FAIL sv_model_attach(%s...) returned %d, expected %d\n",
               settings[0] ? settings[0] : "defaults", ret, expect_ret);
        ++failures;
    }
    return area;
}

static void test_defaults(void *area)
{
    static const char *const none[] = { NULL };
    sv_pkt_fate_t f;
    uint64_t now;

    printf("defaults:\n");
    model_setup(area, none, 0);
    CHECK(!sv_model_active(), "model inactive without variables");
    CHECK(sv_model_mtu() == 4096, "mtu %u == 4096", sv_model_mtu());
    CHECK(sv_model_num_paths() == 8, "paths %u == 8", sv_model_num_paths());
    now = sv_now_ns();
    sv_model_xmit(0, 1, 10, 20, 4096, now, &f);
    CHECK(!f.dropped && (f.arrive_ns == now),
          "inactive model: arrive %+lld ns, dropped %d",
          (long long)(f.arrive_ns - now), f.dropped);
    sv_model_print_config(stdout);
}

static void test_config_errors(void *area)
{
    static const char *const bad[][3] = {
        { "SOFTVERBS_LOSS=abc", NULL },
        { "SOFTVERBS_LOSS=1.5", NULL },
        { "SOFTVERBS_MTU=1000", NULL },
        { "SOFTVERBS_MTU=8192", NULL },
        { "SOFTVERBS_PATHS=0", NULL },
        { "SOFTVERBS_PATHS=300", NULL },
        { "SOFTVERBS_PATH_DOWN=8:1-2", NULL },   /* 8 paths: 0..7 */
        { "SOFTVERBS_PATH_DOWN=1:5-2", NULL },
        { "SOFTVERBS_PATH_DOWN=1", NULL },
        { "SOFTVERBS_PATH_LOSS=2", NULL },
        { "SOFTVERBS_PATH_LOSS=2:-0.1", NULL },
        { "SOFTVERBS_LINK_GBPS=fast", NULL },
        { "SOFTVERBS_LINK_GBPS=1,999:2", NULL },
        { "SOFTVERBS_BUF_BYTES=12q", NULL },
        { "SOFTVERBS_DELAY_US=-1", NULL },
        { "SOFTVERBS_SEED=x", NULL },
    };
    static const char *const active[][3] = {
        { "SOFTVERBS_LINK_GBPS=100", NULL },
        { "SOFTVERBS_LINK_GBPS=3:25", NULL },
        { "SOFTVERBS_PATH_GBPS=50", NULL },
        { "SOFTVERBS_DELAY_US=2", NULL },
        { "SOFTVERBS_PATH_SKEW_US=1", NULL },
        { "SOFTVERBS_LOSS=0.001", NULL },
        { "SOFTVERBS_PATH_LOSS=1:0.5", NULL },
        { "SOFTVERBS_PATH_DOWN=1:0-10", NULL },
    };
    static const char *const inactive[] = {
        "SOFTVERBS_BUF_BYTES=64k", "SOFTVERBS_MTU=1024", "SOFTVERBS_PATHS=4",
        "SOFTVERBS_SEED=7", "SOFTVERBS_LINK_GBPS=0", "SOFTVERBS_LOSS=0", NULL
    };
    unsigned i;

    printf("configuration errors:\n");
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        model_setup(area, bad[i], -EINVAL);
        printf("  ok   %s rejected\n", bad[i][0]);
    }
    printf("active/inactive:\n");
    for (i = 0; i < sizeof(active) / sizeof(active[0]); ++i) {
        model_setup(area, active[i], 0);
        CHECK(sv_model_active(), "%s makes the model active", active[i][0]);
    }
    model_setup(area, inactive, 0);
    CHECK(!sv_model_active(), "buffer/mtu/paths/seed/zero rate: inactive");
    CHECK(sv_model_mtu() == 1024, "SOFTVERBS_MTU=1024 -> %u", sv_model_mtu());
    CHECK(sv_model_num_paths() == 4, "SOFTVERBS_PATHS=4 -> %u",
          sv_model_num_paths());
    CHECK(sv_model_seed() == 7, "SOFTVERBS_SEED=7 -> %llu",
          (unsigned long long)sv_model_seed());
}

/* A process joining the fabric gets the creator's configuration, whatever
 * its own environment says. */
static void test_joiner(void *area)
{
    static const char *const cfg[] = { "SOFTVERBS_LOSS=0.25",
                                       "SOFTVERBS_PATHS=5", NULL };
    int ret;

    printf("joining process:\n");
    model_setup(area, cfg, 0);
    setenv("SOFTVERBS_PATHS", "3", 1);
    unsetenv("SOFTVERBS_LOSS");
    ret = sv_model_attach(area, 0);
    CHECK(ret == 0, "attach as non-creator returned %d", ret);
    CHECK(sv_model_num_paths() == 5 && sv_model_active(),
          "joiner sees creator's 5 paths (own env says 3): %u",
          sv_model_num_paths());
}

static void test_rate(void *area)
{
    /* 8 Gbit/s = 1 byte/ns: a 4096 B packet takes 4096 ns per hop */
    static const char *const cfg1[] = { "SOFTVERBS_LINK_GBPS=8",
                                        "SOFTVERBS_DELAY_US=3", NULL };
    static const char *const cfg2[] = { "SOFTVERBS_LINK_GBPS=100", NULL };
    static const char *const cfg3[] = { "SOFTVERBS_LINK_GBPS=8,1:2", NULL };
    static const char *const cfg4[] = { "SOFTVERBS_LINK_GBPS=8",
                                        "SOFTVERBS_PATH_GBPS=4", NULL };
    const unsigned n = 1000;
    sv_pkt_fate_t f, prev = { 0 };
    uint64_t now, bad = 0;
    double expect, got;
    unsigned i;

    printf("serialization:\n");
    model_setup(area, cfg1, 0);
    now = sv_now_ns();
    for (i = 0; i < n; ++i) {
        sv_model_xmit(0, 1, 10, 20, 4096, now, &f);
        if (i == 0) {
            /* store and forward: sender link, delay, receiver link */
            CHECK(f.arrive_ns - now == 4096 + 3000 + 4096,
                  "first packet after %llu ns (expected 4096+3000+4096)",
                  (unsigned long long)(f.arrive_ns - now));
        } else if (f.arrive_ns - prev.arrive_ns != 4096) {
            ++bad;
        }
        prev = f;
    }
    CHECK(bad == 0, "8 Gbit/s: %u back-to-back packets 4096 ns apart "
          "(%llu wrong gaps)", n, (unsigned long long)bad);
    got = (double)(prev.arrive_ns - now - 3000) * 1e-9;
    CHECK(fabs(got - (n + 1) * 4096e-9) < 1e-9,
          "%u packets done after %.6f s (expected %.6f s)", n, got,
          (n + 1) * 4096e-9);
    /* a packet posted later than the link is busy does not queue */
    sv_model_xmit(0, 1, 10, 20, 4096, prev.arrive_ns + 100000, &f);
    CHECK(f.arrive_ns - prev.arrive_ns - 100000 == 4096 + 3000 + 4096,
          "idle link: no queueing (%llu ns)",
          (unsigned long long)(f.arrive_ns - prev.arrive_ns - 100000));

    /* 100 Gbit/s: 327.68 ns per packet must not round to 328 */
    model_setup(area, cfg2, 0);
    now = sv_now_ns();
    for (i = 0; i < 100000; ++i) {
        sv_model_xmit(2, 3, 10, 20, 4096, now, &f);
    }
    expect = (100000 + 1) * 4096 * 8.0 / 100.0;
    got    = f.arrive_ns - now;
    CHECK(fabs(got - expect) <= 2, "100 Gbit/s: 100000 packets in %.0f ns "
          "(expected %.0f)", got, expect);

    /* the slower of the two ports sets the pace */
    model_setup(area, cfg3, 0);
    now = sv_now_ns();
    for (i = 0; i < n; ++i) {
        sv_model_xmit(0, 1, 10, 20, 4096, now, &prev);
    }
    got    = prev.arrive_ns - now;
    expect = 4096.0 + n * 4096 * 4;
    CHECK(fabs(got - expect) <= 2, "port 1 at 2 Gbit/s receiving: %.0f ns "
          "(expected %.0f)", got, expect);

    /* a slower core path is the bottleneck */
    model_setup(area, cfg4, 0);
    now = sv_now_ns();
    for (i = 0; i < n; ++i) {
        sv_model_xmit(0, 1, 10, 20, 4096, now, &prev);
    }
    got    = prev.arrive_ns - now;
    expect = 4096.0 + n * 8192 + 4096;
    CHECK(fabs(got - expect) <= 2, "path at 4 Gbit/s: %.0f ns (expected %.0f)",
          got, expect);
}

/*
 * Copies of packets that had arrived, resent by RC's timer behind a late
 * ACK (sv_model_xmit_dup), at 8 Gbit/s (4096 ns a packet a hop): where
 * the links are busy at their time they queue there and hold up what
 * comes after; where they are idle they take no time that a packet
 * modelled earlier needs; they are counted.
 */
static void test_dup(void *area)
{
    static const char *const cfg[] = { "SOFTVERBS_LINK_GBPS=8", NULL };
    const uint64_t pkt = 4096, ahead = 10000000;
    static const struct {
        unsigned    sport, dport;
        const char *link;
    } dup_route[] = { { 0, 2, "sending" }, { 3, 1, "receiving" } };
    sv_model_counters_t tx, rx;
    sv_pkt_fate_t f;
    uint64_t now, t;
    unsigned i, j;

    printf("resent duplicates:\n");
    /* 16 packets from port 0 to 1 keep port 0's sending link busy until
     * 16 packets' time and port 1's receiving link until 17; 4 duplicates
     * resent at 2 packets' time, on one of those links but not the other,
     * queue there: the last arrives at 21, and the next packet from 0 to
     * 1 at 22 instead of 18 */
    for (i = 0; i < 2; ++i) {
        model_setup(area, cfg, 0);
        now = sv_now_ns();
        for (j = 0; j < 16; ++j) {
            sv_model_xmit(0, 1, 10, 20, pkt, now, &f);
        }
        t = sv_model_xmit_dup(dup_route[i].sport, dup_route[i].dport, 10, 20,
                              4, 4 * pkt, pkt, 0, now + 2 * pkt, now, NULL);
        CHECK(t - now == 21 * pkt, "4 duplicates from port %u to %u behind "
              "16 packets from 0 to 1: the last arrives after %llu ns "
              "(expected 21 x 4096)", dup_route[i].sport, dup_route[i].dport,
              (unsigned long long)(t - now));
        sv_model_xmit(0, 1, 10, 20, pkt, now, &f);
        CHECK(f.arrive_ns - now == 22 * pkt, "the next packet from 0 to 1 "
              "waits behind them on the %s link: %llu ns (expected 22 x "
              "4096, 18 without them)", dup_route[i].link,
              (unsigned long long)(f.arrive_ns - now));
    }
    sv_model_port_counters(3, &tx, &rx);
    CHECK(tx.pkts == 4, "port 3's sending link counted %llu packets "
          "(expected 4)", (unsigned long long)tx.pkts);

    model_setup(area, cfg, 0);
    now = sv_now_ns();
    t   = sv_model_xmit_dup(0, 1, 10, 20, 4, 4 * pkt, pkt, 0, now + ahead,
                            now, NULL);
    CHECK(t - now == ahead + 5 * pkt, "4 duplicates 10 ms ahead on idle "
          "links: the last arrives %llu ns after them (expected 5 x 4096: "
          "the receiving link's calendar serves them)",
          (unsigned long long)(t - now - ahead));
    sv_model_xmit(0, 1, 10, 20, pkt, now, &f);
    CHECK(f.arrive_ns - now == 2 * pkt, "a packet sent now is not held up: "
          "%llu ns (expected 2 x 4096)",
          (unsigned long long)(f.arrive_ns - now));
}

/*
 * Two senders at full rate into one receiver: its link queue grows by a
 * packet every 4096 ns. The test keeps its own copy of the receiver link
 * (busy-until) and predicts each drop from the queue the packet finds, and
 * the queue counters: the most a packet found (itself included), the tail
 * drops, and the queue drained once the link's work is done.
 */
static void test_tail_drop(void *area)
{
    static const char *const lossless[] = { "SOFTVERBS_LINK_GBPS=8", NULL };
    static const char *const buffered[] = { "SOFTVERBS_LINK_GBPS=8",
                                            "SOFTVERBS_BUF_BYTES=64k", NULL };
    const uint64_t buf = 65536, pkt = 4096;
    uint64_t now, ta, busy, drops, mismatch, max_q;
    sv_model_counters_t tx, rx;
    unsigned k, s;
    sv_pkt_fate_t f;
    int pass;

    printf("tail drop:\n");
    for (pass = 0; pass < 2; ++pass) {
        model_setup(area, pass ? buffered : lossless, 0);
        now   = sv_now_ns();
        busy  = now;
        drops = mismatch = max_q = 0;
        for (k = 0; k < 200; ++k) {
            for (s = 0; s < 2; ++s) {
                sv_model_xmit(s, 2, 100 + s, 200, pkt, now, &f);
                ta = now + (k + 1) * pkt;       /* leaves its sender link */
                if (pass && (busy > ta) && ((busy - ta) + pkt > buf)) {
                    mismatch += !f.dropped;      /* must have been dropped */
                } else {
                    busy      = ((busy > ta) ? busy : ta) + pkt;
                    mismatch += f.dropped || (f.arrive_ns != busy);
                    if (f.arrive_ns - pkt - ta > max_q) {
                        max_q = f.arrive_ns - pkt - ta;
                    }
                }
                mismatch += (f.dropped > 1);     /* a flag, 0 or 1 */
                drops    += f.dropped;
            }
        }
        if (!pass) {
            CHECK(drops == 0 && mismatch == 0, "unlimited buffer: 400 packets, "
                  "%llu drops, %llu off the FIFO prediction, max queueing "
                  "%llu ns", (unsigned long long)drops,
                  (unsigned long long)mismatch, (unsigned long long)max_q);
        } else {
            CHECK(drops > 150 && mismatch == 0, "64 KiB buffer: %llu of 400 "
                  "dropped, %llu off the prediction, max queueing %llu ns "
                  "(<= %llu)", (unsigned long long)drops,
                  (unsigned long long)mismatch, (unsigned long long)max_q,
                  (unsigned long long)(buf - pkt));
            CHECK(max_q <= buf - pkt, "queueing bounded by the buffer");
        }
        /* 1 byte/ns: the queueing delay in ns is the bytes ahead */
        sv_model_port_counters(2, &tx, &rx);
        CHECK((rx.q_max == max_q + pkt) && (rx.q_drops == drops) &&
              (rx.drops == drops) && (rx.q_bytes <= rx.q_max),
              "receiver queue: max %llu B (expected %llu), tail drops %llu, "
              "now %llu B", (unsigned long long)rx.q_max,
              (unsigned long long)(max_q + pkt),
              (unsigned long long)rx.q_drops,
              (unsigned long long)rx.q_bytes);
        sv_model_port_counters(0, &tx, &rx);
        CHECK((tx.q_max == 200 * pkt) && (tx.q_drops == 0),
              "a sender's link queues its own 200 packets: max %llu B, "
              "%llu drops", (unsigned long long)tx.q_max,
              (unsigned long long)tx.q_drops);
        while (sv_now_ns() < busy + 1000000) {
            usleep(1000);                /* the receiver link's work done */
        }
        sv_model_port_counters(2, &tx, &rx);
        CHECK(rx.q_bytes == 0, "queue empty once the link is idle: %llu B",
              (unsigned long long)rx.q_bytes);
    }
}

static void check_rate(const char *what, uint64_t drops, uint64_t n, double p)
{
    double sigma = sqrt(n * p * (1 - p));

    CHECK(fabs(drops - n * p) <= 3 * sigma, "%s: %llu of %llu dropped, "
          "expected %.1f +- %.1f (3 sigma)", what, (unsigned long long)drops,
          (unsigned long long)n, n * p, 3 * sigma);
}

static void test_loss(void *area)
{
    static const char *const cfg[] = { "SOFTVERBS_LOSS=0.01",
                                       "SOFTVERBS_SEED=12345", NULL };
    static const char *const cfg2[] = { "SOFTVERBS_LOSS=0.01",
                                        "SOFTVERBS_SEED=54321", NULL };
    static const char *const pcfg[] = { "SOFTVERBS_PATH_LOSS=3:0.2,5:1",
                                        "SOFTVERBS_SEED=99", NULL };
    const uint64_t n = 200000;
    uint64_t drops, first[2], differ, path_pkts[8], path_drops[8], j0;
    sv_model_acct_t acct = {0};
    sv_model_counters_t tx, rx, pc;
    unsigned i, run, q;
    uint8_t *pattern;
    sv_pkt_fate_t f;
    uint64_t now;

    printf("random loss:\n");
    pattern = calloc(n, 1);
    differ  = 0;
    for (run = 0; run < 3; ++run) {
        model_setup(area, (run < 2) ? cfg : cfg2, 0);
        now   = sv_now_ns();
        drops = 0;
        for (i = 0; i < n; ++i) {
            sv_model_xmit(4, 5, 0x1234, 0x5678, 4096, now, &f);
            drops += f.dropped;
            if (run == 0) {
                pattern[i] = f.dropped;
            } else {
                differ += (pattern[i] != f.dropped);
            }
        }
        if (run < 2) {
            first[run] = drops;
        }
        if (run == 1) {
            CHECK(differ == 0, "same seed 12345: identical loss pattern "
                  "(%llu differences)", (unsigned long long)differ);
            differ = 0;
        }
    }
    CHECK(differ > 0, "seed 54321 gives another pattern (%llu differences)",
          (unsigned long long)differ);
    check_rate("p=0.01 seed 12345", first[0], n, 0.01);
    model_setup(area, cfg, 0);
    for (i = 0; i < n; ++i) {
        sv_model_xmit(4, 5, 0x1234, 0x5678, 4096, now, &f);
    }
    sv_model_port_counters(4, &tx, &rx);
    CHECK(tx.pkts == n && tx.drops == first[0] && tx.bytes == n * 4096,
          "port 4 tx counters: pkts %llu drops %llu bytes %llu",
          (unsigned long long)tx.pkts, (unsigned long long)tx.drops,
          (unsigned long long)tx.bytes);
    sv_model_port_counters(5, &tx, &rx);
    CHECK(rx.pkts == n - first[0] && rx.drops == first[0],
          "port 5 rx counters: pkts %llu drops %llu",
          (unsigned long long)rx.pkts, (unsigned long long)rx.drops);

    /* whole messages (loss only: the model's short walk) lose the packets
     * the per-packet draw loses: the first lost one is reported, the
     * counters add up to the same drops */
    model_setup(area, cfg, 0);
    differ = 0;
    for (i = 0; i + 20 <= n; i += q) {
        uint64_t exp_lost = UINT64_MAX, j;
        sv_msg_fate_t mf;
        int64_t lost;

        q    = 1 + (i * 7) % 20;
        lost = sv_model_xmit_msg(4, 5, 0x1234, 0x5678, 0, q, q * 4096 - 100,
                                 4096, 0, now, 0, &mf,
                                 (i & 1) ? &acct : NULL);
        if ((i % 5) == 0) {
            sv_model_acct_flush(&acct);   /* a doorbell ends */
        }
        for (j = 0; j < q; ++j) {
            if (pattern[i + j] && (exp_lost == UINT64_MAX)) {
                exp_lost = j;
            }
        }
        differ += (exp_lost == UINT64_MAX) ? (lost != -1) :
                  (lost != (int64_t)exp_lost);
    }
    sv_model_acct_flush(&acct);
    sv_model_port_counters(4, &tx, &rx);
    for (drops = 0, j0 = 0; j0 < tx.pkts; ++j0) {
        drops += pattern[j0];
    }
    CHECK((differ == 0) && (tx.drops == drops),
          "messages lose what single packets lose: %llu differences, "
          "%llu drops (expected %llu)", (unsigned long long)differ,
          (unsigned long long)tx.drops, (unsigned long long)drops);
    sv_model_port_counters(5, &pc, &rx);
    sv_model_path_counters(sv_model_path_of(0x1234, 0x5678), &pc);
    CHECK((rx.drops == drops) && (rx.pkts == tx.pkts - drops) &&
          (pc.pkts == tx.pkts) && (pc.drops == drops) &&
          (pc.bytes == tx.bytes),
          "counters summed per doorbell add up: rx %llu pkts %llu drops, "
          "path %llu pkts %llu drops", (unsigned long long)rx.pkts,
          (unsigned long long)rx.drops, (unsigned long long)pc.pkts,
          (unsigned long long)pc.drops);
    free(pattern);

    /* per-path loss: path 3 loses 20%, path 5 everything, others nothing */
    printf("per-path loss:\n");
    model_setup(area, pcfg, 0);
    memset(path_pkts, 0, sizeof(path_pkts));
    memset(path_drops, 0, sizeof(path_drops));
    for (i = 0; i < 400000; ++i) {
        q = i % 997;
        sv_model_xmit(0, 1, 1000 + q, 2000 + q / 7, 1024, now, &f);
        path_pkts[f.path]++;
        path_drops[f.path] += f.dropped;
    }
    for (i = 0; i < 8; ++i) {
        sv_model_path_counters(i, &pc);
        if (pc.pkts != path_pkts[i] || pc.drops != path_drops[i]) {
            CHECK(0, "path %u counters %llu/%llu != observed %llu/%llu", i,
                  (unsigned long long)pc.pkts, (unsigned long long)pc.drops,
                  (unsigned long long)path_pkts[i],
                  (unsigned long long)path_drops[i]);
        }
        if (i == 3) {
            check_rate("path 3 p=0.2", path_drops[i], path_pkts[i], 0.2);
        } else if (i == 5) {
            CHECK(path_pkts[i] > 0 && path_drops[i] == path_pkts[i],
                  "path 5 p=1: %llu of %llu dropped",
                  (unsigned long long)path_drops[i],
                  (unsigned long long)path_pkts[i]);
        } else {
            CHECK(path_pkts[i] > 0 && path_drops[i] == 0,
                  "path %u p=0: %llu of %llu dropped", i,
                  (unsigned long long)path_drops[i],
                  (unsigned long long)path_pkts[i]);
        }
    }
}

static void test_outage(void *area)
{
    static const char *const cfg[] = { "SOFTVERBS_PATH_DOWN=2:10-20",
                                       NULL };
    uint64_t epoch, t, in = 0, in_drop = 0, out = 0, out_drop = 0, other = 0;
    uint64_t other_drop = 0;
    sv_pkt_fate_t f;
    unsigned i;

    printf("path outage:\n");
    model_setup(area, cfg, 0);
    epoch = sv_model_epoch_ns();
    for (i = 0; i < 300000; ++i) {
        t = epoch + (uint64_t)i * 100;      /* 0 .. 30 ms */
        sv_model_xmit(0, 1, 500 + i % 64, 600, 4096, t, &f);
        if (f.path != 2) {
            other      += 1;
            other_drop += f.dropped;
        } else if ((t - epoch >= 10000000) && (t - epoch < 20000000)) {
            in      += 1;
            in_drop += f.dropped;
        } else {
            out      += 1;
            out_drop += f.dropped;
        }
    }
    CHECK(in > 0 && in_drop == in, "path 2 inside 10-20 ms: %llu of %llu "
          "dropped", (unsigned long long)in_drop, (unsigned long long)in);
    CHECK(out > 0 && out_drop == 0, "path 2 outside the window: %llu of %llu "
          "dropped", (unsigned long long)out_drop, (unsigned long long)out);
    CHECK(other > 0 && other_drop == 0, "other paths: %llu of %llu dropped",
          (unsigned long long)other_drop, (unsigned long long)other);
}

/* Path p is DELAY + SKEW * p / (P - 1) long: multipath reorders. */
static void test_path_delay(void *area)
{
    static const char *const cfg[] = { "SOFTVERBS_DELAY_US=2",
                                       "SOFTVERBS_PATH_SKEW_US=70", NULL };
    uint64_t now, seen = 0, bad = 0, d;
    sv_pkt_fate_t f;
    uint32_t q;

    printf("path delay and skew:\n");
    model_setup(area, cfg, 0);
    now = sv_now_ns();
    for (q = 0; q < 256; ++q) {
        sv_model_xmit(0, 1, 7000 + q, 9000 + q, 4096, now, &f);
        d = f.arrive_ns - now;
        seen |= 1ull << f.path;
        if (f.dropped || (d != 2000 + 10000 * f.path)) {
            if (bad++ == 0) {
                printf("  path %u: %llu ns, expected %u\n", f.path,
                       (unsigned long long)d, 2000 + 10000 * f.path);
            }
        }
    }
    CHECK(bad == 0 && seen == 0xff, "256 QP pairs over 8 paths: delay "
          "2 us + 10 us x path (%llu wrong, paths seen 0x%llx)",
          (unsigned long long)bad, (unsigned long long)seen);
}

/*
 * A message's timing as the requester uses it: when its last packet left
 * the sender (UC/UD complete then) and the way back of an ACK (RC
 * completes when it is back): delay plus one serialization per rate-limited
 * hop, no queueing.
 */
static void test_msg_timing(void *area)
{
    /* 8 Gbit/s = 1 byte/ns */
    static const char *const timed[] = { "SOFTVERBS_LINK_GBPS=8",
                                         "SOFTVERBS_DELAY_US=3", NULL };
    static const char *const skewed[] = { "SOFTVERBS_DELAY_US=2",
                                          "SOFTVERBS_PATH_SKEW_US=70", NULL };
    static const char *const lossy[] = { "SOFTVERBS_LOSS=0.5", NULL };
    static const char *const none[] = { NULL };
    const uint64_t pkts = 4, mtu = 4096, ack = 64;
    sv_msg_fate_t mf;
    uint64_t now, d, bad = 0;
    uint32_t q;

    printf("message timing and the way back:\n");
    model_setup(area, timed, 0);
    now = sv_now_ns();
    sv_model_xmit_msg(0, 1, 10, 20, 0, pkts, pkts * mtu, mtu, 0, now, 0, &mf,
                      NULL);
    CHECK(mf.sent_ns - now == pkts * mtu, "last of %llu packets left after "
          "%llu ns (expected %llu)", (unsigned long long)pkts,
          (unsigned long long)(mf.sent_ns - now),
          (unsigned long long)(pkts * mtu));
    CHECK(mf.last_ns - now == pkts * mtu + 3000 + mtu,
          "and arrived after %llu ns (expected %llu)",
          (unsigned long long)(mf.last_ns - now),
          (unsigned long long)(pkts * mtu + 3000 + mtu));
    d = sv_model_idle_ns(1, 0, 20, 10, ack);
    CHECK(d == 3000 + 2 * ack, "an ACK's way back: %llu ns (expected %llu)",
          (unsigned long long)d, (unsigned long long)(3000 + 2 * ack));

    model_setup(area, skewed, 0);
    for (q = 0; q < 64; ++q) {
        d = sv_model_idle_ns(1, 0, 9000 + q, 7000 + q, ack);
        if (d != 2000 + 10000 * sv_model_path_of(9000 + q, 7000 + q)) {
            ++bad;
        }
    }
    CHECK(bad == 0, "the way back takes the delay of its own path (%llu "
          "wrong)", (unsigned long long)bad);

    model_setup(area, lossy, 0);
    now = sv_now_ns();
    sv_model_xmit_msg(0, 1, 10, 20, 0, pkts, pkts * mtu, mtu, 0, now, 0, &mf,
                      NULL);
    CHECK((sv_model_idle_ns(1, 0, 20, 10, ack) == 0) &&
          (mf.sent_ns == mf.last_ns),
          "loss alone: no time on the wire, either way");
    model_setup(area, none, 0);
    CHECK(sv_model_idle_ns(1, 0, 20, 10, ack) == 0, "model off: no way back");
}

static void test_ecmp(void *area)
{
    static const char *const cfg8[] = { "SOFTVERBS_LOSS=0.5", NULL };
    static const char *const cfg64[] = { "SOFTVERBS_PATHS=64", NULL };
    unsigned count[64], i, j, n, paths, min, max, pass;
    uint32_t src, dst;
    sv_pkt_fate_t f;
    int stable = 1;

    printf("ECMP:\n");
    for (pass = 0; pass < 2; ++pass) {
        model_setup(area, pass ? cfg64 : cfg8, 0);
        paths = sv_model_num_paths();
        memset(count, 0, sizeof(count));
        n = 0;
        /* QPNs as a NIC hands them out: small consecutive numbers */
        for (i = 0; i < 32; ++i) {
            for (j = 0; j < 32; ++j, ++n) {
                src = 0x11 + i;
                dst = 0x40 + j;
                sv_model_xmit(0, 1, src, dst, 64, sv_now_ns(), &f);
                count[f.path]++;
                stable &= (f.path == sv_model_path_of(src, dst));
                sv_model_xmit(0, 1, src, dst, 64, sv_now_ns(), &f);
                stable &= (f.path == sv_model_path_of(src, dst));
            }
        }
        min = max = count[0];
        for (i = 0; i < paths; ++i) {
            min = (count[i] < min) ? count[i] : min;
            max = (count[i] > max) ? count[i] : max;
        }
        /* binomial(1024, 1/P): 5 sigma either way */
        CHECK(min > 0 && fabs(max - n / (double)paths) <
              5 * sqrt(n / (double)paths) &&
              fabs(min - n / (double)paths) < 5 * sqrt(n / (double)paths),
              "%u QPN pairs over %u paths: min %u max %u per path", n, paths,
              min, max);
    }
    CHECK(stable, "a QP pair always takes the same path");
}

/* Two senders whose packets reach one receiving link from two core paths
 * slower than it: the link serves them in the order they arrive, though
 * all of the first sender's were modelled before any of the second's (a
 * FIFO clock held the second sender's behind the first's last packet).
 * Then packets modelled in the order they arrive queue exactly as at a
 * FIFO, the queue longer than the calendar's ring too. */
static void test_rx_order(void *area)
{
    /* 8 Gbit/s links: 4096 ns per packet; 2 Gbit/s paths: 16384 ns */
    static const char *const cfg[] = { "SOFTVERBS_LINK_GBPS=8",
                                       "SOFTVERBS_PATH_GBPS=2",
                                       "SOFTVERBS_PATHS=2", NULL };
    static const char *const fifo[] = { "SOFTVERBS_LINK_GBPS=8", NULL };
    const unsigned n = 100, pkt = 4096;
    sv_pkt_fate_t a[100], b, f;
    uint64_t now, t, off = 0, late = 0, worst = 0, prev, bad;
    sv_model_counters_t tx, rx;
    uint32_t qa = 0x10, qb = 0x11;
    unsigned i, k, s, burst;

    printf("receiving link in arrival order:\n");
    model_setup(area, cfg, 0);
    while (sv_model_path_of(qb, 0x80) == sv_model_path_of(qa, 0x80)) {
        ++qb;
    }
    now = sv_now_ns();
    for (i = 0; i < n; ++i) {
        sv_model_xmit(0, 2, qa, 0x80, pkt, now, &a[i]);
    }
    for (i = 0; i < n; ++i) {
        sv_model_xmit(1, 2, qb, 0x80, pkt, now, &b);
        /* both reach the receiving link at t; one waits for the other */
        t     = now + pkt + (i + 1) * 4 * pkt;
        off  += (a[i].arrive_ns != t + pkt) || a[i].dropped;
        late  = b.arrive_ns - t;
        worst = (late > worst) ? late : worst;
        off  += (late != 2 * pkt) || b.dropped;
    }
    CHECK(off == 0, "%u + %u packets: each done one or two packet times "
          "after it reached the link (worst %llu ns, %llu off)", n, n,
          (unsigned long long)worst, (unsigned long long)off);
    sv_model_port_counters(2, &tx, &rx);
    CHECK(rx.q_max == 2 * pkt, "receiving queue at most 2 packets: %llu B",
          (unsigned long long)rx.q_max);

    /* two senders at full rate into one link: 2 x 3000 packets queue as at
     * a FIFO (inside the ring), then 2 x 3000 more beyond it */
    for (burst = 0; burst < 2; ++burst) {
        model_setup(area, fifo, 0);
        now  = sv_now_ns();
        prev = now;
        bad  = 0;
        for (k = 0; k < (burst ? 6000 : 3000); ++k) {
            for (s = 0; s < 2; ++s) {
                sv_model_xmit(s, 2, 100 + s, 200, pkt, now, &f);
                bad += f.dropped || (f.arrive_ns < prev);
                prev = f.arrive_ns;
            }
        }
        t = now + pkt + 2ull * k * pkt;
        if (!burst) {
            CHECK((bad == 0) && (prev == t), "%u packets queued in arrival "
                  "order: the last done after %llu ns (FIFO: %llu)", 2 * k,
                  (unsigned long long)(prev - now),
                  (unsigned long long)(t - now));
        } else {
            CHECK((bad == 0) && (prev >= t) && (prev - t <= 2 * pkt),
                  "%u packets, a queue beyond the calendar's ring: the last "
                  "done after %llu ns (FIFO: %llu)", 2 * k,
                  (unsigned long long)(prev - now),
                  (unsigned long long)(t - now));
        }
    }
}

/* A core path is full duplex: a packet back towards a lower port does not
 * wait behind the queue that data towards it built, while a packet the
 * same way does; the path's counters add both directions */
static void test_duplex(void *area)
{
    /* 1 Gbit/s path: 8 ns per byte, 32768 ns per 4096 B packet */
    static const char *const cfg[] = { "SOFTVERBS_PATH_GBPS=1",
                                       "SOFTVERBS_PATHS=1", NULL };
    const unsigned n = 200, pkt = 4096, small = 64;
    sv_pkt_fate_t f, back, same;
    sv_model_counters_t c;
    uint64_t now;
    unsigned i;

    printf("core paths are full duplex:\n");
    model_setup(area, cfg, 0);
    now = sv_now_ns();
    for (i = 0; i < n; ++i) {
        sv_model_xmit(1, 0, 0x10, 0x20, pkt, now, &f);
    }
    sv_model_xmit(0, 1, 0x20, 0x10, small, now, &back);
    sv_model_xmit(2, 0, 0x30, 0x20, small, now, &same);
    CHECK(f.arrive_ns == now + 8ull * n * pkt, "%u packets one way: the "
          "last after %llu ns", n, (unsigned long long)(f.arrive_ns - now));
    CHECK(!back.dropped && (back.arrive_ns == now + 8 * small),
          "a packet the other way crosses at once: %llu ns",
          (unsigned long long)(back.arrive_ns - now));
    CHECK(!same.dropped && (same.arrive_ns == f.arrive_ns + 8 * small),
          "a packet the same way waits behind them: %llu ns",
          (unsigned long long)(same.arrive_ns - now));
    sv_model_path_counters(0, &c);
    CHECK((c.pkts == n + 2) && (c.bytes == n * pkt + 2 * small) &&
          (c.q_max == n * pkt + small), "path counters: %llu packets, %llu "
          "B, deepest queue %llu B", (unsigned long long)c.pkts,
          (unsigned long long)c.bytes, (unsigned long long)c.q_max);
}

int main(void)
{
    void *area = aligned_alloc(4096, SV_MODEL_SHM_SIZE);

    setvbuf(stdout, NULL, _IOLBF, 0);
    test_defaults(area);
    test_config_errors(area);
    test_joiner(area);
    test_rate(area);
    test_dup(area);
    test_tail_drop(area);
    test_loss(area);
    test_outage(area);
    test_path_delay(area);
    test_msg_timing(area);
    test_ecmp(area);
    test_rx_order(area);
    test_duplex(area);
    free(area);
    if (failures) {
        printf("sv_model_test: %d check(s) FAILED\n", failures);
        return 1;
    }
    printf("sv_model_test: all checks passed\n");
    return 0;
}

/*
 * Path selection: power of two choices prefers low-RTT paths in the
 * proportions P2C predicts, penalised paths are used less and recover as
 * the penalty decays, small messages stick, and everything is a function
 * of the seed. Path health: a loss burst or a stall parks a path, never
 * more than max_parked of them; a parked path gets only probes, spaced
 * out while they fail, and comes back when a probe is acked. RC: a
 * retired path never comes back, a stalled one with a completion. The QP
 * budget grants paths so that many peers shrink them, down to one, before
 * a conn cannot be made.
 */
#include "unit_test.h"

#include <uct/uccl/proto/uccl_path.h>
#include <uct/uccl/uccl_budget.h>

#include <string.h>

#define N 8

static uct_uccl_path_params_t params(uint64_t seed)
{
    uct_uccl_path_params_t p = {
        .num_paths = N, .seed = seed, .init_rtt_ns = 10000,
        .loss_penalty_ns = 50000, .max_penalty_ns = 1000000,
        .halflife_shift = 20 /* ~1 ms */, .small_size = 8192,
        .explore_shift = 5
    };
    return p;
}

static void test_determinism(void)
{
    uct_uccl_path_params_t p = params(ut_seed);
    uct_uccl_paths_t a, b, c;
    unsigned i, same_c = 0;

    UT_EQ(uct_uccl_paths_init(&a, &p), UCS_OK);
    UT_EQ(uct_uccl_paths_init(&b, &p), UCS_OK);
    p.seed = ut_seed + 1;
    UT_EQ(uct_uccl_paths_init(&c, &p), UCS_OK);
    for (i = 0; i < 10000; ++i) {
        if (i % 100 == 0) {
            uct_uccl_paths_rtt(&a, i % N, 1000 * i);
            uct_uccl_paths_rtt(&b, i % N, 1000 * i);
            uct_uccl_paths_rtt(&c, i % N, 1000 * i);
        }
        UT_EQ(uct_uccl_paths_select(&a, 65536, i),
              uct_uccl_paths_select(&b, 65536, i));
        same_c += uct_uccl_paths_select(&a, 65536, i) ==
                  uct_uccl_paths_select(&c, 65536, i);
        (void)uct_uccl_paths_select(&b, 65536, i);
    }
    /* another seed is another sequence */
    UT_TRUE(same_c < 9000);
    uct_uccl_paths_cleanup(&a);
    uct_uccl_paths_cleanup(&b);
    uct_uccl_paths_cleanup(&c);
    printf("  same seed, same choices (10000); seed+1 agreed %u times\n",
           same_c);
}

static void test_p2c(void)
{
    uct_uccl_path_params_t p = params(ut_seed);
    const unsigned total = 400000;
    unsigned i, count[N] = {0};
    double expect;
    uct_uccl_paths_t ps;

    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    /* path i has RTT 10 + 10 i us */
    for (i = 0; i < N; ++i) {
        ps.path[i].rtt_ns = 10000 + 10000 * i;
    }
    for (i = 0; i < total; ++i) {
        ++count[uct_uccl_paths_select(&ps, 1 << 20, 0)];
    }
    /* P2C over distinct pairs: rank k wins 2 (N-1-k) of N (N-1) ordered
     * pairs; plus 1/32 of choices uniform */
    for (i = 0; i < N; ++i) {
        expect = total * ((31.0 / 32) * 2.0 * (N - 1 - i) / (N * (N - 1)) +
                          (1.0 / 32) / N);
        printf("  rtt %3u us: chosen %6u, expected %8.0f\n",
               10 + 10 * i, count[i], expect);
        if ((count[i] < expect * 0.9 - 200) ||
            (count[i] > expect * 1.1 + 200)) {
            UT_FAIL("path %u chosen %u times, expected ~%.0f", i, count[i],
                    expect);
        }
        UT_EQ(ps.path[i].chosen, count[i]);
        if (i > 0) {
            UT_TRUE(count[i] < count[i - 1]);
        }
    }
    uct_uccl_paths_cleanup(&ps);
}

static void test_penalty(void)
{
    uct_uccl_path_params_t p = params(ut_seed);
    unsigned i, before = 0, during = 0, after = 0;
    uint64_t now = 0;
    uct_uccl_paths_t ps;

    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    for (i = 0; i < 80000; ++i) {
        before += uct_uccl_paths_select(&ps, 65536, now) == 3;
    }
    /* path 3 keeps losing */
    for (i = 0; i < 5; ++i) {
        uct_uccl_paths_loss(&ps, 3, now);
    }
    UT_EQ(uct_uccl_path_penalty(&ps, &ps.path[3], now), 250000);
    UT_EQ(ps.path[3].losses, 5);
    for (i = 0; i < 80000; ++i) {
        during += uct_uccl_paths_select(&ps, 65536, now) == 3;
    }
    /* halves every 2^20 ns; capped */
    UT_EQ(uct_uccl_path_penalty(&ps, &ps.path[3], now + (1 << 20)), 125000);
    for (i = 0; i < 100; ++i) {
        uct_uccl_paths_loss(&ps, 3, now);
    }
    UT_EQ(uct_uccl_path_penalty(&ps, &ps.path[3], now), p.max_penalty_ns);
    /* 30 half-lives later it is forgiven */
    now += 30ull << 20;
    UT_EQ(uct_uccl_path_penalty(&ps, &ps.path[3], now), 0);
    for (i = 0; i < 80000; ++i) {
        after += uct_uccl_paths_select(&ps, 65536, now) == 3;
    }
    printf("  lossy path chosen: %u before, %u while penalised, %u after "
           "decay (of 80000)\n", before, during, after);
    /* even share is 10000; penalised only by exploration (~1/256) */
    UT_TRUE((before > 9000) && (before < 11000));
    UT_TRUE(during < 600);
    UT_TRUE((after > 9000) && (after < 11000));
    uct_uccl_paths_cleanup(&ps);
}

static void test_small_and_edges(void)
{
    uct_uccl_path_params_t p = params(ut_seed);
    unsigned i, last, moved = 0;
    uct_uccl_paths_t ps;

    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    last = uct_uccl_paths_select(&ps, 1 << 20, 0);
    for (i = 0; i < 1000; ++i) {
        UT_EQ(uct_uccl_paths_select(&ps, 8192, 0), last);
    }
    /* a penalised last path is left even for small messages */
    uct_uccl_paths_loss(&ps, last, 0);
    for (i = 0; i < 100; ++i) {
        moved += uct_uccl_paths_select(&ps, 64, 0) != last;
    }
    UT_TRUE(moved > 90);

    /* RTT EWMA with gain 1/8 */
    ps.path[2].rtt_ns = 8000;
    uct_uccl_paths_rtt(&ps, 2, 16000);
    UT_EQ(ps.path[2].rtt_ns, 9000);
    uct_uccl_paths_cleanup(&ps);

    p.num_paths = 1;
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    for (i = 0; i < 100; ++i) {
        UT_EQ(uct_uccl_paths_select(&ps, 1 << 20, i), 0);
    }
    uct_uccl_paths_cleanup(&ps);
    p.num_paths = 0;
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_ERR_INVALID_PARAM);
    p.num_paths = 257;
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_ERR_INVALID_PARAM);
    /* 256 paths: every one reachable */
    p.num_paths = 256;
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    for (i = 0; i < 200000; ++i) {
        (void)uct_uccl_paths_select(&ps, 1 << 20, 0);
    }
    for (i = 0; i < 256; ++i) {
        UT_TRUE(ps.path[i].chosen > 0);
    }
    uct_uccl_paths_cleanup(&ps);
}

/* path health on: 4 losses in a row park, 1 us first probe */
static uct_uccl_path_params_t health_params(uint64_t seed)
{
    uct_uccl_path_params_t p = params(seed);

    p.park_losses     = 4;
    p.max_parked      = N / 2;
    p.probe_ns        = 1000;
    p.probe_max_shift = 3;
    return p;
}

/* a choice for data, never a parked path */
static unsigned select_checked(uct_uccl_paths_t *ps, uint64_t now)
{
    unsigned p = uct_uccl_paths_select(ps, 65536, now);

    if (uct_uccl_paths_parked(ps, p)) {
        UT_FAIL("parked path %u chosen", p);
    }
    return p;
}

static void test_park_loss_burst(void)
{
    uct_uccl_path_params_t p = health_params(ut_seed);
    uint64_t now = 5000, gaps[6];
    unsigned i, k, chosen3 = 0;
    uct_uccl_paths_t ps;

    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    for (i = 0; i < 16; ++i) {
        uct_uccl_paths_sent(&ps, 3, now);
    }
    /* losses with an ACK between do not park */
    for (i = 0; i < 3; ++i) {
        uct_uccl_paths_loss(&ps, 3, now);
    }
    uct_uccl_paths_ack_time(&ps, now);
    uct_uccl_paths_acked(&ps, 3, now - 100);
    for (i = 0; i < 3; ++i) {
        uct_uccl_paths_loss(&ps, 3, now);
    }
    UT_EQ(ps.nparked, 0);
    /* the 4th in a row does */
    uct_uccl_paths_loss(&ps, 3, now);
    UT_TRUE(uct_uccl_paths_parked(&ps, 3));
    UT_EQ(ps.nparked, 1);
    UT_EQ(ps.stats.parks_loss, 1);
    UT_EQ(ps.path[3].unacked, 16 - 1 - 7);

    /* no data on it, and no probe before one is due */
    for (i = 0; i < 100000; ++i) {
        chosen3 += select_checked(&ps, now + 999) == 3;
    }
    UT_EQ(chosen3, 0);
    UT_EQ(uct_uccl_paths_probe(&ps, now + 999), -1);

    /* probes, one at a time, twice as far apart while they fail, capped */
    for (k = 0; k < 6; ++k) {
        now = ps.probe_next;
        UT_EQ(uct_uccl_paths_probe(&ps, now), 3);
        UT_EQ(uct_uccl_paths_probe(&ps, now), -1);
        gaps[k] = ps.path[3].probe_at - now;
        for (i = 0; i < 1000; ++i) {
            UT_TRUE(select_checked(&ps, now) != 3);
        }
        uct_uccl_paths_sent(&ps, 3, now);
        uct_uccl_paths_loss(&ps, 3, now + 10);
        UT_TRUE(uct_uccl_paths_parked(&ps, 3));
    }
    UT_EQ(gaps[0], 2000);
    UT_EQ(gaps[1], 4000);
    UT_EQ(gaps[2], 8000);
    UT_EQ(gaps[3], 8000);
    UT_EQ(gaps[5], 8000);
    UT_EQ(ps.stats.probes, 6);

    /* an ACK of a chunk sent before it was parked proves nothing */
    uct_uccl_paths_ack_time(&ps, now + 20);
    uct_uccl_paths_acked(&ps, 3, ps.path[3].parked_at - 1);
    UT_TRUE(uct_uccl_paths_parked(&ps, 3));
    /* an acked probe brings it back, penalty cleared */
    now = ps.probe_next;
    UT_EQ(uct_uccl_paths_probe(&ps, now), 3);
    uct_uccl_paths_sent(&ps, 3, now);
    uct_uccl_paths_ack_time(&ps, now + 50);
    uct_uccl_paths_acked(&ps, 3, now);
    UT_TRUE(!uct_uccl_paths_parked(&ps, 3));
    UT_EQ(ps.nparked, 0);
    UT_EQ(ps.stats.unparks, 1);
    /* chosen again once its penalty decayed (max 1 ms, halves per ms) */
    now += 30ull << 20;
    for (i = 0; i < 80000; ++i) {
        chosen3 += uct_uccl_paths_select(&ps, 65536, now) == 3;
    }
    printf("  loss burst: parked, 6 failed probes (gaps %lu..%lu ns), back "
           "after an acked probe: chosen %u of 80000 once its penalty "
           "decayed\n", gaps[0], gaps[5], chosen3);
    UT_TRUE((chosen3 > 9000) && (chosen3 < 11000));
    uct_uccl_paths_cleanup(&ps);
}

/* every path loses a burst: at most max_parked of them are parked, and
 * data always has an unparked path; a single path is never parked */
static void test_park_never_all(void)
{
    uct_uccl_path_params_t p = health_params(ut_seed);
    unsigned i, j, n;
    uct_uccl_paths_t ps;

    p.max_parked = 100;
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    UT_EQ(ps.max_parked, N - 1);
    for (j = 0; j < N; ++j) {
        for (i = 0; i < 8; ++i) {
            uct_uccl_paths_loss(&ps, j, 0);
        }
    }
    UT_EQ(ps.nparked, N - 1);
    for (i = 0, n = 0; i < N; ++i) {
        n += uct_uccl_paths_parked(&ps, i);
    }
    UT_EQ(n, N - 1);
    for (i = 0; i < 10000; ++i) {
        UT_TRUE(!uct_uccl_paths_parked(&ps, select_checked(&ps, 10)));
    }
    uct_uccl_paths_cleanup(&ps);

    p = health_params(ut_seed);
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    for (j = 0; j < N; ++j) {
        for (i = 0; i < 8; ++i) {
            uct_uccl_paths_loss(&ps, j, 0);
        }
    }
    UT_EQ(ps.nparked, N / 2);
    uct_uccl_paths_cleanup(&ps);

    p.num_paths = 1;
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    for (i = 0; i < 100; ++i) {
        uct_uccl_paths_loss(&ps, 0, 0);
        UT_EQ(uct_uccl_paths_select(&ps, 65536, i), 0);
    }
    UT_EQ(ps.nparked, 0);
    uct_uccl_paths_cleanup(&ps);

    /* the same bursts on every path in turn: none loses more than the
     * others, none is parked */
    p = health_params(ut_seed);
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    for (i = 0; i < 8; ++i) {
        for (j = 0; j < N; ++j) {
            uct_uccl_paths_loss(&ps, j, 0);
        }
    }
    UT_EQ(ps.nparked, 0);
    uct_uccl_paths_cleanup(&ps);

    /* park_losses 0: never parked */
    p = params(ut_seed);
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    for (i = 0; i < 100; ++i) {
        uct_uccl_paths_loss(&ps, 2, 0);
    }
    UT_EQ(ps.nparked, 0);
    uct_uccl_paths_cleanup(&ps);
    /* parking without probes is refused */
    p = health_params(ut_seed);
    p.probe_ns = 0;
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_ERR_INVALID_PARAM);
}

/* a path with chunks out and no ACK for stall_ns while others have ACKs
 * stalls; when every path is silent, none is parked */
static void test_stall(void)
{
    uct_uccl_path_params_t p = health_params(ut_seed);
    const uint64_t stall = 100000;
    uint64_t now = 1000;
    uct_uccl_paths_t ps;
    unsigned i;

    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    for (i = 0; i < N; ++i) {
        uct_uccl_paths_sent(&ps, i, now);
    }
    /* no ACK yet at all: nothing to compare with */
    UT_EQ(uct_uccl_paths_check(&ps, now + 2 * stall, stall), 0);
    /* all but path 5 acked, often: path 5 stalls, but it has lost no
     * more than the others and is not parked */
    for (now = 1000; now < 1000 + 3 * stall; now += stall / 10) {
        uct_uccl_paths_ack_time(&ps, now);
        for (i = 0; i < N; ++i) {
            if (i != 5) {
                uct_uccl_paths_sent(&ps, i, now);
                uct_uccl_paths_acked(&ps, i, now);
            }
        }
    }
    UT_EQ(uct_uccl_paths_check(&ps, now, stall), 0);
    /* path 5 lost a chunk, the others none: now it is */
    uct_uccl_paths_loss(&ps, 5, now);
    uct_uccl_paths_sent(&ps, 5, now);
    for (now += stall / 10; now < 1000 + 7 * stall; now += stall / 10) {
        uct_uccl_paths_ack_time(&ps, now);
        for (i = 0; i < N; ++i) {
            if (i != 5) {
                uct_uccl_paths_sent(&ps, i, now);
                uct_uccl_paths_acked(&ps, i, now);
            }
        }
        if (now < 1000 + 4 * stall) {
            UT_EQ(uct_uccl_paths_check(&ps, now, stall), 0);
        }
    }
    UT_EQ(uct_uccl_paths_check(&ps, now, stall), 1);
    UT_TRUE(uct_uccl_paths_parked(&ps, 5));
    UT_EQ(ps.stats.parks_stall, 1);
    /* an idle path (nothing out) never stalls */
    UT_EQ(ps.path[6].unacked, 1);
    uct_uccl_paths_ack_time(&ps, now);
    uct_uccl_paths_acked(&ps, 6, now);
    UT_EQ(uct_uccl_paths_check(&ps, now + stall / 2 + stall, stall), 0);
    /* every path silent for stall_ns: the peer, not a path */
    for (i = 0; i < N; ++i) {
        uct_uccl_paths_sent(&ps, i, now);
    }
    UT_EQ(uct_uccl_paths_check(&ps, now + 5 * stall, stall), 0);
    UT_EQ(ps.nparked, 1);
    /* nothing outstanding: counts cleared */
    uct_uccl_paths_idle(&ps);
    for (i = 0; i < N; ++i) {
        UT_EQ(ps.path[i].unacked, 0);
    }
    uct_uccl_paths_cleanup(&ps);
}

/* RC: a retired path is never chosen, probed nor brought back by a
 * completion or an ACK, and counts among the parked (the choice stays
 * correct with many out); a path parked for a stall comes back with the
 * first completion on it, without a probe; a new QP pair restores any */
static void test_retire_rc(void)
{
    uct_uccl_path_params_t p = health_params(ut_seed);
    uint64_t now = 1000;
    uct_uccl_paths_t ps;
    unsigned i;

    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    uct_uccl_paths_retire(&ps, 2);
    uct_uccl_paths_retire(&ps, 2);   /* once only */
    UT_EQ(ps.nretired, 1);
    UT_EQ(ps.nparked, 1);
    UT_EQ(uct_uccl_paths_usable(&ps), N - 1);
    UT_TRUE(uct_uccl_paths_retired(&ps, 2));

    /* a path parked for its stall, then retired: counted once */
    uct_uccl_paths_sent(&ps, 4, now);
    UT_EQ(uct_uccl_paths_park_rc(&ps, 4, now), 1);
    UT_EQ(ps.stats.parks_stall, 1);
    uct_uccl_paths_retire(&ps, 4);
    UT_EQ(ps.nparked, 2);
    UT_EQ(ps.nretired, 2);

    /* nothing to probe: retired paths are not */
    UT_EQ(uct_uccl_paths_probe(&ps, now + 1000000000ull), -1);
    for (i = 0; i < 2000; ++i) {
        now += 100;
        (void)select_checked(&ps, now);
        (void)uct_uccl_paths_select(&ps, 64, now); /* small ones too */
        UT_TRUE(!uct_uccl_paths_retired(&ps, ps.last));
    }
    /* completions and ACKs do not bring a retired path back */
    uct_uccl_paths_ack_time(&ps, now);
    uct_uccl_paths_completed(&ps, 2);
    uct_uccl_paths_acked(&ps, 4, now);
    UT_TRUE(uct_uccl_paths_parked(&ps, 2) && uct_uccl_paths_parked(&ps, 4));
    UT_EQ(ps.stats.unparks, 0);

    /* a stalled path parked, not probed, back with its completion */
    uct_uccl_paths_sent(&ps, 6, now);
    UT_EQ(uct_uccl_paths_park_rc(&ps, 6, now), 1);
    UT_EQ(ps.nparked, 3);
    uct_uccl_paths_ack_time(&ps, now + 10);
    uct_uccl_paths_completed(&ps, 6);
    UT_TRUE(!uct_uccl_paths_parked(&ps, 6));
    UT_EQ(ps.nparked, 2);
    UT_EQ(ps.stats.unparks, 1);
    UT_EQ(ps.path[6].unacked, 0);

    /* the park limit holds for the stalled, the retired included */
    for (i = 0; i < N; ++i) {
        if (!uct_uccl_paths_parked(&ps, i)) {
            (void)uct_uccl_paths_park_rc(&ps, i, now);
        }
    }
    UT_EQ(ps.nparked, p.max_parked);
    UT_TRUE(uct_uccl_paths_usable(&ps) > 0);

    /* a new QP pair restores a retired path: chosen again, its losses
     * and penalty gone, the counts right */
    uct_uccl_paths_loss(&ps, 2, now);
    uct_uccl_paths_restore(&ps, 2, now);
    UT_TRUE(!uct_uccl_paths_retired(&ps, 2) && !uct_uccl_paths_parked(&ps, 2));
    UT_EQ(ps.nretired, 1);
    UT_EQ(ps.nparked, p.max_parked - 1);
    UT_EQ(ps.path[2].loss_run, 0);
    UT_EQ(ps.path[2].penalty_ns, 0);
    uct_uccl_paths_restore(&ps, 2, now); /* restoring a usable one: no-op */
    UT_EQ(ps.nparked, p.max_parked - 1);
    for (i = 0; i < N; ++i) {
        uct_uccl_paths_restore(&ps, i, now);
    }
    UT_EQ(ps.nparked, 0);
    UT_EQ(ps.nretired, 0);
    for (i = 0; i < 4000; ++i) {
        now += 100;
        UT_TRUE(select_checked(&ps, now) < N);
    }
    UT_TRUE(ps.path[2].chosen > 0);
    uct_uccl_paths_cleanup(&ps);
}

/* Random sends, ACKs, losses and choices: the invariants hold at every
 * step (parked count, no data on a parked path but probes), and the same
 * seed gives the same run */
static uint64_t health_run(uint64_t seed, unsigned *parks, unsigned *unparks)
{
    uct_uccl_path_params_t p = health_params(seed);
    uint64_t now = 0, hash = 0;
    unsigned i, j, n, path, bad = (unsigned)(seed % N);
    uct_uccl_paths_t ps;
    int probe, bad_parked = 0;

    ut_rng = seed * 0x9e3779b97f4a7c15ull + 1;
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    for (i = 0; i < 200000; ++i) {
        now += 1000 + ut_rand_below(20000);
        probe = uct_uccl_paths_probe(&ps, now);
        path  = (probe >= 0) ? (unsigned)probe : select_checked(&ps, now);
        uct_uccl_paths_sent(&ps, path, now);
        /* the bad path loses everything for a while, others 2% */
        if (((path == bad) && (i > 50000) && (i < 100000)) ||
            (ut_rand_below(100) < 2)) {
            uct_uccl_paths_loss(&ps, path, now);
        } else {
            uct_uccl_paths_ack_time(&ps, now);
            uct_uccl_paths_acked(&ps, path, now);
        }
        if (i % 64 == 0) {
            (void)uct_uccl_paths_check(&ps, now, 2000000);
        }
        for (j = 0, n = 0; j < N; ++j) {
            n += uct_uccl_paths_parked(&ps, j);
        }
        UT_EQ(n, ps.nparked);
        UT_TRUE(ps.nparked <= ps.max_parked);
        hash        = hash * 31 + path + 7 * ps.nparked;
        bad_parked |= uct_uccl_paths_parked(&ps, bad);
    }
    /* the bad path was parked during its loss burst, and is back after */
    UT_TRUE(bad_parked);
    UT_TRUE(!uct_uccl_paths_parked(&ps, bad));
    *parks   = ps.stats.parks_loss + ps.stats.parks_stall;
    *unparks = ps.stats.unparks;
    uct_uccl_paths_cleanup(&ps);
    return hash;
}

static void test_health_random(void)
{
    unsigned parks, unparks, parks2, unparks2;
    uint64_t h1 = health_run(ut_seed, &parks, &unparks);
    uint64_t h2 = health_run(ut_seed, &parks2, &unparks2);

    UT_EQ(h1, h2);
    UT_EQ(parks, parks2);
    UT_TRUE(parks >= 1);
    UT_TRUE(unparks + N / 2 >= parks);
    printf("  random run: %u parks, %u unparks; same seed, same run\n",
           parks, unparks);
}

/* conns to distinct peers on one device, both sides counted (as in one
 * process): every one gets a path while QPs are left, the paths shrink as
 * they go, and nothing is granted beyond the budget */
static void test_budget(void)
{
    const unsigned budget = 1000, peers = 64, want = 32;
    unsigned used = 1, i, active, passive, prev = want; /* 1: control QP */

    UT_EQ(uct_uccl_budget_grant(0, want), 0);
    UT_EQ(uct_uccl_budget_grant(100, 0), 0);
    UT_EQ(uct_uccl_budget_grant(16382, want), want);
    UT_EQ(uct_uccl_budget_grant(1000, want), 1000 / UCT_UCCL_BUDGET_SHARE);
    UT_EQ(uct_uccl_budget_grant(UCT_UCCL_BUDGET_SHARE - 1, want), 1);
    UT_EQ(uct_uccl_budget_grant(1, want), 1);

    for (i = 0; i < peers; ++i) {
        used   += 1; /* the peer's control QP */
        active  = uct_uccl_budget_grant(budget - used, want);
        used   += active;
        passive = uct_uccl_budget_grant(budget - used, active);
        used   += passive;
        UT_TRUE((active >= 1) && (passive >= 1) && (passive <= active));
        UT_TRUE(active <= prev);
        prev = active;
    }
    UT_TRUE(used <= budget);
    UT_EQ(prev, 1);
    printf("  budget: %u peers in %u QPs, the last with one path\n", peers,
           used);
}

/* Burst length: the full burst while the conn's fabric RTT stays near its
 * windowed minimum or few ACKs find chunks out of order (a queue every
 * path shares, a lone loss), one chunk per choice while both show; the
 * full burst again when the queue drains, the reordering stops or the
 * minimum follows a base RTT that rose */
#define BURST_MAX   16
#define BURST_WIN   1000000000ull
#define BURST_SLACK 50000ull

static uct_uccl_path_params_t burst_params(uint64_t seed)
{
    uct_uccl_path_params_t p = params(seed);

    p.rtt_min_win_ns = BURST_WIN;
    p.queue_slack_ns = BURST_SLACK;
    return p;
}

/* n samples of rtt, step apart, each ACK with chunks out of order if
 * reorder */
static void feed(uct_uccl_paths_t *ps, uint64_t rtt, unsigned n,
                 uint64_t *now, uint64_t step, int reorder)
{
    unsigned i;

    for (i = 0; i < n; ++i) {
        uct_uccl_paths_fabric_rtt(ps, rtt, *now);
        uct_uccl_paths_ack_order(ps, reorder);
        *now += step;
    }
}

static unsigned burst(uct_uccl_paths_t *ps)
{
    return uct_uccl_paths_burst(ps, BURST_MAX);
}

static void test_burst(void)
{
    uct_uccl_path_params_t p = burst_params(ut_seed);
    uct_uccl_paths_t ps;
    uint64_t now = 1000;

    /* switched off: always the full burst */
    p.rtt_min_win_ns = 0;
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    feed(&ps, 100000, 10, &now, 1000, 1);
    feed(&ps, 10000000, 100, &now, 1000, 1);
    UT_EQ(burst(&ps), BURST_MAX);
    uct_uccl_paths_cleanup(&ps);

    p = burst_params(ut_seed);
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    UT_EQ(burst(&ps), BURST_MAX); /* no sample */
    /* a fabric that does not queue: 200 us with noise below the rule,
     * a loss or two (chunks out of order) */
    feed(&ps, 200000, 50, &now, 10000, 0);
    feed(&ps, 380000, 3, &now, 10000, 1);
    UT_EQ(burst(&ps), BURST_MAX);
    /* a queue every path shares: 20 ms RTTs, everything in order */
    now += 2 * BURST_WIN;
    feed(&ps, 200000, 10, &now, 10000, 0);
    feed(&ps, 20000000, 30, &now, 10000, 0);
    UT_EQ(burst(&ps), BURST_MAX);
    /* uneven queues: the same RTTs, chunks overtaking each other; a
     * quarter of the ACKs (EWMA 1/16) takes 5 of them */
    feed(&ps, 20000000, 4, &now, 10000, 1);
    UT_EQ(burst(&ps), BURST_MAX);
    feed(&ps, 20000000, 1, &now, 10000, 1);
    UT_EQ(burst(&ps), 1);
    /* still queueing, the reordering stops: below a quarter it goes on
     * (hysteresis), below a sixteenth it has stopped */
    feed(&ps, 20000000, 20, &now, 10000, 0);
    UT_EQ(burst(&ps), 1);
    feed(&ps, 20000000, 30, &now, 10000, 0);
    UT_EQ(burst(&ps), BURST_MAX);
    feed(&ps, 20000000, 200, &now, 10000, 0);
    UT_EQ(ps.ooo_frac, 0); /* the clean fast path again */
    feed(&ps, 20000000, 30, &now, 10000, 1);
    UT_EQ(burst(&ps), 1);
    /* it drains */
    feed(&ps, 200000, 60, &now, 10000, 1);
    UT_EQ(burst(&ps), BURST_MAX);
    /* the base itself rises (a longer route) to 2 ms: a queue for at most
     * two windows, then the new base */
    feed(&ps, 2000000, 60, &now, 10000, 1);
    UT_EQ(burst(&ps), 1);
    feed(&ps, 2000000, 250, &now, 10000000, 1);
    UT_EQ(burst(&ps), BURST_MAX);
    uct_uccl_paths_cleanup(&ps);

    /* tiny RTTs: noise of a few tens of us is within the slack */
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    feed(&ps, 5000, 20, &now, 1000, 1);
    feed(&ps, 40000, 40, &now, 1000, 1);
    UT_EQ(burst(&ps), BURST_MAX);
    uct_uccl_paths_cleanup(&ps);
}

/* Seeded random samples against a plain model of the rule: the minimum of
 * every sample of the current and the previous window, the EWMAs of the
 * RTT and of the ACKs that found chunks out of order */
static void test_burst_random(void)
{
    uct_uccl_path_params_t p = burst_params(ut_seed);
    uint64_t now = 0, srtt = 0, min_cur = UINT64_MAX, min_prev = UINT64_MAX;
    uint64_t win_end = 0, rtt, base, frac = 0;
    unsigned i, uneven = 0, expect, queue_phase = 0, reorder_phase = 0;
    int reorder, reordering = 0;
    uct_uccl_paths_t ps;

    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    for (i = 0; i < 200000; ++i) {
        /* phases of a clean fabric (100-200 us) and of queues (up to
         * 30 ms more), independently phases where half the ACKs find
         * chunks out of order (else 1 in 50); samples up to 2 ms apart */
        queue_phase   ^= (ut_rand_below(500) == 0);
        reorder_phase ^= (ut_rand_below(1500) == 0);
        now    += ut_rand_below(2000000);
        rtt     = 100000 + ut_rand_below(100000) +
                  (queue_phase ? ut_rand_below(30000000) : 0);
        reorder = (ut_rand_below(reorder_phase ? 2 : 50) == 0);
        uct_uccl_paths_fabric_rtt(&ps, rtt, now);
        uct_uccl_paths_ack_order(&ps, reorder);
        frac    = reorder ? frac - frac / 16 + 65536 / 16 :
                  (frac < 16) ? 0 : frac - frac / 16;
        if (frac > 65536 / 4) {
            reordering = 1;
        } else if (frac < 65536 / 16) {
            reordering = 0;
        }
        if (now >= win_end) {
            min_prev = min_cur;
            min_cur  = rtt;
            win_end  = now + BURST_WIN;
        } else if (rtt < min_cur) {
            min_cur = rtt;
        }
        srtt   = (srtt == 0) ? rtt : srtt - srtt / 8 + rtt / 8;
        base   = (min_cur < min_prev) ? min_cur : min_prev;
        expect = (reordering && (srtt > BURST_SLACK) &&
                  ((srtt - BURST_SLACK) / 2 > base)) ? 1 : BURST_MAX;
        UT_EQ(burst(&ps), expect);
        uneven += (expect == 1);
    }
    /* both answers were exercised */
    UT_TRUE((uneven > 1000) && (uneven < 199000));
    uct_uccl_paths_cleanup(&ps);
    printf("  burst: %u of 200000 random samples found the paths uneven\n",
           uneven);
}

/* RC completion scores (lag_scores) in a closed loop: LQ_PATHS paths over
 * LQ_QUEUES FIFO queues (paths i and i + LQ_QUEUES share one, as QPs share
 * a fabric's core path), each serving a chunk in LQ_FAST_NS, the slow one
 * in LQ_SLOW_NS; LQ_WINDOW chunks out, each completion's time is the
 * path's sample. Returns the slow queue's length with the deepest chunk
 * chosen for it after the first LQ_WARMUP completions; *slow_done: the
 * chunks it carried, *end: the time the last one completed. */
#define LQ_PATHS   16
#define LQ_QUEUES  8
#define LQ_SLOW    3
#define LQ_WINDOW  16
#define LQ_CHUNKS  4000
#define LQ_WARMUP  200
#define LQ_FAST_NS 2000000ull
#define LQ_SLOW_NS 20000000ull

static unsigned lag_run(uint64_t seed, int lag_scores, unsigned *slow_done,
                        uint64_t *end)
{
    uct_uccl_path_params_t p = params(seed);
    uint64_t sent[LQ_QUEUES][LQ_WINDOW], next_done[LQ_QUEUES], now = 0;
    unsigned path[LQ_QUEUES][LQ_WINDOW], head[LQ_QUEUES], len[LQ_QUEUES];
    unsigned i, q, a, out = 0, done = 0, deepest = 0;
    uct_uccl_paths_t ps;

    p.num_paths     = LQ_PATHS;
    p.init_rtt_ns   = 50000;
    p.explore_shift = 4;
    p.lag_scores    = lag_scores;
    UT_EQ(uct_uccl_paths_init(&ps, &p), UCS_OK);
    memset(len, 0, sizeof(len));
    memset(head, 0, sizeof(head));
    *slow_done = 0;
    while (done < LQ_CHUNKS) {
        while (out < LQ_WINDOW) {
            a = uct_uccl_paths_select(&ps, 262144, now);
            UT_TRUE(a < LQ_PATHS);
            q = a % LQ_QUEUES;
            uct_uccl_paths_sent(&ps, a, now);
            i = (head[q] + len[q]) % LQ_WINDOW;
            path[q][i] = a;
            sent[q][i] = now;
            if (len[q]++ == 0) {
                next_done[q] = now + ((q == LQ_SLOW) ? LQ_SLOW_NS :
                                                       LQ_FAST_NS);
            }
            if ((q == LQ_SLOW) && (done >= LQ_WARMUP)) {
                deepest = ucs_max(deepest, len[q]);
            }
            ++out;
        }
        /* the queue whose head completes first */
        for (q = 0, i = LQ_QUEUES; q < LQ_QUEUES; ++q) {
            if ((len[q] > 0) &&
                ((i == LQ_QUEUES) || (next_done[q] < next_done[i]))) {
                i = q;
            }
        }
        q   = i;
        now = next_done[q];
        a   = path[q][head[q]];
        uct_uccl_paths_ack_time(&ps, now);
        uct_uccl_paths_rtt(&ps, a, now - sent[q][head[q]]);
        uct_uccl_paths_completed(&ps, a);
        head[q] = (head[q] + 1) % LQ_WINDOW;
        if (--len[q] > 0) {
            next_done[q] = now + ((q == LQ_SLOW) ? LQ_SLOW_NS : LQ_FAST_NS);
        }
        *slow_done += (q == LQ_SLOW);
        --out;
        ++done;
    }
    *end = now;
    uct_uccl_paths_cleanup(&ps);
    return deepest;
}

static void test_lag_scores(void)
{
    /* what the other queues carry while every one holds a chunk or more */
    const double fast = (double)(LQ_QUEUES - 1) / LQ_FAST_NS;
    unsigned i, deep, deep_ewma, slow, slow_ewma, worst = 0, worst_ewma = 0;
    uint64_t end, end_ewma;
    double rate, min_rate = 1e9;

    for (i = 0; i < 20; ++i) {
        deep      = lag_run(ut_seed + i, 1, &slow, &end);
        deep_ewma = lag_run(ut_seed + i, 0, &slow_ewma, &end_ewma);
        rate      = (double)LQ_CHUNKS / end;
        /* no chunk chosen after the warm-up (the first ones are chosen
         * before any sample) joins the slow queue behind more than 2
         * (3 of its service times: what a NIC's ACK timeout there would
         * let through), where the plain EWMA piles most of the window
         * onto it; the slow queue carries part of the load, and the
         * others are kept busy */
        if (deep > 3) {
            UT_FAIL("seed %" PRIu64 ": slow queue %u chunks deep",
                    ut_seed + i, deep);
        }
        UT_TRUE(slow > 0);
        UT_TRUE(rate > 0.6 * fast);
        worst      = ucs_max(worst, deep);
        worst_ewma = ucs_max(worst_ewma, deep_ewma);
        min_rate   = ucs_min(min_rate, rate);
    }
    printf("  lag scores: slow queue at most %u deep (plain EWMA: %u), "
           "rate >= %.2f of the fast queues'\n", worst, worst_ewma,
           min_rate / fast);
}

int main(int argc, char **argv)
{
    ut_init(argc, argv, "test_path");
    test_budget();
    test_determinism();
    test_p2c();
    test_penalty();
    test_small_and_edges();
    test_park_loss_burst();
    test_park_never_all();
    test_stall();
    test_retire_rc();
    test_health_random();
    test_burst();
    test_burst_random();
    test_lag_scores();
    return ut_done("test_path");
}

/*
 * Path selection: power of two choices prefers low-RTT paths in the
 * proportions P2C predicts, penalised paths are used less and recover as
 * the penalty decays, small messages stick, and everything is a function
 * of the seed. The QP budget grants paths so that many peers shrink them,
 * down to one, before a conn cannot be made.
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

int main(int argc, char **argv)
{
    ut_init(argc, argv, "test_path");
    test_budget();
    test_determinism();
    test_p2c();
    test_penalty();
    test_small_and_edges();
    return ut_done("test_path");
}

/*
 * 24-bit serial-number arithmetic, with emphasis on the wrap at 2^24.
 */
#include "unit_test.h"

#include <uct/uccl/proto/uccl_seq.h>

static void test_fixed(void)
{
    const uint32_t top = UCT_UCCL_SEQ_MASK; /* 2^24 - 1 */

    UT_EQ(UCT_UCCL_SEQ_MASK, 0xffffff);
    UT_EQ(uct_uccl_seq_add(top, 1), 0);
    UT_EQ(uct_uccl_seq_add(top, 2), 1);
    UT_EQ(uct_uccl_seq_add(top - 9, 20), 10);
    UT_EQ(uct_uccl_seq_add(5, 0), 5);

    UT_EQ(uct_uccl_seq_diff(0, top), 1);
    UT_EQ(uct_uccl_seq_diff(top, 0), -1);
    UT_EQ(uct_uccl_seq_diff(10, top - 9), 20);
    UT_EQ(uct_uccl_seq_diff(top - 9, 10), -20);
    UT_EQ(uct_uccl_seq_diff(7, 7), 0);
    /* the extremes of the signed range */
    UT_EQ(uct_uccl_seq_diff(1u << 23, 0), -(1 << 23));
    UT_EQ(uct_uccl_seq_diff((1u << 23) - 1, 0), (1 << 23) - 1);
    UT_EQ(uct_uccl_seq_diff(0, (1u << 23) + 1), (1 << 23) - 1);

    UT_TRUE(uct_uccl_seq_lt(top, 0));
    UT_TRUE(uct_uccl_seq_gt(0, top));
    UT_TRUE(uct_uccl_seq_le(top, top));
    UT_TRUE(uct_uccl_seq_ge(3, 3));
    UT_TRUE(!uct_uccl_seq_lt(3, 3));
    UT_TRUE(!uct_uccl_seq_gt(top, 5));
    UT_TRUE(uct_uccl_seq_lt(top - 4095, 100));

    UT_EQ(uct_uccl_seq_dist(3, top), 4);
    UT_EQ(uct_uccl_seq_dist(top, top), 0);
    UT_EQ(uct_uccl_seq_dist(0, 1), top);
}

/* random pairs: diff/add/compare agree with 64-bit integer arithmetic */
static void test_random(void)
{
    unsigned i;
    int64_t base, d, a64, b64;
    uint32_t a, b;

    for (i = 0; i < 1000000; ++i) {
        /* bias towards the wrap point */
        base = (i & 1) ? (1 << 24) - (int64_t)ut_rand_below(1 << 16) :
                         ut_rand_below(1 << 24);
        d    = (int64_t)ut_rand_below(1u << 24) - (1 << 23);
        a64  = base + d;
        b64  = base;
        a    = (uint32_t)(a64 & UCT_UCCL_SEQ_MASK);
        b    = (uint32_t)(b64 & UCT_UCCL_SEQ_MASK);
        if (uct_uccl_seq_diff(a, b) != d) {
            UT_FAIL("diff(%u, %u) = %d, expected %" PRId64, a, b,
                    uct_uccl_seq_diff(a, b), d);
        }
        if (uct_uccl_seq_add(b, (uint32_t)d & UCT_UCCL_SEQ_MASK) != a) {
            UT_FAIL("add(%u, %" PRId64 ") != %u", b, d, a);
        }
        if ((uct_uccl_seq_lt(a, b) != (d < 0)) ||
            (uct_uccl_seq_le(a, b) != (d <= 0)) ||
            (uct_uccl_seq_gt(a, b) != (d > 0)) ||
            (uct_uccl_seq_ge(a, b) != (d >= 0))) {
            UT_FAIL("compare(%u, %u) disagrees with d=%" PRId64, a, b, d);
        }
        if ((d >= 0) && (uct_uccl_seq_dist(a, b) != d)) {
            UT_FAIL("dist(%u, %u) != %" PRId64, a, b, d);
        }
        ut_checks += 5;
    }
    printf("  random: 1000000 pairs around and across 2^24 agree with "
           "64-bit arithmetic\n");
}

/* walking a window across the wrap keeps a strict order */
static void test_walk(void)
{
    uint32_t s = UCT_UCCL_SEQ_MASK - 5000, prev = s, i;

    for (i = 0; i < 10000; ++i) {
        s = uct_uccl_seq_add(s, 1);
        UT_TRUE(uct_uccl_seq_gt(s, prev));
        UT_EQ(uct_uccl_seq_dist(s, prev), 1);
        UT_EQ(uct_uccl_seq_diff(s, UCT_UCCL_SEQ_MASK - 5000), i + 1);
        prev = s;
    }
    UT_EQ(s, 4999);
}

int main(int argc, char **argv)
{
    ut_init(argc, argv, "test_seq");
    test_fixed();
    test_random();
    test_walk();
    return ut_done("test_seq");
}

/*
 * In-order AM delivery: random arrival permutations (bounded by the
 * window), duplicates, window edge, sequence wrap; every AM is delivered
 * exactly once and in order.
 */
#include "unit_test.h"

#include <uct/uccl/uccl_reorder.h>

#include <string.h>

static uint32_t delivered_next;  /* offset expected next */
static uint32_t ndelivered;
static uint8_t  *seen;
static uint8_t  *parked;

static void deliver(void *desc)
{
    uint32_t off = (uint32_t)((uintptr_t)desc - 1);

    if (seen[off]) {
        UT_FAIL("AM %u delivered twice", off);
    }
    if (off != delivered_next) {
        UT_FAIL("AM %u delivered, expected %u", off, delivered_next);
    }
    seen[off]   = 1;
    parked[off] = 0;
    ++delivered_next;
    ++ndelivered;
}

static void test_edges(void)
{
    uct_uccl_reorder_t r;
    uint32_t init = UCT_UCCL_SEQ_MASK - 1;
    int x1, x2, x3;

    UT_EQ(uct_uccl_reorder_init(&r, 3, 0), UCS_ERR_INVALID_PARAM);
    UT_EQ(uct_uccl_reorder_init(&r, 1, 0), UCS_ERR_INVALID_PARAM);
    UT_EQ(uct_uccl_reorder_init(&r, 8, 1u << 24), UCS_ERR_INVALID_PARAM);
    UT_EQ(uct_uccl_reorder_init(&r, 8, init), UCS_OK);

    /* next+size is out of window, next+size-1 is the last slot */
    UT_EQ(uct_uccl_reorder_insert(&r, uct_uccl_seq_add(init, 8), &x1),
          UCT_UCCL_REORDER_OUT_OF_WINDOW);
    UT_EQ(uct_uccl_reorder_insert(&r, uct_uccl_seq_add(init, 7), &x1),
          UCT_UCCL_REORDER_HELD);
    UT_EQ(uct_uccl_reorder_insert(&r, uct_uccl_seq_add(init, 7), &x2),
          UCT_UCCL_REORDER_DUPLICATE);
    UT_EQ(uct_uccl_reorder_insert(&r, uct_uccl_seq_add(init, 1), &x2),
          UCT_UCCL_REORDER_HELD);
    UT_TRUE(uct_uccl_reorder_pop(&r) == NULL);
    UT_EQ(r.held, 2);
    /* init, init+1 (=2^24-1, then wrap to 0) */
    UT_EQ(uct_uccl_reorder_insert(&r, init, &x3), UCT_UCCL_REORDER_DELIVER);
    UT_TRUE(uct_uccl_reorder_pop(&r) == &x2);
    UT_TRUE(uct_uccl_reorder_pop(&r) == NULL);
    UT_EQ(r.next, 0);
    UT_EQ(uct_uccl_reorder_insert(&r, init, &x3),
          UCT_UCCL_REORDER_DUPLICATE);
    UT_EQ(uct_uccl_reorder_insert(&r, uct_uccl_seq_add(init, 1), &x3),
          UCT_UCCL_REORDER_DUPLICATE);
    UT_EQ(r.held, 1);
    uct_uccl_reorder_cleanup(&r);
}

static void drain_cb(void *arg, void *desc)
{
    ++*(unsigned*)arg;
}

/* the sender has at most `size` AMs unacknowledged, so arrivals are a
 * random order of a sliding window; some arrive twice */
static void test_round(unsigned round)
{
    uint32_t size  = 2u << ut_rand_below(12);    /* 2 .. 4096 */
    uint32_t total = size * (3 + ut_rand_below(20));
    uint32_t init  = (round & 1) ? UCT_UCCL_SEQ_MASK - ut_rand_below(size) :
                                   ut_rand_below(1u << 24);
    uint32_t *pool = malloc(sizeof(*pool) * size);
    uint32_t npool = 0, nextsend = 0, dups = 0, held_max = 0, i, off;
    uct_uccl_reorder_result_t res;
    uct_uccl_reorder_t r;
    unsigned drained = 0;
    void *d;

    uint64_t steps = 0;

    seen           = calloc(total, 1);
    parked         = calloc(total, 1);
    delivered_next = 0;
    ndelivered     = 0;
    UT_EQ(uct_uccl_reorder_init(&r, size, init), UCS_OK);

    while (ndelivered < total) {
        if (++steps > 100ull * total) {
            UT_FAIL("stuck: %u of %u delivered", ndelivered, total);
        }
        /* window: nothing beyond delivered_next + size may be sent */
        while ((nextsend < total) && (nextsend < delivered_next + size) &&
               (npool < size) && ut_rand_below(3)) {
            pool[npool++] = nextsend++;
        }
        if (npool == 0) {
            continue;
        }
        i   = ut_rand_below(npool);
        off = pool[i];
        if (ut_rand_below(10) == 0) {
            ++dups;                   /* stays in the pool: comes again */
        } else {
            pool[i] = pool[--npool];
        }

        res = uct_uccl_reorder_insert(&r, uct_uccl_seq_add(init, off),
                                      (void*)(uintptr_t)(off + 1));
        /* duplicate iff delivered already or parked already */
        if ((seen[off] || parked[off]) !=
            (res == UCT_UCCL_REORDER_DUPLICATE)) {
            UT_FAIL("AM %u (seen %u parked %u): result %d", off, seen[off],
                    parked[off], res);
        }
        if (res == UCT_UCCL_REORDER_DUPLICATE) {
            continue;
        }
        if (res == UCT_UCCL_REORDER_DELIVER) {
            UT_EQ(off, delivered_next);
            deliver((void*)(uintptr_t)(off + 1));
            while ((d = uct_uccl_reorder_pop(&r)) != NULL) {
                deliver(d);
            }
        } else {
            UT_EQ(res, UCT_UCCL_REORDER_HELD);
            UT_TRUE(off != delivered_next);
            parked[off] = 1;
        }
        if (r.held > held_max) {
            held_max = r.held;
        }
        UT_TRUE(r.held < size);
        UT_EQ(r.next, uct_uccl_seq_add(init, delivered_next));
    }

    /* a parked entry is handed back on teardown */
    UT_EQ(uct_uccl_reorder_insert(&r, uct_uccl_seq_add(r.next, 1),
                                  (void*)1), UCT_UCCL_REORDER_HELD);
    uct_uccl_reorder_drain(&r, drain_cb, &drained);
    UT_EQ(drained, 1);
    UT_EQ(r.held, 0);

    if (round < 4) {
        printf("  round %u: size %u init %u: %u AMs in order, %u replays, "
               "up to %u parked\n", round, size, init, total, dups,
               held_max);
    }
    uct_uccl_reorder_cleanup(&r);
    free(seen);
    free(parked);
    free(pool);
}

int main(int argc, char **argv)
{
    unsigned r;

    ut_init(argc, argv, "test_reorder");
    test_edges();
    for (r = 0; r < 200; ++r) {
        test_round(r);
    }
    printf("  200 rounds: every AM delivered exactly once, in order\n");
    return ut_done("test_reorder");
}

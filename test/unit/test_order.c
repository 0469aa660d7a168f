/*
 * Ordered delivery against a reference model: a random stream of chunks,
 * some of them ordered messages, arrives in a random order (with
 * duplicates) through the SACK state; every ordered message must come out
 * exactly once, in CSN order, and only after every chunk before it
 * arrived. Also the hold limit and the sequence wrap.
 */
#include "unit_test.h"

#include <uct/uccl/proto/uccl_order.h>
#include <uct/uccl/proto/uccl_sack.h>

#include <stdlib.h>
#include <string.h>

#define N_CHUNKS  2000
#define WINDOW    256

typedef struct {
    uint32_t csn;
    int      ordered;
} chunk_t;

static chunk_t chunks[N_CHUNKS];
static int     arrived[N_CHUNKS];
static int     delivered[N_CHUNKS];
static uint32_t next_expected;     /* index of the next ordered chunk */

static uint32_t index_of(uint32_t init, uint32_t csn)
{
    return uct_uccl_seq_dist(csn, init);
}

/* a delivered message: its CSN order and that every chunk before it is in */
static void check_delivery(uint32_t init, chunk_t *c)
{
    uint32_t i = index_of(init, c->csn), k;

    UT_TRUE(c->ordered);
    UT_EQ(delivered[i], 0);
    delivered[i] = 1;
    for (k = 0; k < i; ++k) {
        UT_TRUE(arrived[k]);
    }
    while ((next_expected < N_CHUNKS) && !chunks[next_expected].ordered) {
        ++next_expected;
    }
    UT_EQ(i, next_expected);
    ++next_expected;
}

/* one arrival through the SACK state, as the receiver does it */
static void arrive(uct_uccl_sack_t *s, uct_uccl_order_t *o, uint32_t init,
                   chunk_t *c)
{
    uct_uccl_sack_result_t r;
    void *desc;

    if (c->ordered && !uct_uccl_order_may_take(o, c->csn, s->cum) &&
        !uct_uccl_sack_has(s, c->csn)) {
        return; /* refused unrecorded: the sender resends it later */
    }
    r = uct_uccl_sack_record(s, c->csn);
    if ((r == UCT_UCCL_SACK_DUPLICATE) || (r == UCT_UCCL_SACK_OUT_OF_WINDOW)) {
        return;
    }
    arrived[index_of(init, c->csn)] = 1;
    if (c->ordered) {
        if (uct_uccl_order_ready(o, c->csn, s->cum)) {
            check_delivery(init, c);
        } else {
            UT_EQ(uct_uccl_order_hold(o, c->csn, s->cum, c), UCS_OK);
        }
    }
    while ((desc = uct_uccl_order_pop(o, s->cum)) != NULL) {
        check_delivery(init, desc);
    }
}

/* random arrival order within the window, duplicates, a small hold limit
 * so that refusals and resends happen */
static void test_random(uint32_t init, uint32_t limit)
{
    uint32_t order[N_CHUNKS], i, left, sent = 0, pick;
    uct_uccl_order_t o;
    uct_uccl_sack_t s;

    memset(arrived, 0, sizeof(arrived));
    memset(delivered, 0, sizeof(delivered));
    next_expected = 0;
    for (i = 0; i < N_CHUNKS; ++i) {
        chunks[i].csn     = uct_uccl_seq_add(init, i);
        chunks[i].ordered = (ut_rand_below(3) == 0);
    }
    UT_EQ(uct_uccl_sack_init(&s, WINDOW, init), UCS_OK);
    UT_EQ(uct_uccl_order_init(&o, WINDOW, limit), UCS_OK);

    /* the sender keeps at most WINDOW / 2 chunks beyond cum outstanding and
     * resends what is missing; arrivals pick from the outstanding ones */
    for (;;) {
        left = 0;
        while ((sent < N_CHUNKS) &&
               (index_of(init, chunks[sent].csn) <
                index_of(init, s.cum) + WINDOW / 2)) {
            ++sent;
        }
        for (i = index_of(init, s.cum); i < sent; ++i) {
            if (!arrived[i]) {
                order[left++] = i;
            }
        }
        if (left == 0) {
            if (sent == N_CHUNKS) {
                break;
            }
            continue;
        }
        pick = order[ut_rand_below(left)];
        arrive(&s, &o, init, &chunks[pick]);
        if (ut_rand_below(8) == 0) { /* a duplicate of something old */
            arrive(&s, &o, init, &chunks[ut_rand_below(sent)]);
        }
    }

    for (i = 0; i < N_CHUNKS; ++i) {
        UT_EQ(delivered[i], chunks[i].ordered);
    }
    UT_EQ(o.held, 0);
    uct_uccl_order_cleanup(&o);
    uct_uccl_sack_cleanup(&s);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

/* RC: AMs numbered without gaps come in a random order within the window,
 * some twice (a copy resent after its QP failed); the receiver's rule
 * (uccl_rx.c): a number not above the last handed over, or parked
 * already, is dropped; the next in line goes with those parked behind it;
 * one ahead is parked. Each must come out once, in order. */
static void test_rc(uint32_t init)
{
    static uint32_t seq[2 * N_CHUNKS];
    static uint64_t key[2 * N_CHUNKS];
    uint32_t last = uct_uccl_seq_add(init, UCT_UCCL_SEQ_MASK);
    uint32_t i, j, n = 0, csn;
    uct_uccl_order_t o;
    void *desc;

    UT_EQ(uct_uccl_order_init(&o, WINDOW, WINDOW), UCS_OK);
    for (i = 0; i < N_CHUNKS; ++i) {
        seq[n++] = i;
        if ((ut_rand() % 8) == 0) {
            seq[n++] = i;                   /* a second copy */
        }
    }
    for (i = 0; i < n; ++i) {               /* each moved by < WINDOW / 2 */
        key[i] = ((uint64_t)(seq[i] + ut_rand() % (WINDOW / 2)) << 32) |
                 seq[i];
    }
    qsort(key, n, sizeof(*key), cmp_u64);
    for (i = 0; i < n; ++i) {
        seq[i] = (uint32_t)key[i];
    }
    memset(delivered, 0, sizeof(delivered));
    for (i = 0; i < n; ++i) {
        csn = uct_uccl_seq_add(init, seq[i]);
        if (!uct_uccl_seq_gt(csn, last) || uct_uccl_order_has(&o, csn)) {
            continue;                       /* a duplicate */
        }
        if (csn != uct_uccl_seq_add(last, 1)) {
            UT_TRUE(uct_uccl_seq_dist(csn, last) <= WINDOW);
            UT_EQ(uct_uccl_order_hold(&o, csn, uct_uccl_seq_add(last, 1),
                                      &chunks[seq[i]]), UCS_OK);
            continue;
        }
        desc = &chunks[seq[i]];
        do {
            j = (uint32_t)((chunk_t*)desc - chunks);
            UT_EQ(j, index_of(init, csn));  /* in order, once */
            UT_EQ(delivered[j], 0);
            delivered[j] = 1;
            last = csn;
            csn  = uct_uccl_seq_add(csn, 1);
        } while ((desc = uct_uccl_order_take(&o, csn)) != NULL);
    }
    for (i = 0; i < N_CHUNKS; ++i) {
        UT_EQ(delivered[i], 1);
    }
    UT_EQ(o.held, 0);
    uct_uccl_order_cleanup(&o);
}

static void test_params(void)
{
    uct_uccl_order_t o;
    static int a, b;

    UT_EQ(uct_uccl_order_init(&o, 100, 4), UCS_ERR_INVALID_PARAM);
    UT_EQ(uct_uccl_order_init(&o, 64, 0), UCS_ERR_INVALID_PARAM);
    UT_EQ(uct_uccl_order_init(&o, 64, 1), UCS_OK);
    UT_TRUE(o.slot == NULL);            /* nothing allocated until needed */
    UT_TRUE(uct_uccl_order_ready(&o, 5, 6));
    UT_TRUE(!uct_uccl_order_ready(&o, 6, 6));
    UT_TRUE(uct_uccl_order_may_take(&o, 7, 6));
    UT_EQ(uct_uccl_order_hold(&o, 7, 6, &a), UCS_OK);
    /* full: only the first missing CSN (6), which 7 waits for */
    UT_TRUE(!uct_uccl_order_may_take(&o, 8, 6));
    UT_TRUE(uct_uccl_order_may_take(&o, 6, 6));
    /* parked: not ready while held, even below cum */
    UT_TRUE(!uct_uccl_order_ready(&o, 5, 6));
    UT_EQ(uct_uccl_order_hold(&o, 6, 7, &b), UCS_OK);
    UT_TRUE(uct_uccl_order_pop(&o, 7) == &b);
    UT_TRUE(uct_uccl_order_pop(&o, 7) == NULL);
    UT_TRUE(uct_uccl_order_pop(&o, 8) == &a);
    UT_EQ(o.held, 0);
    uct_uccl_order_cleanup(&o);
}

int main(int argc, char **argv)
{
    ut_init(argc, argv, "test_order");
    test_params();
    test_random(0, WINDOW);
    test_random(UCT_UCCL_SEQ_MASK - 700, WINDOW);  /* wraps */
    test_random(ut_rand() & UCT_UCCL_SEQ_MASK, 4); /* refusals */
    test_rc(0);
    test_rc(UCT_UCCL_SEQ_MASK - 700);              /* wraps */
    return ut_done("test_order");
}

/*
 * The PUT runs behind the resend's obsolete check: a chunk is obsolete
 * exactly when PUT chunks sent after it, within the runs kept, wrote all
 * its bytes in one run. Checked against a log of every chunk sent, with
 * CSNs across the 2^24 wrap.
 */
#include "unit_test.h"

#include <uct/uccl/proto/uccl_put_runs.h>

#include <string.h>

#define NSENT 4096

typedef struct {
    uint64_t raddr;
    uint32_t rkey;
    uint32_t length;
    uint32_t csn;
    unsigned run;   /* the model's run number */
} sent_t;

static sent_t sent[NSENT];

/* The model: does one run of chunks sent after `c` (and kept: among the
 * last UCT_UCCL_PUT_RUNS) cover it? */
static int model_cover(unsigned n, unsigned c, unsigned lo)
{
    unsigned last_run = sent[n - 1].run, i, j;
    uint64_t from, to;

    for (i = c + 1; i < n; ++i) {
        if ((sent[i].run == sent[c].run) ||
            (last_run - sent[i].run >= UCT_UCCL_PUT_RUNS) || (i < lo) ||
            (sent[i].rkey != sent[c].rkey)) {
            continue;
        }
        /* only a run's first chunk starts the test: all of it is after c */
        if ((i > 0) && (sent[i - 1].run == sent[i].run)) {
            continue;
        }
        from = sent[i].raddr;
        to   = from;
        for (j = i; (j < n) && (sent[j].run == sent[i].run); ++j) {
            to += sent[j].length;
        }
        if ((from <= sent[c].raddr) &&
            (sent[c].raddr + sent[c].length <= to)) {
            return 1;
        }
    }
    return 0;
}

static void test_random(void)
{
    uct_uccl_put_runs_t r;
    uint32_t csn = uct_uccl_seq_add(UCT_UCCL_SEQ_MASK, -2000 + 1);
    uint64_t next = 0x10000;
    unsigned n, c, run = 0, una;
    uint32_t length, rkey = 7;

    memset(&r, 0, sizeof(r));
    for (n = 0; n < NSENT; ++n) {
        switch (ut_rand_below(8)) {
        case 0: /* a jump back onto bytes written before */
            next = 0x10000 + 0x1000 * ut_rand_below(64);
            break;
        case 1: /* another key */
            rkey = 7 + ut_rand_below(3);
            break;
        default:
            break;
        }
        length = 0x1000 * (1 + ut_rand_below(4));
        if (ut_rand_below(4) == 0) {
            csn = uct_uccl_seq_add(csn, 1 + ut_rand_below(3)); /* AMs */
        }
        if ((n > 0) && ((sent[n - 1].raddr + sent[n - 1].length != next) ||
                        (sent[n - 1].rkey != rkey))) {
            ++run;
        }
        sent[n] = (sent_t){next, rkey, length, csn, run};
        if ((n > 0) && (sent[n - 1].run == run) && ut_rand_below(2)) {
            /* the next chunk of an op */
            UT_EQ(uct_uccl_put_runs_extend(&r, next, length), 1);
        } else {
            uct_uccl_put_runs_sent(&r, next, rkey, length, csn);
        }
        next += length;
        csn   = uct_uccl_seq_add(csn, 1);

        /* each chunk of the last 200 as the resent one, una at or before
         * it (a run that began before una is not looked at) */
        if ((n % 97) != 96) {
            continue;
        }
        for (c = (n > 200) ? n - 200 : 0; c <= n; ++c) {
            una = c - ut_rand_below(c + 1 > 50 ? 50 : c + 1);
            UT_EQ(uct_uccl_put_runs_cover(&r, sent[c].raddr, sent[c].rkey,
                                          sent[c].length, sent[c].csn,
                                          sent[una].csn, csn),
                  model_cover(n + 1, c, una));
        }
    }
    UT_TRUE(run > UCT_UCCL_PUT_RUNS); /* the ring wrapped */
}

static void test_fixed(void)
{
    uct_uccl_put_runs_t r;

    memset(&r, 0, sizeof(r));
    /* nothing sent: nothing covers */
    UT_EQ(uct_uccl_put_runs_cover(&r, 0, 0, 0, 5, 5, 6), 0);
    /* two ops to [0x1000, 0x5000): the second's chunks cover the first's */
    uct_uccl_put_runs_sent(&r, 0x1000, 1, 0x2000, 10);
    uct_uccl_put_runs_sent(&r, 0x3000, 1, 0x2000, 11);
    UT_EQ(uct_uccl_put_runs_cover(&r, 0x1000, 1, 0x2000, 10, 10, 12), 0);
    uct_uccl_put_runs_sent(&r, 0x1000, 1, 0x1000, 12);
    uct_uccl_put_runs_sent(&r, 0x2000, 1, 0x3000, 13);
    UT_EQ(uct_uccl_put_runs_cover(&r, 0x1000, 1, 0x2000, 10, 10, 14), 1);
    UT_EQ(uct_uccl_put_runs_cover(&r, 0x3000, 1, 0x2000, 11, 10, 14), 1);
    /* a chunk of the newest run itself, or under another key */
    UT_EQ(uct_uccl_put_runs_cover(&r, 0x2000, 1, 0x3000, 13, 10, 14), 0);
    UT_EQ(uct_uccl_put_runs_cover(&r, 0x1000, 2, 0x2000, 10, 10, 14), 0);
    /* one byte beyond the run */
    UT_EQ(uct_uccl_put_runs_cover(&r, 0x4000, 1, 0x1001, 11, 10, 14), 0);
    /* CSNs 2^24 later (the ring kept stale runs): 13 - 2^24 is no
     * successor of a chunk sent at 5 */
    UT_EQ(uct_uccl_put_runs_cover(&r, 0x1000, 1, 0x1000, 5, 5, 6), 0);
    /* a chunk that does not follow the newest run, [0x1000, 0x5000),
     * and one that does */
    UT_EQ(uct_uccl_put_runs_extend(&r, 0x4000, 0x1000), 0);
    UT_EQ(uct_uccl_put_runs_extend(&r, 0x5000, 0x1000), 1);
    UT_EQ(uct_uccl_put_runs_cover(&r, 0x5000, 1, 0x1000, 11, 10, 15), 1);
}

int main(int argc, char **argv)
{
    ut_init(argc, argv, "put_runs");
    test_fixed();
    test_random();
    return ut_done("put_runs");
}

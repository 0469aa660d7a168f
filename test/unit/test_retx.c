/*
 * Retransmission decisions: SACK holes, duplicate-ACK threshold, reorder
 * distance, resend pacing (min age), RTO estimator, backoff and give-up;
 * then a simulated lossy multipath link driven by sack + tracker + rto,
 * checking every chunk arrives and resends stay close to what was lost.
 */
#include "unit_test.h"

#include <uct/uccl/proto/uccl_rto.h>
#include <uct/uccl/proto/uccl_sack.h>
#include <uct/uccl/proto/uccl_tracker.h>

#include <string.h>

#define MAX_WORDS UCT_UCCL_WIRE_SACK_MAX_WORDS

typedef union {
    uct_uccl_ack_t ack;
    uint8_t        buf[sizeof(uct_uccl_ack_t) + 8 * MAX_WORDS];
} ack_buf_t;

/* records which CSNs a callback saw */
typedef struct {
    uint32_t csn[1024];
    unsigned n;
    unsigned budget;     /* retx cb: how many to accept before NO_RESOURCE */
} log_t;

static void log_ack_cb(void *arg, uint32_t csn, uct_uccl_tx_entry_t *e)
{
    log_t *l = arg;

    l->csn[l->n++] = csn;
}

static ucs_status_t log_retx_cb(void *arg, uint32_t csn,
                                uct_uccl_tx_entry_t *e)
{
    log_t *l = arg;

    if (l->budget == 0) {
        return UCS_ERR_NO_RESOURCE;
    }
    --l->budget;
    l->csn[l->n++] = csn;
    return UCS_OK;
}

/* build an ACK saying: cumulative `cum`, plus the listed CSNs */
static void make_ack(ack_buf_t *a, uint32_t cum, const uint32_t *sacked,
                     unsigned n, uint32_t echo, uint32_t rx_delay)
{
    uint32_t base = cum & ~63u, d;
    unsigned i, words = 0;
    uint64_t w[MAX_WORDS] = {0};

    for (i = 0; i < n; ++i) {
        d = uct_uccl_seq_dist(sacked[i], base);
        w[d / 64] |= 1ull << (d % 64);
        if (d / 64 + 1 > words) {
            words = d / 64 + 1;
        }
    }
    memset(a, 0, sizeof(*a));
    uct_uccl_wire_hdr_init(&a->ack.hdr, UCT_UCCL_CTL_ACK,
                           uct_uccl_wire_ack_size(words));
    a->ack.cum_csn     = cum;
    a->ack.echo_csn    = echo;
    a->ack.rx_delay_ns = rx_delay;
    a->ack.sack_words  = words;
    memcpy(a->buf + sizeof(a->ack), w, 8 * words);
}

static void expect_log(const log_t *l, const uint32_t *csn, unsigned n)
{
    unsigned i;

    UT_EQ(l->n, n);
    for (i = 0; i < n; ++i) {
        if (l->csn[i] != csn[i]) {
            UT_FAIL("callback %u: csn %u, expected %u", i, l->csn[i], csn[i]);
        }
    }
}

static void test_holes(void)
{
    const uint32_t init = UCT_UCCL_SEQ_MASK - 4; /* holes across the wrap */
    uct_uccl_tracker_params_t p = {
        .size = 64, .init_csn = init, .dupack_thresh = 3, .reorder_csns = 0,
        .num_paths = 16
    };
    uint32_t sacked[5], exp[10], i;
    uct_uccl_ack_info_t info;
    uct_uccl_tracker_t t;
    ack_buf_t a;
    log_t l;

    UT_EQ(uct_uccl_tracker_init(&t, &p), UCS_OK);
    for (i = 0; i < 10; ++i) {
        /* a path each: no chunk overtakes another on its path */
        UT_EQ(uct_uccl_tracker_add(&t, 100 + i, i, 1000,
                                   (void*)(uintptr_t)(i + 1)),
              uct_uccl_seq_add(init, i));
    }
    UT_EQ(t.inflight_bytes, 10 * 100 + 45);

    /* chunks 5..9 arrive, 0..4 are missing */
    for (i = 0; i < 5; ++i) {
        sacked[i] = uct_uccl_seq_add(init, 5 + i);
        exp[i]    = sacked[i];
    }
    make_ack(&a, init, sacked, 5, sacked[4], 100);
    memset(&l, 0, sizeof(l));
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 3000, log_ack_cb, &l, &info),
          UCS_OK);
    expect_log(&l, exp, 5);
    UT_EQ(info.acked, 5);
    UT_EQ(info.acked_bytes, 105 + 106 + 107 + 108 + 109);
    UT_EQ(info.rtt_ns, 3000 - 1000 - 100);  /* echo minus receiver delay */
    UT_EQ(info.rtt_path, 9);
    UT_EQ(info.dupack, 1);
    UT_EQ(info.una_advanced, 0);
    UT_EQ(t.dupacks, 1);
    UT_EQ(t.sacked_cnt, 5);
    UT_EQ(t.high_sacked, uct_uccl_seq_add(init, 10));
    UT_TRUE(uct_uccl_tracker_has_holes(&t));

    /* below the dup-ack threshold nothing is resent */
    l.n = 0; l.budget = 100;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 5000, 0, 100, log_retx_cb, &l), 0);

    /* the same ACK twice more: 3 duplicates, the SACK bits are old news */
    for (i = 0; i < 2; ++i) {
        l.n = 0;
        UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 3000, log_ack_cb, &l, &info),
              UCS_OK);
        UT_EQ(l.n, 0);
        UT_EQ(info.rtt_ns, 0);      /* echo already acked: no sample */
    }
    UT_EQ(t.dupacks, 3);

    /* the five holes, in CSN order, once; not again before min_age */
    for (i = 0; i < 5; ++i) {
        exp[i] = uct_uccl_seq_add(init, i);
    }
    l.n = 0; l.budget = 100;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 5000, 1000, 100, log_retx_cb, &l),
          5);
    expect_log(&l, exp, 5);
    UT_EQ(uct_uccl_tracker_entry(&t, init)->retries, 1);
    UT_EQ(uct_uccl_tracker_entry(&t, init)->send_time, 5000);
    l.n = 0;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 5999, 1000, 100, log_retx_cb, &l),
          0);
    /* a full send queue stops the scan; the rest stays due */
    l.n = 0; l.budget = 2;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 6000, 1000, 100, log_retx_cb, &l),
          2);
    expect_log(&l, exp, 2);
    UT_EQ(uct_uccl_tracker_entry(&t, exp[2])->retries, 1);
    l.n = 0; l.budget = 100;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 6000, 1000, 2, log_retx_cb, &l), 2);
    expect_log(&l, exp + 2, 2);     /* max per call */

    /* RTT of a resent chunk is ambiguous (Karn): no sample */
    make_ack(&a, uct_uccl_seq_add(init, 1), NULL, 0, init, 0);
    l.n = 0;
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 7000, log_ack_cb, &l, &info),
          UCS_OK);
    UT_EQ(info.rtt_ns, 0);
    UT_EQ(info.una_advanced, 1);
    UT_EQ(t.dupacks, 0);
    expect_log(&l, exp, 1);

    /* bogus: cum beyond what was sent changes nothing */
    make_ack(&a, uct_uccl_seq_add(init, 11), NULL, 0, init, 0);
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 7000, log_ack_cb, &l, &info),
          UCS_ERR_OUT_OF_RANGE);
    UT_EQ(t.una, uct_uccl_seq_add(init, 1));
    /* SACK bits beyond nxt are counted and ignored */
    sacked[0] = uct_uccl_seq_add(init, 12);
    sacked[1] = uct_uccl_seq_add(init, 3);
    make_ack(&a, uct_uccl_seq_add(init, 1), sacked, 2, init, 0);
    l.n = 0;
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 7000, log_ack_cb, &l, &info),
          UCS_OK);
    UT_EQ(info.bad_bits, 1);
    expect_log(&l, &sacked[1], 1);
    /* stale ACK (cum behind una): no dupack, its SACK bits still count */
    sacked[0] = uct_uccl_seq_add(init, 4);
    make_ack(&a, init, sacked, 1, init, 0);
    l.n = 0;
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 7000, log_ack_cb, &l, &info),
          UCS_OK);
    UT_EQ(info.dupack, 0);
    expect_log(&l, sacked, 1);

    /* RTO expiry: the unsacked ones (1, 2) and nothing sacked */
    exp[0] = uct_uccl_seq_add(init, 1);
    exp[1] = uct_uccl_seq_add(init, 2);
    l.n = 0; l.budget = 100;
    UT_EQ(uct_uccl_tracker_expire(&t, 100000, 50000, 100, log_retx_cb, &l),
          2);
    expect_log(&l, exp, 2);

    /* cumulative ACK over everything: only the unsacked are reported */
    make_ack(&a, uct_uccl_seq_add(init, 10), NULL, 0, init, 0);
    l.n = 0;
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 200000, log_ack_cb, &l, &info),
          UCS_OK);
    expect_log(&l, exp, 2);
    UT_TRUE(uct_uccl_tracker_empty(&t));
    UT_TRUE(!uct_uccl_tracker_has_holes(&t));
    UT_EQ(t.inflight_bytes, 0);
    UT_EQ(t.sacked_cnt, 0);

    /* purge hands back what is outstanding */
    for (i = 0; i < 3; ++i) {
        uct_uccl_tracker_add(&t, 1, 0, 0, (void*)1);
    }
    sacked[0] = uct_uccl_seq_add(init, 11);
    make_ack(&a, uct_uccl_seq_add(init, 10), sacked, 1, init, 0);
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 0, log_ack_cb, &l, NULL), UCS_OK);
    exp[0] = uct_uccl_seq_add(init, 10);
    exp[1] = uct_uccl_seq_add(init, 12);
    l.n = 0;
    uct_uccl_tracker_purge(&t, log_ack_cb, &l);
    expect_log(&l, exp, 2);
    UT_TRUE(uct_uccl_tracker_empty(&t));
    uct_uccl_tracker_cleanup(&t);
    printf("  holes: dupack threshold, min age, budget, Karn, bogus/stale "
           "ACKs, RTO expiry, purge\n");
}

static void test_reorder_distance(void)
{
    uct_uccl_tracker_params_t p = {
        .size = 128, .init_csn = 0, .dupack_thresh = 100, .reorder_csns = 3,
        .num_paths = 16
    };
    uint32_t sacked[1] = {5}, exp[3] = {0, 1, 2}, i;
    uct_uccl_tracker_t t;
    ack_buf_t a;
    log_t l;

    UT_EQ(uct_uccl_tracker_init(&t, &p), UCS_OK);
    for (i = 0; i < 10; ++i) {
        uct_uccl_tracker_add(&t, 1, i, 0, (void*)1);
    }
    make_ack(&a, 0, sacked, 1, 5, 0);
    memset(&l, 0, sizeof(l));
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 10, log_ack_cb, &l, NULL), UCS_OK);
    /* high_sacked = 6: holes 0..2 are >= 3 below 5, holes 3, 4 are not */
    l.n = 0; l.budget = 100;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 10, 0, 100, log_retx_cb, &l), 3);
    expect_log(&l, exp, 3);
    /* nothing sacked far enough ahead: nothing */
    sacked[0] = 2;
    uct_uccl_tracker_cleanup(&t);
    UT_EQ(uct_uccl_tracker_init(&t, &p), UCS_OK);
    for (i = 0; i < 10; ++i) {
        uct_uccl_tracker_add(&t, 1, i, 0, (void*)1);
    }
    make_ack(&a, 0, sacked, 1, 2, 0);
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 10, log_ack_cb, &l, NULL), UCS_OK);
    l.n = 0;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 10, 0, 100, log_retx_cb, &l), 0);
    uct_uccl_tracker_cleanup(&t);

    p.size = 100;
    UT_EQ(uct_uccl_tracker_init(&t, &p), UCS_ERR_INVALID_PARAM);
    p.size          = 64;
    p.dupack_thresh = 0;
    UT_EQ(uct_uccl_tracker_init(&t, &p), UCS_ERR_INVALID_PARAM);
    p.dupack_thresh = 1;
    p.num_paths     = 0;
    UT_EQ(uct_uccl_tracker_init(&t, &p), UCS_ERR_INVALID_PARAM);
    p.num_paths     = UCT_UCCL_WIRE_MAX_PATHS + 1;
    UT_EQ(uct_uccl_tracker_init(&t, &p), UCS_ERR_INVALID_PARAM);
}

/* retx cb that moves the chunk to path_to */
static unsigned path_to;

static ucs_status_t move_retx_cb(void *arg, uint32_t csn,
                                 uct_uccl_tx_entry_t *e)
{
    e->path = path_to;
    return log_retx_cb(arg, csn, e);
}

/* A tracker (reorder rules far off) with one 1-byte chunk sent on each of
 * paths[0..n-1] at time 0; their CSNs in c[] */
static void path_tracker_init(uct_uccl_tracker_t *t, uint32_t init_csn,
                              unsigned num_paths, const unsigned *paths,
                              unsigned n, uint32_t *c)
{
    uct_uccl_tracker_params_t p = {
        .size = 64, .init_csn = init_csn, .dupack_thresh = 100,
        .reorder_csns = 100, .num_paths = num_paths
    };
    unsigned i;

    UT_EQ(uct_uccl_tracker_init(t, &p), UCS_OK);
    for (i = 0; i < n; ++i) {
        c[i] = uct_uccl_tracker_add(t, 1, paths[i], 0, (void*)1);
    }
}

/* A path is one QP and delivers in order: a hole that a later chunk of its
 * own path overtook is lost at once, whatever its age; a resend is judged
 * by what follows it on its new path; a resend's arrival is no evidence. */
static void test_path_order(void)
{
    static const unsigned paths[8] = {0, 1, 0, 1, 2, 2, 3, 3};
    const uint64_t age = 1000000; /* the age rules never fire here */
    uint32_t c[8], sacked[4], exp[2];
    uct_uccl_tracker_t t;
    ack_buf_t a;
    log_t l;

    path_tracker_init(&t, UCT_UCCL_SEQ_MASK - 2, 4, paths, 8, c);
    memset(&l, 0, sizeof(l));

    /* 2 (path 0) arrives: 0 went before it on path 0 and is lost; 1 (path
     * 1) may still come */
    make_ack(&a, c[0], &c[2], 1, c[2], 0);
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 10, log_ack_cb, &l, NULL), UCS_OK);
    l.n = 0; l.budget = 100; path_to = 3;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 10, age, 100, move_retx_cb, &l), 1);
    expect_log(&l, &c[0], 1);
    UT_EQ(uct_uccl_tracker_entry(&t, c[0])->path, 3);
    /* nothing new: not resent twice */
    l.n = 0;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 20, age, 100, move_retx_cb, &l), 0);

    /* 6 and 7 (path 3) arrive: both went before 0's resend on path 3 */
    sacked[0] = c[2]; sacked[1] = c[6]; sacked[2] = c[7];
    make_ack(&a, c[0], sacked, 3, c[7], 0);
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 30, log_ack_cb, &l, NULL), UCS_OK);
    l.n = 0;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 30, age, 100, move_retx_cb, &l), 0);

    /* 0's resend (on path 3) arrives: it says nothing about path 0 or 3;
     * then 3 (path 1) arrives: 1 is lost */
    sacked[3] = c[0];
    make_ack(&a, c[0], sacked, 4, c[0], 0);
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 40, log_ack_cb, &l, NULL), UCS_OK);
    UT_EQ(t.path_acked[3], 2);
    l.n = 0;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 40, age, 100, move_retx_cb, &l), 0);
    sacked[3] = c[3];
    make_ack(&a, c[1], sacked, 4, c[3], 0);
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 50, log_ack_cb, &l, NULL), UCS_OK);
    l.n = 0; path_to = 2;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 50, age, 100, move_retx_cb, &l), 1);
    expect_log(&l, &c[1], 1);

    /* 1's resend is on path 2 after 4 and 5: their arrival proves nothing
     * about it, a later first transmission on path 2 does */
    c[0] = uct_uccl_tracker_add(&t, 1, 2, 0, (void*)1);
    sacked[0] = c[4]; sacked[1] = c[5];
    make_ack(&a, c[1], sacked, 2, c[5], 0);
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 60, log_ack_cb, &l, NULL), UCS_OK);
    l.n = 0;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 60, age, 100, move_retx_cb, &l), 0);
    make_ack(&a, c[1], &c[0], 1, c[0], 0);
    UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 70, log_ack_cb, &l, NULL), UCS_OK);
    l.n = 0;
    UT_EQ(uct_uccl_tracker_fast_retx(&t, 70, age, 100, move_retx_cb, &l), 1);
    exp[0] = c[1];
    expect_log(&l, exp, 1);
    UT_EQ(uct_uccl_tracker_entry(&t, c[1])->retries, 2);
    uct_uccl_tracker_cleanup(&t);
    printf("  path order: overtaken holes resent at once, once; resends "
           "judged on their new path; resend arrivals no evidence\n");
}

/* retx cb that moves the chunk to path_to and notes e->doubt */
static uint8_t doubt_seen[16];

static ucs_status_t doubt_retx_cb(void *arg, uint32_t csn,
                                  uct_uccl_tx_entry_t *e)
{
    log_t *l = arg;

    if (l->n < 16) {
        doubt_seen[l->n] = e->doubt;
    }
    return move_retx_cb(arg, csn, e);
}

/* An ACK of cum and sacked[0..n-1] (the last one echoed) at `now`, then
 * the fast-retransmit scan with doubt_retx_cb; returns what it resent */
static unsigned doubt_ack_retx(uct_uccl_tracker_t *t, uint32_t cum,
                               const uint32_t *sacked, unsigned n,
                               uint64_t now, log_t *l)
{
    ack_buf_t a;

    make_ack(&a, cum, sacked, n, sacked[n - 1], 0);
    UT_EQ(uct_uccl_tracker_ack(t, &a.ack, now, log_ack_cb, l, NULL), UCS_OK);
    l->n = 0;
    return uct_uccl_tracker_fast_retx(t, now, 1000000, 100, doubt_retx_cb, l);
}

/* A resend may write its target directly only when no earlier
 * transmission can still land: each was overtaken on its path. A resend
 * by age or timeout leaves the chunk in doubt for good. */
static void test_doubt(void)
{
    static const unsigned paths[4] = {0, 0, 1, 1};
    uint32_t c[4], n0, n1, sacked[4];
    uct_uccl_tracker_t t;
    log_t l;

    path_tracker_init(&t, 5, 3, paths, 4, c);
    memset(&l, 0, sizeof(l));
    l.budget = 100;

    /* 1 arrives: 0 was overtaken on path 0, its resend (to path 2) is the
     * only live copy */
    path_to = 2;
    UT_EQ(doubt_ack_retx(&t, c[0], &c[1], 1, 10, &l), 1);
    UT_EQ(l.csn[0], c[0]);
    UT_EQ(doubt_seen[0], 0);

    /* 2 and 3 (path 1) are silent: the timer resends 2 by age; its first
     * transmission may still come */
    l.n = 0; path_to = 2;
    UT_EQ(uct_uccl_tracker_expire(&t, 5000, 4995, 1, doubt_retx_cb, &l), 1);
    UT_EQ(l.csn[0], c[2]);
    UT_EQ(doubt_seen[0], 1);

    /* new first transmissions on path 2 arrive after both resends: both
     * resends were lost; 0 is still provably alone, 2 stays in doubt */
    n0 = uct_uccl_tracker_add(&t, 1, 2, 6000, (void*)1);
    n1 = uct_uccl_tracker_add(&t, 1, 1, 6000, (void*)1);
    sacked[0] = c[1]; sacked[1] = n0;
    path_to   = 0;
    UT_EQ(doubt_ack_retx(&t, c[0], sacked, 2, 6100, &l), 2);
    UT_EQ(l.csn[0], c[0]);
    UT_EQ(doubt_seen[0], 0);
    UT_EQ(l.csn[1], c[2]);
    UT_EQ(doubt_seen[1], 1);

    /* 3's first transmission is overtaken on path 1 by n1: no doubt, even
     * though its neighbour 2 has some */
    sacked[2] = n1;
    UT_EQ(doubt_ack_retx(&t, c[0], sacked, 3, 6200, &l), 1);
    UT_EQ(l.csn[0], c[3]);
    UT_EQ(doubt_seen[0], 0);
    uct_uccl_tracker_cleanup(&t);
    printf("  doubt: resends of overtaken chunks are the only live copy; "
           "one resend by age leaves the chunk in doubt\n");
}

/* retx cb that reports `busy_csn` as already queued */
static uint32_t busy_csn;

static ucs_status_t busy_retx_cb(void *arg, uint32_t csn,
                                 uct_uccl_tx_entry_t *e)
{
    return (csn == busy_csn) ? UCS_ERR_ALREADY_EXISTS :
                               log_retx_cb(arg, csn, e);
}

/* A chunk whose resend is already queued is skipped as it is (not
 * restamped, its doubt untouched) and the scan goes on */
static void test_retx_queued(void)
{
    static const unsigned paths[4] = {0, 0, 0, 0};
    uint32_t c[4], exp[3];
    uct_uccl_tx_entry_t *e;
    uct_uccl_tracker_t t;
    log_t l;

    path_tracker_init(&t, 9, 1, paths, 4, c);
    memset(&l, 0, sizeof(l));
    l.budget = 100;
    busy_csn = c[1];
    e        = uct_uccl_tracker_entry(&t, c[1]);
    UT_EQ(uct_uccl_tracker_expire(&t, 5000, 1000, 100, busy_retx_cb, &l), 3);
    exp[0] = c[0]; exp[1] = c[2]; exp[2] = c[3];
    expect_log(&l, exp, 3);
    UT_EQ(e->retries, 0);
    UT_EQ(e->send_time, 0);
    UT_EQ(e->doubt, 0);
    UT_EQ(uct_uccl_tracker_entry(&t, c[2])->retries, 1);
    uct_uccl_tracker_cleanup(&t);
    printf("  queued resend: skipped as it is, the scan goes on\n");
}

static void test_rto(void)
{
    uct_uccl_rto_params_t p = {
        .init_ns = 1000000, .min_ns = 200000, .max_ns = 8000000,
        .max_retries = 5
    };
    uint64_t now = 0, expect_rto, deadline;
    uct_uccl_rto_t r;
    unsigned i;

    UT_EQ(uct_uccl_rto_init(&r, &p), UCS_OK);
    UT_EQ(uct_uccl_rto_current(&r), 1000000);
    UT_EQ(uct_uccl_rto_srtt(&r), 250000);

    /* first sample: srtt = R, rttvar = R/2, rto = R + 4 * R/2 */
    uct_uccl_rto_sample(&r, 100000);
    UT_EQ(r.srtt_ns, 100000);
    UT_EQ(r.rttvar_ns, 50000);
    UT_EQ(r.rto_ns, 300000);
    /* second: rttvar = 3/4 * 50000 + 1/4 * |100000 - 180000| */
    uct_uccl_rto_sample(&r, 180000);
    UT_EQ(r.rttvar_ns, 37500 + 20000);
    UT_EQ(r.srtt_ns, 100000 - 12500 + 22500);
    UT_EQ(r.rto_ns, 110000 + 4 * 57500);
    /* steady RTT: rttvar decays, RTO clamps at min */
    for (i = 0; i < 200; ++i) {
        uct_uccl_rto_sample(&r, 20000);
    }
    UT_EQ(r.rto_ns, p.min_ns);
    /* huge RTT clamps at max */
    for (i = 0; i < 50; ++i) {
        uct_uccl_rto_sample(&r, 100000000);
    }
    UT_EQ(r.rto_ns, p.max_ns);
    UT_EQ(uct_uccl_rto_init(&r, &p), UCS_OK);
    uct_uccl_rto_sample(&r, 300000);     /* rto = 900 us */

    /* nothing in flight: never fires */
    UT_EQ(uct_uccl_rto_check(&r, 1ull << 40, 0), UCT_UCCL_RTO_WAIT);
    /* armed by a send; backoff doubles each expiry up to max; then give up
     * after max_retries timeouts without progress */
    uct_uccl_rto_on_send(&r, now);
    deadline = now + 900000;
    for (i = 1; i <= p.max_retries; ++i) {
        UT_EQ(uct_uccl_rto_check(&r, deadline - 1, 1), UCT_UCCL_RTO_WAIT);
        now = deadline;
        UT_EQ(uct_uccl_rto_check(&r, now, 1), UCT_UCCL_RTO_RETRANSMIT);
        UT_EQ(r.backoff, i);
        expect_rto = 900000ull << i;
        if (expect_rto > p.max_ns) {
            expect_rto = p.max_ns;
        }
        UT_EQ(uct_uccl_rto_current(&r), expect_rto);
        deadline = now + expect_rto;
    }
    UT_EQ(uct_uccl_rto_check(&r, deadline - 1, 1), UCT_UCCL_RTO_WAIT);
    UT_EQ(uct_uccl_rto_check(&r, deadline, 1), UCT_UCCL_RTO_GIVE_UP);
    UT_EQ(uct_uccl_rto_check(&r, deadline + 1, 1), UCT_UCCL_RTO_GIVE_UP);
    UT_EQ(r.timeouts, p.max_retries + 1);

    /* progress resets the backoff and restarts the timer */
    uct_uccl_rto_on_ack(&r, now, 3);
    UT_EQ(r.backoff, 0);
    UT_EQ(r.deadline, now + 900000);
    UT_EQ(uct_uccl_rto_check(&r, now + 900000, 3), UCT_UCCL_RTO_RETRANSMIT);
    uct_uccl_rto_on_ack(&r, now, 0);
    UT_EQ(r.deadline, 0);

    p.max_retries = 0;
    UT_EQ(uct_uccl_rto_init(&r, &p), UCS_ERR_INVALID_PARAM);
    printf("  rto: estimator formula, clamps, backoff 1x..%ux capped, "
           "give-up after %u, reset on progress\n", 1u << 5, 5);
}

/* ---------------- simulated lossy multipath link ---------------- */

#define SIM_PATHS 8

typedef struct {
    uint64_t at;       /* arrival time */
    uint32_t csn;
    uint8_t  is_ack;
    ack_buf_t ack;
} sim_pkt_t;

typedef struct {
    sim_pkt_t        *q;
    unsigned         nq, qmax;
    uint64_t         now;
    double           loss;
    int              dead;         /* drop everything */
    uct_uccl_sack_t  rx;
    uct_uccl_tracker_t tx;
    uct_uccl_rto_t   rto;
    uint8_t          *got;
    uint64_t         path_last[SIM_PATHS]; /* a path delivers in order */
    uint32_t         init;
    uint64_t         lost, retx, acked, delivered, acks_lost;
} sim_t;

static uint64_t sim_delay(unsigned path)
{
    /* paths 5..40 us apart, plus jitter */
    return 5000 + path * 5000 + ut_rand_below(3000);
}

static int sim_drop(sim_t *s)
{
    return s->dead || ((double)(ut_rand() >> 11) / (1ull << 53) < s->loss);
}

static void sim_push(sim_t *s, const sim_pkt_t *p)
{
    if (s->nq == s->qmax) {
        UT_FAIL("sim queue overflow (%u)", s->qmax);
    }
    s->q[s->nq++] = *p;
}

static void sim_send_chunk(sim_t *s, uint32_t csn, unsigned path)
{
    sim_pkt_t p = {.at = s->now + sim_delay(path), .csn = csn};

    if (p.at <= s->path_last[path]) {
        p.at = s->path_last[path] + 1;
    }
    s->path_last[path] = p.at;
    if (sim_drop(s)) {
        ++s->lost;
        return;
    }
    sim_push(s, &p);
}

static ucs_status_t sim_retx_cb(void *arg, uint32_t csn,
                                uct_uccl_tx_entry_t *e)
{
    sim_t *s = arg;

    ++s->retx;
    e->path = (e->path + 1) % SIM_PATHS;   /* try another path */
    sim_send_chunk(s, csn, e->path);
    return UCS_OK;
}

static void sim_ack_cb(void *arg, uint32_t csn, uct_uccl_tx_entry_t *e)
{
    sim_t *s = arg;

    if (!s->got[uct_uccl_seq_dist(csn, s->init)]) {
        UT_FAIL("csn %u acked before it arrived", csn);
    }
    ++s->acked;
}

/* returns 0 when all chunks are acked, -1 when the RTO gave up */
static int sim_run(sim_t *s, uint32_t total, uint64_t die_at,
                   uint64_t *end_time)
{
    uint32_t sent = 0, csn;
    uct_uccl_ack_info_t info;
    uint64_t next_timer = 0;
    unsigned i, best;
    sim_pkt_t p;

    while (s->acked < total) {
        if (s->now >= die_at) {
            s->dead = 1;
        }
        /* earliest pending arrival */
        for (best = 0, i = 1; i < s->nq; ++i) {
            if (s->q[i].at < s->q[best].at) {
                best = i;
            }
        }
        /* send while the window allows, 1 chunk per 200 ns, unless an
         * arrival or the timer is due first */
        if ((sent < total) && !uct_uccl_tracker_full(&s->tx) &&
            ((s->nq == 0) || (s->q[best].at > s->now)) &&
            (s->now < next_timer)) {
            unsigned path = ut_rand_below(SIM_PATHS);

            csn = uct_uccl_tracker_add(&s->tx, 4096, path, s->now, (void*)1);
            uct_uccl_rto_on_send(&s->rto, s->now);
            sim_send_chunk(s, csn, path);
            ++sent;
            s->now += 200;
            continue;
        }
        /* timer every 20 us */
        if (s->now >= next_timer) {
            next_timer = s->now + 20000;
            switch (uct_uccl_rto_check(&s->rto, s->now,
                                       uct_uccl_tracker_outstanding(&s->tx))) {
            case UCT_UCCL_RTO_GIVE_UP:
                *end_time = s->now;
                return -1;
            case UCT_UCCL_RTO_RETRANSMIT:
                uct_uccl_tracker_expire(&s->tx, s->now, s->rto.rto_ns, 1024,
                                        sim_retx_cb, s);
                break;
            default:
                break;
            }
            continue;
        }
        if ((s->nq == 0) || (s->q[best].at > next_timer)) {
            /* cannot send, nothing arrives before the timer */
            s->now = next_timer;
            continue;
        }
        p = s->q[best];
        s->q[best] = s->q[--s->nq];
        if (p.at > s->now) {
            s->now = p.at;
        }

        if (!p.is_ack) {
            /* receiver: record, ACK every arrival */
            switch (uct_uccl_sack_record(&s->rx, p.csn)) {
            case UCT_UCCL_SACK_IN_ORDER:
            case UCT_UCCL_SACK_OUT_OF_ORDER:
                s->got[uct_uccl_seq_dist(p.csn, s->init)] = 1;
                ++s->delivered;
                break;
            case UCT_UCCL_SACK_OUT_OF_WINDOW:
                UT_FAIL("csn %u out of window at the receiver", p.csn);
            default:
                break;
            }
            if (sim_drop(s)) {
                ++s->acks_lost;
                continue;
            }
            memset(&p.ack.ack, 0, sizeof(p.ack.ack));
            uct_uccl_sack_ack_pack(&s->rx, &p.ack.ack, MAX_WORDS);
            p.ack.ack.echo_csn = p.csn;
            /* ACKs share one control QP: one path, little jitter */
            p.at     = s->now + 8000 + ut_rand_below(2000);
            p.is_ack = 1;
            sim_push(s, &p);
            continue;
        }

        /* sender: apply the ACK */
        UT_EQ(uct_uccl_tracker_ack(&s->tx, &p.ack.ack, s->now, sim_ack_cb, s,
                                   &info), UCS_OK);
        if (info.rtt_ns) {
            uct_uccl_rto_sample(&s->rto, info.rtt_ns);
        }
        if (info.una_advanced) {
            uct_uccl_rto_on_ack(&s->rto, s->now,
                                uct_uccl_tracker_outstanding(&s->tx));
        }
        uct_uccl_tracker_fast_retx(&s->tx, s->now,
                                   uct_uccl_rto_retx_age(&s->rto), 1024,
                                   sim_retx_cb, s);
    }
    *end_time = s->now;
    return 0;
}

static void sim_init(sim_t *s, double loss, uint32_t window)
{
    uct_uccl_tracker_params_t tp = {
        .size = window, .init_csn = UCT_UCCL_SEQ_MASK - 1000,
        .dupack_thresh = 16, .reorder_csns = 32, .num_paths = SIM_PATHS
    };
    uct_uccl_rto_params_t rp = {
        .init_ns = 1000000, .min_ns = 200000, .max_ns = 50000000,
        .max_retries = 8
    };

    memset(s, 0, sizeof(*s));
    s->qmax = 64 * window;
    s->q    = malloc(sizeof(*s->q) * s->qmax);
    s->got  = calloc(1 << 20, 1);
    s->loss = loss;
    s->init = tp.init_csn;
    UT_EQ(uct_uccl_sack_init(&s->rx, window, tp.init_csn), UCS_OK);
    UT_EQ(uct_uccl_tracker_init(&s->tx, &tp), UCS_OK);
    UT_EQ(uct_uccl_rto_init(&s->rto, &rp), UCS_OK);
}

static void sim_cleanup(sim_t *s)
{
    uct_uccl_sack_cleanup(&s->rx);
    uct_uccl_tracker_cleanup(&s->tx);
    free(s->q);
    free(s->got);
}

static void test_sim(double loss)
{
    const uint32_t total = 30000;
    uint64_t end;
    sim_t s;
    uint32_t i;

    sim_init(&s, loss, 512);
    UT_EQ(sim_run(&s, total, UINT64_MAX, &end), 0);
    for (i = 0; i < total; ++i) {
        if (!s.got[i]) {
            UT_FAIL("chunk %u never arrived", i);
        }
    }
    UT_EQ(s.delivered, total);
    UT_EQ(s.acked, total);
    /* every lost transmission needs a resend; selective means resends are
     * not much more than the losses (spurious ones from path reordering
     * bounded at 0.5% of the chunks) */
    printf("  sim loss %.3f: %u chunks in %.1f ms, %" PRIu64 " lost, %"
           PRIu64 " resent, %" PRIu64 " ACKs lost, srtt %" PRIu64 " ns\n",
           loss, total, end / 1e6, s.lost, s.retx, s.acks_lost,
           s.rto.srtt_ns);
    UT_TRUE(s.retx >= s.lost);
    UT_TRUE(s.retx <= s.lost + s.lost / 4 + total / 200);
    sim_cleanup(&s);
}

/* the peer vanishes mid-transfer: the conn must fail, and in bounded time
 * (sum of the backed-off timeouts), not hang */
static void test_sim_dead_peer(void)
{
    uint64_t end, bound = 0;
    unsigned i;
    sim_t s;

    sim_init(&s, 0.0, 256);
    UT_EQ(sim_run(&s, 100000, 2000000, &end), -1);
    for (i = 0; i <= s.rto.max_retries; ++i) {
        bound += s.rto.max_ns < (s.rto.rto_ns << i) ? s.rto.max_ns :
                                                      (s.rto.rto_ns << i);
    }
    printf("  dead peer at 2.0 ms: gave up at %.1f ms after %u timeouts "
           "(bound %.1f ms)\n", end / 1e6, (unsigned)s.rto.timeouts,
           (2000000 + bound + 40000) / 1e6);
    UT_EQ(s.rto.timeouts, s.rto.max_retries + 1);
    UT_TRUE(end <= 2000000 + bound + 40000);
    sim_cleanup(&s);
}

static void purge_none_cb(void *arg, uint32_t csn, uct_uccl_tx_entry_t *e)
{
    UT_FAIL("a tracker never set up purged csn %u", csn);
}

/* a conn that failed before its tracker was set up is destroyed too */
static void test_purge_unset(void)
{
    uct_uccl_tracker_t t;

    memset(&t, 0, sizeof(t));
    uct_uccl_tracker_purge(&t, purge_none_cb, NULL);
    uct_uccl_tracker_cleanup(&t);
    printf("  purge: a tracker never set up holds nothing\n");
}

int main(int argc, char **argv)
{
    ut_init(argc, argv, "test_retx");
    test_purge_unset();
    test_holes();
    test_reorder_distance();
    test_path_order();
    test_doubt();
    test_retx_queued();
    test_rto();
    test_sim(0.0);
    test_sim(0.001);
    test_sim(0.01);
    test_sim(0.05);
    test_sim_dead_peer();
    return ut_done("test_retx");
}

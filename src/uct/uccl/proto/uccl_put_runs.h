/*
 * The PUT targets a UC sender wrote lately, for the resend's obsolete
 * check: a resent chunk must not land after newer data that a later PUT
 * wrote to the same bytes (UC's retransmission reorders). The chunks are
 * kept as runs: a run is PUT chunks sent one after another (no other PUT
 * between them, so in CSN order) to consecutive bytes under one rkey, and
 * it remembers the CSN of its first chunk. A lost chunk is obsolete when
 * one run that began after it covers all its bytes: every chunk of that
 * run is newer. A chunk joins the run of the PUT sent before it with a
 * compare or two; the check, done only for a resend, walks the runs from
 * the newest back to the first that began before the chunk. The last
 * UCT_UCCL_PUT_RUNS runs are kept: one further back is forgotten, and a
 * resend it made obsolete goes with its payload, as before any PUT.
 */
#ifndef UCT_UCCL_PUT_RUNS_H_
#define UCT_UCCL_PUT_RUNS_H_

#include "uccl_seq.h"

#include <ucs/sys/compiler_def.h>
#include <stdint.h>

#define UCT_UCCL_PUT_RUNS       64   /* runs kept, a power of two */
#define UCT_UCCL_PUT_RUN_VALID  (1ull << 32) /* in a run's key: it was used */

typedef struct uct_uccl_put_run {
    uint64_t                raddr;  /* its first byte */
    uint64_t                end;    /* one past its last byte */
    uint64_t                key;    /* rkey | UCT_UCCL_PUT_RUN_VALID */
    uint32_t                csn;    /* of its first chunk */
} uct_uccl_put_run_t;

typedef struct uct_uccl_put_runs {
    uct_uccl_put_run_t      run[UCT_UCCL_PUT_RUNS]; /* zeroed: none used */
    unsigned                cur;    /* the newest run */
} uct_uccl_put_runs_t;

static inline void uct_uccl_put_runs_start(uct_uccl_put_runs_t *r,
                                           uint64_t raddr, uint32_t rkey,
                                           uint32_t length, uint32_t csn)
{
    uct_uccl_put_run_t *run;

    r->cur     = (r->cur + 1) & (UCT_UCCL_PUT_RUNS - 1);
    run        = &r->run[r->cur];
    run->raddr = raddr;
    run->end   = raddr + length;
    run->key   = rkey | UCT_UCCL_PUT_RUN_VALID;
    run->csn   = csn;
}

/* A PUT chunk whose bytes come right after the newest run's, under its
 * rkey (the next chunk of the op sent last), goes out: 0 if it does not
 * follow the run after all (uct_uccl_put_runs_sent then) */
static UCS_F_ALWAYS_INLINE int
uct_uccl_put_runs_extend(uct_uccl_put_runs_t *r, uint64_t raddr,
                         uint32_t length)
{
    uct_uccl_put_run_t *run = &r->run[r->cur];

    if (ucs_unlikely(raddr != run->end)) {
        return 0;
    }
    run->end = raddr + length;
    return 1;
}

/* A PUT chunk (its first transmission) goes out with CSN csn */
static UCS_F_ALWAYS_INLINE void
uct_uccl_put_runs_sent(uct_uccl_put_runs_t *r, uint64_t raddr, uint32_t rkey,
                       uint32_t length, uint32_t csn)
{
    uct_uccl_put_run_t *run = &r->run[r->cur];

    if (ucs_likely((raddr == run->end) &&
                   ((rkey | UCT_UCCL_PUT_RUN_VALID) == run->key))) {
        run->end = raddr + length;
        return;
    }
    uct_uccl_put_runs_start(r, raddr, rkey, length, csn);
}

/* Did a run that began after the chunk csn write all of [raddr, +length)
 * under rkey? una is the sender's oldest unacked CSN, at or before csn, and
 * nxt its next: a run that began outside (csn, nxt) is none of the chunk's
 * successors (the CSNs wrap). */
static inline int uct_uccl_put_runs_cover(const uct_uccl_put_runs_t *r,
                                          uint64_t raddr, uint32_t rkey,
                                          uint32_t length, uint32_t csn,
                                          uint32_t una, uint32_t nxt)
{
    uint32_t after = uct_uccl_seq_dist(csn, una);
    uint32_t out   = uct_uccl_seq_dist(nxt, una);
    uint64_t key   = rkey | UCT_UCCL_PUT_RUN_VALID;
    const uct_uccl_put_run_t *run;
    uint32_t d;
    unsigned i;

    for (i = 0; i < UCT_UCCL_PUT_RUNS; ++i) {
        run = &r->run[(r->cur - i) & (UCT_UCCL_PUT_RUNS - 1)];
        d   = uct_uccl_seq_dist(run->csn, una);
        if ((run->key == 0) || (d <= after) || (d >= out)) {
            return 0; /* this one and all older began before the chunk */
        }
        if ((run->key == key) && (run->raddr <= raddr) &&
            (raddr <= run->end) && (length <= run->end - raddr)) {
            return 1;
        }
    }
    return 0;
}

#endif

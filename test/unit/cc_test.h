/*
 * Helpers for the congestion control unit tests: parameters of a typical
 * conn and one-line events.
 */
#ifndef UCCL_CC_TEST_H_
#define UCCL_CC_TEST_H_

#include "unit_test.h"

#include <uct/uccl/proto/cc/uccl_cc.h>
#include <uct/uccl/proto/cc/uccl_cc_def.h>

#include <math.h>
#include <string.h>

#define CC_MSS   4096u
#define CC_CHUNK 65536u
#define CC_US    1000ull
#define CC_T0    1000000000ull /* tests start 1 s into the clock */

/* a conn of 64 KiB chunks, 4 KiB packets, 10 us unloaded RTT, 10 Gbit/s */
static inline void cc_params(uct_uccl_cc_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->chunk_size  = CC_CHUNK;
    p->mtu         = CC_MSS;
    p->num_paths   = 8;
    p->base_rtt_ns = 10 * CC_US;
    p->link_bps    = 10000000000ull;
}

static inline void cc_ack(uct_uccl_cc_t *cc, uint64_t bytes, uint64_t rtt,
                          uint64_t remote, uint64_t now)
{
    uct_uccl_cc_ack_t ack = {
        .acked_bytes     = bytes,
        .rtt_ns          = rtt,
        .remote_delay_ns = remote,
        .now             = now
    };

    uct_uccl_cc_on_ack_ex(cc, &ack);
}

static inline uct_uccl_cc_stats_t cc_stats(const uct_uccl_cc_t *cc)
{
    uct_uccl_cc_stats_t s;

    uct_uccl_cc_query(cc, &s);
    return s;
}

/* |a - b| <= tol * |b| */
#define UT_NEAR(_a, _b, _tol) \
    do { \
        double _x = (double)(_a), _y = (double)(_b); \
        ++ut_checks; \
        if (!(fabs(_x - _y) <= (_tol) * fabs(_y))) { \
            UT_FAIL("%s ~ %s: expected %.6g (+-%g), got %.6g", #_a, #_b, \
                    _y, (double)(_tol), _x); \
        } \
    } while (0)

#endif

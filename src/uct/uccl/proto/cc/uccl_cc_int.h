/*
 * Helpers shared by the congestion control algorithms (not for the UCT
 * layer): private state, defaults, clamps, a square root without libm,
 * the smoothed RTT and the pacing gate.
 */
#ifndef UCT_UCCL_CC_INT_H_
#define UCT_UCCL_CC_INT_H_

#include "uccl_cc.h"
#include "uccl_cc_def.h"

#include <string.h>

/* the algorithm's state in cc->priv */
#define UCT_UCCL_CC_PRIV(_cc, _type) \
    ({ \
        _Static_assert(sizeof(_type) <= sizeof(((uct_uccl_cc_t*)0)->priv), \
                       #_type " does not fit in uct_uccl_cc_t::priv"); \
        (_type*)(_cc)->priv; \
    })

#define UCT_UCCL_CC_CPRIV(_cc, _type) \
    ((const _type*)(const void*)(_cc)->priv)

static inline uint64_t uct_uccl_cc_def_u64(uint64_t value, uint64_t def)
{
    return (value != 0) ? value : def;
}

/* 0: the default; negative values pass (they mean "off" where allowed) */
static inline double uct_uccl_cc_def_dbl(double value, double def)
{
    return (value != 0) ? value : def;
}

static inline double uct_uccl_cc_clamp(double v, double lo, double hi)
{
    return (v < lo) ? lo : ((v > hi) ? hi : v);
}

static inline uint64_t uct_uccl_cc_min_u64(uint64_t a, uint64_t b)
{
    return (a < b) ? a : b;
}

/* sqrt(x) for x >= 0 by Newton's method from an exponent-halving guess:
 * the protocol core links without libm */
static inline double uct_uccl_cc_sqrt(double x)
{
    union {
        double   d;
        uint64_t u;
    } g;
    int i;

    if (!(x > 0)) {
        return 0;
    }
    g.d = x;
    g.u = (g.u >> 1) + (UINT64_C(1023) << 51); /* halves the exponent */
    for (i = 0; i < 6; ++i) {
        g.d = 0.5 * (g.d + x / g.d);
    }
    return g.d;
}

/* the packet size the algorithms count in */
static inline double uct_uccl_cc_mss(const uct_uccl_cc_params_t *params)
{
    return (params->mss != 0) ? params->mss :
           ((params->mtu != 0) ? params->mtu : UCT_UCCL_CC_DEF_MSS);
}

/* the size above which a send is one chunk: pacing spaces these */
static inline double uct_uccl_cc_chunk(const uct_uccl_cc_params_t *params)
{
    return (params->chunk_size != 0) ? params->chunk_size :
                                       uct_uccl_cc_mss(params);
}

/* the initial window the caller asked for, or def */
static inline double
uct_uccl_cc_init_window(const uct_uccl_cc_params_t *params, double def)
{
    uint64_t w = params->window_bytes;

    if (w == 0) {
        w = (uint64_t)params->window_chunks * params->chunk_size;
    }
    return (w != 0) ? (double)w : def;
}

/* smoothed RTT: the first sample sets it */
static inline void uct_uccl_cc_srtt_update(double *srtt, int *have,
                                           double sample)
{
    if (!*have) {
        *srtt = sample;
        *have = 1;
    } else {
        *srtt += UCT_UCCL_CC_SRTT_GAIN * (sample - *srtt);
    }
}

/* No send for gap_ns after the one just made. A sender that comes late by
 * at most UCT_UCCL_CC_PACE_CATCHUP gaps keeps its schedule (a busy CPU
 * costs no rate, and at most 1 + CATCHUP sends go back to back); one
 * later than that, or idle, starts again from now (no burst). */
static inline void uct_uccl_cc_pace(uct_uccl_cc_t *cc, double gap_ns,
                                    uint64_t now)
{
    uint64_t gap   = (uint64_t)uct_uccl_cc_clamp(gap_ns, 0,
                                                 UCT_UCCL_CC_MAX_DELAY_NS);
    uint64_t base  = cc->next_send_ns;

    if ((base < now) && (now - base > gap * UCT_UCCL_CC_PACE_CATCHUP)) {
        base = now;
    }
    cc->next_send_ns = base + gap;
}

/* cwnd in bytes as the hot path reads it: never 0 */
static inline uint64_t uct_uccl_cc_bytes(double w)
{
    return (w >= 1) ? (uint64_t)w : 1;
}

#endif

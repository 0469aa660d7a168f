/*
 * A device's clock mapped onto the transport's: see uccl_clock.h.
 */
#include "uccl_clock.h"

#include <string.h>

/* ms in ns: a rate in kHz is ticks per ms */
#define UCT_UCCL_CLOCK_NS_PER_MS     1000000ull

ucs_status_t uct_uccl_clock_init(uct_uccl_clock_t *c, uint64_t khz,
                                 uint64_t mask)
{
    memset(c, 0, sizeof(*c));
    if ((khz == 0) || (mask == 0) || ((mask & (mask + 1)) != 0)) {
        return UCS_ERR_INVALID_PARAM;
    }
    c->mask    = mask;
    c->nominal = (UCT_UCCL_CLOCK_NS_PER_MS << UCT_UCCL_CLOCK_SHIFT) / khz;
    if (c->nominal == 0) {
        return UCS_ERR_INVALID_PARAM; /* faster than 2^32 ticks per ns */
    }
    c->mult = c->nominal;
    return UCS_OK;
}

/* Measure the rate from this sample again (the first, or after a step) */
static void uct_uccl_clock_restart(uct_uccl_clock_t *c, uint64_t tick,
                                   uint64_t ns)
{
    c->base_tick = c->next_tick = c->ref_tick = tick;
    c->base_ns   = c->next_ns   = c->ref_ns   = ns;
}

/* The slope between the base and (tick, ns), if they are far enough apart
 * and it is within the tolerance of the nominal one */
static void uct_uccl_clock_rate(uct_uccl_clock_t *c, uint64_t tick,
                                uint64_t ns)
{
    uint64_t elapsed = ns - c->base_ns;
    uint64_t tol     = c->nominal >> UCT_UCCL_CLOCK_RATE_TOL_SHIFT;
    uint64_t ticks, m;

    if (elapsed < UCT_UCCL_CLOCK_RATE_MIN_NS) {
        return;
    }
    ticks = (tick - c->base_tick) & c->mask;
    if (ticks == 0) {
        c->mult = c->nominal;
        return;
    }
    m       = ((unsigned __int128)elapsed << UCT_UCCL_CLOCK_SHIFT) / ticks;
    c->mult = ((m + tol >= c->nominal) && (m <= c->nominal + tol)) ?
              m : c->nominal;
}

int uct_uccl_clock_sample(uct_uccl_clock_t *c, uint64_t tick,
                          uint64_t before_ns, uint64_t after_ns)
{
    uint64_t ns, predicted, err, allowed;

    if ((after_ns < before_ns) ||
        (c->synced && (after_ns - before_ns > UCT_UCCL_CLOCK_SAMPLE_MAX_NS))) {
        ++c->rejected;
        return 0;
    }
    ns = before_ns + (after_ns - before_ns) / 2;
    ++c->samples;
    if (!c->synced || (ns < c->ref_ns)) {
        c->synced = 1;
        uct_uccl_clock_restart(c, tick, ns);
        return 1;
    }

    /* the sample may be off by the rate error since the latest one; more
     * than that is a step of one of the clocks (a wall clock set, say) */
    predicted = uct_uccl_clock_map(c, tick);
    err       = (predicted > ns) ? predicted - ns : ns - predicted;
    allowed   = UCT_UCCL_CLOCK_STEP_NS +
                ((ns - c->ref_ns) >> UCT_UCCL_CLOCK_RATE_TOL_SHIFT);
    if (err > allowed) {
        ++c->steps;
        uct_uccl_clock_restart(c, tick, ns);
        return 1;
    }

    uct_uccl_clock_rate(c, tick, ns);
    if (ns - c->next_ns >= UCT_UCCL_CLOCK_RATE_MIN_NS) {
        c->base_tick = c->next_tick;
        c->base_ns   = c->next_ns;
        c->next_tick = tick;
        c->next_ns   = ns;
    }
    c->ref_tick = tick;
    c->ref_ns   = ns;
    return 1;
}

/*
 * A device's clock mapped onto the transport's (uct_uccl_now_ns): the
 * completion timestamps of a NIC become times comparable with the stamps
 * the transport takes itself (a chunk's send time, a poll's time).
 *
 * The device counts ticks at a nominal rate (hca_core_clock in kHz, or
 * 1 GHz for a clock in nanoseconds) in the bits of `mask`; its epoch is not
 * ours, and neither clock runs at exactly its nominal rate (an oscillator
 * is off by tens of ppm; our clock is the TSC at a frequency estimated at
 * start-up). A sample is one device reading taken between two readings of
 * ours. The mapping is the line through the latest sample, with the slope
 * measured between two samples RATE_MIN_NS to twice that apart (the
 * nominal slope until then, or when the measured one is further from it
 * than RATE_TOL): so a tick maps with an error of about the rate error
 * times its distance from the latest sample, and samples are taken again
 * once the latest is SYNC_NS old.
 *
 * Usage by the UCT layer:
 *   uct_uccl_clock_init()    the device's rate and timestamp mask
 *   uct_uccl_clock_stale()   time for another sample?
 *   uct_uccl_clock_sample()  a device reading between two of ours
 *   uct_uccl_clock_map()     a device timestamp in our nanoseconds
 */
#ifndef UCT_UCCL_CLOCK_H_
#define UCT_UCCL_CLOCK_H_

#include <ucs/type/status.h>
#include <stdint.h>

/* ns per tick in fixed point: 2^-32 ns resolution */
#define UCT_UCCL_CLOCK_SHIFT         32
/* a sample whose two readings of ours are further apart than this was
 * interrupted (preempted, say): its midpoint is no better than a guess */
#define UCT_UCCL_CLOCK_SAMPLE_MAX_NS 20000ull
/* samples at least this far apart measure the rate: their readings' error
 * (a few microseconds) is then below 1e-4 of the interval */
#define UCT_UCCL_CLOCK_RATE_MIN_NS   100000000ull
/* a measured rate further than 1/2^8 (0.4%) from the nominal one is not
 * trusted: the clocks are not what they say, or one of them stepped */
#define UCT_UCCL_CLOCK_RATE_TOL_SHIFT 8
/* a sample further than this from where the mapping puts it (beyond what
 * the rate tolerance explains) means a clock stepped: the rate is measured
 * again from it */
#define UCT_UCCL_CLOCK_STEP_NS       100000ull
/* sample again once the latest sample is this old: a rate error of 1e-4
 * (before the rate is measured) then costs at most 0.1 us */
#define UCT_UCCL_CLOCK_SYNC_NS       1000000ull

typedef struct uct_uccl_clock {
    uint64_t mask;         /* the device clock's bits (2^k - 1) */
    uint64_t nominal;      /* ns per tick << SHIFT, as the device says */
    uint64_t mult;         /* ns per tick << SHIFT, in use */
    uint64_t ref_tick;     /* the latest sample */
    uint64_t ref_ns;
    uint64_t base_tick;    /* the sample the rate is measured from */
    uint64_t base_ns;
    uint64_t next_tick;    /* the next base */
    uint64_t next_ns;
    uint64_t samples;      /* taken */
    uint64_t rejected;     /* interrupted ones dropped */
    uint64_t steps;        /* clock steps seen */
    int      synced;       /* a sample was taken */
} uct_uccl_clock_t;


/* A clock of `khz` kHz (1000000 for nanoseconds) and `mask` bits;
 * UCS_ERR_INVALID_PARAM if the rate is 0 or the mask is not 2^k - 1 */
ucs_status_t uct_uccl_clock_init(uct_uccl_clock_t *c, uint64_t khz,
                                 uint64_t mask);

/* The device read `tick` between our readings before_ns and after_ns;
 * returns 1 if the sample was taken, 0 if it was dropped (interrupted) */
int uct_uccl_clock_sample(uct_uccl_clock_t *c, uint64_t tick,
                          uint64_t before_ns, uint64_t after_ns);

static inline int uct_uccl_clock_stale(const uct_uccl_clock_t *c,
                                       uint64_t now_ns)
{
    return !c->synced || (now_ns - c->ref_ns >= UCT_UCCL_CLOCK_SYNC_NS);
}

/* `tick` in our nanoseconds; ticks up to half the mask before the latest
 * sample map to the past (0 at the earliest), the rest to the future */
static inline uint64_t uct_uccl_clock_map(const uct_uccl_clock_t *c,
                                          uint64_t tick)
{
    uint64_t d = (tick - c->ref_tick) & c->mask;
    uint64_t back;

    if (d <= (c->mask >> 1)) {
        return c->ref_ns + (uint64_t)(((unsigned __int128)d * c->mult) >>
                                      UCT_UCCL_CLOCK_SHIFT);
    }
    d    = (c->ref_tick - tick) & c->mask;
    back = ((unsigned __int128)d * c->mult) >> UCT_UCCL_CLOCK_SHIFT;
    return (back < c->ref_ns) ? c->ref_ns - back : 0;
}

#endif

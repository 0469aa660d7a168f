/*
 * The device clock's mapping onto ours (proto/uccl_clock.h): a tick maps
 * through the latest sample at the nominal rate until the rate is
 * measured, then at the measured one; the timestamp mask wraps; a step of
 * either clock restarts the rate measurement; an interrupted sample is
 * dropped; a rate beyond the tolerance is not believed. A seeded random
 * device (offset, rate error, sample spacing and spread) keeps the mapping
 * within the error its rate and samples explain.
 */
#include "unit_test.h"

#include <uct/uccl/proto/uccl_clock.h>

#include <math.h>

#define GHZ_KHZ   1000000ull     /* a clock in ns */
#define CX_KHZ    156250ull      /* 6.4 ns per tick */
#define MS        1000000ull

/* A simulated device: tick = offset + (our ns) * ticks_per_ns */
typedef struct {
    double   ticks_per_ns;
    uint64_t offset;
    uint64_t mask;
} dev_t_;

static uint64_t dev_tick(const dev_t_ *d, uint64_t ns)
{
    return (d->offset + (uint64_t)((double)ns * d->ticks_per_ns)) & d->mask;
}

/* |mapped - truth| for the device's reading at our ns */
static uint64_t map_err(const uct_uccl_clock_t *c, const dev_t_ *d,
                        uint64_t ns)
{
    uint64_t m = uct_uccl_clock_map(c, dev_tick(d, ns));

    return (m > ns) ? m - ns : ns - m;
}

static void test_init(void)
{
    uct_uccl_clock_t c;

    UT_EQ(uct_uccl_clock_init(&c, 0, UINT64_MAX), UCS_ERR_INVALID_PARAM);
    UT_EQ(uct_uccl_clock_init(&c, GHZ_KHZ, 0), UCS_ERR_INVALID_PARAM);
    UT_EQ(uct_uccl_clock_init(&c, GHZ_KHZ, 0x1234), UCS_ERR_INVALID_PARAM);
    UT_EQ(uct_uccl_clock_init(&c, GHZ_KHZ, (1ull << 48) - 1), UCS_OK);
    UT_EQ(uct_uccl_clock_init(&c, GHZ_KHZ, UINT64_MAX), UCS_OK);
    UT_EQ(c.mult, 1ull << UCT_UCCL_CLOCK_SHIFT);
    UT_TRUE(uct_uccl_clock_stale(&c, 0));
    UT_EQ(uct_uccl_clock_init(&c, CX_KHZ, UINT64_MAX), UCS_OK);
    /* 6.4 ns per tick */
    UT_EQ(c.nominal, (uint64_t)(6.4 * (1ull << UCT_UCCL_CLOCK_SHIFT)));
    printf("  bad rates and masks refused; 156250 kHz is 6.4 ns/tick\n");
}

static void test_nominal(void)
{
    uct_uccl_clock_t c;
    uint64_t t0;

    UT_EQ(uct_uccl_clock_init(&c, GHZ_KHZ, UINT64_MAX), UCS_OK);
    /* the first sample is taken however wide; its midpoint is ours */
    UT_EQ(uct_uccl_clock_sample(&c, 5000, 1000, 1000 + 3 * MS), 1);
    t0 = 1000 + 3 * MS / 2;
    UT_EQ(c.ref_ns, t0);
    UT_EQ(uct_uccl_clock_map(&c, 5123), t0 + 123);
    UT_EQ(uct_uccl_clock_map(&c, 4900), t0 - 100);
    /* before our clock's start: the earliest time */
    UT_EQ(uct_uccl_clock_map(&c, 5000 - 2 * t0), 0);
    UT_TRUE(!uct_uccl_clock_stale(&c, t0 + UCT_UCCL_CLOCK_SYNC_NS - 1));
    UT_TRUE(uct_uccl_clock_stale(&c, t0 + UCT_UCCL_CLOCK_SYNC_NS));

    /* later samples must be tight */
    UT_EQ(uct_uccl_clock_sample(&c, 5000 + 2 * MS, t0 + 2 * MS,
                                t0 + 2 * MS + UCT_UCCL_CLOCK_SAMPLE_MAX_NS +
                                1), 0);
    UT_EQ(c.rejected, 1);
    UT_EQ(uct_uccl_clock_sample(&c, 5000 + 2 * MS, t0 + 2 * MS - 500,
                                t0 + 2 * MS + 500), 1);
    UT_EQ(c.ref_ns, t0 + 2 * MS);
    UT_EQ(uct_uccl_clock_map(&c, 5000 + 2 * MS + 10), t0 + 2 * MS + 10);
    UT_EQ(c.steps, 0);
    printf("  mapping through the latest sample; a wide sample dropped\n");
}

static void test_wrap(void)
{
    dev_t_ d = { .ticks_per_ns = 1.0 / 6.4, .mask = (1ull << 48) - 1 };
    uct_uccl_clock_t c;
    uint64_t ns, prev = 0, m;

    /* 48-bit clock about to wrap */
    d.offset = (1ull << 48) - 1000 - (uint64_t)(10 * MS / 6.4);
    UT_EQ(uct_uccl_clock_init(&c, CX_KHZ, d.mask), UCS_OK);
    UT_EQ(uct_uccl_clock_sample(&c, dev_tick(&d, 10 * MS), 10 * MS,
                                10 * MS), 1);
    for (ns = 10 * MS - 5000; ns < 10 * MS + 50000; ns += 64) {
        m = uct_uccl_clock_map(&c, dev_tick(&d, ns));
        UT_TRUE(m >= prev);
        UT_TRUE(map_err(&c, &d, ns) <= 7);
        prev = m;
    }
    UT_TRUE(dev_tick(&d, 10 * MS + 50000) < dev_tick(&d, 10 * MS));
    printf("  a 48-bit clock maps across its wrap, monotonic\n");
}

/* samples every ms of a device whose rate is off by ppm; the worst error
 * of a tick 1 ms after the latest sample, before and after the rate was
 * measured */
static void run_rate(double ppm, uint64_t *err_early, uint64_t *err_late,
                     uct_uccl_clock_t *c)
{
    dev_t_ d = { .ticks_per_ns = (1.0 + ppm * 1e-6) / 6.4,
                 .offset = 123456789, .mask = UINT64_MAX };
    uint64_t ns, e;

    *err_early = *err_late = 0;
    UT_EQ(uct_uccl_clock_init(c, CX_KHZ, d.mask), UCS_OK);
    for (ns = MS; ns < 1000 * MS; ns += MS) {
        /* our two readings 2 us apart around the device's */
        UT_EQ(uct_uccl_clock_sample(c, dev_tick(&d, ns), ns - 1000,
                                    ns + 1000), 1);
        e = map_err(c, &d, ns + MS);
        /* measured from the first sample once RATE_MIN_NS after it */
        if (ns < MS + UCT_UCCL_CLOCK_RATE_MIN_NS) {
            *err_early = (e > *err_early) ? e : *err_early;
        } else {
            *err_late = (e > *err_late) ? e : *err_late;
        }
    }
}

static void test_rate(void)
{
    uint64_t early, late;
    uct_uccl_clock_t c;

    /* 300 ppm fast: nominal first (300 ns per ms), then measured */
    run_rate(300, &early, &late, &c);
    UT_TRUE(early >= 250);
    UT_TRUE(early <= 310);
    UT_TRUE(late <= 10);
    UT_TRUE(c.mult != c.nominal);
    UT_EQ(c.steps, 0);
    printf("  300 ppm: %lu ns error 1 ms out at the nominal rate, %lu once "
           "measured\n", (unsigned long)early, (unsigned long)late);

    /* 1% off is beyond the tolerance: the nominal rate stays */
    run_rate(10000, &early, &late, &c);
    UT_EQ(c.mult, c.nominal);
    printf("  1%%: rate not believed, nominal kept (%lu ns per ms)\n",
           (unsigned long)late);
}

static void test_step(void)
{
    dev_t_ d = { .ticks_per_ns = 1.0, .offset = 1000000000000ull,
                 .mask = UINT64_MAX };
    uct_uccl_clock_t c;
    uint64_t ns, mult;

    UT_EQ(uct_uccl_clock_init(&c, GHZ_KHZ, d.mask), UCS_OK);
    d.ticks_per_ns = 1.0001; /* 100 ppm: measured after 100 ms */
    for (ns = MS; ns <= 300 * MS; ns += MS) {
        UT_EQ(uct_uccl_clock_sample(&c, dev_tick(&d, ns), ns, ns), 1);
    }
    mult = c.mult;
    UT_TRUE(mult < c.nominal); /* fast device: fewer ns per tick */
    /* the wall clock is set back by a second */
    d.offset -= 1000000000ull;
    UT_EQ(uct_uccl_clock_sample(&c, dev_tick(&d, ns), ns, ns), 1);
    UT_EQ(c.steps, 1);
    UT_EQ(c.mult, mult);
    UT_TRUE(map_err(&c, &d, ns + MS) <= 2);
    UT_EQ(c.base_ns, ns);
    for (ns += MS; ns <= 500 * MS; ns += MS) {
        UT_EQ(uct_uccl_clock_sample(&c, dev_tick(&d, ns), ns, ns), 1);
        UT_TRUE(map_err(&c, &d, ns + MS) <= 2);
    }
    UT_EQ(c.steps, 1);
    printf("  a step restarts the rate measurement; the rate is kept\n");
}

/* A random device: offset, rate within the tolerance, mask, samples 0.2 to
 * 20 ms apart with random spread (some too wide, dropped). A tick dt after
 * the latest sample taken maps within rate error x dt plus half the
 * sample's spread; the rate error is
 * the device's until it is measured, then what two samples' spreads allow
 * over RATE_MIN_NS. */
static void test_random(void)
{
    dev_t_ d;
    uct_uccl_clock_t c;
    double ppm, rate_err, bound;
    uint64_t ns = 1000 * MS, start, dt, spread, khz, err, worst = 0;
    unsigned i, bits;

    bits  = 40 + ut_rand_below(25);
    d.mask = (bits == 64) ? UINT64_MAX : (1ull << bits) - 1;
    khz   = 100000 + ut_rand_below(1000000);
    ppm   = (double)ut_rand_below(6000) - 3000; /* within 0.39% */
    d.ticks_per_ns = khz / 1e6 * (1 + ppm * 1e-6);
    d.offset       = ut_rand() & d.mask;
    UT_EQ(uct_uccl_clock_init(&c, khz, d.mask), UCS_OK);
    start = ns;
    for (i = 0; i < 20000; ++i) {
        spread = ut_rand_below(UCT_UCCL_CLOCK_SAMPLE_MAX_NS);
        (void)uct_uccl_clock_sample(&c, dev_tick(&d, ns),
                                    ns - ut_rand_below(spread + 1),
                                    ns + spread);
        dt       = ut_rand_below(UCT_UCCL_CLOCK_SYNC_NS);
        rate_err = (ns - start < 2 * UCT_UCCL_CLOCK_RATE_MIN_NS) ?
                   fabs(ppm) * 1e-6 + 2e-4 :
                   2.0 * UCT_UCCL_CLOCK_SAMPLE_MAX_NS /
                   UCT_UCCL_CLOCK_RATE_MIN_NS;
        /* a sample wider than SAMPLE_MAX_NS was dropped: the mapping
         * goes from an older one */
        bound    = rate_err * (ns + dt - c.ref_ns) +
                   UCT_UCCL_CLOCK_SAMPLE_MAX_NS + 1e9 / khz;
        err      = map_err(&c, &d, ns + dt);
        if (err > bound) {
            UT_FAIL("step %u: error %lu ns > %.0f (dt %lu ppm %.0f khz %lu "
                    "bits %u)", i, (unsigned long)err, bound,
                    (unsigned long)dt, ppm, (unsigned long)khz, bits);
        }
        worst = (err > worst) ? err : worst;
        ns   += 200000 + ut_rand_below(20 * MS);
    }
    UT_EQ(c.steps, 0);
    UT_TRUE(c.rejected > 0);
    UT_TRUE(c.samples > c.rejected);
    printf("  random device (%u bits, %lu kHz, %+.0f ppm): worst error %lu "
           "ns over %u samples (%lu dropped)\n", bits, (unsigned long)khz,
           ppm, (unsigned long)worst, i, (unsigned long)c.rejected);
}

int main(int argc, char **argv)
{
    ut_init(argc, argv, "test_clock");
    test_init();
    test_nominal();
    test_wrap();
    test_rate();
    test_step();
    test_random();
    return ut_done("test_clock");
}

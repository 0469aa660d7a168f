/*
 * Minimal unit test support: checks that print expected vs actual and the
 * seed, then exit non-zero. Each program takes an optional seed as argv[1]
 * (default fixed, so runs are deterministic).
 */
#ifndef UCCL_UNIT_TEST_H_
#define UCCL_UNIT_TEST_H_

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t ut_seed = 1;
static uint64_t ut_rng;
static unsigned long ut_checks;

#define UT_FAIL(_fmt, ...) \
    do { \
        fprintf(stderr, "FAIL %s:%d: " _fmt " (seed %" PRIu64 ")\n", \
                __FILE__, __LINE__, ## __VA_ARGS__, ut_seed); \
        exit(1); \
    } while (0)

/* compare two integers */
#define UT_EQ(_actual, _expected) \
    do { \
        long long _a = (long long)(_actual), _e = (long long)(_expected); \
        ++ut_checks; \
        if (_a != _e) { \
            UT_FAIL("%s == %s: expected %lld, got %lld", #_actual, \
                    #_expected, _e, _a); \
        } \
    } while (0)

#define UT_TRUE(_cond) \
    do { \
        ++ut_checks; \
        if (!(_cond)) { \
            UT_FAIL("expected true: %s", #_cond); \
        } \
    } while (0)

/* xorshift64*: the tests' only source of randomness */
static inline uint64_t ut_rand(void)
{
    ut_rng ^= ut_rng >> 12;
    ut_rng ^= ut_rng << 25;
    ut_rng ^= ut_rng >> 27;
    return ut_rng * 0x2545f4914f6cdd1dull;
}

static inline uint32_t ut_rand_below(uint32_t n)
{
    return (uint32_t)(ut_rand() % n);
}

static inline void ut_shuffle(uint32_t *a, uint32_t n)
{
    uint32_t i, j, t;

    for (i = n; i > 1; --i) {
        j        = ut_rand_below(i);
        t        = a[i - 1];
        a[i - 1] = a[j];
        a[j]     = t;
    }
}

static inline void ut_init(int argc, char **argv, const char *name)
{
    if (argc > 1) {
        ut_seed = strtoull(argv[1], NULL, 0);
    }
    ut_rng = ut_seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    if (ut_rng == 0) {
        ut_rng = 1;
    }
    printf("%s: seed %" PRIu64 "\n", name, ut_seed);
}

static inline int ut_done(const char *name)
{
    printf("%s: PASS (%lu checks, seed %" PRIu64 ")\n", name, ut_checks,
           ut_seed);
    return 0;
}

#endif

/*
 * ucp_check helpers: messages, the data pattern, the size list.
 */
#include "ucp_check.h"

#include <endian.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void uc_fail(uc_t *uc, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "[%s] FAIL: ", uc->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (seed %llu)\n", (unsigned long long)uc->seed);
    exit(1);
}

void uc_log(uc_t *uc, const char *fmt, ...)
{
    va_list ap;

    printf("[%s] ", uc->name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

double uc_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void *uc_xmalloc(uc_t *uc, size_t size)
{
    /* never malloc(0): a zero-length transfer still gets a valid pointer */
    void *p = malloc(size ? size : 1);

    if (p == NULL) {
        uc_fail(uc, "out of memory allocating %zu bytes", size);
    }
    return p;
}

/*
 * The pattern is counter based (splitmix64 of the word index), so any byte
 * of stream S at offset O can be computed on its own: a receiver checks a
 * slice of a stream, or an RMA window at an offset, without the sender's
 * buffer.
 */
static inline uint64_t uc_mix(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t uc_word(uint64_t key, uint64_t index)
{
    return htole64(uc_mix(key + index * 0x9e3779b97f4a7c15ull));
}

static inline uint8_t uc_byte(uint64_t key, size_t pos)
{
    uint64_t w = uc_word(key, pos >> 3);

    return ((const uint8_t*)&w)[pos & 7];
}

static uint64_t uc_key(uint64_t seed, uint64_t stream)
{
    return uc_mix(seed ^ uc_mix(stream + 1));
}

void uc_fill(void *buf, size_t len, uint64_t seed, uint64_t stream,
             size_t offset)
{
    uint64_t key = uc_key(seed, stream);
    size_t pos = offset, end = offset + len;
    uint8_t *p = buf;
    uint64_t w;

    for (; (pos < end) && (pos & 7); ++pos) {
        *p++ = uc_byte(key, pos);
    }
    for (; pos + 8 <= end; pos += 8, p += 8) {
        w = uc_word(key, pos >> 3);
        memcpy(p, &w, 8);
    }
    for (; pos < end; ++pos) {
        *p++ = uc_byte(key, pos);
    }
}

int uc_verify(uc_t *uc, const void *buf, size_t len, uint64_t stream,
              size_t offset, const char *what)
{
    uint64_t key = uc_key(uc->seed, stream);
    const uint8_t *p = buf;
    size_t i, bad = 0, first = 0;
    uint8_t exp;

    for (i = 0; i < len; ++i) {
        /* word at a time where aligned: this runs over 64 MiB buffers */
        if ((((offset + i) & 7) == 0) && (i + 8 <= len)) {
            uint64_t w = uc_word(key, (offset + i) >> 3);
            if (memcmp(p + i, &w, 8) == 0) {
                i += 7;
                continue;
            }
        }
        exp = uc_byte(key, offset + i);
        if (p[i] != exp) {
            if (bad++ == 0) {
                first = i;
            }
        }
    }
    if (bad != 0) {
        fprintf(stderr, "[%s] FAIL: %s: %zu of %zu bytes differ, first at "
                "byte %zu: got 0x%02x expected 0x%02x (stream %llu offset "
                "%zu seed %llu)\n", uc->name, what, bad, len, first, p[first],
                uc_byte(key, offset + first), (unsigned long long)stream,
                offset, (unsigned long long)uc->seed);
        return -1;
    }
    return 0;
}

/*
 * Sizes that straddle UCX's protocol switches for any transport: short
 * (below ~8 KiB), bcopy, zcopy (from 8 KiB or so) and rendezvous (from
 * 8 KiB to 256 KiB depending on the transport), up to 64 MiB. Odd sizes
 * catch length and alignment bugs.
 */
static const size_t uc_all_sizes[] = {
    0, 1, 7, 8, 63, 64, 100, 1000, 1024, 2047, 4095, 4096, 8185, 8192, 8193,
    16384, 65535, 65536, 65537, 131072, 262143, 262144, 262145, 1 * UC_MIB,
    1 * UC_MIB + 13, 4 * UC_MIB, 16 * UC_MIB + 5, 64 * UC_MIB
};

size_t uc_sizes(const uc_t *uc, size_t *sizes, size_t max_count)
{
    size_t i, n = 0;

    for (i = 0; i < sizeof(uc_all_sizes) / sizeof(uc_all_sizes[0]); ++i) {
        if ((uc_all_sizes[i] >= uc->min_size) &&
            (uc_all_sizes[i] <= uc->max_size) && (n < max_count)) {
            sizes[n++] = uc_all_sizes[i];
        }
    }
    return n;
}

/*
 * Serial-number arithmetic of the 24-bit sequence space used for chunk
 * sequence numbers (CSN) and AM sequence numbers. Values are kept masked to
 * 24 bits; comparisons are meaningful while the two numbers are less than
 * 2^23 apart (windows are at most UCT_UCCL_WIRE_SACK_MAX_BITS, far below).
 */
#ifndef UCT_UCCL_SEQ_H_
#define UCT_UCCL_SEQ_H_

#include <stdint.h>

#define UCT_UCCL_SEQ_BITS  24
#define UCT_UCCL_SEQ_MASK  ((1u << UCT_UCCL_SEQ_BITS) - 1)

/* a + n, wrapped */
static inline uint32_t uct_uccl_seq_add(uint32_t a, uint32_t n)
{
    return (a + n) & UCT_UCCL_SEQ_MASK;
}

/* signed distance a - b in [-2^23, 2^23) */
static inline int32_t uct_uccl_seq_diff(uint32_t a, uint32_t b)
{
    /* move the 24-bit difference to the top and sign-extend it back */
    return (int32_t)((a - b) << (32 - UCT_UCCL_SEQ_BITS)) >>
           (32 - UCT_UCCL_SEQ_BITS);
}

static inline int uct_uccl_seq_lt(uint32_t a, uint32_t b)
{
    return uct_uccl_seq_diff(a, b) < 0;
}

static inline int uct_uccl_seq_le(uint32_t a, uint32_t b)
{
    return uct_uccl_seq_diff(a, b) <= 0;
}

static inline int uct_uccl_seq_gt(uint32_t a, uint32_t b)
{
    return uct_uccl_seq_diff(a, b) > 0;
}

static inline int uct_uccl_seq_ge(uint32_t a, uint32_t b)
{
    return uct_uccl_seq_diff(a, b) >= 0;
}

/* unsigned distance from b forward to a; valid when a is not before b */
static inline uint32_t uct_uccl_seq_dist(uint32_t a, uint32_t b)
{
    return (a - b) & UCT_UCCL_SEQ_MASK;
}

#endif

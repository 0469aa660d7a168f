/*
 * Receiver side of selective acknowledgement: which CSNs of a conn's
 * incoming chunk stream have arrived.
 *
 * State is a cumulative point `cum` (first missing CSN) and a ring bitmap
 * of 2 * window bits indexed by CSN, so that every bit an ACK can report,
 * from the 64-aligned base below cum up to cum + window, has its own slot.
 * Bits behind cum are cleared as cum advances. Recording is O(1) amortised,
 * no allocation after init. The sender side (applying an ACK) is
 * uct_uccl_tracker_ack() in uccl_tracker.h.
 */
#ifndef UCT_UCCL_SACK_H_
#define UCT_UCCL_SACK_H_

#include "uccl_seq.h"
#include "uccl_wire.h"

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stdint.h>

typedef enum {
    UCT_UCCL_SACK_IN_ORDER,      /* new, was the first missing: cum moved */
    UCT_UCCL_SACK_OUT_OF_ORDER,  /* new, a hole remains before it */
    UCT_UCCL_SACK_DUPLICATE,     /* already received: drop, do not copy */
    UCT_UCCL_SACK_OUT_OF_WINDOW  /* beyond cum + window: drop, count */
} uct_uccl_sack_result_t;

typedef struct uct_uccl_sack {
    uint32_t cum;        /* first CSN not received */
    uint32_t high;       /* one past the highest CSN received (>= cum) */
    uint32_t window;     /* accepted: [cum, cum + window) */
    uint32_t word_mask;  /* ring words - 1 */
    uint64_t *bits;      /* 2 * window bits */
} uct_uccl_sack_t;


/* window: chunks, power of two in [64, UCT_UCCL_WIRE_SACK_MAX_BITS];
 * init_csn: the peer's first CSN (its CONN packet's init_csn) */
ucs_status_t uct_uccl_sack_init(uct_uccl_sack_t *s, uint32_t window,
                                uint32_t init_csn);
void uct_uccl_sack_cleanup(uct_uccl_sack_t *s);

/* slow part of record(): move cum over the run of received CSNs */
void uct_uccl_sack_advance(uct_uccl_sack_t *s);

/* Record an arriving CSN (24-bit). Call before using the chunk's data: a
 * DUPLICATE retransmission must not be copied again. */
static UCS_F_ALWAYS_INLINE uct_uccl_sack_result_t
uct_uccl_sack_record(uct_uccl_sack_t *s, uint32_t csn)
{
    int32_t d = uct_uccl_seq_diff(csn, s->cum);
    uint64_t *w, b;

    if (ucs_unlikely(d < 0)) {
        return UCT_UCCL_SACK_DUPLICATE;
    }
    if ((d == 0) && (s->high == s->cum)) {
        /* the next in order, nothing beyond it: no bit to set and clear */
        s->cum  = uct_uccl_seq_add(csn, 1);
        s->high = s->cum;
        return UCT_UCCL_SACK_IN_ORDER;
    }
    if (ucs_unlikely((uint32_t)d >= s->window)) {
        return UCT_UCCL_SACK_OUT_OF_WINDOW;
    }
    w = &s->bits[(csn >> 6) & s->word_mask];
    b = 1ull << (csn & 63);
    if (ucs_unlikely(*w & b)) {
        return UCT_UCCL_SACK_DUPLICATE;
    }
    *w |= b;
    if (uct_uccl_seq_ge(csn, s->high)) {
        s->high = uct_uccl_seq_add(csn, 1);
    }
    if (d == 0) {
        uct_uccl_sack_advance(s);
        return UCT_UCCL_SACK_IN_ORDER;
    }
    return UCT_UCCL_SACK_OUT_OF_ORDER;
}

/* has csn arrived? (anything before cum has) */
static inline int uct_uccl_sack_has(const uct_uccl_sack_t *s, uint32_t csn)
{
    int32_t d = uct_uccl_seq_diff(csn, s->cum);

    if (d < 0) {
        return 1;
    }
    if ((uint32_t)d >= s->window) {
        return 0;
    }
    return !!(s->bits[(csn >> 6) & s->word_mask] & (1ull << (csn & 63)));
}

/* are there holes (something received beyond the first missing CSN)? */
static inline int uct_uccl_sack_has_holes(const uct_uccl_sack_t *s)
{
    return s->high != s->cum;
}

/*
 * Fill ack->cum_csn, ack->sack_words and ack->sack[] (wire semantics in
 * uccl_wire.h), sending at most max_words words; words past the highest
 * received CSN are not sent. Returns sack_words. The caller fills the
 * header and the other fields; the ACK's size is
 * uct_uccl_wire_ack_size(return value).
 */
unsigned uct_uccl_sack_ack_pack(const uct_uccl_sack_t *s, uct_uccl_ack_t *ack,
                                unsigned max_words);

#endif

/*
 * In-order delivery of active messages at the receiver. AMs carry a 24-bit
 * sequence number (uct_uccl_am_hdr_t.am_seq); paths reorder them, so an AM
 * that arrives early is parked (the UCT layer's descriptor pointer) in a
 * fixed ring of `size` slots until every AM before it has been delivered.
 *
 *   switch (uct_uccl_reorder_insert(r, seq, desc)) {
 *   case UCT_UCCL_REORDER_DELIVER:   deliver desc, then
 *       while ((d = uct_uccl_reorder_pop(r)) != NULL) deliver d;
 *   case UCT_UCCL_REORDER_HELD:      nothing now
 *   case UCT_UCCL_REORDER_DUPLICATE / _OUT_OF_WINDOW: release desc, count
 *   }
 *
 * O(1) per AM, no allocation after init. Descriptors must not be NULL.
 */
#ifndef UCT_UCCL_REORDER_H_
#define UCT_UCCL_REORDER_H_

#include "uccl_seq.h"

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    UCT_UCCL_REORDER_DELIVER,       /* it is the next one: deliver it now */
    UCT_UCCL_REORDER_HELD,          /* parked until the ones before arrive */
    UCT_UCCL_REORDER_DUPLICATE,     /* delivered or parked already */
    UCT_UCCL_REORDER_OUT_OF_WINDOW  /* too far ahead of next */
} uct_uccl_reorder_result_t;

typedef struct uct_uccl_reorder {
    uint32_t next;     /* sequence number to deliver next */
    uint32_t mask;     /* size - 1 */
    uint32_t held;     /* parked descriptors */
    void     **slot;   /* size entries, NULL = empty */
} uct_uccl_reorder_t;


/* size: power of two in [2, 2^16]; at least the sender's window in
 * chunks, since that bounds how far apart in-flight AMs can be */
ucs_status_t uct_uccl_reorder_init(uct_uccl_reorder_t *r, uint32_t size,
                                   uint32_t init_seq);

/* Frees only the ring: parked descriptors must be drained first (see
 * uct_uccl_reorder_drain) */
void uct_uccl_reorder_cleanup(uct_uccl_reorder_t *r);

static UCS_F_ALWAYS_INLINE uct_uccl_reorder_result_t
uct_uccl_reorder_insert(uct_uccl_reorder_t *r, uint32_t seq, void *desc)
{
    int32_t d = uct_uccl_seq_diff(seq, r->next);
    void **s;

    if (ucs_likely(d == 0)) {
        r->next = uct_uccl_seq_add(seq, 1);
        return UCT_UCCL_REORDER_DELIVER;
    }
    if (d < 0) {
        return UCT_UCCL_REORDER_DUPLICATE;
    }
    if ((uint32_t)d > r->mask) {
        return UCT_UCCL_REORDER_OUT_OF_WINDOW;
    }
    s = &r->slot[seq & r->mask];
    if (*s != NULL) {
        return UCT_UCCL_REORDER_DUPLICATE;
    }
    *s = desc;
    ++r->held;
    return UCT_UCCL_REORDER_HELD;
}

/* next parked descriptor if it is now in order, else NULL */
static UCS_F_ALWAYS_INLINE void *uct_uccl_reorder_pop(uct_uccl_reorder_t *r)
{
    void **s, *desc;

    if (ucs_likely(r->held == 0)) {
        return NULL;
    }
    s    = &r->slot[r->next & r->mask];
    desc = *s;
    if (desc != NULL) {
        *s      = NULL;
        r->next = uct_uccl_seq_add(r->next, 1);
        --r->held;
    }
    return desc;
}

/* Hand every parked descriptor to cb (conn teardown) and empty the ring */
void uct_uccl_reorder_drain(uct_uccl_reorder_t *r,
                            void (*cb)(void *arg, void *desc), void *arg);

#endif

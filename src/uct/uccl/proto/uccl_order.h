/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Ordered delivery (UC mode): messages that act on the receiver's state
 * (active messages, GET requests) take effect in the order the sender
 * issued its operations, as on one RC QP. A message with CSN c is handed
 * over only once every chunk before it arrived, i.e. once the SACK
 * cumulative point passed c: an AM then sees every PUT issued before it,
 * and a GET reads what those PUTs wrote.
 *
 * Usage: record the CSN in the SACK state first (duplicates are dropped
 * there). If the message is deliverable (uct_uccl_order_ready) hand it
 * over, else park it with uct_uccl_order_hold. After every arrival that
 * moved the cumulative point, uct_uccl_order_pop hands over the parked
 * messages that became deliverable, in CSN order.
 */
#ifndef UCT_UCCL_ORDER_H_
#define UCT_UCCL_ORDER_H_

#include "uccl_seq.h"

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stddef.h>
#include <stdint.h>

typedef struct uct_uccl_order {
    uint32_t next;     /* lowest CSN not looked at yet (while held > 0) */
    uint32_t size;     /* ring entries: the SACK window */
    uint32_t held;     /* parked messages */
    uint32_t limit;    /* most parked messages at once */
    void     **slot;   /* size entries by CSN, allocated at the first hold */
} uct_uccl_order_t;


/* window: the SACK window (a power of two, CSNs accepted ahead of cum);
 * limit: most messages parked at once (a peer that skips a CSN cannot
 * make us hold more) */
ucs_status_t uct_uccl_order_init(uct_uccl_order_t *o, uint32_t window,
                                 uint32_t limit);

/* Frees the ring: parked messages must be drained first */
void uct_uccl_order_cleanup(uct_uccl_order_t *o);

/* May the message with `csn` (already recorded) be handed over now? Only
 * if nothing is parked and every CSN before it arrived. */
static UCS_F_ALWAYS_INLINE int
uct_uccl_order_ready(const uct_uccl_order_t *o, uint32_t csn, uint32_t cum)
{
    return (o->held == 0) && uct_uccl_seq_lt(csn, cum);
}

/* May a new message with `csn` be accepted? Ask before recording it: one
 * refused is not acknowledged, and the sender sends it again. Beyond the
 * limit only the first missing CSN is taken, which the parked ones wait
 * for (it leaves at once, before them). */
static inline int uct_uccl_order_may_take(const uct_uccl_order_t *o,
                                          uint32_t csn, uint32_t cum)
{
    return (o->held < o->limit) || (csn == cum);
}

/* Park desc under csn (recorded, not ready). UCS_ERR_NO_MEMORY when the
 * ring cannot be allocated. */
ucs_status_t uct_uccl_order_hold(uct_uccl_order_t *o, uint32_t csn,
                                 uint32_t cum, void *desc);

/* The next parked message whose CSN is below cum, or NULL */
void *uct_uccl_order_pop(uct_uccl_order_t *o, uint32_t cum);

/* Is a message parked under csn (less than the window ahead of the oldest
 * one that may be parked)? */
static UCS_F_ALWAYS_INLINE int
uct_uccl_order_has(const uct_uccl_order_t *o, uint32_t csn)
{
    return (o->held > 0) && (o->slot[csn & (o->size - 1)] != NULL);
}

/* The message parked under csn, taken off, or NULL (RC: AMs come without
 * gaps in their numbers, and one parked goes when all before it went) */
void *uct_uccl_order_take(uct_uccl_order_t *o, uint32_t csn);

/* Hand every parked message to cb (conn teardown) and empty the ring */
void uct_uccl_order_drain(uct_uccl_order_t *o,
                          void (*cb)(void *arg, void *desc), void *arg);

#endif

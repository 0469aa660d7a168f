/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Ordered delivery (see uccl_order.h).
 */
#include "uccl_order.h"

#include <stdlib.h>


ucs_status_t uct_uccl_order_init(uct_uccl_order_t *o, uint32_t window,
                                 uint32_t limit)
{
    if ((window < 2) || (window > (UCT_UCCL_SEQ_MASK >> 1)) ||
        (window & (window - 1)) || (limit == 0)) {
        return UCS_ERR_INVALID_PARAM;
    }
    o->next  = 0;
    o->size  = window;
    o->held  = 0;
    o->limit = limit;
    o->slot  = NULL;
    return UCS_OK;
}

void uct_uccl_order_cleanup(uct_uccl_order_t *o)
{
    free(o->slot);
    o->slot = NULL;
}

ucs_status_t uct_uccl_order_hold(uct_uccl_order_t *o, uint32_t csn,
                                 uint32_t cum, void *desc)
{
    void **s;

    if (o->slot == NULL) {
        o->slot = calloc(o->size, sizeof(*o->slot));
        if (o->slot == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
    }
    /* a new CSN is never below cum, nor below next (next <= cum): the scan
     * cannot have passed its slot */
    if (o->held == 0) {
        o->next = cum;
    }
    s = &o->slot[csn & (o->size - 1)];
    if (*s != NULL) {
        return UCS_ERR_ALREADY_EXISTS; /* the SACK state lets no duplicate
                                          through: a caller's bug */
    }
    *s = desc;
    ++o->held;
    return UCS_OK;
}

void *uct_uccl_order_pop(uct_uccl_order_t *o, uint32_t cum)
{
    void **s, *desc;

    while ((o->held > 0) && uct_uccl_seq_lt(o->next, cum)) {
        s       = &o->slot[o->next & (o->size - 1)];
        o->next = uct_uccl_seq_add(o->next, 1);
        desc    = *s;
        if (desc != NULL) {
            *s = NULL;
            --o->held;
            return desc;
        }
    }
    return NULL;
}

void *uct_uccl_order_take(uct_uccl_order_t *o, uint32_t csn)
{
    void **s, *desc;

    if (o->held == 0) {
        return NULL;
    }
    s    = &o->slot[csn & (o->size - 1)];
    desc = *s;
    if (desc != NULL) {
        *s = NULL;
        --o->held;
    }
    return desc;
}

void uct_uccl_order_drain(uct_uccl_order_t *o,
                          void (*cb)(void *arg, void *desc), void *arg)
{
    uint32_t i;

    for (i = 0; (o->slot != NULL) && (i < o->size) && (o->held > 0); ++i) {
        if (o->slot[i] != NULL) {
            cb(arg, o->slot[i]);
            o->slot[i] = NULL;
            --o->held;
        }
    }
}

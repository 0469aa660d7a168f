/*
 * In-order AM delivery (see uccl_reorder.h).
 */
#include "uccl_reorder.h"

#include <stdlib.h>


ucs_status_t uct_uccl_reorder_init(uct_uccl_reorder_t *r, uint32_t size,
                                   uint32_t init_seq)
{
    if ((size < 2) || (size > (1u << 16)) || (size & (size - 1)) ||
        (init_seq & ~UCT_UCCL_SEQ_MASK)) {
        return UCS_ERR_INVALID_PARAM;
    }
    r->slot = calloc(size, sizeof(*r->slot));
    if (r->slot == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    r->next = init_seq;
    r->mask = size - 1;
    r->held = 0;
    return UCS_OK;
}

void uct_uccl_reorder_cleanup(uct_uccl_reorder_t *r)
{
    free(r->slot);
    r->slot = NULL;
}

void uct_uccl_reorder_drain(uct_uccl_reorder_t *r,
                            void (*cb)(void *arg, void *desc), void *arg)
{
    uint32_t i;

    for (i = 0; (i <= r->mask) && (r->held > 0); ++i) {
        if (r->slot[i] != NULL) {
            cb(arg, r->slot[i]);
            r->slot[i] = NULL;
            --r->held;
        }
    }
}

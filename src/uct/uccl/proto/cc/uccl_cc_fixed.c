/*
 * Fixed window: a constant number of bytes in flight, no pacing, losses and
 * timeouts change nothing (retransmission is the reliability layer's job).
 * The baseline every other algorithm is compared with.
 */
#include "uccl_cc.h"


static ucs_status_t uct_uccl_cc_fixed_init(uct_uccl_cc_t *cc,
                                           const uct_uccl_cc_params_t *params)
{
    uint64_t window = params->window_bytes;

    if (window == 0) {
        window = (uint64_t)params->window_chunks * params->chunk_size;
    }
    if (window == 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    if ((params->max_window_bytes != 0) &&
        (window > params->max_window_bytes)) {
        window = params->max_window_bytes;
    }
    if (window < params->min_window_bytes) {
        window = params->min_window_bytes;
    }
    cc->cwnd_bytes   = window;
    cc->next_send_ns = 0;
    return UCS_OK;
}

const uct_uccl_cc_ops_t uct_uccl_cc_fixed_ops = {
    .name      = "fixed",
    .desc      = "constant window of UCX_UCCL_CC_WINDOW bytes, no pacing",
    .priv_size = 0,
    .init      = uct_uccl_cc_fixed_init,
};

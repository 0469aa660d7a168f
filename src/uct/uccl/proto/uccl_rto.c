/*
 * RTT estimation and retransmission timeout (see uccl_rto.h).
 */
#include "uccl_rto.h"

#include <string.h>


static void uct_uccl_rto_clamp(uct_uccl_rto_t *r)
{
    if (r->rto_ns < r->min_ns) {
        r->rto_ns = r->min_ns;
    } else if (r->rto_ns > r->max_ns) {
        r->rto_ns = r->max_ns;
    }
}

ucs_status_t uct_uccl_rto_init(uct_uccl_rto_t *r,
                               const uct_uccl_rto_params_t *params)
{
    if ((params->min_ns == 0) || (params->max_ns < params->min_ns) ||
        (params->init_ns == 0) || (params->max_retries == 0)) {
        return UCS_ERR_INVALID_PARAM;
    }

    memset(r, 0, sizeof(*r));
    r->min_ns      = params->min_ns;
    r->max_ns      = params->max_ns;
    r->rto_ns      = params->init_ns;
    r->max_retries = params->max_retries;
    uct_uccl_rto_clamp(r);
    return UCS_OK;
}

void uct_uccl_rto_sample(uct_uccl_rto_t *r, uint64_t rtt_ns)
{
    uint64_t err;

    if (r->samples++ == 0) {
        r->srtt_ns   = rtt_ns;
        r->rttvar_ns = rtt_ns / 2;
    } else {
        err          = (rtt_ns > r->srtt_ns) ? rtt_ns - r->srtt_ns :
                                               r->srtt_ns - rtt_ns;
        r->rttvar_ns = r->rttvar_ns - r->rttvar_ns / 4 + err / 4;
        r->srtt_ns   = r->srtt_ns - r->srtt_ns / 8 + rtt_ns / 8;
    }
    r->rto_ns = r->srtt_ns + 4 * r->rttvar_ns;
    uct_uccl_rto_clamp(r);

    r->rtt_max_ns -= r->rtt_max_ns / 256;
    if (rtt_ns > r->rtt_max_ns) {
        r->rtt_max_ns = rtt_ns;
    }
}

uint64_t uct_uccl_rto_current(const uct_uccl_rto_t *r)
{
    unsigned shift = (r->backoff < 32) ? r->backoff : 32;
    uint64_t rto   = r->rto_ns << shift;

    /* also catches the shift overflowing */
    if ((rto > r->max_ns) || ((rto >> shift) != r->rto_ns)) {
        return r->max_ns;
    }
    return rto;
}

void uct_uccl_rto_on_ack(uct_uccl_rto_t *r, uint64_t now, uint32_t inflight)
{
    r->backoff  = 0;
    r->deadline = inflight ? now + r->rto_ns : 0;
}

uct_uccl_rto_decision_t uct_uccl_rto_check(uct_uccl_rto_t *r, uint64_t now,
                                           uint32_t inflight)
{
    if (inflight == 0) {
        r->deadline = 0;
        r->backoff  = 0;
        return UCT_UCCL_RTO_WAIT;
    }
    if (r->backoff > r->max_retries) {
        return UCT_UCCL_RTO_GIVE_UP;    /* stays failed until progress */
    }
    if (r->deadline == 0) {
        r->deadline = now + uct_uccl_rto_current(r);
        return UCT_UCCL_RTO_WAIT;
    }
    if (now < r->deadline) {
        return UCT_UCCL_RTO_WAIT;
    }

    ++r->timeouts;
    if (++r->backoff > r->max_retries) {
        return UCT_UCCL_RTO_GIVE_UP;
    }
    r->deadline = now + uct_uccl_rto_current(r);
    return UCT_UCCL_RTO_RETRANSMIT;
}

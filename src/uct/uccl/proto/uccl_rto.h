/*
 * Retransmission timeout of one conn: a smoothed RTT estimator
 * (srtt/rttvar, gains 1/8 and 1/4), RTO = srtt + 4 * rttvar clamped to
 * [min, max], exponential backoff while timeouts repeat without progress,
 * and the retry budget that turns into "connection failed".
 *
 * Usage by the UCT layer:
 *   uct_uccl_rto_sample()    each RTT sample from an ACK
 *   uct_uccl_rto_on_send()   when a chunk is posted (arms an idle timer)
 *   uct_uccl_rto_on_ack()    when una moved (resets backoff, restarts)
 *   uct_uccl_rto_check()     from the timer: WAIT / RETRANSMIT / GIVE_UP
 * On RETRANSMIT, resend with uct_uccl_tracker_expire(..., rto->rto_ns).
 */
#ifndef UCT_UCCL_RTO_H_
#define UCT_UCCL_RTO_H_

#include <ucs/type/status.h>
#include <stdint.h>

typedef enum {
    UCT_UCCL_RTO_WAIT,        /* nothing due (or nothing in flight) */
    UCT_UCCL_RTO_RETRANSMIT,  /* timer expired: resend, backoff doubled */
    UCT_UCCL_RTO_GIVE_UP      /* retry budget spent: fail the conn */
} uct_uccl_rto_decision_t;

typedef struct uct_uccl_rto_params {
    uint64_t init_ns;      /* RTO before the first sample */
    uint64_t min_ns;
    uint64_t max_ns;       /* cap of the backed-off RTO too */
    uint32_t max_retries;  /* timeouts in a row without progress */
} uct_uccl_rto_params_t;

typedef struct uct_uccl_rto {
    uint64_t srtt_ns;      /* 0 until the first sample */
    uint64_t rttvar_ns;
    uint64_t rtt_max_ns;   /* recent peak: slow decay (1/256 per sample) */
    uint64_t rto_ns;       /* current base RTO (no backoff) */
    uint64_t min_ns;
    uint64_t max_ns;
    uint64_t deadline;     /* ns; 0 = not armed */
    uint32_t backoff;      /* timeouts since the last progress */
    uint32_t max_retries;
    uint64_t samples;
    uint64_t timeouts;
} uct_uccl_rto_t;


ucs_status_t uct_uccl_rto_init(uct_uccl_rto_t *r,
                               const uct_uccl_rto_params_t *params);

void uct_uccl_rto_sample(uct_uccl_rto_t *r, uint64_t rtt_ns);

/* current timeout including backoff, capped at max_ns */
uint64_t uct_uccl_rto_current(const uct_uccl_rto_t *r);

static inline void uct_uccl_rto_on_send(uct_uccl_rto_t *r, uint64_t now)
{
    if (r->deadline == 0) {
        r->deadline = now + uct_uccl_rto_current(r);
    }
}

/* una advanced: progress. inflight: chunks still outstanding after it */
void uct_uccl_rto_on_ack(uct_uccl_rto_t *r, uint64_t now, uint32_t inflight);

uct_uccl_rto_decision_t uct_uccl_rto_check(uct_uccl_rto_t *r, uint64_t now,
                                           uint32_t inflight);

/* smoothed RTT, or the initial RTO's quarter before any sample */
static inline uint64_t uct_uccl_rto_srtt(const uct_uccl_rto_t *r)
{
    return r->srtt_ns ? r->srtt_ns : r->rto_ns / 4;
}

/* How old a SACK hole must be before fast retransmit resends it (the
 * tracker's min_age): the larger of srtt + 4 * rttvar and the recent peak
 * RTT + 1/8, without the RTO's floor. Paths differ in delay, so a chunk
 * on a slow path is not declared lost while it may still be on its way,
 * yet a loss is repaired well before the RTO. Before any sample: the RTO. */
static inline uint64_t uct_uccl_rto_retx_age(const uct_uccl_rto_t *r)
{
    uint64_t age = r->srtt_ns + 4 * r->rttvar_ns;
    uint64_t max = r->rtt_max_ns + r->rtt_max_ns / 8;

    if (r->samples == 0) {
        return r->rto_ns;
    }
    return (age > max) ? age : max;
}

#endif

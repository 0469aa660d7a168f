/*
 * Timely (Mittal et al., SIGCOMM 2015): a sending rate driven by the RTT
 * and its gradient, enforced by pacing.
 *
 * Each RTT sample (the RTT less the receiver's own queueing time, when the
 * ACK reports it) updates the rate: below T_low it grows by one additive
 * step; above T_high it shrinks by beta * (1 - T_high / rtt); in between
 * the gradient decides: the smoothed RTT difference (EWMA) over the
 * minimum RTT, negative or zero -> one step up (hai_mult steps once
 * hai_thresh samples in a row fell: hyperactive increase), positive ->
 * down by beta * gradient. Every change is scaled by the time since the
 * last update over the minimum RTT (at most 1), so frequent ACKs do not
 * act faster than the network can answer; no decrease takes more than
 * max_mdf, and the rate stays within [min_rate, line rate]. A timeout
 * halves it (max_mdf); a fast retransmit alone does not: loss is not the
 * delay signal Timely follows.
 *
 * Enforcement: every send is followed by a gap of bytes / rate, and the
 * window is window_gain x rate x RTT, so the bytes in flight stay bounded
 * when ACKs stop while pacing, not the window, sets the rate.
 */
#include "uccl_cc_int.h"


typedef struct uct_uccl_cc_timely {
    /* parameters */
    double   t_low;            /* ns */
    double   t_high;           /* ns */
    double   fixed_min_rtt;    /* ns; 0: the least seen */
    double   ai;               /* bits/s per step */
    double   min_rate;         /* bits/s */
    double   max_rate;         /* bits/s */
    double   beta;
    double   ewma;
    double   max_mdf;
    double   gain;
    double   chunk;            /* bytes: the pacing gap reported is one's */
    double   min_cwnd;
    double   max_cwnd;
    int32_t  hai_thresh;       /* < 0: no HAI */
    uint32_t hai_mult;
    /* state */
    double   rate;             /* bits/s */
    double   srtt;             /* end-to-end, ns: the window's RTT */
    double   prev_rtt;         /* last fabric RTT, ns; 0: none yet */
    double   avg_diff;         /* EWMA of RTT differences, ns */
    double   min_rtt_seen;
    uint64_t last_update;
    int      have_rtt;
    uint32_t neg_count;        /* RTT samples in a row that fell */
    uint64_t increases;
    uint64_t decreases;
} uct_uccl_cc_timely_t;


static double uct_uccl_cc_timely_min_rtt(const uct_uccl_cc_timely_t *t)
{
    double m = (t->fixed_min_rtt > 0) ? t->fixed_min_rtt : t->min_rtt_seen;

    return (m > UCT_UCCL_CC_TIMELY_MIN_RTT_NS) ? m :
                                                 UCT_UCCL_CC_TIMELY_MIN_RTT_NS;
}

/* window from the rate; publish it */
static void uct_uccl_cc_timely_apply(uct_uccl_cc_t *cc)
{
    uct_uccl_cc_timely_t *t = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_timely_t);
    double w = t->gain * t->rate / 8e9 * t->srtt;

    cc->cwnd_bytes = uct_uccl_cc_bytes(uct_uccl_cc_clamp(w, t->min_cwnd,
                                                         t->max_cwnd));
}

/* rate *= 1 - cut, with cut at most max_mdf; count it */
static void uct_uccl_cc_timely_cut(uct_uccl_cc_timely_t *t, double cut)
{
    if (cut > 0) {
        t->rate *= 1.0 - ((cut < t->max_mdf) ? cut : t->max_mdf);
        ++t->decreases;
    }
}

static void uct_uccl_cc_timely_add(uct_uccl_cc_timely_t *t, double step)
{
    if (step > 0) {
        t->rate += step;
        ++t->increases;
    }
}

static ucs_status_t
uct_uccl_cc_timely_init(uct_uccl_cc_t *cc, const uct_uccl_cc_params_t *params)
{
    const uct_uccl_cc_timely_params_t *p = &params->timely;
    uct_uccl_cc_timely_t *t;

    t = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_timely_t);

    memset(t, 0, sizeof(*t));
    t->t_low         = uct_uccl_cc_def_u64(p->t_low_ns,
                                           UCT_UCCL_CC_TIMELY_T_LOW_NS);
    t->t_high        = uct_uccl_cc_def_u64(p->t_high_ns,
                                           UCT_UCCL_CC_TIMELY_T_HIGH_NS);
    t->fixed_min_rtt = (p->min_rtt_ns != 0) ? p->min_rtt_ns :
                                              params->base_rtt_ns;
    t->max_rate      = uct_uccl_cc_def_u64(params->link_bps,
                                           UCT_UCCL_CC_DEF_LINK_BPS);
    t->ai            = uct_uccl_cc_def_u64(p->ai_bps, t->max_rate /
                                           UCT_UCCL_CC_TIMELY_AI_DIV);
    t->min_rate      = uct_uccl_cc_def_u64(p->min_rate_bps,
                                           UCT_UCCL_CC_TIMELY_MIN_RATE_BPS);
    t->beta          = uct_uccl_cc_def_dbl(p->beta, UCT_UCCL_CC_TIMELY_BETA);
    t->ewma          = uct_uccl_cc_def_dbl(p->ewma, UCT_UCCL_CC_TIMELY_EWMA);
    t->max_mdf       = uct_uccl_cc_def_dbl(p->max_mdf,
                                           UCT_UCCL_CC_TIMELY_MAX_MDF);
    t->gain          = uct_uccl_cc_def_dbl(p->window_gain,
                                           UCT_UCCL_CC_TIMELY_WINDOW_GAIN);
    t->hai_thresh    = (p->hai_thresh != 0) ? p->hai_thresh :
                                              UCT_UCCL_CC_TIMELY_HAI_THRESH;
    t->hai_mult      = (p->hai_mult != 0) ? p->hai_mult :
                                            UCT_UCCL_CC_TIMELY_HAI_MULT;
    t->chunk         = uct_uccl_cc_chunk(params);
    t->min_cwnd      = uct_uccl_cc_def_u64(params->min_window_bytes,
                                           UCT_UCCL_CC_TIMELY_MIN_WINDOW);
    t->max_cwnd      = uct_uccl_cc_def_u64(params->max_window_bytes,
                                           UCT_UCCL_CC_DEF_MAX_WINDOW);

    if ((t->t_low >= t->t_high) || (t->min_rate > t->max_rate) ||
        !(t->ai > 0) || !(t->beta > 0) || !(t->ewma > 0) ||
        !(t->ewma <= 1) || !(t->max_mdf > 0) || !(t->max_mdf < 1) ||
        !(t->gain > 0) || (t->min_cwnd > t->max_cwnd)) {
        return UCS_ERR_INVALID_PARAM;
    }

    t->rate = t->max_rate; /* start at line rate, as the paper does */
    t->srtt = uct_uccl_cc_def_u64(params->base_rtt_ns,
                                  UCT_UCCL_CC_DEF_BASE_RTT_NS);
    uct_uccl_cc_timely_apply(cc);
    cc->next_send_ns = 0;
    return UCS_OK;
}

static void uct_uccl_cc_timely_on_send(uct_uccl_cc_t *cc, uint32_t bytes,
                                       uint64_t now)
{
    uct_uccl_cc_timely_t *t = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_timely_t);

    uct_uccl_cc_pace(cc, bytes * 8e9 / t->rate, now);
}

/* The rate update for one fabric RTT sample (ns) */
static void uct_uccl_cc_timely_update(uct_uccl_cc_timely_t *t, double rtt,
                                      uint64_t now)
{
    double min_rtt = uct_uccl_cc_timely_min_rtt(t);
    double diff, gradient, delta;
    uint32_t n;

    if (t->prev_rtt == 0) {
        t->prev_rtt = rtt;
    }
    diff         = rtt - t->prev_rtt;
    t->neg_count = (diff < 0) ? t->neg_count + 1 : 0;
    t->avg_diff  = (1.0 - t->ewma) * t->avg_diff + t->ewma * diff;
    t->prev_rtt  = rtt;
    gradient     = t->avg_diff / min_rtt;
    delta        = (now > t->last_update) ?
                   (double)(now - t->last_update) / min_rtt : 0;
    delta        = (delta < 1.0) ? delta : 1.0;
    t->last_update = now;

    if (rtt < t->t_low) {
        uct_uccl_cc_timely_add(t, t->ai * delta);
    } else if (rtt > t->t_high) {
        uct_uccl_cc_timely_cut(t, delta * t->beta *
                                  (1.0 - t->t_high / rtt));
    } else if (gradient <= 0) {
        n = ((t->hai_thresh > 0) &&
             (t->neg_count >= (uint32_t)t->hai_thresh)) ? t->hai_mult : 1;
        uct_uccl_cc_timely_add(t, n * t->ai * delta);
    } else {
        uct_uccl_cc_timely_cut(t, delta * t->beta * gradient);
    }
    t->rate = uct_uccl_cc_clamp(t->rate, t->min_rate, t->max_rate);
}

static void uct_uccl_cc_timely_on_ack(uct_uccl_cc_t *cc,
                                      const uct_uccl_cc_ack_t *ack)
{
    uct_uccl_cc_timely_t *t = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_timely_t);
    uint64_t rtt, remote;

    if (ack->rtt_ns == 0) {
        return;
    }
    rtt    = uct_uccl_cc_min_u64(ack->rtt_ns, UCT_UCCL_CC_MAX_DELAY_NS);
    remote = uct_uccl_cc_min_u64(ack->remote_delay_ns, rtt - 1);
    uct_uccl_cc_srtt_update(&t->srtt, &t->have_rtt, (double)rtt);
    rtt   -= remote;
    if ((t->min_rtt_seen == 0) || (rtt < t->min_rtt_seen)) {
        t->min_rtt_seen = rtt;
    }
    uct_uccl_cc_timely_update(t, (double)rtt, ack->now);
    uct_uccl_cc_timely_apply(cc);
}

static void uct_uccl_cc_timely_on_timeout(uct_uccl_cc_t *cc, uint64_t now)
{
    uct_uccl_cc_timely_t *t = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_timely_t);

    uct_uccl_cc_timely_cut(t, t->max_mdf);
    t->rate = uct_uccl_cc_clamp(t->rate, t->min_rate, t->max_rate);
    uct_uccl_cc_timely_apply(cc);
}

static void uct_uccl_cc_timely_query(const uct_uccl_cc_t *cc,
                                     uct_uccl_cc_stats_t *stats)
{
    const uct_uccl_cc_timely_t *t = UCT_UCCL_CC_CPRIV(cc,
                                                      uct_uccl_cc_timely_t);

    stats->rate_bps   = (uint64_t)t->rate;
    stats->srtt_ns    = (uint64_t)t->srtt;
    stats->min_rtt_ns = (uint64_t)t->min_rtt_seen;
    stats->pacing_ns  = (uint64_t)(t->chunk * 8e9 / t->rate);
    stats->increases  = t->increases;
    stats->decreases  = t->decreases;
}

const uct_uccl_cc_ops_t uct_uccl_cc_timely_ops = {
    .name       = "timely",
    .desc       = "Timely: rate from the RTT gradient between T_low and "
                  "T_high, paced, window = rate x RTT",
    .priv_size  = sizeof(uct_uccl_cc_timely_t),
    .init       = uct_uccl_cc_timely_init,
    .on_send    = uct_uccl_cc_timely_on_send,
    .on_ack     = uct_uccl_cc_timely_on_ack,
    .on_timeout = uct_uccl_cc_timely_on_timeout,
    .query      = uct_uccl_cc_timely_query,
};

/*
 * Swift (Kumar et al., SIGCOMM 2020): a window in bytes driven by delay.
 *
 * Two windows, the effective one their minimum: the fabric window reacts to
 * the fabric delay (the RTT less the time the data waited in the receiver,
 * when the ACK reports it), the endpoint window to that receiver time.
 * Each ACK below its target grows a window by ai packets per RTT (ai * MSS
 * * acked / cwnd, so a window's worth of ACKs adds ai packets); above it,
 * the window shrinks by beta * (delay - target) / delay, never by more
 * than max_mdf, and at most once per RTT: the gate opens an RTT after the
 * last decrease and every decrease resets it. The fabric target grows with
 * the number of hops and, for small windows, by flow scaling
 * (alpha / sqrt(cwnd in packets) + beta, within [0, fs_range]), so that
 * many flows sharing a link settle on a fair share instead of all
 * starving. A fast retransmit decreases by loss_mdf (once per RTT), a
 * timeout by max_mdf, and retx_reset timeouts in a row drop to the
 * minimum window. A window smaller than one chunk cannot be sent as a
 * fraction, so it is paced instead: one chunk per RTT * chunk / cwnd.
 */
#include "uccl_cc_int.h"


typedef struct uct_uccl_cc_swift {
    /* parameters */
    double   mss;
    double   ai;
    double   beta;
    double   max_mdf;
    double   loss_mdf;         /* <= 0: losses do not decrease */
    double   fs_alpha;         /* ns * sqrt(packets) */
    double   fs_beta;          /* ns */
    double   fs_range;         /* ns */
    double   base_target;      /* ns, with the per-hop term */
    double   host_target;      /* ns */
    double   min_cwnd;
    double   max_cwnd;
    double   pace_below;       /* pace while the window is under this */
    uint32_t retx_reset;
    /* state */
    double   fcwnd;            /* fabric window, bytes */
    double   ecwnd;            /* endpoint window, bytes */
    double   srtt;             /* end-to-end RTT: the time scale */
    double   delay;            /* last fabric delay */
    double   min_rtt;
    double   target;           /* last fabric target */
    uint64_t t_last_decrease;
    int      have_rtt;
    uint32_t retx_cnt;
    uint64_t increases;
    uint64_t decreases;
} uct_uccl_cc_swift_t;


static double uct_uccl_cc_swift_cwnd(const uct_uccl_cc_swift_t *s)
{
    return (s->fcwnd < s->ecwnd) ? s->fcwnd : s->ecwnd;
}

/* flow scaling: more delay allowed to small windows, none to large ones */
static double uct_uccl_cc_swift_target(const uct_uccl_cc_swift_t *s)
{
    double pkts = s->fcwnd / s->mss;
    double fs   = s->fs_alpha / uct_uccl_cc_sqrt(pkts) + s->fs_beta;

    return s->base_target + uct_uccl_cc_clamp(fs, 0, s->fs_range);
}

static int uct_uccl_cc_swift_can_decrease(const uct_uccl_cc_swift_t *s,
                                          uint64_t now)
{
    return (now >= s->t_last_decrease) &&
           ((double)(now - s->t_last_decrease) >= s->srtt);
}

/* One window's AIMD step for one ACK (delay and target in ns) */
static double uct_uccl_cc_swift_aimd(const uct_uccl_cc_swift_t *s, double w,
                                     double delay, double target,
                                     double acked, int can_decrease)
{
    double f;

    if (delay < target) {
        return w + s->ai * s->mss * acked / ((w > s->mss) ? w : s->mss);
    }
    if (!can_decrease) {
        return w;
    }
    f = 1.0 - s->beta * (delay - target) / delay;
    return w * ((f > 1.0 - s->max_mdf) ? f : 1.0 - s->max_mdf);
}

/* Clamp, count, re-arm the decrease gate on a decrease, publish cwnd */
static void uct_uccl_cc_swift_apply(uct_uccl_cc_t *cc, double prev,
                                    uint64_t now)
{
    uct_uccl_cc_swift_t *s = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_swift_t);
    double cwnd;

    s->fcwnd = uct_uccl_cc_clamp(s->fcwnd, s->min_cwnd, s->max_cwnd);
    s->ecwnd = uct_uccl_cc_clamp(s->ecwnd, s->min_cwnd, s->max_cwnd);
    cwnd     = uct_uccl_cc_swift_cwnd(s);
    if (cwnd < prev) {
        s->t_last_decrease = now;
        ++s->decreases;
    } else if (cwnd > prev) {
        ++s->increases;
    }
    cc->cwnd_bytes = uct_uccl_cc_bytes(cwnd);
    if (cwnd >= s->pace_below) {
        cc->next_send_ns = 0;
    }
}

static ucs_status_t uct_uccl_cc_swift_init(uct_uccl_cc_t *cc,
                                           const uct_uccl_cc_params_t *params)
{
    const uct_uccl_cc_swift_params_t *p = &params->swift;
    uct_uccl_cc_swift_t *s;
    double fs_min, fs_max, hop;

    s = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_swift_t);
    memset(s, 0, sizeof(*s));
    s->mss         = uct_uccl_cc_mss(params);
    s->ai          = uct_uccl_cc_def_dbl(p->ai, UCT_UCCL_CC_SWIFT_AI);
    s->beta        = uct_uccl_cc_def_dbl(p->beta, UCT_UCCL_CC_SWIFT_BETA);
    s->max_mdf     = uct_uccl_cc_def_dbl(p->max_mdf,
                                         UCT_UCCL_CC_SWIFT_MAX_MDF);
    s->loss_mdf    = uct_uccl_cc_def_dbl(p->loss_mdf, s->max_mdf);
    s->fs_range    = uct_uccl_cc_def_u64(p->fs_range_ns,
                                         UCT_UCCL_CC_SWIFT_FS_RANGE_NS);
    fs_min         = uct_uccl_cc_def_dbl(p->fs_min_cwnd,
                                         UCT_UCCL_CC_SWIFT_FS_MIN_CWND);
    fs_max         = uct_uccl_cc_def_dbl(p->fs_max_cwnd,
                                         UCT_UCCL_CC_SWIFT_FS_MAX_CWND);
    hop            = uct_uccl_cc_def_u64(p->hop_scale_ns,
                                         UCT_UCCL_CC_SWIFT_HOP_SCALE_NS);
    s->base_target = uct_uccl_cc_def_u64(p->base_target_ns,
                                         UCT_UCCL_CC_SWIFT_BASE_TARGET_NS) +
                     hop * params->hops;
    s->host_target = uct_uccl_cc_def_u64(p->host_target_ns,
                                         UCT_UCCL_CC_SWIFT_HOST_TARGET_NS);
    s->retx_reset  = (p->retx_reset != 0) ? p->retx_reset :
                                            UCT_UCCL_CC_SWIFT_RETX_RESET;
    s->min_cwnd    = uct_uccl_cc_def_u64(params->min_window_bytes,
                                         UCT_UCCL_CC_SWIFT_MIN_WINDOW);
    s->max_cwnd    = uct_uccl_cc_def_u64(params->max_window_bytes,
                                         UCT_UCCL_CC_DEF_MAX_WINDOW);
    s->pace_below  = uct_uccl_cc_chunk(params);

    if (!(s->ai > 0) || !(s->beta > 0) || !(s->max_mdf > 0) ||
        !(s->max_mdf < 1) || !(s->loss_mdf < 1) || !(fs_min > 0) ||
        !(fs_min < fs_max) || (s->min_cwnd > s->max_cwnd)) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* the flow scaling term is fs_range at fs_min packets, 0 at fs_max */
    s->fs_alpha = s->fs_range / (1.0 / uct_uccl_cc_sqrt(fs_min) -
                                 1.0 / uct_uccl_cc_sqrt(fs_max));
    s->fs_beta  = -s->fs_alpha / uct_uccl_cc_sqrt(fs_max);

    s->fcwnd   = uct_uccl_cc_clamp(uct_uccl_cc_init_window(
                                       params, UCT_UCCL_CC_SWIFT_INIT_WINDOW),
                                   s->min_cwnd, s->max_cwnd);
    s->ecwnd   = s->max_cwnd;
    s->srtt    = uct_uccl_cc_def_u64(params->base_rtt_ns,
                                     UCT_UCCL_CC_DEF_BASE_RTT_NS);
    s->target  = uct_uccl_cc_swift_target(s);
    s->t_last_decrease = 0;

    cc->cwnd_bytes   = uct_uccl_cc_bytes(s->fcwnd);
    cc->next_send_ns = 0;
    return UCS_OK;
}

static void uct_uccl_cc_swift_on_send(uct_uccl_cc_t *cc, uint32_t bytes,
                                      uint64_t now)
{
    uct_uccl_cc_swift_t *s = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_swift_t);
    double cwnd            = uct_uccl_cc_swift_cwnd(s);

    if (cwnd < s->pace_below) {
        uct_uccl_cc_pace(cc, s->srtt * bytes / cwnd, now);
    } else {
        cc->next_send_ns = 0;
    }
}

static void uct_uccl_cc_swift_on_ack(uct_uccl_cc_t *cc,
                                     const uct_uccl_cc_ack_t *ack)
{
    uct_uccl_cc_swift_t *s = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_swift_t);
    double prev            = uct_uccl_cc_swift_cwnd(s);
    uint64_t rtt, remote;
    int can_decrease;

    s->retx_cnt = 0;
    if ((ack->rtt_ns == 0) || (ack->acked_bytes == 0)) {
        return; /* no delay signal: nothing to react to */
    }

    rtt    = uct_uccl_cc_min_u64(ack->rtt_ns, UCT_UCCL_CC_MAX_DELAY_NS);
    remote = uct_uccl_cc_min_u64(ack->remote_delay_ns, rtt);
    uct_uccl_cc_srtt_update(&s->srtt, &s->have_rtt, (double)rtt);
    s->delay   = (double)(rtt - remote);
    s->min_rtt = ((s->min_rtt == 0) || (rtt < s->min_rtt)) ? rtt : s->min_rtt;

    can_decrease = uct_uccl_cc_swift_can_decrease(s, ack->now);
    s->target    = uct_uccl_cc_swift_target(s);
    s->fcwnd     = uct_uccl_cc_swift_aimd(s, s->fcwnd, s->delay, s->target,
                                          (double)ack->acked_bytes,
                                          can_decrease);
    if (ack->remote_delay_ns != 0) {
        s->ecwnd = uct_uccl_cc_swift_aimd(s, s->ecwnd, (double)remote,
                                          s->host_target,
                                          (double)ack->acked_bytes,
                                          can_decrease);
    }
    uct_uccl_cc_swift_apply(cc, prev, ack->now);
}

static void uct_uccl_cc_swift_on_loss(uct_uccl_cc_t *cc, uint64_t lost_bytes,
                                      uint64_t now)
{
    uct_uccl_cc_swift_t *s = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_swift_t);
    double prev            = uct_uccl_cc_swift_cwnd(s);

    s->retx_cnt = 0;
    if ((s->loss_mdf > 0) && uct_uccl_cc_swift_can_decrease(s, now)) {
        s->fcwnd = prev * (1.0 - s->loss_mdf);
        uct_uccl_cc_swift_apply(cc, prev, now);
    }
}

static void uct_uccl_cc_swift_on_timeout(uct_uccl_cc_t *cc, uint64_t now)
{
    uct_uccl_cc_swift_t *s = UCT_UCCL_CC_PRIV(cc, uct_uccl_cc_swift_t);
    double prev            = uct_uccl_cc_swift_cwnd(s);

    if (++s->retx_cnt >= s->retx_reset) {
        s->fcwnd = s->min_cwnd;
    } else if (uct_uccl_cc_swift_can_decrease(s, now)) {
        s->fcwnd = prev * (1.0 - s->max_mdf);
    } else {
        return;
    }
    uct_uccl_cc_swift_apply(cc, prev, now);
}

static void uct_uccl_cc_swift_query(const uct_uccl_cc_t *cc,
                                    uct_uccl_cc_stats_t *stats)
{
    const uct_uccl_cc_swift_t *s = UCT_UCCL_CC_CPRIV(cc, uct_uccl_cc_swift_t);
    double cwnd                  = uct_uccl_cc_swift_cwnd(s);

    stats->rate_bps   = (uint64_t)(cwnd * 8e9 / s->srtt);
    stats->srtt_ns    = (uint64_t)s->srtt;
    stats->min_rtt_ns = (uint64_t)s->min_rtt;
    stats->target_ns  = (uint64_t)s->target;
    stats->pacing_ns  = (cwnd < s->pace_below) ?
                        (uint64_t)(s->srtt * s->pace_below / cwnd) : 0;
    stats->increases  = s->increases;
    stats->decreases  = s->decreases;
}

const uct_uccl_cc_ops_t uct_uccl_cc_swift_ops = {
    .name       = "swift",
    .desc       = "Swift: delay target with flow and hop scaling, AIMD "
                  "window, paced below one chunk",
    .priv_size  = sizeof(uct_uccl_cc_swift_t),
    .init       = uct_uccl_cc_swift_init,
    .on_send    = uct_uccl_cc_swift_on_send,
    .on_ack     = uct_uccl_cc_swift_on_ack,
    .on_loss    = uct_uccl_cc_swift_on_loss,
    .on_timeout = uct_uccl_cc_swift_on_timeout,
    .query      = uct_uccl_cc_swift_query,
};

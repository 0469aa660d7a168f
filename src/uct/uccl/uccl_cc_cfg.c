/*
 * UCX_UCCL_CC*: the congestion control's variables (see uccl_cc_cfg.h).
 */
#include "uccl_cc_cfg.h"
#include "uccl_def.h"
#include "proto/cc/uccl_cc_def.h"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/time/time.h>
#include <string.h>

#define UCT_UCCL_CC_CFG_FIELD(_f) ucs_offsetof(uct_uccl_cc_config_t, _f)

ucs_config_field_t uct_uccl_cc_config_table[] = {
    {"CC", "eqds",
     "Congestion control algorithm, chosen at run time by name:\n"
     "  fixed  - a constant window of CC_WINDOW bytes, no pacing;\n"
     "  swift  - Swift: a delay target (CC_SWIFT_*), AIMD window, paced when\n"
     "           the window is below one chunk;\n"
     "  timely - Timely: a rate from the RTT gradient (CC_TIMELY_*), paced;\n"
     "  eqds   - EQDS: receiver-driven credit. A sender starts a burst with\n"
     "           CC_EQDS_SPEC speculative bytes and asks the receiver for the\n"
     "           rest (a CREDIT control packet); the receiver's pacer grants\n"
     "           it in quanta, round robin over its senders, at CC_LINK_RATE\n"
     "           (set it to the receiving link's rate); grants ride the ACKs\n"
     "           or go alone (RC, or no ACK due). CC_EQDS_*.\n"
     "Delays are RTT samples of the sender's clock (post to ACK; RC: post\n"
     "to send completion). Paced sends wait on a timer wheel of resolution\n"
     "CC_PACE_RES. Both ends should run the same algorithm: an eqds sender\n"
     "whose peer grants nothing keeps a fixed window of CC_EQDS_SPEC.",
     UCT_UCCL_CC_CFG_FIELD(name), UCS_CONFIG_TYPE_STRING},

    {"CC_WINDOW", "2m",
     "Bytes in flight per connection allowed by the fixed window (and the\n"
     "initial window of swift).",
     UCT_UCCL_CC_CFG_FIELD(window), UCS_CONFIG_TYPE_MEMUNITS},

    {"CC_MIN_WINDOW", "0",
     "Smallest window of an adaptive algorithm, bytes (0: CC_MIN_CHUNKS\n"
     "chunks). Below a chunk swift paces (down to 512 bytes a round trip);\n"
     "where RTT samples are noisy (a loaded CPU) that costs much.",
     UCT_UCCL_CC_CFG_FIELD(min_window), UCS_CONFIG_TYPE_MEMUNITS},

    {"CC_MIN_CHUNKS", "4",
     "The smallest window, in chunks, when CC_MIN_WINDOW is 0: with fewer\n"
     "in flight a sender waits for each ACK in turn (stop and wait), and\n"
     "a rate-based algorithm never reaches its rate. A chunk counts here\n"
     "as 64k at most: every sender of an incast keeps the floor in flight,\n"
     "and RC mode's larger chunks would raise it.",
     UCT_UCCL_CC_CFG_FIELD(min_chunks), UCS_CONFIG_TYPE_UINT},

    {"CC_MAX_WINDOW", "0",
     "Largest window of an adaptive algorithm, bytes (0: 8m).",
     UCT_UCCL_CC_CFG_FIELD(max_window), UCS_CONFIG_TYPE_MEMUNITS},

    {"CC_LINK_RATE", "auto",
     "Line rate the algorithms assume (timely starts at it and never\n"
     "exceeds it; eqds grants at it), e.g. 25000000000bps; UCX's prefixes\n"
     "are binary (1Gbps is 2^30 bit/s). auto: the port's data rate (active\n"
     "speed x width), 100 Gbit/s if it is unknown.",
     UCT_UCCL_CC_CFG_FIELD(link_rate), UCS_CONFIG_TYPE_BW},

    {"CC_BASE_RTT", "0",
     "Unloaded round-trip time (0: unknown; swift and timely start from\n"
     "10us and learn it).",
     UCT_UCCL_CC_CFG_FIELD(base_rtt), UCS_CONFIG_TYPE_TIME},

    {"CC_MSS", "0",
     "Packet size the algorithms count windows in (0: the path MTU).",
     UCT_UCCL_CC_CFG_FIELD(mss), UCS_CONFIG_TYPE_MEMUNITS},

    {"CC_HOPS", "0",
     "Switch hops to the peers, for swift's per-hop target (0: unknown).",
     UCT_UCCL_CC_CFG_FIELD(hops), UCS_CONFIG_TYPE_UINT},

    {"CC_PACE_RES", "2us",
     "Resolution of the timer wheel that releases paced sends: a send is\n"
     "held back by at least this much and at most this much too long.",
     UCT_UCCL_CC_CFG_FIELD(pace_res), UCS_CONFIG_TYPE_TIME},

    {"CC_SWIFT_TARGET", "0",
     "swift: fabric delay target before scaling (0: 50us).",
     UCT_UCCL_CC_CFG_FIELD(swift.target), UCS_CONFIG_TYPE_TIME},

    {"CC_SWIFT_HOP_SCALE", "0",
     "swift: target added per hop (CC_HOPS) (0: 1us).",
     UCT_UCCL_CC_CFG_FIELD(swift.hop_scale), UCS_CONFIG_TYPE_TIME},

    {"CC_SWIFT_FS_RANGE", "0",
     "swift: most that flow scaling adds to the target (0: 250us).",
     UCT_UCCL_CC_CFG_FIELD(swift.fs_range), UCS_CONFIG_TYPE_TIME},

    {"CC_SWIFT_FS_MIN_CWND", "0",
     "swift: window, in packets, given all of FS_RANGE (0: 0.1).",
     UCT_UCCL_CC_CFG_FIELD(swift.fs_min_cwnd), UCS_CONFIG_TYPE_DOUBLE},

    {"CC_SWIFT_FS_MAX_CWND", "0",
     "swift: window, in packets, given none of FS_RANGE (0: 100).",
     UCT_UCCL_CC_CFG_FIELD(swift.fs_max_cwnd), UCS_CONFIG_TYPE_DOUBLE},

    {"CC_SWIFT_AI", "0",
     "swift: additive increase, packets per RTT (0: 1).",
     UCT_UCCL_CC_CFG_FIELD(swift.ai), UCS_CONFIG_TYPE_DOUBLE},

    {"CC_SWIFT_BETA", "0",
     "swift: decrease gain on (delay - target) / delay (0: 0.8).",
     UCT_UCCL_CC_CFG_FIELD(swift.beta), UCS_CONFIG_TYPE_DOUBLE},

    {"CC_SWIFT_MAX_MDF", "0",
     "swift: largest decrease per RTT, a fraction (0: 0.5).",
     UCT_UCCL_CC_CFG_FIELD(swift.max_mdf), UCS_CONFIG_TYPE_DOUBLE},

    {"CC_SWIFT_LOSS_MDF", "0",
     "swift: decrease on a fast retransmit, at most once per RTT (0:\n"
     "MAX_MDF; negative: losses do not decrease the window).",
     UCT_UCCL_CC_CFG_FIELD(swift.loss_mdf), UCS_CONFIG_TYPE_DOUBLE},

    {"CC_SWIFT_HOST_TARGET", "0",
     "swift: endpoint delay target (0: 100us).",
     UCT_UCCL_CC_CFG_FIELD(swift.host_target), UCS_CONFIG_TYPE_TIME},

    {"CC_SWIFT_RETX_RESET", "0",
     "swift: retransmission timeouts in a row that reset the window to its\n"
     "minimum (0: 1).",
     UCT_UCCL_CC_CFG_FIELD(swift.retx_reset), UCS_CONFIG_TYPE_UINT},

    {"CC_TIMELY_T_LOW", "0",
     "timely: below this RTT the rate grows additively (0: 50us).",
     UCT_UCCL_CC_CFG_FIELD(timely.t_low), UCS_CONFIG_TYPE_TIME},

    {"CC_TIMELY_T_HIGH", "0",
     "timely: above this RTT the rate falls by the excess (0: 500us).",
     UCT_UCCL_CC_CFG_FIELD(timely.t_high), UCS_CONFIG_TYPE_TIME},

    {"CC_TIMELY_MIN_RTT", "0",
     "timely: the scale of the RTT gradient (0: CC_BASE_RTT, else the least\n"
     "RTT seen).",
     UCT_UCCL_CC_CFG_FIELD(timely.min_rtt), UCS_CONFIG_TYPE_TIME},

    {"CC_TIMELY_AI_RATE", "auto",
     "timely: additive step of the rate (auto: CC_LINK_RATE / 1000).",
     UCT_UCCL_CC_CFG_FIELD(timely.ai_rate), UCS_CONFIG_TYPE_BW},

    {"CC_TIMELY_MIN_RATE", "auto",
     "timely: lowest rate (auto: 100Mbps).",
     UCT_UCCL_CC_CFG_FIELD(timely.min_rate), UCS_CONFIG_TYPE_BW},

    {"CC_TIMELY_BETA", "0",
     "timely: decrease gain (0: 0.8).",
     UCT_UCCL_CC_CFG_FIELD(timely.beta), UCS_CONFIG_TYPE_DOUBLE},

    {"CC_TIMELY_EWMA", "0",
     "timely: weight of a new RTT difference in the gradient (0: 0.02).",
     UCT_UCCL_CC_CFG_FIELD(timely.ewma), UCS_CONFIG_TYPE_DOUBLE},

    {"CC_TIMELY_MAX_MDF", "0",
     "timely: largest decrease per update, a fraction (0: 0.5).",
     UCT_UCCL_CC_CFG_FIELD(timely.max_mdf), UCS_CONFIG_TYPE_DOUBLE},

    {"CC_TIMELY_WINDOW_GAIN", "0",
     "timely: the window beside the pacing is this times rate x RTT (0: 2).",
     UCT_UCCL_CC_CFG_FIELD(timely.window_gain), UCS_CONFIG_TYPE_DOUBLE},

    {"CC_TIMELY_HAI_THRESH", "0",
     "timely: increases in a row before hyperactive increase (0: 5;\n"
     "negative: never).",
     UCT_UCCL_CC_CFG_FIELD(timely.hai_thresh), UCS_CONFIG_TYPE_INT},

    {"CC_TIMELY_HAI_MULT", "0",
     "timely: the hyperactive step, in additive steps (0: 5).",
     UCT_UCCL_CC_CFG_FIELD(timely.hai_mult), UCS_CONFIG_TYPE_UINT},

    {"CC_EQDS_SPEC", "0",
     "eqds: speculative credit of a sender's burst: sent before any grant\n"
     "(0: one BDP, CC_BASE_RTT x CC_LINK_RATE, or 64k when CC_BASE_RTT is\n"
     "0, and at least one chunk). A value below a chunk makes bulk data\n"
     "wait for its grants: only messages that small go unscheduled.",
     UCT_UCCL_CC_CFG_FIELD(eqds.spec), UCS_CONFIG_TYPE_MEMUNITS},

    {"CC_EQDS_CREDIT_CAP", "0",
     "eqds: most credit a sender holds; grants beyond it are dropped (0:\n"
     "4m, at least twice CC_EQDS_SPEC; below 2g).",
     UCT_UCCL_CC_CFG_FIELD(eqds.credit_cap), UCS_CONFIG_TYPE_MEMUNITS},

    {"CC_EQDS_DEMAND_CAP", "0",
     "eqds: most a sender asks for beyond what it sent (0: 16m; below 2g).",
     UCT_UCCL_CC_CFG_FIELD(eqds.demand_cap), UCS_CONFIG_TYPE_MEMUNITS},

    {"CC_EQDS_ALONE", "0",
     "eqds: speculative credit of a sender that drained while its receiver\n"
     "serves no other sender (the receiver says so in its grants): its next\n"
     "messages up to this size go without waiting for a grant, as under a\n"
     "window, and a receiver whose CPU is busy elsewhere does not hold them\n"
     "up. A grant saying that other senders wait takes back what is left\n"
     "beyond CC_EQDS_SPEC (0: 2m; at least CC_EQDS_SPEC, at most the credit\n"
     "cap).",
     UCT_UCCL_CC_CFG_FIELD(eqds.alone), UCS_CONFIG_TYPE_MEMUNITS},

    {"CC_EQDS_QUANTUM", "0",
     "eqds: bytes the receiver's pacer grants a sender per turn (0: one\n"
     "chunk; at most 1m).",
     UCT_UCCL_CC_CFG_FIELD(eqds.quantum), UCS_CONFIG_TYPE_MEMUNITS},

    {"CC_EQDS_BURST", "0",
     "eqds: most the receiver's pacer grants at once after it could not\n"
     "run for a while (its user busy, the process descheduled): budget it\n"
     "missed beyond this is lost, so as not to burst into the receiver's\n"
     "buffer (0: two quanta).",
     UCT_UCCL_CC_CFG_FIELD(eqds.burst), UCS_CONFIG_TYPE_MEMUNITS},

    {"CC_EQDS_INFLIGHT", "0",
     "eqds: most bytes the receiver's pacer has granted that did not arrive\n"
     "yet, over all its senders: set it to what the receiving port's buffer\n"
     "holds, and grants that senders use late (busy CPUs) cannot land at\n"
     "once and overflow it. It also caps what is on its way over the whole\n"
     "fabric: where the bottleneck is elsewhere (slow core paths) a small\n"
     "bound leaves it idle (0: no bound; at least one quantum; RC: none).",
     UCT_UCCL_CC_CFG_FIELD(eqds.inflight), UCS_CONFIG_TYPE_MEMUNITS},

    {"CC_EQDS_RATE", "0",
     "eqds: share of CC_LINK_RATE the receiver's pacer grants, in (0, 1]\n"
     "(0: 0.95; grants count payload: the rest carries the headers and the\n"
     "control bytes that arrive ungranted).",
     UCT_UCCL_CC_CFG_FIELD(eqds.rate_frac), UCS_CONFIG_TYPE_DOUBLE},

    {NULL}
};

/* s -> ns; a time of 0 stays 0 (the default) */
static uint64_t uct_uccl_cc_cfg_ns(double sec)
{
    return (sec > 0) ? (uint64_t)(sec * UCS_NSEC_PER_SEC + 0.5) : 0;
}

/* bytes/s -> bits/s; auto (or 0) -> 0 (the default) */
static uint64_t uct_uccl_cc_cfg_bps(double bytes_per_sec)
{
    return (bytes_per_sec > 0) ? (uint64_t)(bytes_per_sec * 8) : 0;
}

/* CC_LINK_RATE in bit/s: the user's, else the port's, else the default */
static uint64_t uct_uccl_cc_cfg_link_bps(const uct_uccl_cc_config_t *config,
                                         uint64_t port_bps)
{
    if (!UCS_CONFIG_BW_IS_AUTO(config->link_rate)) {
        return uct_uccl_cc_cfg_bps(config->link_rate);
    }
    return (port_bps != 0) ? port_bps : UCT_UCCL_CC_DEF_LINK_BPS;
}

static void uct_uccl_cc_cfg_swift(const uct_uccl_cc_config_t *config,
                                  uct_uccl_cc_swift_params_t *p)
{
    p->base_target_ns = uct_uccl_cc_cfg_ns(config->swift.target);
    p->hop_scale_ns   = uct_uccl_cc_cfg_ns(config->swift.hop_scale);
    p->fs_range_ns    = uct_uccl_cc_cfg_ns(config->swift.fs_range);
    p->fs_min_cwnd    = config->swift.fs_min_cwnd;
    p->fs_max_cwnd    = config->swift.fs_max_cwnd;
    p->ai             = config->swift.ai;
    p->beta           = config->swift.beta;
    p->max_mdf        = config->swift.max_mdf;
    p->loss_mdf       = config->swift.loss_mdf;
    p->host_target_ns = uct_uccl_cc_cfg_ns(config->swift.host_target);
    p->retx_reset     = config->swift.retx_reset;
}

static void uct_uccl_cc_cfg_timely(const uct_uccl_cc_config_t *config,
                                   uct_uccl_cc_timely_params_t *p)
{
    p->t_low_ns     = uct_uccl_cc_cfg_ns(config->timely.t_low);
    p->t_high_ns    = uct_uccl_cc_cfg_ns(config->timely.t_high);
    p->min_rtt_ns   = uct_uccl_cc_cfg_ns(config->timely.min_rtt);
    p->ai_bps       = uct_uccl_cc_cfg_bps(config->timely.ai_rate);
    p->min_rate_bps = uct_uccl_cc_cfg_bps(config->timely.min_rate);
    p->beta         = config->timely.beta;
    p->ewma         = config->timely.ewma;
    p->max_mdf      = config->timely.max_mdf;
    p->window_gain  = config->timely.window_gain;
    p->hai_thresh   = config->timely.hai_thresh;
    p->hai_mult     = config->timely.hai_mult;
}

static void uct_uccl_cc_cfg_eqds(const uct_uccl_cc_config_t *config,
                                 uct_uccl_cc_eqds_params_t *p)
{
    p->spec_bytes  = config->eqds.spec;
    p->credit_cap  = config->eqds.credit_cap;
    p->demand_cap  = config->eqds.demand_cap;
    p->alone_bytes = config->eqds.alone;
}

int uct_uccl_cc_config_rx_driven(const uct_uccl_cc_config_t *config)
{
    const uct_uccl_cc_ops_t *ops = uct_uccl_cc_find(config->name);

    return (ops != NULL) && (ops->rx_credit != NULL);
}

ucs_status_t
uct_uccl_cc_config_pacer(const uct_uccl_cc_config_t *config,
                         uint32_t chunk_size, uint64_t port_bps,
                         uct_uccl_cc_eqds_pacer_params_t *params)
{
    uct_uccl_cc_eqds_pacer_t trial;
    ucs_status_t status;

    memset(params, 0, sizeof(*params));
    params->link_bps  = uct_uccl_cc_cfg_link_bps(config, port_bps);
    params->quantum   = (config->eqds.quantum != 0) ?
                        ucs_min(config->eqds.quantum, UINT32_MAX) :
                        ucs_min(chunk_size, UCT_UCCL_CC_EQDS_MAX_QUANTUM);
    params->rate_frac = config->eqds.rate_frac;
    /* a late tick grants at most two quanta at once by default: a burst
     * of grants is a burst of data at the receiver's buffer */
    params->max_burst = (config->eqds.burst != 0) ?
                        ucs_min(config->eqds.burst, UINT32_MAX) :
                        2 * params->quantum;
    params->max_out   = (config->eqds.inflight != 0) ?
                        config->eqds.inflight : UCT_UCCL_CC_EQDS_MAX_OUT_NONE;
    status = uct_uccl_cc_eqds_pacer_init(&trial, params, 0);
    if (status != UCS_OK) {
        ucs_error("uccl: congestion control '%s' refuses its pacer's "
                  "UCX_UCCL_CC_EQDS_QUANTUM %zu, CC_EQDS_BURST %zu, "
                  "CC_EQDS_INFLIGHT %zu or CC_EQDS_RATE %g: %s",
                  config->name, config->eqds.quantum, config->eqds.burst,
                  config->eqds.inflight, config->eqds.rate_frac,
                  ucs_status_string(status));
    }
    return status;
}

ucs_status_t uct_uccl_cc_config_params(const uct_uccl_cc_config_t *config,
                                       uint32_t chunk_size, uint32_t mtu,
                                       uint64_t port_bps,
                                       uct_uccl_cc_params_t *params)
{
    const uct_uccl_cc_ops_t *ops = uct_uccl_cc_find(config->name);
    uct_uccl_cc_t trial;
    ucs_status_t status;

    if (ops == NULL) {
        ucs_error("uccl: unknown congestion control '%s' (UCX_UCCL_CC)",
                  config->name);
        return UCS_ERR_INVALID_PARAM;
    }
    memset(params, 0, sizeof(*params));
    params->window_bytes     = config->window;
    params->chunk_size       = chunk_size;
    params->mtu              = mtu;
    params->num_paths        = 1;
    params->base_rtt_ns      = uct_uccl_cc_cfg_ns(config->base_rtt);
    params->link_bps         = uct_uccl_cc_cfg_link_bps(config, port_bps);
    params->min_window_bytes = (config->min_window != 0) ?
                               config->min_window :
                               (uint64_t)config->min_chunks *
                               ucs_min(chunk_size, UCT_UCCL_CHUNK_UC);
    params->max_window_bytes = config->max_window;
    params->mss              = config->mss;
    params->hops             = config->hops;
    uct_uccl_cc_cfg_swift(config, &params->swift);
    uct_uccl_cc_cfg_timely(config, &params->timely);
    uct_uccl_cc_cfg_eqds(config, &params->eqds);

    /* the algorithm checks its values: once here, not per conn */
    status = uct_uccl_cc_init(&trial, ops->name, params);
    if (status != UCS_OK) {
        ucs_error("uccl: congestion control '%s' refuses its UCX_UCCL_CC_* "
                  "values: %s", ops->name, ucs_status_string(status));
        return status;
    }
    uct_uccl_cc_cleanup(&trial);
    ucs_debug("uccl: congestion control %s, link rate %.1f Gbit/s (%s)",
              ops->name, params->link_bps / 1e9,
              UCS_CONFIG_BW_IS_AUTO(config->link_rate) ?
              ((port_bps != 0) ? "the port's" : "port rate unknown") :
              "UCX_UCCL_CC_LINK_RATE");
    return UCS_OK;
}

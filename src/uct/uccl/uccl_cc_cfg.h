/*
 * The congestion control's UCX_UCCL_CC* variables: their table (nested in
 * the iface's) and their translation into uct_uccl_cc_params_t. A value
 * left 0 takes the algorithm's default (cc/uccl_cc_def.h).
 */
#ifndef UCT_UCCL_CC_CFG_H_
#define UCT_UCCL_CC_CFG_H_

#include "proto/cc/uccl_cc.h"
#include "proto/cc/uccl_cc_eqds_pacer.h"

#include <ucs/config/parser.h>

typedef struct uct_uccl_cc_config {
    char     *name;
    size_t   window;          /* bytes: fixed / initial window */
    size_t   min_window;      /* bytes; 0: min_chunks chunks */
    unsigned min_chunks;
    size_t   max_window;      /* bytes; 0: the algorithm's */
    double   link_rate;       /* bytes/s; UCS_CONFIG_BW_AUTO: default */
    double   base_rtt;        /* s; 0: unknown */
    size_t   mss;             /* bytes; 0: the path MTU */
    unsigned hops;
    double   pace_res;        /* s: the pacing timer wheel's resolution */
    struct {
        double   target;
        double   hop_scale;
        double   fs_range;
        double   fs_min_cwnd;
        double   fs_max_cwnd;
        double   ai;
        double   beta;
        double   max_mdf;
        double   loss_mdf;
        double   host_target;
        unsigned retx_reset;
    } swift;
    struct {
        double   t_low;
        double   t_high;
        double   min_rtt;
        double   ai_rate;     /* bytes/s */
        double   min_rate;    /* bytes/s */
        double   beta;
        double   ewma;
        double   max_mdf;
        double   window_gain;
        int      hai_thresh;
        unsigned hai_mult;
    } timely;
    struct {
        size_t   spec;        /* bytes; 0: one BDP */
        size_t   credit_cap;
        size_t   demand_cap;
        size_t   alone;       /* bytes; 0: 2m */
        size_t   quantum;     /* bytes; 0: one chunk */
        size_t   burst;       /* bytes; 0: two quanta */
        size_t   inflight;    /* bytes granted, not arrived; 0: two quanta */
        double   rate_frac;
    } eqds;
} uct_uccl_cc_config_t;

extern ucs_config_field_t uct_uccl_cc_config_table[];

/* The parameters every conn of the iface starts from (num_paths is the
 * conn's own), checked: UCS_OK when the transport can run the named
 * algorithm with them, else an error, logged. `port_bps` is the port's
 * data rate (0: unknown), the link rate when CC_LINK_RATE is auto. */
ucs_status_t uct_uccl_cc_config_params(const uct_uccl_cc_config_t *config,
                                       uint32_t chunk_size, uint32_t mtu,
                                       uint64_t port_bps,
                                       uct_uccl_cc_params_t *params);

/* Is the named algorithm receiver-driven (its receiver grants credit)? */
int uct_uccl_cc_config_rx_driven(const uct_uccl_cc_config_t *config);

/* The receiver's credit pacer of a receiver-driven algorithm, checked:
 * UCS_OK, or an error, logged */
ucs_status_t
uct_uccl_cc_config_pacer(const uct_uccl_cc_config_t *config,
                         uint32_t chunk_size, uint64_t port_bps,
                         uct_uccl_cc_eqds_pacer_params_t *params);

#endif

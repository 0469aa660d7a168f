/*
 * Congestion control defaults: every parameter's value when the caller
 * leaves it 0 (see uct_uccl_cc_params_t), in one place. The UCX_UCCL_CC_*
 * variables default to these.
 */
#ifndef UCT_UCCL_CC_DEF_H_
#define UCT_UCCL_CC_DEF_H_

/* --- common --- */
#define UCT_UCCL_CC_DEF_MSS            4096u      /* bytes: one packet */
#define UCT_UCCL_CC_DEF_LINK_BPS       100000000000ull /* 100 Gbit/s */
#define UCT_UCCL_CC_DEF_BASE_RTT_NS    10000ull   /* unloaded RTT guess */
#define UCT_UCCL_CC_DEF_MAX_WINDOW     (8ull << 20)
/* weight of a new sample in the smoothed RTT */
#define UCT_UCCL_CC_SRTT_GAIN          0.125
/* A paced sender late by at most this many gaps keeps its schedule */
#define UCT_UCCL_CC_PACE_CATCHUP       1
/* no gap or RTT is longer than this (bounds pacing after bad samples) */
#define UCT_UCCL_CC_MAX_DELAY_NS       1000000000ull

/* --- swift (SIGCOMM 2020) --- */
#define UCT_UCCL_CC_SWIFT_BASE_TARGET_NS 50000ull
#define UCT_UCCL_CC_SWIFT_HOP_SCALE_NS   1000ull
#define UCT_UCCL_CC_SWIFT_FS_RANGE_NS    250000ull
#define UCT_UCCL_CC_SWIFT_FS_MIN_CWND    0.1      /* packets */
#define UCT_UCCL_CC_SWIFT_FS_MAX_CWND    100.0    /* packets */
#define UCT_UCCL_CC_SWIFT_AI             1.0      /* packets per RTT */
#define UCT_UCCL_CC_SWIFT_BETA           0.8
#define UCT_UCCL_CC_SWIFT_MAX_MDF        0.5
#define UCT_UCCL_CC_SWIFT_HOST_TARGET_NS 100000ull
#define UCT_UCCL_CC_SWIFT_RETX_RESET     1u
#define UCT_UCCL_CC_SWIFT_MIN_WINDOW     512ull   /* bytes (1/8 packet) */
#define UCT_UCCL_CC_SWIFT_INIT_WINDOW    (1ull << 20)

/* --- timely (SIGCOMM 2015, and its authors' published rate code) --- */
#define UCT_UCCL_CC_TIMELY_T_LOW_NS      50000ull
#define UCT_UCCL_CC_TIMELY_T_HIGH_NS     500000ull
#define UCT_UCCL_CC_TIMELY_AI_DIV        1000u    /* step = link / this */
#define UCT_UCCL_CC_TIMELY_MIN_RATE_BPS  100000000ull /* 100 Mbit/s */
#define UCT_UCCL_CC_TIMELY_BETA          0.8
#define UCT_UCCL_CC_TIMELY_EWMA          0.02
#define UCT_UCCL_CC_TIMELY_MAX_MDF       0.5
#define UCT_UCCL_CC_TIMELY_WINDOW_GAIN   2.0
#define UCT_UCCL_CC_TIMELY_HAI_THRESH    5
#define UCT_UCCL_CC_TIMELY_HAI_MULT      5u
#define UCT_UCCL_CC_TIMELY_MIN_RTT_NS    1000ull  /* floor of the scale */
#define UCT_UCCL_CC_TIMELY_MIN_WINDOW    4096ull

/* --- eqds (NSDI 2022) --- */
#define UCT_UCCL_CC_EQDS_SPEC_BYTES      (64ull << 10) /* BDP unknown */
#define UCT_UCCL_CC_EQDS_CREDIT_CAP      (4ull << 20)
#define UCT_UCCL_CC_EQDS_DEMAND_CAP      (16ull << 20)
/* speculative credit of a drained sender once its peer grants: small
 * messages go at once, a chunk waits for its grant (the receiver pulls:
 * a burst it did not schedule lands on top of the grants it counts) */
#define UCT_UCCL_CC_EQDS_RESPEC_BYTES    (8ull << 10)
/* ... and while its receiver's pacer serves no other sender: a window,
 * fixed's, so that the next messages wait for no grant from a receiver
 * whose CPU may be elsewhere (bounded by the credit cap) */
#define UCT_UCCL_CC_EQDS_ALONE_BYTES     (2ull << 20)
/* the pacer, per receiving iface */
#define UCT_UCCL_CC_EQDS_QUANTUM         65536u   /* bytes per grant: a chunk */
#define UCT_UCCL_CC_EQDS_MAX_BURST       (2u * UCT_UCCL_CC_EQDS_QUANTUM)
/* of the link (grants count payload): the rest carries the packets'
 * headers and the control bytes that arrive without a grant, so that the
 * receiving port's queue drains */
#define UCT_UCCL_CC_EQDS_RATE_FRAC       0.95
#define UCT_UCCL_CC_EQDS_MAX_QUANTUM     (1u << 20)
/* the pacer's time per byte is kept in 2^-NS_FRAC_BITS ns; a grant rate
 * below MIN_RATE_BPS is refused (its time per byte would not fit) */
#define UCT_UCCL_CC_EQDS_NS_FRAC_BITS    32
#define UCT_UCCL_CC_EQDS_MIN_RATE_BPS    1000ull
/* granted and not arrived, in quanta: two chunks, one arriving while the
 * next is on its way, which a port buffer of two chunks absorbs */
#define UCT_UCCL_CC_EQDS_MAX_OUT_QUANTA  2u
/* grants not arrived for this long are forgotten: a count that went
 * wrong (an arrival the owner did not see, a loss no one reported) must
 * not stop the grants for good */
#define UCT_UCCL_CC_EQDS_OUT_STALE_NS    10000000ull
/* granted credit short of the sender's next send, with no new grant for
 * this long, goes back to the receiver (the receiver's bound holds the
 * rest) */
#define UCT_UCCL_CC_EQDS_HOLD_NS         2000000ull
/* and any granted credit neither spent nor added to for this long (the
 * sender was descheduled, or waits for something else): within half of
 * OUT_STALE_NS, so that grants a full receiver forgets are not sent on
 * top of the ones it grants next */
#define UCT_UCCL_CC_EQDS_EXPIRE_NS       (2 * UCT_UCCL_CC_EQDS_HOLD_NS)
/* a responder sends pulled bytes (a GET's reply) back to back while its
 * link is busy with them for at most this long ahead: a port's buffer
 * holds some tens of microseconds of its link, whatever its rate (at 100
 * Gbit/s a reply of 1 MiB goes at once, at 1 Gbit/s a chunk at a time) */
#define UCT_UCCL_CC_EQDS_PULL_BURST_NS   100000ull
/* pulled bytes not arrived (a GET's reply, which comes however late its
 * sender is) are forgotten only after this long: a peer that never
 * answers must not stop the grants for good */
#define UCT_UCCL_CC_EQDS_PULL_STALE_NS   (10 * UCT_UCCL_CC_EQDS_OUT_STALE_NS)
_Static_assert(2 * UCT_UCCL_CC_EQDS_EXPIRE_NS <= UCT_UCCL_CC_EQDS_OUT_STALE_NS,
               "a sender gives grants back before the receiver forgets");
/* a max_out that never binds (the owner cannot count arrivals) */
#define UCT_UCCL_CC_EQDS_MAX_OUT_NONE    (1ull << 62)
/* unscheduled arrivals push grants back by at most this much */
#define UCT_UCCL_CC_EQDS_MAX_CHARGE_NS   10000000ull

#endif

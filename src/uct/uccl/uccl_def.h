/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Constants of the transport (each named once, with what it is for) and the
 * types every layer names.
 */
#ifndef UCT_UCCL_DEF_H_
#define UCT_UCCL_DEF_H_

#include "proto/uccl_wire.h"

#include <ucs/sys/math.h>
#include <ucs/time/time.h>

#define UCT_UCCL_GRH_LEN          40
#define UCT_UCCL_GRH_SGID         8      /* source GID offset in a GRH */
#define UCT_UCCL_CTL_BUF_SIZE     (UCT_UCCL_WIRE_CTL_MAX + UCT_UCCL_GRH_LEN)
#define UCT_UCCL_CTL_RX_DEPTH     128
#define UCT_UCCL_CTL_TX_DEPTH     64
#define UCT_UCCL_SRQ_BATCH        32     /* SRQ WQEs per chained post */
#define UCT_UCCL_CQ_BATCH         32     /* completions per poll */
#define UCT_UCCL_QPN_CACHE        64     /* QPN look-up slots (power of 2) */
#define UCT_UCCL_SEND_HDR_MAX     48     /* largest SEND header */
#define UCT_UCCL_INLINE_MAX       128    /* bytes a data WR carries inline
                                            (asked of the device) */
#define UCT_UCCL_TX_UNSIGNALED_MAX 16    /* inline AMs a path posts without
                                            a CQE, then one asks for one */
#define UCT_UCCL_MAX_ZCOPY        (1ul << 30) /* PUT/GET, cut into chunks */
#define UCT_UCCL_GET_MIN_ZCOPY    (64ul * UCS_KBYTE) /* iface_query */
/* CHUNK_SIZE=auto: a UC chunk is what the sender resends alone after a
 * loss, into a receive buffer of the peer's that it must fit; an RC chunk
 * is one WRITE or READ that the NIC recovers, never a SEND, and a larger
 * one costs fewer work requests and completions per message */
#define UCT_UCCL_CHUNK_UC         (64ul * UCS_KBYTE)
#define UCT_UCCL_CHUNK_RC         (256ul * UCS_KBYTE)
#define UCT_UCCL_TX_GROW_MIN      32     /* send buffers per pool growth */
#define UCT_UCCL_HDR_GROW         256    /* zcopy descriptors per growth */
#define UCT_UCCL_CLOSE_WAIT_NS    10000000ull /* closing: control buffers */
#define UCT_UCCL_RX_ALIGN         8      /* AM payload, by default */
#define UCT_UCCL_LATENCY          1e-6   /* s: what iface_query reports */
#define UCT_UCCL_TIMER_NS         50000ull /* conn timers (retries, loss
                                            repair, keepalive) run this
                                            often */
#define UCT_UCCL_TIMER_LINGER     20     /* ticks a conn stays on them
                                            idle: one that pauses between
                                            messages is not taken off and
                                            put back each time */
#define UCT_UCCL_WAKE_AWAY_NS     100000ull /* a user out of the transport
                                            for longer than this has its
                                            peers' requests wake the
                                            async thread */
#define UCT_UCCL_IDLE_WHEEL_RES   1e-3   /* s: how late an idle passive
                                            conn's deadline may be seen */
#define UCT_UCCL_CQE_TS_SLACK_NS  50000ull /* a completion timestamp that
                                            maps later than the poll that
                                            found it by more than the
                                            mapping's error (a sample's
                                            spread, the rate error) is
                                            wrong, not early */

/* Messages up to this size keep their order on one path (paths reorder):
 * they move to another only once everything on the current one completed,
 * and not before they had it for PATH_STICKY_NS: one QP's state stays warm
 * in the device for a stream of them, and the scoreboard still steers them
 * off a slow path */
#define UCT_UCCL_PATH_STICKY_MAX  8192
#define UCT_UCCL_PATH_STICKY_NS   1000000
/* A chunk longer than this is bulk: a bulk chain ends with a tail mark, and
 * a bulk burst joins the chain of resends */
#define UCT_UCCL_BULK_MIN         8192

/* The transmit scheduler (uccl_sched.c): a conn woken for room at its
 * peer iface claims its share of the window beside the conns still
 * waiting, but at least this many chunks, a chain worth a doorbell and a
 * completion; the turn lasts until it has them */
#define UCT_UCCL_DEST_QUOTA_MIN   16
/* Bytes a chunk counts against a turn's DRR_QUANTUM besides its payload
 * (its headers and work request): a turn of small chunks ends too */
#define UCT_UCCL_DRR_CHUNK_COST   64

/* Loss repair (uccl_repair.c) */
#define UCT_UCCL_RTO_RESEND_MAX   4      /* chunks resent per timeout */
#define UCT_UCCL_TAIL_PROBES_MAX  4      /* per stall; then only the RTO */
#define UCT_UCCL_LOSSY_RTOS       16     /* after a resend of a loss the
                                            ACKs showed, every chain is
                                            tail-marked for as many RTOs */
#define UCT_UCCL_FAST_RETX_MAX    64     /* holes resent per ACK */

/* Receiver-driven congestion control (uccl_credit.c) */
#define UCT_UCCL_CREDIT_REQ_GAP_NS    10000ull   /* a conn's requests at
                                                    most this often */
#define UCT_UCCL_CREDIT_RETRY_MIN_NS  200000ull  /* a sender short of credit
                                                    and unanswered asks
                                                    again after this, */
#define UCT_UCCL_CREDIT_RETRY_MAX_NS  10000000ull /* twice as long each
                                                    time, up to this */
#define UCT_UCCL_CREDIT_TICK_MAX      32     /* senders granted per tick */
#define UCT_UCCL_CREDIT_CTL_RESERVE   16     /* control buffers a request
                                                leaves to ACKs */

/* Path scoreboard of a new conn (uccl_path.h) */
#define UCT_UCCL_PATH_INIT_RTT_NS     50000ull
#define UCT_UCCL_PATH_LOSS_PENALTY_NS 100000ull
#define UCT_UCCL_PATH_MAX_PENALTY_NS  10000000ull
#define UCT_UCCL_PATH_HALFLIFE_SHIFT  24     /* ~17 ms */
#define UCT_UCCL_PATH_EXPLORE_SHIFT   4
/* RC data QPs: the NIC resends what is unacknowledged after its ACK
 * timeout (UCX_UCCL_RC_ACK_TIMEOUT: 4.096 us << the verbs' `timeout`, which
 * is 1..31), RETRY_CNT times, then fails the QP (RETRY_EXC_ERR): a path down
 * for the retry time (RETRY_CNT + 1 ACK timeouts) fails its QPs, and the
 * conn goes on on the other paths (uccl_repair.c) */
#define UCT_UCCL_RC_TIMEOUT_UNIT_NS   4096ull
#define UCT_UCCL_RC_TIMEOUT_MIN       1
#define UCT_UCCL_RC_TIMEOUT_MAX       31
#define UCT_UCCL_RC_RETRY_CNT         7
/* the stall floor by default (RC_STALL_MIN=auto): this many ACK timeouts,
 * so the NIC's resends of a lost packet complete before the stall rule
 * takes the path for stalled, and a queue that deepens within a window,
 * faster than the completion times' RTO follows, is not taken for one */
/* ... but no more than the default ACK timeout: a longer wait delays a
 * path's reset and does not spare one */
#define UCT_UCCL_RC_STALL_AUTO_MAX_NS (UCT_UCCL_RC_TIMEOUT_UNIT_NS << 14)
#define UCT_UCCL_RC_STALL_ACK_MULT    6
/* RC stall rule (uct_uccl_path_stalled_rc): WRs whose data goes one way
 * are measured apart; one out this many times their completion times' RTO
 * (srtt + 4 rttvar) stalled: queues grow faster than the estimate follows.
 * That RTO starts at INIT and is capped at MAX, not at the NIC's ACK
 * timeout and retry time: a conn's first WRs may wait behind a queue that
 * other conns built and no sample has shown yet (an incast's receiver
 * READs from every sender at once), and behind a queue deeper than a
 * short ACK timeout WRs complete late but in turn */
#define UCT_UCCL_RC_STALL_LATE_MULT   2
#define UCT_UCCL_RC_STALL_RTO_INIT_NS 32000000ull
#define UCT_UCCL_RC_STALL_RTO_MAX_NS  500000000ull
enum {
    UCT_UCCL_RC_DIR_OUT, /* SEND, WRITE: data to the peer */
    UCT_UCCL_RC_DIR_IN,  /* READ: data from the peer */
    UCT_UCCL_RC_DIRS
};
/* RC path reset (uccl_reset.c): unanswered this long, the asker stops its
 * old QP itself when that is safe (its control route may be down too) */
#define UCT_UCCL_RESET_ALONE_NS       10000000ull

/* Path health (uccl_path.h): a path down loses every chunk of its bursts,
 * a path merely lossy rarely loses this many in a row with no ACK between */
#define UCT_UCCL_PATH_PARK_LOSSES     4
#define UCT_UCCL_PATH_PARK_DIV        2      /* at most 1/2 of the paths */
/* a probe of a path still down loses its chunk: the first goes after 1 ms,
 * then at most one per 32 ms (1/2000 of the chunks at 64 KiB and 1 Gbit/s) */
#define UCT_UCCL_PATH_PROBE_NS        1000000ull
#define UCT_UCCL_PATH_PROBE_MAX_SHIFT 5
/* a path with chunks out and no ACK for this many base RTOs (srtt + 4
 * rttvar; at least STALL_MIN_NS) stalled: a chunk queued behind bursts on
 * the sender's link, or one a receiver-driven sender waits for credit
 * around, is acked within a few RTOs; a path down loses its chunks and is
 * parked for that sooner */
#define UCT_UCCL_PATH_STALL_RTOS      4
#define UCT_UCCL_PATH_STALL_MIN_NS    5000000ull
/* Burst length (uccl_path.h): the paths queue unevenly when the conn's
 * RTT is above twice its minimum of the last one or two windows by more
 * than the slack and the peer held chunks out of order after a quarter of
 * the recent ACKs; then every chunk chooses its path. The slack is above
 * the scheduling noise of a loaded or instrumented host (sanitizers,
 * valgrind), whose spurious resends leave holes too: there a chunk per
 * doorbell would only cost more of the CPU that is short */
#define UCT_UCCL_PATH_RTT_MIN_WIN_NS  1000000000ull
#define UCT_UCCL_PATH_QUEUE_SLACK_NS  1000000ull

/* Counters (uccl_stats.c), each named once: a uint64_t field of the
 * iface's or a conn's counters, a UCS stats counter where UCX has stats,
 * and its name in the UCX_UCCL_STATS_DUMP lines */
#define UCT_UCCL_IFACE_COUNTERS(_) \
    _(bad_ctl)       /* malformed control packets */ \
    _(unknown_conn) \
    _(forged_ctl)    /* control packets for a conn, not from its peer */ \
    _(bad_ack)       /* out-of-range cum / bits */ \
    _(bad_data)      /* malformed SEND on a data QP */ \
    _(bad_rkey)      /* retx/get with a foreign key */ \
    _(unknown_qpn) \
    _(err_cqe) \
    _(srq_empty) \
    _(out_of_window) \
    _(order_full)    /* ordered messages refused: too many wait for \
                        earlier chunks */ \
    _(rx_no_desc) \
    _(ctl_tx_busy) \
    _(peers_lost)    /* passive conns of silent peers */ \
    _(peers_refused) /* requests beyond MAX_PEERS */ \
    _(get_refused)   /* GET requests beyond MAX_QUEUED chunks being \
                        served */ \
    _(defer_full)    /* AMs refused while too many wait for the user */ \
    _(doorbells) \
    _(wrs) \
    _(ctl_msgs)      /* control QP sends (of wrs): ACKs, set-up, ... */ \
    _(send_cqes)     /* data QPs: one per chain */ \
    _(async_passes)  /* engine runs for an idle user */ \
    _(async_wakes)   /* engine runs woken by a peer's solicited WR */ \
    _(async_arms)    /* CQs armed for a peer's solicited WR */ \
    _(cqe_ts_bad)    /* receive completions stamped after the poll that \
                        found them: the poll's time used */

#define UCT_UCCL_CONN_COUNTERS(_) \
    _(chunks_tx) \
    _(bytes_tx) \
    _(chunks_rx) \
    _(retx) \
    _(retx_bytes) \
    _(retx_obsolete) /* resent without data: newer data already on its \
                        way */ \
    _(retx_direct)   /* resent as the original WRITE: no earlier copy \
                        can land */ \
    _(tail_marks)    /* empty WRITEs ending a chain */ \
    _(chunk_grows)   /* chunk size doubled: nothing resent for an RTO */ \
    _(chunk_shrinks) /* chunk size back to CHUNK_SIZE: a resend */ \
    _(fast_retx) \
    _(tail_probes)   /* resends when ACKs stalled */ \
    _(probe_marks)   /* empty WRITEs sent instead */ \
    _(timeouts) \
    _(rc_path_fails) /* RC: paths retired, their QP failed */ \
    _(rc_redo)       /* RC: chunks sent again after their QP failed */ \
    _(rc_landed)     /* RC: flushed WRITEs the peer's QP had executed */ \
    _(rc_path_resets) /* RC: paths given a new QP pair */ \
    _(dup_rx) \
    _(acks_tx) \
    _(acks_rx) \
    _(acks_piggy)    /* ACKs our AMs carried */ \
    _(acks_holes)    /* ACKs after which the peer held chunks out of \
                        order */ \
    _(bursts_cut)    /* path choices for one chunk, not a burst: the \
                        paths queued unevenly */ \
    _(sq_full) \
    _(am_now)        /* AMs the fast path sent (uct_uccl_tx_am_now) */ \
    _(am_held)       /* AMs that waited for order */ \
    _(cc_paced)      /* sends the pacing held back */ \
    _(cc_samples)    /* RTT samples given to the cc */ \
    _(cc_rtt_ns)     /* their sum (/ cc_samples: their mean) */ \
    _(credit_req_tx) /* requests for credit sent */ \
    _(credit_req_rx) /* and received */ \
    _(credit_tx)     /* grants sent without an ACK */ \
    _(credit_rx)     /* and received */ \
    _(pull_waits)    /* GETs (RC: READs) that waited for our pacer's
                        grant */

#define UCT_UCCL_COUNTER_FIELD(_name)  uint64_t _name;
#define UCT_UCCL_COUNTER_NAME(_name)   #_name,
#define UCT_UCCL_COUNTER_ONE(_name)    + 1


typedef struct uct_uccl_iface   uct_uccl_iface_t;
typedef struct uct_uccl_conn    uct_uccl_conn_t;
typedef struct uct_uccl_ep      uct_uccl_ep_t;
typedef struct uct_uccl_op      uct_uccl_op_t;
typedef struct uct_uccl_chunk   uct_uccl_chunk_t;


/* Our clock's rate is measured against CLOCK_MONOTONIC (the fabric's
 * clock, softverbs' too) over CLOCK_CAL_NS at its first reading; two
 * readings of the clocks count only within CLOCK_PAIR_NS of each other (a
 * process descheduled between them would skew the rate) */
#define UCT_UCCL_CLOCK_CAL_NS     10000000ull
#define UCT_UCCL_CLOCK_PAIR_NS    2000ull
#define UCT_UCCL_CLOCK_PAIR_TRIES 1000

/* Nanoseconds per UCS time unit, set at the first uct_uccl_now_ns: a
 * product, not ucs_time_to_nsec's call and division, since the engine
 * reads the clock on every pass */
extern double uct_uccl_ns_per_tick;

void uct_uccl_clock_rate_init(void);

static UCS_F_ALWAYS_INLINE uint64_t uct_uccl_now_ns(void)
{
    if (ucs_unlikely(uct_uccl_ns_per_tick == 0)) {
        uct_uccl_clock_rate_init();
    }
    return ucs_get_time() * uct_uccl_ns_per_tick;
}

#endif

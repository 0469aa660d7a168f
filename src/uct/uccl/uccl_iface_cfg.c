/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The iface's configuration: the UCX_UCCL_* variables, their checks, and
 * the engine's settings made from them and from the device.
 */
#include "uccl_iface.h"

#include <ucs/sys/math.h>
#include <ucs/sys/string.h>


static const char *uct_uccl_mode_names[] = {
    [UCT_UCCL_MODE_CFG_AUTO] = "auto",
    [UCT_UCCL_MODE_CFG_UC]   = "uc",
    [UCT_UCCL_MODE_CFG_RC]   = "rc",
    [UCT_UCCL_MODE_CFG_LAST] = NULL
};

static const char *uct_uccl_cq_ts_names[] = {
    [UCT_UCCL_CQ_TS_CFG_NO]        = "no",
    [UCT_UCCL_CQ_TS_CFG_TRY]       = "try",
    [UCT_UCCL_CQ_TS_CFG_YES]       = "yes",
    [UCT_UCCL_CQ_TS_CFG_RAW]       = "raw",
    [UCT_UCCL_CQ_TS_CFG_WALLCLOCK] = "wallclock",
    [UCT_UCCL_CQ_TS_CFG_LAST]      = NULL
};

ucs_config_field_t uct_uccl_iface_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_uccl_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"NUM_PATHS", "32",
     "Data QPs (network paths) per connection. Chunks are sprayed over them;\n"
     "the fabric hashes QP numbers onto its paths.",
     ucs_offsetof(uct_uccl_iface_config_t, num_paths), UCS_CONFIG_TYPE_UINT},

    {"MODE", "auto",
     "Data QP type: uc (software reliability: SACK, selective retransmission,\n"
     "timeouts), rc (the NIC recovers losses), auto (uc when the device\n"
     "supports it, else rc).",
     ucs_offsetof(uct_uccl_iface_config_t, mode),
     UCS_CONFIG_TYPE_ENUM(uct_uccl_mode_names)},

    {"RC_ACK_TIMEOUT", "67ms",
     "RC mode: the data QPs' ACK timeout, after which the NIC resends what\n"
     "the peer has not acknowledged (go-back-N), at most "
     UCS_PP_MAKE_STRING(UCT_UCCL_RC_RETRY_CNT) " times before\n"
     "the QP fails and its path is retired and replaced. Rounded up to\n"
     "4.096 us times a power of two (the verbs' timeout exponent). Keep it\n"
     "above the fabric's queueing delay: a NIC whose ACK is later than this\n"
     "resends what is merely queued, and fails the QP after the retries:\n"
     "4ms recovers losses faster where queues stay below it.",
     ucs_offsetof(uct_uccl_iface_config_t, rc_ack_timeout),
     UCS_CONFIG_TYPE_TIME},

    {"RC_STALL_MIN", "auto",
     "RC mode: the shortest time a WR may be out before its path counts as\n"
     "stalled and gets a new QP pair (it grows to twice the RTO of the\n"
     "completion times). auto: "
     UCS_PP_MAKE_STRING(UCT_UCCL_RC_STALL_ACK_MULT)
     " ACK timeouts (RC_ACK_TIMEOUT as rounded),\n"
     "so the NIC's resends of a lost packet complete first, but at most\n"
     "67 ms (the default ACK timeout's one); below one ACK\n"
     "timeout, every lost packet the NIC would resend counts as a stall (a\n"
     "new QP pair, its WRs sent again).",
     ucs_offsetof(uct_uccl_iface_config_t, rc_stall_min),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"CHUNK_SIZE", "auto",
     "Large PUT/GET are cut into chunks of this size; each chunk is one RDMA\n"
     "WRITE_WITH_IMM (or READ) on one path, acknowledged and resent alone.\n"
     "auto: 64k in UC mode, where a lost chunk is resent into a receive\n"
     "buffer of the peer's, so every receive buffer holds one; 256k in RC\n"
     "mode, where the NIC recovers losses and a chunk never arrives as a\n"
     "SEND: fewer work requests and completions per message. In UC mode\n"
     "a connection's chunks are also at most the peer's.",
     ucs_offsetof(uct_uccl_iface_config_t, chunk_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"UC_CHUNK_MAX", "auto",
     "UC mode: a connection's chunks double, up to this size, each\n"
     "retransmission timeout in which it resent nothing, and go back to\n"
     "CHUNK_SIZE at its next resend: on a clean fabric a larger chunk costs\n"
     "fewer work requests, completions and ACKs per message, and a lossy\n"
     "one keeps resending small ones. Every receive buffer holds one (a\n"
     "lost chunk may be resent into it): SRQ_SIZE buffers of this size, 4x\n"
     "the memory at 256k. A value up to CHUNK_SIZE (or auto, the default)\n"
     "keeps the chunks at CHUNK_SIZE.",
     ucs_offsetof(uct_uccl_iface_config_t, uc_chunk_max),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"SEG_SIZE", "64k",
     "Largest active message and bcopy operation (bytes copied into a\n"
     "registered buffer). Every receive buffer holds one (UC: a chunk, which\n"
     "is at least as large), so up to SEG_SIZE a message goes as one AM:\n"
     "UCP's eager protocol then sends it in one chunk instead of fragments\n"
     "or a rendezvous. At most CHUNK_SIZE (a larger value is cut to it).",
     ucs_offsetof(uct_uccl_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"TX_QUEUE_LEN", "64",
     "Send queue length of each data QP. The engine never posts more work\n"
     "requests than this on a QP; the rest waits in software.",
     ucs_offsetof(uct_uccl_iface_config_t, tx_queue_len), UCS_CONFIG_TYPE_UINT},

    {"SRQ_SIZE", "256",
     "Receive buffers in the shared receive queue of the iface, each a\n"
     "header and SEG_SIZE bytes for an AM (UC: CHUNK_SIZE, for a resent\n"
     "chunk).",
     ucs_offsetof(uct_uccl_iface_config_t, srq_size), UCS_CONFIG_TYPE_UINT},

    {"SRQ_FLOW", "y",
     "Tell peers to keep at most SRQ_SIZE chunks in flight to this iface, so\n"
     "one sender cannot run the receive queue dry (n: only SACK_WINDOW\n"
     "limits them; UC then drops and resends, RC waits).",
     ucs_offsetof(uct_uccl_iface_config_t, srq_flow), UCS_CONFIG_TYPE_BOOL},

    {"CQ_SIZE", "8192",
     "Entries of the send and of the receive completion queue (shared by all\n"
     "data QPs of the iface).",
     ucs_offsetof(uct_uccl_iface_config_t, cq_size), UCS_CONFIG_TYPE_UINT},

    {"CQ_TIMESTAMP", "try",
     "Completion timestamps on the receive CQ, for RTT samples: an ACK's\n"
     "arrival at the sender and the time a chunk waited at the receiver\n"
     "come from the NIC, not from the progress call that found them, so a\n"
     "CPU slow to poll does not look like a congested fabric to the\n"
     "congestion control. raw: the NIC's free-running clock (rate from\n"
     "ibv_query_device_ex, read with ibv_query_rt_values_ex), mapped onto\n"
     "the host's by samples every millisecond while completions arrive;\n"
     "wallclock: the provider's nanoseconds near CLOCK_REALTIME, mapped the\n"
     "same way; yes: raw, else wallclock, else an error; try: as yes, else\n"
     "plain completions; no: plain completions (ibv_poll_cq), timed by the\n"
     "poll that found them.",
     ucs_offsetof(uct_uccl_iface_config_t, cq_ts),
     UCS_CONFIG_TYPE_ENUM(uct_uccl_cq_ts_names)},

    {"MAX_QUEUED", "512",
     "Chunks a connection may hold unsent before operations return\n"
     "UCS_ERR_NO_RESOURCE (and go to the pending queue); also the chunks of\n"
     "GETs a peer may have this iface serve at once (one larger GET goes\n"
     "alone).",
     ucs_offsetof(uct_uccl_iface_config_t, max_queued), UCS_CONFIG_TYPE_UINT},

    {"SACK_WINDOW", "4096",
     "Chunks in flight per connection and direction (receiver SACK window,\n"
     "power of two, 64..16384).",
     ucs_offsetof(uct_uccl_iface_config_t, sack_window), UCS_CONFIG_TYPE_UINT},

    {"MAX_RETRIES", "12",
     "Retransmission timeouts in a row without progress after which the\n"
     "connection fails (together with PEER_TIMEOUT).",
     ucs_offsetof(uct_uccl_iface_config_t, max_retries), UCS_CONFIG_TYPE_UINT},

    {"PEER_TIMEOUT", "30s",
     "Time without any acknowledged progress on outstanding chunks after\n"
     "which a connection that also spent MAX_RETRIES fails and its endpoint\n"
     "reports an error; also the time a keepalive probe (uct_ep_check, sent\n"
     "again every CONN_RETRY) may go unanswered. ACKs need the peer's CPU:\n"
     "a peer that computes without calling progress answers from its async\n"
     "timer (ASYNC_IDLE), which a loaded machine may hold back, hence the\n"
     "generous default, as UCX's ud transport has.",
     ucs_offsetof(uct_uccl_iface_config_t, peer_timeout), UCS_CONFIG_TYPE_TIME},

    {"IDLE_TIMEOUT", "300s",
     "A connection a peer opened to this iface (no local ep watches it) is\n"
     "probed after this long without a packet from the peer, and closed when\n"
     "the probe goes unanswered for PEER_TIMEOUT: frees what peers that died\n"
     "while idle held. A live peer answers from its async timer even when it\n"
     "does not call progress, unless its ASYNC_IDLE is inf (then set this to\n"
     "inf too, or longer than its longest computation).",
     ucs_offsetof(uct_uccl_iface_config_t, idle_timeout), UCS_CONFIG_TYPE_TIME},

    {"MAX_PEERS", "4096",
     "Connections other ifaces may open to this iface (each holds QPs and\n"
     "buffers); a request beyond it is refused, and the peer's ep fails.\n"
     "UCX expects thousands of eps to one connect-to-iface iface (its own\n"
     "tests open 2048); the device's QPs bound them too.",
     ucs_offsetof(uct_uccl_iface_config_t, max_peers), UCS_CONFIG_TYPE_UINT},

    {"RX_MAX_BUFS", "4096",
     "Receive buffers the iface may hold at once: posted in the SRQ, holding\n"
     "AMs that wait for their order or for the user's next progress call,\n"
     "or GET bcopy data. Beyond it the SRQ is refilled later, and what a peer\n"
     "sends meanwhile is dropped and resent.",
     ucs_offsetof(uct_uccl_iface_config_t, rx_max_bufs), UCS_CONFIG_TYPE_UINT},

    {"RTO_INIT", "10ms",
     "Retransmission timeout before the first RTT sample.",
     ucs_offsetof(uct_uccl_iface_config_t, rto_init), UCS_CONFIG_TYPE_TIME},

    {"RTO_MIN", "1ms",
     "Lower bound of the retransmission timeout (RTO = srtt + 4 * rttvar).",
     ucs_offsetof(uct_uccl_iface_config_t, rto_min), UCS_CONFIG_TYPE_TIME},

    {"RTO_MAX", "200ms",
     "Upper bound of the retransmission timeout, backoff included.",
     ucs_offsetof(uct_uccl_iface_config_t, rto_max), UCS_CONFIG_TYPE_TIME},

    {"CONN_RETRY", "20ms",
     "Interval between connection requests while no reply arrived.",
     ucs_offsetof(uct_uccl_iface_config_t, conn_retry), UCS_CONFIG_TYPE_TIME},

    {"CONN_TIMEOUT", "10s",
     "Connection set-up fails when no reply arrived within this time.",
     ucs_offsetof(uct_uccl_iface_config_t, conn_timeout), UCS_CONFIG_TYPE_TIME},

    {"DUPACK_THRESH", "8",
     "Duplicate ACKs after which every SACK hole is resent (fast\n"
     "retransmit).",
     ucs_offsetof(uct_uccl_iface_config_t, dupack_thresh),
     UCS_CONFIG_TYPE_UINT},

    {"REORDER_THRESH", "3",
     "A SACK hole this many chunks below the highest acknowledged one, and\n"
     "older than the smoothed RTT plus twice its variation, is resent\n"
     "without waiting for the timeout (0: only DUPACK_THRESH).",
     ucs_offsetof(uct_uccl_iface_config_t, reorder_thresh),
     UCS_CONFIG_TYPE_UINT},

    {"ACK_EVERY", "4",
     "The receiver acknowledges at least every this many chunks; otherwise\n"
     "ACKs are coalesced to one per connection per progress call.",
     ucs_offsetof(uct_uccl_iface_config_t, ack_every), UCS_CONFIG_TYPE_UINT},

    {"", "", NULL, ucs_offsetof(uct_uccl_iface_config_t, cc),
     UCS_CONFIG_TYPE_TABLE(uct_uccl_cc_config_table)},

    {"PATH_BURST", "16",
     "Consecutive chunks sent on a path before the next path choice: they\n"
     "go out as one chain (one doorbell), and a transmit round starts a new\n"
     "one. 16 chunks of 64k make a 1 MiB message one chain: a doorbell costs\n"
     "as much as copying tens of kilobytes. RC mode: 1 (every chunk chooses;\n"
     "its chunks are 256k, and a burst behind one choice can queue past the\n"
     "NIC's ACK timeout on a slow path).",
     ucs_offsetof(uct_uccl_iface_config_t, path_burst), UCS_CONFIG_TYPE_UINT},

    {"ACK_DELAY", "0",
     "Longest time a receiver holds an ACK to coalesce it with later ones\n"
     "(an out-of-order or duplicate arrival, or ACK_EVERY chunks, send it\n"
     "at once). With 0 the ACKs of all arrivals of one progress call go out\n"
     "at its end: a peer may stop calling progress right after, and an ACK\n"
     "held for later would then wait for the async timer (ASYNC_IDLE).",
     ucs_offsetof(uct_uccl_iface_config_t, ack_delay), UCS_CONFIG_TYPE_TIME},

    {"DRR_QUANTUM", "1m",
     "Bytes a connection may post per scheduler round (deficit round robin\n"
     "over connections with work).",
     ucs_offsetof(uct_uccl_iface_config_t, drr_quantum),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"STATS_DUMP", "n",
     "Print per-connection counters (chunks sent, retransmitted, timeouts,\n"
     "RTT, window) and iface error counters to stderr when a connection or\n"
     "the iface closes, and on SIGUSR2 (from the next progress call) when\n"
     "the process has no SIGUSR2 handler of its own.",
     ucs_offsetof(uct_uccl_iface_config_t, stats_dump), UCS_CONFIG_TYPE_BOOL},

    {"ASYNC_IDLE", "10ms",
     "When the user has not called progress for this long, a timer on the\n"
     "worker's async context runs the engine (ACKs, keepalive answers,\n"
     "served GETs, resends); AMs, completions and ep errors it finds wait\n"
     "for the next progress call. Peers then see a process that computes\n"
     "as alive. A user who calls progress less often than every 100 us\n"
     "also has a peer's request wake the async thread at once (solicited\n"
     "completions on the completion channel), so a GET is served without\n"
     "waiting for this timer. inf: only progress calls run the engine.",
     ucs_offsetof(uct_uccl_iface_config_t, async_idle), UCS_CONFIG_TYPE_TIME},

    UCT_IFACE_MPOOL_CONFIG_FIELDS("TX_", -1, 128, "send",
                                  ucs_offsetof(uct_uccl_iface_config_t, tx_mp),
                                  ""),

    {NULL}
};


/* The configuration's values in range, its cc known */
ucs_status_t
uct_uccl_iface_config_check(const uct_uccl_iface_config_t *config)
{
    if ((config->num_paths < 1) ||
        (config->num_paths > UCT_UCCL_WIRE_MAX_PATHS) ||
        ((config->chunk_size != UCS_MEMUNITS_AUTO) &&
         ((config->chunk_size < 1024) ||
          (config->chunk_size > UINT32_MAX / 2))) ||
        ((config->uc_chunk_max != UCS_MEMUNITS_AUTO) &&
         (config->uc_chunk_max > UINT32_MAX / 2)) ||
        (config->seg_size < 256) ||
        (config->tx_queue_len < 2) ||
        (config->srq_size < 2 * UCT_UCCL_SRQ_BATCH) ||
        (config->cq_size < config->srq_size) ||
        (config->rx_max_bufs < config->srq_size) ||
        !ucs_is_pow2(config->sack_window) || (config->sack_window < 64) ||
        (config->sack_window > UCT_UCCL_WIRE_SACK_MAX_BITS) ||
        (config->cc.window < 1) || (config->cc.pace_res <= 0) ||
        (config->path_burst < 1) || !(config->rc_ack_timeout > 0) ||
        (config->rc_ack_timeout * 1e9 >
         (double)(UCT_UCCL_RC_TIMEOUT_UNIT_NS << UCT_UCCL_RC_TIMEOUT_MAX))) {
        ucs_error("uccl: invalid configuration (NUM_PATHS 1..%d, CHUNK_SIZE "
                  "auto or 1k..2g, UC_CHUNK_MAX up to 2g, SEG_SIZE >= 256, "
                  "TX_QUEUE_LEN >= 2, "
                  "SRQ_SIZE >= %d, CQ_SIZE and RX_MAX_BUFS >= SRQ_SIZE, "
                  "SACK_WINDOW power of 2 in 64..%d, CC_WINDOW >= 1, "
                  "CC_PACE_RES > 0, RC_ACK_TIMEOUT > 0 and at most "
                  "4.096us << %d)",
                  UCT_UCCL_WIRE_MAX_PATHS, 2 * UCT_UCCL_SRQ_BATCH,
                  UCT_UCCL_WIRE_SACK_MAX_BITS, UCT_UCCL_RC_TIMEOUT_MAX);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/* UC where the device has it (or MODE says), else RC */
ucs_status_t uct_uccl_iface_mode_select(uct_uccl_iface_t *iface,
                                        const uct_uccl_md_t *md, int mode)
{
    switch (mode) {
    case UCT_UCCL_MODE_CFG_UC:
        if (!md->caps.uc) {
            ucs_error("uccl: UCX_UCCL_MODE=uc but %s has no UC QPs",
                      md->name);
            return UCS_ERR_UNSUPPORTED;
        }
        iface->rc_mode = 0;
        break;
    case UCT_UCCL_MODE_CFG_RC:
        iface->rc_mode = 1;
        break;
    default:
        iface->rc_mode = !md->caps.uc;
        break;
    }
    return UCS_OK;
}

/* The clock of the receive CQ's timestamps: what CQ_TIMESTAMP asks for,
 * of what the device has. The raw clock first: it needs no clock of the
 * NIC kept near the host's (a wall clock is, only where PTP or the driver
 * steer it), and a wall clock the host's time service steps or slews
 * makes the mapping measure its rate again. */
ucs_status_t uct_uccl_iface_cq_ts_select(uct_uccl_iface_t *iface,
                                         const uct_uccl_md_t *md, int cfg)
{
    unsigned want;

    switch (cfg) {
    case UCT_UCCL_CQ_TS_CFG_NO:
        want = UCT_UCCL_CQ_TS_NONE;
        break;
    case UCT_UCCL_CQ_TS_CFG_RAW:
        want = UCT_UCCL_CQ_TS_RAW;
        break;
    case UCT_UCCL_CQ_TS_CFG_WALLCLOCK:
        want = UCT_UCCL_CQ_TS_WALLCLOCK;
        break;
    default:
        want = UCT_UCCL_CQ_TS_RAW | UCT_UCCL_CQ_TS_WALLCLOCK;
        break;
    }

    want &= md->caps.cq_ts;
    if (want & UCT_UCCL_CQ_TS_RAW) {
        iface->cq_ts = UCT_UCCL_CQ_TS_RAW;
    } else if (want & UCT_UCCL_CQ_TS_WALLCLOCK) {
        iface->cq_ts = UCT_UCCL_CQ_TS_WALLCLOCK;
    } else if ((cfg == UCT_UCCL_CQ_TS_CFG_NO) ||
               (cfg == UCT_UCCL_CQ_TS_CFG_TRY)) {
        iface->cq_ts = UCT_UCCL_CQ_TS_NONE;
    } else {
        ucs_error("uccl: UCX_UCCL_CQ_TIMESTAMP=%s but %s has no such "
                  "completion timestamps", uct_uccl_cq_ts_names[cfg],
                  md->name);
        return UCS_ERR_UNSUPPORTED;
    }
    return UCS_OK;
}

/* CHUNK_SIZE, or with auto the mode's */
static size_t uct_uccl_iface_chunk_size(const uct_uccl_iface_t *iface,
                                        const uct_uccl_iface_config_t *config)
{
    if (config->chunk_size != UCS_MEMUNITS_AUTO) {
        return config->chunk_size;
    }
    return iface->rc_mode ? UCT_UCCL_CHUNK_RC : UCT_UCCL_CHUNK_UC;
}

/* The largest chunk a conn cuts: in UC mode UC_CHUNK_MAX when larger
 * (auto: no growth), in RC mode the chunk size (the NIC's go-back-N
 * resends what follows a loss, and uccl does not see it to shrink) */
static size_t uct_uccl_iface_chunk_max(const uct_uccl_iface_t *iface,
                                       const uct_uccl_iface_config_t *config,
                                       size_t chunk_size)
{
    if (iface->rc_mode || (config->uc_chunk_max == UCS_MEMUNITS_AUTO)) {
        return chunk_size;
    }
    return ucs_max(chunk_size, config->uc_chunk_max);
}

/* What arrives as a SEND into a receive buffer: an AM or a GET bcopy
 * reply of at most a segment after its header, and in UC mode a lost
 * WRITE chunk resent with its header (uct_uccl_chunk_build_retx). An RC
 * chunk is a WRITE or a READ only. */
static size_t uct_uccl_iface_rx_buf_size(const uct_uccl_iface_t *iface)
{
    const ucs_typeof(iface->config) *c = &iface->config;

    return (iface->rc_mode ? c->seg_size : c->chunk_max) +
           UCT_UCCL_SEND_HDR_MAX;
}

/* RC: the verbs' timeout exponent of the smallest ACK timeout at least
 * RC_ACK_TIMEOUT, the retry time it gives, and the stall floor */
static void uct_uccl_iface_rc_timeouts(uct_uccl_iface_t *iface,
                                       const uct_uccl_iface_config_t *config)
{
    ucs_typeof(iface->config) *c = &iface->config;
    double want_ns               = config->rc_ack_timeout * 1e9;
    uint8_t timeout              = UCT_UCCL_RC_TIMEOUT_MIN;
    uint64_t ack_ns;

    while ((timeout < UCT_UCCL_RC_TIMEOUT_MAX) &&
           ((double)(UCT_UCCL_RC_TIMEOUT_UNIT_NS << timeout) < want_ns)) {
        ++timeout;
    }
    ack_ns          = UCT_UCCL_RC_TIMEOUT_UNIT_NS << timeout;
    c->rc_timeout   = timeout;
    c->rc_retry_ns  = ack_ns * (UCT_UCCL_RC_RETRY_CNT + 1);
    if (config->rc_stall_min == UCS_TIME_AUTO) {
        c->rc_stall_min_ns = ucs_min(ack_ns * UCT_UCCL_RC_STALL_ACK_MULT,
                                     UCT_UCCL_RC_STALL_AUTO_MAX_NS);
    } else if (config->rc_stall_min == UCS_TIME_INFINITY) {
        c->rc_stall_min_ns = UINT64_MAX;
    } else {
        c->rc_stall_min_ns = ucs_time_to_nsec(config->rc_stall_min);
    }
}

/* The engine's settings from the user's configuration and the device */
void uct_uccl_iface_config_set(uct_uccl_iface_t *iface,
                               const uct_uccl_iface_config_t *config)
{
    const uct_uccl_md_t *md = iface->md;
    ucs_typeof(iface->config) *c = &iface->config;

    c->num_paths    = config->num_paths;
    c->chunk_size   = uct_uccl_iface_chunk_size(iface, config);
    c->chunk_max    = uct_uccl_iface_chunk_max(iface, config, c->chunk_size);
    c->seg_size     = ucs_min(config->seg_size, c->chunk_size);
    c->rx_buf_size  = uct_uccl_iface_rx_buf_size(iface);
    c->tx_queue_len = ucs_min(config->tx_queue_len, md->caps.max_qp_wr);
    c->tx_ring_mask = ucs_roundup_pow2(c->tx_queue_len) - 1;
    c->srq_size     = ucs_min(config->srq_size, md->caps.max_srq_wr);
    /* parked messages leave an SRQ's worth of buffers to refill it and
     * one more for deferred AMs and GET data: the message they wait for
     * can always arrive */
    c->rx_held_max  = (config->rx_max_bufs > 2 * c->srq_size) ?
                      config->rx_max_bufs - 2 * c->srq_size : 0;
    c->rx_window    = config->srq_flow ?
                      ucs_min(config->sack_window, c->srq_size) :
                      config->sack_window;
    c->cq_size      = config->cq_size;
    c->max_queued   = ucs_max(config->max_queued, 1);
    c->max_peers    = config->max_peers;
    c->sack_window  = config->sack_window;
    c->max_retries  = config->max_retries;
    c->peer_timeout_ns = config->peer_timeout * 1e9;
    uct_uccl_iface_rc_timeouts(iface, config);
    c->idle_timeout_ns = (config->idle_timeout * 1e9 < (double)UINT64_MAX) ?
                         config->idle_timeout * 1e9 : UINT64_MAX;
    c->rto.init_ns     = config->rto_init * 1e9;
    c->rto.min_ns      = config->rto_min * 1e9;
    c->rto.max_ns      = config->rto_max * 1e9;
    c->rto.max_retries = config->max_retries;
    c->conn_retry_ns   = config->conn_retry * 1e9;
    c->conn_timeout_ns = config->conn_timeout * 1e9;
    c->dupack_thresh   = config->dupack_thresh;
    c->reorder_thresh  = config->reorder_thresh;
    c->ack_every       = ucs_max(config->ack_every, 1);
    c->pace_res        = ucs_time_from_sec(config->cc.pace_res);
    c->path_burst      = config->path_burst;
    c->ack_delay_ns    = config->ack_delay * 1e9;
    c->drr_quantum     = config->drr_quantum;
    c->stats_dump      = config->stats_dump;
    c->mtu             = iface->port->mtu;
}

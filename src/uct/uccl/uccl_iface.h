/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The uccl engine: one iface per worker and port owns the shared I/O (one
 * send CQ, one receive CQ and one SRQ for every data QP, a UD control QP),
 * the registered pools, the QPN -> path map, the transmit scheduler and the
 * timers. Conns (one per connected pair of ifaces) hang off it; an ep wraps
 * the initiator's conn.
 */
#ifndef UCT_UCCL_IFACE_H_
#define UCT_UCCL_IFACE_H_

#include "uccl_conn.h"
#include "uccl_cc_cfg.h"
#include "proto/uccl_clock.h"

#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/ptr_array.h>
#include <ucs/stats/stats.h>


typedef enum {
    UCT_UCCL_MODE_CFG_AUTO,
    UCT_UCCL_MODE_CFG_UC,
    UCT_UCCL_MODE_CFG_RC,
    UCT_UCCL_MODE_CFG_LAST
} uct_uccl_mode_cfg_t;

/* UCX_UCCL_CQ_TIMESTAMP: the receive CQ's completion timestamps */
typedef enum {
    UCT_UCCL_CQ_TS_CFG_NO,
    UCT_UCCL_CQ_TS_CFG_TRY,
    UCT_UCCL_CQ_TS_CFG_YES,
    UCT_UCCL_CQ_TS_CFG_RAW,
    UCT_UCCL_CQ_TS_CFG_WALLCLOCK,
    UCT_UCCL_CQ_TS_CFG_LAST
} uct_uccl_cq_ts_cfg_t;


typedef struct uct_uccl_iface_config {
    uct_iface_config_t      super;
    unsigned                num_paths;
    int                     mode;            /* uct_uccl_mode_cfg_t */
    size_t                  chunk_size;
    size_t                  uc_chunk_max;
    size_t                  seg_size;
    unsigned                tx_queue_len;    /* per data QP */
    unsigned                srq_size;
    int                     srq_flow;
    unsigned                cq_size;
    int                     cq_ts;           /* uct_uccl_cq_ts_cfg_t */
    unsigned                max_queued;      /* unsent chunks per conn */
    unsigned                max_peers;       /* passive conns */
    unsigned                rx_max_bufs;
    unsigned                sack_window;
    unsigned                max_retries;
    double                  peer_timeout;
    double                  rc_ack_timeout;
    ucs_time_t              rc_stall_min;    /* UCS_TIME_AUTO: from it */
    double                  idle_timeout;
    double                  rto_init;
    double                  rto_min;
    double                  rto_max;
    double                  conn_retry;
    double                  conn_timeout;
    unsigned                dupack_thresh;
    unsigned                reorder_thresh;
    unsigned                ack_every;
    uct_uccl_cc_config_t    cc;              /* UCX_UCCL_CC* */
    unsigned                path_burst;
    double                  ack_delay;
    size_t                  drr_quantum;
    int                     stats_dump;
    double                  async_idle;
    uct_iface_mpool_config_t tx_mp;
} uct_uccl_iface_config_t;


KHASH_MAP_INIT_INT(uct_uccl_qpn, uct_uccl_qp_t*);

/* One slot of the direct-mapped cache in front of qpn_hash */
typedef struct uct_uccl_qpn_slot {
    uint32_t                qpn;
    uct_uccl_qp_t           *path;       /* NULL: empty */
} uct_uccl_qpn_slot_t;


/* A peer's conn as its CONN_REQ names it: a repeated request finds the
 * passive conn that answered the first */
typedef struct uct_uccl_peer_key {
    uint64_t                uuid;        /* the peer iface */
    uint64_t                token;       /* the peer conn's */
    uint32_t                id;          /* the peer conn */
} uct_uccl_peer_key_t;

static inline khint32_t uct_uccl_peer_key_hash(uct_uccl_peer_key_t key)
{
    return kh_int64_hash_func(key.uuid ^ key.token ^
                              ((uint64_t)key.id << 32));
}

static inline int uct_uccl_peer_key_equal(uct_uccl_peer_key_t a,
                                          uct_uccl_peer_key_t b)
{
    return (a.uuid == b.uuid) && (a.token == b.token) && (a.id == b.id);
}

KHASH_INIT(uct_uccl_peers, uct_uccl_peer_key_t, uct_uccl_conn_t*, 1,
           uct_uccl_peer_key_hash, uct_uccl_peer_key_equal);


static inline khint32_t uct_uccl_dest_key_hash(uct_uccl_dest_key_t key)
{
    uint64_t gid[2];

    memcpy(gid, key.gid, sizeof(gid));
    return kh_int64_hash_func(gid[0] ^ (gid[1] * 0x9e3779b97f4a7c15ull) ^
                              ((uint64_t)key.ctl_qpn << 16) ^ key.lid);
}

static inline int uct_uccl_dest_key_equal(uct_uccl_dest_key_t a,
                                          uct_uccl_dest_key_t b)
{
    return (a.ctl_qpn == b.ctl_qpn) && (a.lid == b.lid) &&
           !memcmp(a.gid, b.gid, sizeof(a.gid));
}

KHASH_INIT(uct_uccl_dests, uct_uccl_dest_key_t, uct_uccl_dest_t*, 1,
           uct_uccl_dest_key_hash, uct_uccl_dest_key_equal);


typedef struct uct_uccl_iface_stats {
    UCT_UCCL_IFACE_COUNTERS(UCT_UCCL_COUNTER_FIELD)
} uct_uccl_iface_stats_t;


struct uct_uccl_iface {
    uct_base_iface_t        super;
    uct_uccl_md_t           *md;
    uint8_t                 port_num;
    const uct_uccl_port_t   *port;
    uint64_t                uuid;
    int                     rc_mode;

    struct ibv_cq           *send_cq;
    struct ibv_cq           *recv_cq;
    struct ibv_cq_ex        *recv_cq_ex; /* recv_cq, when its completions
                                            carry timestamps (else NULL) */
    uct_uccl_cq_ts_t        cq_ts;       /* of which clock */
    uct_uccl_clock_t        cq_clock;    /* that clock in ours */
    struct ibv_srq          *srq;
    unsigned                srq_posted;
    /* a chain of SRQ_BATCH receive WRs with their SGEs, linked and sized
     * once (uct_uccl_iface_queues_init): a refill only names buffers */
    struct ibv_recv_wr      srq_wrs[UCT_UCCL_SRQ_BATCH];
    struct ibv_sge          srq_sges[UCT_UCCL_SRQ_BATCH];

    /* control QP and its buffers (one MR) */
    struct {
        struct ibv_cq       *cq;         /* its sends; it receives on
                                            recv_cq, with the data QPs */
        struct ibv_qp       *qp;         /* the one the address names */
        struct ibv_qp       *alt[UCT_UCCL_WIRE_CTL_ALT]; /* send only */
        unsigned            nalt;        /* of alt[], made */
        uint64_t            rng;         /* picks which of qp and alt[]
                                            carries the next records */
        uint32_t            qpn;
        struct ibv_mr       *mr;
        char                *bufs;       /* RX_DEPTH rx + TX_DEPTH tx */
        unsigned            tx_free[UCT_UCCL_CTL_TX_DEPTH];
        unsigned            tx_nfree;
        unsigned            repost[UCT_UCCL_CTL_RX_DEPTH]; /* buffers */
        unsigned            nrepost;     /* to post again after a poll */
    } ctl;

    ucs_mpool_t             tx_mp;       /* uct_uccl_chunk_t + seg */
    ucs_mpool_t             hdr_mp;      /* uct_uccl_chunk_t alone: the
                                            payload stays where it is */
    ucs_mpool_t             rx_mp;       /* uct_uccl_rx_desc_t + rx_buf */
    ucs_mpool_t             op_mp;       /* uct_uccl_op_t */
    khash_t(uct_uccl_qpn)   qpn_hash;
    /* what qpn_hash held for the QPs completions named lately; a slot is
     * emptied whenever its QP's entry there changes */
    uct_uccl_qpn_slot_t     qpn_cache[UCT_UCCL_QPN_CACHE];
    khash_t(uct_uccl_peers) peers;       /* passive conns (MAX_PEERS at
                                            most) by the peer's request */
    ucs_ptr_array_t         conn_ids;
    ucs_list_link_t         conns;
    ucs_arbiter_t           tx_arb;      /* conns with work to send, in
                                            turn (uccl_sched.c) */
    khash_t(uct_uccl_dests) dests;       /* peer ifaces we send to */
    uct_uccl_conn_t         *sched_current; /* the conn in its turn */
    ucs_list_link_t         ack_list;    /* conns owing an ACK */
    uint32_t                pass;        /* engine passes run */
    uint32_t                ack_pass;    /* from this pass on, ack_list
                                            may hold an ACK to send (one
                                            only held waits a pass) */
    ucs_list_link_t         acks_in;     /* conns holding an AM's ACK */
    unsigned                tx_outstanding; /* WRs on the send CQ */
    int                     tx_drained;  /* the last send CQ poll emptied
                                            it ... */
    uint64_t                tx_drained_ns; /* ... the latest pass it did */
    uint64_t                next_timer;
    /* the receive completion being handled (its arrival is read with
     * uct_uccl_iface_rx_cqe_ns and uct_uccl_iface_rx_since): */
    uint64_t                rx_poll_ns;  /* when the poll found it */
    uint64_t                rx_cqe_ns;   /* plain CQ: rx_poll_ns */
    uint64_t                rx_since_ns; /* plain CQ: the poll before */
    uint64_t                rx_tick;     /* stamped CQ: its timestamp, not
                                            mapped onto our clock yet */
    ucs_twheel_t            pace_wheel;  /* paced conns wait here */
    /* conn timers (uccl_conn_live.c) */
    struct {
        ucs_list_link_t     active;      /* conns visited every tick */
        ucs_twheel_t        idle_wheel;  /* idle passive conns' deadlines */
    } timers;
    unsigned                paced;       /* timers on it */

    /* receiver-driven cc (uccl_credit.c): the pacer grants the senders of
     * our conns' peers */
    struct {
        int                 on;          /* the cc is receiver-driven */
        uct_uccl_cc_eqds_pacer_t pacer;
        ucs_list_link_t     owed;        /* conns owing a grant */
    } credit;
    unsigned                num_passive; /* conns peers opened to us */
    unsigned                rx_held;     /* receive buffers parked for
                                            their order, all conns */
    int                     dump_seen;   /* SIGUSR2 dump requests served */
    uint64_t                dump_clock0; /* our clock at open (ns) ... */
    uint64_t                dump_mono0;  /* ... and CLOCK_MONOTONIC's */

    /* the engine runs from an async timer while the user does not call
     * progress (uccl_async.c); UCX hears of it at the next progress */
    struct {
        int                 timer_id;    /* -1: none */
        int                 timer_fd;    /* its timerfd, or -1 */
        int                 wake_id;     /* completion channel handler,
                                            -1: none (uccl_wake.c) */
        uint64_t            idle_ns;
        uint64_t            last_user;   /* ns: user's last progress call */
        uint64_t            user_gap;    /* ns out of the transport before
                                            the last progress call */
        uint64_t            user_exit;   /* ns: the user left progress */
        unsigned            ops_seen;    /* the thread's operations and */
        uint64_t            busy_seen;   /* time in uccl at the last call */
        uint8_t             active;      /* in a pass: defer callbacks */
        unsigned            deferred;    /* entries in the three below */
        ucs_queue_head_t    ams;         /* uct_uccl_rx_desc_t, in order */
        ucs_list_link_t     ops;         /* uct_uccl_op_t, completed */
        ucs_list_link_t     errs;        /* failed conns' ep errors */
    } async;

    struct {
        unsigned            num_paths;
        size_t              chunk_size;
        size_t              chunk_max;   /* UC: a clean conn's chunks grow
                                            to this; RC: chunk_size */
        size_t              seg_size;
        size_t              rx_buf_size;
        size_t              rx_pad;      /* uct_uccl_rx_desc_t.pad */
        size_t              rx_align;    /* of uct_uccl_rx_desc_t.data */
        unsigned            tx_queue_len;
        unsigned            tx_ring_mask;    /* path sent[] ring size - 1 */
        unsigned            srq_size;
        unsigned            rx_window;   /* chunks a peer may have in flight */
        unsigned            rx_held_max; /* rx_held bound (RX_MAX_BUFS) */
        unsigned            cq_size;
        unsigned            max_queued;
        unsigned            max_peers;
        unsigned            sack_window;
        unsigned            max_retries;
        uint64_t            peer_timeout_ns;
        uint8_t             rc_timeout;      /* the QPs' ACK timeout, as the
                                                verbs' exponent */
        uint64_t            rc_retry_ns;     /* QPs fail after this */
        uint64_t            rc_stall_min_ns;
        uint64_t            idle_timeout_ns; /* UINT64_MAX: never */
        uct_uccl_rto_params_t rto;
        uint64_t            conn_retry_ns;
        uint64_t            conn_timeout_ns;
        unsigned            dupack_thresh;
        unsigned            reorder_thresh;
        unsigned            ack_every;
        const char          *cc;
        int                 cc_rx_bytes; /* its receivers count the bytes
                                            that arrive (rx_on_data) */
        uct_uccl_cc_params_t cc_params;  /* every conn starts from them */
        ucs_time_t          pace_res;    /* pace_wheel's resolution */
        unsigned            path_burst;
        uint64_t            ack_delay_ns;
        size_t              drr_quantum;
        int                 stats_dump;
        enum ibv_mtu        mtu;
    } config;

    /* UCT events: the user sleeps on epfd (uccl_event.c) */
    struct {
        struct ibv_comp_channel *chan;   /* of the send, recv and ctl CQs */
        int                 epfd;        /* chan, wake_fd and timer_fd */
        int                 wake_fd;     /* eventfd: the background pass
                                            left work for the user */
        int                 timer_fd;    /* engine timers while asleep */
        uint8_t             armed;
    } event;

    uct_uccl_iface_stats_t  stats;
    UCS_STATS_NODE_DECLARE(stats_node)   /* where UCX has stats */
};

/* Largest active message (its 8-byte header included, as UCT counts it):
 * one bcopy segment after our AM header. uct_iface_query advertises it and
 * the operations refuse anything longer. */
static UCS_F_ALWAYS_INLINE size_t
uct_uccl_iface_am_max(const uct_uccl_iface_t *iface)
{
    return iface->config.seg_size - sizeof(uct_uccl_am_hdr_t);
}

/* Largest user header of an AM zcopy: it is copied into the segment */
static UCS_F_ALWAYS_INLINE size_t
uct_uccl_iface_am_max_hdr(const uct_uccl_iface_t *iface)
{
    return iface->config.seg_size / 2;
}

/* iface (uccl_iface.c) */
ucs_status_t uct_uccl_iface_ctl_send(uct_uccl_iface_t *iface,
                                     struct ibv_ah *ah, uint32_t qpn,
                                     const void *pkt, size_t len);
ucs_status_t uct_uccl_conn_ctl_send(uct_uccl_conn_t *conn, const void *pkt,
                                    size_t len);
void *uct_uccl_iface_ctl_tx_buf(uct_uccl_iface_t *iface, unsigned *idx_p);
void uct_uccl_iface_ctl_post(uct_uccl_iface_t *iface, struct ibv_qp *qp,
                             struct ibv_ah **ahs, const uint32_t *qpns,
                             const unsigned *idx, const size_t *lens,
                             unsigned count);

/* The control QP to send from: the address's own, or, when every peer of
 * the packets knows the others (`spread`), one of them at random, so that
 * the records of a conn take several core paths (a path is a hash of the
 * two QPNs, as on RoCE). Not in turn: traffic that sends n packets a
 * round would put a conn's records on one QP, and one path, every time. */
static UCS_F_ALWAYS_INLINE struct ibv_qp *
uct_uccl_iface_ctl_qp(uct_uccl_iface_t *iface, int spread)
{
    unsigned i;

    if (!spread) {
        return iface->ctl.qp;
    }
    i = uct_uccl_rand_next(&iface->ctl.rng) % (iface->ctl.nalt + 1);
    return (i == 0) ? iface->ctl.qp : iface->ctl.alt[i - 1];
}

void uct_uccl_iface_chunk_put(uct_uccl_chunk_t *chunk);
void uct_uccl_iface_close(uct_iface_h tl_iface);
ucs_status_t uct_uccl_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                  uct_completion_t *comp);
ucs_status_t uct_uccl_iface_fence(uct_iface_h tl_iface, unsigned flags);
ucs_status_t uct_uccl_iface_query(uct_iface_h tl_iface,
                                  uct_iface_attr_t *attr);
ucs_status_t uct_uccl_iface_get_device_address(uct_iface_h tl_iface,
                                               uct_device_addr_t *addr);
ucs_status_t uct_uccl_iface_get_address(uct_iface_h tl_iface,
                                        uct_iface_addr_t *addr);
int uct_uccl_iface_is_reachable(const uct_iface_h tl_iface,
                                const uct_device_addr_t *dev_addr,
                                const uct_iface_addr_t *iface_addr);

/* The largest chunk the peer's receive buffers hold in UC mode: a lost
 * chunk may be resent there as a SEND, its header before it; an RC chunk
 * never arrives as a SEND */
static inline size_t uct_uccl_conn_chunk_fit(const uct_uccl_conn_t *conn,
                                             size_t size)
{
    if (conn->rc) {
        return size;
    }
    return ucs_min(size, conn->remote_rx_buf_size - UCT_UCCL_SEND_HDR_MAX);
}

/* The size new chunks of conn's are cut to now (UC: grown while clean,
 * uct_uccl_conn_chunk_grow) */
static inline size_t uct_uccl_conn_chunk_size(const uct_uccl_conn_t *conn)
{
    return uct_uccl_conn_chunk_fit(conn, conn->chunk_cur);
}

/* The iface's chunk size for conn, never larger than chunk_size: room
 * checks and reservations made before chunks are cut count with it, so
 * that a conn whose chunks shrink in between never needs more */
static inline size_t uct_uccl_conn_chunk_base(const uct_uccl_conn_t *conn)
{
    return uct_uccl_conn_chunk_fit(conn, conn->iface->config.chunk_size);
}

static UCS_F_ALWAYS_INLINE uct_uccl_qpn_slot_t *
uct_uccl_iface_qpn_slot(uct_uccl_iface_t *iface, uint32_t qpn)
{
    return &iface->qpn_cache[qpn & (UCT_UCCL_QPN_CACHE - 1)];
}

/* The path (a conn's, or a draining QP's) a completion's QP number names,
 * or NULL. A busy conn's few QPs stay in their slots: a completion costs
 * no hash look-up. */
static UCS_F_ALWAYS_INLINE uct_uccl_qp_t *
uct_uccl_iface_qp_find(uct_uccl_iface_t *iface, uint32_t qpn)
{
    uct_uccl_qpn_slot_t *slot = uct_uccl_iface_qpn_slot(iface, qpn);
    khiter_t it;

    if (ucs_likely((slot->path != NULL) && (slot->qpn == qpn))) {
        return slot->path;
    }
    it = kh_get(uct_uccl_qpn, &iface->qpn_hash, qpn);
    if (it == kh_end(&iface->qpn_hash)) {
        return NULL;
    }
    slot->qpn  = qpn;
    slot->path = kh_val(&iface->qpn_hash, it);
    return slot->path;
}

/* qpn's entry in qpn_hash is about to change: its slot must not keep it */
static UCS_F_ALWAYS_INLINE void
uct_uccl_iface_qp_forget(uct_uccl_iface_t *iface, uint32_t qpn)
{
    uct_uccl_qpn_slot_t *slot = uct_uccl_iface_qpn_slot(iface, qpn);

    if (slot->qpn == qpn) {
        slot->path = NULL;
    }
}

/* A receive completion's timestamp `tick` (stamped CQ), found by the poll
 * at poll_ns, in our time. Mapped only where it is used: most arrivals'
 * times are overwritten before an ACK or a sample reads them. None
 * arrived after the poll: a timestamp that maps later (by more than the
 * mapping's error) is counted (cqe_ts_bad) and the poll's time used. */
static UCS_F_ALWAYS_INLINE uint64_t
uct_uccl_iface_rx_ts(uct_uccl_iface_t *iface, uint64_t tick, uint64_t poll_ns)
{
    uint64_t ns = uct_uccl_clock_map(&iface->cq_clock, tick);

    if (ucs_unlikely(ns > poll_ns)) {
        iface->stats.cqe_ts_bad += (ns - poll_ns > UCT_UCCL_CQE_TS_SLACK_NS);
        return poll_ns;
    }
    return ns;
}

/* When the receive completion being handled arrived: its timestamp, or
 * the poll that found it */
static UCS_F_ALWAYS_INLINE uint64_t
uct_uccl_iface_rx_cqe_ns(uct_uccl_iface_t *iface)
{
    return (iface->recv_cq_ex != NULL) ?
           uct_uccl_iface_rx_ts(iface, iface->rx_tick, iface->rx_poll_ns) :
           iface->rx_cqe_ns;
}

/* The earliest the receive completion being handled may have arrived, kept
 * for uct_uccl_iface_rx_since_ns: its raw timestamp (stamped CQ) or the
 * poll before the one that found it */
static UCS_F_ALWAYS_INLINE uint64_t
uct_uccl_iface_rx_since(const uct_uccl_iface_t *iface)
{
    return (iface->recv_cq_ex != NULL) ? iface->rx_tick : iface->rx_since_ns;
}

/* A value of uct_uccl_iface_rx_since of a completion found at poll_ns, in
 * our time */
static UCS_F_ALWAYS_INLINE uint64_t
uct_uccl_iface_rx_since_ns(uct_uccl_iface_t *iface, uint64_t since,
                           uint64_t poll_ns)
{
    return (iface->recv_cq_ex != NULL) ?
           uct_uccl_iface_rx_ts(iface, since, poll_ns) : since;
}

/* A conn about to have work for its timers (data queued or owed an ACK, a
 * probe, a failure) is visited every tick from now on */
static UCS_F_ALWAYS_INLINE void uct_uccl_conn_timer_wake(uct_uccl_conn_t *conn)
{
    if (ucs_unlikely(!conn->timer_active)) {
        uct_uccl_conn_timer_start(conn);
    }
}

/* counters as UCS stats nodes (uccl_stats.c), where UCX has stats */
#ifdef ENABLE_STATS
ucs_status_t uct_uccl_stats_iface_init(uct_uccl_iface_t *iface);
void uct_uccl_stats_iface_cleanup(uct_uccl_iface_t *iface);
ucs_status_t uct_uccl_stats_conn_init(uct_uccl_conn_t *conn);
void uct_uccl_stats_conn_cleanup(uct_uccl_conn_t *conn);
void uct_uccl_stats_iface_sync(uct_uccl_iface_t *iface);
void uct_uccl_stats_conn_sync(uct_uccl_conn_t *conn);
#else
static inline ucs_status_t uct_uccl_stats_iface_init(uct_uccl_iface_t *iface)
{
    return UCS_OK;
}
static inline void uct_uccl_stats_iface_cleanup(uct_uccl_iface_t *iface) {}
static inline ucs_status_t uct_uccl_stats_conn_init(uct_uccl_conn_t *conn)
{
    return UCS_OK;
}
static inline void uct_uccl_stats_conn_cleanup(uct_uccl_conn_t *conn) {}
static inline void uct_uccl_stats_iface_sync(uct_uccl_iface_t *iface) {}
static inline void uct_uccl_stats_conn_sync(uct_uccl_conn_t *conn) {}
#endif

/* resources: pools and control QP (uccl_io.c), CQs and SRQ (uccl_cq.c) */
ucs_status_t uct_uccl_iface_pools_init(uct_uccl_iface_t *iface,
                                       const uct_uccl_iface_config_t *config,
                                       const uct_iface_params_t *params);
void uct_uccl_iface_pools_cleanup(uct_uccl_iface_t *iface);
ucs_status_t uct_uccl_iface_queues_init(uct_uccl_iface_t *iface);
void uct_uccl_iface_queues_cleanup(uct_uccl_iface_t *iface);
ucs_status_t uct_uccl_iface_ctl_init(uct_uccl_iface_t *iface);
void uct_uccl_iface_ctl_cleanup(uct_uccl_iface_t *iface);
unsigned uct_uccl_iface_poll_ctl_tx(uct_uccl_iface_t *iface);
void uct_uccl_iface_ctl_recv(uct_uccl_iface_t *iface, const struct ibv_wc *wc);
void uct_uccl_iface_ctl_repost(uct_uccl_iface_t *iface);
int uct_uccl_iface_recv_read_ts(uct_uccl_iface_t *iface, struct ibv_wc *wcs,
                                uint64_t *ts, int max);
void uct_uccl_iface_disconnect_all(uct_uccl_iface_t *iface);

/* transmit scheduler (uccl_sched.c) */
void uct_uccl_sched_init(uct_uccl_iface_t *iface);
void uct_uccl_sched_cleanup(uct_uccl_iface_t *iface);
void uct_uccl_sched_conn_init(uct_uccl_conn_t *conn);
/* Out of the scheduler and off its dest: a conn destroyed */
void uct_uccl_sched_conn_cleanup(uct_uccl_conn_t *conn);
/* conn has work to send: its turn comes in the engine's transmit pass */
void uct_uccl_iface_sched_add(uct_uccl_iface_t *iface, uct_uccl_conn_t *conn);
unsigned uct_uccl_sched_transmit(uct_uccl_iface_t *iface);
/* A connected conn joins the dest of its peer iface, whose receive window
 * (chunks in flight from all our conns) the handshake told */
ucs_status_t uct_uccl_dest_attach(uct_uccl_conn_t *conn, uint32_t window);
/* It leaves (failed or destroyed): what it had in flight no longer counts */
void uct_uccl_dest_detach(uct_uccl_conn_t *conn);
/* Room came free, or a turn ended: the conn whose turn it is claims, or
 * the first waiter gets the turn */
void uct_uccl_dest_wake(uct_uccl_iface_t *iface, uct_uccl_dest_t *dest);
/* uct_uccl_dest_room while conns wait at the dest: the one whose turn
 * it is (in its scheduler turn) claims up to its quota, the others none */
uint32_t uct_uccl_dest_room_turn(uct_uccl_conn_t *conn);
/* conn found no room at its dest for what it has queued: it waits for
 * its turn, or its turn's quota is used */
void uct_uccl_dest_refused(uct_uccl_conn_t *conn);

static UCS_F_ALWAYS_INLINE int uct_uccl_conn_in_sched(uct_uccl_conn_t *conn)
{
    return ucs_arbiter_elem_is_scheduled(&conn->sched);
}

/* engine (uccl_engine.c) */
void uct_uccl_iface_dump_init(uct_uccl_iface_t *iface);
void uct_uccl_iface_dump_stats(uct_uccl_iface_t *iface);
/* " name value" for each of a conn's counters (UCX_UCCL_STATS_DUMP) */
void uct_uccl_conn_dump_counters(const uct_uccl_conn_t *conn, FILE *stream);
void uct_uccl_iface_dump_all(uct_uccl_iface_t *iface);

/* configuration (uccl_iface_cfg.c) */
ucs_status_t uct_uccl_iface_config_check(const uct_uccl_iface_config_t *config);
ucs_status_t uct_uccl_iface_mode_select(uct_uccl_iface_t *iface,
                                        const uct_uccl_md_t *md, int mode);
ucs_status_t uct_uccl_iface_cq_ts_select(uct_uccl_iface_t *iface,
                                         const uct_uccl_md_t *md, int cfg);
void uct_uccl_iface_config_set(uct_uccl_iface_t *iface,
                               const uct_uccl_iface_config_t *config);

/* receiver-driven congestion control (uccl_credit.c) */
ucs_status_t uct_uccl_credit_init(uct_uccl_iface_t *iface,
                                  const uct_uccl_cc_config_t *config);
void uct_uccl_credit_cleanup(uct_uccl_iface_t *iface);
void uct_uccl_credit_conn_attach(uct_uccl_conn_t *conn);
void uct_uccl_credit_conn_detach(uct_uccl_conn_t *conn);
void uct_uccl_credit_tx_request(uct_uccl_conn_t *conn, uint64_t now);
void uct_uccl_credit_release(uct_uccl_conn_t *conn, uint64_t now);
void uct_uccl_credit_release_before(uct_uccl_conn_t *conn, uint32_t bytes,
                                    uint64_t now);
void uct_uccl_credit_timer(uct_uccl_conn_t *conn, uint64_t now);
int uct_uccl_credit_may_resend(uct_uccl_conn_t *conn, uint32_t bytes,
                               uint64_t now);
int uct_uccl_credit_starved(uct_uccl_conn_t *conn, uint64_t now);
int uct_uccl_credit_may_pull(uct_uccl_conn_t *conn,
                             const uct_uccl_chunk_t *chunk, uint64_t now);
void uct_uccl_credit_pull_spent(uct_uccl_conn_t *conn,
                                const uct_uccl_chunk_t *chunk);
void uct_uccl_credit_tx_grant(uct_uccl_conn_t *conn, uint32_t grant,
                              int idle, uint64_t now);
void uct_uccl_credit_owe(uct_uccl_conn_t *conn);
void uct_uccl_credit_paid(uct_uccl_conn_t *conn);
void uct_uccl_credit_tick(uct_uccl_iface_t *iface, uint64_t now);
size_t uct_uccl_credit_pack(uct_uccl_conn_t *conn, uct_uccl_credit_t *rec,
                            const uct_uccl_cc_request_t *req, uint64_t now);
void uct_uccl_credit_sent(uct_uccl_conn_t *conn, const uct_uccl_credit_t *rec);
void uct_uccl_conn_handle_credit(uct_uccl_iface_t *iface,
                                 const uct_uccl_credit_t *rec,
                                 const uct_uccl_ctl_src_t *src);

/* async (uccl_async.c) */
ucs_status_t uct_uccl_async_init(uct_uccl_iface_t *iface, double idle);
void uct_uccl_async_cleanup(uct_uccl_iface_t *iface);
void uct_uccl_async_dispatch(uct_uccl_iface_t *iface);
void uct_uccl_async_run(uct_uccl_iface_t *iface);
ucs_status_t uct_uccl_wake_init(uct_uccl_iface_t *iface,
                                ucs_async_context_t *async);
void uct_uccl_wake_cleanup(uct_uccl_iface_t *iface);
void uct_uccl_wake_arm(uct_uccl_iface_t *iface);
int uct_uccl_wake_user_away(const uct_uccl_iface_t *iface, uint64_t now);
/* The default TLS model: UCX dlopens this library, and the initial-exec
 * model would need glibc's static TLS surplus, which other libraries may
 * have used up (dlopen then fails) */
typedef struct {
    unsigned ops;      /* operations the thread called */
    uint64_t busy_ns;  /* time its progress calls spent working */
} uct_uccl_thread_t;

/* When the pacer may grant next (ns, our clock); 0: no sender waits.
 * Inline: every engine pass asks (uct_uccl_rx_acks_owed). */
static UCS_F_ALWAYS_INLINE uint64_t
uct_uccl_credit_next_ns(const uct_uccl_iface_t *iface)
{
    return iface->credit.on ?
           uct_uccl_cc_eqds_pacer_next_ns(&iface->credit.pacer) : 0;
}

/* One variable, so that a progress call looks its address up once (each
 * access to a dynamic TLS variable calls __tls_get_addr) */
extern __thread uct_uccl_thread_t uct_uccl_thread;

/* The user's progress call, after the engine ran: how long the thread
 * was out of the transport since this iface's previous call (0 if it
 * called an operation meanwhile); away, it leaves the CQs armed. Inline:
 * it runs on every progress call. */
static UCS_F_ALWAYS_INLINE void
uct_uccl_wake_user_back(uct_uccl_iface_t *iface,
                        const uct_uccl_thread_t *thread)
{
    uint64_t out  = iface->async.last_user - iface->async.user_exit;
    uint64_t busy = thread->busy_ns - iface->async.busy_seen;

    iface->async.user_gap = ((thread->ops == iface->async.ops_seen) &&
                             (out > busy)) ? out - busy : 0;
    if (ucs_unlikely(iface->async.user_gap >= UCT_UCCL_WAKE_AWAY_NS)) {
        uct_uccl_wake_arm(iface);
    }
}

/* The user's progress call ends: one that did work took its time, which
 * the thread spent inside the transport */
static UCS_F_ALWAYS_INLINE void
uct_uccl_wake_user_leaves(uct_uccl_iface_t *iface, uct_uccl_thread_t *thread,
                          unsigned count)
{
    uint64_t now = (count > 0) ? uct_uccl_now_ns() : iface->async.last_user;

    thread->busy_ns       += now - iface->async.last_user;
    iface->async.user_exit = now;
    iface->async.ops_seen  = thread->ops;
    iface->async.busy_seen = thread->busy_ns;
}

/* An AM for UCX, handed over after the engine's pass, in order */
static UCS_F_ALWAYS_INLINE void
uct_uccl_async_defer_am(uct_uccl_iface_t *iface, uct_uccl_rx_desc_t *desc)
{
    ucs_queue_push(&iface->async.ams, &desc->queue);
    ++iface->async.deferred;
}

void uct_uccl_async_defer_op(uct_uccl_iface_t *iface, uct_uccl_op_t *op);
/* Does a completion of conn's operations wait in the queue? Its flush is
 * not complete before it. */
int uct_uccl_async_ops_pending(const uct_uccl_iface_t *iface,
                               const uct_uccl_conn_t *conn);
void uct_uccl_async_report_ops_of(uct_uccl_iface_t *iface,
                                  const uct_uccl_conn_t *conn);
void uct_uccl_async_defer_err(uct_uccl_conn_t *conn);
void uct_uccl_async_conn_cleanup(uct_uccl_conn_t *conn);
unsigned uct_uccl_iface_engine_progress(uct_uccl_iface_t *iface);

/* events (uccl_event.c) */
ucs_status_t uct_uccl_event_init(uct_uccl_iface_t *iface);
void uct_uccl_event_cleanup(uct_uccl_iface_t *iface);
void uct_uccl_event_signal(uct_uccl_iface_t *iface);
unsigned uct_uccl_event_drain_cqs(uct_uccl_iface_t *iface);
ucs_status_t uct_uccl_event_req_notify(uct_uccl_iface_t *iface,
                                       int solicited);
ucs_status_t uct_uccl_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p);
ucs_status_t uct_uccl_iface_event_arm(uct_iface_h tl_iface, unsigned events);

/* ep (uccl_ep.c); the ops table in uccl_async.c */
extern uct_iface_ops_t uct_uccl_iface_tl_ops;
ucs_status_t uct_uccl_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                   unsigned length, uint64_t remote_addr,
                                   uct_rkey_t rkey);
ssize_t uct_uccl_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                              void *arg, uint64_t remote_addr,
                              uct_rkey_t rkey);
ucs_status_t uct_uccl_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                   size_t iovcnt, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_uccl_ep_get_bcopy(uct_ep_h tl_ep,
                                   uct_unpack_callback_t unpack_cb,
                                   void *arg, size_t length,
                                   uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp);
ucs_status_t uct_uccl_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                   size_t iovcnt, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_uccl_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                  const void *payload, unsigned length);
ssize_t uct_uccl_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                             uct_pack_callback_t pack_cb, void *arg,
                             unsigned flags);
ucs_status_t uct_uccl_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                  const void *header, unsigned header_length,
                                  const uct_iov_t *iov, size_t iovcnt,
                                  unsigned flags, uct_completion_t *comp);
ucs_status_t uct_uccl_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                     unsigned flags);
void uct_uccl_ep_pending_purge(uct_ep_h tl_ep,
                               uct_pending_purge_callback_t cb, void *arg);
ucs_status_t uct_uccl_ep_flush(uct_ep_h tl_ep, unsigned flags,
                               uct_completion_t *comp);
ucs_status_t uct_uccl_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t uct_uccl_ep_check_alive(uct_ep_h tl_ep, unsigned flags,
                                    uct_completion_t *comp);
UCS_CLASS_DECLARE_NEW_FUNC(uct_uccl_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_uccl_ep_t, uct_ep_t);
void uct_uccl_ep_dispatch_pending(uct_uccl_conn_t *conn);

#endif

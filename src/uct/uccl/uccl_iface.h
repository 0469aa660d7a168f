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

#include "uccl_md.h"
#include "uccl_wire.h"
#include "uccl_seq.h"
#include "uccl_sack.h"
#include "uccl_tracker.h"
#include "uccl_rto.h"
#include "uccl_path.h"
#include "uccl_order.h"
#include "cc/uccl_cc.h"
#include "uccl_cc_cfg.h"

#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/ptr_array.h>
#include <ucs/time/time.h>
#include <ucs/time/timer_wheel.h>

#define UCT_UCCL_GRH_LEN          40
#define UCT_UCCL_GRH_SGID         8      /* source GID offset in a GRH */
#define UCT_UCCL_CTL_BUF_SIZE     (UCT_UCCL_WIRE_CTL_MAX + UCT_UCCL_GRH_LEN)
#define UCT_UCCL_CTL_RX_DEPTH     128
#define UCT_UCCL_CTL_TX_DEPTH     64
#define UCT_UCCL_SRQ_BATCH        32     /* SRQ WQEs per chained post */
#define UCT_UCCL_CQ_BATCH         32     /* completions per poll */
#define UCT_UCCL_SEND_HDR_MAX     48     /* largest SEND header */
#define UCT_UCCL_SMALL_MSG        8192   /* sticks to the last path */
#define UCT_UCCL_MAX_ZCOPY        (1ul << 30) /* PUT/GET, cut into chunks */
#define UCT_UCCL_PUT_GUARD        64     /* recent PUT targets remembered */
#define UCT_UCCL_TX_GROW_MIN      32     /* send buffers per pool growth */
#define UCT_UCCL_HDR_GROW         256    /* zcopy descriptors per growth */
#define UCT_UCCL_CLOSE_WAIT_NS    10000000ull /* closing: control buffers */


typedef struct uct_uccl_iface   uct_uccl_iface_t;
typedef struct uct_uccl_conn    uct_uccl_conn_t;
typedef struct uct_uccl_ep      uct_uccl_ep_t;
typedef struct uct_uccl_op      uct_uccl_op_t;
typedef struct uct_uccl_chunk   uct_uccl_chunk_t;


typedef enum {
    UCT_UCCL_MODE_CFG_AUTO,
    UCT_UCCL_MODE_CFG_UC,
    UCT_UCCL_MODE_CFG_RC,
    UCT_UCCL_MODE_CFG_LAST
} uct_uccl_mode_cfg_t;


typedef struct uct_uccl_iface_config {
    uct_iface_config_t      super;
    unsigned                num_paths;
    int                     mode;            /* uct_uccl_mode_cfg_t */
    size_t                  chunk_size;
    size_t                  seg_size;
    unsigned                tx_queue_len;    /* per data QP */
    unsigned                srq_size;
    int                     srq_flow;
    unsigned                cq_size;
    unsigned                max_queued;      /* unsent chunks per conn */
    unsigned                max_peers;       /* passive conns */
    unsigned                rx_max_bufs;
    unsigned                sack_window;
    unsigned                max_retries;
    double                  peer_timeout;
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


/* Where a control packet came from, as its UD completion says */
typedef struct uct_uccl_ctl_src {
    uint32_t                qpn;
    uint16_t                lid;
    const uint8_t           *gid;        /* the GRH's source GID, or NULL */
} uct_uccl_ctl_src_t;


/* Registered memory for the pools (one MR per mpool chunk) */
typedef struct uct_uccl_mp_chunk_hdr {
    struct ibv_mr           *mr;
} uct_uccl_mp_chunk_hdr_t;


/* What a chunk carries: the kind of its WR and local bookkeeping */
enum {
    UCT_UCCL_CHUNK_F_ACKED       = UCS_BIT(0), /* reliability layer done */
    UCT_UCCL_CHUNK_F_TRACKED     = UCS_BIT(1), /* in the UC tracker */
    UCT_UCCL_CHUNK_F_READ        = UCS_BIT(2), /* RC RDMA READ of a GET */
    UCT_UCCL_CHUNK_F_FENCE       = UCS_BIT(3), /* wait for all before it */
    UCT_UCCL_CHUNK_F_ZOMBIE      = UCS_BIT(4), /* released, WRs in flight */
    UCT_UCCL_CHUNK_F_CHAINED     = UCS_BIT(5), /* its WR waits in a chain */
    UCT_UCCL_CHUNK_F_SERVED      = UCS_BIT(6)  /* a reply to a peer's GET */
};


/*
 * One work request's worth of data, from a registered pool. It stays until
 * the peer acknowledged it (UC) or its send completed (RC), and until every
 * WR that carries it completed (it can be posted twice: original and resend).
 */
struct uct_uccl_chunk {
    ucs_queue_elem_t        queue;       /* conn's unsent queue */
    ucs_list_link_t         zlink;       /* conn's zombies */
    uct_uccl_conn_t         *conn;       /* NULL: orphan, freed on completion */
    uct_uccl_op_t           *op;         /* completion to update, or NULL */
    uint32_t                lkey;        /* of this desc (header/data) */
    uint8_t                 kind;        /* uct_uccl_kind_t */
    uint8_t                 flags;
    uint8_t                 posted;      /* WRs in send queues */
    uint8_t                 last;
    uint16_t                path;
    uint32_t                csn;
    uint32_t                barrier;     /* GETs issued before it */
    uint32_t                length;      /* payload bytes */
    uint32_t                hdr_len;     /* SEND header bytes in hdr */
    uint64_t                laddr;       /* payload */
    uint32_t                payload_lkey;
    uint32_t                extra_len;   /* AM zcopy: user header in data */
    uint32_t                rkey;        /* PUT/GET_RESP/READ target */
    uint32_t                src_rkey;    /* GET_RESP: our rkey of laddr */
    uint64_t                raddr;
    uint64_t                sent_ns;     /* RC: posted at (RTT sample) */
    struct ibv_send_wr      wr;
    struct ibv_sge          sge[3];
    union {
        uct_uccl_am_hdr_t   am;
        uct_uccl_get_req_t  get_req;
        uct_uccl_get_done_t get_done;
        uct_uccl_get_data_t get_data;
        uct_uccl_retx_hdr_t retx;
        uint8_t             raw[UCT_UCCL_SEND_HDR_MAX];
    } hdr;
    char                    data[];      /* seg_size bytes */
};


/* SRQ receive buffer. A SEND lands at data + pad: the payload after an AM
 * header is then aligned for the AM handler (8 bytes, or the iface's
 * am_alignment and am_align_offset); data itself starts on a cache line
 * or on that alignment. */
typedef struct uct_uccl_rx_desc {
    ucs_queue_elem_t        queue;       /* iface's deferred AMs */
    uint32_t                lkey;
    uint32_t                pad;         /* iface's config.rx_pad */
    char                    data[] UCS_V_ALIGNED(8);
} uct_uccl_rx_desc_t;

#define UCT_UCCL_RX_ALIGN         8      /* AM payload, by default */

static inline void *uct_uccl_rx_data(uct_uccl_rx_desc_t *desc)
{
    return desc->data + desc->pad;
}


typedef enum {
    UCT_UCCL_OP_ZCOPY,       /* put/am zcopy: comp when all chunks acked */
    UCT_UCCL_OP_GET_BCOPY,
    UCT_UCCL_OP_GET_ZCOPY,
    UCT_UCCL_OP_FLUSH,
    UCT_UCCL_OP_GET_SERVE    /* peer's GET (UC): GET_DONE when all acked */
} uct_uccl_op_type_t;

/* An operation with a user completion */
struct uct_uccl_op {
    ucs_list_link_t         list;        /* conn's outstanding ops */
    const void              *owner;      /* its conn (compared, never
                                            followed: it may be gone) */
    ucs_list_link_t         get_link;    /* GET: conn's GETs, in order */
    uint32_t                gseq;        /* GET: its place in that order */
    uct_uccl_op_type_t      type;
    uint32_t                pending;     /* parts still to complete */
    ucs_status_t            status;
    uct_completion_t        *comp;
    uint64_t                id;          /* GET: echoed in GET_DONE */
    uint32_t                flush_csn;   /* FLUSH: tracker nxt to reach */
    uct_unpack_callback_t   unpack_cb;   /* GET bcopy */
    void                    *unpack_arg;
    uct_uccl_chunk_t        *buf;        /* GET bcopy, RC: READ lands here */
    struct uct_uccl_rx_desc *data_desc;  /* GET bcopy, UC: the GET_DATA */
    size_t                  length;
};


typedef struct uct_uccl_qp {
    uct_uccl_conn_t         *conn;       /* NULL: conn gone, QP draining */
    struct ibv_qp           *qp;
    uint32_t                remote_qpn;
    uint16_t                index;
    uint16_t                outstanding; /* WRs posted, not completed */
    unsigned                sent_head;   /* oldest of them in sent[] */
    uct_uccl_chunk_t        **sent;      /* ring of posted WRs' chunks: one
                                            signaled CQE ends a chain and
                                            completes every WR before it */
    struct ibv_send_wr      *chain;      /* being built by the pump */
    struct ibv_send_wr      *chain_tail;
    unsigned                chain_len;
    struct uct_uccl_qp      *chain_next; /* next path in posting order */
} uct_uccl_qp_t;


/* The newest PUT chunk sent to a target: a resend of an older chunk to the
 * same target must not land after it (UC retransmission reorders) */
typedef struct uct_uccl_put_guard {
    uint64_t                raddr;
    uint32_t                rkey;
    uint32_t                csn;
    uint32_t                length;
    uint32_t                valid;
} uct_uccl_put_guard_t;


typedef enum {
    UCT_UCCL_CONN_CONNECTING,
    UCT_UCCL_CONN_CONNECTED,
    UCT_UCCL_CONN_FAILED
} uct_uccl_conn_state_t;


typedef struct uct_uccl_conn_stats {
    uint64_t                chunks_tx;
    uint64_t                bytes_tx;
    uint64_t                chunks_rx;
    uint64_t                retx;
    uint64_t                retx_bytes;
    uint64_t                retx_obsolete; /* resent without data: newer
                                              data already on its way */
    uint64_t                retx_direct; /* resent as the original WRITE:
                                            no earlier copy can land */
    uint64_t                tail_marks;  /* empty WRITEs ending a chain */
    uint64_t                fast_retx;
    uint64_t                tail_probes; /* resends when ACKs stalled */
    uint64_t                timeouts;
    uint64_t                dup_rx;
    uint64_t                acks_tx;
    uint64_t                acks_rx;
    uint64_t                sq_full;
    uint64_t                am_held;     /* AMs that waited for order */
    uint64_t                cc_paced;    /* sends the pacing held back */
    uint64_t                cc_samples;  /* RTT samples given to the cc */
} uct_uccl_conn_stats_t;


struct uct_uccl_conn {
    uct_uccl_iface_t        *iface;
    uct_uccl_ep_t           *ep;         /* NULL on the passive side */
    uint32_t                id;
    uint32_t                remote_id;
    uint64_t                remote_uuid;
    uint64_t                token;       /* the peer puts it in every
                                            control packet to us */
    uint64_t                remote_token; /* we put it in ours */
    uct_uccl_conn_state_t   state;
    uint8_t                 passive;
    uint8_t                 rc;          /* data QPs are RC */
    uint8_t                 in_sched;
    uint8_t                 ack_pending; /* on the iface ACK list */
    uint8_t                 ack_busy;    /* the next ACK says busy */
    uint8_t                 err_deferred; /* on the iface's async errs */
    uint8_t                 peer_closed; /* the peer's side is gone: fail at
                                            the next operation */
    ucs_status_t            fail_status;

    /* peer */
    struct ibv_ah           *ah;
    uint32_t                remote_ctl_qpn;
    uct_uccl_device_addr_t  remote_dev;
    uint32_t                remote_psn;
    uint32_t                remote_chunk_size;

    unsigned                num_paths;
    uct_uccl_qp_t           *paths;
    uct_uccl_paths_t        sel;         /* path scoreboard and choice */
    unsigned                burst_left;  /* chunks left for sel.last */
    uct_uccl_qp_t           *chains;     /* paths with a chain, in the */
    uct_uccl_qp_t           **chains_tail; /* order their chains began */
    uint32_t                psn;

    /* transmit */
    ucs_queue_head_t        tx_queue;    /* chunks not posted yet */
    unsigned                tx_queued;
    uct_uccl_tracker_t      tracker;     /* UC: unacked chunks */
    uct_uccl_rto_t          rto;
    uint32_t                init_csn;
    uint32_t                rc_csn;      /* RC: next CSN (no tracker) */
    uint32_t                rc_outstanding;
    uint32_t                rc_writes;   /* RC: WRITEs posted, not done */
    uint16_t                ord_path;    /* RC: the path AMs take */
    uint32_t                gets_issued; /* GET ops ever issued */
    uint32_t                serve_reserved; /* reply chunks of peer's GET
                                               requests taken, not served */
    uint32_t                serve_chunks; /* reply chunks being sent */
    ucs_list_link_t         gets;        /* GET ops not complete, in order */
    uct_uccl_cc_t           cc;
    ucs_wtimer_t            pace_timer;  /* on the iface's pace_wheel */
    uct_uccl_put_guard_t    put_guard[UCT_UCCL_PUT_GUARD];
    uint8_t                 fence;       /* wait for all acked before next */
    uint64_t                last_progress; /* ns: una last moved */
    uint64_t                last_busy;   /* ns: the peer said busy */
    uint8_t                 probes;      /* tail probes since last_progress */
    uint64_t                probe_time;  /* ns: the last tail probe */
    uint64_t                lossy_until; /* ns: mark every chain's tail */
    uint64_t                next_op_id;
    ucs_list_link_t         ops;         /* outstanding ops with comp */
    ucs_list_link_t         flushes;     /* flush ops waiting */
    ucs_list_link_t         zombies;     /* released chunks still posted */
    ucs_list_link_t         rc_inflight; /* RC: posted, not completed */
    uint8_t                 in_dispatch; /* running the pending queue */
    ucs_queue_head_t        pending_q;   /* uct_pending_req_t */

    /* receive */
    uct_uccl_sack_t         sack;
    uint8_t                 sack_valid;
    uint32_t                rx_since_ack;
    uint32_t                echo_csn;
    uint8_t                 echo_path;
    uint64_t                echo_time;
    uint64_t                echo_wait;   /* ns it may have sat in our CQ */
    uint64_t                ack_due;     /* ns: send the owed ACK by then */
    uct_uccl_order_t        order;       /* AMs, GET requests: in order
                                            (UC, with sack) */
    uint8_t                 cc_valid;

    /* set-up */
    uint64_t                conn_start;
    uint64_t                conn_next_try;
    unsigned                conn_tries;

    /* keepalive (uct_ep_check): probe outstanding since ka_start, or 0 */
    uint64_t                ka_start;
    uint64_t                ka_next_try;
    uint64_t                ka_rx;       /* keepalives received */
    uint64_t                idle_seen;   /* passive: packets seen ... */
    uint64_t                idle_since;  /* ... unchanged since (ns) */

    ucs_list_link_t         list;        /* iface conns */
    ucs_list_link_t         sched;       /* iface scheduler */
    ucs_list_link_t         ack_link;    /* iface ACK list */
    ucs_list_link_t         err_link;    /* iface's async errs */
    uct_uccl_conn_stats_t   stats;
};


struct uct_uccl_ep {
    uct_base_ep_t           super;
    uct_uccl_conn_t         *conn;
};


KHASH_MAP_INIT_INT(uct_uccl_qpn, uct_uccl_qp_t*);


typedef struct uct_uccl_iface_stats {
    uint64_t                bad_ctl;     /* malformed control packets */
    uint64_t                unknown_conn;
    uint64_t                forged_ctl;  /* control packets for a conn,
                                            not from its peer */
    uint64_t                bad_ack;     /* out-of-range cum / bits */
    uint64_t                bad_data;    /* malformed SEND on a data QP */
    uint64_t                bad_rkey;    /* retx/get with a foreign key */
    uint64_t                unknown_qpn;
    uint64_t                err_cqe;
    uint64_t                srq_empty;
    uint64_t                out_of_window;
    uint64_t                order_full;  /* ordered messages refused: too
                                            many wait for earlier chunks */
    uint64_t                rx_no_desc;
    uint64_t                ctl_tx_busy;
    uint64_t                peers_lost;  /* passive conns of silent peers */
    uint64_t                peers_refused; /* requests beyond MAX_PEERS */
    uint64_t                get_refused; /* GET requests beyond MAX_QUEUED
                                            chunks being served */
    uint64_t                defer_full;  /* AMs refused while too many
                                            wait for the user */
    uint64_t                doorbells;
    uint64_t                wrs;
    uint64_t                send_cqes;   /* data QPs: one per chain */
    uint64_t                async_passes; /* engine runs for an idle user */
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
    struct ibv_srq          *srq;
    unsigned                srq_posted;

    /* control QP and its buffers (one MR) */
    struct {
        struct ibv_cq       *cq;
        struct ibv_qp       *qp;
        struct ibv_mr       *mr;
        char                *bufs;       /* RX_DEPTH rx + TX_DEPTH tx */
        unsigned            tx_free[UCT_UCCL_CTL_TX_DEPTH];
        unsigned            tx_nfree;
    } ctl;

    ucs_mpool_t             tx_mp;       /* uct_uccl_chunk_t + seg */
    ucs_mpool_t             hdr_mp;      /* uct_uccl_chunk_t alone: the
                                            payload stays where it is */
    ucs_mpool_t             rx_mp;       /* uct_uccl_rx_desc_t + rx_buf */
    ucs_mpool_t             op_mp;       /* uct_uccl_op_t */
    khash_t(uct_uccl_qpn)   qpn_hash;
    ucs_ptr_array_t         conn_ids;
    ucs_list_link_t         conns;
    ucs_list_link_t         sched;       /* conns with work to send */
    ucs_list_link_t         ack_list;    /* conns owing an ACK */
    unsigned                tx_outstanding; /* WRs on the send CQ */
    uint64_t                next_timer;
    uint64_t                rx_poll_ns;  /* the receive CQ's last poll */
    uint64_t                rx_since_ns; /* what that poll found arrived
                                            after this (the poll before) */
    ucs_twheel_t            pace_wheel;  /* paced conns wait here */
    unsigned                num_passive; /* conns peers opened to us */
    unsigned                rx_held;     /* receive buffers parked for
                                            their order, all conns */
    unsigned                busy;        /* in progress or a purge: new
                                            chunks wait for the scheduler */
    int                     dump_seen;   /* SIGUSR2 dump requests served */

    /* the engine runs from an async timer while the user does not call
     * progress (uccl_async.c); UCX hears of it at the next progress */
    struct {
        int                 timer_id;    /* -1: none */
        int                 timer_fd;    /* its timerfd, or -1 */
        uint64_t            idle_ns;
        uint64_t            last_user;   /* ns: user's last progress call */
        uint8_t             active;      /* in a pass: defer callbacks */
        unsigned            deferred;    /* entries in the three below */
        ucs_queue_head_t    ams;         /* uct_uccl_rx_desc_t, in order */
        ucs_list_link_t     ops;         /* uct_uccl_op_t, completed */
        ucs_list_link_t     errs;        /* failed conns' ep errors */
    } async;

    struct {
        unsigned            num_paths;
        size_t              chunk_size;
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
        uint64_t            idle_timeout_ns; /* UINT64_MAX: never */
        uct_uccl_rto_params_t rto;
        uint64_t            conn_retry_ns;
        uint64_t            conn_timeout_ns;
        unsigned            dupack_thresh;
        unsigned            reorder_thresh;
        unsigned            ack_every;
        const char          *cc;
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
};


static UCS_F_ALWAYS_INLINE uint64_t uct_uccl_now_ns(void)
{
    return ucs_time_to_nsec(ucs_get_time());
}

/* Held back by the pacing: its timer brings it back to the scheduler */
static UCS_F_ALWAYS_INLINE int uct_uccl_conn_is_paced(uct_uccl_conn_t *conn)
{
    return conn->pace_timer.is_active;
}

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
void *uct_uccl_iface_ctl_tx_buf(uct_uccl_iface_t *iface, unsigned *idx_p);
void uct_uccl_iface_ctl_post(uct_uccl_iface_t *iface, struct ibv_ah **ahs,
                             const uint32_t *qpns, const unsigned *idx,
                             const size_t *lens, unsigned count);
void uct_uccl_iface_sched_add(uct_uccl_iface_t *iface, uct_uccl_conn_t *conn);
void uct_uccl_iface_ack_add(uct_uccl_iface_t *iface, uct_uccl_conn_t *conn);
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

/* conn (uccl_conn.c) */
ucs_status_t uct_uccl_conn_create(uct_uccl_iface_t *iface, int passive,
                                  const uct_uccl_device_addr_t *dev,
                                  uint32_t remote_ctl_qpn, unsigned want_paths,
                                  uct_uccl_conn_t **conn_p);
void uct_uccl_conn_destroy(uct_uccl_conn_t *conn);
ucs_status_t uct_uccl_conn_start(uct_uccl_conn_t *conn);
void uct_uccl_conn_fail(uct_uccl_conn_t *conn, ucs_status_t status);
ucs_status_t uct_uccl_conn_fail_later(uct_uccl_conn_t *conn);
void uct_uccl_conn_handle_ctl(uct_uccl_iface_t *iface, const void *pkt,
                              size_t len, const uct_uccl_ctl_src_t *src);
uct_uccl_conn_t *uct_uccl_conn_bound(uct_uccl_iface_t *iface, uint32_t id,
                                     uint64_t token,
                                     const uct_uccl_ctl_src_t *src);
void uct_uccl_conn_timers(uct_uccl_iface_t *iface, uint64_t now);
void uct_uccl_conn_dump_stats(uct_uccl_conn_t *conn, FILE *stream);
void uct_uccl_iface_qp_drained(uct_uccl_iface_t *iface, uct_uccl_qp_t *drain);
void uct_uccl_conn_send_disconnect(uct_uccl_conn_t *conn, ucs_status_t reason);

ucs_status_t uct_uccl_conn_check(uct_uccl_conn_t *conn);

/* The largest chunk of conn's: ours, or less if the peer's receive
 * buffers (a SEND header and its payload) hold less */
static inline size_t uct_uccl_conn_chunk_size(const uct_uccl_conn_t *conn)
{
    return ucs_min(conn->iface->config.chunk_size,
                   conn->remote_chunk_size - UCT_UCCL_SEND_HDR_MAX);
}

/* tx (uccl_tx.c) */
void uct_uccl_tx_enqueue(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk);
unsigned uct_uccl_tx_pump(uct_uccl_conn_t *conn, size_t quantum);
void uct_uccl_tx_post_now(uct_uccl_conn_t *conn);
void uct_uccl_tx_completion(uct_uccl_iface_t *iface, struct ibv_wc *wc);
void uct_uccl_tx_handle_ack(uct_uccl_conn_t *conn, const uct_uccl_ack_t *ack);
void uct_uccl_tx_timers(uct_uccl_conn_t *conn, uint64_t now);
void uct_uccl_tx_purge(uct_uccl_conn_t *conn, ucs_status_t status);
void uct_uccl_tx_orphan(uct_uccl_conn_t *conn);
int uct_uccl_tx_is_flushed(uct_uccl_conn_t *conn);
void uct_uccl_tx_fence(uct_uccl_conn_t *conn);
void uct_uccl_tx_check_flush(uct_uccl_conn_t *conn);
uct_uccl_chunk_t *uct_uccl_chunk_get(uct_uccl_iface_t *iface);
uct_uccl_chunk_t *uct_uccl_chunk_get_hdr(uct_uccl_iface_t *iface);
uct_uccl_op_t *uct_uccl_op_get(uct_uccl_conn_t *conn, uct_uccl_op_type_t type,
                               uct_completion_t *comp);
void uct_uccl_op_part_done(uct_uccl_conn_t *conn, uct_uccl_op_t *op,
                           ucs_status_t status);
void uct_uccl_op_report(uct_uccl_op_t *op);
void uct_uccl_conn_kick(uct_uccl_conn_t *conn);

/* the UC GET protocol (uccl_get.c) */
int uct_uccl_get_admit(uct_uccl_conn_t *conn, const uct_uccl_get_req_t *req,
                       int first_missing);
ucs_status_t uct_uccl_get_serve(uct_uccl_conn_t *conn,
                                const uct_uccl_get_req_t *req);
ucs_status_t uct_uccl_get_done_send(uct_uccl_conn_t *conn, uint64_t op_id,
                                    ucs_status_t status, uint64_t length);
void uct_uccl_get_data_hdr(uct_uccl_chunk_t *chunk, uint64_t op_id,
                           ucs_status_t status, uint32_t length);
void uct_uccl_get_handle_done(uct_uccl_conn_t *conn, uint64_t op_id,
                              ucs_status_t status);
void uct_uccl_get_handle_data(uct_uccl_conn_t *conn,
                              uct_uccl_rx_desc_t *desc);

/* configuration (uccl_iface_cfg.c) */
ucs_status_t uct_uccl_iface_config_check(const uct_uccl_iface_config_t *config);
ucs_status_t uct_uccl_iface_mode_select(uct_uccl_iface_t *iface,
                                        const uct_uccl_md_t *md, int mode);
void uct_uccl_iface_config_set(uct_uccl_iface_t *iface,
                               const uct_uccl_iface_config_t *config);

/* async (uccl_async.c) */
ucs_status_t uct_uccl_async_init(uct_uccl_iface_t *iface, double idle);
void uct_uccl_async_cleanup(uct_uccl_iface_t *iface);
void uct_uccl_async_dispatch(uct_uccl_iface_t *iface);
void uct_uccl_async_defer_am(uct_uccl_iface_t *iface,
                             uct_uccl_rx_desc_t *desc);
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
ucs_status_t uct_uccl_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p);
ucs_status_t uct_uccl_iface_event_arm(uct_iface_h tl_iface, unsigned events);

/* rx (uccl_rx.c) */
void uct_uccl_rx_completion(uct_uccl_iface_t *iface, struct ibv_wc *wc);
unsigned uct_uccl_rx_flush_acks(uct_uccl_iface_t *iface, uint64_t now);
void uct_uccl_rx_refill(uct_uccl_iface_t *iface);
void uct_uccl_rx_conn_cleanup(uct_uccl_conn_t *conn);
void uct_uccl_rx_am_deliver(uct_uccl_iface_t *iface,
                            uct_uccl_rx_desc_t *desc);
void uct_uccl_rx_am_handle(uct_uccl_iface_t *iface,
                           uct_uccl_rx_desc_t *desc);

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

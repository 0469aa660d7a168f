/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * A conn: one connected pair of ifaces, its data QPs (paths) and the state
 * of both directions; set-up, keepalive, failure and teardown
 * (uccl_conn.c). An ep wraps the initiator's conn.
 */
#ifndef UCT_UCCL_CONN_H_
#define UCT_UCCL_CONN_H_

#include "uccl_chunk.h"
#include "uccl_md.h"
#include "proto/uccl_seq.h"
#include "proto/uccl_sack.h"
#include "proto/uccl_tracker.h"
#include "proto/uccl_rto.h"
#include "proto/uccl_path.h"
#include "proto/uccl_order.h"
#include "proto/uccl_put_runs.h"
#include "proto/cc/uccl_cc.h"

#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/khash.h>
#include <ucs/stats/stats.h>
#include <ucs/time/timer_wheel.h>
#include <stdio.h>


/* Where a control packet came from, as its UD completion says */
typedef struct uct_uccl_ctl_src {
    uint32_t                qpn;
    uint16_t                lid;
    const uint8_t           *gid;        /* the GRH's source GID, or NULL */
} uct_uccl_ctl_src_t;


/* Our outstanding GETs by op id: the peer's answer names one */
KHASH_MAP_INIT_INT64(uct_uccl_gets, uct_uccl_op_t*);


/* A path's part in an RC path reset (uccl_reset.c) */
typedef enum {
    UCT_UCCL_RESET_NONE,
    UCT_UCCL_RESET_ASKED,   /* we asked; our new QP waits for the peer's */
    UCT_UCCL_RESET_OFFERED, /* we answered; our new QP is paired and
                               waits for the asker's confirmation */
    UCT_UCCL_RESET_READY    /* both new QPs paired: ours takes the path
                               once the old one has nothing out */
} uct_uccl_reset_state_t;

/* A path small messages keep (uct_uccl_path_sticky) */
typedef struct uct_uccl_sticky {
    uint16_t                path;
    uint64_t                until;       /* kept at least until then */
} uct_uccl_sticky_t;

/* RC: what the completions of WRs whose data goes one way tell (the
 * stall rule, uct_uccl_path_stalled_rc): the two ways queue apart */
typedef struct uct_uccl_rc_dir {
    uint64_t       done_sent; /* the latest post time of a completed WR */
    uct_uccl_rto_t lat;       /* its post-to-completion times */
} uct_uccl_rc_dir_t;

typedef struct uct_uccl_qp {
    uct_uccl_conn_t         *conn;       /* NULL: conn gone, QP draining */
    struct ibv_qp           *qp;
    uint32_t                remote_qpn;
    uint16_t                index;
    uint16_t                outstanding; /* WRs posted, not completed */
    uint16_t                nosig;       /* of them, inline AMs posted
                                            unsignaled: NULL in sent[] */
    uint16_t                unsig_run;   /* of those, the ones after the
                                            last signaled WR */
    unsigned                sent_head;   /* oldest of them in sent[] */
    uct_uccl_chunk_t        **sent;      /* ring of posted WRs' chunks: one
                                            signaled CQE ends a chain and
                                            completes every WR before it */
    struct ibv_send_wr      *chain;      /* being built by the pump */
    struct ibv_send_wr      *chain_tail;
    unsigned                chain_len;
    struct uct_uccl_qp      *chain_next; /* next path in posting order */
    /* RC: the QP pair being replaced (uccl_reset.c) */
    struct ibv_qp           *next_qp;    /* the new QP, until swapped in */
    uint32_t                next_remote_qpn;
    uint32_t                reset_gen_tx; /* our latest reset of the path */
    uint32_t                reset_gen_rx; /* the peer's latest, answered */
    uint8_t                 reset;       /* uct_uccl_reset_state_t */
    uint64_t                reset_start;
    uint64_t                reset_next_try;
    uint64_t                overtaken_sent; /* RC: the post time of the
                                               oldest WR when ... */
    uint64_t                overtaken_at;   /* ... a later one completed */
    /* RC: PSNs the WRs posted on qp took (from the conn's psn); once the
     * old pair of a reset is stopped, the rq_psn of each side's old QP
     * (UCT_UCCL_QP_F_*): how far it executed what the other side sent */
    uint32_t                psn_used;
    uint32_t                own_rq_psn;
    uint32_t                peer_rq_psn;
    uint8_t                 psn_flags;
    ucs_queue_head_t        held;        /* RC: flushed WRITEs waiting for
                                            peer_rq_psn */
} uct_uccl_qp_t;

enum {
    UCT_UCCL_QP_F_OWN_PSN   = UCS_BIT(0), /* own_rq_psn is known */
    UCT_UCCL_QP_F_PEER_PSN  = UCS_BIT(1), /* peer_rq_psn is known */
    UCT_UCCL_QP_F_PEER_MUTE = UCS_BIT(2), /* the peer could not tell it */
    UCT_UCCL_QP_F_PEER_TOLD = UCT_UCCL_QP_F_PEER_PSN | UCT_UCCL_QP_F_PEER_MUTE
};


/* A peer iface, as our conns to it name it (uct_uccl_conn_same_peer) */
typedef struct uct_uccl_dest_key {
    uint8_t                 gid[16];
    uint32_t                ctl_qpn;
    uint16_t                lid;
} uct_uccl_dest_key_t;


/* A peer iface our conns send to (uccl_sched.c). Its shared receive queue
 * takes the chunks of all of them: together they keep at most its receive
 * window in flight (SRQ_FLOW). Once one was refused room, they claim what
 * comes free in turns, in the order they were refused. */
typedef struct uct_uccl_dest {
    uct_uccl_dest_key_t     key;
    int32_t                 room;        /* chunks the window has left, as
                                            the conns last counted (< 0:
                                            it shrank below them) */
    uint32_t                window;
    unsigned                nconns;
    unsigned                contenders;  /* conns refused room and not done
                                            with their turn (0: any conn
                                            may take room) */
    ucs_list_link_t         waiters;     /* those waiting, in order */
    uct_uccl_conn_t         *turn;       /* the one whose turn it is */
    uint32_t                quota;       /* chunks the turn may claim */
    uint32_t                claimed;     /* ... and did so far */
} uct_uccl_dest_t;


typedef enum {
    UCT_UCCL_CONN_CONNECTING,
    UCT_UCCL_CONN_CONNECTED,
    UCT_UCCL_CONN_FAILED
} uct_uccl_conn_state_t;


typedef struct uct_uccl_conn_stats {
    UCT_UCCL_CONN_COUNTERS(UCT_UCCL_COUNTER_FIELD)
} uct_uccl_conn_stats_t;


/* Receiver-driven congestion control of a conn (uccl_credit.c): the
 * sender's requests to the peer, the receiver's grants owed to it */
typedef struct uct_uccl_conn_credit {
    uint32_t                want;        /* the last request sent */
    uint32_t                spec;
    uint32_t                lost;
    uint32_t                returned;    /* credit given back, as told */
    uint32_t                held;        /* holdings, as told */
    uint32_t                grant;       /* the peer's newest grant */
    uint32_t                rx_want;     /* the peer's last request */
    uint32_t                rx_spec;
    uint32_t                rx_lost;
    uint64_t                req_ns;      /* the last request went then */
    uint64_t                heard_ns;    /* ... or a new grant came */
    uint64_t                retry_ns;    /* unheard this long: ask again */
    uint64_t                peer_ns;     /* the peer's last grant came */
    uint64_t                wait_ns;     /* short of credit, unanswered,
                                            since; 0: not waiting */
    uint32_t                resend_bytes; /* the largest resend that
                                            waits for credit */
    uint8_t                 resend_wait; /* a resend waits for credit */
    uint8_t                 owed;        /* a grant goes to the peer */
    uint8_t                 pull_wait;   /* the head GET waits for our
                                            pacer (counted once) */
    ucs_list_link_t         owed_link;   /* iface's credit.owed */
} uct_uccl_conn_credit_t;


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
    uint8_t                 ack_pending; /* on the iface ACK list */
    uint8_t                 ack_busy;    /* the next ACK says busy */
    uint8_t                 ack_hold;    /* the owed ACK waits a pass for
                                            an AM to carry it */
    uint8_t                 err_deferred; /* on the iface's async errs */
    uint8_t                 peer_closed; /* the peer's side is gone: fail
                                            with the next operation */
    ucs_status_t            fail_status;

    /* peer */
    struct ibv_ah           *ah;
    uint32_t                remote_ctl_qpn;
    uint32_t                remote_ctl_alt[UCT_UCCL_WIRE_CTL_ALT];
    uint8_t                 ctl_spread;  /* the peer knows our other
                                            control QPs: our records may
                                            come from any */
    uct_uccl_device_addr_t  remote_dev;
    uint32_t                remote_psn;
    uint32_t                remote_rx_buf_size;

    unsigned                num_paths;
    uct_uccl_qp_t           *paths;
    uint32_t                max_inline;  /* a WR up to this goes inline */
    uct_uccl_paths_t        sel;         /* path scoreboard and choice */
    unsigned                burst_left;  /* chunks left for sel.last */
    uct_uccl_qp_t           *chains;     /* paths with a chain, in the */
    uct_uccl_qp_t           **chains_tail; /* order their chains began */
    uint32_t                chain_gen;   /* chains posted so far */
    uint32_t                psn;

    /* transmit */
    ucs_queue_head_t        tx_queue;    /* chunks not posted yet */
    unsigned                tx_queued;
    uint64_t                tx_queued_bytes; /* of them, what credit must
                                            cover (uct_uccl_chunk_asks) */
    uct_uccl_tracker_t      tracker;     /* UC: unacked chunks */
    uct_uccl_rto_t          rto;
    uint32_t                init_csn;
    uint32_t                rc_csn;      /* RC: next AM's CSN (no tracker;
                                            the peer drops one it had) */
    uint32_t                rc_seq;      /* RC: next chunk's rc_seq */
    uint64_t                rc_fail_since; /* RC: the first failed WR
                                              since the last completion was
                                              posted then; 0: none */
    uct_uccl_rc_dir_t       rc_dir[UCT_UCCL_RC_DIRS]; /* RC: completions
                                            by the way their data went */
    uint32_t                rc_outstanding;
    uint32_t                rc_resets;   /* RC: paths being reset */
    enum ibv_mtu            path_mtu;    /* agreed with the peer */
    uint32_t                rc_writes;   /* RC: WRITEs posted, not done */
    uct_uccl_sticky_t       small;       /* the path small messages keep */
    uct_uccl_sticky_t       rc_am;       /* RC: the path AMs keep, which
                                            nothing else may move */
    uint32_t                gets_issued; /* GET ops ever issued */
    uint32_t                serve_reserved; /* reply chunks of peer's GET
                                               requests taken, not served */
    uint32_t                serve_chunks; /* reply chunks being sent */
    ucs_list_link_t         gets;        /* GET ops not complete, in order */
    khash_t(uct_uccl_gets)  get_ids;     /* the same, by op id */
    uct_uccl_cc_t           cc;
    uct_uccl_conn_credit_t  credit;      /* receiver-driven cc */
    ucs_wtimer_t            pace_timer;  /* on the iface's pace_wheel */
    uct_uccl_put_runs_t     put_runs;    /* UC: the PUTs sent lately */
    uint8_t                 fence;       /* wait for all acked before next */
    uint64_t                last_progress; /* ns: una last moved */
    uint64_t                last_busy;   /* ns: the peer said busy */
    uint8_t                 probes;      /* tail probes since last_progress */
    uint64_t                probe_time;  /* ns: the last tail probe */
    uint64_t                lossy_until; /* ns: mark every chain's tail */
    uint32_t                chunk_cur;   /* new chunks' size (UC: grows
                                            while nothing is resent) */
    uint64_t                chunk_grow_at; /* ns: it may double then */
    uint64_t                next_op_id;
    ucs_list_link_t         ops;         /* outstanding ops with comp */
    ucs_list_link_t         flushes;     /* flush ops waiting */
    ucs_list_link_t         zombies;     /* released chunks still posted */
    ucs_list_link_t         rc_inflight; /* RC: posted, not completed */
    ucs_queue_head_t        pending_q;   /* uct_pending_req_t */

    /* transmit scheduler (uccl_sched.c): a group of its own, holding the
     * conn while it has work, on the iface's arbiter while it may send */
    ucs_arbiter_group_t     sched_group;
    ucs_arbiter_elem_t      sched;
    uct_uccl_dest_t         *dest;       /* NULL until connected */
    uint32_t                dest_counted; /* its chunks in flight, as its
                                             dest's room counts them */
    uint8_t                 dest_waiting; /* on dest->waiters */
    uint8_t                 tx_shut;      /* its window held the queue's
                                             head at its last turn */
    uint8_t                 dest_quota_used; /* its turn claimed all */
    ucs_list_link_t         dest_link;

    /* receive */
    uct_uccl_sack_t         sack;
    uint8_t                 sack_valid;
    uint8_t                 order_valid; /* conn->order was set up */
    uint32_t                rc_am_csn;   /* RC: the last AM handed over */
    uint32_t                rx_since_ack;
    uint32_t                echo_csn;
    uint8_t                 echo_path;
    uint64_t                echo_time;
    uint64_t                echo_since;  /* since when it may have sat in
                                            our CQ: uct_uccl_iface_rx_since */
    uint64_t                ack_due;     /* ns: send the owed ACK by then */
    uint32_t                ack_hold_pass; /* the pass ack_hold was set in */
    uct_uccl_order_t        order;       /* AMs, GET requests: in order
                                            (UC, with sack) */

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

    /* timers (uccl_conn_live.c): on the iface's active list while they
     * have work every tick; an idle passive conn waits for its idle
     * deadline on the iface's idle wheel */
    uint8_t                 timer_active;
    uint8_t                 timer_idle;  /* ticks idle on the list */
    ucs_list_link_t         timer_link;
    ucs_wtimer_t            idle_timer;

    ucs_list_link_t         list;        /* iface conns */
    ucs_list_link_t         ack_link;    /* iface ACK list */
    /* the ACK the last AM from the peer carried, held for the next pass
     * (uct_uccl_rx_acks_in) */
    uint8_t                 ack_in_held;
    uct_uccl_ack_t          ack_in;
    uint64_t                ack_in_cqe_ns; /* when it arrived */
    uint64_t                ack_in_seen_ns; /* when the poll found it */
    ucs_list_link_t         ack_in_link; /* iface's acks_in */
    ucs_list_link_t         err_link;    /* iface's async errs */
    uct_uccl_conn_stats_t   stats;
    UCS_STATS_NODE_DECLARE(stats_node)   /* where UCX has stats */
};


struct uct_uccl_ep {
    uct_base_ep_t           super;
    uct_uccl_conn_t         *conn;
};


/* Held back by the pacing: its timer brings it back to the scheduler */
static UCS_F_ALWAYS_INLINE int uct_uccl_conn_is_paced(uct_uccl_conn_t *conn)
{
    return conn->pace_timer.is_active;
}

/* Do a and b lead to the same peer iface (its control QP and port)? Our
 * conns to one peer iface share the ACKs an AM carries */
static inline int uct_uccl_conn_same_peer(const uct_uccl_conn_t *a,
                                          const uct_uccl_conn_t *b)
{
    return (a->remote_ctl_qpn == b->remote_ctl_qpn) &&
           (a->remote_dev.lid == b->remote_dev.lid) &&
           !memcmp(a->remote_dev.gid, b->remote_dev.gid,
                   sizeof(a->remote_dev.gid));
}

/* conn (uccl_conn.c) */
ucs_status_t uct_uccl_conn_create(uct_uccl_iface_t *iface, int passive,
                                  const uct_uccl_device_addr_t *dev,
                                  uint32_t remote_ctl_qpn, unsigned want_paths,
                                  uct_uccl_conn_t **conn_p);
void uct_uccl_conn_destroy(uct_uccl_conn_t *conn);
ucs_status_t uct_uccl_conn_start(uct_uccl_conn_t *conn);
void uct_uccl_conn_fail(uct_uccl_conn_t *conn, ucs_status_t status);
void uct_uccl_conn_handle_ctl(uct_uccl_iface_t *iface, const void *pkt,
                              size_t len, const uct_uccl_ctl_src_t *src);
uct_uccl_conn_t *uct_uccl_conn_bound(uct_uccl_iface_t *iface, uint32_t id,
                                     uint64_t token,
                                     const uct_uccl_ctl_src_t *src);
uct_uccl_conn_t *uct_uccl_conn_sibling(const uct_uccl_conn_t *via, uint32_t id,
                                       uint64_t token);
void uct_uccl_conn_timers(uct_uccl_iface_t *iface, uint64_t now);
void uct_uccl_conn_timer_init(uct_uccl_conn_t *conn);
void uct_uccl_conn_timer_start(uct_uccl_conn_t *conn);
void uct_uccl_conn_timer_cleanup(uct_uccl_conn_t *conn);
void uct_uccl_conn_dump_stats(uct_uccl_conn_t *conn, FILE *stream);
void uct_uccl_iface_qp_drained(uct_uccl_iface_t *iface, uct_uccl_qp_t *drain);
void uct_uccl_conn_send_disconnect(uct_uccl_conn_t *conn, ucs_status_t reason);

ucs_status_t uct_uccl_conn_check(uct_uccl_conn_t *conn);

/* the UC GET protocol's table of our GETs (uccl_get.c) */
ucs_status_t uct_uccl_get_track(uct_uccl_conn_t *conn, uct_uccl_op_t *op);
void uct_uccl_get_untrack(uct_uccl_conn_t *conn, uct_uccl_op_t *op);

/* within the conn layer: life (uccl_conn.c), control (uccl_ctl.c),
 * liveness (uccl_conn_live.c) */
uint64_t uct_uccl_conn_random_token(void);
void uct_uccl_conn_ah_attr(uct_uccl_iface_t *iface,
                           const uct_uccl_device_addr_t *dev,
                           struct ibv_ah_attr *ah_attr);
ucs_status_t uct_uccl_conn_ibqp_connect(uct_uccl_conn_t *conn,
                                        struct ibv_qp *qp,
                                        uint32_t remote_qpn);
ucs_status_t uct_uccl_conn_qp_next_create(uct_uccl_conn_t *conn,
                                          uct_uccl_qp_t *path);
void uct_uccl_conn_qp_next_drop(uct_uccl_conn_t *conn, uct_uccl_qp_t *path);
void uct_uccl_conn_qp_swap(uct_uccl_conn_t *conn, uct_uccl_qp_t *path);

/* RC path reset (uccl_reset.c) */
void uct_uccl_reset_start(uct_uccl_conn_t *conn, unsigned p, uint64_t now);
void uct_uccl_reset_timers(uct_uccl_conn_t *conn, uint64_t now);
void uct_uccl_conn_handle_path_reset(uct_uccl_iface_t *iface,
                                     const uct_uccl_path_reset_t *pkt,
                                     const uct_uccl_ctl_src_t *src);
ucs_status_t uct_uccl_conn_paths_trim(uct_uccl_conn_t *conn,
                                      unsigned num_paths);
ucs_status_t uct_uccl_conn_send_pkt(uct_uccl_conn_t *conn,
                                    uct_uccl_ctl_type_t type,
                                    ucs_status_t status);
ucs_status_t uct_uccl_conn_peer_add(uct_uccl_conn_t *conn);
void uct_uccl_conn_peer_remove(uct_uccl_conn_t *conn);
void uct_uccl_conn_handle_disconnect(uct_uccl_iface_t *iface,
                                     const uct_uccl_disconnect_t *pkt,
                                     const uct_uccl_ctl_src_t *src);
void uct_uccl_conn_handle_keepalive(uct_uccl_iface_t *iface,
                                    const uct_uccl_keepalive_t *pkt,
                                    const uct_uccl_ctl_src_t *src);

#endif

/*
 * Congestion control interface. One uct_uccl_cc_t per conn; the algorithm
 * is chosen by name at run time (UCX_UCCL_CC) from a static registry.
 *
 * The hot path never makes an indirect call to ask whether it may send:
 * algorithms keep `cwnd_bytes` (window or credit) and `next_send_ns`
 * (pacing, 0 = window only) up to date in their event callbacks, and the
 * UCT layer reads them through uct_uccl_cc_can_send(). Event callbacks are
 * optional (NULL means "ignored") and are told about:
 *   sender:   on_send, on_ack (bytes acked, RTT sample, the receiver's own
 *             queueing time, now), on_loss (fast retransmit), on_timeout
 *             (RTO), on_resend (bytes sent again), on_credit (cumulative
 *             grant from a receiver-driven peer, and whether its pacer
 *             serves others), tx_request (what to ask such a peer for);
 *   receiver: rx_on_data (bytes arrived), rx_on_request (what the peer
 *             asks for), rx_credit (cumulative grant to put in the next
 *             ACK), rx_idle (no other sender waits for the grants),
 *             rx_attach (join the iface's credit pacer) and rx_pull /
 *             rx_pulled (bytes it pulls itself: its GETs).
 * Window (fixed), delay-based (swift), rate-based (timely) and
 * receiver-driven (eqds) algorithms fit these hooks; their state lives in
 * cc->priv and their defaults in uccl_cc_def.h.
 *
 * Units: bytes, nanoseconds, bits per second. A zero parameter means "the
 * default" (uccl_cc_def.h); a negative one, where allowed, means "off".
 */
#ifndef UCT_UCCL_CC_H_
#define UCT_UCCL_CC_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stddef.h>
#include <stdint.h>

typedef struct uct_uccl_cc uct_uccl_cc_t;
typedef struct uct_uccl_cc_eqds_pacer uct_uccl_cc_eqds_pacer_t;

typedef struct uct_uccl_cc_swift_params {
    uint64_t base_target_ns; /* fabric delay target before scaling */
    uint64_t hop_scale_ns;   /* target added per hop (params.hops) */
    uint64_t fs_range_ns;    /* most that flow scaling adds */
    double   fs_min_cwnd;    /* packets: the window given all of fs_range */
    double   fs_max_cwnd;    /* packets: the window given none of it */
    double   ai;             /* additive increase, packets per RTT */
    double   beta;           /* decrease gain on (delay - target) / delay */
    double   max_mdf;        /* largest decrease per RTT (fraction) */
    double   loss_mdf;       /* decrease on fast retransmit; < 0: none */
    uint64_t host_target_ns; /* endpoint (receiver queueing) target */
    uint32_t retx_reset;     /* RTOs in a row that reset to min window */
} uct_uccl_cc_swift_params_t;

typedef struct uct_uccl_cc_timely_params {
    uint64_t t_low_ns;       /* below: additive increase */
    uint64_t t_high_ns;      /* above: decrease by the excess */
    uint64_t min_rtt_ns;     /* gradient scale; 0: base_rtt or least seen */
    uint64_t ai_bps;         /* additive step; 0: link rate / 1000 */
    uint64_t min_rate_bps;
    double   beta;           /* decrease gain */
    double   ewma;           /* weight of a new RTT difference */
    double   max_mdf;        /* largest decrease per update (fraction) */
    double   window_gain;    /* window = gain x rate x RTT */
    int32_t  hai_thresh;     /* increases in a row before HAI; < 0: off */
    uint32_t hai_mult;       /* HAI step, in additive steps */
} uct_uccl_cc_timely_params_t;

typedef struct uct_uccl_cc_eqds_params {
    uint64_t spec_bytes;     /* speculative credit; 0: one BDP, at least
                              * one chunk */
    uint64_t credit_cap;     /* most credit a sender holds at once */
    uint64_t demand_cap;     /* most a sender asks for ahead of sending */
    uint64_t alone_bytes;    /* speculative credit of a drained sender
                              * whose receiver serves no one else */
} uct_uccl_cc_eqds_params_t;

typedef struct uct_uccl_cc_params {
    uint64_t window_bytes;  /* fixed window / initial window; 0: derive */
    uint32_t window_chunks; /* used when window_bytes == 0 */
    uint32_t chunk_size;    /* bytes per chunk */
    uint32_t mtu;           /* path MTU, bytes */
    uint32_t num_paths;
    uint64_t base_rtt_ns;   /* expected unloaded RTT (0: unknown) */
    uint64_t link_bps;      /* line rate, bits/s (0: unknown) */
    uint64_t min_window_bytes;
    uint64_t max_window_bytes; /* 0: no cap */
    uint32_t mss;           /* packet payload; 0: mtu, else the default */
    uint32_t hops;          /* switch hops to the peer (0: unknown) */
    uct_uccl_cc_swift_params_t  swift;
    uct_uccl_cc_timely_params_t timely;
    uct_uccl_cc_eqds_params_t   eqds;
} uct_uccl_cc_params_t;

/* One ACK as the sender sees it */
typedef struct uct_uccl_cc_ack {
    uint64_t acked_bytes;
    uint64_t rtt_ns;          /* end-to-end sample; 0: no sample */
    uint64_t remote_delay_ns; /* how long the data waited in the receiver
                               * (reported in the ACK); 0: unknown */
    uint64_t now;
} uct_uccl_cc_ack_t;

/* A sender's request to a receiver-driven peer. Both are cumulative byte
 * counts as 32-bit serial numbers, so a lost, repeated or reordered
 * request is harmless: */
typedef struct uct_uccl_cc_request {
    uint32_t want;  /* grants needed for all sent and queued */
    uint32_t spec;  /* bytes sent, or about to be, without a grant */
    uint32_t lost;  /* bytes of transmissions judged lost */
    uint32_t held;  /* credit not spent + bytes in flight (saturates) */
    uint32_t seen;  /* the peer's cumulative grant, as far as heard */
} uct_uccl_cc_request_t;

/* Per-conn counters and state, for the stats and for tests */
typedef struct uct_uccl_cc_stats {
    uint64_t cwnd_bytes;
    uint64_t rate_bps;        /* sending rate (window / RTT if window-based) */
    uint64_t srtt_ns;         /* smoothed delay the algorithm reacts to */
    uint64_t min_rtt_ns;
    uint64_t target_ns;       /* current delay target (swift) */
    uint64_t pacing_ns;       /* gap before the next chunk; 0: none */
    uint64_t increases;
    uint64_t decreases;
    uint64_t credit_bytes;    /* credit available to send (eqds) */
    uint64_t spec_bytes;      /* speculative credit issued so far */
    uint64_t spec_sent_bytes; /* of it, sent */
    uint64_t granted_bytes;   /* credit granted: received as sender */
    uint64_t rx_granted_bytes; /* credit granted: given as receiver */
    uint64_t gone_bytes;      /* judged lost, told to the peer (eqds) */
    uint64_t returned_bytes;  /* granted credit given back (eqds) */
    uint64_t drained_bytes;   /* of it, given back drained */
    uint64_t acked_bytes;
    uint64_t lost_bytes;
    uint64_t timeouts;
} uct_uccl_cc_stats_t;

typedef struct uct_uccl_cc_ops {
    const char *name;
    const char *desc;       /* one line for the config help */
    size_t     priv_size;   /* <= sizeof(((uct_uccl_cc_t*)0)->priv) */

    ucs_status_t (*init)(uct_uccl_cc_t *cc,
                         const uct_uccl_cc_params_t *params);
    void (*cleanup)(uct_uccl_cc_t *cc);

    /* sender events */
    void (*on_send)(uct_uccl_cc_t *cc, uint32_t bytes, uint64_t now);
    void (*on_send_pulled)(uct_uccl_cc_t *cc, uint32_t bytes, uint64_t now);
    void (*on_ack)(uct_uccl_cc_t *cc, const uct_uccl_cc_ack_t *ack);
    void (*on_loss)(uct_uccl_cc_t *cc, uint64_t lost_bytes, uint64_t now);
    void (*on_timeout)(uct_uccl_cc_t *cc, uint64_t now);
    void (*on_resend)(uct_uccl_cc_t *cc, uint32_t bytes, uint64_t now);
    void (*on_gone)(uct_uccl_cc_t *cc, uint32_t bytes, uint64_t now);
    void (*on_credit)(uct_uccl_cc_t *cc, uint32_t granted, int idle,
                      uint64_t now);
    void (*tx_request)(uct_uccl_cc_t *cc, uint64_t backlog_bytes,
                       uct_uccl_cc_request_t *req);
    uint64_t (*tx_release)(uct_uccl_cc_t *cc, uint32_t next_bytes,
                           uint64_t now);
    int (*tx_refills)(const uct_uccl_cc_t *cc, uint64_t backlog_bytes);

    /* receiver events */
    void (*rx_on_data)(uct_uccl_cc_t *cc, uint32_t bytes, uint64_t now);
    void (*rx_on_request)(uct_uccl_cc_t *cc,
                          const uct_uccl_cc_request_t *req, uint64_t now);
    uint32_t (*rx_credit)(uct_uccl_cc_t *cc, uint64_t now);
    int (*rx_idle)(const uct_uccl_cc_t *cc);
    int (*rx_pull)(uct_uccl_cc_t *cc, uint64_t bytes, uint64_t now);
    void (*rx_pulled)(uct_uccl_cc_t *cc, uint64_t bytes);
    void (*rx_attach)(uct_uccl_cc_t *cc, uct_uccl_cc_eqds_pacer_t *pacer,
                      void *arg);

    void (*query)(const uct_uccl_cc_t *cc, uct_uccl_cc_stats_t *stats);
} uct_uccl_cc_ops_t;

/* cwnd_bytes is a hard limit (credit): nothing goes beyond it, not even
 * one send when nothing is in flight */
#define UCT_UCCL_CC_F_STRICT 0x1u
/* granted credit may be held unspent (receiver-driven algorithms): only
 * then has tx_release anything to give back */
#define UCT_UCCL_CC_F_HELD   0x2u
/* the peer's latest grant said no other sender waits for its grants */
#define UCT_UCCL_CC_F_IDLE   0x4u

struct uct_uccl_cc {
    const uct_uccl_cc_ops_t *ops;
    uint64_t cwnd_bytes;      /* may send while inflight < cwnd */
    uint64_t inflight_bytes;  /* sent, not yet acked or declared lost */
    uint64_t next_send_ns;    /* pacing: no send before this; 0 = none */
    uint32_t flags;           /* UCT_UCCL_CC_F_* */
    uint32_t peer_grant;      /* the peer's newest grant (low 32 bits) */
    uint64_t acked_bytes;     /* statistics */
    uint64_t lost_bytes;
    uint64_t timeouts;
    uint64_t priv[38];        /* algorithm state */
};

/* Algorithm by name (case-sensitive); NULL if unknown */
const uct_uccl_cc_ops_t *uct_uccl_cc_find(const char *name);

/* i-th registered algorithm, NULL past the end (for help/listing) */
const uct_uccl_cc_ops_t *uct_uccl_cc_get(unsigned i);

/* UCS_ERR_NO_ELEM for an unknown name, or the algorithm's init status */
ucs_status_t uct_uccl_cc_init(uct_uccl_cc_t *cc, const char *name,
                              const uct_uccl_cc_params_t *params);
void uct_uccl_cc_cleanup(uct_uccl_cc_t *cc);

/* The counters above; fields an algorithm does not keep are 0 */
void uct_uccl_cc_query(const uct_uccl_cc_t *cc, uct_uccl_cc_stats_t *stats);

/* May `bytes` more go out now? A window always admits one send when
 * nothing is in flight, so a chunk larger than cwnd cannot deadlock; a
 * credit (UCT_UCCL_CC_F_STRICT) admits only what it covers. */
static UCS_F_ALWAYS_INLINE int
uct_uccl_cc_can_send(const uct_uccl_cc_t *cc, uint32_t bytes, uint64_t now)
{
    if (ucs_unlikely(now < cc->next_send_ns)) {
        return 0;
    }
    return (cc->inflight_bytes + bytes <= cc->cwnd_bytes) ||
           ((cc->inflight_bytes == 0) && !(cc->flags & UCT_UCCL_CC_F_STRICT));
}

/* `bytes` went out, in flight until acked; `charged` of them spend the
 * window or credit (see uct_uccl_cc_charge), the rest the receiver
 * pulled */
static UCS_F_ALWAYS_INLINE void
uct_uccl_cc_on_send_part(uct_uccl_cc_t *cc, uint32_t bytes, uint32_t charged,
                         uint64_t now)
{
    cc->inflight_bytes += bytes;
    if (ucs_unlikely(charged < bytes) && (cc->ops->on_send_pulled != NULL)) {
        cc->ops->on_send_pulled(cc, bytes - charged, now);
    }
    if (cc->ops->on_send != NULL) {
        cc->ops->on_send(cc, charged, now);
    }
}

static UCS_F_ALWAYS_INLINE void
uct_uccl_cc_on_send(uct_uccl_cc_t *cc, uint32_t bytes, uint64_t now)
{
    uct_uccl_cc_on_send_part(cc, bytes, bytes, now);
}

/* What a send of `bytes` spends of the window or credit. Bytes the
 * receiver pulled itself (`pulled`: a reply to its GET, or in RC its READ
 * of our memory, which its own pacer scheduled before it asked) spend
 * none under credit: the request was the grant. A window counts them
 * all, and so does a credit algorithm still ACK-clocked (its peer grants
 * nothing, and so pulls nothing). */
static UCS_F_ALWAYS_INLINE uint32_t
uct_uccl_cc_charge(const uct_uccl_cc_t *cc, uint32_t bytes, int pulled)
{
    return (pulled && (cc->flags & UCT_UCCL_CC_F_STRICT)) ? 0 : bytes;
}

static inline void uct_uccl_cc_on_ack_ex(uct_uccl_cc_t *cc,
                                         const uct_uccl_cc_ack_t *ack)
{
    cc->inflight_bytes -= (ack->acked_bytes < cc->inflight_bytes) ?
                          ack->acked_bytes : cc->inflight_bytes;
    cc->acked_bytes    += ack->acked_bytes;
    if (cc->ops->on_ack != NULL) {
        cc->ops->on_ack(cc, ack);
    }
}

/* An ACK without the receiver's queueing time */
static inline void uct_uccl_cc_on_ack(uct_uccl_cc_t *cc, uint64_t acked_bytes,
                                      uint64_t rtt_ns, uint64_t now)
{
    uct_uccl_cc_ack_t ack = {
        .acked_bytes     = acked_bytes,
        .rtt_ns          = rtt_ns,
        .remote_delay_ns = 0,
        .now             = now
    };

    uct_uccl_cc_on_ack_ex(cc, &ack);
}

/* Fast retransmit of lost_bytes: they stay in flight (resent) */
static inline void uct_uccl_cc_on_loss(uct_uccl_cc_t *cc, uint64_t lost_bytes,
                                       uint64_t now)
{
    cc->lost_bytes += lost_bytes;
    if (cc->ops->on_loss != NULL) {
        cc->ops->on_loss(cc, lost_bytes, now);
    }
}

static inline void uct_uccl_cc_on_timeout(uct_uccl_cc_t *cc, uint64_t now)
{
    ++cc->timeouts;
    if (cc->ops->on_timeout != NULL) {
        cc->ops->on_timeout(cc, now);
    }
}

/* bytes went again (a resend: still in flight once, not a new send). A
 * window algorithm ignores it; a credit one spends credit on it (into
 * debt if it went beyond), so that what crosses the receiver's link stays
 * what it granted. */
/* A transmission of `bytes` judged lost (once per transmission, before
 * its resend is due): it will not arrive */
static inline void uct_uccl_cc_on_gone(uct_uccl_cc_t *cc, uint32_t bytes,
                                       uint64_t now)
{
    if (cc->ops->on_gone != NULL) {
        cc->ops->on_gone(cc, bytes, now);
    }
}

static inline void uct_uccl_cc_on_resend(uct_uccl_cc_t *cc, uint32_t bytes,
                                         uint64_t now)
{
    if (cc->ops->on_resend != NULL) {
        cc->ops->on_resend(cc, bytes, now);
    }
}

/* The peer's cumulative grant (low 32 bits, as carried in an ACK of a
 * receiver-driven peer; repeats and reordering are harmless), and its
 * hint that no other sender waits for its grants (uct_uccl_cc_rx_idle).
 * Call it before on_ack for the same ACK, and only when the ACK carries
 * credit. */
static inline void uct_uccl_cc_on_credit(uct_uccl_cc_t *cc, uint32_t granted,
                                         int idle, uint64_t now)
{
    if (cc->ops->on_credit != NULL) {
        cc->ops->on_credit(cc, granted, idle, now);
    }
}

/* Does a grant tell the cc nothing new: its peer grants already, and the
 * grant and the hint are those it heard last? on_credit would then
 * change nothing but recompute the window, which every change of the
 * bytes in flight in UC mode already did (an ACK of a receiver-driven
 * peer carries its grant, most of them the same one). */
static UCS_F_ALWAYS_INLINE int
uct_uccl_cc_credit_known(const uct_uccl_cc_t *cc, uint32_t granted, int idle)
{
    return (cc->flags & UCT_UCCL_CC_F_STRICT) && (granted == cc->peer_grant) &&
           (!idle == !(cc->flags & UCT_UCCL_CC_F_IDLE));
}

/* What to ask a receiver-driven peer for (see uct_uccl_cc_request_t).
 * backlog_bytes: queued and not yet passed to on_send. Send it when a burst
 * starts and again now and then while can_send() refuses for want of
 * credit (the answer to a request repairs lost grants). Returns 0 with
 * *req zeroed when the algorithm is not receiver-driven. */
static inline int uct_uccl_cc_tx_request(uct_uccl_cc_t *cc,
                                         uint64_t backlog_bytes,
                                         uct_uccl_cc_request_t *req)
{
    *req = (uct_uccl_cc_request_t){0};
    if (cc->ops->tx_request == NULL) {
        return 0;
    }
    cc->ops->tx_request(cc, backlog_bytes, req);
    return 1;
}

/* Will the ACK of what is in flight give the sender credit for
 * backlog_bytes without a request (a drained sender's speculative
 * credit)? Then it need not ask; when the ACK does not come the bytes are
 * resent, and a resend that waits for credit asks. */
static inline int uct_uccl_cc_tx_refills(const uct_uccl_cc_t *cc,
                                         uint64_t backlog_bytes)
{
    return (cc->ops->tx_refills != NULL) &&
           cc->ops->tx_refills(cc, backlog_bytes);
}

/* Give back granted credit the sender cannot use: all of it once it
 * drained (nothing in flight, next_bytes 0: nothing waits to be sent or
 * sent again), all of it when it fell short of the next send
 * (next_bytes) for UCT_UCCL_CC_EQDS_HOLD_NS without a new grant, and
 * any it neither spent nor added to for UCT_UCCL_CC_EQDS_EXPIRE_NS. Call
 * it from a timer and before a send; when it returns more than 0, send a
 * request (its holdings fell: the peer's count of grants not arrived
 * falls with them). Returns the bytes given back. */
static inline uint64_t uct_uccl_cc_tx_release(uct_uccl_cc_t *cc,
                                              uint32_t next_bytes,
                                              uint64_t now)
{
    /* nothing granted held (UCT_UCCL_CC_F_HELD), nothing to give back */
    return ((cc->flags & UCT_UCCL_CC_F_HELD) &&
            (cc->ops->tx_release != NULL)) ?
           cc->ops->tx_release(cc, next_bytes, now) : 0;
}

static inline void uct_uccl_cc_rx_on_data(uct_uccl_cc_t *cc, uint32_t bytes,
                                          uint64_t now)
{
    if (cc->ops->rx_on_data != NULL) {
        cc->ops->rx_on_data(cc, bytes, now);
    }
}

/* A request of the peer (uct_uccl_cc_tx_request at its side); answer it
 * with rx_credit */
static inline void
uct_uccl_cc_rx_on_request(uct_uccl_cc_t *cc, const uct_uccl_cc_request_t *req,
                          uint64_t now)
{
    if (cc->ops->rx_on_request != NULL) {
        cc->ops->rx_on_request(cc, req, now);
    }
}

/* Does this conn's receiver side grant credit (put it in its ACKs)? */
static inline int uct_uccl_cc_rx_driven(const uct_uccl_cc_t *cc)
{
    return cc->ops->rx_credit != NULL;
}

/* Cumulative credit granted to the peer (low 32 bits) for the next ACK;
 * 0 when the algorithm is not receiver-driven */
static inline uint32_t uct_uccl_cc_rx_credit(uct_uccl_cc_t *cc, uint64_t now)
{
    return (cc->ops->rx_credit != NULL) ? cc->ops->rx_credit(cc, now) : 0;
}

/* Does no other sender wait for the grants of the pacer this conn's
 * receiver side is on (a hint that goes with rx_credit)? */
static inline int uct_uccl_cc_rx_idle(const uct_uccl_cc_t *cc)
{
    return (cc->ops->rx_idle != NULL) && cc->ops->rx_idle(cc);
}

/* The receiver pulls `bytes` from the peer itself (the reply to a GET of
 * ours, which the peer sends without credit): 1 once its pacer scheduled
 * them, as it schedules its grants; else the pacer was asked and 0 comes
 * back (its tick names the conn when it granted: ask again then). 1 when
 * the algorithm is not receiver-driven or no pacer is attached. */
static inline int uct_uccl_cc_rx_pull(uct_uccl_cc_t *cc, uint64_t bytes,
                                      uint64_t now)
{
    return (cc->ops->rx_pull != NULL) ? cc->ops->rx_pull(cc, bytes, now) : 1;
}

/* The request that pulled `bytes` went: what the pacer granted is spent */
static inline void uct_uccl_cc_rx_pulled(uct_uccl_cc_t *cc, uint64_t bytes)
{
    if (cc->ops->rx_pulled != NULL) {
        cc->ops->rx_pulled(cc, bytes);
    }
}

/* Let the iface's pacer grant this conn's peer (receiver-driven
 * algorithms; a no-op for the others). arg comes back from the pacer's
 * tick. The cc must not move while attached; cleanup detaches. */
static inline void uct_uccl_cc_rx_attach(uct_uccl_cc_t *cc,
                                         uct_uccl_cc_eqds_pacer_t *pacer,
                                         void *arg)
{
    if (cc->ops->rx_attach != NULL) {
        cc->ops->rx_attach(cc, pacer, arg);
    }
}

/* the registered algorithms */
extern const uct_uccl_cc_ops_t uct_uccl_cc_fixed_ops;
extern const uct_uccl_cc_ops_t uct_uccl_cc_swift_ops;
extern const uct_uccl_cc_ops_t uct_uccl_cc_timely_ops;
extern const uct_uccl_cc_ops_t uct_uccl_cc_eqds_ops;

#endif

/*
 * Congestion control interface. One uct_uccl_cc_t per conn; the algorithm
 * is chosen by name at run time (UCX_UCCL_CC) from a static registry.
 *
 * The hot path never makes an indirect call to ask whether it may send:
 * algorithms keep `cwnd_bytes` (window) and `next_send_ns` (pacing, 0 =
 * window only) up to date in their event callbacks, and the UCT layer reads
 * them through uct_uccl_cc_can_send(). Event callbacks are optional (NULL
 * means "ignored") and are told about:
 *   sender:   on_send, on_ack (bytes acked, RTT sample, now), on_loss
 *             (fast retransmit), on_timeout (RTO), on_credit (EQDS grant);
 *   receiver: rx_on_data (bytes arrived) and rx_credit (credit to put in
 *             the next ACK, for receiver-driven schemes such as EQDS).
 * Delay-based (Swift), rate-based with pacing (Timely) and receiver-driven
 * (EQDS) algorithms fit these hooks; their state lives in cc->priv.
 */
#ifndef UCT_UCCL_CC_H_
#define UCT_UCCL_CC_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stddef.h>
#include <stdint.h>

typedef struct uct_uccl_cc uct_uccl_cc_t;

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
} uct_uccl_cc_params_t;

typedef struct uct_uccl_cc_ops {
    const char *name;
    const char *desc;       /* one line for the config help */
    size_t     priv_size;   /* <= sizeof(((uct_uccl_cc_t*)0)->priv) */

    ucs_status_t (*init)(uct_uccl_cc_t *cc,
                         const uct_uccl_cc_params_t *params);
    void (*cleanup)(uct_uccl_cc_t *cc);

    /* sender events */
    void (*on_send)(uct_uccl_cc_t *cc, uint32_t bytes, uint64_t now);
    void (*on_ack)(uct_uccl_cc_t *cc, uint64_t acked_bytes, uint64_t rtt_ns,
                   uint64_t now);
    void (*on_loss)(uct_uccl_cc_t *cc, uint64_t lost_bytes, uint64_t now);
    void (*on_timeout)(uct_uccl_cc_t *cc, uint64_t now);
    void (*on_credit)(uct_uccl_cc_t *cc, uint32_t credit, uint64_t now);

    /* receiver events */
    void (*rx_on_data)(uct_uccl_cc_t *cc, uint32_t bytes, uint64_t now);
    uint32_t (*rx_credit)(uct_uccl_cc_t *cc, uint64_t now);
} uct_uccl_cc_ops_t;

struct uct_uccl_cc {
    const uct_uccl_cc_ops_t *ops;
    uint64_t cwnd_bytes;      /* may send while inflight < cwnd */
    uint64_t inflight_bytes;  /* sent, not yet acked or declared lost */
    uint64_t next_send_ns;    /* pacing: no send before this; 0 = none */
    uint64_t acked_bytes;     /* statistics */
    uint64_t lost_bytes;
    uint64_t timeouts;
    uint64_t priv[16];        /* algorithm state */
};

/* Algorithm by name (case-sensitive); NULL if unknown */
const uct_uccl_cc_ops_t *uct_uccl_cc_find(const char *name);

/* i-th registered algorithm, NULL past the end (for help/listing) */
const uct_uccl_cc_ops_t *uct_uccl_cc_get(unsigned i);

/* UCS_ERR_NO_ELEM for an unknown name, or the algorithm's init status */
ucs_status_t uct_uccl_cc_init(uct_uccl_cc_t *cc, const char *name,
                              const uct_uccl_cc_params_t *params);
void uct_uccl_cc_cleanup(uct_uccl_cc_t *cc);

/* May `bytes` more go out now? A window always admits one send when
 * nothing is in flight, so a chunk larger than cwnd cannot deadlock. */
static UCS_F_ALWAYS_INLINE int
uct_uccl_cc_can_send(const uct_uccl_cc_t *cc, uint32_t bytes, uint64_t now)
{
    if (ucs_unlikely(now < cc->next_send_ns)) {
        return 0;
    }
    return (cc->inflight_bytes == 0) ||
           (cc->inflight_bytes + bytes <= cc->cwnd_bytes);
}

static UCS_F_ALWAYS_INLINE void
uct_uccl_cc_on_send(uct_uccl_cc_t *cc, uint32_t bytes, uint64_t now)
{
    cc->inflight_bytes += bytes;
    if (cc->ops->on_send != NULL) {
        cc->ops->on_send(cc, bytes, now);
    }
}

static inline void uct_uccl_cc_on_ack(uct_uccl_cc_t *cc, uint64_t acked_bytes,
                                      uint64_t rtt_ns, uint64_t now)
{
    cc->inflight_bytes -= (acked_bytes < cc->inflight_bytes) ?
                          acked_bytes : cc->inflight_bytes;
    cc->acked_bytes    += acked_bytes;
    if (cc->ops->on_ack != NULL) {
        cc->ops->on_ack(cc, acked_bytes, rtt_ns, now);
    }
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

static inline void uct_uccl_cc_on_credit(uct_uccl_cc_t *cc, uint32_t credit,
                                         uint64_t now)
{
    if (cc->ops->on_credit != NULL) {
        cc->ops->on_credit(cc, credit, now);
    }
}

static inline void uct_uccl_cc_rx_on_data(uct_uccl_cc_t *cc, uint32_t bytes,
                                          uint64_t now)
{
    if (cc->ops->rx_on_data != NULL) {
        cc->ops->rx_on_data(cc, bytes, now);
    }
}

/* credit for the next ACK; 0 when the algorithm is not receiver-driven */
static inline uint32_t uct_uccl_cc_rx_credit(uct_uccl_cc_t *cc, uint64_t now)
{
    return (cc->ops->rx_credit != NULL) ? cc->ops->rx_credit(cc, now) : 0;
}

/* the registered algorithms */
extern const uct_uccl_cc_ops_t uct_uccl_cc_fixed_ops;

#endif

/*
 * softverbs fabric model: timing, queueing and loss of every packet.
 *
 * A packet of at most one MTU crosses three hops: the sender's link, one of P
 * core paths (ECMP hash of the QP numbers) and the receiver's link.  The
 * first two are FIFO servers whose clock (the time it is next free) lives in
 * the fabric shared memory, so processes contend for the same links; the
 * receiver's link serves packets in the order they reach it (a calendar of
 * its time, in the shared memory too).  All variables are
 * described in src/softverbs/README.md, "Fabric model variables".
 */
#ifndef SV_MODEL_H_
#define SV_MODEL_H_

#include <stdint.h>
#include <stdio.h>

#define SV_MODEL_SHM_SIZE  (16u << 20) /* bytes reserved in the fabric shm
                                          (sparse: the receiving links'
                                          calendars of unused ports are
                                          never touched) */
#define SV_MODEL_MAX_PORTS 256         /* port index < this */
#define SV_MODEL_MAX_PATHS 256

uint64_t sv_now_ns(void);          /* CLOCK_MONOTONIC in ns, cheap, inline ok */

/* Called once per process after mapping the fabric. `area` is
 * SV_MODEL_SHM_SIZE bytes inside the fabric shm, zero-filled when the fabric
 * was created. `creator` is 1 in the process that created the fabric: it
 * reads the SOFTVERBS_* model variables and stores them in `area`; others
 * read them from there (so all processes agree). Returns 0 or -errno. */
int sv_model_attach(void *area, int creator);

/* Reset the link state of a port index that is being (re)allocated. */
void sv_model_port_reset(unsigned port);

int      sv_model_active(void);  /* 0: no rates, no loss, no delay: fast path */
int      sv_model_timed(void);   /* 0: every packet arrives when it is sent */
uint32_t sv_model_mtu(void);     /* bytes, SOFTVERBS_MTU, default 4096 */
double   sv_model_port_gbps(unsigned port); /* SOFTVERBS_LINK_GBPS; 0: none */
unsigned sv_model_num_paths(void);

typedef struct sv_pkt_fate {
    uint64_t arrive_ns;  /* when the packet reaches the destination port */
    uint16_t path;       /* core path it took (ECMP hash of the QPNs) */
    uint8_t  dropped;    /* 1: lost (random loss, tail drop, outage) */
} sv_pkt_fate_t;

/* One packet of `bytes` (payload + headers) leaves `src_port` at `now_ns` for
 * `dst_port`. Charges the sender link, the core path and the receiver link
 * (shared, cross-process clocks in the shm area: contention is real), applies
 * per-link buffer tail drop, propagation delay, random loss, per-path loss or
 * outage windows. Thread- and process-safe. Updates per-port and per-path
 * counters of packets, bytes, drops kept inside the model area.
 * For a dropped packet, arrive_ns is the time it was lost. */
void sv_model_xmit(unsigned src_port, unsigned dst_port, uint32_t src_qpn,
                   uint32_t dst_qpn, uint32_t bytes, uint64_t now_ns,
                   sv_pkt_fate_t *fate);

/* Counter updates summed over the messages of one doorbell and moved to
 * the shared counters at once: their cache lines are written by every
 * process of the fabric. Zero-initialised; a message on another route
 * moves what was summed first. */
struct sv_model_link;
typedef struct sv_model_acct {
    struct sv_model_link *tx, *pl, *rx;  /* route summed for, or NULL */
    uint64_t             tx_pkts;        /* counted here (model off) */
    uint64_t             pkts, bytes, drops, rx_bytes;
} sv_model_acct_t;

void sv_model_acct_flush(sv_model_acct_t *acct);

/* What became of the packets of one message (sv_model_xmit_msg). */
typedef struct sv_msg_fate {
    uint64_t last_ns;  /* the latest arrival (or loss) */
    uint64_t nak_ns;   /* the first packet after a loss arrived (0: none) */
    uint64_t sent_ns;  /* the last packet left the sender's link */
    uint64_t first_ns; /* the first packet that arrived did (0: none) */
    uint64_t start_ns; /* the first packet left the sender's link */
} sv_msg_fate_t;

/* Packets first..npkts-1 of a message of `len` bytes (`mtu` per packet, the
 * last one shorter, each with `hdr` bytes of headers) leave back to back at
 * `now_ns`, as many sv_model_xmit calls would, but the shared counters move
 * once (into `acct` if not NULL). `timer`: RC's retransmission timer
 * resends them at `now_ns`, still ahead, on idle links that they reserve
 * no time on (sv_model_pkt_ahead). Returns the first lost packet, or -1. */
int64_t sv_model_xmit_msg(unsigned src_port, unsigned dst_port,
                          uint32_t src_qpn, uint32_t dst_qpn, uint64_t first,
                          uint64_t npkts, uint64_t len, uint32_t mtu,
                          uint32_t hdr, uint64_t now_ns, int timer,
                          sv_msg_fate_t *fate, sv_model_acct_t *acct);

/* Packets 0..npkts-1 of a message of `len` bytes that RC's retransmission
 * timer resent at `t_ns` (modelled at `now_ns`, ahead of it) although its
 * first copy had arrived: go-back-N behind a late ACK. They take link time
 * where the links are busy then and are counted, tx packets too; they are
 * never lost at random. Returns when the last one arrived (t_ns if none
 * did). */
uint64_t sv_model_xmit_dup(unsigned src_port, unsigned dst_port,
                           uint32_t src_qpn, uint32_t dst_qpn, uint64_t npkts,
                           uint64_t len, uint32_t mtu, uint32_t hdr,
                           uint64_t t_ns, uint64_t now_ns,
                           sv_model_acct_t *acct);

/* How long a packet of `bytes` takes from src_port to dst_port on an idle
 * fabric: the path's propagation delay plus one serialization time per
 * rate-limited hop; 0 when the model has no rates or delays. What an ACK
 * or NAK costs on its way back: it is charged no queueing, no link time
 * and no loss (a link's clock serves packets in the order they are
 * modelled, and an ACK modelled at its future send time would hold up
 * the packets sent before it). */
uint64_t sv_model_idle_ns(unsigned src_port, unsigned dst_port,
                          uint32_t src_qpn, uint32_t dst_qpn, uint32_t bytes);

/* Counters for the stats dump and softverbs-stat. drops: every packet
 * lost on its way through this link (anywhere on its route, see
 * sv_model_acct_flush). The queue of a rate-limited link: q_bytes is what
 * was queued when its latest packet reached it (that one included),
 * drained at the link's rate since; q_max the most a packet found queued
 * (itself included: never above SOFTVERBS_BUF_BYTES where it is set);
 * q_drops the packets it tail-dropped. */
typedef struct sv_model_counters {
    uint64_t pkts, bytes, drops;
    uint64_t q_bytes, q_max, q_drops;
} sv_model_counters_t;
void sv_model_port_counters(unsigned port, sv_model_counters_t *tx,
                            sv_model_counters_t *rx);
void sv_model_path_counters(unsigned path, sv_model_counters_t *c);
/* Print the model configuration (one line per variable) for diagnostics. */
void sv_model_print_config(FILE *stream);

/* --- additions beyond the core contract --- */

/* Fast-path accounting when !sv_model_active(): counts `pkts` packets of
 * `bytes` total on both ports and on the path of the QP pair, no timing
 * (into `acct` if not NULL). */
void sv_model_count(unsigned src_port, unsigned dst_port, uint32_t src_qpn,
                    uint32_t dst_qpn, uint32_t pkts, uint64_t bytes,
                    sv_model_acct_t *acct);

/* The core path a QP pair hashes to (what sv_model_xmit uses). */
unsigned sv_model_path_of(uint32_t src_qpn, uint32_t dst_qpn);

/* sv_now_ns() when the fabric was created: SOFTVERBS_PATH_DOWN windows are
 * relative to it. */
uint64_t sv_model_epoch_ns(void);

/* SOFTVERBS_SEED in effect (loss RNG). */
uint64_t sv_model_seed(void);

#endif

/*
 * softverbs fabric model.
 *
 * The sender link and the core path are FIFO servers: the state of each is
 * the time it becomes free, kept in the fabric shm and advanced with a CAS
 * loop, so packets of all processes queue behind each other. The receiver
 * link is a calendar of the time it is taken (sv_model_cal_take): packets
 * reach it in another order than the one they are modelled in. A packet
 * that finds more than SOFTVERBS_BUF_BYTES queued ahead of it on the path or
 * on the receiver link is tail-dropped.  The sender link never drops: a NIC
 * does not discard its own packets, its send queue just waits.
 *
 * Link clocks count picoseconds since the fabric epoch so that serialization
 * of small packets at high rates does not round away (2^64 ps = 213 days).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_model_cfg.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SV_MODEL_MAGIC       0x31646f6d76730a01ull

/* One server and the counters of what crossed it; the queue's counters
 * (rate-limited links only) move in sv_model_hop and sv_model_hop_cal. */
typedef struct sv_model_link {
    uint64_t next_free_ps; /* FIFO: when it is free; calendar: the end of
                              its latest reservation */
    uint64_t pkts, bytes, drops;
    uint64_t last_ps;      /* latest arrival of a packet it took */
    uint64_t q_max;        /* most bytes a packet found queued, itself too */
    uint64_t q_drops;      /* tail drops at its buffer */
    uint64_t q_last;       /* calendar: what the packet of last_ps found */
} __attribute__((aligned(64))) sv_model_link_t;

/*
 * A receiving link serves packets in the order they reach it, which is not
 * the order they are modelled in: a packet is modelled when it is posted,
 * and one behind a slow or long-queued core path reaches the receiving
 * link long after packets posted later on other paths. A FIFO clock would
 * hold those behind it (a receiving link fed by paths slower than itself
 * would look busy while it idles). Its calendar keeps instead, for each
 * slot of one MTU's time, how much of it is taken (from its start): a
 * packet takes free time from its arrival on, slot after slot, so packets
 * modelled in the order they arrive queue as behind a FIFO, and one
 * modelled late uses the time left free before the others. (Within a
 * slot, free time before the taken part is lost: a packet modelled late
 * can come after one that arrives later in its slot.)
 * The ring holds SV_MODEL_CAL_SLOTS slots from now on (a slot further
 * ahead would be one a packet still to come may need); what a packet
 * cannot take before that goes behind the link's FIFO tail (next_free_ps),
 * which starts there (fifo_from) and holds every later packet too, so
 * that the ring never hands out time the tail holds, until the tail has
 * drained. A slot word: the slot's index (its lap) above
 * SV_MODEL_CAL_TAKEN_BITS, the picoseconds taken below; a word of an
 * earlier lap is a free slot (that lap is past).
 */
#define SV_MODEL_CAL_SLOTS       4096
#define SV_MODEL_CAL_TAKEN_BITS  28
#define SV_MODEL_CAL_TAKEN_MASK  ((1ull << SV_MODEL_CAL_TAKEN_BITS) - 1)
#define SV_MODEL_CAL_IDX_MASK    ((1ull << (64 - SV_MODEL_CAL_TAKEN_BITS)) - 1)

typedef struct sv_model_cal {
    uint64_t fifo_from;    /* ps: the FIFO tail holds all from here on (0:
                              no tail) */
    uint64_t pad[7];
    uint64_t slot[SV_MODEL_CAL_SLOTS];
} sv_model_cal_t;

typedef struct sv_model_shm {
    uint64_t        magic;            /* set last by the creator */
    uint64_t        size;
    sv_model_cfg_t  cfg;
    sv_model_link_t tx[SV_MODEL_MAX_PORTS];
    sv_model_link_t rx[SV_MODEL_MAX_PORTS];
    sv_model_link_t path[SV_MODEL_MAX_PATHS];     /* to a higher port */
    sv_model_cal_t  rx_cal[SV_MODEL_MAX_PORTS] __attribute__((aligned(4096)));
    sv_model_link_t path_rev[SV_MODEL_MAX_PATHS]; /* to a lower port */
} sv_model_shm_t;

/* The model area of the fabric file is shared like the rest (sv_shm.h):
 * a change here needs a new SV_ABI_VERSION. */
_Static_assert(sizeof(sv_model_shm_t) <= SV_MODEL_SHM_SIZE,
               "model state does not fit its shm area");
_Static_assert((sizeof(sv_model_cfg_t) == 12592) &&
               (sizeof(sv_model_link_t) == 64) &&
               (offsetof(sv_model_shm_t, rx_cal) == 65536) &&
               (sizeof(sv_model_shm_t) == 65536 + 256 * (32768 + 64) +
                                          256 * 64),
               "shared layout changed");

static sv_model_shm_t *sv_model;
static int sv_model_timed_cfg; /* rates or delays: arrival != post time */
/* The configuration as this process uses it: a checked copy of the one in
 * shared memory, which every fabric member could overwrite. */
static sv_model_cfg_t sv_model_cfg;
/* each port's calendar slot: one MTU's time at its rate (ps), at most
 * SV_MODEL_CAL_TAKEN_MASK; 0: no rate */
static uint64_t sv_model_cal_q[SV_MODEL_MAX_PORTS];

uint64_t sv_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static inline uint64_t sv_model_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static int sv_model_has_timing(const sv_model_cfg_t *cfg)
{
    unsigned i;

    for (i = 0; i < SV_MODEL_MAX_PORTS; ++i) {
        if (cfg->port_ps_per_byte[i] != 0) {
            return 1;
        }
    }
    for (i = 0; i < cfg->npaths; ++i) {
        if ((cfg->path_ps_per_byte[i] != 0) || (cfg->path_delay_ps[i] != 0)) {
            return 1;
        }
    }
    return 0;
}

static void sv_model_cal_init(const sv_model_cfg_t *cfg)
{
    double q;
    unsigned i;

    for (i = 0; i < SV_MODEL_MAX_PORTS; ++i) {
        q                 = ceil(cfg->port_ps_per_byte[i] * cfg->mtu);
        sv_model_cal_q[i] = (q < 1) ? 0 :
                            (q > SV_MODEL_CAL_TAKEN_MASK) ?
                            SV_MODEL_CAL_TAKEN_MASK : (uint64_t)q;
    }
}

int sv_model_attach(void *area, int creator)
{
    sv_model_shm_t *shm = area;
    struct timespec ts  = { .tv_sec = 0, .tv_nsec = 1000000 };
    sv_model_cfg_t *cfg;
    unsigned waited;
    int ret;

    if (area == NULL) {
        return -EINVAL;
    }

    if (creator) {
        cfg = calloc(1, sizeof(*cfg));
        if (cfg == NULL) {
            return -ENOMEM;
        }
        ret = sv_model_parse(cfg);
        if (ret) {
            free(cfg);
            return ret;
        }
        cfg->epoch_ns = sv_now_ns();
        /* the calendars are cleared with their ports (sv_model_port_reset):
         * all of them would be megabytes a fabric mostly never uses */
        memset(shm, 0, offsetof(sv_model_shm_t, rx_cal));
        shm->cfg  = *cfg;
        shm->size = sizeof(*shm);
        free(cfg);
        __atomic_store_n(&shm->magic, SV_MODEL_MAGIC, __ATOMIC_RELEASE);
    } else {
        /* the creator may still be writing the configuration */
        for (waited = 0;
             __atomic_load_n(&shm->magic, __ATOMIC_ACQUIRE) != SV_MODEL_MAGIC;
             ++waited) {
            if (waited == 2000) {
                fprintf(stderr, "softverbs: fabric model not initialized by "
                        "its creator after 2 s\n");
                return -ETIMEDOUT;
            }
            nanosleep(&ts, NULL);
        }
        if (shm->size != sizeof(*shm)) {
            fprintf(stderr, "softverbs: fabric model layout mismatch (%lu != "
                    "%zu): processes from different softverbs builds?\n",
                    (unsigned long)shm->size, sizeof(*shm));
            return -EPROTO;
        }
    }

    sv_model_cfg = shm->cfg;
    if (!sv_model_cfg_valid(&sv_model_cfg)) {
        fprintf(stderr, "softverbs: the fabric's model configuration is "
                "corrupt (overwritten by a process of the fabric?)\n");
        return -EPROTO;
    }
    if (!creator) {
        sv_model_check_env(&sv_model_cfg);
    }
    sv_model           = shm;
    sv_model_timed_cfg = sv_model_has_timing(&sv_model_cfg);
    sv_model_cal_init(&sv_model_cfg);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Data path                                                               */

static void sv_model_link_reset(sv_model_link_t *l)
{
    __atomic_store_n(&l->next_free_ps, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&l->pkts, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&l->bytes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&l->drops, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&l->last_ps, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&l->q_max, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&l->q_drops, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&l->q_last, 0, __ATOMIC_RELAXED);
}

void sv_model_port_reset(unsigned port)
{
    if ((sv_model == NULL) || (port >= SV_MODEL_MAX_PORTS)) {
        return;
    }
    sv_model_link_reset(&sv_model->tx[port]);
    sv_model_link_reset(&sv_model->rx[port]);
    memset(&sv_model->rx_cal[port], 0, sizeof(sv_model->rx_cal[port]));
}

int sv_model_active(void)
{
    return (sv_model != NULL) && sv_model_cfg.active;
}

int sv_model_timed(void)
{
    return (sv_model != NULL) && sv_model_timed_cfg;
}

uint32_t sv_model_mtu(void)
{
    return (sv_model != NULL) ? sv_model_cfg.mtu : SV_MODEL_DEF_MTU;
}

double sv_model_port_gbps(unsigned port)
{
    double ps_per_byte;

    if ((sv_model == NULL) || (port >= SV_MODEL_MAX_PORTS)) {
        return 0;
    }
    ps_per_byte = sv_model_cfg.port_ps_per_byte[port];
    return (ps_per_byte > 0) ? 8000.0 / ps_per_byte : 0;
}

unsigned sv_model_num_paths(void)
{
    return (sv_model != NULL) ? sv_model_cfg.npaths : SV_MODEL_DEF_PATHS;
}

uint64_t sv_model_epoch_ns(void)
{
    return (sv_model != NULL) ? sv_model_cfg.epoch_ns : 0;
}

uint64_t sv_model_seed(void)
{
    return (sv_model != NULL) ? sv_model_cfg.seed : SV_MODEL_DEF_SEED;
}

unsigned sv_model_path_of(uint32_t src_qpn, uint32_t dst_qpn)
{
    return sv_model_mix64(((uint64_t)src_qpn << 32) | dst_qpn) %
           sv_model_num_paths();
}

/* A hop of `ps_per_byte` (0: unlimited) takes this long for `bytes` */
static inline uint64_t sv_model_ser_ps(double ps_per_byte, uint32_t bytes)
{
    return (uint64_t)(bytes * ps_per_byte + 0.5);
}

/* *p = max(*p, v); the common case (no new maximum) only reads */
static inline void sv_model_max(uint64_t *p, uint64_t v)
{
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);

    while ((v > cur) &&
           !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
}

/*
 * Serve `bytes` on link `l` for a packet reaching it at *t_ps: it waits for
 * the link to be free, then occupies it for its serialization time.  Returns
 * -1 (and leaves the link alone but for its drop count) when the bytes
 * queued ahead and the packet itself would exceed `buf`.
 */
static inline int sv_model_hop(sv_model_link_t *l, double ps_per_byte,
                               uint64_t buf, uint32_t bytes, uint64_t *t_ps)
{
    uint64_t t = *t_ps, nf, start, done;
    uint64_t ser;
    double depth;

    if (ps_per_byte == 0) {
        return 0;               /* unlimited: no queue */
    }
    ser = sv_model_ser_ps(ps_per_byte, bytes);
    nf  = __atomic_load_n(&l->next_free_ps, __ATOMIC_RELAXED);
    do {
        start = (nf > t) ? nf : t;
        depth = (double)(start - t) / ps_per_byte + bytes;
        if (buf && (depth > buf)) {
            __atomic_fetch_add(&l->q_drops, 1, __ATOMIC_RELAXED);
            return -1;
        }
        done = start + ser;
    } while (!__atomic_compare_exchange_n(&l->next_free_ps, &nf, done, 1,
                                          __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    sv_model_max(&l->q_max, (uint64_t)depth);
    sv_model_max(&l->last_ps, t);
    *t_ps = done;
    return 0;
}

/* The time taken of slot `idx` (a word of another lap: none; more than
 * the slot, written by someone else: all) */
static inline uint64_t sv_model_cal_taken(uint64_t w, uint64_t idx,
                                          uint64_t q)
{
    uint64_t taken = w & SV_MODEL_CAL_TAKEN_MASK;

    if ((w >> SV_MODEL_CAL_TAKEN_BITS) != (idx & SV_MODEL_CAL_IDX_MASK)) {
        return 0;
    }
    return (taken < q) ? taken : q;
}

/* Where the calendar ends for a packet modelled at now_ps: the ring's
 * last slot, or the FIFO tail's start. A tail that drained by now is
 * gone. */
static uint64_t sv_model_cal_limit(sv_model_link_t *l, sv_model_cal_t *cal,
                                   uint64_t q, uint64_t now_ps)
{
    uint64_t ring = (now_ps / q + SV_MODEL_CAL_SLOTS) * q;
    uint64_t from = __atomic_load_n(&cal->fifo_from, __ATOMIC_RELAXED);

    if (from == 0) {
        return ring;
    }
    if (__atomic_load_n(&l->next_free_ps, __ATOMIC_RELAXED) <= now_ps) {
        (void)__atomic_compare_exchange_n(&cal->fifo_from, &from, 0, 0,
                                          __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED);
        return ring;
    }
    return (from < ring) ? from : ring;
}

/* The first free time of the calendar from t on, before limit;
 * UINT64_MAX if none */
static uint64_t sv_model_cal_free(sv_model_cal_t *cal, uint64_t q,
                                  uint64_t t, uint64_t limit)
{
    uint64_t idx, taken, w;

    for (idx = t / q; idx * q < limit; ++idx) {
        w     = __atomic_load_n(&cal->slot[idx % SV_MODEL_CAL_SLOTS],
                                __ATOMIC_RELAXED);
        taken = sv_model_cal_taken(w, idx, q);
        if ((taken < q) && (idx * q + taken < limit)) {
            return (idx * q + taken > t) ? idx * q + taken : t;
        }
    }
    return UINT64_MAX;
}

/* Take `ser` ps of free time from t on, before limit, slot after slot:
 * *start is when the first part starts (UINT64_MAX: none), *left what did
 * not fit; returns when the last part ends */
static uint64_t sv_model_cal_take(sv_model_cal_t *cal, uint64_t q,
                                  uint64_t t, uint64_t limit, uint64_t ser,
                                  uint64_t *start, uint64_t *left)
{
    uint64_t idx, end = t, taken, take = 0, w, *slot;

    *start = UINT64_MAX;
    for (idx = t / q; (ser > 0) && (idx * q < limit); ++idx) {
        slot = &cal->slot[idx % SV_MODEL_CAL_SLOTS];
        w    = __atomic_load_n(slot, __ATOMIC_RELAXED);
        do {
            taken = sv_model_cal_taken(w, idx, q);
            if (idx * q + taken < t) {
                taken = t - idx * q;     /* its first slot: not before t */
            }
            if ((taken >= q) || (idx * q + taken >= limit)) {
                break;
            }
            take = (ser < q - taken) ? ser : q - taken;
            if (idx * q + taken + take > limit) {
                take = limit - idx * q - taken;
            }
        } while (!__atomic_compare_exchange_n(
                     slot, &w,
                     ((idx & SV_MODEL_CAL_IDX_MASK) <<
                      SV_MODEL_CAL_TAKEN_BITS) | (taken + take),
                     1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
        if ((taken >= q) || (idx * q + taken >= limit)) {
            continue;
        }
        if (*start == UINT64_MAX) {
            *start = idx * q + taken;
        }
        ser -= take;
        end  = idx * q + taken + take;
    }
    *left = ser;
    return end;
}

/* `left` ps behind the FIFO tail, which holds all from `from` on: when the
 * last part ends, *start when the first would (if nothing came first) */
static uint64_t sv_model_cal_tail(sv_model_link_t *l, sv_model_cal_t *cal,
                                  uint64_t from, uint64_t t, uint64_t left,
                                  uint64_t *start)
{
    uint64_t none = 0, nf, end;

    (void)__atomic_compare_exchange_n(&cal->fifo_from, &none, from, 0,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    from = (t > from) ? t : from;
    nf   = __atomic_load_n(&l->next_free_ps, __ATOMIC_RELAXED);
    do {
        end = ((nf > from) ? nf : from) + left;
    } while (!__atomic_compare_exchange_n(&l->next_free_ps, &nf, end, 1,
                                          __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    if (*start == UINT64_MAX) {
        *start = end - left;
    }
    return end;
}

/*
 * Serve `bytes` on the receiving link `l` (calendar `cal`, slots of `q`
 * ps) for a packet modelled at now_ps that reaches it at *t_ps: free time
 * from then on in the calendar, the rest behind its FIFO tail. The queue
 * a packet finds is the link's work between its arrival and its start:
 * past `buf` it is dropped (and, found so only once a racing process took
 * the time first, the time it took stays taken).
 */
static int sv_model_hop_cal(sv_model_link_t *l, sv_model_cal_t *cal,
                            uint64_t q, double ps_per_byte, uint64_t buf,
                            uint32_t bytes, uint64_t now_ps, uint64_t *t_ps)
{
    uint64_t t = *t_ps, start = UINT64_MAX, end = t, left, limit, nf;
    double depth;

    if ((ps_per_byte == 0) || (q == 0)) {
        return 0;               /* unlimited: no queue */
    }
    limit = sv_model_cal_limit(l, cal, q, now_ps);
    left  = sv_model_ser_ps(ps_per_byte, bytes);
    if (buf) {
        start = (t < limit) ? sv_model_cal_free(cal, q, t, limit) :
                              UINT64_MAX;
        if (start == UINT64_MAX) {
            nf    = __atomic_load_n(&l->next_free_ps, __ATOMIC_RELAXED);
            start = (t > limit) ? t : limit;
            start = (nf > start) ? nf : start;
        }
        if ((double)(start - t) / ps_per_byte + bytes > buf) {
            __atomic_fetch_add(&l->q_drops, 1, __ATOMIC_RELAXED);
            return -1;
        }
        start = UINT64_MAX;
    }
    if (t < limit) {
        end = sv_model_cal_take(cal, q, t, limit, left, &start, &left);
    }
    if (left > 0) {
        end = sv_model_cal_tail(l, cal, limit, t, left, &start);
    }
    depth = (double)(start - t) / ps_per_byte + bytes;
    if (buf && (depth > buf)) {
        __atomic_fetch_add(&l->q_drops, 1, __ATOMIC_RELAXED);
        return -1;
    }
    sv_model_max(&l->q_max, (uint64_t)depth);
    if (t >= __atomic_load_n(&l->last_ps, __ATOMIC_RELAXED)) {
        __atomic_store_n(&l->q_last, (uint64_t)depth, __ATOMIC_RELAXED);
        sv_model_max(&l->last_ps, t);
    }
    *t_ps = end;
    return 0;
}

static inline int sv_model_path_down(const sv_model_cfg_t *cfg, unsigned path,
                                     uint64_t t_ps)
{
    unsigned i;

    for (i = 0; i < cfg->nwindows; ++i) {
        if ((cfg->windows[i].path == path) &&
            (t_ps >= cfg->windows[i].start_ps) &&
            (t_ps < cfg->windows[i].end_ps)) {
            return 1;
        }
    }
    return 0;
}

/* thresh 0 never drops, UINT64_MAX (p = 1) always does */
static inline int sv_model_lost(uint64_t r, uint64_t thresh)
{
    return (r < thresh) || (thresh == UINT64_MAX);
}

static inline void sv_model_add(uint64_t *counter, uint64_t v)
{
    __atomic_fetch_add(counter, v, __ATOMIC_RELAXED);
}

/* A core path is full duplex, as the links of a fabric are: packets
 * towards a lower port index queue on one link, the others on another, so
 * what flows back (ACKs, requests, replies) does not wait behind the data
 * that fills a path one way */
static inline sv_model_link_t *sv_model_path_link(sv_model_shm_t *shm,
                                                  unsigned path,
                                                  unsigned src_port,
                                                  unsigned dst_port)
{
    return (src_port > dst_port) ? &shm->path_rev[path] : &shm->path[path];
}

/* The links and loss stream of one QP pair */
typedef struct sv_model_route {
    const sv_model_cfg_t *cfg;
    sv_model_link_t      *tx, *pl, *rx;
    sv_model_cal_t       *rx_cal;
    unsigned             sport, dport, path;
    uint64_t             rng;       /* loss RNG state of the QP pair */
} sv_model_route_t;

/* 0 when there is no model or a port is bogus: nothing can arrive */
static int sv_model_route(unsigned src_port, unsigned dst_port,
                          uint32_t src_qpn, uint32_t dst_qpn,
                          sv_model_route_t *rt)
{
    sv_model_shm_t *shm = sv_model;
    uint64_t qps        = ((uint64_t)src_qpn << 32) | dst_qpn;

    if ((shm == NULL) || (src_port >= SV_MODEL_MAX_PORTS) ||
        (dst_port >= SV_MODEL_MAX_PORTS)) {
        return 0;
    }
    rt->cfg   = &sv_model_cfg;
    rt->sport = src_port;
    rt->dport = dst_port;
    rt->path  = sv_model_mix64(qps) % sv_model_cfg.npaths;
    rt->tx    = &shm->tx[src_port];
    rt->pl    = sv_model_path_link(shm, rt->path, src_port, dst_port);
    rt->rx    = &shm->rx[dst_port];
    rt->rx_cal = &shm->rx_cal[dst_port];
    rt->rng   = sv_model_mix64(sv_model_cfg.seed ^ sv_model_mix64(qps));
    return 1;
}

/* The random loss of the `seq`th packet its sender sent on this route
 * (global and per-path probabilities), a pure function of the seed */
static inline int sv_model_loss_draw(const sv_model_route_t *rt,
                                     uint64_t seq)
{
    const sv_model_cfg_t *cfg = rt->cfg;
    uint64_t pthresh          = cfg->path_loss_thresh[rt->path];
    uint64_t r;

    if (!cfg->loss_thresh && !pthresh) {
        return 0;
    }
    r = sv_model_mix64(rt->rng ^ ((uint64_t)rt->sport << 48) ^
                       ((uint64_t)rt->dport << 32) ^
                       (seq * 0x9e3779b97f4a7c15ull));
    return sv_model_lost(r, cfg->loss_thresh) ||
           ((pthresh != 0) && sv_model_lost(sv_model_mix64(r), pthresh));
}

/* One packet (the `seq`th its sender sent) from *t_ps on: 1 if it is lost,
 * *t_ps is then when; *sent_ps: when it left the sender's link. Counters
 * are the caller's. */
static int sv_model_pkt(const sv_model_route_t *rt, uint64_t seq,
                        uint32_t bytes, uint64_t *t_ps, uint64_t *sent_ps)
{
    const sv_model_cfg_t *cfg = rt->cfg;
    uint64_t now_ps           = *t_ps;

    sv_model_hop(rt->tx, cfg->port_ps_per_byte[rt->sport], 0, bytes, t_ps);
    *sent_ps = *t_ps;
    if ((cfg->nwindows && sv_model_path_down(cfg, rt->path, *t_ps)) ||
        sv_model_hop(rt->pl, cfg->path_ps_per_byte[rt->path], cfg->buf_bytes,
                     bytes, t_ps)) {
        return 1;
    }
    *t_ps += cfg->path_delay_ps[rt->path];
    if (sv_model_loss_draw(rt, seq)) {
        return 1;
    }
    return sv_model_hop_cal(rt->rx, rt->rx_cal, sv_model_cal_q[rt->dport],
                            cfg->port_ps_per_byte[rt->dport], cfg->buf_bytes,
                            bytes, now_ps, t_ps) != 0;
}

/* A packet the retransmission timer sends at a time still ahead (*t_ps):
 * it crosses the links as if idle and reserves no time on them. A link's
 * clock serves packets in the order they are modelled, and a reservation
 * that far ahead would hold up everything its sender sends meanwhile. */
static int sv_model_pkt_ahead(const sv_model_route_t *rt, uint64_t seq,
                              uint32_t bytes, uint64_t *t_ps,
                              uint64_t *sent_ps)
{
    const sv_model_cfg_t *cfg = rt->cfg;

    *t_ps   += sv_model_ser_ps(cfg->port_ps_per_byte[rt->sport], bytes);
    *sent_ps = *t_ps;
    if (cfg->nwindows && sv_model_path_down(cfg, rt->path, *t_ps)) {
        return 1;
    }
    *t_ps += sv_model_ser_ps(cfg->path_ps_per_byte[rt->path], bytes) +
             cfg->path_delay_ps[rt->path];
    if (sv_model_loss_draw(rt, seq)) {
        return 1;
    }
    *t_ps += sv_model_ser_ps(cfg->port_ps_per_byte[rt->dport], bytes);
    return 0;
}

/* A FIFO link for a packet modelled at a time still ahead (*t_ps): busy
 * then, the packet queues behind what it holds; idle, it crosses without
 * taking time (sv_model_pkt_ahead's rule). A link's clock never goes
 * back, so one found busy stays so. -1: tail-dropped. */
static int sv_model_hop_join(sv_model_link_t *l, double ps_per_byte,
                             uint64_t buf, uint32_t bytes, uint64_t *t_ps)
{
    if (__atomic_load_n(&l->next_free_ps, __ATOMIC_RELAXED) < *t_ps) {
        *t_ps += sv_model_ser_ps(ps_per_byte, bytes);
        return 0;
    }
    return sv_model_hop(l, ps_per_byte, buf, bytes, t_ps);
}

/* A copy of a packet that had arrived, resent at *t_ps (ahead of now_ps)
 * by RC's timer: it joins the FIFO links' queues where they are busy then
 * (sv_model_hop_join) and takes free time on the receiving link's
 * calendar, which serves packets modelled out of order; past the
 * calendar's end it crosses as if idle (the FIFO tail there would hold up
 * what comes before it). Never lost at random: a lost duplicate changes
 * nothing the model keeps. 1: tail-dropped or its path down. */
static int sv_model_pkt_dup(const sv_model_route_t *rt, uint32_t bytes,
                            uint64_t now_ps, uint64_t *t_ps)
{
    const sv_model_cfg_t *cfg = rt->cfg;
    uint64_t q                = sv_model_cal_q[rt->dport];
    double rx_ps_per_byte     = cfg->port_ps_per_byte[rt->dport];

    if (sv_model_hop_join(rt->tx, cfg->port_ps_per_byte[rt->sport], 0, bytes,
                          t_ps) ||
        (cfg->nwindows && sv_model_path_down(cfg, rt->path, *t_ps)) ||
        sv_model_hop_join(rt->pl, cfg->path_ps_per_byte[rt->path],
                          cfg->buf_bytes, bytes, t_ps)) {
        return 1;
    }
    *t_ps += cfg->path_delay_ps[rt->path];
    if ((q != 0) &&
        (*t_ps >= sv_model_cal_limit(rt->rx, rt->rx_cal, q, now_ps))) {
        *t_ps += sv_model_ser_ps(rx_ps_per_byte, bytes);
        return 0;
    }
    return sv_model_hop_cal(rt->rx, rt->rx_cal, q, rx_ps_per_byte,
                            cfg->buf_bytes, bytes, now_ps, t_ps) != 0;
}

static inline uint64_t sv_model_ps(const sv_model_cfg_t *cfg, uint64_t now_ns)
{
    return (now_ns > cfg->epoch_ns) ? (now_ns - cfg->epoch_ns) * 1000 : 0;
}

static inline uint64_t sv_model_ns(const sv_model_cfg_t *cfg, uint64_t t_ps)
{
    return cfg->epoch_ns + (t_ps + 999) / 1000;
}

void sv_model_acct_flush(sv_model_acct_t *a)
{
    if (a->tx == NULL) {
        return;
    }
    if (a->tx_pkts > 0) {
        sv_model_add(&a->tx->pkts, a->tx_pkts);
    }
    sv_model_add(&a->tx->bytes, a->bytes);
    sv_model_add(&a->pl->pkts, a->pkts);
    sv_model_add(&a->pl->bytes, a->bytes);
    if (a->drops > 0) {
        sv_model_add(&a->tx->drops, a->drops);
        sv_model_add(&a->pl->drops, a->drops);
        sv_model_add(&a->rx->drops, a->drops);
    }
    if (a->pkts > a->drops) {
        sv_model_add(&a->rx->pkts, a->pkts - a->drops);
        sv_model_add(&a->rx->bytes, a->rx_bytes);
    }
    memset(a, 0, sizeof(*a));
}

/* The shared counters move once per call, or once per doorbell with an
 * accumulator: they are cache lines every process of the fabric writes.
 * (tx pkts moved already: they number the packets for the loss draw.) */
static void sv_model_account(const sv_model_route_t *rt, uint64_t tx_pkts,
                             uint64_t pkts, uint64_t bytes, uint64_t drops,
                             uint64_t rx_bytes, sv_model_acct_t *acct)
{
    sv_model_acct_t now = { .tx = rt->tx, .pl = rt->pl, .rx = rt->rx };

    if (acct == NULL) {
        acct = &now;
    } else if ((acct->tx != rt->tx) || (acct->pl != rt->pl) ||
               (acct->rx != rt->rx)) {
        sv_model_acct_flush(acct);
        acct->tx = rt->tx;
        acct->pl = rt->pl;
        acct->rx = rt->rx;
    }
    acct->tx_pkts  += tx_pkts;
    acct->pkts     += pkts;
    acct->bytes    += bytes;
    acct->drops    += drops;
    acct->rx_bytes += rx_bytes;
    if (acct == &now) {
        sv_model_acct_flush(acct);
    }
}

void sv_model_xmit(unsigned src_port, unsigned dst_port, uint32_t src_qpn,
                   uint32_t dst_qpn, uint32_t bytes, uint64_t now_ns,
                   sv_pkt_fate_t *fate)
{
    sv_model_route_t rt;
    uint64_t seq, t, sent;
    int drop;

    if (!sv_model_route(src_port, dst_port, src_qpn, dst_qpn, &rt)) {
        fate->arrive_ns = now_ns;
        fate->path      = 0;
        fate->dropped   = (sv_model != NULL);
        return;
    }

    /* the sender's packet count doubles as the loss RNG's sequence */
    seq  = __atomic_fetch_add(&rt.tx->pkts, 1, __ATOMIC_RELAXED);
    t    = sv_model_ps(rt.cfg, now_ns);
    drop = sv_model_pkt(&rt, seq, bytes, &t, &sent);
    sv_model_account(&rt, 0, 1, bytes, drop, drop ? 0 : bytes, NULL);
    fate->arrive_ns = sv_model_ns(rt.cfg, t);
    fate->path      = rt.path;
    fate->dropped   = drop;
}

/* Loss is all the model does (no rates, delays or outages): every packet
 * arrives when it is sent and only the loss draw is left, the same one as
 * sv_model_pkt's, so the same packets are lost. The generic walk cost a
 * lossy sender 4% of its time. */
static int64_t sv_model_xmit_loss(const sv_model_route_t *rt, uint64_t seq,
                                  uint64_t first, uint64_t npkts,
                                  uint64_t len, uint32_t mtu, uint32_t hdr,
                                  uint64_t now_ns, sv_msg_fate_t *fate,
                                  sv_model_acct_t *acct)
{
    const sv_model_cfg_t *cfg = rt->cfg;
    uint64_t bytes = len - first * mtu + (npkts - first) * hdr;
    uint64_t i, ns, drops = 0, lost_bytes = 0;
    int64_t lost = -1;

    ns            = sv_model_ns(cfg, sv_model_ps(cfg, now_ns));
    fate->last_ns  = (ns > now_ns) ? ns : now_ns;
    fate->sent_ns  = fate->last_ns;
    fate->start_ns = fate->last_ns;
    for (i = first; i < npkts; ++i, ++seq) {
        if (!sv_model_loss_draw(rt, seq)) {
            if ((lost >= 0) && (fate->nak_ns == 0)) {
                fate->nak_ns = ns;          /* out of sequence */
            }
            if (fate->first_ns == 0) {
                fate->first_ns = fate->last_ns;
            }
            continue;
        }
        ++drops;
        lost_bytes += ((i + 1 < npkts) ? mtu : len - i * mtu) + hdr;
        if (lost < 0) {
            lost = i;
        }
    }
    sv_model_account(rt, 0, npkts - first, bytes, drops, bytes - lost_bytes,
                     acct);
    return lost;
}

int64_t sv_model_xmit_msg(unsigned src_port, unsigned dst_port,
                          uint32_t src_qpn, uint32_t dst_qpn, uint64_t first,
                          uint64_t npkts, uint64_t len, uint32_t mtu,
                          uint32_t hdr, uint64_t now_ns, int timer,
                          sv_msg_fate_t *fate, sv_model_acct_t *acct)
{
    uint64_t seq, i, t, t0, ns, pay, bytes = 0, rx_bytes = 0, drops = 0;
    uint64_t sent, sent_max;
    int64_t lost = -1;
    sv_model_route_t rt;
    int drop;

    fate->last_ns  = now_ns;
    fate->nak_ns   = 0;
    fate->sent_ns  = now_ns;
    fate->first_ns = 0;
    fate->start_ns = now_ns;
    if (!sv_model_route(src_port, dst_port, src_qpn, dst_qpn, &rt)) {
        return (sv_model != NULL) ? (int64_t)first : -1;
    }

    seq = __atomic_fetch_add(&rt.tx->pkts, npkts - first, __ATOMIC_RELAXED);
    if (!sv_model_timed_cfg && (rt.cfg->nwindows == 0)) {
        return sv_model_xmit_loss(&rt, seq, first, npkts, len, mtu, hdr,
                                  now_ns, fate, acct);
    }
    t0       = sv_model_ps(rt.cfg, now_ns);
    sent_max = t0;
    for (i = first; i < npkts; ++i, ++seq) {
        pay    = ((i + 1 < npkts) ? mtu : len - i * mtu) + hdr;
        bytes += pay;
        t      = t0;
        drop   = timer ? sv_model_pkt_ahead(&rt, seq, pay, &t, &sent) :
                         sv_model_pkt(&rt, seq, pay, &t, &sent);
        ns     = sv_model_ns(rt.cfg, t);
        if (sent > sent_max) {
            sent_max = sent;
        }
        if (i == first) {
            fate->start_ns = sv_model_ns(rt.cfg, sent);
        }
        if (drop) {
            ++drops;
            if (lost < 0) {
                lost = i;
            }
        } else {
            rx_bytes += pay;
            if (fate->first_ns == 0) {
                fate->first_ns = ns;
            }
            if ((lost >= 0) && (fate->nak_ns == 0)) {
                fate->nak_ns = ns;          /* out of sequence */
            }
        }
        if (ns > fate->last_ns) {
            fate->last_ns = ns;
        }
    }
    ns = sv_model_ns(rt.cfg, sent_max);
    if (ns > fate->sent_ns) {
        fate->sent_ns = ns;
    }
    sv_model_account(&rt, 0, npkts - first, bytes, drops, rx_bytes, acct);
    return lost;
}

uint64_t sv_model_xmit_dup(unsigned src_port, unsigned dst_port,
                           uint32_t src_qpn, uint32_t dst_qpn, uint64_t npkts,
                           uint64_t len, uint32_t mtu, uint32_t hdr,
                           uint64_t t_ns, uint64_t now_ns,
                           sv_model_acct_t *acct)
{
    uint64_t i, t, t0, now_ps, last, pay, bytes = 0, rx_bytes = 0;
    uint64_t drops = 0;
    sv_model_route_t rt;
    int timed;

    if (!sv_model_route(src_port, dst_port, src_qpn, dst_qpn, &rt)) {
        return t_ns;
    }
    timed  = sv_model_timed_cfg || (rt.cfg->nwindows != 0);
    t0     = sv_model_ps(rt.cfg, t_ns);
    now_ps = sv_model_ps(rt.cfg, now_ns);
    last   = t0;
    for (i = 0; i < npkts; ++i) {
        pay    = ((i + 1 < npkts) ? mtu : len - i * mtu) + hdr;
        bytes += pay;
        t      = t0;
        if (timed && sv_model_pkt_dup(&rt, pay, now_ps, &t)) {
            ++drops;
            continue;
        }
        rx_bytes += pay;
        last      = (t > last) ? t : last;
    }
    sv_model_account(&rt, npkts, npkts, bytes, drops, rx_bytes, acct);
    return sv_model_ns(rt.cfg, last);
}

uint64_t sv_model_idle_ns(unsigned src_port, unsigned dst_port,
                          uint32_t src_qpn, uint32_t dst_qpn, uint32_t bytes)
{
    const sv_model_cfg_t *cfg = &sv_model_cfg;
    unsigned path;
    uint64_t ps;

    if (!sv_model_timed() || (src_port >= SV_MODEL_MAX_PORTS) ||
        (dst_port >= SV_MODEL_MAX_PORTS)) {
        return 0;
    }
    path = sv_model_path_of(src_qpn, dst_qpn);
    ps   = cfg->path_delay_ps[path] +
           sv_model_ser_ps(cfg->port_ps_per_byte[src_port], bytes) +
           sv_model_ser_ps(cfg->path_ps_per_byte[path], bytes) +
           sv_model_ser_ps(cfg->port_ps_per_byte[dst_port], bytes);
    return (ps + 999) / 1000;
}

void sv_model_count(unsigned src_port, unsigned dst_port, uint32_t src_qpn,
                    uint32_t dst_qpn, uint32_t pkts, uint64_t bytes,
                    sv_model_acct_t *acct)
{
    sv_model_shm_t *shm = sv_model;
    sv_model_route_t rt;

    if ((shm == NULL) || (src_port >= SV_MODEL_MAX_PORTS) ||
        (dst_port >= SV_MODEL_MAX_PORTS)) {
        return;
    }
    rt.tx = &shm->tx[src_port];
    rt.pl = sv_model_path_link(shm, sv_model_path_of(src_qpn, dst_qpn),
                               src_port, dst_port);
    rt.rx = &shm->rx[dst_port];
    sv_model_account(&rt, pkts, pkts, bytes, 0, bytes, acct);
}

/* ---------------------------------------------------------------------- */
/* Counters and diagnostics                                                */

/* The queue now: its work left after the latest packet it took arrived
 * (or after now, if that was earlier), in bytes at its rate */
static uint64_t sv_model_queued(sv_model_link_t *l, double ps_per_byte,
                                uint64_t now_ps)
{
    uint64_t nf   = __atomic_load_n(&l->next_free_ps, __ATOMIC_RELAXED);
    uint64_t last = __atomic_load_n(&l->last_ps, __ATOMIC_RELAXED);
    uint64_t from = (last > now_ps) ? last : now_ps;

    if ((ps_per_byte == 0) || (nf <= from)) {
        return 0;
    }
    return (uint64_t)((double)(nf - from) / ps_per_byte + 0.5);
}

/* A receiving link's queue now: what its latest packet found, drained at
 * its rate since (its calendar may hold time further ahead for packets
 * that come later) */
static uint64_t sv_model_cal_queued(sv_model_link_t *l, double ps_per_byte,
                                    uint64_t now_ps)
{
    uint64_t last  = __atomic_load_n(&l->last_ps, __ATOMIC_RELAXED);
    uint64_t found = __atomic_load_n(&l->q_last, __ATOMIC_RELAXED);
    double drained;

    if (ps_per_byte == 0) {
        return 0;
    }
    drained = (now_ps > last) ? (double)(now_ps - last) / ps_per_byte : 0;
    return (drained < found) ? (uint64_t)(found - drained + 0.5) : 0;
}

static void sv_model_read_link(sv_model_link_t *l, double ps_per_byte,
                               sv_model_counters_t *c)
{
    c->pkts    = __atomic_load_n(&l->pkts, __ATOMIC_RELAXED);
    c->bytes   = __atomic_load_n(&l->bytes, __ATOMIC_RELAXED);
    c->drops   = __atomic_load_n(&l->drops, __ATOMIC_RELAXED);
    c->q_max   = __atomic_load_n(&l->q_max, __ATOMIC_RELAXED);
    c->q_drops = __atomic_load_n(&l->q_drops, __ATOMIC_RELAXED);
    c->q_bytes = sv_model_queued(l, ps_per_byte,
                                 sv_model_ps(&sv_model_cfg, sv_now_ns()));
}

void sv_model_port_counters(unsigned port, sv_model_counters_t *tx,
                            sv_model_counters_t *rx)
{
    double rate;

    if ((sv_model == NULL) || (port >= SV_MODEL_MAX_PORTS)) {
        memset(tx, 0, sizeof(*tx));
        memset(rx, 0, sizeof(*rx));
        return;
    }
    rate = sv_model_cfg.port_ps_per_byte[port];
    sv_model_read_link(&sv_model->tx[port], rate, tx);
    sv_model_read_link(&sv_model->rx[port], rate, rx);
    rx->q_bytes = sv_model_cal_queued(&sv_model->rx[port], rate,
                                      sv_model_ps(&sv_model_cfg,
                                                  sv_now_ns()));
}

/* A core path's counters are those of its two directions together (the
 * deepest queue of either) */
void sv_model_path_counters(unsigned path, sv_model_counters_t *c)
{
    sv_model_counters_t rev;

    if ((sv_model == NULL) || (path >= SV_MODEL_MAX_PATHS)) {
        memset(c, 0, sizeof(*c));
        return;
    }
    sv_model_read_link(&sv_model->path[path],
                       sv_model_cfg.path_ps_per_byte[path], c);
    sv_model_read_link(&sv_model->path_rev[path],
                       sv_model_cfg.path_ps_per_byte[path], &rev);
    c->pkts    += rev.pkts;
    c->bytes   += rev.bytes;
    c->drops   += rev.drops;
    c->q_drops += rev.q_drops;
    c->q_bytes += rev.q_bytes;
    c->q_max    = (rev.q_max > c->q_max) ? rev.q_max : c->q_max;
}

void sv_model_print_config(FILE *stream)
{
    if (sv_model == NULL) {
        fprintf(stream, "softverbs model: not attached\n");
        return;
    }
    sv_model_cfg_print(stream, &sv_model_cfg);
}

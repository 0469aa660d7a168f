/*
 * Sender's unacked-chunk tracker: a ring of entries indexed by CSN from
 * `una` (oldest not cumulatively acked) to `nxt` (next CSN to send), plus a
 * ring bitmap of which of them the receiver has selectively acked.
 *
 * - uct_uccl_tracker_add() when a chunk is posted (O(1));
 * - uct_uccl_tracker_ack() for each ACK: calls back once per newly acked
 *   chunk (cumulative or SACK) so the UCT layer completes its operation,
 *   and returns an RTT sample;
 * - uct_uccl_tracker_fast_retx() resends SACK holes: at once when a chunk
 *   sent after it on the same path was acked (a path is one QP, which
 *   delivers in order, so that hole was lost), otherwise after
 *   dupack_thresh duplicate ACKs or when a chunk reorder_csns later has
 *   been acked, and then at most once per min_age (an RTT);
 *   uct_uccl_tracker_expire() resends everything older than the RTO.
 * Each transmission is stamped with its path's send count; a resend is
 * stamped anew, so it is judged by what follows it on its new path. An
 * entry whose every earlier transmission was proven lost that way has
 * `doubt` clear when its resend callback runs: the resend is then the only
 * copy that can still arrive (uccl_tx.c writes it straight to its target).
 * Bitmap scans go 64 chunks per word.
 */
#ifndef UCT_UCCL_TRACKER_H_
#define UCT_UCCL_TRACKER_H_

#include "uccl_seq.h"
#include "uccl_wire.h"

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stdint.h>
#include <string.h>

typedef struct uct_uccl_tx_entry {
    uint64_t send_time;   /* ns, last (re)transmission */
    void     *desc;       /* UCT layer's chunk (kept WR); NULL once acked */
    uint32_t length;      /* payload bytes, for cc accounting */
    uint32_t path_seq;    /* path's send count at the last transmission */
    uint16_t path;        /* path of the last transmission */
    uint8_t  retries;     /* resends so far (saturates at 255) */
    uint8_t  doubt;       /* a transmission was superseded before it was
                             proven lost: it may still land */
    uint8_t  gone;        /* its last transmission was judged lost and
                             the cc told so (uct_uccl_cc_on_gone) */
    uint8_t  rsvd[3];
} uct_uccl_tx_entry_t;

typedef struct uct_uccl_tracker_params {
    uint32_t size;          /* ring entries, power of two in [64, 2^16] */
    uint32_t init_csn;      /* first CSN to send (24-bit) */
    uint32_t dupack_thresh; /* duplicate ACKs before all holes are resent */
    uint32_t reorder_csns;  /* a hole this far below a SACKed chunk is lost;
                               0 = only the dupack rule */
    uint32_t num_paths;     /* paths a chunk may take, 1..WIRE_MAX_PATHS */
} uct_uccl_tracker_params_t;

typedef struct uct_uccl_tracker {
    uint32_t            una;          /* oldest CSN not cumulatively acked */
    uint32_t            nxt;          /* next CSN to assign */
    uint32_t            high_sacked;  /* one past the highest acked CSN */
    uint32_t            limit;        /* max chunks outstanding (<= size) */
    uint32_t            mask;         /* size - 1 */
    uint32_t            word_mask;    /* size / 64 - 1 */
    uint32_t            dupacks;      /* ACKs in a row that did not move una */
    uint32_t            dupack_thresh;
    uint32_t            reorder_csns;
    uint32_t            sacked_cnt;   /* sacked entries in [una, nxt) */
    uint64_t            inflight_bytes; /* bytes sent and not yet acked */
    uint64_t            *sacked;      /* size bits */
    uct_uccl_tx_entry_t *ent;         /* size entries */
    uint32_t            *path_sent;   /* per path: transmissions stamped */
    uint32_t            *path_acked;  /* per path: 1 + highest stamp acked;
                                         holes stamped below are lost */
} uct_uccl_tracker_t;

/* What one ACK did */
typedef struct uct_uccl_ack_info {
    uint32_t acked;         /* chunks newly acked (cumulative + SACK) */
    uint32_t bad_bits;      /* SACK bits beyond nxt, ignored */
    uint64_t acked_bytes;
    uint64_t rtt_ns;        /* RTT sample, 0 if none (Karn: no resent) */
    uint64_t rx_wait_ns;    /* of the sample: the peer's CQ wait */
    uint16_t rtt_path;      /* path of the sample */
    uint8_t  una_advanced;
    uint8_t  dupack;        /* this ACK counted as duplicate */
} uct_uccl_ack_info_t;

/* A chunk was acked: complete its part of the operation. e->desc is set to
 * NULL by the tracker after the call. */
typedef void (*uct_uccl_tracker_ack_cb_t)(void *arg, uint32_t csn,
                                          uct_uccl_tx_entry_t *e);

/* Resend chunk csn now (may change e->path). e->doubt tells whether an
 * earlier transmission may still land. UCS_OK: resent, the tracker bumps
 * retries and send_time; UCS_ERR_ALREADY_EXISTS: a resend is already
 * queued, the chunk is skipped as it is; anything else stops the scan
 * (e.g. UCS_ERR_NO_RESOURCE when the send queue is full) and the chunk
 * stays due. */
typedef ucs_status_t (*uct_uccl_tracker_retx_cb_t)(void *arg, uint32_t csn,
                                                   uct_uccl_tx_entry_t *e);


ucs_status_t uct_uccl_tracker_init(uct_uccl_tracker_t *t,
                                   const uct_uccl_tracker_params_t *params);
void uct_uccl_tracker_cleanup(uct_uccl_tracker_t *t);

/* at most min(size, window) chunks outstanding: the peer's SACK window */
static inline void uct_uccl_tracker_set_limit(uct_uccl_tracker_t *t,
                                              uint32_t window)
{
    t->limit = (window < t->mask + 1) ? window : t->mask + 1;
}

/* chunks sent and not cumulatively acked */
static inline uint32_t uct_uccl_tracker_outstanding(const uct_uccl_tracker_t *t)
{
    return uct_uccl_seq_dist(t->nxt, t->una);
}

static inline int uct_uccl_tracker_full(const uct_uccl_tracker_t *t)
{
    return uct_uccl_tracker_outstanding(t) >= t->limit;
}

static inline int uct_uccl_tracker_empty(const uct_uccl_tracker_t *t)
{
    return t->nxt == t->una;
}

static inline uct_uccl_tx_entry_t *
uct_uccl_tracker_entry(const uct_uccl_tracker_t *t, uint32_t csn)
{
    return &t->ent[csn & t->mask];
}

/* csn in [una, nxt)? */
static inline int uct_uccl_tracker_in_flight(const uct_uccl_tracker_t *t,
                                             uint32_t csn)
{
    return uct_uccl_seq_dist(csn, t->una) < uct_uccl_tracker_outstanding(t);
}

/* The entry of a first transmission, path_seq its number on its path */
static UCS_F_ALWAYS_INLINE void
uct_uccl_tracker_entry_init(uct_uccl_tx_entry_t *e, uint32_t length,
                            unsigned path, uint32_t path_seq, uint64_t now,
                            void *desc)
{
    e->send_time = now;
    e->desc      = desc;
    e->length    = length;
    e->path      = path;
    e->path_seq  = path_seq;
    e->retries   = 0;
    e->doubt     = 0;
    e->gone      = 0;
}

/* A burst of first transmissions on one path, tracked by the caller's
 * loop: the entries of CSNs nxt, nxt + 1, ... filled with
 * uct_uccl_tracker_entry_init (t->ent[csn & t->mask]) and path_seq counted
 * on from t->path_sent[path]; then n of them, `bytes` long, are taken
 * here at once */
static UCS_F_ALWAYS_INLINE void
uct_uccl_tracker_add_burst(uct_uccl_tracker_t *t, unsigned path, uint32_t n,
                           uint64_t bytes)
{
    t->nxt              = uct_uccl_seq_add(t->nxt, n);
    t->path_sent[path] += n;
    t->inflight_bytes  += bytes;
}

/* Track a chunk about to be posted on path (< num_paths) after everything
 * posted on that path so far; returns its CSN. Must not be full. */
static UCS_F_ALWAYS_INLINE uint32_t
uct_uccl_tracker_add(uct_uccl_tracker_t *t, uint32_t length, unsigned path,
                     uint64_t now, void *desc)
{
    uint32_t csn = t->nxt;

    uct_uccl_tracker_entry_init(&t->ent[csn & t->mask], length, path,
                                t->path_sent[path]++, now, desc);
    t->nxt             = uct_uccl_seq_add(csn, 1);
    t->inflight_bytes += length;
    return csn;
}

/*
 * Apply a validated ACK (uct_uccl_wire_ctl_check). cb is called for every
 * newly acked chunk in CSN order (cumulative part first). An ACK whose cum
 * is behind una is stale and only its SACK bits are used; cum beyond nxt
 * is bogus: UCS_ERR_OUT_OF_RANGE, nothing changed. info may be NULL.
 * arrival_ns: when the ACK arrived, the end of the RTT sample.
 */
ucs_status_t uct_uccl_tracker_ack(uct_uccl_tracker_t *t,
                                  const uct_uccl_ack_t *ack,
                                  uint64_t arrival_ns,
                                  uct_uccl_tracker_ack_cb_t cb, void *arg,
                                  uct_uccl_ack_info_t *info);


/* bits [lo, hi) of a word, 0 <= lo < hi <= 64 */
static UCS_F_ALWAYS_INLINE uint64_t uct_uccl_bits_range(unsigned lo,
                                                        unsigned hi)
{
    uint64_t m = (hi >= 64) ? ~0ull : ((1ull << hi) - 1);

    return m & ~((1ull << lo) - 1);
}

/* was this hole's transmission overtaken on its path? */
static UCS_F_ALWAYS_INLINE int
uct_uccl_tracker_path_lost(const uct_uccl_tracker_t *t,
                           const uct_uccl_tx_entry_t *e)
{
    return (int32_t)(e->path_seq - t->path_acked[e->path]) < 0;
}

/* csn is newly acked: its path's order, the callback, then the counts */
static UCS_F_ALWAYS_INLINE void
uct_uccl_tracker_acked(uct_uccl_tracker_t *t, uint32_t csn,
                       uct_uccl_tracker_ack_cb_t cb, void *arg,
                       uct_uccl_ack_info_t *info)
{
    uct_uccl_tx_entry_t *e = &t->ent[csn & t->mask];
    uint32_t length        = e->length;

    /* a first transmission arrived: what its path carried before it and
     * is still missing was lost (a resend's arrival is ambiguous: its
     * earlier transmission, on another path, may be the one that came) */
    if ((e->retries == 0) && !uct_uccl_tracker_path_lost(t, e)) {
        t->path_acked[e->path] = e->path_seq + 1;
    }
    cb(arg, csn, e);
    e->desc = NULL;
    ++info->acked;
    info->acked_bytes += length;
    t->inflight_bytes -= length;
}

/* cumulative part: every chunk of [una, to) not already SACKed is acked */
static UCS_F_ALWAYS_INLINE void
uct_uccl_tracker_ack_cum(uct_uccl_tracker_t *t, uint32_t to,
                         uct_uccl_tracker_ack_cb_t cb, void *arg,
                         uct_uccl_ack_info_t *info)
{
    uint32_t from = t->una, left = uct_uccl_seq_dist(to, from);
    uint64_t *ring, m, pend, bytes;
    uct_uccl_tx_entry_t *e;
    unsigned off, n;

    if (t->sacked_cnt == 0) {
        /* nothing SACKed (a clean fabric): every chunk is newly acked,
         * and counted once. No first transmission acked so far came after
         * one of these on its path (it would be SACKed, or below una), so
         * none of them was overtaken: each sets its path's order. */
        info->acked += left;
        for (bytes = 0; left > 0; --left, from = uct_uccl_seq_add(from, 1)) {
            e = &t->ent[from & t->mask];
            if (e->retries == 0) {
                t->path_acked[e->path] = e->path_seq + 1;
            }
            bytes  += e->length;
            cb(arg, from, e);
            e->desc = NULL;
        }
        info->acked_bytes += bytes;
        t->inflight_bytes -= bytes;
        return;
    }

    while (left > 0) {
        off  = from & 63;
        n    = (left < 64 - off) ? left : 64 - off;
        m    = uct_uccl_bits_range(off, off + n);
        ring = &t->sacked[(from >> 6) & t->word_mask];
        pend = ~*ring & m;
        if (ucs_unlikely(pend != m)) {
            t->sacked_cnt -= __builtin_popcountll(*ring & m);
            *ring         &= ~m;
        }
        while (pend) {
            uct_uccl_tracker_acked(t, uct_uccl_seq_add(from - off,
                                                       __builtin_ctzll(pend)),
                                   cb, arg, info);
            pend &= pend - 1;
        }
        from  = uct_uccl_seq_add(from, n);
        left -= n;
    }
}

/* uct_uccl_tracker_ack, inline: a caller with a constant cb has it
 * inlined into the loops (a call per acked chunk less) */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_uccl_tracker_ack_inline(uct_uccl_tracker_t *t, const uct_uccl_ack_t *ack,
                            uint64_t arrival_ns, uct_uccl_tracker_ack_cb_t cb,
                            void *arg, uct_uccl_ack_info_t *info)
{
    uint32_t out = uct_uccl_tracker_outstanding(t);
    uint32_t cum = ack->cum_csn, echo = ack->echo_csn;
    int32_t d    = uct_uccl_seq_diff(cum, t->una);
    uint32_t base, csn0, top;
    uct_uccl_ack_info_t dummy;
    uct_uccl_tx_entry_t *e;
    int32_t dlo, dhi;
    uint64_t word, new, *ring;
    unsigned j, lo, hi;

    if (info == NULL) {
        info = &dummy;
    }
    memset(info, 0, sizeof(*info));

    if (d > (int32_t)out) {
        return UCS_ERR_OUT_OF_RANGE;
    }

    /* RTT from the chunk whose arrival triggered the ACK, before it is
     * released; a resent chunk gives an ambiguous sample (Karn) */
    if (uct_uccl_tracker_in_flight(t, echo) &&
        !(t->sacked[(echo >> 6) & t->word_mask] & (1ull << (echo & 63)))) {
        e = &t->ent[echo & t->mask];
        if ((e->retries == 0) && (arrival_ns > e->send_time)) {
            info->rtt_ns = arrival_ns - e->send_time;
            if (info->rtt_ns > ack->rx_delay_ns) {
                info->rtt_ns -= ack->rx_delay_ns;
            }
            info->rtt_path   = e->path;
            info->rx_wait_ns = ack->rx_wait_ns;
        }
    }

    if (d > 0) {
        uct_uccl_tracker_ack_cum(t, cum, cb, arg, info);
        t->una             = cum;
        t->dupacks         = 0;
        info->una_advanced = 1;
    } else if ((d == 0) && (out > 0)) {
        ++t->dupacks;
        info->dupack = 1;
    }

    base = cum & ~63u;
    for (j = 0; j < ack->sack_words; ++j) {
        memcpy(&word, (const char*)ack + sizeof(*ack) + 8 * j, sizeof(word));
        if (word == 0) {
            continue;
        }
        csn0 = uct_uccl_seq_add(base, 64 * j);
        dlo  = uct_uccl_seq_diff(t->una, csn0);
        dhi  = uct_uccl_seq_diff(t->nxt, csn0);
        if (dlo >= 64) {
            continue;               /* all before una: already acked */
        }
        if (dhi <= 0) {
            info->bad_bits += __builtin_popcountll(word);
            continue;
        }
        lo = (dlo > 0) ? dlo : 0;
        hi = (dhi < 64) ? dhi : 64;
        if (hi < 64) {
            info->bad_bits += __builtin_popcountll(word &
                                                   uct_uccl_bits_range(hi, 64));
        }
        ring  = &t->sacked[(csn0 >> 6) & t->word_mask];
        new   = word & uct_uccl_bits_range(lo, hi) & ~*ring;
        if (new == 0) {
            continue;
        }
        *ring         |= new;
        t->sacked_cnt += __builtin_popcountll(new);
        top            = uct_uccl_seq_add(csn0, 64 - __builtin_clzll(new));
        if (uct_uccl_seq_gt(top, t->high_sacked)) {
            t->high_sacked = top;
        }
        while (new) {
            uct_uccl_tracker_acked(t, uct_uccl_seq_add(csn0,
                                                       __builtin_ctzll(new)),
                                   cb, arg, info);
            new &= new - 1;
        }
    }

    if (uct_uccl_seq_lt(t->high_sacked, t->una)) {
        t->high_sacked = t->una;
    }
    return UCS_OK;
}

/* is any chunk acked beyond una (i.e. are there holes)? */
static inline int uct_uccl_tracker_has_holes(const uct_uccl_tracker_t *t)
{
    return t->high_sacked != t->una;
}

/*
 * Resend SACK holes judged lost: at any age those a later chunk of their
 * path overtook; and holes below high_sacked when dupacks >= dupack_thresh,
 * otherwise holes at least reorder_csns below it, last sent at least
 * min_age_ns ago. At most max resends. Returns the number resent.
 */
unsigned uct_uccl_tracker_fast_retx(uct_uccl_tracker_t *t, uint64_t now,
                                    uint64_t min_age_ns, unsigned max,
                                    uct_uccl_tracker_retx_cb_t cb, void *arg);

/* RTO fired: resend every unacked chunk last sent at least rto_ns ago
 * (at most max). Returns the number resent. */
unsigned uct_uccl_tracker_expire(uct_uccl_tracker_t *t, uint64_t now,
                                 uint64_t rto_ns, unsigned max,
                                 uct_uccl_tracker_retx_cb_t cb, void *arg);

/* Connection failed or closed: call cb for every chunk still holding a
 * desc (in CSN order) and empty the tracker. */
void uct_uccl_tracker_purge(uct_uccl_tracker_t *t,
                            uct_uccl_tracker_ack_cb_t cb, void *arg);

#endif

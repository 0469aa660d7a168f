/*
 * Sender's unacked-chunk tracker (see uccl_tracker.h).
 */
#include "uccl_tracker.h"

#include <stdlib.h>
#include <string.h>


/* bits [lo, hi) of a word, 0 <= lo < hi <= 64 */
static inline uint64_t uct_uccl_bits_range(unsigned lo, unsigned hi)
{
    uint64_t m = (hi >= 64) ? ~0ull : ((1ull << hi) - 1);

    return m & ~((1ull << lo) - 1);
}

ucs_status_t uct_uccl_tracker_init(uct_uccl_tracker_t *t,
                                   const uct_uccl_tracker_params_t *params)
{
    uint32_t size = params->size;

    if ((size < 64) || (size > (1u << 16)) || (size & (size - 1)) ||
        (params->init_csn & ~UCT_UCCL_SEQ_MASK) ||
        (params->dupack_thresh == 0) || (params->num_paths == 0) ||
        (params->num_paths > UCT_UCCL_WIRE_MAX_PATHS)) {
        return UCS_ERR_INVALID_PARAM;
    }

    memset(t, 0, sizeof(*t));
    t->ent        = calloc(size, sizeof(*t->ent));
    t->sacked     = calloc(size / 64, sizeof(*t->sacked));
    t->path_sent  = calloc(params->num_paths, sizeof(*t->path_sent));
    t->path_acked = calloc(params->num_paths, sizeof(*t->path_acked));
    if ((t->ent == NULL) || (t->sacked == NULL) || (t->path_sent == NULL) ||
        (t->path_acked == NULL)) {
        uct_uccl_tracker_cleanup(t);
        return UCS_ERR_NO_MEMORY;
    }
    t->una           = params->init_csn;
    t->nxt           = params->init_csn;
    t->high_sacked   = params->init_csn;
    t->limit         = size;
    t->mask          = size - 1;
    t->word_mask     = size / 64 - 1;
    t->dupack_thresh = params->dupack_thresh;
    t->reorder_csns  = params->reorder_csns;
    return UCS_OK;
}

void uct_uccl_tracker_cleanup(uct_uccl_tracker_t *t)
{
    free(t->ent);
    free(t->sacked);
    free(t->path_sent);
    free(t->path_acked);
    t->ent        = NULL;
    t->sacked     = NULL;
    t->path_sent  = NULL;
    t->path_acked = NULL;
}

/* was this hole's transmission overtaken on its path? */
static inline int uct_uccl_tracker_path_lost(const uct_uccl_tracker_t *t,
                                             const uct_uccl_tx_entry_t *e)
{
    return (int32_t)(e->path_seq - t->path_acked[e->path]) < 0;
}

static inline void
uct_uccl_tracker_acked(uct_uccl_tracker_t *t, uint32_t csn,
                       uct_uccl_tracker_ack_cb_t cb, void *arg,
                       uct_uccl_ack_info_t *info)
{
    uct_uccl_tx_entry_t *e = &t->ent[csn & t->mask];

    /* a first transmission arrived: what its path carried before it and
     * is still missing was lost (a resend's arrival is ambiguous: its
     * earlier transmission, on another path, may be the one that came) */
    if ((e->retries == 0) && !uct_uccl_tracker_path_lost(t, e)) {
        t->path_acked[e->path] = e->path_seq + 1;
    }
    ++info->acked;
    info->acked_bytes += e->length;
    t->inflight_bytes -= e->length;
    cb(arg, csn, e);
    e->desc = NULL;
}

/* cumulative part: every chunk of [una, to) not already SACKed is acked */
static void uct_uccl_tracker_ack_cum(uct_uccl_tracker_t *t, uint32_t to,
                                     uct_uccl_tracker_ack_cb_t cb, void *arg,
                                     uct_uccl_ack_info_t *info)
{
    uint32_t from = t->una, left = uct_uccl_seq_dist(to, from);
    unsigned off, n;
    uint64_t *ring, m, pend;

    if (t->sacked_cnt == 0) {
        /* nothing SACKed (a clean fabric): every chunk is newly acked */
        for (; left > 0; --left, from = uct_uccl_seq_add(from, 1)) {
            uct_uccl_tracker_acked(t, from, cb, arg, info);
        }
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

ucs_status_t uct_uccl_tracker_ack(uct_uccl_tracker_t *t,
                                  const uct_uccl_ack_t *ack,
                                  uint64_t arrival_ns,
                                  uct_uccl_tracker_ack_cb_t cb, void *arg,
                                  uct_uccl_ack_info_t *info)
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

/* resend chunks of [una, to) not SACKed that were overtaken on their path
 * or, below aged_to, were last sent >= min_age ago */
static unsigned
uct_uccl_tracker_scan(uct_uccl_tracker_t *t, uint32_t to, uint32_t aged_to,
                      uint64_t now, uint64_t min_age, unsigned max,
                      uct_uccl_tracker_retx_cb_t cb, void *arg)
{
    uint32_t aged = uct_uccl_seq_dist(aged_to, t->una);
    uint32_t from = t->una, left = uct_uccl_seq_dist(to, from), csn;
    unsigned off, n, count = 0;
    uct_uccl_tx_entry_t *e;
    ucs_status_t status;
    uint64_t holes;
    uint8_t doubt;
    int lost;

    while ((left > 0) && (count < max)) {
        off   = from & 63;
        n     = (left < 64 - off) ? left : 64 - off;
        holes = ~t->sacked[(from >> 6) & t->word_mask] &
                uct_uccl_bits_range(off, off + n);
        while (holes) {
            csn = uct_uccl_seq_add(from - off, __builtin_ctzll(holes));
            e   = &t->ent[csn & t->mask];
            lost = uct_uccl_tracker_path_lost(t, e);
            if (lost ||
                ((uct_uccl_seq_dist(csn, t->una) < aged) &&
                 (now >= e->send_time) && (now - e->send_time >= min_age))) {
                /* set before the call, and kept if it fails: erring
                 * towards doubt only costs the resend a bounce buffer */
                doubt     = e->doubt;
                e->doubt |= !lost;
                status    = cb(arg, csn, e);
                if (status == UCS_ERR_ALREADY_EXISTS) {
                    e->doubt = doubt;
                    holes   &= holes - 1;
                    continue;
                } else if (status != UCS_OK) {
                    return count;
                }
                e->path_seq  = t->path_sent[e->path]++;
                e->send_time = now;
                if (e->retries < UINT8_MAX) {
                    ++e->retries;
                }
                if (++count == max) {
                    return count;
                }
            }
            holes &= holes - 1;
        }
        from  = uct_uccl_seq_add(from, n);
        left -= n;
    }
    return count;
}

unsigned uct_uccl_tracker_fast_retx(uct_uccl_tracker_t *t, uint64_t now,
                                    uint64_t min_age_ns, unsigned max,
                                    uct_uccl_tracker_retx_cb_t cb, void *arg)
{
    uint32_t end = t->high_sacked, aged_end = end;

    if (!uct_uccl_tracker_has_holes(t)) {
        return 0;
    }
    if (t->dupacks < t->dupack_thresh) {
        /* by age, only holes far enough below the highest acked chunk */
        if ((t->reorder_csns == 0) ||
            (uct_uccl_seq_dist(end, t->una) <= t->reorder_csns)) {
            aged_end = t->una;
        } else {
            aged_end = (end - t->reorder_csns) & UCT_UCCL_SEQ_MASK;
        }
    }
    return uct_uccl_tracker_scan(t, end, aged_end, now, min_age_ns, max, cb,
                                 arg);
}

unsigned uct_uccl_tracker_expire(uct_uccl_tracker_t *t, uint64_t now,
                                 uint64_t rto_ns, unsigned max,
                                 uct_uccl_tracker_retx_cb_t cb, void *arg)
{
    return uct_uccl_tracker_scan(t, t->nxt, t->nxt, now, rto_ns, max, cb,
                                 arg);
}

void uct_uccl_tracker_purge(uct_uccl_tracker_t *t,
                            uct_uccl_tracker_ack_cb_t cb, void *arg)
{
    uct_uccl_tx_entry_t *e;
    uint32_t csn;

    if (t->ent == NULL) {
        return; /* never set up (its conn failed first): holds nothing */
    }

    for (csn = t->una; csn != t->nxt; csn = uct_uccl_seq_add(csn, 1)) {
        e = &t->ent[csn & t->mask];
        if (e->desc != NULL) {
            cb(arg, csn, e);
            e->desc = NULL;
        }
    }
    memset(t->sacked, 0, (t->word_mask + 1) * sizeof(*t->sacked));
    t->una            = t->nxt;
    t->high_sacked    = t->nxt;
    t->dupacks        = 0;
    t->sacked_cnt     = 0;
    t->inflight_bytes = 0;
}

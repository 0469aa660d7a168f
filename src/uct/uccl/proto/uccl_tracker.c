/*
 * Sender's unacked-chunk tracker (see uccl_tracker.h).
 */
#include "uccl_tracker.h"

#include <stdlib.h>
#include <string.h>


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

ucs_status_t uct_uccl_tracker_ack(uct_uccl_tracker_t *t,
                                  const uct_uccl_ack_t *ack,
                                  uint64_t arrival_ns,
                                  uct_uccl_tracker_ack_cb_t cb, void *arg,
                                  uct_uccl_ack_info_t *info)
{
    return uct_uccl_tracker_ack_inline(t, ack, arrival_ns, cb, arg, info);
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

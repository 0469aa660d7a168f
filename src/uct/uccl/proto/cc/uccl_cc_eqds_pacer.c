/*
 * EQDS receiver pacer (see uccl_cc_eqds_pacer.h).
 */
#include "uccl_cc_eqds_pacer.h"
#include "uccl_cc_def.h"

#include <string.h>


/* t_next += the time `bytes` take at the grant rate: whole ns in t_next,
 * the fraction in t_rem (2^-32 ns). The time per byte is rounded up, so
 * the pacer never runs faster than its rate, and by at most 2^-32 ns a
 * byte slower; a multiply where a division would run per grant. */
static void uct_uccl_cc_eqds_pacer_advance(uct_uccl_cc_eqds_pacer_t *pacer,
                                           uint64_t bytes)
{
    unsigned __int128 t = (unsigned __int128)bytes * pacer->byte_ns_q32 +
                          pacer->t_rem;

    pacer->t_next += (uint64_t)(t >> UCT_UCCL_CC_EQDS_NS_FRAC_BITS);
    pacer->t_rem   = (uint32_t)t;
}

/* Budget missed while idle or late is kept up to one burst only */
static void uct_uccl_cc_eqds_pacer_floor(uct_uccl_cc_eqds_pacer_t *pacer,
                                         uint64_t now)
{
    if ((now >= pacer->burst_ns) && (pacer->t_next < now - pacer->burst_ns)) {
        pacer->t_next = now - pacer->burst_ns;
        pacer->t_rem  = 0;
    }
}

ucs_status_t
uct_uccl_cc_eqds_pacer_init(uct_uccl_cc_eqds_pacer_t *pacer,
                            const uct_uccl_cc_eqds_pacer_params_t *params,
                            uint64_t now)
{
    uint64_t link   = (params->link_bps != 0) ? params->link_bps :
                                                UCT_UCCL_CC_DEF_LINK_BPS;
    double frac     = (params->rate_frac != 0) ? params->rate_frac :
                                                 UCT_UCCL_CC_EQDS_RATE_FRAC;
    uint32_t burst;

    memset(pacer, 0, sizeof(*pacer));
    pacer->quantum = (params->quantum != 0) ? params->quantum :
                                              UCT_UCCL_CC_EQDS_QUANTUM;
    burst          = (params->max_burst != 0) ? params->max_burst :
                                                UCT_UCCL_CC_EQDS_MAX_BURST;
    if ((pacer->quantum > UCT_UCCL_CC_EQDS_MAX_QUANTUM) || !(frac > 0) ||
        (frac > 1)) {
        return UCS_ERR_INVALID_PARAM;
    }

    pacer->rate_bps = (uint64_t)(link * frac);
    if (pacer->rate_bps < UCT_UCCL_CC_EQDS_MIN_RATE_BPS) {
        return UCS_ERR_INVALID_PARAM;
    }
    pacer->byte_ns_q32 = (uint64_t)
        ((((unsigned __int128)8000000000ull << UCT_UCCL_CC_EQDS_NS_FRAC_BITS) +
          pacer->rate_bps - 1) / pacer->rate_bps);
    pacer->max_out = (params->max_out != 0) ? params->max_out :
                     UCT_UCCL_CC_EQDS_MAX_OUT_QUANTA * pacer->quantum;
    if (pacer->max_out < pacer->quantum) {
        return UCS_ERR_INVALID_PARAM;
    }
    pacer->t_next   = now;
    uct_uccl_cc_eqds_pacer_advance(pacer, burst);
    pacer->burst_ns = pacer->t_next - now;
    pacer->t_next   = now;
    pacer->t_rem    = 0;
    return UCS_OK;
}

/* a sender's count from before the pacer forgot them is 0 */
static void uct_uccl_cc_eqds_pacer_sync(uct_uccl_cc_eqds_sender_t *sender)
{
    if (sender->pull_epoch != sender->pacer->pull_epoch) {
        sender->pull_epoch = sender->pacer->pull_epoch;
        sender->pull_out   = 0;
    }
    if (sender->epoch != sender->pacer->epoch) {
        sender->epoch = sender->pacer->epoch;
        sender->out   = sender->pull_out;
    }
}

static void uct_uccl_cc_eqds_pacer_activate(uct_uccl_cc_eqds_sender_t *s)
{
    uct_uccl_cc_eqds_pacer_t *pacer = s->pacer;
    uct_uccl_cc_eqds_sender_t *c    = pacer->cursor;

    if (c == NULL) {
        s->next = s->prev = s;
        pacer->cursor     = s;
    } else {
        /* just before the cursor: served last in the current round */
        s->next       = c;
        s->prev       = c->prev;
        c->prev->next = s;
        c->prev       = s;
    }
    s->active = 1;
    ++pacer->num_active;
}

static void uct_uccl_cc_eqds_pacer_deactivate(uct_uccl_cc_eqds_sender_t *s)
{
    uct_uccl_cc_eqds_pacer_t *pacer = s->pacer;

    if (s->next == s) {
        pacer->cursor = NULL;
    } else {
        s->prev->next = s->next;
        s->next->prev = s->prev;
        if (pacer->cursor == s) {
            pacer->cursor = s->next;
        }
    }
    s->next = s->prev = NULL;
    s->active = 0;
    --pacer->num_active;
}

void uct_uccl_cc_eqds_pacer_cleanup(uct_uccl_cc_eqds_pacer_t *pacer)
{
    while (pacer->cursor != NULL) {
        uct_uccl_cc_eqds_pacer_remove(pacer->cursor);
    }
}

void uct_uccl_cc_eqds_pacer_add(uct_uccl_cc_eqds_pacer_t *pacer,
                                uct_uccl_cc_eqds_sender_t *sender, void *arg)
{
    sender->pacer  = pacer;
    sender->arg    = arg;
    sender->next   = sender->prev = NULL;
    sender->active = 0;
    sender->tick   = 0;
    sender->out    = 0;
    sender->pull   = 0;
    sender->pull_out   = 0;
    sender->pull_epoch = pacer->pull_epoch;
    sender->epoch  = pacer->epoch;
    ++pacer->num_senders;
    if (sender->demand > 0) {
        uct_uccl_cc_eqds_pacer_activate(sender);
    }
}

/* on the ring while it wants credit or pulls */
static void uct_uccl_cc_eqds_pacer_update(uct_uccl_cc_eqds_sender_t *s)
{
    int wants = (s->demand > 0) || (s->pull > 0);

    if (wants && !s->active) {
        uct_uccl_cc_eqds_pacer_activate(s);
    } else if (!wants && s->active) {
        uct_uccl_cc_eqds_pacer_deactivate(s);
    }
}

void uct_uccl_cc_eqds_pacer_remove(uct_uccl_cc_eqds_sender_t *sender)
{
    if (sender->pacer == NULL) {
        return;
    }
    if (sender->active) {
        uct_uccl_cc_eqds_pacer_deactivate(sender);
    }
    --sender->pacer->num_senders;
    sender->pull = 0;
    uct_uccl_cc_eqds_pacer_sync(sender);
    sender->pacer->out      -= sender->out;
    sender->pacer->pull_out -= sender->pull_out;
    sender->out              = 0;
    sender->pull_out         = 0;
    sender->pacer       = NULL;
}

void uct_uccl_cc_eqds_pacer_demand(uct_uccl_cc_eqds_sender_t *sender,
                                   uint64_t demand)
{
    sender->demand = demand;
    if (sender->pacer != NULL) {
        uct_uccl_cc_eqds_pacer_update(sender);
    }
}

void uct_uccl_cc_eqds_pacer_charge(uct_uccl_cc_eqds_pacer_t *pacer,
                                   uint64_t bytes, uint64_t now)
{
    uint64_t limit = now + UCT_UCCL_CC_EQDS_MAX_CHARGE_NS;

    if (bytes == 0) {
        return;
    }
    pacer->charged_bytes += bytes;
    uct_uccl_cc_eqds_pacer_floor(pacer, now);
    /* in steps, so a huge count cannot overflow the product */
    while ((bytes > 0) && (pacer->t_next < limit)) {
        uint64_t step = (bytes < UCT_UCCL_CC_EQDS_MAX_QUANTUM) ?
                        bytes : UCT_UCCL_CC_EQDS_MAX_QUANTUM;

        uct_uccl_cc_eqds_pacer_advance(pacer, step);
        bytes -= step;
    }
    if (pacer->t_next > limit) {
        pacer->t_next = limit;
        pacer->t_rem  = 0;
    }
}

/* out grows by bytes: its peak, and the time the pacer became full */
static void uct_uccl_cc_eqds_pacer_grow(uct_uccl_cc_eqds_pacer_t *pacer,
                                        uct_uccl_cc_eqds_sender_t *sender,
                                        uint64_t bytes, uint64_t now)
{
    int was_full = uct_uccl_cc_eqds_pacer_full(pacer);

    sender->out += bytes;
    pacer->out  += bytes;
    if (pacer->out > pacer->out_peak) {
        pacer->out_peak = pacer->out;
    }
    if (!was_full && uct_uccl_cc_eqds_pacer_full(pacer)) {
        pacer->full_ns = now;
    }
}

void uct_uccl_cc_eqds_pacer_expect(uct_uccl_cc_eqds_sender_t *sender,
                                   uint64_t bytes, uint64_t now)
{
    uct_uccl_cc_eqds_pacer_t *pacer = sender->pacer;
    uint64_t add;

    if (pacer == NULL) {
        return;
    }
    uct_uccl_cc_eqds_pacer_sync(sender);
    add = (bytes < pacer->max_out) ? bytes : pacer->max_out;
    uct_uccl_cc_eqds_pacer_grow(pacer, sender, add, now);
}

void uct_uccl_cc_eqds_pacer_arrived(uct_uccl_cc_eqds_sender_t *sender,
                                    uint64_t bytes)
{
    uct_uccl_cc_eqds_pacer_t *pacer = sender->pacer;
    uint64_t done;

    if (pacer == NULL) {
        return;
    }
    uct_uccl_cc_eqds_pacer_sync(sender);
    done         = (bytes < sender->out) ? bytes : sender->out;
    sender->out -= done;
    pacer->out  -= done;
    /* the pulls are counted among out: those arrive last */
    if (sender->pull_out > sender->out) {
        pacer->pull_out  -= sender->pull_out - sender->out;
        sender->pull_out  = sender->out;
    }
}

/* `bytes` granted to s: the link's time, and on their way */
static void uct_uccl_cc_eqds_pacer_give(uct_uccl_cc_eqds_pacer_t *pacer,
                                        uct_uccl_cc_eqds_sender_t *s,
                                        uint64_t bytes, uint64_t now)
{
    pacer->granted_bytes += bytes;
    uct_uccl_cc_eqds_pacer_grow(pacer, s, bytes, now);
    uct_uccl_cc_eqds_pacer_advance(pacer, bytes);
}

/* ... as a pull */
static void uct_uccl_cc_eqds_pacer_give_pull(uct_uccl_cc_eqds_pacer_t *pacer,
                                             uct_uccl_cc_eqds_sender_t *s,
                                             uint64_t bytes, uint64_t now)
{
    uct_uccl_cc_eqds_pacer_give(pacer, s, bytes, now);
    s->pulled           += bytes;
    s->pull_out         += bytes;
    pacer->pull_out     += bytes;
    pacer->pulled_bytes += bytes;
}

int uct_uccl_cc_eqds_pacer_pull(uct_uccl_cc_eqds_sender_t *sender,
                                uint64_t bytes, uint64_t now)
{
    uct_uccl_cc_eqds_pacer_t *pacer = sender->pacer;

    if ((pacer == NULL) || (sender->pulled >= bytes)) {
        return 1;
    }
    if (sender->pull > 0) {
        return 0; /* asked already */
    }
    sender->pull = bytes - sender->pulled;
    uct_uccl_cc_eqds_pacer_floor(pacer, now);
    if ((pacer->cursor == NULL) && (pacer->t_next <= now) &&
        !uct_uccl_cc_eqds_pacer_full(pacer)) {
        /* nobody waits: its turn is now */
        uct_uccl_cc_eqds_pacer_sync(sender);
        uct_uccl_cc_eqds_pacer_give_pull(pacer, sender, sender->pull, now);
        sender->pull = 0;
        return 1;
    }
    uct_uccl_cc_eqds_pacer_update(sender);
    return 0;
}

void uct_uccl_cc_eqds_pacer_pulled(uct_uccl_cc_eqds_sender_t *sender,
                                   uint64_t bytes)
{
    sender->pulled -= (bytes < sender->pulled) ? bytes : sender->pulled;
}

/* Full for OUT_STALE_NS: forget the counts of grants (each sender's at
 * its next use), but not of pulls: a GET's reply comes, however late its
 * sender is, and granting on top of it is what overflows the port. Full
 * for PULL_STALE_NS: forget those too (a peer that never answers must
 * not stop the grants for good). 0: still full, wait. */
static int uct_uccl_cc_eqds_pacer_unfill(uct_uccl_cc_eqds_pacer_t *pacer,
                                         uint64_t now)
{
    if (now - pacer->full_ns < UCT_UCCL_CC_EQDS_OUT_STALE_NS) {
        ++pacer->held;
        return 0;
    }
    if (pacer->out > pacer->pull_out) {
        ++pacer->epoch;
        ++pacer->forgot;
        pacer->out = pacer->pull_out;
        if (!uct_uccl_cc_eqds_pacer_full(pacer)) {
            return 1;
        }
    }
    if (now - pacer->full_ns < UCT_UCCL_CC_EQDS_PULL_STALE_NS) {
        ++pacer->held;
        return 0;
    }
    ++pacer->epoch;
    ++pacer->pull_epoch;
    ++pacer->forgot;
    pacer->out      = 0;
    pacer->pull_out = 0;
    return 1;
}

void uct_uccl_cc_eqds_pacer_bound(uct_uccl_cc_eqds_sender_t *sender,
                                  uint64_t bytes)
{
    if (sender->pacer == NULL) {
        return;
    }
    uct_uccl_cc_eqds_pacer_sync(sender);
    /* not its pulls: the sender tells what it holds as it was when it
     * asked, which may be before a GET we pulled since reached it */
    bytes += sender->pull_out;
    if (sender->out > bytes) {
        uct_uccl_cc_eqds_pacer_arrived(sender, sender->out - bytes);
    }
}

unsigned uct_uccl_cc_eqds_pacer_tick(uct_uccl_cc_eqds_pacer_t *pacer,
                                     uint64_t now,
                                     uct_uccl_cc_eqds_sender_t **out,
                                     unsigned max_out)
{
    uct_uccl_cc_eqds_sender_t *s;
    unsigned n = 0;
    uint64_t g;

    ++pacer->tick;
    uct_uccl_cc_eqds_pacer_floor(pacer, now);
    while ((pacer->cursor != NULL) && (pacer->t_next <= now)) {
        if (uct_uccl_cc_eqds_pacer_full(pacer) &&
            !uct_uccl_cc_eqds_pacer_unfill(pacer, now)) {
            break;
        }
        s = pacer->cursor;
        uct_uccl_cc_eqds_pacer_sync(s);
        if (s->tick != pacer->tick) {
            if (n == max_out) {
                break;
            }
            out[n++]      = s;
            s->tick       = pacer->tick;
            s->credit_due = 0;
            s->pull_due   = 0;
        }
        if (s->pull > 0) {
            /* the owner's own request waits: its turn is all of it */
            s->pull_due = 1;
            uct_uccl_cc_eqds_pacer_give_pull(pacer, s, s->pull, now);
            s->pull     = 0;
        } else {
            g              = (s->demand < pacer->quantum) ? s->demand :
                                                            pacer->quantum;
            s->demand     -= g;
            s->granted    += g;
            s->credit_due  = 1;
            uct_uccl_cc_eqds_pacer_give(pacer, s, g, now);
        }
        pacer->cursor = s->next;
        uct_uccl_cc_eqds_pacer_update(s);
    }
    return n;
}

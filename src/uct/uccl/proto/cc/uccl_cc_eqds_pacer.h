/*
 * EQDS receiver pacer: one per receiving iface, shared by its conns.
 *
 * Senders that asked for credit (demand > 0) form a ring; tick(now) grants
 * them credit round robin, at most one quantum each per turn, at the rate
 * of the receiving link (times rate_frac, which leaves room for headers):
 * the pacer keeps the time before which it may grant again (t_next), and
 * every granted byte moves it on by its transmission time. Bytes that
 * cross the link without a grant (the senders' speculative bytes, as their
 * requests announce them) are charged the same way, so they delay grants
 * instead of piling up in the fabric. A tick that comes late may use at
 * most max_burst bytes of missed budget.
 *
 * The rate alone does not bound the receiver's queue: a sender may use its
 * grants late (a busy CPU), and grants of several ticks then land at
 * once. So the pacer also counts each sender's grants that did not arrive
 * yet (out: granted, less what arrived and what the sender reported lost)
 * and grants only while a whole quantum fits below max_out, what the
 * receiver's port can absorb. A grant is never cut to the room left: the
 * part of a chunk it would give is of no use alone, and such parts spread
 * over several senders fill the bound with credit none of them can send
 * (a sender short of its next send gives back what it holds after a
 * while, HOLD_NS, which also frees a bound held by parts left from
 * elsewhere). Speculative bytes count
 * as on their way once announced (expect); arrivals take a count to 0 at
 * most, so a sender whose bytes all arrived is back to 0; each request of
 * the sender bounds it from above by what the sender holds (so grants it
 * will never use, or losses it did not report, are not counted for long;
 * a sender gives back what it holds unused for long, HOLD_NS). A pacer
 * full for OUT_STALE_NS forgets its counts: whatever went wrong, grants
 * do not stop for good. With a quantum of one chunk,
 * grants arrive as whole chunks, spread out: at most about one chunk waits
 * at the link (a smaller quantum lets all senders fill a chunk at once).
 *
 * Pure logic: the owner (the iface) calls tick() from its timer at
 * next_ns(), sends each returned sender's cumulative grant to its peer
 * (in an ACK or a credit message), and sets each sender's demand from the
 * peer's requests. Senders are embedded in their owner's state and must
 * not move while registered; they are removed before the pacer goes.
 */
#ifndef UCT_UCCL_CC_EQDS_PACER_H_
#define UCT_UCCL_CC_EQDS_PACER_H_

#include "uccl_cc.h"
#include "uccl_cc_def.h"

typedef struct uct_uccl_cc_eqds_sender uct_uccl_cc_eqds_sender_t;

struct uct_uccl_cc_eqds_sender {
    uct_uccl_cc_eqds_sender_t *next;    /* ring of active senders */
    uct_uccl_cc_eqds_sender_t *prev;
    uct_uccl_cc_eqds_pacer_t  *pacer;   /* NULL: not registered */
    void                      *arg;     /* the owner's, e.g. its conn */
    uint64_t                  demand;   /* bytes asked for, not granted */
    uint64_t                  granted;  /* bytes granted, cumulative */
    uint64_t                  out;      /* granted, not arrived yet */
    uint64_t                  epoch;    /* out counts since this one */
    uint64_t                  tick;     /* the last tick that granted it */
    uint64_t                  pull;     /* bytes the owner pulls (the
                                         * replies to its own GETs), not
                                         * granted yet */
    uint64_t                  pulled;   /* granted pulls, not spent yet */
    uint64_t                  pull_out; /* of out, pulls */
    uint64_t                  pull_epoch; /* pull_out counts since it */
    uint8_t                   credit_due; /* the last tick that returned
                                           * it granted credit */
    uint8_t                   pull_due;   /* ... or a pull */
    int                       active;   /* on the ring */
};

typedef struct uct_uccl_cc_eqds_pacer_params {
    uint64_t link_bps;      /* receiving link rate; 0: the default */
    uint32_t quantum;       /* bytes per grant; 0: the default */
    uint32_t max_burst;     /* missed budget a late tick may use */
    uint64_t max_out;       /* most granted and not arrived; 0: default */
    double   rate_frac;     /* share of the link granted; 0: default */
} uct_uccl_cc_eqds_pacer_params_t;

struct uct_uccl_cc_eqds_pacer {
    uint64_t                  rate_bps;   /* grant rate */
    uint64_t                  byte_ns_q32; /* ns a byte takes at it,
                                              2^-32 ns units, rounded up */
    uint32_t                  quantum;
    uint64_t                  burst_ns;   /* time of max_burst at rate */
    uct_uccl_cc_eqds_sender_t *cursor;    /* next to serve; NULL: idle */
    unsigned                  num_senders;
    unsigned                  num_active;
    uint64_t                  t_next;     /* no grant before (ns) */
    uint64_t                  t_rem;      /* and this x 2^-32 ns */
    uint64_t                  tick;
    uint64_t                  max_out;    /* bound of out */
    uint64_t                  out;        /* sum of the senders' out */
    uint64_t                  pull_out;   /* of it, pulls */
    uint64_t                  epoch;      /* counts before it forgotten */
    uint64_t                  pull_epoch; /* counts of pulls before it */
    uint64_t                  full_ns;    /* out reached max_out then */
    uint64_t                  granted_bytes; /* statistics */
    uint64_t                  charged_bytes;
    uint64_t                  pulled_bytes; /* of granted, pulls */
    uint64_t                  out_peak;   /* most out reached */
    uint64_t                  held;       /* grants max_out held back */
    uint64_t                  forgot;     /* counts forgotten (stale) */
};

/* UCS_ERR_INVALID_PARAM for a quantum over UCT_UCCL_CC_EQDS_MAX_QUANTUM,
 * a rate fraction outside (0, 1] or a max_out below the quantum */
ucs_status_t
uct_uccl_cc_eqds_pacer_init(uct_uccl_cc_eqds_pacer_t *pacer,
                            const uct_uccl_cc_eqds_pacer_params_t *params,
                            uint64_t now);

/* Detaches the senders still on the ring (the owner removes the others
 * first: num_senders counts them all) */
void uct_uccl_cc_eqds_pacer_cleanup(uct_uccl_cc_eqds_pacer_t *pacer);

/* Register a sender (demand 0: inactive); arg comes back from tick */
void uct_uccl_cc_eqds_pacer_add(uct_uccl_cc_eqds_pacer_t *pacer,
                                uct_uccl_cc_eqds_sender_t *sender, void *arg);

void uct_uccl_cc_eqds_pacer_remove(uct_uccl_cc_eqds_sender_t *sender);

/* No sender but (maybe) this one waits for the pacer's grants or pulls */
static inline int
uct_uccl_cc_eqds_pacer_alone(const uct_uccl_cc_eqds_pacer_t *pacer,
                             const uct_uccl_cc_eqds_sender_t *sender)
{
    return pacer->num_active <= (unsigned)(sender->active != 0);
}

/* Bytes the sender still wants granted; > 0 puts it on the ring (last in
 * the current round), 0 takes it off (unless the owner pulls) */
void uct_uccl_cc_eqds_pacer_demand(uct_uccl_cc_eqds_sender_t *sender,
                                   uint64_t demand);

/* The owner pulls `bytes` from the sender's peer itself (a GET: the peer
 * answers it without credit, so the request is the grant): they are
 * scheduled like a grant, a turn of the ring for the whole of them (the
 * request is one unit; one larger than max_out goes alone), and counted
 * on their way like one, but granted as a pull, not as credit. Returns 1
 * when `bytes` are granted and not spent (at once when the pacer is idle
 * and may grant now), else asks the pacer for the rest and returns 0: a
 * tick that returns the sender with pull_due set granted it. */
int uct_uccl_cc_eqds_pacer_pull(uct_uccl_cc_eqds_sender_t *sender,
                                uint64_t bytes, uint64_t now);

/* The request that pulled `bytes` went: they are spent */
void uct_uccl_cc_eqds_pacer_pulled(uct_uccl_cc_eqds_sender_t *sender,
                                   uint64_t bytes);

/* Bytes that arrived without a grant: they used the link too */
void uct_uccl_cc_eqds_pacer_charge(uct_uccl_cc_eqds_pacer_t *pacer,
                                   uint64_t bytes, uint64_t now);

/* Bytes the sender announced it sends without a grant (speculative):
 * counted as on their way like grants, so that their arrivals do not
 * take the count of its grants below what is still to come (at most
 * max_out at once: a lie holds the grants back until the sender's next
 * request bounds its count, or the pacer forgets) */
void uct_uccl_cc_eqds_pacer_expect(uct_uccl_cc_eqds_sender_t *sender,
                                   uint64_t bytes, uint64_t now);

/* Bytes of the sender that arrived, or that it reported lost: no longer
 * on their way (its out falls, to 0 at most) */
void uct_uccl_cc_eqds_pacer_arrived(uct_uccl_cc_eqds_sender_t *sender,
                                    uint64_t bytes);

/* At most `bytes` of the sender's grants can still arrive (what it told
 * it holds): its out falls to that, plus its pulls */
void uct_uccl_cc_eqds_pacer_bound(uct_uccl_cc_eqds_sender_t *sender,
                                  uint64_t bytes);

/* Grant what the link allows up to now. Fills out[] with the senders that
 * got credit (credit_due) or a pull (pull_due), each once (at most
 * max_out: the rest waits for the next tick), and returns how many. */
unsigned uct_uccl_cc_eqds_pacer_tick(uct_uccl_cc_eqds_pacer_t *pacer,
                                     uint64_t now,
                                     uct_uccl_cc_eqds_sender_t **out,
                                     unsigned max_out);

/* No quantum fits below max_out with the grants not arrived: only an
 * arrival (or a loss report, a sender's holdings, or OUT_STALE_NS) lets
 * the next grant go */
static inline int
uct_uccl_cc_eqds_pacer_full(const uct_uccl_cc_eqds_pacer_t *pacer)
{
    return pacer->out + pacer->quantum > pacer->max_out;
}

/* When the next grant may go: 0 when no sender waits; when full, the
 * time its counts go stale, those of pulls later (an arrival may come
 * first) */
static inline uint64_t
uct_uccl_cc_eqds_pacer_next_ns(const uct_uccl_cc_eqds_pacer_t *pacer)
{
    if (pacer->cursor == NULL) {
        return 0;
    }
    if (uct_uccl_cc_eqds_pacer_full(pacer)) {
        return pacer->full_ns + ((pacer->out > pacer->pull_out) ?
                                 UCT_UCCL_CC_EQDS_OUT_STALE_NS :
                                 UCT_UCCL_CC_EQDS_PULL_STALE_NS);
    }
    return pacer->t_next;
}

#endif

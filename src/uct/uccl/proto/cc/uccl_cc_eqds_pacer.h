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
 * most max_burst bytes of missed budget. With a quantum of one chunk,
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

typedef struct uct_uccl_cc_eqds_sender uct_uccl_cc_eqds_sender_t;

struct uct_uccl_cc_eqds_sender {
    uct_uccl_cc_eqds_sender_t *next;    /* ring of active senders */
    uct_uccl_cc_eqds_sender_t *prev;
    uct_uccl_cc_eqds_pacer_t  *pacer;   /* NULL: not registered */
    void                      *arg;     /* the owner's, e.g. its conn */
    uint64_t                  demand;   /* bytes asked for, not granted */
    uint64_t                  granted;  /* bytes granted, cumulative */
    uint64_t                  tick;     /* the last tick that granted it */
    int                       active;   /* on the ring */
};

typedef struct uct_uccl_cc_eqds_pacer_params {
    uint64_t link_bps;      /* receiving link rate; 0: the default */
    uint32_t quantum;       /* bytes per grant; 0: the default */
    uint32_t max_burst;     /* missed budget a late tick may use */
    double   rate_frac;     /* share of the link granted; 0: default */
} uct_uccl_cc_eqds_pacer_params_t;

struct uct_uccl_cc_eqds_pacer {
    uint64_t                  rate_bps;   /* grant rate */
    uint32_t                  quantum;
    uint64_t                  burst_ns;   /* time of max_burst at rate */
    uct_uccl_cc_eqds_sender_t *cursor;    /* next to serve; NULL: idle */
    unsigned                  num_senders;
    unsigned                  num_active;
    uint64_t                  t_next;     /* no grant before (ns) */
    uint64_t                  t_rem;      /* and this / rate_bps ns */
    uint64_t                  tick;
    uint64_t                  granted_bytes; /* statistics */
    uint64_t                  charged_bytes;
};

/* UCS_ERR_INVALID_PARAM for a quantum over UCT_UCCL_CC_EQDS_MAX_QUANTUM
 * or a rate fraction outside (0, 1] */
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

/* Bytes the sender still wants granted; > 0 puts it on the ring (last in
 * the current round), 0 takes it off */
void uct_uccl_cc_eqds_pacer_demand(uct_uccl_cc_eqds_sender_t *sender,
                                   uint64_t demand);

/* Bytes that arrived without a grant: they used the link too */
void uct_uccl_cc_eqds_pacer_charge(uct_uccl_cc_eqds_pacer_t *pacer,
                                   uint64_t bytes, uint64_t now);

/* Grant what the link allows up to now. Fills out[] with the senders that
 * got credit (each once; at most max_out: the rest waits for the next
 * tick) and returns how many. */
unsigned uct_uccl_cc_eqds_pacer_tick(uct_uccl_cc_eqds_pacer_t *pacer,
                                     uint64_t now,
                                     uct_uccl_cc_eqds_sender_t **out,
                                     unsigned max_out);

/* When the next grant may go: 0 when no sender waits */
static inline uint64_t
uct_uccl_cc_eqds_pacer_next_ns(const uct_uccl_cc_eqds_pacer_t *pacer)
{
    return (pacer->cursor != NULL) ? pacer->t_next : 0;
}

#endif

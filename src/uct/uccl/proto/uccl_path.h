/*
 * Per-path scoreboard of a conn and the choice of a path for each chunk.
 *
 * Each path keeps an RTT EWMA (gain 1/8) and a loss penalty in ns that is
 * added to its RTT when paths are compared; the penalty halves every
 * 2^halflife_shift ns, computed lazily. A chunk goes to the better (lower
 * RTT + penalty) of two distinct random paths (power of two choices);
 * 1 in 2^explore_shift choices takes a random path unconditionally so a
 * path that once looked bad is measured again. Messages of at most
 * small_size bytes stay on the last chosen path (less reordering) unless
 * it is penalised. Random numbers: xorshift64*, seeded, deterministic.
 *
 * Path health: the sender reports each transmission on a path (sent), and
 * its end: an ACK (acked) or a loss (loss). A path is parked, and takes no
 * new data, when
 *  - it lost park_losses transmissions in a row with no ACK on it between
 *    (a loss burst: a path down loses everything on it), or
 *  - it stalled: transmissions are outstanding on it and it has had no ACK
 *    for stall_ns (uct_uccl_paths_check, from the sender's timer) while
 *    another path had one within stall_ns (when every path is silent, the
 *    peer is, and no path is to blame),
 * and in both cases its loss penalty is above twice the mean of the other
 * paths in use: loss or delay spread over every path (a lossy fabric, a
 * receiver short of buffers, deep queues at the receiver) parks none, as
 * no other path would do better and every probe of a parked path costs a
 * chunk.
 * At most max_parked paths (fewer than all) are parked at once: a loss
 * spread over every path parks no more than that. The choice never takes
 * a parked path; uct_uccl_paths_probe() names one that is due for a probe:
 * probe_ns after it was parked, then after twice as long each time, up to
 * probe_ns << probe_max_shift. The caller sends there a transmission that
 * carries no data (uccl_post.c: an empty tracked WRITE), never a resend or
 * a data chunk: a probe of a path still down is lost, and a lost resend
 * could go from one dead path to the next for ever. An ACK of a chunk
 * sent on it after it was parked (a probe that arrived) brings the path
 * back with its loss run cleared; its loss penalty stays and decays, so
 * the choice returns to it gradually.
 * An ACK of an older transmission proves nothing about the path now.
 * A retired path (RC: its QP failed, uct_uccl_paths_retire) counts as
 * parked but is never probed nor brought back: the caller keeps at least
 * one path usable.
 *
 * Completion scores (lag_scores; RC, where the NIC's ACKs are unseen and
 * a WR's completion time is the only sample), to keep bulk work off a
 * path whose queue grows before its completions tell, and its queue below
 * the NIC's ACK timeout (which resends what merely waits there):
 *  - a path's time rises at once to a sample above it and falls back by
 *    the EWMA;
 *  - while a path has transmissions outstanding it scores at least the
 *    time since its last completion (or since it got its first one),
 *    which grows while its queue holds them back;
 *  - a path not yet measured (or given a new route) is tried one at a
 *    time: it scores as the mean of the conn's samples while no other
 *    such path has transmissions out, and while one has just above the
 *    bound below (taken only over a path scoring worse). An initial time
 *    below every measured one drew a chunk to each at once, however
 *    slow: several QPs of a conn, and of several conns, share a slow
 *    core path;
 *  - exploration takes only an idle path (a busy one is measured by what
 *    it carries), and not one on trial's terms while another is;
 *  - the better of two scoring above twice the mean meets the better of
 *    two more: pairs of QPs on one slow core path alone would send it
 *    more than it carries.
 *
 * Burst length: the caller sends up to a burst of chunks on one chosen
 * path (one chain, one doorbell). While the paths queue unevenly, every
 * chunk chooses its path: a burst on one path holds, behind that path's
 * queue, data that the other paths could carry now, and with queues a
 * burst's choice is made on RTTs a queue old. Uneven queues show as both
 *  - queueing: the conn's smoothed fabric RTT above twice its recent
 *    minimum plus queue_slack_ns, and
 *  - reordering: after more than a quarter of the recent ACKs (an EWMA
 *    of gain 1/16 over ACKs) the peer held chunks out of order: chunks
 *    overtook earlier ones on shorter paths; it stops below a sixteenth
 *    (hysteresis: a single full burst, sent while the fraction dips,
 *    puts 16 chunks on one path). A lone loss or a spurious resend
 *    leaves a hole in a few ACKs only.
 * A queue every path shares (the sender's own link, a receiver's link)
 * reorders nothing, and there the full burst is kept, as on a fabric that
 * does not queue: a doorbell and a completion per chunk would cost the
 * CPU for nothing. The minimum is taken over the current and the previous
 * window of rtt_min_win_ns, so that it follows a base RTT that rose (a
 * route that changed) within two windows.
 */
#ifndef UCT_UCCL_PATH_H_
#define UCT_UCCL_PATH_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>
#include <stdint.h>

typedef struct uct_uccl_path {
    uint64_t rtt_ns;        /* EWMA; initial value until measured */
    uint64_t penalty_ns;    /* at penalty_time */
    uint64_t penalty_time;
    uint64_t wait_since;    /* unacked > 0: its last ACK, or the first
                               transmission after it was idle */
    uint64_t parked_at;     /* parked: since then */
    uint64_t probe_at;      /* parked: the next probe may go then */
    uint64_t chosen;        /* chunks sent on it (statistics) */
    uint64_t losses;
    uint32_t unacked;       /* transmissions neither acked nor lost */
    uint16_t loss_run;      /* losses since its last ACK */
    uint8_t  parked;
    uint8_t  retired;       /* parked for good */
    uint8_t  probes;        /* probes since parked (their backoff) */
    uint8_t  measured;      /* lag_scores: rtt_ns is a sample's */
} uct_uccl_path_t;

typedef struct uct_uccl_path_params {
    uint32_t num_paths;       /* 1..256 */
    uint64_t seed;
    uint64_t init_rtt_ns;     /* assumed before the first sample */
    uint64_t loss_penalty_ns; /* added per loss on the path */
    uint64_t max_penalty_ns;  /* cap */
    uint32_t halflife_shift;  /* penalty half-life = 2^shift ns */
    uint32_t small_size;      /* bytes; 0 = every message chooses */
    uint32_t explore_shift;   /* 1 in 2^shift choices random; 0 = never */
    uint32_t park_losses;     /* losses in a row that park; 0 = never */
    uint32_t max_parked;      /* at most parked at once (< num_paths) */
    uint64_t probe_ns;        /* first probe of a parked path after it */
    uint32_t probe_max_shift; /* probe gaps at most probe_ns << shift */
    uint64_t rtt_min_win_ns;  /* window of the RTT minimum; 0: bursts are
                                 never shortened */
    uint64_t queue_slack_ns;  /* RTT above twice the minimum by more than
                                 this: the fabric queues */
    uint8_t  lag_scores;      /* completion scores (see above; RC) */
} uct_uccl_path_params_t;

/* Path health counters of a conn (statistics) */
typedef struct uct_uccl_paths_stats {
    uint64_t parks_loss;      /* parked after a loss burst */
    uint64_t parks_stall;     /* parked after a stall */
    uint64_t probes;
    uint64_t unparks;
} uct_uccl_paths_stats_t;

typedef struct uct_uccl_paths {
    uint32_t        num;
    uint32_t        last;
    uint64_t        rng;
    uint64_t        loss_penalty_ns;
    uint64_t        max_penalty_ns;
    uint32_t        halflife_shift;
    uint32_t        small_size;
    uint64_t        explore_mask; /* 0: no exploration */
    uint32_t        nparked;      /* retired ones included */
    uint32_t        nretired;
    uint32_t        max_parked;
    uint32_t        park_losses;
    uint32_t        probe_max_shift;
    uint64_t        probe_ns;
    uint64_t        probe_next;   /* earliest probe_at of a parked path */
    uint64_t        last_ack;     /* the last ACK on any path */
    uint8_t         busy;         /* sent since the last idle reset */
    uint32_t        probe_due;    /* the caller's: 1 + a path to probe
                                     with its next chance; 0: none */
    uct_uccl_path_t *path;
    uct_uccl_paths_stats_t stats;
    /* the fabric RTT of the conn, for the burst length (0: no sample) */
    uint64_t        fab_srtt_ns;
    uint64_t        fab_min_ns[2]; /* current, previous window */
    uint64_t        fab_win_end;
    uint64_t        rtt_min_win_ns;
    uint64_t        queue_slack_ns;
    uint32_t        ooo_frac;      /* of the recent ACKs, those after
                                      which the peer held chunks out of
                                      order (fixed point, 1 << 16) */
    uint8_t         reordering;    /* ooo_frac went above UNEVEN and not
                                      yet below EVEN since */
    uint8_t         lag_scores;    /* completion scores (see above) */
    uint64_t        rtt_mean_ns;   /* lag_scores: EWMA of all samples (0:
                                      none yet) */
    uint8_t         trial_out;     /* lag_scores: a path not yet measured
                                      has transmissions out (as of the
                                      latest choice) */
} uct_uccl_paths_t;


ucs_status_t uct_uccl_paths_init(uct_uccl_paths_t *ps,
                                 const uct_uccl_path_params_t *params);
void uct_uccl_paths_cleanup(uct_uccl_paths_t *ps);

/* xorshift64*: the next number of the sequence in *state (never 0) */
static UCS_F_ALWAYS_INLINE uint64_t uct_uccl_rand_next(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

static UCS_F_ALWAYS_INLINE uint64_t uct_uccl_paths_rand(uct_uccl_paths_t *ps)
{
    return uct_uccl_rand_next(&ps->rng);
}

/* penalty of path p at time now, after decay */
static UCS_F_ALWAYS_INLINE uint64_t
uct_uccl_path_penalty(const uct_uccl_paths_t *ps, const uct_uccl_path_t *p,
                      uint64_t now)
{
    uint64_t halves;

    if (ucs_likely(p->penalty_ns == 0)) {
        return 0;
    }
    halves = (now > p->penalty_time) ?
             (now - p->penalty_time) >> ps->halflife_shift : 0;
    return (halves >= 64) ? 0 : (p->penalty_ns >> halves);
}

/* The paths' RTT averages: EWMA with gain 1/8 */
static UCS_F_ALWAYS_INLINE uint64_t uct_uccl_paths_ewma(uint64_t avg,
                                                        uint64_t sample)
{
    return avg - avg / 8 + sample / 8;
}

static UCS_F_ALWAYS_INLINE uint64_t
uct_uccl_path_score(const uct_uccl_paths_t *ps, const uct_uccl_path_t *p,
                    uint64_t now)
{
    return p->rtt_ns + uct_uccl_path_penalty(ps, p, now);
}

/* the choice when some path is parked or scores are completion scores */
unsigned uct_uccl_paths_select_full(uct_uccl_paths_t *ps, uint64_t length,
                                    uint64_t now);

/* A parked path due for a probe (it is then counted as probed and its
 * next probe scheduled), or -1 */
int uct_uccl_paths_probe(uct_uccl_paths_t *ps, uint64_t now);

/* The path for the next chunk of a message of `length` bytes, never a
 * parked one */
static UCS_F_ALWAYS_INLINE unsigned
uct_uccl_paths_select(uct_uccl_paths_t *ps, uint64_t length, uint64_t now)
{
    uint64_t r;
    unsigned a, b;

    if (ucs_unlikely((ps->nparked > 0) || ps->lag_scores)) {
        return uct_uccl_paths_select_full(ps, length, now);
    }
    if ((length <= ps->small_size) &&
        (uct_uccl_path_penalty(ps, &ps->path[ps->last], now) == 0)) {
        goto out;
    }
    if (ucs_unlikely(ps->num == 1)) {
        ps->last = 0;
        goto out;
    }

    r = uct_uccl_paths_rand(ps);
    a = (uint32_t)r % ps->num;
    if (ucs_unlikely(ps->explore_mask && !((r >> 32) & ps->explore_mask))) {
        ps->last = a;
        goto out;
    }
    /* second pick distinct from the first */
    b = (a + 1 + (uint32_t)((r >> 40) % (ps->num - 1))) % ps->num;
    ps->last = (uct_uccl_path_score(ps, &ps->path[b], now) <
                uct_uccl_path_score(ps, &ps->path[a], now)) ? b : a;
out:
    ++ps->path[ps->last].chosen;
    return ps->last;
}

void uct_uccl_paths_rtt_lag(uct_uccl_paths_t *ps, unsigned p,
                            uint64_t rtt_ns);

/* RTT sample measured on path p */
static inline void uct_uccl_paths_rtt(uct_uccl_paths_t *ps, unsigned p,
                                      uint64_t rtt_ns)
{
    uct_uccl_path_t *path = &ps->path[p];

    if (ucs_unlikely(ps->lag_scores)) {
        uct_uccl_paths_rtt_lag(ps, p, rtt_ns);
        return;
    }
    path->rtt_ns = uct_uccl_paths_ewma(path->rtt_ns, rtt_ns);
}

static UCS_F_ALWAYS_INLINE int
uct_uccl_paths_parked(const uct_uccl_paths_t *ps, unsigned p)
{
    return ps->path[p].parked;
}

static UCS_F_ALWAYS_INLINE int
uct_uccl_paths_retired(const uct_uccl_paths_t *ps, unsigned p)
{
    return ps->path[p].retired;
}

/* does p have transmissions outstanding (its wait already started)? */
static UCS_F_ALWAYS_INLINE int
uct_uccl_paths_waiting(const uct_uccl_paths_t *ps, unsigned p)
{
    return ps->path[p].unacked > 0;
}

/* a transmission goes on p (a tracked chunk: its ACK or loss follows);
 * `now` is read only if p was not waiting */
static UCS_F_ALWAYS_INLINE void uct_uccl_paths_sent(uct_uccl_paths_t *ps,
                                                    unsigned p, uint64_t now)
{
    uct_uccl_path_t *path = &ps->path[p];

    if (path->unacked++ == 0) {
        path->wait_since = now;
    }
    ps->busy = 1;
}

/* n more transmissions go on p, which waits already (paths_sent) */
static UCS_F_ALWAYS_INLINE void uct_uccl_paths_sent_n(uct_uccl_paths_t *ps,
                                                      unsigned p, unsigned n)
{
    ps->path[p].unacked += n;
}

void uct_uccl_paths_unpark(uct_uccl_paths_t *ps, unsigned p);

/* p is out for good: never chosen, probed nor unparked again */
void uct_uccl_paths_retire(uct_uccl_paths_t *ps, unsigned p);

/* p has a new route (RC: a new QP pair): neither retired nor parked, its
 * losses and penalty forgotten */
void uct_uccl_paths_restore(uct_uccl_paths_t *ps, unsigned p, uint64_t now);

/* paths that may take chunks (neither parked nor retired) */
static UCS_F_ALWAYS_INLINE unsigned
uct_uccl_paths_usable(const uct_uccl_paths_t *ps)
{
    return ps->num - ps->nparked;
}

/* an ACK arrived at `now`: the time of the acked() calls it makes */
static UCS_F_ALWAYS_INLINE void uct_uccl_paths_ack_time(uct_uccl_paths_t *ps,
                                                        uint64_t now)
{
    ps->last_ack = now;
}

/* n transmissions on p, the latest sent at sent_ns, were acked (by the
 * ACK of the last uct_uccl_paths_ack_time()) */
static UCS_F_ALWAYS_INLINE void uct_uccl_paths_acked_n(uct_uccl_paths_t *ps,
                                                       unsigned p, unsigned n,
                                                       uint64_t sent_ns)
{
    uct_uccl_path_t *path = &ps->path[p];

    path->unacked   -= (path->unacked > n) ? n : path->unacked;
    path->loss_run   = 0;
    path->wait_since = ps->last_ack;
    if (ucs_unlikely(path->parked) && !path->retired &&
        (sent_ns >= path->parked_at)) {
        uct_uccl_paths_unpark(ps, p);
    }
}

/* one transmission on p, sent at sent_ns, was acked */
static UCS_F_ALWAYS_INLINE void uct_uccl_paths_acked(uct_uccl_paths_t *ps,
                                                     unsigned p,
                                                     uint64_t sent_ns)
{
    uct_uccl_paths_acked_n(ps, p, 1, sent_ns);
}

/* RC: a WR on p completed (the NIC's ACK came, at the last ack_time):
 * the path carries again, and parked it is back */
static UCS_F_ALWAYS_INLINE void
uct_uccl_paths_completed(uct_uccl_paths_t *ps, unsigned p)
{
    uct_uccl_path_t *path = &ps->path[p];

    path->unacked   -= (path->unacked > 0);
    path->wait_since = ps->last_ack;
    if (ucs_unlikely(path->parked) && !path->retired) {
        uct_uccl_paths_unpark(ps, p);
    }
}

/* A fabric RTT sample of the conn (any path, the receiver's delays
 * taken out) at `now`: its smoothed value and windowed minimum */
static inline void uct_uccl_paths_fabric_rtt(uct_uccl_paths_t *ps,
                                             uint64_t rtt_ns, uint64_t now)
{
    if (ucs_unlikely(now >= ps->fab_win_end)) {
        ps->fab_min_ns[1] = ps->fab_min_ns[0];
        ps->fab_min_ns[0] = rtt_ns;
        ps->fab_win_end   = now + ps->rtt_min_win_ns;
    } else if (rtt_ns < ps->fab_min_ns[0]) {
        ps->fab_min_ns[0] = rtt_ns;
    }
    ps->fab_srtt_ns = (ps->fab_srtt_ns == 0) ? rtt_ns :
                      uct_uccl_paths_ewma(ps->fab_srtt_ns, rtt_ns);
}

#define UCT_UCCL_PATHS_OOO_ONE    (1u << 16)
#define UCT_UCCL_PATHS_OOO_SHIFT  4 /* EWMA gain 1/16 */
#define UCT_UCCL_PATHS_OOO_UNEVEN (UCT_UCCL_PATHS_OOO_ONE / 4)
#define UCT_UCCL_PATHS_OOO_EVEN   (UCT_UCCL_PATHS_OOO_ONE / 16)

/* an ACK arrived; after it the peer holds chunks out of order if holes */
static UCS_F_ALWAYS_INLINE void
uct_uccl_paths_ack_order(uct_uccl_paths_t *ps, int holes)
{
    uint32_t decay = ps->ooo_frac >> UCT_UCCL_PATHS_OOO_SHIFT;

    if (ucs_likely(!holes)) {
        if (ucs_likely(ps->ooo_frac == 0)) {
            return; /* a clean fabric */
        }
        /* what the shift rounds away goes at once: back to 0 */
        ps->ooo_frac -= decay ? decay : ps->ooo_frac;
    } else {
        ps->ooo_frac += (UCT_UCCL_PATHS_OOO_ONE >> UCT_UCCL_PATHS_OOO_SHIFT) -
                        decay;
    }
    if (ucs_unlikely(ps->ooo_frac > UCT_UCCL_PATHS_OOO_UNEVEN)) {
        ps->reordering = 1;
    } else if (ps->ooo_frac < UCT_UCCL_PATHS_OOO_EVEN) {
        ps->reordering = 0;
    }
}

/* the conn's minimum fabric RTT over the last one or two windows
 * (UINT64_MAX: no sample) */
static UCS_F_ALWAYS_INLINE uint64_t
uct_uccl_paths_fab_min(const uct_uccl_paths_t *ps)
{
    return ucs_min(ps->fab_min_ns[0], ps->fab_min_ns[1]);
}

/* do the paths queue unevenly (see above)? */
static UCS_F_ALWAYS_INLINE int
uct_uccl_paths_uneven(const uct_uccl_paths_t *ps)
{
    uint64_t base;

    if ((ps->rtt_min_win_ns == 0) || !ps->reordering) {
        return 0;
    }
    base = uct_uccl_paths_fab_min(ps);
    return (ps->fab_srtt_ns > ps->queue_slack_ns) &&
           ((ps->fab_srtt_ns - ps->queue_slack_ns) / 2 > base);
}

/* chunks the next burst may put on one path, of at most max_burst */
static UCS_F_ALWAYS_INLINE unsigned
uct_uccl_paths_burst(const uct_uccl_paths_t *ps, unsigned max_burst)
{
    return uct_uccl_paths_uneven(ps) ? 1 : max_burst;
}

/* a chunk sent on p was lost */
void uct_uccl_paths_loss(uct_uccl_paths_t *ps, unsigned p, uint64_t now);

/* Park the paths that stalled (see above); returns how many. Call it while
 * transmissions are outstanding; uct_uccl_paths_idle() when none is. */
unsigned uct_uccl_paths_check(uct_uccl_paths_t *ps, uint64_t now,
                              uint64_t stall_ns);

/* RC, where the NIC repairs losses unseen: p stalled by the caller's
 * rule and is parked, within max_parked; a completion on it, not a
 * probe, brings it back (uct_uccl_paths_completed). 1 if parked. */
int uct_uccl_paths_park_rc(uct_uccl_paths_t *ps, unsigned p, uint64_t now);

/* nothing is outstanding on any path: clear what a miscount left */
void uct_uccl_paths_idle(uct_uccl_paths_t *ps);

#endif

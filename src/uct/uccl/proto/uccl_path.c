/*
 * Path scoreboard (see uccl_path.h).
 */
#include "uccl_path.h"
#include "uccl_wire.h"

#include <ucs/sys/math.h>
#include <stdlib.h>
#include <string.h>

/* random draws for a path that is not parked before a scan; at most half
 * the paths are parked in practice, so one or two draws do */
#define UCT_UCCL_PATH_DRAWS 4
/* a loss burst parks a path whose penalty is above this many times the
 * mean of the other paths in use */
#define UCT_UCCL_PATH_PARK_WORSE 2
/* completion scores: the better of two scoring above this many times the
 * conn's mean meets the better of two more. Both of a pair can be slow
 * (QPs share a slow core path), and such pairs alone can send a slow path
 * more than it carries: its queue would then grow without bound. */
#define UCT_UCCL_PATH_LAG_REDRAW 2

static void uct_uccl_paths_probe_next(uct_uccl_paths_t *ps);


ucs_status_t uct_uccl_paths_init(uct_uccl_paths_t *ps,
                                 const uct_uccl_path_params_t *params)
{
    unsigned i;

    if ((params->num_paths == 0) ||
        (params->num_paths > UCT_UCCL_WIRE_MAX_PATHS) ||
        (params->halflife_shift >= 64) || (params->explore_shift >= 32) ||
        (params->probe_max_shift >= 32) ||
        ((params->park_losses > 0) && (params->probe_ns == 0))) {
        return UCS_ERR_INVALID_PARAM;
    }

    ps->path = calloc(params->num_paths, sizeof(*ps->path));
    if (ps->path == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < params->num_paths; ++i) {
        ps->path[i].rtt_ns = params->init_rtt_ns;
    }
    ps->num             = params->num_paths;
    /* xorshift must not start at zero; spread small seeds */
    ps->rng             = (params->seed ^ 0x9e3779b97f4a7c15ull) ?
                          (params->seed ^ 0x9e3779b97f4a7c15ull) : 1;
    ps->loss_penalty_ns = params->loss_penalty_ns;
    ps->max_penalty_ns  = params->max_penalty_ns;
    ps->halflife_shift  = params->halflife_shift;
    ps->small_size      = params->small_size;
    ps->explore_mask    = params->explore_shift ?
                          (1ull << params->explore_shift) - 1 : 0;
    ps->nparked         = 0;
    ps->nretired        = 0;
    ps->max_parked      = ucs_min(params->max_parked, ps->num - 1);
    ps->park_losses     = params->park_losses;
    ps->probe_ns        = params->probe_ns;
    ps->probe_max_shift = params->probe_max_shift;
    ps->probe_next      = UINT64_MAX;
    ps->last_ack        = 0;
    ps->busy            = 0;
    ps->probe_due       = 0;
    memset(&ps->stats, 0, sizeof(ps->stats));
    ps->fab_srtt_ns     = 0;
    ps->fab_min_ns[0]   = UINT64_MAX;
    ps->fab_min_ns[1]   = UINT64_MAX;
    ps->fab_win_end     = 0;
    ps->rtt_min_win_ns  = params->rtt_min_win_ns;
    ps->queue_slack_ns  = params->queue_slack_ns;
    ps->ooo_frac        = 0;
    ps->reordering      = 0;
    ps->lag_scores      = !!params->lag_scores;
    ps->rtt_mean_ns     = 0;
    ps->trial_out       = 0;
    ps->last            = uct_uccl_paths_rand(ps) % ps->num;
    return UCS_OK;
}

void uct_uccl_paths_cleanup(uct_uccl_paths_t *ps)
{
    free(ps->path);
    ps->path = NULL;
}

/* Does p lose clearly more than the other paths in use (its penalty
 * above PARK_WORSE times their mean)? Loss spread evenly over the paths
 * (a lossy fabric, a receiver short of buffers) parks none: no other path
 * would do better, and every probe would cost a chunk. */
static int uct_uccl_paths_worse(const uct_uccl_paths_t *ps, unsigned p,
                                uint64_t now)
{
    uint64_t sum = 0;
    unsigned i, n = 0;

    for (i = 0; i < ps->num; ++i) {
        if ((i != p) && !ps->path[i].parked) {
            sum += uct_uccl_path_penalty(ps, &ps->path[i], now);
            ++n;
        }
    }
    return (n > 0) && (uct_uccl_path_penalty(ps, &ps->path[p], now) * n >
                       UCT_UCCL_PATH_PARK_WORSE * sum);
}

/* park p unless the limit is reached; returns whether it was parked */
static int uct_uccl_paths_park(uct_uccl_paths_t *ps, unsigned p, uint64_t now)
{
    uct_uccl_path_t *path = &ps->path[p];

    if (path->parked || (ps->nparked >= ps->max_parked)) {
        return 0;
    }
    path->parked    = 1;
    path->parked_at = now;
    path->probe_at  = now + ps->probe_ns;
    path->probes    = 0;
    ++ps->nparked;
    if (path->probe_at < ps->probe_next) {
        ps->probe_next = path->probe_at;
    }
    return 1;
}

void uct_uccl_paths_unpark(uct_uccl_paths_t *ps, unsigned p)
{
    uct_uccl_path_t *path = &ps->path[p];

    path->parked   = 0;
    path->loss_run = 0;
    --ps->nparked;
    ++ps->stats.unparks;
    uct_uccl_paths_probe_next(ps);
}

void uct_uccl_paths_retire(uct_uccl_paths_t *ps, unsigned p)
{
    uct_uccl_path_t *path = &ps->path[p];

    if (path->retired) {
        return;
    }
    if (!path->parked) {
        path->parked = 1;
        ++ps->nparked;
    }
    path->retired = 1;
    ++ps->nretired;
    uct_uccl_paths_probe_next(ps);
}

void uct_uccl_paths_restore(uct_uccl_paths_t *ps, unsigned p, uint64_t now)
{
    uct_uccl_path_t *path = &ps->path[p];

    ps->nretired    -= path->retired;
    ps->nparked     -= path->parked;
    path->retired    = 0;
    path->parked     = 0;
    path->probes     = 0;
    path->loss_run   = 0;
    path->unacked    = 0;
    path->penalty_ns = 0;
    path->measured   = 0; /* a new route: its times are not known */
    path->wait_since = now;
    uct_uccl_paths_probe_next(ps);
}

void uct_uccl_paths_rtt_lag(uct_uccl_paths_t *ps, unsigned p, uint64_t rtt_ns)
{
    uct_uccl_path_t *path = &ps->path[p];

    if (!path->measured || (rtt_ns > path->rtt_ns)) {
        path->rtt_ns = rtt_ns; /* a queue that grew shows at once */
    } else {
        path->rtt_ns = uct_uccl_paths_ewma(path->rtt_ns, rtt_ns);
    }
    path->measured  = 1;
    ps->rtt_mean_ns = (ps->rtt_mean_ns == 0) ? rtt_ns :
                      uct_uccl_paths_ewma(ps->rtt_mean_ns, rtt_ns);
}

/* Completion score of p at `now` (uccl_path.h) */
static uint64_t uct_uccl_path_score_lag(const uct_uccl_paths_t *ps,
                                        const uct_uccl_path_t *p, uint64_t now)
{
    uint64_t base = p->rtt_ns;
    uint64_t lag  = 0;

    if (!p->measured && ps->trial_out) {
        /* one trial at a time: taken only over a path scoring worse */
        base = UCT_UCCL_PATH_LAG_REDRAW * ps->rtt_mean_ns + 1;
    } else if (!p->measured && (ps->rtt_mean_ns != 0)) {
        base = ps->rtt_mean_ns;
    }
    if ((p->unacked > 0) && (now > p->wait_since)) {
        lag = now - p->wait_since;
    }
    return ucs_max(base, lag) + uct_uccl_path_penalty(ps, p, now);
}

static uint64_t uct_uccl_path_score_full(const uct_uccl_paths_t *ps,
                                         unsigned p, uint64_t now)
{
    return ps->lag_scores ? uct_uccl_path_score_lag(ps, &ps->path[p], now) :
                            uct_uccl_path_score(ps, &ps->path[p], now);
}

/* lag_scores: does a path not yet measured have transmissions out? */
static int uct_uccl_paths_trial_out(const uct_uccl_paths_t *ps)
{
    unsigned p;

    for (p = 0; p < ps->num; ++p) {
        if (!ps->path[p].measured && (ps->path[p].unacked > 0)) {
            return 1;
        }
    }
    return 0;
}

/* the lower scoring of a and b (a when equal) */
static unsigned uct_uccl_paths_better(const uct_uccl_paths_t *ps, unsigned a,
                                      unsigned b, uint64_t now)
{
    return (uct_uccl_path_score_full(ps, b, now) <
            uct_uccl_path_score_full(ps, a, now)) ? b : a;
}

void uct_uccl_paths_loss(uct_uccl_paths_t *ps, unsigned p, uint64_t now)
{
    uct_uccl_path_t *path = &ps->path[p];
    uint64_t penalty      = uct_uccl_path_penalty(ps, path, now) +
                            ps->loss_penalty_ns;

    if ((ps->max_penalty_ns != 0) && (penalty > ps->max_penalty_ns)) {
        penalty = ps->max_penalty_ns;
    }
    path->penalty_ns   = penalty;
    path->penalty_time = now;
    ++path->losses;
    path->unacked -= (path->unacked > 0);
    if (path->loss_run < UINT16_MAX) {
        ++path->loss_run;
    }
    if ((ps->park_losses > 0) && (path->loss_run >= ps->park_losses) &&
        uct_uccl_paths_worse(ps, p, now) && uct_uccl_paths_park(ps, p, now)) {
        ++ps->stats.parks_loss;
    }
}

unsigned uct_uccl_paths_check(uct_uccl_paths_t *ps, uint64_t now,
                              uint64_t stall_ns)
{
    unsigned p, n = 0;
    uct_uccl_path_t *path;

    if ((ps->park_losses == 0) || (ps->nparked >= ps->max_parked) ||
        (now - ps->last_ack >= stall_ns)) {
        return 0; /* no ACK lately on any path: the peer is silent */
    }
    for (p = 0; p < ps->num; ++p) {
        path = &ps->path[p];
        if (!path->parked && (path->unacked > 0) &&
            (now - path->wait_since >= stall_ns) &&
            uct_uccl_paths_worse(ps, p, now) &&
            uct_uccl_paths_park(ps, p, now)) {
            ++ps->stats.parks_stall;
            ++n;
        }
    }
    return n;
}

int uct_uccl_paths_park_rc(uct_uccl_paths_t *ps, unsigned p, uint64_t now)
{
    if (!uct_uccl_paths_park(ps, p, now)) {
        return 0;
    }
    ++ps->stats.parks_stall;
    return 1;
}

void uct_uccl_paths_idle(uct_uccl_paths_t *ps)
{
    unsigned p;

    if (!ps->busy) {
        return;
    }
    for (p = 0; p < ps->num; ++p) {
        ps->path[p].unacked = 0;
    }
    ps->busy = 0;
}

/* a random path that is not parked (some is: max_parked < num) */
static unsigned uct_uccl_paths_rand_usable(uct_uccl_paths_t *ps,
                                           unsigned not)
{
    unsigned i, p;

    for (i = 0; i < UCT_UCCL_PATH_DRAWS; ++i) {
        p = uct_uccl_paths_rand(ps) % ps->num;
        if (!ps->path[p].parked && (p != not)) {
            return p;
        }
    }
    /* rarely: the first usable one after the last draw */
    for (i = 0; i < ps->num; ++i, p = (p + 1) % ps->num) {
        if (!ps->path[p].parked && (p != not)) {
            return p;
        }
    }
    return not;
}

/* the parked path due for a probe first (some is, and not retired) */
static unsigned uct_uccl_paths_probe_due(const uct_uccl_paths_t *ps)
{
    unsigned p, best = 0;
    uint64_t at = UINT64_MAX;

    for (p = 0; p < ps->num; ++p) {
        if (ps->path[p].parked && !ps->path[p].retired &&
            (ps->path[p].probe_at <= at)) {
            at   = ps->path[p].probe_at;
            best = p;
        }
    }
    return best;
}

static void uct_uccl_paths_probe_next(uct_uccl_paths_t *ps)
{
    ps->probe_next = (ps->nparked > ps->nretired) ?
                     ps->path[uct_uccl_paths_probe_due(ps)].probe_at :
                     UINT64_MAX;
}

int uct_uccl_paths_probe(uct_uccl_paths_t *ps, uint64_t now)
{
    uct_uccl_path_t *path;
    unsigned p;

    if (now < ps->probe_next) {
        return -1;
    }
    p              = uct_uccl_paths_probe_due(ps);
    path           = &ps->path[p];
    path->probes  += (path->probes < UINT8_MAX);
    path->probe_at = now + (ps->probe_ns <<
                            ucs_min(path->probes, ps->probe_max_shift));
    ++path->chosen;
    ++ps->stats.probes;
    uct_uccl_paths_probe_next(ps);
    ps->last = p;
    return p;
}

unsigned uct_uccl_paths_select_full(uct_uccl_paths_t *ps, uint64_t length,
                                    uint64_t now)
{
    unsigned a, b;

    if ((length <= ps->small_size) && !ps->path[ps->last].parked &&
        (uct_uccl_path_penalty(ps, &ps->path[ps->last], now) == 0)) {
        goto out;
    }
    if (ps->num == 1) {
        ps->last = 0;
        goto out;
    }

    if (ps->lag_scores) {
        ps->trial_out = uct_uccl_paths_trial_out(ps);
    }
    a = uct_uccl_paths_rand_usable(ps, ps->num);
    if (ps->explore_mask &&
        !(uct_uccl_paths_rand(ps) & ps->explore_mask) &&
        (!ps->lag_scores ||
         ((ps->path[a].unacked == 0) &&
          (ps->path[a].measured || !ps->trial_out)))) {
        ps->last = a;
        goto out;
    }
    b        = uct_uccl_paths_rand_usable(ps, a);
    ps->last = uct_uccl_paths_better(ps, a, b, now);
    if (ps->lag_scores &&
        (uct_uccl_path_score_lag(ps, &ps->path[ps->last], now) >
         UCT_UCCL_PATH_LAG_REDRAW * ps->rtt_mean_ns)) {
        a        = uct_uccl_paths_rand_usable(ps, ps->last);
        b        = uct_uccl_paths_better(ps, a,
                                         uct_uccl_paths_rand_usable(ps, a),
                                         now);
        ps->last = uct_uccl_paths_better(ps, ps->last, b, now);
    }
out:
    ++ps->path[ps->last].chosen;
    return ps->last;
}

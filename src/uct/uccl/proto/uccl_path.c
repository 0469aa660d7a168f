/*
 * Path scoreboard (see uccl_path.h).
 */
#include "uccl_path.h"
#include "uccl_wire.h"

#include <stdlib.h>


ucs_status_t uct_uccl_paths_init(uct_uccl_paths_t *ps,
                                 const uct_uccl_path_params_t *params)
{
    unsigned i;

    if ((params->num_paths == 0) ||
        (params->num_paths > UCT_UCCL_WIRE_MAX_PATHS) ||
        (params->halflife_shift >= 64) || (params->explore_shift >= 32)) {
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
    ps->last            = uct_uccl_paths_rand(ps) % ps->num;
    return UCS_OK;
}

void uct_uccl_paths_cleanup(uct_uccl_paths_t *ps)
{
    free(ps->path);
    ps->path = NULL;
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
}

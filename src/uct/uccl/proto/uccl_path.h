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
 */
#ifndef UCT_UCCL_PATH_H_
#define UCT_UCCL_PATH_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stdint.h>

typedef struct uct_uccl_path {
    uint64_t rtt_ns;        /* EWMA; initial value until measured */
    uint64_t penalty_ns;    /* at penalty_time */
    uint64_t penalty_time;
    uint64_t chosen;        /* chunks sent on it (statistics) */
    uint64_t losses;
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
} uct_uccl_path_params_t;

typedef struct uct_uccl_paths {
    uint32_t        num;
    uint32_t        last;
    uint64_t        rng;
    uint64_t        loss_penalty_ns;
    uint64_t        max_penalty_ns;
    uint32_t        halflife_shift;
    uint32_t        small_size;
    uint64_t        explore_mask; /* 0: no exploration */
    uct_uccl_path_t *path;
} uct_uccl_paths_t;


ucs_status_t uct_uccl_paths_init(uct_uccl_paths_t *ps,
                                 const uct_uccl_path_params_t *params);
void uct_uccl_paths_cleanup(uct_uccl_paths_t *ps);

static UCS_F_ALWAYS_INLINE uint64_t uct_uccl_paths_rand(uct_uccl_paths_t *ps)
{
    uint64_t x = ps->rng;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    ps->rng = x;
    return x * 0x2545f4914f6cdd1dull;
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

static UCS_F_ALWAYS_INLINE uint64_t
uct_uccl_path_score(const uct_uccl_paths_t *ps, const uct_uccl_path_t *p,
                    uint64_t now)
{
    return p->rtt_ns + uct_uccl_path_penalty(ps, p, now);
}

/* the path for the next chunk of a message of `length` bytes */
static UCS_F_ALWAYS_INLINE unsigned
uct_uccl_paths_select(uct_uccl_paths_t *ps, uint64_t length, uint64_t now)
{
    uint64_t r;
    unsigned a, b;

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

/* RTT sample measured on path p */
static inline void uct_uccl_paths_rtt(uct_uccl_paths_t *ps, unsigned p,
                                      uint64_t rtt_ns)
{
    uct_uccl_path_t *path = &ps->path[p];

    path->rtt_ns = path->rtt_ns - path->rtt_ns / 8 + rtt_ns / 8;
}

/* a chunk sent on p was lost */
void uct_uccl_paths_loss(uct_uccl_paths_t *ps, unsigned p, uint64_t now);

#endif

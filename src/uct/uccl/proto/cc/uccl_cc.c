/*
 * Congestion control registry: algorithms by name (see uccl_cc.h).
 * A new algorithm adds its ops to the table below.
 */
#include "uccl_cc.h"

#include <string.h>


static const uct_uccl_cc_ops_t *const uct_uccl_cc_algs[] = {
    &uct_uccl_cc_fixed_ops,
    &uct_uccl_cc_swift_ops,
    &uct_uccl_cc_timely_ops,
    &uct_uccl_cc_eqds_ops,
};

#define UCT_UCCL_CC_NUM_ALGS \
    (sizeof(uct_uccl_cc_algs) / sizeof(uct_uccl_cc_algs[0]))

const uct_uccl_cc_ops_t *uct_uccl_cc_get(unsigned i)
{
    return (i < UCT_UCCL_CC_NUM_ALGS) ? uct_uccl_cc_algs[i] : NULL;
}

const uct_uccl_cc_ops_t *uct_uccl_cc_find(const char *name)
{
    unsigned i;

    if (name == NULL) {
        return NULL;
    }
    for (i = 0; i < UCT_UCCL_CC_NUM_ALGS; ++i) {
        if (!strcmp(uct_uccl_cc_algs[i]->name, name)) {
            return uct_uccl_cc_algs[i];
        }
    }
    return NULL;
}

ucs_status_t uct_uccl_cc_init(uct_uccl_cc_t *cc, const char *name,
                              const uct_uccl_cc_params_t *params)
{
    const uct_uccl_cc_ops_t *ops = uct_uccl_cc_find(name);
    ucs_status_t status;

    memset(cc, 0, sizeof(*cc));
    if (ops == NULL) {
        return UCS_ERR_NO_ELEM;
    }
    if (ops->priv_size > sizeof(cc->priv)) {
        return UCS_ERR_UNSUPPORTED;
    }

    cc->ops = ops;
    status  = ops->init(cc, params);
    if (status != UCS_OK) {
        cc->ops = NULL;
    }
    return status;
}

void uct_uccl_cc_cleanup(uct_uccl_cc_t *cc)
{
    if ((cc->ops != NULL) && (cc->ops->cleanup != NULL)) {
        cc->ops->cleanup(cc);
    }
    cc->ops = NULL;
}

void uct_uccl_cc_query(const uct_uccl_cc_t *cc, uct_uccl_cc_stats_t *stats)
{
    memset(stats, 0, sizeof(*stats));
    if (cc->ops == NULL) {
        return;
    }
    if (cc->ops->query != NULL) {
        cc->ops->query(cc, stats);
    }
    stats->cwnd_bytes  = cc->cwnd_bytes;
    stats->acked_bytes = cc->acked_bytes;
    stats->lost_bytes  = cc->lost_bytes;
    stats->timeouts    = cc->timeouts;
}

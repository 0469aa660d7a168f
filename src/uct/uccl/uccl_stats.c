/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Counters as UCS stats nodes, where UCX was built with stats: one node
 * per iface under UCX's node of the iface, one per conn under it, which
 * UCX prints on UCX_STATS_DEST / UCX_STATS_TRIGGER. The counters are
 * plain fields that the data path increments (uccl_def.h lists them); a
 * node gets their values on every engine tick that visits its conn or
 * iface, and when it goes. Without stats (Debian's UCX) all of this is
 * empty, and UCX_UCCL_STATS_DUMP prints the counters instead.
 */
#include "uccl_iface.h"

#include <string.h>

#ifdef ENABLE_STATS

static ucs_stats_class_t uct_uccl_iface_stats_class = {
    .name          = "uccl_iface",
    .num_counters  = 0 UCT_UCCL_IFACE_COUNTERS(UCT_UCCL_COUNTER_ONE),
    .class_id      = UCS_STATS_CLASS_ID_INVALID,
    .counter_names = { UCT_UCCL_IFACE_COUNTERS(UCT_UCCL_COUNTER_NAME) }
};

static ucs_stats_class_t uct_uccl_conn_stats_class = {
    .name          = "uccl_conn",
    .num_counters  = 0 UCT_UCCL_CONN_COUNTERS(UCT_UCCL_COUNTER_ONE),
    .class_id      = UCS_STATS_CLASS_ID_INVALID,
    .counter_names = { UCT_UCCL_CONN_COUNTERS(UCT_UCCL_COUNTER_NAME) }
};

ucs_status_t uct_uccl_stats_iface_init(uct_uccl_iface_t *iface)
{
    return UCS_STATS_NODE_ALLOC(&iface->stats_node,
                                &uct_uccl_iface_stats_class,
                                iface->super.stats, "-%p", iface);
}

void uct_uccl_stats_iface_cleanup(uct_uccl_iface_t *iface)
{
    uct_uccl_stats_iface_sync(iface);
    UCS_STATS_NODE_FREE(iface->stats_node);
    UCS_STATS_NODE_RESET(&iface->stats_node);
}

ucs_status_t uct_uccl_stats_conn_init(uct_uccl_conn_t *conn)
{
    return UCS_STATS_NODE_ALLOC(&conn->stats_node,
                                &uct_uccl_conn_stats_class,
                                conn->iface->stats_node, "-%u", conn->id);
}

void uct_uccl_stats_conn_cleanup(uct_uccl_conn_t *conn)
{
    uct_uccl_stats_conn_sync(conn);
    UCS_STATS_NODE_FREE(conn->stats_node);
    UCS_STATS_NODE_RESET(&conn->stats_node);
}

/* A counters struct is an array of its list's counters (asserted in
 * uccl_engine.c): the node takes it as its own */
static void uct_uccl_stats_copy(ucs_stats_node_t *node, const void *counters,
                                size_t size)
{
    if (node != NULL) {
        memcpy(node->counters, counters, size);
    }
}

void uct_uccl_stats_iface_sync(uct_uccl_iface_t *iface)
{
    uct_uccl_stats_copy(iface->stats_node, &iface->stats,
                        sizeof(iface->stats));
}

void uct_uccl_stats_conn_sync(uct_uccl_conn_t *conn)
{
    uct_uccl_stats_copy(conn->stats_node, &conn->stats, sizeof(conn->stats));
}

#endif

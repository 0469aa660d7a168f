/*
 * Address handles: where a UD datagram (or an RC/UC connection) goes.  A
 * LID is the fabric port + 1; a GID names the port too (sv_port_of_gid).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int sv_ah_dport(const struct ibv_ah_attr *attr, unsigned *dport)
{
    int p;

    if ((attr->port_num != 0) && (attr->port_num != 1)) {
        return EINVAL;
    }
    if (attr->dlid != 0) {
        if (attr->dlid > SV_MODEL_MAX_PORTS) {
            return EINVAL;
        }
        *dport = attr->dlid - 1;
        return 0;
    }
    if (!attr->is_global) {
        return EINVAL;
    }
    p = sv_port_of_gid(&attr->grh.dgid);
    if ((p < 0) || (p >= SV_MODEL_MAX_PORTS)) {
        return EINVAL;
    }
    *dport = p;
    return 0;
}

struct ibv_ah *sv_ah_create(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    unsigned dport;
    sv_ah_t *ah;
    int ret;

    ret = sv_ah_dport(attr, &dport);
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    ah = calloc(1, sizeof(*ah));
    if (ah == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ah->ah.context = pd->context;
    ah->ah.pd      = pd;
    ah->attr       = *attr;
    ah->dport      = dport;
    __atomic_fetch_add(&sv_pd_of(pd)->nobjs, 1, __ATOMIC_RELAXED);
    return &ah->ah;
}

int sv_ah_destroy(struct ibv_ah *ibah)
{
    __atomic_fetch_sub(&sv_pd_of(ibah->pd)->nobjs, 1, __ATOMIC_RELAXED);
    free(ibah);
    return 0;
}

int sv_ah_init_from_wc(struct ibv_context *c, uint8_t port, struct ibv_wc *wc,
                       struct ibv_grh *grh, struct ibv_ah_attr *attr)
{
    if (port != 1) {
        return EINVAL;
    }
    memset(attr, 0, sizeof(*attr));
    attr->dlid          = wc->slid;
    attr->sl            = wc->sl;
    attr->src_path_bits = wc->dlid_path_bits;
    attr->port_num      = port;
    if (wc->wc_flags & IBV_WC_GRH) {
        if (grh == NULL) {
            return EINVAL;
        }
        attr->is_global      = 1;
        attr->grh.dgid       = grh->sgid;
        attr->grh.sgid_index = 0;
        attr->grh.hop_limit  = 0xff;
        attr->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xfffff;
        attr->grh.traffic_class =
            (be32toh(grh->version_tclass_flow) >> 20) & 0xff;
    }
    return 0;
}

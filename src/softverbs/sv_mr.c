/*
 * Protection domains and memory regions.  A region's entry in the port
 * segment is what a peer checks an rkey against (and a local SGE's lkey):
 * key, PD, access rights and bounds.  lkey == rkey.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SV_MR_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
                      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
                      IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | \
                      IBV_ACCESS_RELAXED_ORDERING)

struct ibv_pd *sv_pd_alloc(struct ibv_context *c)
{
    sv_port_t *port = sv_ctx_of(c)->port;
    sv_pd_t *pd = calloc(1, sizeof(*pd));

    if (pd == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_lock(&port->lock);
    pd->id = port->next_pd++;
    if (port->next_pd == 0) {
        port->next_pd = 1;
    }
    pthread_mutex_unlock(&port->lock);
    pd->pd.context = c;
    pd->pd.handle  = pd->id;
    sv_port_get_obj(port);
    return &pd->pd;
}

int sv_pd_dealloc(struct ibv_pd *ibpd)
{
    sv_pd_t *pd = sv_pd_of(ibpd);
    sv_port_t *port = sv_ctx_of(ibpd->context)->port;

    if (__atomic_load_n(&pd->nobjs, __ATOMIC_RELAXED) > 0) {
        return EBUSY;
    }
    free(pd);
    sv_port_put_obj(port);
    return 0;
}

static int sv_mr_check_access(unsigned access)
{
    if (access & ~SV_MR_ACCESS) {
        return (access & IBV_ACCESS_ON_DEMAND) ? EOPNOTSUPP : EINVAL;
    }
    /* remote write or atomic needs local write (IB spec o10-35) */
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE)) {
        return EINVAL;
    }
    if (access & (IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED)) {
        return EOPNOTSUPP;
    }
    return 0;
}

struct ibv_mr *sv_mr_reg(struct ibv_pd *ibpd, void *addr, size_t len,
                         uint64_t iova, unsigned access)
{
    sv_port_t *port = sv_ctx_of(ibpd->context)->port;
    sv_pd_t *pd = sv_pd_of(ibpd);
    sv_mr_shm_t *e = NULL;
    uint32_t i, idx = 0;
    sv_mr_t *mr;
    int ret;

    access &= ~IBV_ACCESS_OPTIONAL_RANGE;
    ret = sv_mr_check_access(access);
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    if ((len == 0) || (len > SV_MAX_MR_SIZE) || (iova + len < iova) ||
        ((uintptr_t)addr + len < (uintptr_t)addr)) {
        errno = EINVAL;
        return NULL;
    }
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        errno = ENOMEM;
        return NULL;
    }

    pthread_mutex_lock(&port->lock);
    for (i = 0; i < SV_MAX_MR; ++i) {
        idx = (port->next_mr + i) % SV_MAX_MR;
        if (port->seg->mr[idx].key == 0) {
            e = &port->seg->mr[idx];
            break;
        }
    }
    if (e == NULL) {
        pthread_mutex_unlock(&port->lock);
        free(mr);
        errno = ENOMEM;
        return NULL;
    }
    port->next_mr = idx + 1;
    /* a new 8-bit tag per reuse, never 0 so that key 0 stays invalid */
    if (++port->mr_gen[idx] == 0) {
        port->mr_gen[idx] = 1;
    }
    sv_fabric_peer(port->index)->shadow[idx] = (sv_mr_shadow_t){
        .vaddr = (uintptr_t)addr, .length = len };
    e->iova   = iova;
    e->vaddr  = (uintptr_t)addr;
    e->length = len;
    e->pd_id  = pd->id;
    e->access = access;
    SV_STORE(&e->key, sv_mr_key(idx, port->mr_gen[idx]));
    pthread_mutex_unlock(&port->lock);

    mr->idx       = idx;
    mr->mr.context = ibpd->context;
    mr->mr.pd     = ibpd;
    mr->mr.addr   = addr;
    mr->mr.length = len;
    mr->mr.handle = idx;
    mr->mr.lkey   = e->key;
    mr->mr.rkey   = e->key;
    __atomic_fetch_add(&pd->nobjs, 1, __ATOMIC_RELAXED);
    sv_port_get_obj(port);
    return &mr->mr;
}

int sv_mr_dereg(struct ibv_mr *ibmr)
{
    sv_mr_t *mr = (sv_mr_t*)ibmr;
    sv_port_t *port = sv_ctx_of(ibmr->context)->port;

    SV_STORE(&port->seg->mr[mr->idx].key, 0);
    __atomic_fetch_sub(&sv_pd_of(ibmr->pd)->nobjs, 1, __ATOMIC_RELAXED);
    free(mr);
    sv_port_put_obj(port);
    return 0;
}

int sv_mr_rereg(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd,
                void *addr, size_t len, int access)
{
    sv_mr_t *mr = (sv_mr_t*)ibmr;
    sv_port_t *port = sv_ctx_of(ibmr->context)->port;
    sv_mr_shm_t *e = &port->seg->mr[mr->idx];
    uint32_t key = e->key;

    if ((flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) || (flags == 0)) {
        return IBV_REREG_MR_ERR_INPUT;
    }
    if ((flags & IBV_REREG_MR_CHANGE_ACCESS) &&
        (sv_mr_check_access(access) != 0)) {
        return IBV_REREG_MR_ERR_INPUT;
    }
    if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (len == 0)) {
        return IBV_REREG_MR_ERR_INPUT;
    }
    if ((flags & IBV_REREG_MR_CHANGE_PD) &&
        (ibpd->context != ibmr->context)) {
        return IBV_REREG_MR_ERR_INPUT;
    }
    /* invalid while it changes, like a NIC re-registering the key */
    SV_STORE(&e->key, 0);
    if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
        sv_fabric_peer(port->index)->shadow[mr->idx] = (sv_mr_shadow_t){
            .vaddr = (uintptr_t)addr, .length = len };
        e->iova  = e->vaddr = (uintptr_t)addr;
        e->length = len;
        ibmr->addr   = addr;
        ibmr->length = len;
    }
    if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
        e->access = access;
    }
    if (flags & IBV_REREG_MR_CHANGE_PD) {
        __atomic_fetch_sub(&sv_pd_of(ibmr->pd)->nobjs, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&sv_pd_of(ibpd)->nobjs, 1, __ATOMIC_RELAXED);
        e->pd_id  = sv_pd_of(ibpd)->id;
        ibmr->pd  = ibpd;
    }
    SV_STORE(&e->key, key);
    return 0;
}

/*
 * Check `key` for [addr, addr + len) with `access` in a (possibly remote)
 * port segment and translate to the owner's virtual address.  Returns 0 or
 * -1; the entry is read once, as a NIC reads its translation table.
 */
int sv_mr_lookup(const sv_peer_t *peer, uint32_t key, uint32_t pd_id,
                 uint64_t addr, uint64_t len, unsigned access,
                 uint64_t *vaddr)
{
    uint32_t idx = sv_mr_key_idx(key);
    const sv_mr_shm_t *e;
    uint64_t iova, length, va;
    unsigned acc;

    if (idx >= SV_MAX_MR) {
        return -1;
    }
    e      = &peer->seg->mr[idx];
    if (SV_LOAD(&e->key) != key) {
        return -1;
    }
    iova   = SV_LOAD_RELAXED(&e->iova);
    length = SV_LOAD_RELAXED(&e->length);
    va     = SV_LOAD_RELAXED(&e->vaddr);
    acc    = SV_LOAD_RELAXED(&e->access);
    if ((SV_LOAD_RELAXED(&e->pd_id) != pd_id) || ((acc & access) != access) ||
        (addr < iova) || (len > length) || (addr - iova > length - len)) {
        return -1;
    }
    va += addr - iova;
    if (peer->self) {
        /* never follow a translation we did not register ourselves */
        const sv_mr_shadow_t *sh = &peer->shadow[idx];

        if ((va < sh->vaddr) || (len > sh->length) ||
            (va - sh->vaddr > sh->length - len)) {
            return -1;
        }
    }
    *vaddr = va;
    return 0;
}

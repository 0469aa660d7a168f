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
    sv_mr_shadow_t *shadow;
    sv_mr_shm_t *e = NULL;
    uint32_t idx = 0, key;
    int ret, slot;
    sv_mr_t *mr;

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

    shadow = sv_fabric_peer(port->index)->shadow;
    pthread_mutex_lock(&port->lock);
    slot = sv_slots_take(&port->mr_slots, mr);
    if (slot < 0) {
        pthread_mutex_unlock(&port->lock);
        free(mr);
        errno = ENOMEM;
        return NULL;
    }
    idx = slot;
    e   = &port->seg->mr[idx];
    /* a new 8-bit tag per reuse, never 0 so that key 0 stays invalid */
    if (++port->mr_gen[idx] == 0) {
        port->mr_gen[idx] = 1;
    }
    key         = sv_mr_key(idx, port->mr_gen[idx]);
    shadow[idx] = (sv_mr_shadow_t){ .iova = iova, .vaddr = (uintptr_t)addr,
                                    .length = len, .pd_id = pd->id,
                                    .access = access };
    SV_STORE(&shadow[idx].key, key);   /* valid once the rest is written */
    e->iova   = iova;
    e->vaddr  = (uintptr_t)addr;
    e->length = len;
    e->pd_id  = pd->id;
    e->access = access;
    SV_STORE(&e->key, key);
    pthread_mutex_unlock(&port->lock);

    mr->idx       = idx;
    mr->mr.context = ibpd->context;
    mr->mr.pd     = ibpd;
    mr->mr.addr   = addr;
    mr->mr.length = len;
    mr->mr.handle = idx;
    mr->mr.lkey   = key;
    mr->mr.rkey   = key;
    __atomic_fetch_add(&pd->nobjs, 1, __ATOMIC_RELAXED);
    sv_port_get_obj(port);
    return &mr->mr;
}

int sv_mr_dereg(struct ibv_mr *ibmr)
{
    sv_mr_t *mr = (sv_mr_t*)ibmr;
    sv_port_t *port = sv_ctx_of(ibmr->context)->port;

    /* both under the port lock: sv_port_heal restores the shared entry
     * from the private one under it */
    pthread_mutex_lock(&port->lock);
    SV_STORE(&sv_fabric_peer(port->index)->shadow[mr->idx].key, 0);
    SV_STORE(&port->seg->mr[mr->idx].key, 0);
    sv_slots_put(&port->mr_slots, mr->idx);
    pthread_mutex_unlock(&port->lock);
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
    sv_mr_shadow_t *sh = &sv_fabric_peer(port->index)->shadow[mr->idx];
    uint32_t key = ibmr->lkey;

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
    pthread_mutex_lock(&port->lock);
    SV_STORE(&e->key, 0);
    SV_STORE(&sh->key, 0);
    if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
        sh->iova     = sh->vaddr = (uintptr_t)addr;
        sh->length   = len;
        ibmr->addr   = addr;
        ibmr->length = len;
    }
    if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
        sh->access = access;
    }
    if (flags & IBV_REREG_MR_CHANGE_PD) {
        __atomic_fetch_sub(&sv_pd_of(ibmr->pd)->nobjs, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&sv_pd_of(ibpd)->nobjs, 1, __ATOMIC_RELAXED);
        sh->pd_id = sv_pd_of(ibpd)->id;
        ibmr->pd  = ibpd;
    }
    e->iova   = sh->iova;
    e->vaddr  = sh->vaddr;
    e->length = sh->length;
    e->access = sh->access;
    e->pd_id  = sh->pd_id;
    SV_STORE(&sh->key, key);
    SV_STORE(&e->key, key);
    pthread_mutex_unlock(&port->lock);
    return 0;
}

/* The checks of one entry, read once (as a NIC reads its translation
 * table): 0 and the owner's virtual address, or -1. */
static inline int sv_mr_check(uint32_t key, uint32_t pd_id, uint64_t addr,
                              uint64_t len, unsigned access, uint32_t e_key,
                              uint32_t e_pd, unsigned e_access, uint64_t iova,
                              uint64_t length, uint64_t va, uint64_t *vaddr)
{
    if ((e_key != key) || (e_pd != pd_id) || ((e_access & access) != access) ||
        (addr < iova) || (len > length) || (addr - iova > length - len)) {
        return -1;
    }
    *vaddr = va + (addr - iova);
    return 0;
}

/*
 * Check `key` for [addr, addr + len) with `access` in a (possibly remote)
 * port segment and translate to the owner's virtual address. Returns 0 or
 * -1. A port of this process is checked against its private copy only:
 * never follow a translation we did not register ourselves.
 */
int sv_mr_lookup(const sv_peer_t *peer, uint32_t key, uint32_t pd_id,
                 uint64_t addr, uint64_t len, unsigned access,
                 uint64_t *vaddr)
{
    uint32_t idx = sv_mr_key_idx(key);
    const sv_mr_shadow_t *sh;
    const sv_mr_shm_t *e;

    if (idx >= SV_MAX_MR) {
        return -1;
    }
    if (peer->self) {
        sh = &peer->shadow[idx];
        return sv_mr_check(key, pd_id, addr, len, access,
                           __atomic_load_n(&sh->key, __ATOMIC_ACQUIRE),
                           sh->pd_id, sh->access, sh->iova, sh->length,
                           sh->vaddr, vaddr);
    }
    e = &peer->seg->mr[idx];
    return sv_mr_check(key, pd_id, addr, len, access, SV_LOAD(&e->key),
                       SV_LOAD_RELAXED(&e->pd_id),
                       SV_LOAD_RELAXED(&e->access),
                       SV_LOAD_RELAXED(&e->iova),
                       SV_LOAD_RELAXED(&e->length),
                       SV_LOAD_RELAXED(&e->vaddr), vaddr);
}

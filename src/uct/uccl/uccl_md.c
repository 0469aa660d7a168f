/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The md: its configuration, open and close, memory registration (through
 * the rcache when it has one), the rkeys peers' requests are checked
 * against, rkey packing. The device under it is in uccl_dev.c.
 */
#include "uccl_md.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucm/api/ucm.h>
#include <string.h>
#include <errno.h>


ucs_config_field_t uct_uccl_md_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_uccl_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"", "", NULL, ucs_offsetof(uct_uccl_md_config_t, rcache),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_rcache_table)},

    {"RCACHE", "try",
     "Cache memory registrations (ucs_rcache): registering the same buffer\n"
     "again reuses the existing memory region. yes|no|try.",
     ucs_offsetof(uct_uccl_md_config_t, rcache_enable),
     UCS_CONFIG_TYPE_TERNARY},

    {"GID_INDEX", "auto",
     "GID table index to use. auto: the first entry that can be read and is\n"
     "not zero (unreadable or empty entries are skipped).",
     ucs_offsetof(uct_uccl_md_config_t, gid_index),
     UCS_CONFIG_TYPE_ULUNITS},

    {"PROBE_UC", "y",
     "Probe Unreliable Connected QP support by creating one. When off, the\n"
     "device is assumed to lack UC and RC data QPs are used.",
     ucs_offsetof(uct_uccl_md_config_t, probe_uc), UCS_CONFIG_TYPE_BOOL},

    {"MAX_QPS", "auto",
     "QPs of the device this process may use for uccl (control QPs and the\n"
     "data QPs of every connection). auto: all the device offers (max_qp).\n"
     "When they run short, new connections get fewer paths (NUM_PATHS is an\n"
     "upper bound), down to one; set it lower when several processes share\n"
     "a device. The lowest value of the memory domains open on a device\n"
     "counts.",
     ucs_offsetof(uct_uccl_md_config_t, max_qps), UCS_CONFIG_TYPE_ULUNITS},

    {"REG_OVERHEAD", "16us",
     "Estimated cost of a memory registration that misses the cache.",
     ucs_offsetof(uct_uccl_md_config_t, reg_overhead), UCS_CONFIG_TYPE_TIME},

    {NULL}
};

void uct_uccl_md_caps(uct_md_h tl_md, uct_uccl_glue_md_caps_t *caps)
{
    uct_uccl_md_t *md = ucs_derived_of(tl_md, uct_uccl_md_t);

    /* zero-copy needs our memh (its lkey): without NEED_MEMH UCP passes
     * UCT_MEM_HANDLE_NULL. UCP gives endpoints with error handling RMA
     * lanes only on mds that can invalidate a registration (a failed
     * peer's late writes must not reach a buffer handed back to the user) */
    caps->flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH |
                             UCT_MD_FLAG_NEED_RKEY | UCT_MD_FLAG_INVALIDATE;
    /* no UCT_MD_FLAG_ALLOC: max_alloc is the bound of a buffer the user
     * allocates and registers, as UCX's ib md reports it (UCX's gtest
     * sizes its transfer tests by it) */
    caps->max_alloc        = ULONG_MAX;
    caps->max_reg          = ULONG_MAX;
    caps->reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    caps->access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    caps->rkey_packed_size = sizeof(uct_uccl_packed_rkey_t);
    caps->reg_cost         = md->reg_cost;
}

static void uct_uccl_md_mr_track(uct_uccl_md_t *md, struct ibv_mr *mr)
{
    uct_uccl_mr_info_t *info;
    khiter_t it;
    int ret;

    ucs_spin_lock(&md->mrs_lock);
    it = kh_put(uct_uccl_mr, &md->mrs, mr->rkey, &ret);
    if (ret < 0) {
        ucs_spin_unlock(&md->mrs_lock);
        ucs_warn("%s: cannot track rkey 0x%x", md->name, mr->rkey);
        return;
    }
    info        = &kh_val(&md->mrs, it);
    info->start = (uintptr_t)mr->addr;
    info->end   = (uintptr_t)mr->addr + mr->length;
    info->lkey  = mr->lkey;
    ucs_spin_unlock(&md->mrs_lock);
}

static void uct_uccl_md_mr_untrack(uct_uccl_md_t *md, struct ibv_mr *mr)
{
    khiter_t it;

    ucs_spin_lock(&md->mrs_lock);
    it = kh_get(uct_uccl_mr, &md->mrs, mr->rkey);
    if (it != kh_end(&md->mrs)) {
        kh_del(uct_uccl_mr, &md->mrs, it);
    }
    ucs_spin_unlock(&md->mrs_lock);
}

int uct_uccl_md_rkey_check(uct_uccl_md_t *md, uint32_t rkey, uint64_t addr,
                           uint64_t length, uint32_t *lkey_p)
{
    const uct_uccl_mr_info_t *info;
    int found = 0;
    khiter_t it;

    ucs_spin_lock(&md->mrs_lock);
    it = kh_get(uct_uccl_mr, &md->mrs, rkey);
    if (it != kh_end(&md->mrs)) {
        info  = &kh_val(&md->mrs, it);
        found = (addr >= info->start) && (addr + length <= info->end) &&
                (addr + length >= addr);
        if (found && (lkey_p != NULL)) {
            *lkey_p = info->lkey;
        }
    }
    ucs_spin_unlock(&md->mrs_lock);
    return found;
}

/* The engine's own memory (pools) is for the local NIC only: it holds
 * descriptors, pointers and work requests, so no peer may read or write
 * it, and it is not in the rkey map peers' requests are checked against */
struct ibv_mr *uct_uccl_md_reg_local(uct_uccl_md_t *md, void *addr,
                                     size_t length)
{
    struct ibv_mr *mr;

    mr = ibv_reg_mr(md->pd, addr, length, IBV_ACCESS_LOCAL_WRITE);
    if (mr == NULL) {
        ucs_error("%s: ibv_reg_mr(%p, %zu) failed: %m", md->name, addr,
                  length);
    }
    return mr;
}

static ucs_status_t
uct_uccl_md_reg_mr(uct_uccl_md_t *md, void *address, size_t length,
                   int silent, uct_uccl_mem_t *memh)
{
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                 IBV_ACCESS_REMOTE_READ;

    memh->mr = ibv_reg_mr(md->pd, address, length, access);
    if (memh->mr == NULL) {
        ucs_log(silent ? UCS_LOG_LEVEL_DEBUG : UCS_LOG_LEVEL_ERROR,
                "%s: ibv_reg_mr(%p, %zu) failed: %m", md->name, address,
                length);
        return UCS_ERR_IO_ERROR;
    }

    ++md->num_reg_mr;
    uct_uccl_md_mr_track(md, memh->mr);
    memh->lkey = memh->mr->lkey;
    memh->rkey = memh->mr->rkey;
    ucs_trace("%s: registered %p..%p lkey 0x%x rkey 0x%x", md->name, address,
              UCS_PTR_BYTE_OFFSET(address, length), memh->lkey, memh->rkey);
    return UCS_OK;
}

static void uct_uccl_md_dereg_mr(uct_uccl_md_t *md, uct_uccl_mem_t *memh)
{
    int ret;

    uct_uccl_md_mr_untrack(md, memh->mr);
    ret = ibv_dereg_mr(memh->mr);

    if (ret != 0) {
        ucs_warn("%s: ibv_dereg_mr() failed: %s", md->name, strerror(ret));
    }
}

ucs_status_t
uct_uccl_md_mem_reg(uct_md_h tl_md, void *address, size_t length,
                    unsigned flags, uct_mem_h *memh_p)
{
    uct_uccl_md_t *md = ucs_derived_of(tl_md, uct_uccl_md_t);
    ucs_rcache_region_t *region;
    uct_uccl_mem_t *memh;
    ucs_status_t status;

    if (length == 0) {
        return UCS_ERR_INVALID_PARAM;
    }

    if (md->rcache != NULL) {
        status = ucs_rcache_get(md->rcache, address, length,
                                PROT_READ | PROT_WRITE, &flags, &region);
        if (status != UCS_OK) {
            ucs_debug("%s: rcache registration of %p+%zu failed: %s",
                      md->name, address, length, ucs_status_string(status));
            return status;
        }
        *memh_p = &ucs_derived_of(region, uct_uccl_rcache_region_t)->memh;
        return UCS_OK;
    }

    memh = ucs_malloc(sizeof(*memh), "uccl_memh");
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_uccl_md_reg_mr(md, address, length,
                                flags & UCT_MD_MEM_FLAG_HIDE_ERRORS, memh);
    if (status != UCS_OK) {
        ucs_free(memh);
        return status;
    }

    memh->cached = 0;
    *memh_p      = memh;
    return UCS_OK;
}

static void uct_uccl_md_invalidate_done(void *arg)
{
    uct_invoke_completion(arg, UCS_OK);
}

/* With an invalidation completion the completion runs once the MR is
 * deregistered: its rkey admits no access any more. A cached region goes
 * when its last user puts it. */
ucs_status_t uct_uccl_md_mem_dereg(uct_md_h tl_md, uct_mem_h tl_memh,
                                   uct_completion_t *invalidate_comp)
{
    uct_uccl_md_t *md    = ucs_derived_of(tl_md, uct_uccl_md_t);
    uct_uccl_mem_t *memh = tl_memh;
    uct_uccl_rcache_region_t *region;

    if (memh->cached) {
        region = ucs_container_of(memh, uct_uccl_rcache_region_t, memh);
        if (invalidate_comp != NULL) {
            ucs_rcache_region_invalidate(md->rcache, &region->super,
                                         uct_uccl_md_invalidate_done,
                                         invalidate_comp);
        }
        ucs_rcache_region_put(md->rcache, &region->super);
        return UCS_OK;
    }

    uct_uccl_md_dereg_mr(md, memh);
    ucs_free(memh);
    if (invalidate_comp != NULL) {
        uct_invoke_completion(invalidate_comp, UCS_OK);
    }
    return UCS_OK;
}

void uct_uccl_md_mkey_pack(uct_md_h tl_md, uct_mem_h tl_memh,
                           void *rkey_buffer)
{
    const uct_uccl_mem_t *memh = tl_memh;
    uct_uccl_packed_rkey_t *packed = rkey_buffer;

    packed->rkey  = memh->rkey;
    packed->magic = UCT_UCCL_RKEY_MAGIC;
}

ucs_status_t uct_uccl_rkey_unpack(const void *rkey_buffer, uct_rkey_t *rkey_p,
                                  void **handle_p)
{
    const uct_uccl_packed_rkey_t *packed = rkey_buffer;

    if (packed->magic != UCT_UCCL_RKEY_MAGIC) {
        ucs_error("uccl: rkey buffer %p is not a uccl key (magic 0x%x)",
                  rkey_buffer, packed->magic);
        return UCS_ERR_INVALID_PARAM;
    }

    *rkey_p   = packed->rkey;
    *handle_p = NULL;
    return UCS_OK;
}

static ucs_status_t
uct_uccl_rcache_mem_reg_cb(void *context, ucs_rcache_t *rcache, void *arg,
                           ucs_rcache_region_t *rregion, uint16_t rflags)
{
    uct_uccl_rcache_region_t *region = ucs_derived_of(rregion,
                                                      uct_uccl_rcache_region_t);
    unsigned *flags = arg;
    int silent      = (rflags & UCS_RCACHE_MEM_REG_HIDE_ERRORS) ||
                      (*flags & UCT_MD_MEM_FLAG_HIDE_ERRORS);
    ucs_status_t status;

    status = uct_uccl_md_reg_mr(context, (void*)region->super.super.start,
                                region->super.super.end -
                                region->super.super.start,
                                silent, &region->memh);
    region->memh.cached = 1;
    return status;
}

static void uct_uccl_rcache_mem_dereg_cb(void *context, ucs_rcache_t *rcache,
                                         ucs_rcache_region_t *rregion)
{
    uct_uccl_rcache_region_t *region = ucs_derived_of(rregion,
                                                      uct_uccl_rcache_region_t);

    uct_uccl_md_dereg_mr(context, &region->memh);
}

static void uct_uccl_rcache_dump_region_cb(void *context, ucs_rcache_t *rcache,
                                           ucs_rcache_region_t *rregion,
                                           char *buf, size_t max)
{
    uct_uccl_rcache_region_t *region = ucs_derived_of(rregion,
                                                      uct_uccl_rcache_region_t);

    snprintf(buf, max, "lkey 0x%x rkey 0x%x", region->memh.lkey,
             region->memh.rkey);
}

static ucs_rcache_ops_t uct_uccl_rcache_ops = {
    .mem_reg     = uct_uccl_rcache_mem_reg_cb,
    .mem_dereg   = uct_uccl_rcache_mem_dereg_cb,
    .dump_region = uct_uccl_rcache_dump_region_cb
};

void uct_uccl_md_close(uct_md_h tl_md)
{
    uct_uccl_md_t *md = ucs_derived_of(tl_md, uct_uccl_md_t);

    if (md->rcache != NULL) {
        ucs_rcache_destroy(md->rcache);
    }
    ucs_debug("%s: closing, %lu memory regions were registered", md->name,
              md->num_reg_mr);
    ibv_dealloc_pd(md->pd);
    ibv_close_device(md->ctx);
    uct_uccl_budget_put(md->budget);
    kh_destroy_inplace(uct_uccl_mr, &md->mrs);
    ucs_spinlock_destroy(&md->mrs_lock);
    ucs_free(md);
}

static ucs_status_t uct_uccl_md_rcache_init(uct_uccl_md_t *md,
                                            const uct_uccl_md_config_t *config)
{
    ucs_rcache_params_t params;
    ucs_status_t status;

    if (config->rcache_enable == UCS_NO) {
        return UCS_OK;
    }

    uct_uccl_glue_rcache_params(&params, &config->rcache,
                                sizeof(uct_uccl_rcache_region_t),
                                UCM_EVENT_VM_UNMAPPED, md,
                                &uct_uccl_rcache_ops);
    status = ucs_rcache_create(&params, md->name, NULL, &md->rcache);
    if (status != UCS_OK) {
        md->rcache = NULL;
        if (config->rcache_enable == UCS_YES) {
            ucs_error("%s: registration cache is required but failed: %s",
                      md->name, ucs_status_string(status));
            return status;
        }
        ucs_debug("%s: no registration cache: %s", md->name,
                  ucs_status_string(status));
        return UCS_OK;
    }

    md->reg_cost = ucs_linear_func_make(
            uct_md_rcache_overhead(&config->rcache), 0);
    return UCS_OK;
}

ucs_status_t
uct_uccl_md_open(uct_component_t *component, const char *md_name,
                 const uct_md_config_t *tl_config, uct_md_h *md_p)
{
    const uct_uccl_md_config_t *config = ucs_derived_of(tl_config,
                                                        uct_uccl_md_config_t);
    uct_uccl_md_t *md;
    ucs_status_t status;

    md = ucs_calloc(1, sizeof(*md), "uccl_md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    md->super.ops       = &uct_uccl_md_ops;
    md->super.component = &uct_uccl_component;
    md->reg_cost        = ucs_linear_func_make(config->reg_overhead, 0);
    kh_init_inplace(uct_uccl_mr, &md->mrs);
    ucs_spinlock_init(&md->mrs_lock, 0);
    ucs_strncpy_zero(md->name, md_name, sizeof(md->name));

    md->ctx = uct_uccl_md_open_device(md_name);
    if (md->ctx == NULL) {
        status = UCS_ERR_NO_DEVICE;
        goto err_free_md;
    }

    if (ibv_query_device(md->ctx, &md->dev_attr) != 0) {
        ucs_error("%s: ibv_query_device() failed: %m", md_name);
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    md->budget = uct_uccl_budget_get(md_name,
                                     (config->max_qps == UCS_ULUNITS_AUTO) ?
                                     md->dev_attr.max_qp :
                                     ucs_min(config->max_qps,
                                             md->dev_attr.max_qp));
    if (md->budget == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_close;
    }

    md->pd = ibv_alloc_pd(md->ctx);
    if (md->pd == NULL) {
        ucs_error("%s: ibv_alloc_pd() failed: %m", md_name);
        status = UCS_ERR_IO_ERROR;
        goto err_budget;
    }

    status = uct_uccl_md_ports_init(md, config);
    if (status != UCS_OK) {
        goto err_pd;
    }

    status = uct_uccl_md_caps_init(md, config);
    if (status != UCS_OK) {
        goto err_pd;
    }

    status = uct_uccl_md_rcache_init(md, config);
    if (status != UCS_OK) {
        goto err_pd;
    }

    ucs_debug("%s: uc %d cq_ex %d cq_ts 0x%x (raw %lu kHz mask 0x%lx) "
              "max_sge %u max_qp_wr %u max_srq_wr %u rcache %s", md_name,
              md->caps.uc, md->caps.cq_ex, md->caps.cq_ts, md->caps.ts_khz,
              md->caps.ts_mask,
              md->caps.max_sge, md->caps.max_qp_wr, md->caps.max_srq_wr,
              md->rcache ? "yes" : "no");
    *md_p = &md->super;
    return UCS_OK;

err_pd:
    ibv_dealloc_pd(md->pd);
err_budget:
    uct_uccl_budget_put(md->budget);
err_close:
    ibv_close_device(md->ctx);
err_free_md:
    kh_destroy_inplace(uct_uccl_mr, &md->mrs);
    ucs_spinlock_destroy(&md->mrs_lock);
    ucs_free(md);
    return status;
}

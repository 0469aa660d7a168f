/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The memory domain's operation table and the component, in the shape of
 * the UCX release the transport is built against. Each UCCL_GLUE_* macro
 * comes from a configure probe that compiled the same code against that
 * release's headers (m4/ucx_glue.m4).
 */
#include "ucs_glue.h"

#include <uct/uccl/uccl_md.h>
#include <string.h>


#if UCCL_GLUE_MD_QUERY_V2
static ucs_status_t uct_uccl_glue_md_query(uct_md_h md, uct_md_attr_v2_t *attr)
{
    uct_uccl_glue_md_caps_t caps;

#  if UCCL_GLUE_MD_BASE_MD_QUERY
    uct_md_base_md_query(attr);
#  endif
    uct_uccl_md_caps(md, &caps);
    attr->flags            = caps.flags;
    attr->max_alloc        = caps.max_alloc;
    attr->max_reg          = caps.max_reg;
    attr->reg_mem_types    = caps.reg_mem_types;
    attr->access_mem_types = caps.access_mem_types;
    attr->detect_mem_types = 0;
    attr->alloc_mem_types  = 0;
    attr->rkey_packed_size = caps.rkey_packed_size;
    attr->reg_cost         = caps.reg_cost;
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}
#else
static ucs_status_t uct_uccl_glue_md_query(uct_md_h md, uct_md_attr_t *attr)
{
    uct_uccl_glue_md_caps_t caps;

    uct_uccl_md_caps(md, &caps);
    memset(&attr->cap, 0, sizeof(attr->cap));
    attr->cap.flags            = caps.flags;
    attr->cap.max_alloc        = caps.max_alloc;
    attr->cap.max_reg          = caps.max_reg;
    attr->cap.reg_mem_types    = caps.reg_mem_types;
    attr->cap.access_mem_types = caps.access_mem_types;
    attr->cap.detect_mem_types = 0;
    attr->cap.alloc_mem_types  = 0;
    attr->rkey_packed_size     = caps.rkey_packed_size;
    attr->reg_cost             = caps.reg_cost;
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}
#endif

#if UCCL_GLUE_MEM_REG_PARAMS
static ucs_status_t
uct_uccl_glue_mem_reg(uct_md_h md, void *address, size_t length,
                      const uct_md_mem_reg_params_t *params, uct_mem_h *memh_p)
{
    uint64_t flags = UCT_MD_MEM_REG_FIELD_VALUE(params, flags, FIELD_FLAGS, 0);

    return uct_uccl_md_mem_reg(md, address, length, (unsigned)flags, memh_p);
}
#else
#  define uct_uccl_glue_mem_reg uct_uccl_md_mem_reg
#endif

static ucs_status_t
uct_uccl_glue_mem_dereg(uct_md_h md, const uct_md_mem_dereg_params_t *params)
{
    uint64_t flags = UCT_MD_MEM_DEREG_FIELD_VALUE(params, flags, FIELD_FLAGS,
                                                  0);

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 1);
    return uct_uccl_md_mem_dereg(md, params->memh,
                                 (flags & UCT_MD_MEM_DEREG_FLAG_INVALIDATE) ?
                                 params->comp : NULL);
}

#if UCCL_GLUE_MKEY_PACK_ADDR
static ucs_status_t
uct_uccl_glue_mkey_pack(uct_md_h md, uct_mem_h memh, void *address,
                        size_t length, const uct_md_mkey_pack_params_t *params,
                        void *rkey_buffer)
{
    uct_uccl_md_mkey_pack(md, memh, rkey_buffer);
    return UCS_OK;
}
#else
static ucs_status_t
uct_uccl_glue_mkey_pack(uct_md_h md, uct_mem_h memh,
                        const uct_md_mkey_pack_params_t *params,
                        void *rkey_buffer)
{
    uct_uccl_md_mkey_pack(md, memh, rkey_buffer);
    return UCS_OK;
}
#endif

#if UCCL_GLUE_RKEY_UNPACK_PARAMS
static ucs_status_t
uct_uccl_glue_rkey_unpack(uct_component_t *component, const void *rkey_buffer,
                          const uct_rkey_unpack_params_t *params,
                          uct_rkey_t *rkey_p, void **handle_p)
{
    return uct_uccl_rkey_unpack(rkey_buffer, rkey_p, handle_p);
}
#else
static ucs_status_t
uct_uccl_glue_rkey_unpack(uct_component_t *component, const void *rkey_buffer,
                          uct_rkey_t *rkey_p, void **handle_p)
{
    return uct_uccl_rkey_unpack(rkey_buffer, rkey_p, handle_p);
}
#endif

uct_md_ops_t uct_uccl_md_ops = {
    .close                  = uct_uccl_md_close,
    .query                  = uct_uccl_glue_md_query,
    .mem_reg                = uct_uccl_glue_mem_reg,
    .mem_dereg              = uct_uccl_glue_mem_dereg,
    .mkey_pack              = uct_uccl_glue_mkey_pack,
#if UCCL_GLUE_MD_SOCKADDR_ACCESSIBLE
    .is_sockaddr_accessible = ucs_empty_function_return_zero_int,
#endif
#if UCCL_GLUE_MD_DETECT_MEMORY_TYPE
    .detect_memory_type     = ucs_empty_function_return_unsupported,
#endif
};

uct_component_t uct_uccl_component = {
    .query_md_resources = uct_uccl_query_md_resources,
    .md_open            = uct_uccl_md_open,
    .cm_open            = ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_uccl_glue_rkey_unpack,
    .rkey_ptr           = ucs_empty_function_return_unsupported,
    .rkey_release       = ucs_empty_function_return_success,
#if UCCL_GLUE_RKEY_COMPARE
    .rkey_compare       = uct_base_rkey_compare,
#endif
    .name               = UCT_UCCL_NAME,
    .md_config          = {
        .name           = "uccl memory domain",
        .prefix         = "UCCL_",
        .table          = uct_uccl_md_config_table,
        .size           = sizeof(uct_uccl_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                                  &uct_uccl_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)
                                  ucs_empty_function
};

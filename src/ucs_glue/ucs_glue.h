/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * ucs_glue: the only code that knows which UCX release the transport is built
 * against. Everything whose shape changes between UCX releases (component and
 * transport registration, MD ops signatures, config tables, connect and
 * reachability adapters, rcache parameters) is reached through here.
 */
#ifndef UCT_UCCL_UCS_GLUE_H_
#define UCT_UCCL_UCS_GLUE_H_

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/base/uct_md.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_component.h>

/* Symbols one release exports and another does not (UCX 1.18.1's libuct
 * has neither of these 1.13.1 ones). The transport refers to them weakly:
 * built for one release and loaded into another, it then gets as far as its
 * load-time version check (one error line, no registration) instead of
 * taking the whole program down with an unresolved symbol. */
#pragma weak uct_base_iface_internal_ops
#pragma weak uct_md_config_rcache_table

#define UCT_UCCL_GLUE_UCX_VERSION \
    UCS_PP_MAKE_STRING(UCCL_UCX_MAJOR) "." \
    UCS_PP_MAKE_STRING(UCCL_UCX_MINOR) "." \
    UCS_PP_MAKE_STRING(UCCL_UCX_PATCH)

/* A network transport is reachable from other nodes: from UCX 1.18 it has to
 * say so with a flag, before that every transport was assumed to be. */
#ifdef UCT_IFACE_FLAG_INTER_NODE
#  define UCT_UCCL_GLUE_IFACE_FLAG_INTER_NODE UCT_IFACE_FLAG_INTER_NODE
#else
#  define UCT_UCCL_GLUE_IFACE_FLAG_INTER_NODE 0
#endif

/* What the memory domain can do, in a form every UCX release can take: the
 * glue copies it into the release's md attributes. */
typedef struct uct_uccl_glue_md_caps {
    uint64_t                flags;             /* UCT_MD_FLAG_* */
    size_t                  max_alloc;
    size_t                  max_reg;
    uint64_t                reg_mem_types;
    uint64_t                access_mem_types;
    size_t                  rkey_packed_size;
    ucs_linear_func_t       reg_cost;
} uct_uccl_glue_md_caps_t;


/*
 * The transport's entry points, in signatures of its own that do not change
 * between UCX releases. The glue (ucs_glue_md.c, ucs_glue_iface.c) adapts
 * them to the release's operation tables and registers them.
 */
void uct_uccl_md_caps(uct_md_h md, uct_uccl_glue_md_caps_t *caps);
void uct_uccl_md_close(uct_md_h md);
ucs_status_t uct_uccl_md_mem_reg(uct_md_h md, void *address, size_t length,
                                 unsigned flags, uct_mem_h *memh_p);
/* invalidate_comp: NULL, or completed once no peer can reach the memory */
ucs_status_t uct_uccl_md_mem_dereg(uct_md_h md, uct_mem_h memh,
                                   uct_completion_t *invalidate_comp);
void uct_uccl_md_mkey_pack(uct_md_h md, uct_mem_h memh, void *rkey_buffer);
ucs_status_t uct_uccl_rkey_unpack(const void *rkey_buffer, uct_rkey_t *rkey_p,
                                  void **handle_p);
ucs_status_t uct_uccl_md_open(uct_component_t *component, const char *md_name,
                              const uct_md_config_t *config, uct_md_h *md_p);
ucs_status_t
uct_uccl_query_md_resources(uct_component_t *component,
                            uct_md_resource_desc_t **resources_p,
                            unsigned *num_resources_p);
ucs_status_t
uct_uccl_query_tl_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                          unsigned *num_devices_p);
extern ucs_config_field_t uct_uccl_md_config_table[];
extern ucs_config_field_t uct_uccl_iface_config_table[];

/* Defined by the glue for the release it is built against: the transport
 * points its md and iface at them. */
extern uct_component_t uct_uccl_component;
extern uct_tl_t        uct_uccl_tl;
extern uct_md_ops_t    uct_uccl_md_ops;

/* The iface's internal operations: UCX's base set, which UCX keeps complete
 * for its own transports that connect to an iface (configure checks that the
 * release has it). */
#define UCT_UCCL_GLUE_IFACE_INTERNAL_OPS (&uct_base_iface_internal_ops)

/**
 * Fill rcache parameters from the MD's rcache config (the parameter set and
 * the config layout change between UCX releases).
 */
void uct_uccl_glue_rcache_params(ucs_rcache_params_t *params,
                                 const uct_md_rcache_config_t *config,
                                 size_t region_size, int ucm_events,
                                 void *context, const ucs_rcache_ops_t *ops);

/**
 * Compare the UCX release loaded at run time with the one the transport was
 * built for. Prints one error line and returns 0 when they differ.
 */
int uct_uccl_glue_version_check(void);

/**
 * Try to block a thread-spinlock async context (as UCS_ASYNC_BLOCK would)
 * without waiting: 1 if blocked (undo with UCS_ASYNC_UNBLOCK), 0 if it is
 * held elsewhere. Only UCS_ASYNC_MODE_THREAD_SPINLOCK contexts.
 */
int uct_uccl_glue_async_try_block(ucs_async_context_t *async);

#endif

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

/* Defined by the transport, registered by the glue once the version check
 * passed (see ucs_glue.c). */
extern uct_component_t uct_uccl_component;
extern uct_tl_t        uct_uccl_tl;

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

/* 1 if the transport registered itself with UCX in this process. */
int uct_uccl_glue_is_registered(void);

/**
 * Try to block a thread-spinlock async context (as UCS_ASYNC_BLOCK would)
 * without waiting: 1 if blocked (undo with UCS_ASYNC_UNBLOCK), 0 if it is
 * held elsewhere. Only UCS_ASYNC_MODE_THREAD_SPINLOCK contexts.
 */
int uct_uccl_glue_async_try_block(ucs_async_context_t *async);

#endif

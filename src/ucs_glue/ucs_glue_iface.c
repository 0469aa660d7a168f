/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The transport's registration entry, in the shape of the UCX release the
 * transport is built against (configure probes UCT_TL_DEFINE_ENTRY).
 */
#include "ucs_glue.h"

#include <uct/uccl/uccl_iface.h>


UCS_CLASS_DECLARE_NEW_FUNC(uct_uccl_iface_t, uct_iface_t, uct_md_h,
                           uct_worker_h, const uct_iface_params_t*,
                           const uct_iface_config_t*);

UCT_TL_DEFINE_ENTRY(&uct_uccl_component, uccl, uct_uccl_query_tl_devices,
                    uct_uccl_iface_t, "UCCL_", uct_uccl_iface_config_table,
                    uct_uccl_iface_config_t);

/*
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * A preload for the benchmarks (bench_lib.sh, BENCH_TOUCH=1): memory that
 * ucp_mem_map allocates is written once before the program sees it, as an
 * application's data would be. ucx_perftest's UCP tests never write their
 * buffers, so on softverbs an RDMA READ of a send buffer pins the shared
 * zero page and copies from one cached page, while a WRITE (UC mode's
 * served GET) pins and fills the receiver's real pages: the READ looks
 * cheaper than any application would find it.
 */
#define _GNU_SOURCE
#include <ucp/api/ucp.h>
#include <dlfcn.h>
#include <string.h>

#define BENCH_TOUCH_BYTE 0x5a

typedef ucs_status_t (*bench_touch_mem_map_t)(ucp_context_h context,
                                              const ucp_mem_map_params_t *p,
                                              ucp_mem_h *memh_p);

static int bench_touch_allocates(const ucp_mem_map_params_t *params)
{
    return (params->field_mask & UCP_MEM_MAP_PARAM_FIELD_FLAGS) &&
           (params->flags & UCP_MEM_MAP_ALLOCATE);
}

ucs_status_t ucp_mem_map(ucp_context_h context,
                         const ucp_mem_map_params_t *params,
                         ucp_mem_h *memh_p)
{
    static bench_touch_mem_map_t next;
    ucp_mem_attr_t attr = {
        .field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH
    };
    ucs_status_t status;

    if (next == NULL) {
        next = (bench_touch_mem_map_t)dlsym(RTLD_NEXT, "ucp_mem_map");
        if (next == NULL) {
            return UCS_ERR_UNSUPPORTED;
        }
    }
    status = next(context, params, memh_p);
    if ((status == UCS_OK) && bench_touch_allocates(params) &&
        (ucp_mem_query(*memh_p, &attr) == UCS_OK)) {
        memset(attr.address, BENCH_TOUCH_BYTE, attr.length);
    }
    return status;
}

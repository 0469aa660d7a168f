/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE /* dladdr */
#endif
#include "ucs_glue.h"

#include <uct/api/uct.h>
#include <ucs/async/async.h>
#include <ucs/sys/sys.h>
#include <ucs/sys/string.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

static int uct_uccl_glue_registered;

int uct_uccl_glue_async_try_block(ucs_async_context_t *async)
{
    ucs_assert(async->mode == UCS_ASYNC_MODE_THREAD_SPINLOCK);
    return ucs_recursive_spin_trylock(&async->thread.spinlock);
}

void uct_uccl_glue_rcache_params(ucs_rcache_params_t *params,
                                 const uct_md_rcache_config_t *config,
                                 size_t region_size, int ucm_events,
                                 void *context, const ucs_rcache_ops_t *ops)
{
    memset(params, 0, sizeof(*params));
    uct_md_set_rcache_params(params, config);
    params->region_struct_size = region_size;
    params->max_alignment      = ucs_get_page_size();
    params->ucm_events         = ucm_events;
    params->context            = context;
    params->ops                = ops;
}

/* libuct and libucs 1.13 carry no version query; libucp (same release, same
 * directory) has ucp_get_version(). Take the first one visible in the
 * process (a uct_get_version() where a release has one), else load libucp
 * next to the libuct we run with, only to ask. */
static int uct_uccl_glue_runtime_version(unsigned *major, unsigned *minor,
                                         unsigned *release)
{
    typedef void (*get_version_func_t)(unsigned*, unsigned*, unsigned*);
    get_version_func_t get_version;
    char path[PATH_MAX];
    void *handle = NULL;
    Dl_info info;
    char *slash;

    get_version = (get_version_func_t)dlsym(RTLD_DEFAULT, "uct_get_version");
    if (get_version == NULL) {
        get_version = (get_version_func_t)dlsym(RTLD_DEFAULT,
                                                "ucp_get_version");
    }
    if ((get_version == NULL) &&
        dladdr((void*)uct_component_register, &info) &&
        (info.dli_fname != NULL)) {
        ucs_strncpy_zero(path, info.dli_fname, sizeof(path));
        slash = strrchr(path, '/');
        if (slash != NULL) {
            ucs_strncpy_zero(slash + 1, "libucp.so.0",
                             sizeof(path) - (slash + 1 - path));
            handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
        }
        if (handle != NULL) {
            get_version = (get_version_func_t)dlsym(handle,
                                                    "ucp_get_version");
        }
    }

    if (get_version != NULL) {
        get_version(major, minor, release);
    }
    if (handle != NULL) {
        dlclose(handle);
    }
    return get_version != NULL;
}

int uct_uccl_glue_version_check(void)
{
    unsigned major, minor, release;

    if (!uct_uccl_glue_runtime_version(&major, &minor, &release)) {
        fprintf(stderr, "uccl: cannot tell which UCX release is loaded "
                "(no libucp.so.0 beside libuct); uccl is not registered\n");
        return 0;
    }

    if ((major == UCCL_UCX_MAJOR) && (minor == UCCL_UCX_MINOR) &&
        (release == UCCL_UCX_PATCH)) {
        return 1;
    }

    /* Internal structures change between releases: registering with another
     * UCX would corrupt memory, so refuse, loudly but in one line. */
    fprintf(stderr, "uccl: transport built for UCX %s but UCX %u.%u.%u is "
            "loaded; uccl is not registered (rebuild it against the loaded "
            "UCX)\n", UCT_UCCL_GLUE_UCX_VERSION, major, minor, release);
    return 0;
}

/* Runs after libucs and libuct are initialised (they are our DT_NEEDED). */
static void UCS_F_CTOR uct_uccl_glue_init(void)
{
    if (!uct_uccl_glue_version_check()) {
        return;
    }

    uct_component_register(&uct_uccl_component);
    uct_tl_register(&uct_uccl_component, &uct_uccl_tl);
    uct_uccl_glue_registered = 1;
}

static void UCS_F_DTOR uct_uccl_glue_cleanup(void)
{
    if (!uct_uccl_glue_registered) {
        return;
    }

    uct_tl_unregister(&uct_uccl_tl);
    uct_component_unregister(&uct_uccl_component);
    uct_uccl_glue_registered = 0;
}

/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 */
#include "ucs_glue.h"

#include <uct/api/uct.h>
#include <stdio.h>

static int uct_uccl_glue_registered;

int uct_uccl_glue_version_check(void)
{
    unsigned major, minor, release;

    uct_get_version(&major, &minor, &release);
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

int uct_uccl_glue_is_registered(void)
{
    return uct_uccl_glue_registered;
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

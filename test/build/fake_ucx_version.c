/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Preloaded to pretend another UCX release is loaded, so the transport's
 * version guard can be seen refusing to register. UCX 1.13 answers the
 * version question through libucp's ucp_get_version().
 */
#include <stdlib.h>

void ucp_get_version(unsigned *major, unsigned *minor, unsigned *release)
{
    const char *v = getenv("FAKE_UCX_MINOR");

    *major   = 1;
    *minor   = (v != NULL) ? (unsigned)atoi(v) : 99;
    *release = 0;
}

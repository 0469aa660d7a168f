/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Preloaded in front of libuct to pretend another UCX release is loaded, so
 * the transport's version guard can be seen refusing to register.
 */
#include <stdlib.h>

void uct_get_version(unsigned *major, unsigned *minor, unsigned *release)
{
    const char *v = getenv("FAKE_UCX_MINOR");

    *major   = 1;
    *minor   = (v != NULL) ? (unsigned)atoi(v) : 99;
    *release = 0;
}

/*
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The cost of an empty progress pass, for uccl_callgrind.sh: one worker,
 * the given UCT ifaces opened on it with progress on, no endpoint and no
 * traffic, and PASSES calls to uct_worker_progress. Under callgrind, runs
 * with two pass counts give each progress function's instructions per
 * call when it finds nothing to do; a run with a pause after every pass
 * (-p) makes the timers fire more often per pass and so tells what a
 * pass costs per call from what it costs per timer tick.
 *
 *   empty_pass [-p PAUSE_US] PASSES TL:DEV [TL:DEV...]  (e.g. uccl:sv0:1)
 *
 * Each TL:DEV is looked up among the resources of every memory domain of
 * every component; its iface config comes from the environment (UCX_*), as
 * in the program being measured.
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EMPTY_PASS_MAX_IFACES  8

typedef struct {
    uct_md_h    md;
    uct_iface_h iface;
} empty_pass_iface_t;

typedef struct {
    ucs_async_context_t *async;
    uct_worker_h        worker;
    unsigned            count;
    empty_pass_iface_t  ifaces[EMPTY_PASS_MAX_IFACES];
} empty_pass_t;


static ucs_status_t
empty_pass_iface_open(empty_pass_t *ep, uct_md_h md, const char *tl,
                      const char *dev)
{
    uct_iface_params_t params = {
        .field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                UCT_IFACE_PARAM_FIELD_DEVICE,
        .open_mode            = UCT_IFACE_OPEN_MODE_DEVICE,
        .mode.device.tl_name  = tl,
        .mode.device.dev_name = dev
    };
    uct_iface_config_t *config;
    uct_iface_h iface;
    ucs_status_t status;

    status = uct_md_iface_config_read(md, tl, NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_iface_open(md, ep->worker, &params, config, &iface);
    uct_config_release(config);
    if (status != UCS_OK) {
        return status;
    }
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    ep->ifaces[ep->count].md    = md;
    ep->ifaces[ep->count].iface = iface;
    ++ep->count;
    return UCS_OK;
}

/* UCS_OK and the iface opened when md has resource tl:dev; UCS_ERR_NO_ELEM
 * and md left open for the caller to close when it has not */
static ucs_status_t
empty_pass_md_try(empty_pass_t *ep, uct_md_h md, const char *tl,
                  const char *dev)
{
    uct_tl_resource_desc_t *resources;
    ucs_status_t status;
    unsigned i, count;

    status = uct_md_query_tl_resources(md, &resources, &count);
    if (status != UCS_OK) {
        return status;
    }
    status = UCS_ERR_NO_ELEM;
    for (i = 0; i < count; ++i) {
        if (!strcmp(resources[i].tl_name, tl) &&
            !strcmp(resources[i].dev_name, dev)) {
            status = empty_pass_iface_open(ep, md, tl, dev);
            break;
        }
    }
    uct_release_tl_resource_list(resources);
    return status;
}

static ucs_status_t
empty_pass_component_try(empty_pass_t *ep, uct_component_h component,
                         const char *tl, const char *dev)
{
    uct_component_attr_t attr = {
        .field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT
    };
    uct_md_resource_desc_t *mds;
    uct_md_config_t *config;
    ucs_status_t status;
    uct_md_h md;
    unsigned i;

    status = uct_component_query(component, &attr);
    if ((status != UCS_OK) || (attr.md_resource_count == 0)) {
        return UCS_ERR_NO_ELEM;
    }
    mds = calloc(attr.md_resource_count, sizeof(*mds));
    if (mds == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds;
    status = uct_component_query(component, &attr);
    if (status != UCS_OK) {
        goto out_free;
    }
    status = uct_md_config_read(component, NULL, NULL, &config);
    if (status != UCS_OK) {
        goto out_free;
    }
    status = UCS_ERR_NO_ELEM;
    for (i = 0; (i < attr.md_resource_count) && (status == UCS_ERR_NO_ELEM);
         ++i) {
        if (uct_md_open(component, mds[i].md_name, config, &md) != UCS_OK) {
            continue;
        }
        status = empty_pass_md_try(ep, md, tl, dev);
        if (status != UCS_OK) {
            uct_md_close(md);
        }
    }
    uct_config_release(config);
out_free:
    free(mds);
    return status;
}

/* open the iface of spec "TL:DEV" (the device name holds a ':' itself) */
static ucs_status_t empty_pass_add(empty_pass_t *ep, const char *spec)
{
    uct_component_h *components;
    unsigned i, count;
    ucs_status_t status;
    char tl[64];
    const char *dev = strchr(spec, ':');

    if ((dev == NULL) || ((size_t)(dev - spec) >= sizeof(tl)) ||
        (ep->count == EMPTY_PASS_MAX_IFACES)) {
        return UCS_ERR_INVALID_PARAM;
    }
    memcpy(tl, spec, dev - spec);
    tl[dev - spec] = '\0';
    ++dev;

    status = uct_query_components(&components, &count);
    if (status != UCS_OK) {
        return status;
    }
    status = UCS_ERR_NO_ELEM;
    for (i = 0; (i < count) && (status == UCS_ERR_NO_ELEM); ++i) {
        status = empty_pass_component_try(ep, components[i], tl, dev);
    }
    uct_release_component_list(components);
    return status;
}

static void empty_pass_close(empty_pass_t *ep)
{
    while (ep->count > 0) {
        --ep->count;
        uct_iface_close(ep->ifaces[ep->count].iface);
        uct_md_close(ep->ifaces[ep->count].md);
    }
    uct_worker_destroy(ep->worker);
    ucs_async_context_destroy(ep->async);
}

static void empty_pass_usage(void)
{
    fprintf(stderr,
            "usage: empty_pass [-p PAUSE_US] PASSES TL:DEV [TL:DEV...]\n");
}

/* a positive number from a command line argument, or 0 */
static long empty_pass_number(const char *arg)
{
    char *end;
    long value = strtol(arg, &end, 10);

    return ((*arg != '\0') && (*end == '\0') && (value > 0)) ? value : 0;
}

int main(int argc, char **argv)
{
    empty_pass_t ep = {};
    ucs_status_t status;
    long i, passes;
    long pause_us = 0;
    int arg;

    while ((arg = getopt(argc, argv, "p:")) != -1) {
        pause_us = (arg == 'p') ? empty_pass_number(optarg) : 0;
        if (pause_us == 0) {
            empty_pass_usage();
            return 2;
        }
    }
    if (argc - optind < 2) {
        empty_pass_usage();
        return 2;
    }
    passes = empty_pass_number(argv[optind]);
    if (passes == 0) {
        empty_pass_usage();
        return 2;
    }

    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &ep.async);
    if (status != UCS_OK) {
        goto err;
    }
    status = uct_worker_create(ep.async, UCS_THREAD_MODE_SINGLE, &ep.worker);
    if (status != UCS_OK) {
        goto err_async;
    }
    for (arg = optind + 1; arg < argc; ++arg) {
        status = empty_pass_add(&ep, argv[arg]);
        if (status != UCS_OK) {
            fprintf(stderr, "empty_pass: %s: %s\n", argv[arg],
                    ucs_status_string(status));
            empty_pass_close(&ep);
            return 1;
        }
    }

    for (i = 0; i < passes; ++i) {
        uct_worker_progress(ep.worker);
        if (pause_us > 0) {
            usleep(pause_us);
        }
    }
    printf("empty_pass: %ld passes over %u ifaces, %ld us pause\n", passes,
           ep.count, pause_us);
    empty_pass_close(&ep);
    return 0;

err_async:
    ucs_async_context_destroy(ep.async);
err:
    fprintf(stderr, "empty_pass: %s\n", ucs_status_string(status));
    return 1;
}

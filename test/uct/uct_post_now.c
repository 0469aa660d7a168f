/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uct_post_now DIR sender|receiver [DEV]: an AM that am_short accepted must
 * reach the peer even if the sender then stops calling progress (UCX takes
 * am_short as sent: an MPI rank leaves a barrier and sleeps). The sender
 * sends N messages and after each waits, without progress, until the
 * receiver reports it (file "got" in DIR: how many arrived, in order); a
 * message not reported within WAIT_MS fails. No bound is tighter than
 * that, so a descheduled process only makes the test slower. Addresses go
 * through files in DIR too.
 */
#include <uct/api/uct.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AM_ID     5
#define N_MSGS    5
#define WAIT_MS   10000
#define POLL_US   1000
#define ADDR_MAX  256

static int n_rx;
static double late_ms[N_MSGS + 1];

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "uct_post_now: FAIL: %s: %s\n", what,
            ucs_status_string(status));
    exit(1);
}

static ucs_status_t am_cb(void *arg, void *data, size_t length,
                          unsigned flags)
{
    uint64_t seq = ((uint64_t*)data)[0];
    double sent;

    memcpy(&sent, (char*)data + 8, sizeof(sent));
    if ((seq != (uint64_t)n_rx) || (n_rx > N_MSGS)) {
        fprintf(stderr, "uct_post_now: FAIL: got message %lu, expected %d\n",
                (unsigned long)seq, n_rx);
        exit(1);
    }
    late_ms[n_rx++] = now_ms() - sent;
    return UCS_OK;
}

static void xfile(const char *dir, const char *name, void *buf, size_t len,
                  int write)
{
    char path[512], tmp[520];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (write) {
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        f = fopen(tmp, "w");
        if ((f == NULL) || (fwrite(buf, 1, len, f) != len) || fclose(f) ||
            rename(tmp, path)) {
            die("cannot write the address file", UCS_ERR_IO_ERROR);
        }
        return;
    }
    while (((f = fopen(path, "r")) == NULL)) {
        usleep(10000);
    }
    if (fread(buf, 1, len, f) != len) {
        die("short address file", UCS_ERR_IO_ERROR);
    }
    fclose(f);
}

/* How many messages the receiver reported, or -1 before its first report */
static int got_count(const char *dir)
{
    char path[512];
    int n = -1;
    FILE *f;

    snprintf(path, sizeof(path), "%s/got", dir);
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    if (fread(&n, 1, sizeof(n), f) != sizeof(n)) {
        n = -1;
    }
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    const char *dev = (argc > 3) ? argv[3] : "sv0:1";
    uct_component_h *comps, comp = NULL;
    uct_iface_params_t ip = {};
    uct_ep_params_t ep_params = {};
    uct_md_resource_desc_t *mds;
    unsigned ncomps, nmds, i;
    int rc = 0;
    uct_component_attr_t ca;
    uct_iface_config_t *ic;
    uct_md_config_t *mc;
    uct_iface_attr_t attr;
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_iface_h iface;
    uct_md_h md;
    uct_ep_h ep;
    uint8_t mine[2 * ADDR_MAX] = {}, peer[2 * ADDR_MAX];
    uint64_t payload[2];
    double t, sent;
    ucs_status_t status;
    int sender, reported;

    if (argc < 3) {
        fprintf(stderr, "usage: uct_post_now DIR sender|receiver [DEV]\n");
        return 2;
    }
    sender = !strcmp(argv[2], "sender");

    if (uct_query_components(&comps, &ncomps) != UCS_OK) {
        die("uct_query_components", UCS_ERR_NO_DEVICE);
    }
    for (i = 0; i < ncomps; ++i) {
        ca.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(comps[i], &ca) == UCS_OK) &&
            !strcmp(ca.name, "uccl")) {
            comp = comps[i];
        }
    }
    if (comp == NULL) {
        die("no uccl component", UCS_ERR_NO_DEVICE);
    }
    ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    uct_component_query(comp, &ca);
    mds = calloc(ca.md_resource_count, sizeof(*mds));
    ca.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    ca.md_resources = mds;
    uct_component_query(comp, &ca);
    nmds = ca.md_resource_count;
    if (nmds == 0) {
        die("no uccl memory domain", UCS_ERR_NO_DEVICE);
    }

    uct_md_config_read(comp, NULL, NULL, &mc);
    status = uct_md_open(comp, mds[0].md_name, mc, &md);
    if (status != UCS_OK) {
        die("uct_md_open", status);
    }
    ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async);
    uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker);
    uct_md_iface_config_read(md, "uccl", NULL, NULL, &ic);
    ip.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                              UCT_IFACE_PARAM_FIELD_DEVICE;
    ip.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    ip.mode.device.tl_name  = "uccl";
    ip.mode.device.dev_name = dev;
    status = uct_iface_open(md, worker, &ip, ic, &iface);
    if (status != UCS_OK) {
        die("uct_iface_open", status);
    }
    uct_iface_query(iface, &attr);
    if ((attr.device_addr_len > ADDR_MAX) ||
        (attr.iface_addr_len > ADDR_MAX)) {
        die("address too long", UCS_ERR_UNSUPPORTED);
    }
    uct_iface_get_device_address(iface, (uct_device_addr_t*)mine);
    uct_iface_get_address(iface, (uct_iface_addr_t*)(mine + ADDR_MAX));
    uct_iface_set_am_handler(iface, AM_ID, am_cb, NULL, 0);
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    xfile(argv[1], argv[2], mine, sizeof(mine), 1);
    xfile(argv[1], sender ? "receiver" : "sender", peer, sizeof(peer), 0);

    if (!sender) {
        t = now_ms();
        /* the sender gives up after WAIT_MS without a report */
        while ((n_rx <= N_MSGS) && (now_ms() - t < 2 * WAIT_MS)) {
            reported = n_rx;
            uct_worker_progress(worker);
            if (n_rx != reported) {
                xfile(argv[1], "got", &n_rx, sizeof(n_rx), 1);
                t = now_ms();
            }
        }
        xfile(argv[1], "done", mine, 1, 1);
        for (i = 0; i < (unsigned)n_rx; ++i) {
            printf("message %u arrived %.1f ms after its send\n", i,
                   late_ms[i]);
        }
        if (n_rx != N_MSGS + 1) {
            printf("uct_post_now: FAIL: %d of %d messages arrived\n", n_rx,
                   N_MSGS + 1);
            rc = 1;
            goto out;
        }
        printf("uct_post_now: PASS: %d messages arrived while their sender "
               "did not call progress\n", N_MSGS);
        goto out;
    }

    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = iface;
    ep_params.dev_addr   = (uct_device_addr_t*)peer;
    ep_params.iface_addr = (uct_iface_addr_t*)(peer + ADDR_MAX);
    status = uct_ep_create(&ep_params, &ep);
    if (status != UCS_OK) {
        die("uct_ep_create", status);
    }

    for (i = 0; i <= N_MSGS; ++i) {
        do {
            sent = now_ms();
            memcpy(&payload[0], &sent, sizeof(sent));
            status = uct_ep_am_short(ep, AM_ID, i, payload, sizeof(sent));
            if (status == UCS_ERR_NO_RESOURCE) {
                uct_worker_progress(worker);
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        if (status != UCS_OK) {
            die("am_short", status);
        }
        /* message 0 sets the connection up; the others are left alone */
        t = now_ms();
        while (got_count(argv[1]) < (int)i + 1) {
            if (now_ms() - t > WAIT_MS) {
                printf("uct_post_now: FAIL: message %u did not arrive within "
                       "%d ms%s\n", i, WAIT_MS, (i > 0) ?
                       " while its sender did not call progress" : "");
                rc = 1;
                break;
            }
            if (i == 0) {
                uct_worker_progress(worker);
            } else {
                usleep(POLL_US);
            }
        }
        if (rc != 0) {
            break;
        }
    }
    /* stay until the receiver is done (retransmissions, ACKs) */
    while (access(argv[1], F_OK) == 0) {
        char path[512];

        snprintf(path, sizeof(path), "%s/done", argv[1]);
        if (access(path, F_OK) == 0) {
            break;
        }
        uct_worker_progress(worker);
    }
    uct_ep_destroy(ep);
    printf("uct_post_now: sender done\n");
out:
    uct_iface_close(iface);
    uct_config_release(ic);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_md_close(md);
    uct_config_release(mc);
    free(mds);
    uct_release_component_list(comps);
    return rc;
}

/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uct_pending [SEED]: one process, NEPS eps from one uccl iface to another
 * on the same device, as UCX's gtest test_uct_pending.pending_fairness
 * drives them: every ep sends AMs until refused and adds a pending request
 * that sends one more; progress runs until a request was dispatched; then
 * the eps whose request went fill up again, ROUNDS times. Fails unless
 *
 *   - every ep sent at least half as many AMs as the one that sent most
 *     (UCX's own criterion for a fair pending queue), none sent nothing;
 *   - every AM arrived, in the order its ep sent it (pending requests keep
 *     their place before later sends).
 *
 * UCX_UCCL_MODE and the other UCX_UCCL_* variables choose the transport's
 * settings (tests.cmake runs it in UC and RC mode). Run under uccl-run; the
 * order the eps are filled in each round comes from SEED (printed on
 * failure).
 */
#include "uct_harness.h"

#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <ucs/type/status.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AM_ID      5
#define NEPS       64
#define ROUNDS     4000
#define TIMEOUT_S  60.0
#define FAIR_RATIO 2          /* most sends / fewest at most */

typedef struct {
    uct_pending_req_t   uct;
    unsigned            ep;
    int                 pending;
} preq_t;

static unsigned rnd_state;
static uct_ep_h eps[NEPS];
static preq_t reqs[NEPS];
static uint32_t sent[NEPS];        /* AMs each ep sent */
static uint32_t rx_next[NEPS];     /* the sequence number due from each */
static uint64_t rx_count, rx_bad;
static unsigned npending;


/* The header carries the ep and its sequence number */
static ucs_status_t am_cb(void *arg, void *data, size_t length,
                          unsigned flags)
{
    uint64_t hdr = *(const uint64_t*)data;
    unsigned ep  = hdr >> 32;

    if ((ep >= NEPS) || ((uint32_t)hdr != rx_next[ep])) {
        ++rx_bad;
    } else {
        ++rx_next[ep];
    }
    ++rx_count;
    return UCS_OK;
}

static ucs_status_t send_one(unsigned i)
{
    ucs_status_t status;

    status = uct_ep_am_short(eps[i], AM_ID, ((uint64_t)i << 32) | sent[i],
                             NULL, 0);
    if (status == UCS_OK) {
        ++sent[i];
    } else if (status != UCS_ERR_NO_RESOURCE) {
        uh_die("am_short on ep %u: %s", i, ucs_status_string(status));
    }
    return status;
}

static ucs_status_t pending_cb(uct_pending_req_t *self)
{
    preq_t *req         = ucs_container_of(self, preq_t, uct);
    ucs_status_t status = send_one(req->ep);

    if (status == UCS_OK) {
        req->pending = 0;
        --npending;
    }
    return status;
}

/* One AM from ep i, or its request added when it is refused (BUSY: the
 * queue took room again, so send) */
static void send_or_pend(unsigned i)
{
    ucs_status_t status;

    while (send_one(i) != UCS_OK) {
        status = uct_ep_pending_add(eps[i], &reqs[i].uct, 0);
        if (status == UCS_ERR_BUSY) {
            continue;
        }
        uh_check(status, "pending_add");
        reqs[i].pending = 1;
        ++npending;
        return;
    }
}

static void progress_while(const volatile unsigned *value, unsigned equal,
                           const char *what)
{
    double deadline = uh_now() + TIMEOUT_S;

    while (*value == equal) {
        uct_worker_progress(uh.worker);
        if (uh_now() > deadline) {
            uh_die("%s: stuck for %.0f s", what, TIMEOUT_S);
        }
    }
}

/* an iface on the shared md and worker, without an error handler */
static void iface_open(uh_iface_t *ifc)
{
    uct_iface_params_t params = {
        .field_mask            = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                 UCT_IFACE_PARAM_FIELD_DEVICE,
        .open_mode             = UCT_IFACE_OPEN_MODE_DEVICE,
        .mode.device.tl_name   = "uccl",
        .mode.device.dev_name  = uh.dev
    };

    uh_check(uh_local_iface_open(ifc, &params, NULL), "iface open");
}

/* Every ep fills up in turn (from a random one), then progress until one
 * of their requests went */
static void run_rounds(void)
{
    unsigned round, i, first;

    for (round = 0; round < ROUNDS; ++round) {
        first = uh_rnd(&rnd_state, NEPS);
        while (npending < NEPS) {
            for (i = 0; i < NEPS; ++i) {
                if (!reqs[(first + i) % NEPS].pending) {
                    send_or_pend((first + i) % NEPS);
                }
            }
        }
        progress_while(&npending, NEPS, "no pending request dispatched");
    }
}

static void check_fair(void)
{
    uint32_t most = 0, fewest = UINT32_MAX;
    unsigned i;

    for (i = 0; i < NEPS; ++i) {
        most   = (sent[i] > most) ? sent[i] : most;
        fewest = (sent[i] < fewest) ? sent[i] : fewest;
    }
    printf("uct_pending: sends per ep: fewest %u most %u\n", fewest, most);
    if ((fewest == 0) || ((uint64_t)fewest * FAIR_RATIO < most)) {
        uh_die("unfair: an ep sent %u AMs, another %u", fewest, most);
    }
}

/* the requests left go, everything arrives in order */
static void drain(void)
{
    double deadline = uh_now() + TIMEOUT_S;
    uint64_t total  = 0;
    unsigned i;

    while (npending > 0) {
        progress_while(&npending, npending, "pending requests left");
    }
    for (i = 0; i < NEPS; ++i) {
        total += sent[i];
    }
    while (rx_count < total) {
        uct_worker_progress(uh.worker);
        if (uh_now() > deadline) {
            uh_die("%lu of %lu AMs arrived", rx_count, total);
        }
    }
    if (rx_bad > 0) {
        uh_die("%lu AMs out of their ep's order", rx_bad);
    }
}

int main(int argc, char **argv)
{
    uh_iface_t a, b;
    unsigned i;

    uh.name   = "uct_pending";
    uh.seed   = (argc > 1) ? strtoul(argv[1], NULL, 0) : 1;
    rnd_state = uh.seed;
    uh_local_init(NULL);
    iface_open(&a);
    iface_open(&b);
    uh_check(uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0), "am");
    for (i = 0; i < NEPS; ++i) {
        eps[i]           = uh_local_ep(&a, &b);
        reqs[i].uct.func = pending_cb;
        reqs[i].ep       = i;
    }

    run_rounds();
    check_fair();
    drain();

    for (i = 0; i < NEPS; ++i) {
        uct_ep_destroy(eps[i]);
    }
    uct_iface_close(b.iface);
    uct_iface_close(a.iface);
    uh_local_cleanup();
    printf("uct_pending: OK\n");
    return 0;
}

/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uct_contract TEST [SEED]: one process, uccl ifaces on one device, holds
 * uccl to what UCX's own UCT gtest checks (test/gtest/run-ucx-gtest.sh runs
 * that suite; it is too heavy for every build). Each TEST fails if the
 * behaviour it names breaks:
 *
 *   am_limits    AMs of the advertised maximum go and arrive intact; one
 *                byte more, and an am_zcopy header above max_hdr, are
 *                refused with UCS_ERR_INVALID_PARAM
 *   tx_max_bufs  UCX_UCCL_TX_MAX_BUFS=32 (below the pool growth step) opens
 *                the iface, sends run out and come back after progress
 *   am_align     am_alignment/am_align_offset align the handler's data;
 *                an alignment of 0 or 3, or an offset alone, is refused
 *   connecting   a new ep takes an AM at once (UCS_OK, not NO_RESOURCE)
 *   async_am     without progress on the receiver, a handler registered
 *                with UCT_CB_FLAG_ASYNC is called and a pending request
 *                added with UCT_CB_FLAG_ASYNC runs; a sync handler is not
 *                called until the receiver progresses, nor an async one
 *                sent after it (AMs are handled in order)
 *   peer_close   an iface that closes makes its peer's ep fail with
 *                UCS_ERR_CONNECTION_RESET at once (not after PEER_TIMEOUT)
 *                when it checks the ep or after it sends (the send itself
 *                is taken, as by a QP whose peer vanished: UCX's gtest
 *                test_uct_peer_failure expects it); an idle ep still
 *                flushes what completed before
 *   destroy      an ep destroyed with zero-copy operations outstanding
 *                completes each of them before uct_ep_destroy returns
 *   get_freed    (run with loss) GET bcopy replies whose ACKs were lost
 *                are resent without reading their source, which its owner
 *                made unreadable once the GET completed: every GET's data
 *                arrives and the ep does not fail
 *   many_eps     2048 eps between two ifaces and 2048 from an iface to
 *                itself: all connect and deliver
 *   idle_eps     with MANY_EPS connected eps gone idle (and as many passive
 *                conns on the peer iface, on the same worker) a progress
 *                call costs at most IDLE_RATIO times what it costs with
 *                one: the engine's timers visit no idle conn
 *   rx_bound     RX_EPS eps stream AMs over many paths (they arrive out of
 *                order and wait for their order) to an iface with few
 *                receive buffers: every AM arrives, in order per ep (the
 *                parked ones must leave room for those they wait for)
 *   many_peers   NPEERS ifaces, one ep to each, with the md's MAX_QPS
 *                (1000) far below NPEERS * NUM_PATHS * 2: every conn is
 *                made (paths shrink), every ep delivers AMs and PUT data
 *
 * Run under uccl-run. Random choices come from SEED (printed on failure).
 */
#include "uct_contract.h"

#include <ucs/sys/math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static unsigned rnd_state;

rx_t rx;


unsigned rnd(unsigned max)
{
    return uh_rnd(&rnd_state, max);
}

void wait_for(volatile unsigned *flag, unsigned value, const char *what)
{
    double deadline = uh_now() + TIMEOUT_S;

    while (*flag < value) {
        uh_progress();
        if (uh_now() > deadline) {
            uh_die("%s: %u of %u after %.0f s", what, *flag, value,
                   TIMEOUT_S);
        }
    }
}

static ucs_status_t err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    if (!rx.ep_error) {
        rx.ep_status = status;
    }
    ++rx.ep_error;
    return UCS_OK;
}

void iface_params_init(uct_iface_params_t *params)
{
    memset(params, 0, sizeof(*params));
    params->field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                         UCT_IFACE_PARAM_FIELD_DEVICE |
                         UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                         UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                         UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params->open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params->mode.device.tl_name  = "uccl";
    params->mode.device.dev_name = uh.dev;
    params->err_handler          = err_handler;
    params->err_handler_flags    = 0;
}

void iface_open(uh_iface_t *ifc, const char *const *settings)
{
    uct_iface_params_t params;

    iface_params_init(&params);
    uh_check(uh_local_iface_open(ifc, &params, settings), "iface open");
}

void flush_ep(uct_ep_h ep)
{
    uh_req_t req;

    uh_req_init(&req);
    uh_wait(&req, UH_RETRY("flush", uct_ep_flush(ep, 0, &req.comp)), "flush");
}

/* ------------------------------------------------------------------------ */

ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    uint64_t index;

    if (length < sizeof(index)) {
        ++rx.errors;
        return UCS_OK;
    }
    if ((rx.align > 1) &&
        (((uintptr_t)data + rx.align_offset) % rx.align != 0)) {
        fprintf(stderr, "data %p + offset %zu is not aligned to %zu\n", data,
                rx.align_offset, rx.align);
        ++rx.errors;
    }
    if ((rx.expect != NULL) &&
        ((length != rx.expect_len) || memcmp(data, rx.expect, length))) {
        fprintf(stderr, "AM of %zu bytes (expected %zu) differs\n", length,
                rx.expect_len);
        ++rx.errors;
    }
    memcpy(&index, data, sizeof(index));
    if (index < MANY_EPS) {
        rx.seen[index / 64] |= 1ull << (index % 64);
    }
    ++rx.count;
    return UCS_OK;
}

ucs_status_t sync_cb(void *arg, void *data, size_t length, unsigned flags)
{
    ++rx.sync_count;
    rx.count_at_sync = rx.count;
    return UCS_OK;
}

uint8_t *pattern_buf(size_t len)
{
    uint8_t *buf = malloc(len + 1);
    size_t i;

    if (buf == NULL) {
        uh_die("no memory");
    }
    for (i = 0; i < len; ++i) {
        buf[i] = rnd(256);
    }
    return buf;
}

void expect_status(ucs_status_t got, ucs_status_t want, const char *what)
{
    if (got != want) {
        uh_die("%s: %s, expected %s", what, ucs_status_string(got),
               ucs_status_string(want));
    }
}

static const struct {
    const char *name;
    void       (*func)(void);
    const char *md_setting;
} tests[] = {
    {"am_limits",      test_am_limits,      NULL},
    {"tx_max_bufs",    test_tx_max_bufs,    NULL},
    {"am_align",       test_am_align,       NULL},
    {"connecting",     test_connecting,     NULL},
    {"async_am",       test_async_am,       NULL},
    {"peer_close",     test_peer_close,     NULL},
    {"destroy",        test_destroy,        NULL},
    {"flush_deferred", test_flush_deferred, NULL},
    {"get_freed",      test_get_freed,      NULL},
    {"many_eps",       test_many_eps,       NULL},
    {"idle_eps",       test_idle_eps,       NULL},
    {"rx_bound",       test_rx_bound,       NULL},
    {"many_peers",     test_many_peers,     "MAX_QPS=" NPEERS_QPS},
};

int main(int argc, char **argv)
{
    static char name[64];
    unsigned i;

    if (argc < 2) {
        fprintf(stderr, "usage: uct_contract TEST [SEED]\n");
        return 2;
    }
    snprintf(name, sizeof(name), "uct_contract %s", argv[1]);
    uh.name   = name;
    uh.seed   = (argc > 2) ? strtoul(argv[2], NULL, 0) : 1;
    rnd_state = uh.seed;
    for (i = 0; i < sizeof(tests) / sizeof(tests[0]); ++i) {
        if (!strcmp(tests[i].name, argv[1])) {
            uh_local_init(tests[i].md_setting);
            tests[i].func();
            uh_local_cleanup();
            printf("%s: OK\n", name);
            return 0;
        }
    }
    fprintf(stderr, "uct_contract: unknown test '%s'\n", argv[1]);
    return 2;
}

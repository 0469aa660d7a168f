/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uct_contract's tests of active messages: their limits, send buffers
 * running out, alignment, an ep still connecting, async handlers and
 * pending requests (see uct_contract.c).
 */
#include "uct_contract.h"

#include <ucs/sys/math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void test_am_limits(void)
{
    uh_iface_t a, b;
    uint8_t *buf;
    uct_ep_h ep;
    uct_mem_h memh;
    uct_iov_t iov;
    uh_pack_arg_t pack;
    uh_req_t req;
    size_t max_short, max_bcopy, max_zcopy, max_hdr;
    uint64_t hdr;

    iface_open(&a, NULL);
    iface_open(&b, NULL);
    uh_check(uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0), "am");
    ep = uh_local_ep(&a, &b);
    flush_ep(ep);

    max_short = a.attr.cap.am.max_short;
    max_bcopy = a.attr.cap.am.max_bcopy;
    max_zcopy = a.attr.cap.am.max_zcopy;
    max_hdr   = a.attr.cap.am.max_hdr;
    if ((max_short < sizeof(hdr)) || (max_hdr == 0) ||
        (max_hdr >= max_zcopy)) {
        uh_die("odd AM limits: short %zu zcopy %zu hdr %zu", max_short,
               max_zcopy, max_hdr);
    }
    buf = pattern_buf(ucs_max(max_short, ucs_max(max_bcopy, max_zcopy)));
    memcpy(&hdr, buf, sizeof(hdr));

    /* max_short counts the 8-byte header */
    rx.expect     = buf;
    rx.expect_len = max_short;
    uh_check(UH_RETRY("am_short", uct_ep_am_short(ep, AM_ID, hdr, buf + 8,
                                                  max_short - 8)),
             "am_short max");
    wait_for(&rx.count, 1, "am_short of max_short");
    expect_status(uct_ep_am_short(ep, AM_ID, hdr, buf + 8, max_short - 7),
                  UCS_ERR_INVALID_PARAM, "am_short of max_short + 1");
    iov.buffer = buf;
    iov.length = max_short + 1;
    iov.memh   = UCT_MEM_HANDLE_NULL;
    iov.stride = 0;
    iov.count  = 1;
    expect_status(uct_ep_am_short_iov(ep, AM_ID, &iov, 1),
                  UCS_ERR_INVALID_PARAM, "am_short_iov of max_short + 1");

    rx.expect_len = max_bcopy;
    pack.src      = buf;
    pack.len      = max_bcopy;
    if (UH_RETRY("am_bcopy", uct_ep_am_bcopy(ep, AM_ID, uh_pack, &pack, 0)) !=
        (ssize_t)max_bcopy) {
        uh_die("am_bcopy of max_bcopy failed");
    }
    wait_for(&rx.count, 2, "am_bcopy of max_bcopy");

    /* zcopy: header from buf, payload from buf after it */
    uh_check(uct_md_mem_reg(uh.md, buf, max_zcopy, UCT_MD_MEM_ACCESS_ALL,
                            &memh), "mem reg");
    iov.buffer    = buf + max_hdr;
    iov.length    = max_zcopy - max_hdr;
    iov.memh      = memh;
    rx.expect_len = max_zcopy;
    uh_req_init(&req);
    uh_wait(&req, UH_RETRY("am_zcopy", uct_ep_am_zcopy(ep, AM_ID, buf, max_hdr,
                                                        &iov, 1, 0, &req.comp)),
               "am_zcopy of max_zcopy");
    wait_for(&rx.count, 3, "am_zcopy of max_zcopy");
    iov.buffer = buf + max_hdr + 1;
    iov.length = 1;
    expect_status(uct_ep_am_zcopy(ep, AM_ID, buf, max_hdr + 1, &iov, 1, 0,
                                  NULL),
                  UCS_ERR_INVALID_PARAM, "am_zcopy header of max_hdr + 1");
    iov.buffer = buf + max_hdr;
    iov.length = max_zcopy - max_hdr + 1;
    expect_status(uct_ep_am_zcopy(ep, AM_ID, buf, max_hdr, &iov, 1, 0, NULL),
                  UCS_ERR_INVALID_PARAM, "am_zcopy of max_zcopy + 1");

    flush_ep(ep);
    if ((rx.count != 3) || rx.errors) {
        uh_die("%u AMs arrived (3 expected), %u bad", rx.count, rx.errors);
    }
    uct_ep_destroy(ep);
    uh_check(uct_md_mem_dereg(uh.md, memh), "mem dereg");
    uct_iface_close(b.iface);
    uct_iface_close(a.iface);
    free(buf);
}

void test_tx_max_bufs(void)
{
    static const char *const settings[] = {
        "TX_MAX_BUFS=32", "TX_BUFS_GROW=32", NULL
    };
    unsigned sent = 0, round;
    uh_iface_t a, b;
    uh_pack_arg_t pack;
    uint8_t buf[64];
    uct_ep_h ep;
    ssize_t ret;

    memset(buf, 0, sizeof(buf));
    iface_open(&a, settings);
    iface_open(&b, settings);
    uh_check(uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0), "am");
    ep = uh_local_ep(&a, &b);
    flush_ep(ep);

    pack.src = buf;
    pack.len = sizeof(buf);
    for (round = 0; round < 3; ++round) {
        /* without progress the 32 send buffers run out */
        while ((ret = uct_ep_am_bcopy(ep, AM_ID, uh_pack, &pack, 0)) > 0) {
            if (++sent > 100000) {
                uh_die("am_bcopy never ran out of the 32 send buffers");
            }
        }
        expect_status(ret, UCS_ERR_NO_RESOURCE, "am_bcopy, buffers used up");
        /* progress gives them back */
        uh_check(UH_RETRY("am_bcopy",
                          uct_ep_am_bcopy(ep, AM_ID, uh_pack, &pack, 0)) > 0 ?
                 UCS_OK : UCS_ERR_IO_ERROR, "am_bcopy after progress");
        ++sent;
    }
    flush_ep(ep);
    wait_for(&rx.count, sent, "AMs");
    if (rx.errors) {
        uh_die("%u bad AMs", rx.errors);
    }
    uct_ep_destroy(ep);
    uct_iface_close(b.iface);
    uct_iface_close(a.iface);
}

static void align_refused(size_t align, size_t offset, uint64_t fields)
{
    uct_iface_params_t params;
    ucs_status_t status;
    uh_iface_t ifc;

    iface_params_init(&params);
    params.field_mask     |= fields;
    params.am_alignment    = align;
    params.am_align_offset = offset;
    status = uh_local_iface_open(&ifc, &params, NULL);
    if (status == UCS_OK) {
        uct_iface_close(ifc.iface);
    }
    expect_status(status, UCS_ERR_INVALID_PARAM, "an invalid AM alignment");
}

void test_am_align(void)
{
    uct_iface_params_t params;
    unsigned i, sent = 0;
    uh_iface_t a, b;
    uh_pack_arg_t pack;
    uint8_t buf[256];
    uct_ep_h ep;

    align_refused(0, 0, UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT);
    align_refused(3, 1, UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT);
    align_refused(0, 11, UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET);
    align_refused(8, 8, UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET);

    memset(buf, 0, sizeof(buf));
    pack.src = buf;
    pack.len = sizeof(buf);
    iface_open(&a, NULL);
    for (i = 0; i < 13; ++i) {
        rx.align        = 1ul << i;
        rx.align_offset = (i % 2) ? rnd(ucs_min(rx.align, 128)) : 0;
        iface_params_init(&params);
        params.field_mask     |= UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT |
                                 UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET;
        params.am_alignment    = rx.align;
        params.am_align_offset = rx.align_offset;
        uh_check(uh_local_iface_open(&b, &params, NULL), "aligned iface");
        uh_check(uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0),
                 "am");
        ep = uh_local_ep(&a, &b);
        uh_check(UH_RETRY("am_short", uct_ep_am_short(ep, AM_ID, 0, buf, 64)),
                 "am_short");
        if (UH_RETRY("am_bcopy", uct_ep_am_bcopy(ep, AM_ID, uh_pack, &pack,
                                                 0)) <= 0) {
            uh_die("am_bcopy failed");
        }
        sent += 2;
        flush_ep(ep);
        wait_for(&rx.count, sent, "aligned AMs");
        uct_ep_destroy(ep);
        uct_iface_close(b.iface);
        if (rx.errors) {
            uh_die("AM data misaligned (alignment %zu offset %zu)", rx.align,
                   rx.align_offset);
        }
    }
    uct_iface_close(a.iface);
}

void test_connecting(void)
{
    uh_iface_t a, b;
    uint64_t hdr = 0;
    uct_ep_h ep;

    iface_open(&a, NULL);
    iface_open(&b, NULL);
    uh_check(uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0), "am");
    ep = uh_local_ep(&a, &b);
    /* no progress since the ep was created: it is still connecting */
    expect_status(uct_ep_am_short(ep, AM_ID, hdr, NULL, 0), UCS_OK,
                  "am_short on a connecting ep");
    wait_for(&rx.count, 1, "the AM sent while connecting");
    flush_ep(ep);
    uct_ep_destroy(ep);
    uct_iface_close(b.iface);
    uct_iface_close(a.iface);
}

/* the async test: b's async handler answers a's AMs */
static struct {
    uh_iface_t          a, b;
    uct_ep_h         ep_ab, ep_ba;
    uct_pending_req_t req;
    unsigned         posted;        /* replies posted by b */
    int              req_done;
} as;

static ucs_status_t reply_pending_cb(uct_pending_req_t *req)
{
    ucs_status_t status = uct_ep_am_short(as.ep_ba, AM_ID_REPLY, 1, NULL, 0);

    if (status == UCS_OK) {
        ++as.posted;
        as.req_done = 1;
    }
    return status;
}

/* b, from its async timer: replies until b's queue is full, then adds a
 * pending request (also async) for one more */
static ucs_status_t async_cb(void *arg, void *data, size_t length,
                             unsigned flags)
{
    ucs_status_t status;

    ++rx.count;
    while ((status = uct_ep_am_short(as.ep_ba, AM_ID_REPLY, 0, NULL, 0)) ==
           UCS_OK) {
        ++as.posted;
    }
    if (status != UCS_ERR_NO_RESOURCE) {
        ++rx.errors;
    }
    as.req.func = reply_pending_cb;
    if (uct_ep_pending_add(as.ep_ba, &as.req, UCT_CB_FLAG_ASYNC) != UCS_OK) {
        ++rx.errors;
    }
    return UCS_OK;
}

static ucs_status_t reply_cb(void *arg, void *data, size_t length,
                             unsigned flags)
{
    ++rx.replies;
    return UCS_OK;
}

/* progress a's iface only, until *flag reaches value */
static void wait_a(volatile unsigned *flag, unsigned value, const char *what)
{
    double deadline = uh_now() + TIMEOUT_S;

    while (*flag < value) {
        uct_iface_progress(as.a.iface);
        if (uh_now() > deadline) {
            uh_die("%s: %u of %u after %.0f s without progress on the "
                   "receiver", what, *flag, value, TIMEOUT_S);
        }
    }
}

void test_async_am(void)
{
    double start;

    iface_open(&as.a, NULL);
    iface_open(&as.b, NULL);
    uh_check(uct_iface_set_am_handler(as.b.iface, AM_ID, async_cb, NULL,
                                      UCT_CB_FLAG_ASYNC), "async handler");
    uh_check(uct_iface_set_am_handler(as.b.iface, AM_ID_SYNC, sync_cb, NULL, 0),
             "sync handler");
    uh_check(uct_iface_set_am_handler(as.a.iface, AM_ID_REPLY, reply_cb, NULL,
                                      0), "reply handler");
    as.ep_ab = uh_local_ep(&as.a, &as.b);
    as.ep_ba = uh_local_ep(&as.b, &as.a);
    flush_ep(as.ep_ab);
    flush_ep(as.ep_ba);

    /* from here on only a progresses: b runs from its async timer */
    start = uh_now();
    uh_check(UH_RETRY("am_short", uct_ep_am_short(as.ep_ab, AM_ID, 0, NULL, 0)),
             "async AM");
    wait_a(&rx.count, 1, "async handler calls");
    printf("async handler called after %.1f ms\n", (uh_now() - start) * 1e3);
    wait_a((volatile unsigned*)&as.req_done, 1, "async pending requests");
    wait_a(&rx.replies, as.posted, "replies of the async handler");
    if (rx.errors) {
        uh_die("the async handler saw %u errors", rx.errors);
    }
    printf("%u replies, the last from an async pending request\n",
           as.posted);

    /* a sync AM waits for b's progress, and an async one sent after it
     * waits behind it */
    uh_check(UH_RETRY("am_short",
                      uct_ep_am_short(as.ep_ab, AM_ID_SYNC, 0, NULL, 0)),
             "sync AM");
    uh_check(UH_RETRY("am_short", uct_ep_am_short(as.ep_ab, AM_ID, 0, NULL, 0)),
             "async AM");
    for (start = uh_now(); uh_now() < start + 0.2;) {
        uct_iface_progress(as.a.iface);
    }
    if ((rx.sync_count != 0) || (rx.count != 1)) {
        uh_die("without progress on its iface, the sync handler was called %u "
               "times and the async one after it %u", rx.sync_count,
               rx.count - 1);
    }
    /* b's progress handles both, in order */
    wait_for(&rx.sync_count, 1, "the sync AM after progress");
    wait_for(&rx.count, 2, "the async AM behind it");
    if (rx.count_at_sync != 1) {
        uh_die("the async AM was handled before the sync AM sent before it");
    }
    uct_ep_destroy(as.ep_ba);
    uct_ep_destroy(as.ep_ab);
    uct_iface_close(as.b.iface);
    uct_iface_close(as.a.iface);
}

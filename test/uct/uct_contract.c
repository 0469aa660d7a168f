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
 *                when it checks the ep or sends; an idle ep still
 *                flushes what completed before
 *   destroy      an ep destroyed with zero-copy operations outstanding
 *                completes each of them before uct_ep_destroy returns
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
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <ucs/sys/math.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEV          "sv0:1"
#define MD_NAME      "sv0"
#define AM_ID        7
#define AM_ID_SYNC   8
#define AM_ID_REPLY  9
#define ADDR_MAX     256
#define TIMEOUT_S    30.0
#define MANY_EPS     2048
#define NPEERS       64
#define RX_EPS       32
#define RX_AMS       400      /* per ep */
#define NPEERS_QPS   "1000"   /* 32 paths each would take 4096 */

static const char *test_name = "?";
static unsigned seed         = 1;

typedef struct {
    uct_component_h     component;
    uct_md_h            md;
    ucs_async_context_t *async;
    uct_worker_h        worker;
} ctx_t;

typedef struct {
    uct_iface_h         iface;
    uct_iface_attr_t    attr;
    uint8_t             dev_addr[ADDR_MAX];
    uint8_t             iface_addr[ADDR_MAX];
} iface_t;

static ctx_t ctx;

/* what the handlers saw */
static struct {
    unsigned            count;      /* AMs of AM_ID */
    unsigned            sync_count; /* AMs of AM_ID_SYNC */
    unsigned            count_at_sync; /* count when the last one came */
    unsigned            replies;
    unsigned            errors;
    uint64_t            seen[MANY_EPS / 64];
    size_t              align, align_offset;
    const uint8_t       *expect;    /* payload expected, or NULL */
    size_t              expect_len;
    int                 ep_error;
    ucs_status_t        ep_status;
} rx;


static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "uct_contract %s: FAIL (seed %u): ", test_name, seed);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        die("%s: %s", what, ucs_status_string(status));
    }
}

static double now_sec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static unsigned rnd(unsigned max)
{
    seed = seed * 1103515245u + 12345u;
    return (seed >> 8) % max;
}

static void progress(void)
{
    uct_worker_progress(ctx.worker);
}

/* progress until *flag reaches value, or die */
static void wait_for(volatile unsigned *flag, unsigned value, const char *what)
{
    double deadline = now_sec() + TIMEOUT_S;

    while (*flag < value) {
        progress();
        if (now_sec() > deadline) {
            die("%s: %u of %u after %.0f s", what, *flag, value, TIMEOUT_S);
        }
    }
}

/* ------------------------------------------------------------------------ */

/* the md with "NAME=VALUE" settings (or NULL) */
static void ctx_init(const char *md_setting)
{
    uct_component_h *components;
    uct_component_attr_t cattr;
    uct_md_config_t *md_config;
    char name[64], *eq;
    unsigned i, num;

    check(uct_query_components(&components, &num), "uct_query_components");
    for (i = 0; i < num; ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        check(uct_component_query(components[i], &cattr), "component query");
        if (!strcmp(cattr.name, "uccl")) {
            ctx.component = components[i];
        }
    }
    uct_release_component_list(components);
    if (ctx.component == NULL) {
        die("no uccl component: run under uccl-run");
    }

    check(uct_md_config_read(ctx.component, NULL, NULL, &md_config),
          "md config");
    if (md_setting != NULL) {
        snprintf(name, sizeof(name), "%s", md_setting);
        eq  = strchr(name, '=');
        *eq = '\0';
        check(uct_config_modify(md_config, name, eq + 1), md_setting);
    }
    check(uct_md_open(ctx.component, MD_NAME, md_config, &ctx.md), "md open");
    uct_config_release(md_config);
    check(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                   &ctx.async), "async");
    check(uct_worker_create(ctx.async, UCS_THREAD_MODE_SINGLE, &ctx.worker),
          "worker");
}

static ucs_status_t err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    if (!rx.ep_error) {
        rx.ep_status = status;
    }
    ++rx.ep_error;
    return UCS_OK;
}

static void iface_params_init(uct_iface_params_t *params)
{
    memset(params, 0, sizeof(*params));
    params->field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                         UCT_IFACE_PARAM_FIELD_DEVICE |
                         UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                         UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                         UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params->open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params->mode.device.tl_name  = "uccl";
    params->mode.device.dev_name = DEV;
    params->err_handler          = err_handler;
    params->err_handler_flags    = 0;
}

/* open an iface with params and "NAME=VALUE" config settings (NULL end) */
static ucs_status_t iface_try_open(iface_t *ifc,
                                   const uct_iface_params_t *params,
                                   const char *const *settings)
{
    uct_iface_config_t *config;
    char name[64], *eq;
    ucs_status_t status;

    check(uct_md_iface_config_read(ctx.md, "uccl", NULL, NULL, &config),
          "iface config");
    for (; (settings != NULL) && (*settings != NULL); ++settings) {
        snprintf(name, sizeof(name), "%s", *settings);
        eq = strchr(name, '=');
        *eq = '\0';
        check(uct_config_modify(config, name, eq + 1), *settings);
    }
    status = uct_iface_open(ctx.md, ctx.worker, params, config, &ifc->iface);
    uct_config_release(config);
    if (status != UCS_OK) {
        return status;
    }

    check(uct_iface_query(ifc->iface, &ifc->attr), "iface query");
    if ((ifc->attr.device_addr_len > ADDR_MAX) ||
        (ifc->attr.iface_addr_len > ADDR_MAX)) {
        die("addresses too long");
    }
    check(uct_iface_get_device_address(ifc->iface, (void*)ifc->dev_addr),
          "device address");
    check(uct_iface_get_address(ifc->iface, (void*)ifc->iface_addr),
          "iface address");
    uct_iface_progress_enable(ifc->iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return UCS_OK;
}

static void iface_open(iface_t *ifc, const char *const *settings)
{
    uct_iface_params_t params;

    iface_params_init(&params);
    check(iface_try_open(ifc, &params, settings), "iface open");
}

static uct_ep_h ep_create(iface_t *from, iface_t *to)
{
    uct_ep_params_t params;
    uct_ep_h ep;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = from->iface;
    params.dev_addr   = (void*)to->dev_addr;
    params.iface_addr = (void*)to->iface_addr;
    check(uct_ep_create(&params, &ep), "ep create");
    return ep;
}

/* retry while the ep connects or its queue is full */
#define RETRY(_what, _call) \
    ({ \
        __typeof__(_call) _s; \
        double _deadline = now_sec() + TIMEOUT_S; \
        while ((_s = (_call)) == UCS_ERR_NO_RESOURCE) { \
            progress(); \
            if (now_sec() > _deadline) { \
                die("%s: no resources for %.0f s", _what, TIMEOUT_S); \
            } \
        } \
        _s; \
    })

typedef struct {
    uct_completion_t comp;
    unsigned         done;
} req_t;

static void req_cb(uct_completion_t *self)
{
    ++ucs_container_of(self, req_t, comp)->done;
}

static void req_init(req_t *req)
{
    req->comp.func   = req_cb;
    req->comp.count  = 1;
    req->comp.status = UCS_OK;
    req->done        = 0;
}

static void wait_req(req_t *req, ucs_status_t status, const char *what)
{
    if (status == UCS_INPROGRESS) {
        wait_for(&req->done, 1, what);
        status = req->comp.status;
    }
    check(status, what);
}

static void flush_ep(uct_ep_h ep)
{
    req_t req;

    req_init(&req);
    wait_req(&req, RETRY("flush", uct_ep_flush(ep, 0, &req.comp)), "flush");
}

/* ------------------------------------------------------------------------ */

/* AM_ID: counts, checks the payload against rx.expect and the data pointer
 * against rx.align/align_offset, records the sender index in the header */
static ucs_status_t am_cb(void *arg, void *data, size_t length,
                          unsigned flags)
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

static ucs_status_t sync_cb(void *arg, void *data, size_t length,
                            unsigned flags)
{
    ++rx.sync_count;
    rx.count_at_sync = rx.count;
    return UCS_OK;
}

typedef struct {
    const uint8_t *src;
    size_t        len;
} pack_arg_t;

static size_t pack_cb(void *dest, void *arg)
{
    pack_arg_t *p = arg;

    memcpy(dest, p->src, p->len);
    return p->len;
}

static uint8_t *pattern_buf(size_t len)
{
    uint8_t *buf = malloc(len + 1);
    size_t i;

    if (buf == NULL) {
        die("no memory");
    }
    for (i = 0; i < len; ++i) {
        buf[i] = rnd(256);
    }
    return buf;
}

static void expect_status(ucs_status_t got, ucs_status_t want,
                          const char *what)
{
    if (got != want) {
        die("%s: %s, expected %s", what, ucs_status_string(got),
            ucs_status_string(want));
    }
}

static void test_am_limits(void)
{
    iface_t a, b;
    uint8_t *buf;
    uct_ep_h ep;
    uct_mem_h memh;
    uct_iov_t iov;
    pack_arg_t pack;
    req_t req;
    size_t max_short, max_bcopy, max_zcopy, max_hdr;
    uint64_t hdr;

    iface_open(&a, NULL);
    iface_open(&b, NULL);
    check(uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0), "am");
    ep = ep_create(&a, &b);
    flush_ep(ep);

    max_short = a.attr.cap.am.max_short;
    max_bcopy = a.attr.cap.am.max_bcopy;
    max_zcopy = a.attr.cap.am.max_zcopy;
    max_hdr   = a.attr.cap.am.max_hdr;
    if ((max_short < sizeof(hdr)) || (max_hdr == 0) ||
        (max_hdr >= max_zcopy)) {
        die("odd AM limits: short %zu zcopy %zu hdr %zu", max_short,
            max_zcopy, max_hdr);
    }
    buf = pattern_buf(ucs_max(max_short, ucs_max(max_bcopy, max_zcopy)));
    memcpy(&hdr, buf, sizeof(hdr));

    /* max_short counts the 8-byte header */
    rx.expect     = buf;
    rx.expect_len = max_short;
    check(RETRY("am_short", uct_ep_am_short(ep, AM_ID, hdr, buf + 8,
                                            max_short - 8)), "am_short max");
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
    if (RETRY("am_bcopy", uct_ep_am_bcopy(ep, AM_ID, pack_cb, &pack, 0)) !=
        (ssize_t)max_bcopy) {
        die("am_bcopy of max_bcopy failed");
    }
    wait_for(&rx.count, 2, "am_bcopy of max_bcopy");

    /* zcopy: header from buf, payload from buf after it */
    check(uct_md_mem_reg(ctx.md, buf, max_zcopy, UCT_MD_MEM_ACCESS_ALL,
                         &memh), "mem reg");
    iov.buffer    = buf + max_hdr;
    iov.length    = max_zcopy - max_hdr;
    iov.memh      = memh;
    rx.expect_len = max_zcopy;
    req_init(&req);
    wait_req(&req, RETRY("am_zcopy", uct_ep_am_zcopy(ep, AM_ID, buf, max_hdr,
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
        die("%u AMs arrived (3 expected), %u bad", rx.count, rx.errors);
    }
    uct_ep_destroy(ep);
    check(uct_md_mem_dereg(ctx.md, memh), "mem dereg");
    uct_iface_close(b.iface);
    uct_iface_close(a.iface);
    free(buf);
}

static void test_tx_max_bufs(void)
{
    static const char *const settings[] = {
        "TX_MAX_BUFS=32", "TX_BUFS_GROW=32", NULL
    };
    unsigned sent = 0, round;
    iface_t a, b;
    pack_arg_t pack;
    uint8_t buf[64];
    uct_ep_h ep;
    ssize_t ret;

    memset(buf, 0, sizeof(buf));
    iface_open(&a, settings);
    iface_open(&b, settings);
    check(uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0), "am");
    ep = ep_create(&a, &b);
    flush_ep(ep);

    pack.src = buf;
    pack.len = sizeof(buf);
    for (round = 0; round < 3; ++round) {
        /* without progress the 32 send buffers run out */
        while ((ret = uct_ep_am_bcopy(ep, AM_ID, pack_cb, &pack, 0)) > 0) {
            if (++sent > 100000) {
                die("am_bcopy never ran out of the 32 send buffers");
            }
        }
        expect_status(ret, UCS_ERR_NO_RESOURCE, "am_bcopy, buffers used up");
        /* progress gives them back */
        check(RETRY("am_bcopy", uct_ep_am_bcopy(ep, AM_ID, pack_cb, &pack, 0)) >
              0 ? UCS_OK : UCS_ERR_IO_ERROR, "am_bcopy after progress");
        ++sent;
    }
    flush_ep(ep);
    wait_for(&rx.count, sent, "AMs");
    if (rx.errors) {
        die("%u bad AMs", rx.errors);
    }
    uct_ep_destroy(ep);
    uct_iface_close(b.iface);
    uct_iface_close(a.iface);
}

static void align_refused(size_t align, size_t offset, uint64_t fields)
{
    uct_iface_params_t params;
    ucs_status_t status;
    iface_t ifc;

    iface_params_init(&params);
    params.field_mask     |= fields;
    params.am_alignment    = align;
    params.am_align_offset = offset;
    status = iface_try_open(&ifc, &params, NULL);
    if (status == UCS_OK) {
        uct_iface_close(ifc.iface);
    }
    expect_status(status, UCS_ERR_INVALID_PARAM, "an invalid AM alignment");
}

static void test_am_align(void)
{
    uct_iface_params_t params;
    unsigned i, sent = 0;
    iface_t a, b;
    pack_arg_t pack;
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
        check(iface_try_open(&b, &params, NULL), "aligned iface");
        check(uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0), "am");
        ep = ep_create(&a, &b);
        check(RETRY("am_short", uct_ep_am_short(ep, AM_ID, 0, buf, 64)),
              "am_short");
        if (RETRY("am_bcopy", uct_ep_am_bcopy(ep, AM_ID, pack_cb, &pack,
                                              0)) <= 0) {
            die("am_bcopy failed");
        }
        sent += 2;
        flush_ep(ep);
        wait_for(&rx.count, sent, "aligned AMs");
        uct_ep_destroy(ep);
        uct_iface_close(b.iface);
        if (rx.errors) {
            die("AM data misaligned (alignment %zu offset %zu)", rx.align,
                rx.align_offset);
        }
    }
    uct_iface_close(a.iface);
}

static void test_connecting(void)
{
    iface_t a, b;
    uint64_t hdr = 0;
    uct_ep_h ep;

    iface_open(&a, NULL);
    iface_open(&b, NULL);
    check(uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0), "am");
    ep = ep_create(&a, &b);
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
    iface_t          a, b;
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
    double deadline = now_sec() + TIMEOUT_S;

    while (*flag < value) {
        uct_iface_progress(as.a.iface);
        if (now_sec() > deadline) {
            die("%s: %u of %u after %.0f s without progress on the "
                "receiver", what, *flag, value, TIMEOUT_S);
        }
    }
}

static void test_async_am(void)
{
    double start;

    iface_open(&as.a, NULL);
    iface_open(&as.b, NULL);
    check(uct_iface_set_am_handler(as.b.iface, AM_ID, async_cb, NULL,
                                   UCT_CB_FLAG_ASYNC), "async handler");
    check(uct_iface_set_am_handler(as.b.iface, AM_ID_SYNC, sync_cb, NULL, 0),
          "sync handler");
    check(uct_iface_set_am_handler(as.a.iface, AM_ID_REPLY, reply_cb, NULL,
                                   0), "reply handler");
    as.ep_ab = ep_create(&as.a, &as.b);
    as.ep_ba = ep_create(&as.b, &as.a);
    flush_ep(as.ep_ab);
    flush_ep(as.ep_ba);

    /* from here on only a progresses: b runs from its async timer */
    start = now_sec();
    check(RETRY("am_short", uct_ep_am_short(as.ep_ab, AM_ID, 0, NULL, 0)),
          "async AM");
    wait_a(&rx.count, 1, "async handler calls");
    printf("async handler called after %.1f ms\n", (now_sec() - start) * 1e3);
    wait_a((volatile unsigned*)&as.req_done, 1, "async pending requests");
    wait_a(&rx.replies, as.posted, "replies of the async handler");
    if (rx.errors) {
        die("the async handler saw %u errors", rx.errors);
    }
    printf("%u replies, the last from an async pending request\n",
           as.posted);

    /* a sync AM waits for b's progress, and an async one sent after it
     * waits behind it */
    check(RETRY("am_short", uct_ep_am_short(as.ep_ab, AM_ID_SYNC, 0, NULL, 0)),
          "sync AM");
    check(RETRY("am_short", uct_ep_am_short(as.ep_ab, AM_ID, 0, NULL, 0)),
          "async AM");
    for (start = now_sec(); now_sec() < start + 0.2;) {
        uct_iface_progress(as.a.iface);
    }
    if ((rx.sync_count != 0) || (rx.count != 1)) {
        die("without progress on its iface, the sync handler was called %u "
            "times and the async one after it %u", rx.sync_count,
            rx.count - 1);
    }
    /* b's progress handles both, in order */
    wait_for(&rx.sync_count, 1, "the sync AM after progress");
    wait_for(&rx.count, 2, "the async AM behind it");
    if (rx.count_at_sync != 1) {
        die("the async AM was handled before the sync AM sent before it");
    }
    uct_ep_destroy(as.ep_ba);
    uct_ep_destroy(as.ep_ab);
    uct_iface_close(as.b.iface);
    uct_iface_close(as.a.iface);
}

/* an ep to a fresh iface b, with one AM delivered and flushed */
static uct_ep_h peer_close_setup(iface_t *a, iface_t *b)
{
    unsigned before = rx.count;
    uct_ep_h ep;

    iface_open(b, NULL);
    check(uct_iface_set_am_handler(b->iface, AM_ID, am_cb, NULL, 0), "am");
    ep = ep_create(a, b);
    check(RETRY("am_short", uct_ep_am_short(ep, AM_ID, 0, NULL, 0)), "AM");
    wait_for(&rx.count, before + 1, "AM");
    flush_ep(ep);
    return ep;
}

static void wait_ep_error(double start, const char *after)
{
    while (!rx.ep_error) {
        progress();
        if (now_sec() - start > 5) {
            die("no ep error 5 s after %s", after);
        }
    }
    expect_status(rx.ep_status, UCS_ERR_CONNECTION_RESET, "the ep error");
    printf("ep failed %.1f ms after %s\n", (now_sec() - start) * 1e3, after);
}

static void test_peer_close(void)
{
    double start, idle_until;
    iface_t a, b;
    uct_ep_h ep;

    iface_open(&a, NULL);

    /* a check (UCP's keepalive) right after the peer closed: error now */
    ep    = peer_close_setup(&a, &b);
    start = now_sec();
    uct_iface_close(b.iface);
    check(uct_ep_check(ep, 0, NULL), "ep check");
    wait_ep_error(start, "the peer iface closed");
    uct_ep_destroy(ep);

    /* an idle ep: what completed before flushes, the next send fails */
    rx.ep_error = 0;
    ep          = peer_close_setup(&a, &b);
    uct_iface_close(b.iface);
    for (idle_until = now_sec() + 0.1; now_sec() < idle_until;) {
        progress();
    }
    if (rx.ep_error) {
        die("an idle ep failed when its peer closed");
    }
    flush_ep(ep);
    start = now_sec();
    expect_status(uct_ep_am_short(ep, AM_ID, 0, NULL, 0),
                  UCS_ERR_CONNECTION_RESET, "a send to a closed peer");
    wait_ep_error(start, "a send to a closed peer");
    uct_ep_destroy(ep);
    uct_iface_close(a.iface);
}

/* ifaces a and b, a connected ep from a to b, and len pattern bytes
 * registered as one am_zcopy payload (at most max_zcopy) */
typedef struct {
    iface_t   a, b;
    uct_ep_h  ep;
    uint8_t   *buf;
    uct_mem_h memh;
    uct_iov_t iov;
} zc_t;

static void zc_setup(zc_t *z, size_t len)
{
    iface_open(&z->a, NULL);
    iface_open(&z->b, NULL);
    check(uct_iface_set_am_handler(z->b.iface, AM_ID, am_cb, NULL, 0), "am");
    z->ep  = ep_create(&z->a, &z->b);
    flush_ep(z->ep);
    z->buf = pattern_buf(len);
    check(uct_md_mem_reg(ctx.md, z->buf, len, UCT_MD_MEM_ACCESS_ALL,
                         &z->memh), "mem reg");
    z->iov.buffer = z->buf;
    z->iov.length = ucs_min(len, z->a.attr.cap.am.max_zcopy -
                                 sizeof(uint64_t));
    z->iov.memh   = z->memh;
    z->iov.stride = 0;
    z->iov.count  = 1;
}

/* everything but the ep, which the test destroys */
static void zc_cleanup(zc_t *z)
{
    check(uct_md_mem_dereg(ctx.md, z->memh), "mem dereg");
    free(z->buf);
    uct_iface_close(z->b.iface);
    uct_iface_close(z->a.iface);
}

static void test_destroy(void)
{
    unsigned i, issued = 0;
    req_t req;
    zc_t z;

    zc_setup(&z, 256 * 1024);

    /* one completion object counts every operation, as UCX's gtest does */
    req_init(&req);
    req.comp.count = 0;
    for (i = 0; i < 300; ++i) {
        ucs_status_t status = uct_ep_am_zcopy(z.ep, AM_ID, &i, sizeof(i),
                                              &z.iov, 1, 0, &req.comp);
        if (status == UCS_INPROGRESS) {
            ++req.comp.count;
            ++issued;
        } else if (status == UCS_ERR_NO_RESOURCE) {
            break;
        } else {
            check(status, "am_zcopy");
        }
    }
    if (issued == 0) {
        die("no am_zcopy outstanding to destroy the ep with");
    }
    uct_ep_destroy(z.ep);
    if (req.comp.count != 0) {
        die("%d of %u operations not completed when uct_ep_destroy returned",
            req.comp.count, issued);
    }
    printf("%u operations outstanding at ep destroy completed in it\n",
           issued);
    zc_cleanup(&z);
}

/* An operation completed by a background pass is reported at the user's
 * next progress call; a flush asked before that is not complete yet (UCP
 * takes a flush's UCS_OK for "every completion before it was called") */
static void test_flush_deferred(void)
{
    const size_t len = 64 * 1024;
    ucs_status_t status;
    double start;
    req_t req;
    zc_t z;

    zc_setup(&z, len);
    req_init(&req);
    status = RETRY("am_zcopy", uct_ep_am_zcopy(z.ep, AM_ID, &len, sizeof(len),
                                               &z.iov, 1, 0, &req.comp));
    if (status != UCS_INPROGRESS) {
        die("am_zcopy of %zu bytes: %s, not in progress", z.iov.length,
            ucs_status_string(status));
    }
    /* no progress call: the async timers run both engines */
    start = now_sec();
    while ((now_sec() < start + 1.0) && !req.done) {
        usleep(20000);
        status = uct_ep_flush(z.ep, 0, NULL);
        if ((status == UCS_OK) && !req.done) {
            die("uct_ep_flush returned UCS_OK before the am_zcopy's "
                "completion was called");
        }
        if (status == UCS_OK) {
            break;
        }
    }
    progress();
    printf("am_zcopy %s at the first progress call after %.0f ms\n",
           req.done ? "reported" : "not yet reported",
           (now_sec() - start) * 1e3);
    wait_for(&req.done, 1, "am_zcopy completion");
    flush_ep(z.ep);
    uct_ep_destroy(z.ep);
    zc_cleanup(&z);
}

/* eps[i] from `from` to `to`, each sends its index: all must arrive */
static void many_eps(iface_t *from, iface_t *to, const char *what)
{
    uct_ep_h *eps = calloc(MANY_EPS, sizeof(*eps));
    unsigned i, before = rx.count;

    if (eps == NULL) {
        die("no memory");
    }
    memset(rx.seen, 0, sizeof(rx.seen));
    for (i = 0; i < MANY_EPS; ++i) {
        eps[i] = ep_create(from, to);
    }
    for (i = 0; i < MANY_EPS; ++i) {
        check(RETRY("am_short", uct_ep_am_short(eps[i], AM_ID, i, NULL, 0)),
              what);
    }
    wait_for(&rx.count, before + MANY_EPS, what);
    for (i = 0; i < MANY_EPS; ++i) {
        if (!(rx.seen[i / 64] & (1ull << (i % 64)))) {
            die("%s: nothing from ep %u", what, i);
        }
        flush_ep(eps[i]);
        uct_ep_destroy(eps[i]);
    }
    free(eps);
}

static void test_many_eps(void)
{
    iface_t a, b;

    iface_open(&a, NULL);
    iface_open(&b, NULL);
    if (a.attr.max_num_eps < MANY_EPS) {
        die("max_num_eps %zu below %u", a.attr.max_num_eps, MANY_EPS);
    }
    check(uct_iface_set_am_handler(a.iface, AM_ID, am_cb, NULL, 0), "am");
    check(uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0), "am");
    many_eps(&a, &b, "2048 eps to a peer iface");
    many_eps(&a, &a, "2048 eps to the iface itself");
    uct_iface_close(b.iface);
    uct_iface_close(a.iface);
}

#define IDLE_PASSES   20000   /* progress calls per sample */
#define IDLE_SAMPLES  5       /* the cheapest sample counts: others may
                                 have shared the core */
#define IDLE_SETTLE_S 0.05    /* idle eps leave the engine's timers */
#define IDLE_RATIO    10

/* ns per idle progress call, the least of IDLE_SAMPLES samples */
static double idle_pass_ns(void)
{
    double start, ns, best = 0;
    unsigned s, i;

    start = now_sec();
    while (now_sec() - start < IDLE_SETTLE_S) {
        progress();
    }
    for (s = 0; s < IDLE_SAMPLES; ++s) {
        start = now_sec();
        for (i = 0; i < IDLE_PASSES; ++i) {
            progress();
        }
        ns   = (now_sec() - start) * 1e9 / IDLE_PASSES;
        best = (s == 0) ? ns : ucs_min(best, ns);
    }
    return best;
}

/* eps[first..count) from a to b connect, deliver an AM each and flush */
static void idle_eps_connect(iface_t *a, iface_t *b, uct_ep_h *eps,
                             unsigned first, unsigned count)
{
    unsigned i, before = rx.count;

    for (i = first; i < count; ++i) {
        eps[i] = ep_create(a, b);
        check(RETRY("am_short", uct_ep_am_short(eps[i], AM_ID, i, NULL, 0)),
              "idle eps");
    }
    wait_for(&rx.count, before + count - first, "idle eps");
    for (i = first; i < count; ++i) {
        flush_ep(eps[i]);
    }
}

static void test_idle_eps(void)
{
    uct_ep_h *eps = calloc(MANY_EPS, sizeof(*eps));
    double one, many;
    iface_t a, b;
    unsigned i;

    if (eps == NULL) {
        die("no memory");
    }
    iface_open(&a, NULL);
    iface_open(&b, NULL);
    check(uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0), "am");
    idle_eps_connect(&a, &b, eps, 0, 1);
    one = idle_pass_ns();
    idle_eps_connect(&a, &b, eps, 1, MANY_EPS);
    many = idle_pass_ns();
    printf("idle progress call: %.0f ns with 1 ep, %.0f ns with %u\n", one,
           many, MANY_EPS);
    if (many > IDLE_RATIO * one) {
        die("an idle progress call with %u eps costs %.0f ns, %.1f times "
            "what it costs with one", MANY_EPS, many, many / one);
    }
    for (i = 0; i < MANY_EPS; ++i) {
        uct_ep_destroy(eps[i]);
    }
    uct_iface_close(b.iface);
    uct_iface_close(a.iface);
    free(eps);
}

/* AM_ID_SYNC of rx_bound: header = ep << 32 | sequence number */
static uint32_t rx_bound_next[RX_EPS];

static ucs_status_t rx_bound_cb(void *arg, void *data, size_t length,
                                unsigned flags)
{
    uint64_t hdr;
    uint32_t ep, seq;

    memcpy(&hdr, data, sizeof(hdr));
    ep  = hdr >> 32;
    seq = (uint32_t)hdr;
    if ((ep >= RX_EPS) || (seq != rx_bound_next[ep])) {
        fprintf(stderr, "ep %u: AM %u, expected %u\n", ep, seq,
                (ep < RX_EPS) ? rx_bound_next[ep] : 0);
        ++rx.errors;
    } else {
        ++rx_bound_next[ep];
    }
    ++rx.count;
    return UCS_OK;
}

static void test_rx_bound(void)
{
    static const char *const settings[] = {
        "RX_MAX_BUFS=600", "SRQ_SIZE=256", NULL
    };
    uct_ep_h eps[RX_EPS];
    unsigned i, n;
    iface_t a, b;

    iface_open(&a, NULL);
    iface_open(&b, settings);
    check(uct_iface_set_am_handler(b.iface, AM_ID_SYNC, rx_bound_cb, NULL, 0),
          "am");
    for (i = 0; i < RX_EPS; ++i) {
        eps[i] = ep_create(&a, &b);
    }
    for (n = 0; n < RX_AMS; ++n) {
        for (i = 0; i < RX_EPS; ++i) {
            check(RETRY("am_short",
                        uct_ep_am_short(eps[i], AM_ID_SYNC,
                                        ((uint64_t)i << 32) | n, NULL, 0)),
                  "AM");
        }
    }
    wait_for(&rx.count, RX_EPS * RX_AMS, "AMs to a receiver short of buffers");
    if (rx.errors) {
        die("%u AMs out of order", rx.errors);
    }
    for (i = 0; i < RX_EPS; ++i) {
        flush_ep(eps[i]);
        uct_ep_destroy(eps[i]);
    }
    uct_iface_close(b.iface);
    uct_iface_close(a.iface);
}

/* the md's MAX_QPS is far below what NPEERS conns of NUM_PATHS would take
 * on both sides */
static void test_many_peers(void)
{
    static const char *const settings[] = {
        "SRQ_SIZE=64", "CHUNK_SIZE=8k", "CQ_SIZE=1024", NULL
    };
    iface_t a, *peers = calloc(NPEERS, sizeof(*peers));
    uct_ep_h *eps     = calloc(NPEERS, sizeof(*eps));
    size_t len        = 3 * 8192 + 100;   /* a few chunks */
    uct_rkey_bundle_t rkey;
    uint8_t *src, *dst;
    uct_mem_h src_memh, dst_memh;
    void *rkey_buf;
    uct_md_attr_t md_attr;
    uct_iov_t iov;
    req_t req;
    unsigned i;

    if ((peers == NULL) || (eps == NULL)) {
        die("no memory");
    }
    check(uct_md_query(ctx.md, &md_attr), "md query");
    src = pattern_buf(len);
    dst = calloc(NPEERS, len);
    rkey_buf = malloc(md_attr.rkey_packed_size);
    if ((dst == NULL) || (rkey_buf == NULL)) {
        die("no memory");
    }
    check(uct_md_mem_reg(ctx.md, src, len, UCT_MD_MEM_ACCESS_ALL, &src_memh),
          "mem reg");
    check(uct_md_mem_reg(ctx.md, dst, NPEERS * len, UCT_MD_MEM_ACCESS_ALL,
                         &dst_memh), "mem reg");
    check(uct_md_mkey_pack(ctx.md, dst_memh, rkey_buf), "mkey pack");
    check(uct_rkey_unpack(ctx.component, rkey_buf, &rkey), "rkey unpack");

    iface_open(&a, settings);
    for (i = 0; i < NPEERS; ++i) {
        iface_open(&peers[i], settings);
        check(uct_iface_set_am_handler(peers[i].iface, AM_ID, am_cb, NULL, 0),
              "am");
        eps[i] = ep_create(&a, &peers[i]);
    }
    iov.buffer = src;
    iov.length = len;
    iov.memh   = src_memh;
    iov.stride = 0;
    iov.count  = 1;
    for (i = 0; i < NPEERS; ++i) {
        check(RETRY("am_short", uct_ep_am_short(eps[i], AM_ID, i, NULL, 0)),
              "AM to a peer");
        req_init(&req);
        wait_req(&req, RETRY("put_zcopy",
                             uct_ep_put_zcopy(eps[i], &iov, 1,
                                              (uintptr_t)dst + i * len,
                                              rkey.rkey, &req.comp)),
                 "PUT to a peer");
    }
    wait_for(&rx.count, NPEERS, "AMs to the peers");
    for (i = 0; i < NPEERS; ++i) {
        flush_ep(eps[i]);
        if (memcmp(dst + i * len, src, len)) {
            die("PUT data to peer %u differs", i);
        }
        if (!(rx.seen[i / 64] & (1ull << (i % 64)))) {
            die("no AM from the ep to peer %u", i);
        }
        uct_ep_destroy(eps[i]);
        uct_iface_close(peers[i].iface);
    }
    uct_iface_close(a.iface);
    uct_rkey_release(ctx.component, &rkey);
    check(uct_md_mem_dereg(ctx.md, dst_memh), "mem dereg");
    check(uct_md_mem_dereg(ctx.md, src_memh), "mem dereg");
    free(rkey_buf);
    free(dst);
    free(src);
    free(eps);
    free(peers);
}

static const struct {
    const char *name;
    void       (*func)(void);
    const char *md_setting;
} tests[] = {
    {"am_limits",   test_am_limits,   NULL},
    {"tx_max_bufs", test_tx_max_bufs, NULL},
    {"am_align",    test_am_align,    NULL},
    {"connecting",  test_connecting,  NULL},
    {"async_am",    test_async_am,    NULL},
    {"peer_close",  test_peer_close,  NULL},
    {"destroy",     test_destroy,     NULL},
    {"flush_deferred", test_flush_deferred, NULL},
    {"many_eps",    test_many_eps,    NULL},
    {"idle_eps",    test_idle_eps,    NULL},
    {"rx_bound",    test_rx_bound,    NULL},
    {"many_peers",  test_many_peers,  "MAX_QPS=" NPEERS_QPS},
};

int main(int argc, char **argv)
{
    unsigned i;

    if (argc < 2) {
        fprintf(stderr, "usage: uct_contract TEST [SEED]\n");
        return 2;
    }
    test_name = argv[1];
    seed      = (argc > 2) ? strtoul(argv[2], NULL, 0) : 1;
    for (i = 0; i < sizeof(tests) / sizeof(tests[0]); ++i) {
        if (!strcmp(tests[i].name, test_name)) {
            ctx_init(tests[i].md_setting);
            tests[i].func();
            uct_worker_destroy(ctx.worker);
            ucs_async_context_destroy(ctx.async);
            uct_md_close(ctx.md);
            printf("uct_contract %s: OK\n", test_name);
            return 0;
        }
    }
    fprintf(stderr, "uct_contract: unknown test '%s'\n", test_name);
    return 2;
}

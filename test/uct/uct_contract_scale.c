/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uct_contract's tests of many eps and peers: thousands of eps, idle eps
 * that add nothing to a progress call, a receiver short of buffers, more
 * peers than the md's QPs allow full paths for (see uct_contract.c).
 */
#include "uct_contract.h"

#include <ucs/sys/math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* eps[i] from `from` to `to`, each sends its index: all must arrive */
static void many_eps(uh_iface_t *from, uh_iface_t *to, const char *what)
{
    uct_ep_h *eps = calloc(MANY_EPS, sizeof(*eps));
    unsigned i, before = rx.count;

    if (eps == NULL) {
        uh_die("no memory");
    }
    memset(rx.seen, 0, sizeof(rx.seen));
    for (i = 0; i < MANY_EPS; ++i) {
        eps[i] = uh_local_ep(from, to);
    }
    for (i = 0; i < MANY_EPS; ++i) {
        uh_check(UH_RETRY("am_short",
                          uct_ep_am_short(eps[i], AM_ID, i, NULL, 0)),
                 what);
    }
    wait_for(&rx.count, before + MANY_EPS, what);
    for (i = 0; i < MANY_EPS; ++i) {
        if (!(rx.seen[i / 64] & (1ull << (i % 64)))) {
            uh_die("%s: nothing from ep %u", what, i);
        }
        flush_ep(eps[i]);
        uct_ep_destroy(eps[i]);
    }
    free(eps);
}

void test_many_eps(void)
{
    uh_iface_t a, b;

    iface_open(&a, NULL);
    iface_open(&b, NULL);
    if (a.attr.max_num_eps < MANY_EPS) {
        uh_die("max_num_eps %zu below %u", a.attr.max_num_eps, MANY_EPS);
    }
    uh_check(uct_iface_set_am_handler(a.iface, AM_ID, am_cb, NULL, 0), "am");
    uh_check(uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0), "am");
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

    start = uh_now();
    while (uh_now() - start < IDLE_SETTLE_S) {
        uh_progress();
    }
    for (s = 0; s < IDLE_SAMPLES; ++s) {
        start = uh_now();
        for (i = 0; i < IDLE_PASSES; ++i) {
            uh_progress();
        }
        ns   = (uh_now() - start) * 1e9 / IDLE_PASSES;
        best = (s == 0) ? ns : ucs_min(best, ns);
    }
    return best;
}

/* eps[first..count) from a to b connect, deliver an AM each and flush */
static void idle_eps_connect(uh_iface_t *a, uh_iface_t *b, uct_ep_h *eps,
                             unsigned first, unsigned count)
{
    unsigned i, before = rx.count;

    for (i = first; i < count; ++i) {
        eps[i] = uh_local_ep(a, b);
        uh_check(UH_RETRY("am_short",
                          uct_ep_am_short(eps[i], AM_ID, i, NULL, 0)),
                 "idle eps");
    }
    wait_for(&rx.count, before + count - first, "idle eps");
    for (i = first; i < count; ++i) {
        flush_ep(eps[i]);
    }
}

void test_idle_eps(void)
{
    uct_ep_h *eps = calloc(MANY_EPS, sizeof(*eps));
    double one, many;
    uh_iface_t a, b;
    unsigned i;

    if (eps == NULL) {
        uh_die("no memory");
    }
    iface_open(&a, NULL);
    iface_open(&b, NULL);
    uh_check(uct_iface_set_am_handler(b.iface, AM_ID, am_cb, NULL, 0), "am");
    idle_eps_connect(&a, &b, eps, 0, 1);
    one = idle_pass_ns();
    idle_eps_connect(&a, &b, eps, 1, MANY_EPS);
    many = idle_pass_ns();
    printf("idle progress call: %.0f ns with 1 ep, %.0f ns with %u\n", one,
           many, MANY_EPS);
    if (many > IDLE_RATIO * one) {
        uh_die("an idle progress call with %u eps costs %.0f ns, %.1f times "
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

void test_rx_bound(void)
{
    static const char *const settings[] = {
        "RX_MAX_BUFS=600", "SRQ_SIZE=256", NULL
    };
    uct_ep_h eps[RX_EPS];
    unsigned i, n;
    uh_iface_t a, b;

    iface_open(&a, NULL);
    iface_open(&b, settings);
    uh_check(uct_iface_set_am_handler(b.iface, AM_ID_SYNC, rx_bound_cb, NULL,
                                      0), "am");
    for (i = 0; i < RX_EPS; ++i) {
        eps[i] = uh_local_ep(&a, &b);
    }
    for (n = 0; n < RX_AMS; ++n) {
        for (i = 0; i < RX_EPS; ++i) {
            uh_check(UH_RETRY("am_short",
                              uct_ep_am_short(eps[i], AM_ID_SYNC,
                                              ((uint64_t)i << 32) | n, NULL,
                                              0)),
                     "AM");
        }
    }
    wait_for(&rx.count, RX_EPS * RX_AMS, "AMs to a receiver short of buffers");
    if (rx.errors) {
        uh_die("%u AMs out of order", rx.errors);
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
void test_many_peers(void)
{
    static const char *const settings[] = {
        "SRQ_SIZE=64", "CHUNK_SIZE=8k", "CQ_SIZE=1024", NULL
    };
    uh_iface_t a, *peers = calloc(NPEERS, sizeof(*peers));
    uct_ep_h *eps     = calloc(NPEERS, sizeof(*eps));
    size_t len        = 3 * 8192 + 100;   /* a few chunks */
    uct_rkey_bundle_t rkey;
    uint8_t *src, *dst;
    uct_mem_h src_memh, dst_memh;
    void *rkey_buf;
    uct_md_attr_t md_attr;
    uct_iov_t iov;
    uh_req_t req;
    unsigned i;

    if ((peers == NULL) || (eps == NULL)) {
        uh_die("no memory");
    }
    uh_check(uct_md_query(uh.md, &md_attr), "md query");
    src = pattern_buf(len);
    dst = calloc(NPEERS, len);
    rkey_buf = malloc(md_attr.rkey_packed_size);
    if ((dst == NULL) || (rkey_buf == NULL)) {
        uh_die("no memory");
    }
    uh_check(uct_md_mem_reg(uh.md, src, len, UCT_MD_MEM_ACCESS_ALL, &src_memh),
             "mem reg");
    uh_check(uct_md_mem_reg(uh.md, dst, NPEERS * len, UCT_MD_MEM_ACCESS_ALL,
                            &dst_memh), "mem reg");
    uh_check(uct_md_mkey_pack(uh.md, dst_memh, rkey_buf), "mkey pack");
    uh_check(uct_rkey_unpack(uh.component, rkey_buf, &rkey), "rkey unpack");

    iface_open(&a, settings);
    for (i = 0; i < NPEERS; ++i) {
        iface_open(&peers[i], settings);
        uh_check(uct_iface_set_am_handler(peers[i].iface, AM_ID, am_cb, NULL,
                                          0), "am");
        eps[i] = uh_local_ep(&a, &peers[i]);
    }
    iov.buffer = src;
    iov.length = len;
    iov.memh   = src_memh;
    iov.stride = 0;
    iov.count  = 1;
    for (i = 0; i < NPEERS; ++i) {
        uh_check(UH_RETRY("am_short",
                          uct_ep_am_short(eps[i], AM_ID, i, NULL, 0)),
                 "AM to a peer");
        uh_req_init(&req);
        uh_wait(&req, UH_RETRY("put_zcopy",
                               uct_ep_put_zcopy(eps[i], &iov, 1,
                                                (uintptr_t)dst + i * len,
                                                rkey.rkey, &req.comp)),
                   "PUT to a peer");
    }
    wait_for(&rx.count, NPEERS, "AMs to the peers");
    for (i = 0; i < NPEERS; ++i) {
        flush_ep(eps[i]);
        if (memcmp(dst + i * len, src, len)) {
            uh_die("PUT data to peer %u differs", i);
        }
        if (!(rx.seen[i / 64] & (1ull << (i % 64)))) {
            uh_die("no AM from the ep to peer %u", i);
        }
        uct_ep_destroy(eps[i]);
        uct_iface_close(peers[i].iface);
    }
    uct_iface_close(a.iface);
    uct_rkey_release(uh.component, &rkey);
    uh_check(uct_md_mem_dereg(uh.md, dst_memh), "mem dereg");
    uh_check(uct_md_mem_dereg(uh.md, src_memh), "mem dereg");
    free(rkey_buf);
    free(dst);
    free(src);
    free(eps);
    free(peers);
}

/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uct_contract's tests of an ep's life: its peer iface closing, destroy
 * with operations outstanding, a flush before a deferred completion, GET
 * sources freed after their GETs (see uct_contract.c).
 */
#include "uct_contract.h"

#include <ucs/sys/math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>


/* an ep to a fresh iface b, with one AM delivered and flushed */
static uct_ep_h peer_close_setup(uh_iface_t *a, uh_iface_t *b)
{
    unsigned before = rx.count;
    uct_ep_h ep;

    iface_open(b, NULL);
    uh_check(uct_iface_set_am_handler(b->iface, AM_ID, am_cb, NULL, 0), "am");
    ep = uh_local_ep(a, b);
    uh_check(UH_RETRY("am_short", uct_ep_am_short(ep, AM_ID, 0, NULL, 0)),
             "AM");
    wait_for(&rx.count, before + 1, "AM");
    flush_ep(ep);
    return ep;
}

static void wait_ep_error(double start, const char *after)
{
    while (!rx.ep_error) {
        uh_progress();
        if (uh_now() - start > 5) {
            uh_die("no ep error 5 s after %s", after);
        }
    }
    expect_status(rx.ep_status, UCS_ERR_CONNECTION_RESET, "the ep error");
    printf("ep failed %.1f ms after %s\n", (uh_now() - start) * 1e3, after);
}

void test_peer_close(void)
{
    double start, idle_until;
    uh_iface_t a, b;
    uct_ep_h ep;

    iface_open(&a, NULL);

    /* a check (UCP's keepalive) right after the peer closed: error now */
    ep    = peer_close_setup(&a, &b);
    start = uh_now();
    uct_iface_close(b.iface);
    uh_check(uct_ep_check(ep, 0, NULL), "ep check");
    wait_ep_error(start, "the peer iface closed");
    uct_ep_destroy(ep);

    /* an idle ep: what completed before flushes; the next send is taken
     * (as by a QP whose peer vanished) and the ep fails at once after it */
    rx.ep_error = 0;
    ep          = peer_close_setup(&a, &b);
    uct_iface_close(b.iface);
    for (idle_until = uh_now() + 0.1; uh_now() < idle_until;) {
        uh_progress();
    }
    if (rx.ep_error) {
        uh_die("an idle ep failed when its peer closed");
    }
    flush_ep(ep);
    start = uh_now();
    expect_status(uct_ep_am_short(ep, AM_ID, 0, NULL, 0), UCS_OK,
                  "a send to a closed peer");
    wait_ep_error(start, "a send to a closed peer");
    uct_ep_destroy(ep);
    uct_iface_close(a.iface);
}

/* ifaces a and b, a connected ep from a to b, and len pattern bytes
 * registered as one am_zcopy payload (at most max_zcopy) */
typedef struct {
    uh_iface_t   a, b;
    uct_ep_h  ep;
    uint8_t   *buf;
    uct_mem_h memh;
    uct_iov_t iov;
} zc_t;

static void zc_setup(zc_t *z, size_t len)
{
    iface_open(&z->a, NULL);
    iface_open(&z->b, NULL);
    uh_check(uct_iface_set_am_handler(z->b.iface, AM_ID, am_cb, NULL, 0), "am");
    z->ep  = uh_local_ep(&z->a, &z->b);
    flush_ep(z->ep);
    z->buf = pattern_buf(len);
    uh_check(uct_md_mem_reg(uh.md, z->buf, len, UCT_MD_MEM_ACCESS_ALL,
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
    uh_check(uct_md_mem_dereg(uh.md, z->memh), "mem dereg");
    free(z->buf);
    uct_iface_close(z->b.iface);
    uct_iface_close(z->a.iface);
}

void test_destroy(void)
{
    unsigned i, issued = 0;
    uh_req_t req;
    zc_t z;

    zc_setup(&z, 256 * 1024);

    /* one completion object counts every operation, as UCX's gtest does */
    uh_req_init(&req);
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
            uh_check(status, "am_zcopy");
        }
    }
    if (issued == 0) {
        uh_die("no am_zcopy outstanding to destroy the ep with");
    }
    uct_ep_destroy(z.ep);
    if (req.comp.count != 0) {
        uh_die("%d of %u operations not completed when uct_ep_destroy returned",
               req.comp.count, issued);
    }
    printf("%u operations outstanding at ep destroy completed in it\n",
           issued);
    zc_cleanup(&z);
}

/* An operation completed by a background pass is reported at the user's
 * next progress call; a flush asked before that is not complete yet (UCP
 * takes a flush's UCS_OK for "every completion before it was called") */
void test_flush_deferred(void)
{
    const size_t len = 64 * 1024;
    ucs_status_t status;
    double start;
    uh_req_t req;
    zc_t z;

    zc_setup(&z, len);
    uh_req_init(&req);
    status = UH_RETRY("am_zcopy",
                      uct_ep_am_zcopy(z.ep, AM_ID, &len, sizeof(len), &z.iov,
                                      1, 0, &req.comp));
    if (status != UCS_INPROGRESS) {
        uh_die("am_zcopy of %zu bytes: %s, not in progress", z.iov.length,
               ucs_status_string(status));
    }
    /* no progress call: the async timers run both engines */
    start = uh_now();
    while ((uh_now() < start + 1.0) && !req.done) {
        usleep(20000);
        status = uct_ep_flush(z.ep, 0, NULL);
        if ((status == UCS_OK) && !req.done) {
            uh_die("uct_ep_flush returned UCS_OK before the am_zcopy's "
                   "completion was called");
        }
        if (status == UCS_OK) {
            break;
        }
    }
    uh_progress();
    printf("am_zcopy %s at the first progress call after %.0f ms\n",
           req.done ? "reported" : "not yet reported",
           (uh_now() - start) * 1e3);
    uh_wait(&req, UCS_INPROGRESS, "am_zcopy completion");
    flush_ep(z.ep);
    uct_ep_destroy(z.ep);
    zc_cleanup(&z);
}

/* GET bcopy from pages whose owner makes each unreadable, as a free would,
 * once the GET that read it completed; they stay registered. With loss
 * (the test runs under SOFTVERBS_LOSS) some replies' ACKs are lost and
 * the responder sends them again after the requester completed: a resend
 * must not read the source (the NIC would fail the QP, and the ep with
 * it). Every GET's data is checked, and no ep fails. */
void test_get_freed(void)
{
    const size_t page = sysconf(_SC_PAGESIZE);
    uct_rkey_bundle_t rkey;
    uh_iface_t a, b;
    uint8_t *src, *dst, *rkey_buf;
    uct_mem_h memh;
    unsigned i, j;
    uh_req_t req;
    uct_ep_h ep;
    double until;
    size_t len;

    iface_open(&a, NULL);
    iface_open(&b, NULL);
    ep  = uh_local_ep(&a, &b);
    flush_ep(ep);
    len = ucs_min(page, a.attr.cap.get.max_bcopy);
    src = mmap(NULL, GET_FREED_GETS * page, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    dst = malloc(len);
    rkey_buf = malloc(uh.md_attr.rkey_packed_size);
    if ((src == MAP_FAILED) || (dst == NULL) || (rkey_buf == NULL)) {
        uh_die("no memory for %u pages", GET_FREED_GETS);
    }
    for (i = 0; i < GET_FREED_GETS * page; ++i) {
        src[i] = (uint8_t)rnd(256);
    }
    uh_check(uct_md_mem_reg(uh.md, src, GET_FREED_GETS * page,
                            UCT_MD_MEM_ACCESS_ALL, &memh), "mem reg");
    uh_check(uct_md_mkey_pack(uh.md, memh, rkey_buf), "mkey pack");
    uh_check(uct_rkey_unpack(uh.component, rkey_buf, &rkey), "rkey unpack");

    for (i = 0; i < GET_FREED_GETS; ++i) {
        uh_req_init(&req);
        memset(dst, 0, len);
        uh_wait(&req, UH_RETRY("get_bcopy",
                               uct_ep_get_bcopy(ep, uh_unpack, &dst, len,
                                                (uintptr_t)(src + i * page),
                                                rkey.rkey, &req.comp)),
                "get_bcopy");
        for (j = 0; j < len; ++j) {
            if (dst[j] != src[i * page + j]) {
                uh_die("GET %u: byte %u is 0x%x, expected 0x%x", i, j,
                       dst[j], src[i * page + j]);
            }
        }
        if (mprotect(src + i * page, page, PROT_NONE) != 0) {
            uh_die("mprotect: %m");
        }
    }
    /* the last replies' resends, a few RTOs later */
    for (until = uh_now() + 0.5; uh_now() < until;) {
        uh_progress();
    }
    flush_ep(ep);
    if (rx.ep_error) {
        uh_die("the ep failed: %s", ucs_status_string(rx.ep_status));
    }
    printf("%u GETs of %zu bytes from pages made unreadable after each; "
           "the ep stayed up\n", GET_FREED_GETS, len);

    uct_ep_destroy(ep);
    uct_rkey_release(uh.component, &rkey);
    uh_check(uct_md_mem_dereg(uh.md, memh), "mem dereg");
    munmap(src, GET_FREED_GETS * page);
    free(rkey_buf);
    free(dst);
    uct_iface_close(b.iface);
    uct_iface_close(a.iface);
}

/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uct_hostile: a peer that speaks uccl's wire format wrongly on purpose,
 * against a victim process that must stay up, drop and count what is
 * wrong, and keep serving its honest traffic.
 *
 *   victim:  uct_hostile -s [-p PORT] [-d DEV]
 *   hostile: uct_hostile [-p PORT] [-d DEV] [-S SEED] [-c CASES]
 *
 * The victim has two ifaces on one device; the first streams PUTs and
 * AMs to the second (each AM checks that the PUT before it landed) for as
 * long as the hostile runs. The hostile is a raw verbs program (no UCX):
 * it connects to the victim's first iface as a uccl peer would (knowing
 * the wire format, uccl_wire.h) and then, per case (-c, default all;
 * serve always runs first, the victim's GET waits for it):
 *
 *   serve    answers the victim's GET of SERVE_LEN bytes: a reply of the
 *            wrong length first, then the right one (or, if the victim
 *            exposed a key, garbage written around its reply address)
 *   am_id    an AM whose id is beyond UCX's handler table
 *   garbage  SENDs whose headers do not match their immediate or length
 *   hold     a skipped CSN and then more AMs than the victim parks
 *   forge    ACK, DISCONNECT, KEEPALIVE and REP for the victim's conns,
 *            with made-up tokens, and a request naming another QP
 *   piggy    AMs carrying ACK records for conns that are not the
 *            hostile's, with made-up tokens, and one that is no ACK
 *   get_done a GET_DONE with a bad status and one for no GET
 *   get_huge many GETs of the victim's whole buffer, never acknowledged
 *   get_order a GET parked behind a hole must not keep out the GET that
 *            fills the hole
 *   flood    more connection requests than the victim takes
 *
 * The victim's counters (UCX_UCCL_STATS_DUMP) show what it dropped; the
 * script checks them (verify_pair.sh, UCCL_EXPECT_COUNTERS).
 *
 * Here the victim and main; the hostile's raw verbs peer is in
 * uct_hostile_peer.c, its cases in uct_hostile_cases.c.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include "uct_hostile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define AM_LEGIT       1          /* iface A -> B, checks the PUT before */
#define LEGIT_SLOT     (64u << 10)


static struct {
    uh_iface_t       b;           /* A is uh.iface */
    uct_ep_h         ep_ab;
    uct_rkey_bundle_t rkey;       /* of our own buffer */
    unsigned         rounds, legit_bad, hostile_ams;
    uint64_t         last_hostile_seq;
    int              hostile_order_bad;
} v;

typedef struct {
    uint64_t off, len;
    uint8_t  value;
} legit_msg_t;

static ucs_status_t legit_am(void *arg, void *data, size_t length,
                             unsigned flags)
{
    const legit_msg_t *m = (const void*)((const uint64_t*)data + 1);
    uint64_t i;

    for (i = 0; i < m->len; ++i) {
        if (uh.buf[m->off + i] != m->value) {
            ++v.legit_bad;
            break;
        }
    }
    ++v.rounds;
    return UCS_OK;
}

/* AMs of the hostile: counted, and their sequence must only grow */
static ucs_status_t hostile_am(void *arg, void *data, size_t length,
                               unsigned flags)
{
    uint64_t seq;

    ++v.hostile_ams;
    if (length >= sizeof(seq)) {
        memcpy(&seq, data, sizeof(seq));
        v.hostile_order_bad += (v.hostile_ams > 1) &&
                               (seq <= v.last_hostile_seq);
        v.last_hostile_seq = seq;
    }
    return UCS_OK;
}

static void victim_connect_ab(void)
{
    const uh_iface_t a = { .iface = uh.iface };

    uh_iface_open(&v.b.iface, &v.b.attr);
    uh_check(uct_iface_set_am_handler(v.b.iface, AM_LEGIT, legit_am, NULL,
                                      0), "am handler");
    uh_check(uct_iface_get_device_address(v.b.iface, (void*)v.b.dev_addr),
             "dev");
    uh_check(uct_iface_get_address(v.b.iface, (void*)v.b.iface_addr),
             "addr");
    v.ep_ab = uh_local_ep(&a, &v.b);
}

/* One honest round: a PUT into B's half of the buffer, then an AM that
 * checks it; the next round once the PUT completed */
static void victim_legit(uh_req_t *req, unsigned *sent)
{
    size_t half     = uh.buf_size / 2;
    uint64_t off    = (*sent % 8) * LEGIT_SLOT;
    legit_msg_t m   = { .off = half + off, .len = LEGIT_SLOT,
                        .value = (uint8_t)(*sent * 7 + 1) };
    ucs_status_t status;
    uct_iov_t iov;

    if ((*sent > 0) && !req->done) {
        return;
    }
    if (uh.ep_error && (uh.err_ep == v.ep_ab)) {
        uh_die("the honest ep failed: %s", ucs_status_string(uh.ep_status));
    }
    memset(uh.buf + off, m.value, m.len);
    uh_iov(&iov, uh.buf + off, m.len);
    uh_req_init(req);
    status = uct_ep_put_zcopy(v.ep_ab, &iov, 1,
                              (uintptr_t)uh.buf + m.off, v.rkey.rkey,
                              &req->comp);
    if (status == UCS_ERR_NO_RESOURCE) {
        req->done = 1;   /* retried next time */
        return;
    }
    if (status == UCS_OK) {
        req->done = 1;
    } else if (status != UCS_INPROGRESS) {
        uh_die("honest put: %s", ucs_status_string(status));
    }
    while (uct_ep_am_short(v.ep_ab, AM_LEGIT, 0, &m, sizeof(m)) ==
           UCS_ERR_NO_RESOURCE) {
        uh_progress();
    }
    ++*sent;
}

/* GET bcopy from the hostile (it serves it, see case_serve): it must
 * complete with the bytes the hostile has, whatever else it tries */
static struct {
    uct_ep_h          ep;
    uct_rkey_bundle_t rkey;
    uh_req_t          req;
    uint8_t           data[SERVE_LEN];
    uint8_t           *dst;
    int               started;
} vg;

static void victim_get(void)
{
    ucs_status_t status;

    if (!vg.started) {
        vg.ep = uh_ep_create();
        uh_check(uct_rkey_unpack(uh.component, uh.peer.rkey, &vg.rkey),
                 "hostile rkey");
        vg.started = 1;
    }
    if (vg.started == 2) {
        return;
    }
    vg.dst = vg.data;
    uh_req_init(&vg.req);
    status = uct_ep_get_bcopy(vg.ep, uh_unpack, &vg.dst, SERVE_LEN,
                              uh.peer.buf_addr + SERVE_OFF, vg.rkey.rkey,
                              &vg.req.comp);
    if (status == UCS_INPROGRESS) {
        vg.started = 2;
    } else if (status != UCS_ERR_NO_RESOURCE) {
        uh_die("get from the hostile: %s", ucs_status_string(status));
    }
}

/* 1 if the GET from the hostile completed with its bytes */
static int victim_get_ok(void)
{
    unsigned i;

    if ((vg.started != 2) || !vg.req.done ||
        (vg.req.comp.status != UCS_OK)) {
        return 0;
    }
    for (i = 0; i < SERVE_LEN; ++i) {
        if (vg.data[i] != serve_val(i)) {
            return 0;
        }
    }
    return 1;
}

void victim(void)
{
    uint8_t packed[UH_ADDR_MAX];
    uint32_t result[4];
    unsigned sent = 0;
    uh_req_t req;
    ssize_t n;

    uh_check(uct_iface_set_am_handler(uh.iface, AM_HOSTILE, hostile_am,
                                      NULL, 0), "am handler");
    victim_connect_ab();
    uh_check(uct_md_mkey_pack(uh.md, uh.memh, packed), "mkey pack");
    uh_check(uct_rkey_unpack(uh.component, packed, &v.rkey), "rkey");
    uh_exchange_info();

    do {
        uh_progress();
        victim_legit(&req, &sent);
        victim_get();
        n = recv(uh.sock, result, sizeof(result[0]), MSG_PEEK | MSG_DONTWAIT);
    } while (n < (ssize_t)sizeof(result[0]));
    uh_xfer(result, sizeof(result[0]), 0);
    while (!req.done) {
        uh_progress();
    }

    printf("victim: %u honest rounds (%u bad), %u hostile AMs%s, GET from "
           "the hostile %s\n", v.rounds, v.legit_bad, v.hostile_ams,
           v.hostile_order_bad ? " OUT OF ORDER" : "",
           victim_get_ok() ? "right" : "WRONG or not complete");
    result[0] = v.rounds;
    result[1] = v.legit_bad;
    result[2] = v.hostile_ams;
    result[3] = v.hostile_order_bad | (!victim_get_ok() << 1);
    uh_xfer(result, sizeof(result), 1);
    if (vg.started) {
        uct_ep_destroy(vg.ep);
        uct_rkey_release(uh.component, &vg.rkey);
    }
    uct_ep_destroy(v.ep_ab);
    uct_iface_close(v.b.iface);
    uct_rkey_release(uh.component, &v.rkey);
    if ((v.rounds < LEGIT_MIN) || v.legit_bad || v.hostile_order_bad ||
        !victim_get_ok()) {
        uh_die("honest traffic suffered: %u rounds, %u bad, hostile AMs "
               "%s, GET from the hostile %s", v.rounds, v.legit_bad,
               v.hostile_order_bad ? "out of order" : "in order",
               victim_get_ok() ? "right" : "wrong");
    }
}


int main(int argc, char **argv)
{
    const char *which = NULL;
    int c;

    uh.name     = "uct_hostile";
    uh.buf_size = 2 * 8 * LEGIT_SLOT;
    while ((c = getopt(argc, argv, "sh:p:d:S:c:")) != -1) {
        switch (c) {
        case 's': uh.server = 1; break;
        case 'h': uh.host = optarg; break;
        case 'p': uh.port = atoi(optarg); break;
        case 'd': uh.dev = optarg; break;
        case 'S': uh.seed = atoi(optarg); break;
        case 'c': which = optarg; break;
        default:
            fprintf(stderr, "usage: %s [-s] [-h host] [-p port] [-d dev] "
                    "[-S seed] [-c case,...]\n", argv[0]);
            return 2;
        }
    }

    if (uh.server) {
        uh_setup();
        victim();
        uh_teardown();
    } else {
        hostile(which);
        close(uh.sock);
    }
    printf("uct_hostile[%s]: OK\n", uh.server ? "victim" : "hostile");
    return 0;
}

/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uct_hostile's cases: what the hostile peer sends wrongly on purpose, one
 * case at a time, and its report of what the victim made of it (see
 * uct_hostile.c).
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include "uct_hostile.h"

#include <uct/uccl/proto/uccl_seq.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static hv_conn_t hv_main;     /* the hostile's first conn */
static uint64_t hv_seq;       /* payload of the hostile's AMs */

static void case_am_id(void)
{
    hv_am(&hv_main, hv_main.csn, 200, 0);   /* dropped: CSN not used */
    hv_am(&hv_main, hv_main.csn, UCT_AM_ID_MAX, 0);
    hv_am(&hv_main, hv_main.csn++, AM_HOSTILE, ++hv_seq);
}

static void case_garbage(void)
{
    static const uct_uccl_kind_t kinds[] = {
        UCT_UCCL_KIND_AM, UCT_UCCL_KIND_GET_REQ, UCT_UCCL_KIND_GET_DONE,
        UCT_UCCL_KIND_RETX, UCT_UCCL_KIND_PUT
    };
    unsigned i, k;

    for (i = 0; i < 200; ++i) {
        for (k = 0; k < 256; ++k) {
            hv.buf[k] = uh_rnd(&hv.rs, 256);
        }
        hv_data_send(&hv_main, hv_main.csn, kinds[i % 5],
                     1 + uh_rnd(&hv.rs, 256));
    }
    hv_am(&hv_main, hv_main.csn++, AM_HOSTILE, ++hv_seq);
}

/* a hole at the first CSN, then AMs after it: the victim parks a bounded
 * number and refuses the rest unrecorded; the hole filled, the parked
 * ones come in order. Its own conn: the refused CSNs stay missing. */
static void case_hold(void)
{
    hv_conn_t c = {};
    unsigned i;

    if (!hv_connect(&c)) {
        uh_die("hold: the victim did not answer");
    }
    for (i = 1; i <= 1000; ++i) {
        hv_am(&c, uct_uccl_seq_add(c.csn, i), AM_HOSTILE, hv_seq + 1 + i);
        if ((i % 32) == 0) {
            usleep(2000);    /* the victim's receive queue keeps up */
        }
    }
    usleep(100000);
    hv_am(&c, c.csn, AM_HOSTILE, hv_seq + 1);
    hv_seq += 1001;
}

/* control packets for the victim's conns (ids 0..FORGE_IDS-1) that do
 * not come from their peers, with made-up tokens: a DISCONNECT for every
 * pair of ids (conn ids are small), ACKs and KEEPALIVEs */
#define FORGE_IDS  16
static void case_forge(void)
{
    uint64_t pkt[64];
    uct_uccl_disconnect_t *d = (void*)pkt;
    uct_uccl_keepalive_t *k  = (void*)pkt;
    uct_uccl_ack_t *a        = (void*)pkt;
    uint8_t req[4096];
    uint32_t id, src;
    hv_conn_t c;

    for (id = 0; id < FORGE_IDS; ++id) {
        for (src = 0; src < FORGE_IDS; ++src) {
            memset(pkt, 0, sizeof(pkt));
            uct_uccl_wire_hdr_init(&d->hdr, UCT_UCCL_CTL_DISCONNECT,
                                   sizeof(*d));
            d->dst_conn_id = id;
            d->token       = hv_rand64();
            d->src_conn_id = src;
            d->reason      = UCS_ERR_IO_ERROR;
            hv_ctl_send(d, sizeof(*d));
        }

        memset(pkt, 0, sizeof(pkt));
        uct_uccl_wire_hdr_init(&k->hdr, UCT_UCCL_CTL_KEEPALIVE, sizeof(*k));
        k->dst_conn_id = id;
        k->token       = hv_rand64();
        hv_ctl_send(k, sizeof(*k));

        memset(pkt, 0, sizeof(pkt));
        uct_uccl_wire_hdr_init(&a->hdr, UCT_UCCL_CTL_ACK,
                               uct_uccl_wire_ack_size(0));
        a->dst_conn_id = id;
        a->token       = hv_rand64();
        a->cum_csn     = uh_rnd(&hv.rs, UCT_UCCL_SEQ_MASK);
        hv_ctl_send(a, a->hdr.length);
    }
    /* our own conn's token, but a request naming another QP as ours */
    memset(&c, 0, sizeof(c));
    c.uuid  = hv_rand64();
    c.token = hv_rand64() | 1;
    hv_ctl_send(req, hv_conn_req(&c, req, hv.ud->qp_num ^ 0x55));
    hv_am(&hv_main, hv_main.csn++, AM_HOSTILE, ++hv_seq);
}

/* AMs whose carried ACKs name the victim's conns (ids 0..FORGE_IDS-1)
 * and one it does not have, with made-up tokens: the ACKs are dropped
 * and counted, the AMs arrive; then a carried record that is no ACK:
 * that SEND is dropped whole, its CSN unused */
static void case_piggy(void)
{
    uct_uccl_ack_t ack;
    uint32_t id;

    for (id = 0; id <= FORGE_IDS; ++id) {
        memset(&ack, 0, sizeof(ack));
        uct_uccl_wire_hdr_init(&ack.hdr, UCT_UCCL_CTL_ACK, sizeof(ack));
        ack.dst_conn_id = (id < FORGE_IDS) ? id : UCT_UCCL_SEQ_MASK;
        ack.token       = hv_rand64();
        ack.cum_csn     = uh_rnd(&hv.rs, UCT_UCCL_SEQ_MASK);
        hv_am_ack(&hv_main, hv_main.csn++, ++hv_seq, &ack);
    }
    ack.hdr.type = UCT_UCCL_CTL_KEEPALIVE;
    hv_am_ack(&hv_main, hv_main.csn, hv_seq + 1, &ack);
    hv_am(&hv_main, hv_main.csn++, AM_HOSTILE, ++hv_seq);
}

static void case_get_done(void)
{
    uct_uccl_get_done_t *gd = (void*)hv.buf;

    memset(gd, 0, sizeof(*gd));
    gd->type  = UCT_UCCL_KIND_GET_DONE;
    gd->status = 5;                       /* not a status */
    gd->op_id  = hv_rand64();
    hv_data_send(&hv_main, hv_main.csn, UCT_UCCL_KIND_GET_DONE, sizeof(*gd));
    gd->status = UCS_ERR_IO_ERROR;        /* for no GET of the victim */
    hv_data_send(&hv_main, hv_main.csn++, UCT_UCCL_KIND_GET_DONE,
                 sizeof(*gd));
    hv_am(&hv_main, hv_main.csn++, AM_HOSTILE, ++hv_seq);
}

/* the victim's rkey for its buffer, as the exchange gave it */
static uint32_t victim_rkey(void)
{
    uint32_t rkey;

    memcpy(&rkey, uh.peer.rkey, sizeof(rkey));
    return rkey;
}

/* a GET request of length bytes of the victim's buffer, in the send area:
 * with UCT_UCCL_GET_F_SEND in flags answered by SENDs, else written into
 * our buffer with our key; its size */
static size_t get_req_pack(uint8_t flags, uint32_t rkey, uint64_t length,
                           uint64_t op_id)
{
    uct_uccl_get_req_t *r = (void*)hv.buf;

    memset(r, 0, sizeof(*r));
    r->type        = UCT_UCCL_KIND_GET_REQ;
    r->flags       = flags;
    r->rkey        = rkey;
    r->remote_addr = uh.peer.buf_addr;
    r->length      = length;
    r->op_id       = op_id;
    if (!(flags & UCT_UCCL_GET_F_SEND)) {
        r->reply_addr = (uintptr_t)hv.buf;
        r->reply_rkey = hv.mr->rkey;
    }
    return sizeof(*r);
}

/* GETs of the victim's whole buffer, far more than its queue takes; the
 * replies are never acknowledged. Its own conn, which the victim may
 * fail. */
static void case_get_huge(void)
{
    hv_conn_t c = {};
    unsigned i;

    if (!hv_connect(&c)) {
        uh_die("get_huge: the victim did not answer");
    }
    for (i = 0; i < 64; ++i) {
        hv_data_send(&c, c.csn++, UCT_UCCL_KIND_GET_REQ,
                     get_req_pack(0, victim_rkey(), uh.buf_size, i));
    }
}

/* more connection requests than the victim takes */
static void case_flood(void)
{
    uint8_t req[4096];
    hv_conn_t c;
    unsigned i;

    for (i = 0; i < 300; ++i) {
        memset(&c, 0, sizeof(c));
        c.uuid  = hv_rand64();
        c.token = hv_rand64() | 1;
        c.id    = i;
        hv_ctl_send(req, hv_conn_req(&c, req, hv.ud->qp_num));
    }
}

/* The victim connects to us and GETs SERVE_LEN bytes (victim_get). A GET
 * request that names a reply key gets garbage written around the reply
 * address (the victim's own memory, if it exposed any); otherwise a
 * GET_DATA of the wrong length, then the right one. */
static void hv_serve_reply(hv_conn_t *c, const uct_uccl_get_req_t *req)
{
    uct_uccl_get_data_t *d = (void*)hv.buf;
    unsigned i;

    memset(d, 0, sizeof(*d));
    d->type   = UCT_UCCL_KIND_GET_DATA;
    d->op_id  = req->op_id;
    d->length = SERVE_LEN - 1;                  /* not what it asked */
    memset(d + 1, 0xbd, SERVE_LEN);
    hv_data_send(c, c->csn++, UCT_UCCL_KIND_GET_DATA,
                 sizeof(*d) + d->length);
    d->length = SERVE_LEN;
    for (i = 0; i < SERVE_LEN; ++i) {
        ((uint8_t*)(d + 1))[i] = serve_val(i);
    }
    hv_data_send(c, c->csn++, UCT_UCCL_KIND_GET_DATA,
                 sizeof(*d) + d->length);
}

/* garbage written with the victim's reply key around its reply address */
static void hv_serve_attack(hv_conn_t *c, const uct_uccl_get_req_t *req)
{
    struct ibv_sge sge = { .addr = (uintptr_t)hv.buf, .length = 4096,
                           .lkey = hv.mr->lkey };
    struct ibv_send_wr wr = {
        .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
        .send_flags = IBV_SEND_SIGNALED,
        .wr.rdma = { .remote_addr = req->reply_addr - 2048,
                     .rkey = req->reply_rkey }
    }, *bad;

    memset(hv.buf, 0xa5, 4096);
    printf("hostile: the victim exposed key 0x%x: writing over %p\n",
           req->reply_rkey, (void*)(uintptr_t)wr.wr.rdma.remote_addr);
    if (ibv_post_send(c->qp[0], &wr, &bad) == 0) {
        hv_wait_send();
    }
}

static void case_serve(void)
{
    const uct_uccl_conn_pkt_t *vreq;
    uct_uccl_get_req_t req;
    hv_conn_t c = {};
    uint32_t csn;

    vreq = hv_wait_conn(UCT_UCCL_CTL_CONN_REQ, 0, 0, 10);
    if (vreq == NULL) {
        uh_die("serve: the victim did not connect");
    }
    hv_conn_qps(&c);
    hv_conn_rts(&c, vreq);
    hv_conn_post_recvs(&c);
    hv_conn_rep(&c, vreq);
    if (!hv_serve_wait(&c, UCT_UCCL_KIND_GET_REQ, &req, sizeof(req), &csn,
                       10)) {
        uh_die("serve: no GET request from the victim");
    }
    hv_serve_ack(&c, csn);
    if (req.reply_rkey != 0) {
        hv_serve_attack(&c, &req);
    } else {
        printf("hostile: the victim's GET exposes no memory\n");
        hv_serve_reply(&c, &req);
    }
}

/* a GET request taken and parked behind a missing one must not keep that
 * one out: a GET whose reply chunks fill the victim's MAX_QUEUED is sent
 * after a hole, then the small GET bcopy for the hole, again until its
 * reply comes. Its own conn. */
static void case_get_order(void)
{
    uct_uccl_get_data_t data;
    hv_conn_t c = {};
    uint32_t csn;
    unsigned i;

    if (!hv_connect(&c)) {
        uh_die("get_order: the victim did not answer");
    }
    hv_conn_post_recvs(&c);
    /* rkey 0: served last, refused then: no flood */
    hv_data_send(&c, uct_uccl_seq_add(c.csn, 1), UCT_UCCL_KIND_GET_REQ,
                 get_req_pack(0, 0, 1ul << 30, 1));
    for (i = 0; i < 50; ++i) {
        hv_data_send(&c, c.csn, UCT_UCCL_KIND_GET_REQ,
                     get_req_pack(UCT_UCCL_GET_F_SEND, victim_rkey(), 64, 2));
        if (hv_serve_wait(&c, UCT_UCCL_KIND_GET_DATA, &data, sizeof(data),
                          &csn, 0.1) && (data.op_id == 2)) {
            printf("hostile: the GET in the hole was served (status %d)\n",
                   data.status);
            return;
        }
    }
    uh_die("get_order: the victim refused the GET its parked GET waits for");
}

/* serve comes first and always runs: the victim's GET waits for it */
static const struct {
    const char *name;
    void       (*run)(void);
} cases[] = {
    { "serve", case_serve },
    { "am_id", case_am_id }, { "garbage", case_garbage },
    { "hold", case_hold }, { "forge", case_forge },
    { "piggy", case_piggy },
    { "get_done", case_get_done }, { "get_huge", case_get_huge },
    { "get_order", case_get_order },
    { "flood", case_flood }
};

void hostile(const char *which)
{
    uint32_t result[4] = { 0 };
    unsigned i;

    hv.rs = uh.seed;
    hv_open();
    hv_fill_me();
    uh_exchange_info();
    hv_open_peer();
    if (!hv_connect(&hv_main)) {
        uh_die("the victim did not answer the hostile's first conn");
    }
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        if ((i > 0) && (which != NULL) && !strstr(which, cases[i].name)) {
            continue;
        }
        printf("hostile: %s\n", cases[i].name);
        fflush(stdout);
        cases[i].run();
        usleep(200000);      /* the victim's honest traffic goes on */
    }
    usleep(500000);
    uh_xfer(result, sizeof(result[0]), 1);
    uh_xfer(result, sizeof(result), 0);
    printf("hostile: the victim made %u honest rounds (%u bad), took %u of "
           "our AMs%s\n", result[0], result[1], result[2],
           (result[3] & 1) ? ", OUT OF ORDER" : ", in order");
    printf("hostile: the victim's GET from us %s\n",
           (result[3] & 2) ? "FAILED" : "completed with our bytes");
    if ((result[0] < LEGIT_MIN) || result[1] || result[3]) {
        uh_die("the victim's honest traffic suffered");
    }
}
/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uct_hostile's peer: raw verbs (no UCX) that speak uccl's wire format
 * (uccl_wire.h) as the cases choose: a control QP, conns of UC QPs to the
 * victim, sends one at a time, waiting for the victim's packets (see
 * uct_hostile.c).
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include "uct_hostile.h"

#include <uct/uccl/proto/uccl_seq.h>

#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HV_BUF         (1u << 20)
#define HV_RX_DEPTH    64
#define HV_GRH         40         /* a UD receive starts with a GRH */
#define HV_RX_SIZE     (4096 + HV_GRH)
#define HV_PSN         0x123
#define HV_SERVE_RX    (HV_BUF / 4)   /* the serve conn's receive buffers */
#define HV_SERVE_SLOT  256
#define HV_SERVE_PER_PATH 4

hv_t hv;

uint64_t hv_rand64(void)
{
    return ((uint64_t)uh_rnd(&hv.rs, 1u << 30) << 34) ^
           ((uint64_t)uh_rnd(&hv.rs, 1u << 30) << 4) ^ uh_rnd(&hv.rs, 16);
}

static void hv_qp_to(struct ibv_qp *qp, int state, int mask,
                     struct ibv_qp_attr *attr)
{
    attr->qp_state = state;
    if (ibv_modify_qp(qp, attr, IBV_QP_STATE | mask)) {
        uh_die("hostile: QP 0x%x to state %d: %m", qp->qp_num, state);
    }
}

/* our UD QP's receive buffer i (HV_RX_SIZE bytes) */
static uint8_t *hv_ud_rx(uint64_t i)
{
    return hv.buf + HV_BUF / 2 + i * HV_RX_SIZE;
}

/* a conn's receive buffer i (HV_SERVE_SLOT bytes) */
static uint8_t *hv_conn_rx(uint64_t i)
{
    return hv.buf + HV_SERVE_RX + i * HV_SERVE_SLOT;
}

/* len bytes at addr (in hv.buf) posted to qp as receive wr_id; what
 * ibv_post_recv returned */
static int hv_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr,
                        uint32_t len)
{
    struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
                           .lkey = hv.mr->lkey };
    struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
                              .num_sge = 1 }, *bad;

    return ibv_post_recv(qp, &wr, &bad);
}

static void hv_post_recvs(void)
{
    unsigned i;

    for (i = 0; i < HV_RX_DEPTH; ++i) {
        if (hv_post_recv(hv.ud, i, hv_ud_rx(i), HV_RX_SIZE)) {
            uh_die("hostile: post recv");
        }
    }
}

void hv_open(void)
{
    struct ibv_qp_init_attr init = {
        .qp_type = IBV_QPT_UD,
        .cap     = { .max_send_wr = 64, .max_recv_wr = HV_RX_DEPTH,
                     .max_send_sge = 1, .max_recv_sge = 1 }
    };
    struct ibv_qp_attr attr = { .port_num = 1, .qkey = UCT_UCCL_WIRE_QKEY };
    struct ibv_device **devs;
    struct ibv_port_attr port;
    char name[64];
    int i, num;

    snprintf(name, sizeof(name), "%s", uh.dev);
    *strchrnul(name, ':') = '\0';
    devs = ibv_get_device_list(&num);
    for (i = 0; (devs != NULL) && (i < num); ++i) {
        if (!strcmp(ibv_get_device_name(devs[i]), name)) {
            hv.ctx = ibv_open_device(devs[i]);
        }
    }
    ibv_free_device_list(devs);
    if ((hv.ctx == NULL) || ibv_query_port(hv.ctx, 1, &port) ||
        ibv_query_gid(hv.ctx, 1, 0, &hv.gid)) {
        uh_die("hostile: cannot open %s", name);
    }
    hv.lid = port.lid;
    hv.pd  = ibv_alloc_pd(hv.ctx);
    hv.cq  = ibv_create_cq(hv.ctx, 4096, NULL, NULL, 0);
    hv.buf = calloc(1, HV_BUF);
    hv.mr  = ibv_reg_mr(hv.pd, hv.buf, HV_BUF, IBV_ACCESS_LOCAL_WRITE |
                        IBV_ACCESS_REMOTE_WRITE);
    init.send_cq = init.recv_cq = hv.cq;
    hv.ud = ibv_create_qp(hv.pd, &init);
    if (!hv.pd || !hv.cq || !hv.mr || !hv.ud) {
        uh_die("hostile: cannot create verbs resources");
    }
    hv_qp_to(hv.ud, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT |
             IBV_QP_QKEY, &attr);
    hv_qp_to(hv.ud, IBV_QPS_RTR, 0, &attr);
    attr.sq_psn = 0;
    hv_qp_to(hv.ud, IBV_QPS_RTS, IBV_QP_SQ_PSN, &attr);
    hv_post_recvs();
}

/* the victim's address, after the exchange */
void hv_open_peer(void)
{
    struct ibv_ah_attr ah = { .port_num = 1 };

    memcpy(&hv.peer_dev, uh.peer.dev, sizeof(hv.peer_dev));
    memcpy(&hv.peer_ctl_qpn, uh.peer.iface, sizeof(hv.peer_ctl_qpn));
    ah.dlid = hv.peer_dev.lid;
    if (hv.peer_dev.is_global) {
        ah.is_global = 1;
        memcpy(ah.grh.dgid.raw, hv.peer_dev.gid, 16);
        ah.grh.hop_limit = 64;
    }
    hv.ah = ibv_create_ah(hv.pd, &ah);
    if (hv.ah == NULL) {
        uh_die("hostile: no address handle to the victim");
    }
}

/* wait for the send just posted (one at a time keeps it simple), and
 * throw away what the victim sent us meanwhile */
void hv_wait_send(void)
{
    struct ibv_wc wc;
    double deadline = uh_now() + 10;

    for (;;) {
        if (ibv_poll_cq(hv.cq, 1, &wc) > 0) {
            if (wc.opcode & IBV_WC_RECV) {
                if (wc.qp_num == hv.ud->qp_num) {   /* repost it */
                    (void)hv_post_recv(hv.ud, wc.wr_id, hv_ud_rx(wc.wr_id),
                                       HV_RX_SIZE);
                } else {
                    hv.stash   = wc;
                    hv.stashed = 1;
                }
                continue;
            }
            if (wc.status != IBV_WC_SUCCESS) {
                uh_die("hostile: send failed: %s",
                       ibv_wc_status_str(wc.status));
            }
            return;
        }
        if (uh_now() > deadline) {
            uh_die("hostile: no send completion");
        }
    }
}

/* a control packet from our UD QP to the victim's control QP */
void hv_ctl_send(const void *pkt, size_t len)
{
    struct ibv_sge sge = { .addr = (uintptr_t)hv.buf, .length = len,
                           .lkey = hv.mr->lkey };
    struct ibv_send_wr wr = {
        .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
        .send_flags = IBV_SEND_SIGNALED,
        .wr.ud = { .ah = hv.ah, .remote_qpn = hv.peer_ctl_qpn,
                   .remote_qkey = UCT_UCCL_WIRE_QKEY }
    }, *bad;

    memcpy(hv.buf, pkt, len);
    if (ibv_post_send(hv.ud, &wr, &bad)) {
        uh_die("hostile: ctl post");
    }
    hv_wait_send();
}

size_t hv_conn_req(const hv_conn_t *c, void *buf, uint32_t ctl_qpn)
{
    uct_uccl_conn_pkt_t *p = buf;
    unsigned i;

    memset(p, 0, uct_uccl_wire_conn_size(HV_PATHS));
    uct_uccl_wire_hdr_init(&p->hdr, UCT_UCCL_CTL_CONN_REQ,
                           uct_uccl_wire_conn_size(HV_PATHS));
    p->magic       = UCT_UCCL_WIRE_MAGIC;
    p->iface_uuid  = c->uuid;
    p->token       = c->token;
    p->src_conn_id = c->id;
    p->dst_conn_id = UCT_UCCL_CONN_ID_NONE;
    p->mode        = UCT_UCCL_MODE_UC;
    p->num_paths   = HV_PATHS;
    p->mtu         = 4096;
    p->lid         = hv.lid;
    p->ctl_qpn     = ctl_qpn;
    p->chunk_size  = 65536;
    p->rx_buf_size = 65536 + 64;
    p->sack_bits   = 256;
    p->init_csn    = c->csn;
    p->psn         = HV_PSN;
    memcpy(p->gid, hv.gid.raw, 16);
    for (i = 0; i < HV_PATHS; ++i) {
        p->qpn[i] = (c->qp[i] != NULL) ? c->qp[i]->qp_num : 1;
    }
    return p->hdr.length;
}

/* A conn packet of `type` for conn id `id` (echoing `token` in a REP; a
 * REQ: any) from the victim within `secs`, or NULL; a copy */
const uct_uccl_conn_pkt_t *hv_wait_conn(uint8_t type, uint32_t id,
                                        uint64_t token, double secs)
{
    static uint8_t copy[4096];
    const uct_uccl_conn_pkt_t *p;
    double deadline = uh_now() + secs;
    struct ibv_wc wc;
    int match;

    while (uh_now() < deadline) {
        if ((ibv_poll_cq(hv.cq, 1, &wc) <= 0) ||
            !(wc.opcode & IBV_WC_RECV) || (wc.qp_num != hv.ud->qp_num)) {
            continue;
        }
        p     = (const void*)(hv_ud_rx(wc.wr_id) + HV_GRH);
        match = (wc.status == IBV_WC_SUCCESS) && (wc.byte_len > HV_GRH) &&
                (uct_uccl_wire_ctl_check(p, wc.byte_len - HV_GRH) ==
                 UCS_OK) &&
                (p->hdr.type == type) &&
                ((type == UCT_UCCL_CTL_CONN_REQ) ||
                 ((p->dst_conn_id == id) && (p->echo_token == token)));
        if (match) {
            memcpy(copy, p, wc.byte_len - HV_GRH);
        }
        (void)hv_post_recv(hv.ud, wc.wr_id, hv_ud_rx(wc.wr_id), HV_RX_SIZE);
        if (match) {
            return (const void*)copy;
        }
    }
    return NULL;
}

static const uct_uccl_conn_pkt_t *hv_wait_rep(const hv_conn_t *c)
{
    return hv_wait_conn(UCT_UCCL_CTL_CONN_REP, c->id, c->token, 1);
}

/* conn c's UC QPs, in INIT, with a fresh id, token and first CSN */
void hv_conn_qps(hv_conn_t *c)
{
    struct ibv_qp_init_attr init = {
        .qp_type = IBV_QPT_UC,
        .cap     = { .max_send_wr = 256, .max_recv_wr = 16,
                     .max_send_sge = 2, .max_recv_sge = 1 }
    };
    struct ibv_qp_attr attr;
    unsigned i;

    init.send_cq = init.recv_cq = hv.cq;
    c->uuid  = hv_rand64();
    c->token = hv_rand64() | 1;
    c->id    = uh_rnd(&hv.rs, 1000);
    c->csn   = uh_rnd(&hv.rs, UCT_UCCL_SEQ_MASK);
    for (i = 0; i < HV_PATHS; ++i) {
        c->qp[i] = ibv_create_qp(hv.pd, &init);
        memset(&attr, 0, sizeof(attr));
        attr.port_num        = 1;
        attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        hv_qp_to(c->qp[i], IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                 IBV_QP_ACCESS_FLAGS, &attr);
    }
}

/* conn c's QPs to the victim's, as its conn packet p names them */
void hv_conn_rts(hv_conn_t *c, const uct_uccl_conn_pkt_t *p)
{
    struct ibv_qp_attr attr;
    unsigned i;

    c->peer_id    = p->src_conn_id;
    c->peer_token = p->token;
    c->num_paths  = (p->num_paths < HV_PATHS) ? p->num_paths : HV_PATHS;
    for (i = 0; i < c->num_paths; ++i) {
        memset(&attr, 0, sizeof(attr));
        attr.path_mtu         = IBV_MTU_4096;
        attr.dest_qp_num      = p->qpn[i];
        attr.rq_psn           = p->psn;
        attr.ah_attr.dlid     = hv.peer_dev.lid;
        attr.ah_attr.port_num = 1;
        hv_qp_to(c->qp[i], IBV_QPS_RTR, IBV_QP_AV | IBV_QP_PATH_MTU |
                 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN, &attr);
        attr.sq_psn = HV_PSN;
        hv_qp_to(c->qp[i], IBV_QPS_RTS, IBV_QP_SQ_PSN, &attr);
    }
}

/* a uccl conn to the victim, as its initiator; 0 if it did not answer */
int hv_connect(hv_conn_t *c)
{
    const uct_uccl_conn_pkt_t *rep;
    uint8_t req[4096];

    hv_conn_qps(c);
    hv_ctl_send(req, hv_conn_req(c, req, hv.ud->qp_num));
    rep = hv_wait_rep(c);
    if (rep == NULL) {
        return 0;
    }
    hv_conn_rts(c, rep);
    return 1;
}

/* a SEND_WITH_IMM of len bytes from the send area on path 0 */
void hv_data_send(hv_conn_t *c, uint32_t csn, uct_uccl_kind_t kind,
                  size_t len)
{
    struct ibv_sge sge = { .addr = (uintptr_t)hv.buf, .length = len,
                           .lkey = hv.mr->lkey };
    struct ibv_send_wr wr = {
        .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
        .send_flags = IBV_SEND_SIGNALED,
        .imm_data = uct_uccl_imm_to_wire(uct_uccl_imm_pack(csn, kind, 1))
    }, *bad;

    if (ibv_post_send(c->qp[0], &wr, &bad)) {
        uh_die("hostile: data post");
    }
    hv_wait_send();
}

/* the header of an AM to handler id with seq as its payload, in the send
 * area; the AM's length */
static size_t hv_am_pack(uint8_t id, uint64_t seq)
{
    uct_uccl_am_hdr_t *am = (void*)hv.buf;

    memset(am, 0, sizeof(*am));
    am->type   = UCT_UCCL_KIND_AM;
    am->am_id  = id;
    am->length = sizeof(seq);
    memcpy(am + 1, &seq, sizeof(seq));
    return sizeof(*am) + sizeof(seq);
}

void hv_am(hv_conn_t *c, uint32_t csn, uint8_t id, uint64_t seq)
{
    hv_data_send(c, csn, UCT_UCCL_KIND_AM, hv_am_pack(id, seq));
}

/* the ACK record goes after the payload (UCT_UCCL_AM_F_ACK) */
void hv_am_ack(hv_conn_t *c, uint32_t csn, uint64_t seq,
               const uct_uccl_ack_t *ack)
{
    uct_uccl_am_hdr_t *am = (void*)hv.buf;
    size_t len            = hv_am_pack(AM_HOSTILE, seq);

    am->flags = UCT_UCCL_AM_F_ACK;
    memcpy(uct_uccl_wire_am_ack_ptr(am), ack, sizeof(*ack));
    hv_data_send(c, csn, UCT_UCCL_KIND_AM, len + sizeof(*ack));
}

/* receive buffers (HV_SERVE_SLOT bytes each) for the SENDs of the victim
 * on conn c: HV_SERVE_PER_PATH per path */
void hv_conn_post_recvs(hv_conn_t *c)
{
    unsigned i;

    for (i = 0; i < c->num_paths * HV_SERVE_PER_PATH; ++i) {
        (void)hv_post_recv(c->qp[i / HV_SERVE_PER_PATH], i, hv_conn_rx(i),
                           HV_SERVE_SLOT);
    }
}

/* a SEND of `kind` from the victim on conn c within secs: its first len
 * bytes copied to msg, its CSN; the buffer posted again */
int hv_serve_wait(hv_conn_t *c, uct_uccl_kind_t kind, void *msg,
                  size_t len, uint32_t *csn, double secs)
{
    double deadline = uh_now() + secs;
    struct ibv_wc wc;
    uint32_t imm;
    unsigned i;
    int found;

    while (uh_now() < deadline) {
        if (hv.stashed) {
            wc         = hv.stash;
            hv.stashed = 0;
        } else if (ibv_poll_cq(hv.cq, 1, &wc) <= 0) {
            continue;
        }
        if ((wc.opcode != IBV_WC_RECV) || (wc.status != IBV_WC_SUCCESS) ||
            !(wc.wc_flags & IBV_WC_WITH_IMM)) {
            continue;
        }
        imm = uct_uccl_imm_from_wire(wc.imm_data);
        for (i = 0; i < c->num_paths; ++i) {
            if (wc.qp_num != c->qp[i]->qp_num) {
                continue;
            }
            found = (uct_uccl_imm_kind(imm) == kind) && (wc.byte_len >= len);
            if (found) {
                memcpy(msg, hv_conn_rx(wc.wr_id), len);
                *csn = uct_uccl_imm_csn(imm);
            }
            (void)hv_post_recv(c->qp[i], wc.wr_id, hv_conn_rx(wc.wr_id),
                               HV_SERVE_SLOT);
            if (found) {
                return 1;
            }
        }
    }
    return 0;
}

/* our REP to the victim's REQ vreq, for conn c */
void hv_conn_rep(const hv_conn_t *c, const uct_uccl_conn_pkt_t *vreq)
{
    uint8_t buf[4096];
    uct_uccl_conn_pkt_t *p = (void*)buf;
    size_t len             = uct_uccl_wire_conn_size(c->num_paths);

    (void)hv_conn_req(c, buf, hv.ud->qp_num);
    uct_uccl_wire_hdr_init(&p->hdr, UCT_UCCL_CTL_CONN_REP, len);
    p->num_paths   = c->num_paths;
    p->dst_conn_id = vreq->src_conn_id;
    p->echo_token  = vreq->token;
    hv_ctl_send(buf, len);
}

/* an ACK of everything up to and with csn, on conn c */
void hv_serve_ack(const hv_conn_t *c, uint32_t csn)
{
    uint64_t pkt[8];
    uct_uccl_ack_t *a = (void*)pkt;

    memset(pkt, 0, sizeof(pkt));
    uct_uccl_wire_hdr_init(&a->hdr, UCT_UCCL_CTL_ACK,
                           uct_uccl_wire_ack_size(0));
    a->dst_conn_id = c->peer_id;
    a->token       = c->peer_token;
    a->cum_csn     = uct_uccl_seq_add(csn, 1);
    a->echo_csn    = csn;
    hv_ctl_send(a, a->hdr.length);
}

/* our address as uccl's would be (device, control QPN, packed rkey of
 * the buffer) for the victim's ep to us */
void hv_fill_me(void)
{
    uct_uccl_device_addr_t dev = { .lid = hv.lid };
    uct_uccl_packed_rkey_t rkey = { .rkey  = hv.mr->rkey,
                                    .magic = UCT_UCCL_RKEY_MAGIC };

    memcpy(dev.gid, hv.gid.raw, sizeof(dev.gid));
    memcpy(uh.raw_me.dev, &dev, sizeof(dev));
    uh.raw_me.dev_len = sizeof(dev);
    memcpy(uh.raw_me.iface, &hv.ud->qp_num, sizeof(uint32_t));
    uh.raw_me.iface_len = sizeof(uint32_t);
    memcpy(uh.raw_me.rkey, &rkey, sizeof(rkey));
    uh.raw_me.rkey_len = sizeof(rkey);
    uh.raw_me.buf_addr = (uintptr_t)hv.buf;
}
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
 * the wire format, uccl_wire.h) and then, per case (-c, default all):
 *
 *   am_id    an AM whose id is beyond UCX's handler table
 *   garbage  SENDs whose headers do not match their immediate or length
 *   hold     a skipped CSN and then more AMs than the victim parks
 *   forge    ACK, DISCONNECT, KEEPALIVE and REP for the victim's conns,
 *            with made-up tokens, and a request naming another QP
 *   piggy    AMs carrying ACK records for conns that are not the
 *            hostile's, with made-up tokens, and one that is no ACK
 *   get_done a GET_DONE with a bad status and one for no GET
 *   get_huge many GETs of the victim's whole buffer, never acknowledged
 *   flood    more connection requests than the victim takes
 *
 * The victim's counters (UCX_UCCL_STATS_DUMP) show what it dropped; the
 * script checks them (verify_pair.sh, UCCL_EXPECT_COUNTERS).
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include "uct_harness.h"

#include <uct/uccl/proto/uccl_seq.h>
#include <uct/uccl/proto/uccl_wire.h>
#include <infiniband/verbs.h>

#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HV_PATHS       4
#define HV_BUF         (1u << 20)
#define HV_RX_DEPTH    64
#define HV_RX_SIZE     (4096 + 40)
#define HV_PSN         0x123
#define HV_SERVE_RX    (HV_BUF / 4)   /* the serve conn's receive buffers */
#define HV_SERVE_SLOT  256
#define AM_LEGIT       1          /* iface A -> B, checks the PUT before */
#define AM_HOSTILE     3          /* from the hostile, counted */
#define LEGIT_SLOT     (64u << 10)
#define LEGIT_MIN      50         /* honest rounds while under attack */



/* ---------------------------------------------------------------------- */
/* The victim                                                             */
/* ---------------------------------------------------------------------- */

static struct {
    uct_iface_h      iface_b;
    uct_iface_attr_t attr_b;
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
    uint8_t dev[UH_ADDR_MAX], iface[UH_ADDR_MAX];
    uct_ep_params_t params = {
        .field_mask = UCT_EP_PARAM_FIELD_IFACE |
                      UCT_EP_PARAM_FIELD_DEV_ADDR |
                      UCT_EP_PARAM_FIELD_IFACE_ADDR,
        .iface      = uh.iface,
        .dev_addr   = (void*)dev,
        .iface_addr = (void*)iface
    };

    uh_iface_open(&v.iface_b, &v.attr_b);
    uh_check(uct_iface_set_am_handler(v.iface_b, AM_LEGIT, legit_am, NULL,
                                      0), "am handler");
    uh_check(uct_iface_get_device_address(v.iface_b, (void*)dev), "dev");
    uh_check(uct_iface_get_address(v.iface_b, (void*)iface), "addr");
    uh_check(uct_ep_create(&params, &v.ep_ab), "ep A->B");
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
#define SERVE_LEN    64
#define SERVE_OFF    256
static uint8_t serve_val(unsigned i)
{
    return (uint8_t)(i * 3 + 1);
}

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

static void victim(void)
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
    uct_iface_close(v.iface_b);
    uct_rkey_release(uh.component, &v.rkey);
    if ((v.rounds < LEGIT_MIN) || v.legit_bad || v.hostile_order_bad ||
        !victim_get_ok()) {
        uh_die("honest traffic suffered: %u rounds, %u bad, hostile AMs "
               "%s, GET from the hostile %s", v.rounds, v.legit_bad,
               v.hostile_order_bad ? "out of order" : "in order",
               victim_get_ok() ? "right" : "wrong");
    }
}


/* ---------------------------------------------------------------------- */
/* The hostile peer: raw verbs                                            */
/* ---------------------------------------------------------------------- */

typedef struct {
    struct ibv_context *ctx;
    struct ibv_pd      *pd;
    struct ibv_cq      *cq;
    struct ibv_qp      *ud;
    struct ibv_ah      *ah;
    struct ibv_mr      *mr;
    uint8_t            *buf;      /* HV_BUF: send area, then rx buffers */
    uint16_t           lid;
    union ibv_gid      gid;
    uct_uccl_device_addr_t peer_dev;
    uint32_t           peer_ctl_qpn;
    unsigned           rs;        /* random state */
    struct ibv_wc      stash;     /* a data QP's receive seen while */
    int                stashed;   /* waiting for a send */
} hv_t;

/* one uccl conn of the hostile to the victim */
typedef struct {
    struct ibv_qp *qp[HV_PATHS];
    unsigned      num_paths;
    uint64_t      uuid, token, peer_token;
    uint32_t      id, peer_id, csn;
} hv_conn_t;

static hv_t hv;

static uint64_t hv_rand64(void)
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

static void hv_post_recvs(void)
{
    struct ibv_recv_wr wr, *bad;
    struct ibv_sge sge;
    unsigned i;

    for (i = 0; i < HV_RX_DEPTH; ++i) {
        sge.addr   = (uintptr_t)hv.buf + HV_BUF / 2 + i * HV_RX_SIZE;
        sge.length = HV_RX_SIZE;
        sge.lkey   = hv.mr->lkey;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id   = i;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        if (ibv_post_recv(hv.ud, &wr, &bad)) {
            uh_die("hostile: post recv");
        }
    }
}

static void hv_open(void)
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
static void hv_open_peer(void)
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
static void hv_wait_send(void)
{
    struct ibv_recv_wr rwr, *rbad;
    struct ibv_sge sge;
    struct ibv_wc wc;
    double deadline = uh_now() + 10;

    for (;;) {
        if (ibv_poll_cq(hv.cq, 1, &wc) > 0) {
            if (wc.opcode & IBV_WC_RECV) {
                if (wc.qp_num == hv.ud->qp_num) {   /* repost it */
                    sge.addr   = (uintptr_t)hv.buf + HV_BUF / 2 +
                                 wc.wr_id * HV_RX_SIZE;
                    sge.length = HV_RX_SIZE;
                    sge.lkey   = hv.mr->lkey;
                    memset(&rwr, 0, sizeof(rwr));
                    rwr.wr_id   = wc.wr_id;
                    rwr.sg_list = &sge;
                    rwr.num_sge = 1;
                    (void)ibv_post_recv(hv.ud, &rwr, &rbad);
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
static void hv_ctl_send(const void *pkt, size_t len)
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

static size_t hv_conn_req(const hv_conn_t *c, void *buf, uint32_t ctl_qpn)
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
static const uct_uccl_conn_pkt_t *hv_wait_conn(uint8_t type, uint32_t id,
                                               uint64_t token, double secs)
{
    static uint8_t copy[4096];
    const uct_uccl_conn_pkt_t *p;
    double deadline = uh_now() + secs;
    struct ibv_recv_wr rwr, *rbad;
    struct ibv_sge sge;
    struct ibv_wc wc;
    uint8_t *rx;
    int match;

    while (uh_now() < deadline) {
        if ((ibv_poll_cq(hv.cq, 1, &wc) <= 0) ||
            !(wc.opcode & IBV_WC_RECV) || (wc.qp_num != hv.ud->qp_num)) {
            continue;
        }
        rx  = hv.buf + HV_BUF / 2 + wc.wr_id * HV_RX_SIZE;
        p   = (const void*)(rx + 40);
        sge = (struct ibv_sge){ .addr = (uintptr_t)rx, .length = HV_RX_SIZE,
                                .lkey = hv.mr->lkey };
        memset(&rwr, 0, sizeof(rwr));
        rwr.wr_id   = wc.wr_id;
        rwr.sg_list = &sge;
        rwr.num_sge = 1;
        match = (wc.status == IBV_WC_SUCCESS) && (wc.byte_len > 40) &&
                (uct_uccl_wire_ctl_check(p, wc.byte_len - 40) == UCS_OK) &&
                (p->hdr.type == type) &&
                ((type == UCT_UCCL_CTL_CONN_REQ) ||
                 ((p->dst_conn_id == id) && (p->echo_token == token)));
        if (match) {
            memcpy(copy, p, wc.byte_len - 40);
        }
        (void)ibv_post_recv(hv.ud, &rwr, &rbad);
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
static void hv_conn_qps(hv_conn_t *c)
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
static void hv_conn_rts(hv_conn_t *c, const uct_uccl_conn_pkt_t *p)
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
static int hv_connect(hv_conn_t *c)
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
static void hv_data_send(hv_conn_t *c, uint32_t csn, uct_uccl_kind_t kind,
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

/* an AM with seq as its payload, to the hostile handler unless id says */
static void hv_am(hv_conn_t *c, uint32_t csn, uint8_t id, uint64_t seq)
{
    uct_uccl_am_hdr_t *am = (void*)hv.buf;

    memset(am, 0, sizeof(*am));
    am->type   = UCT_UCCL_KIND_AM;
    am->am_id  = id;
    am->length = sizeof(seq);
    memcpy(am + 1, &seq, sizeof(seq));
    hv_data_send(c, csn, UCT_UCCL_KIND_AM, sizeof(*am) + sizeof(seq));
}

/* the same, carrying `ack` after the payload (UCT_UCCL_AM_F_ACK) */
static void hv_am_ack(hv_conn_t *c, uint32_t csn, uint64_t seq,
                      const uct_uccl_ack_t *ack)
{
    uct_uccl_am_hdr_t *am = (void*)hv.buf;

    memset(am, 0, sizeof(*am));
    am->type   = UCT_UCCL_KIND_AM;
    am->am_id  = AM_HOSTILE;
    am->flags  = UCT_UCCL_AM_F_ACK;
    am->length = sizeof(seq);
    memcpy(am + 1, &seq, sizeof(seq));
    memcpy(uct_uccl_wire_am_ack_ptr(am), ack, sizeof(*ack));
    hv_data_send(c, csn, UCT_UCCL_KIND_AM,
                 sizeof(*am) + sizeof(seq) + sizeof(*ack));
}


/* ---------------------------------------------------------------------- */
/* The cases                                                              */
/* ---------------------------------------------------------------------- */

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

/* GETs of the victim's whole buffer, far more than its queue takes; the
 * replies are never acknowledged. Its own conn, which the victim may
 * fail. */
static void case_get_huge(void)
{
    uct_uccl_get_req_t *r = (void*)hv.buf;
    hv_conn_t c = {};
    uint32_t rkey;
    unsigned i;

    if (!hv_connect(&c)) {
        uh_die("get_huge: the victim did not answer");
    }
    memcpy(&rkey, uh.peer.rkey, sizeof(rkey));
    for (i = 0; i < 64; ++i) {
        memset(r, 0, sizeof(*r));
        r->type        = UCT_UCCL_KIND_GET_REQ;
        r->rkey        = rkey;
        r->remote_addr = uh.peer.buf_addr;
        r->length      = uh.buf_size;
        r->reply_addr  = (uintptr_t)hv.buf;
        r->reply_rkey  = hv.mr->rkey;
        r->op_id       = i;
        hv_data_send(&c, c.csn++, UCT_UCCL_KIND_GET_REQ, sizeof(*r));
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

/* receive buffers (HV_SERVE_SLOT bytes each) for the SENDs of the victim
 * on conn c: 4 per path */
static void hv_conn_post_recvs(hv_conn_t *c)
{
    struct ibv_recv_wr wr, *bad;
    struct ibv_sge sge;
    unsigned i;

    for (i = 0; i < c->num_paths * 4; ++i) {
        sge = (struct ibv_sge){ .addr = (uintptr_t)hv.buf + HV_SERVE_RX +
                                        i * HV_SERVE_SLOT,
                                .length = HV_SERVE_SLOT,
                                .lkey = hv.mr->lkey };
        memset(&wr, 0, sizeof(wr));
        wr.wr_id   = i;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        (void)ibv_post_recv(c->qp[i / 4], &wr, &bad);
    }
}

/* a SEND of `kind` from the victim on conn c within secs: its first len
 * bytes copied to msg, its CSN; the buffer posted again */
static int hv_serve_wait(hv_conn_t *c, uct_uccl_kind_t kind, void *msg,
                         size_t len, uint32_t *csn, double secs)
{
    double deadline = uh_now() + secs;
    struct ibv_recv_wr wr, *bad;
    struct ibv_sge sge;
    struct ibv_wc wc;
    uint32_t imm;
    unsigned i;

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
            sge = (struct ibv_sge){ .addr = (uintptr_t)hv.buf + HV_SERVE_RX +
                                            wc.wr_id * HV_SERVE_SLOT,
                                    .length = HV_SERVE_SLOT,
                                    .lkey = hv.mr->lkey };
            if ((uct_uccl_imm_kind(imm) == kind) && (wc.byte_len >= len)) {
                memcpy(msg, (void*)(uintptr_t)sge.addr, len);
                *csn = uct_uccl_imm_csn(imm);
            }
            wr = (struct ibv_recv_wr){ .wr_id = wc.wr_id, .sg_list = &sge,
                                       .num_sge = 1 };
            (void)ibv_post_recv(c->qp[i], &wr, &bad);
            if ((uct_uccl_imm_kind(imm) == kind) && (wc.byte_len >= len)) {
                return 1;
            }
        }
    }
    return 0;
}

/* our REP to the victim's REQ vreq, for conn c */
static void hv_conn_rep(const hv_conn_t *c, const uct_uccl_conn_pkt_t *vreq)
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
static void hv_serve_ack(const hv_conn_t *c, uint32_t csn)
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
    uct_uccl_get_req_t *r = (void*)hv.buf;
    uct_uccl_get_data_t data;
    hv_conn_t c = {};
    uint32_t rkey, csn;
    unsigned i;

    if (!hv_connect(&c)) {
        uh_die("get_order: the victim did not answer");
    }
    hv_conn_post_recvs(&c);
    memset(r, 0, sizeof(*r));
    r->type        = UCT_UCCL_KIND_GET_REQ;
    r->rkey        = 0;          /* served last, refused then: no flood */
    r->remote_addr = uh.peer.buf_addr;
    r->length      = 1ul << 30;
    r->reply_addr  = (uintptr_t)hv.buf;
    r->reply_rkey  = hv.mr->rkey;
    r->op_id       = 1;
    hv_data_send(&c, uct_uccl_seq_add(c.csn, 1), UCT_UCCL_KIND_GET_REQ,
                 sizeof(*r));
    memcpy(&rkey, uh.peer.rkey, sizeof(rkey));
    for (i = 0; i < 50; ++i) {
        memset(r, 0, sizeof(*r));
        r->type        = UCT_UCCL_KIND_GET_REQ;
        r->flags       = UCT_UCCL_GET_F_SEND;
        r->rkey        = rkey;
        r->remote_addr = uh.peer.buf_addr;
        r->length      = 64;
        r->op_id       = 2;
        hv_data_send(&c, c.csn, UCT_UCCL_KIND_GET_REQ, sizeof(*r));
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

/* our address as uccl's would be (device, control QPN, packed rkey of
 * the buffer) for the victim's ep to us */
static void hv_fill_me(void)
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

static void hostile(const char *which)
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

/*
 * sv_smoke: a quick two-process check of softverbs (not a CTest test; the
 * test suite lives in test/softverbs).  Run with libsoftverbs preloaded:
 *   LD_PRELOAD=.libs/libsoftverbs.so ./sv_smoke
 * The parent is the requester, the forked child the responder; they swap
 * addresses over pipes.  Prints every check; exits non-zero on a failure.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUF_SIZE (1 << 20)
#define CHECK(_c, ...) do { if (!(_c)) { \
    fprintf(stderr, "[%s] FAIL %s:%d: ", role, __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } \
    else if (verbose) { printf("[%s] ok: ", role); printf(__VA_ARGS__); \
    putchar('\n'); } } while (0)

enum { Q_RC, Q_UC, Q_UD, Q_RC2, Q_RC3, Q_NUM };

typedef struct info {
    uint16_t lid;
    uint32_t qpn[Q_NUM];
    uint64_t addr;
    uint32_t rkey;
} info_t;

static const char *role = "?";
static int verbose = 1;
static int rfd, wfd;

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *scq, *rcq;
static struct ibv_cq_ex *scq_ex;
static struct ibv_comp_channel *chan;
static struct ibv_qp *qp[Q_NUM];
static struct ibv_srq *srq;
static struct ibv_mr *mr;
static char *buf;
static info_t me, peer;

static void xsend(const void *p, size_t n)
{
    if (write(wfd, p, n) != (ssize_t)n) {
        perror("write");
        exit(1);
    }
}

static void xrecv(void *p, size_t n)
{
    if (read(rfd, p, n) != (ssize_t)n) {
        fprintf(stderr, "[%s] peer gone\n", role);
        exit(1);
    }
}

static void sync_peer(int tag)
{
    int t;

    xsend(&tag, sizeof(tag));
    xrecv(&t, sizeof(t));
    CHECK(t == tag, "sync %d (got %d)", tag, t);
}

static void setup(int use_ex)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_port_attr pa;
    struct ibv_qp_attr a;
    int i;

    CHECK(list && list[0], "device list");
    ctx = ibv_open_device(list[0]);
    CHECK(ctx, "open %s", ibv_get_device_name(list[0]));
    ibv_free_device_list(list);
    CHECK(ibv_query_port(ctx, 1, &pa) == 0 && pa.state == IBV_PORT_ACTIVE,
          "port active, lid %u", pa.lid);
    me.lid = pa.lid;
    pd = ibv_alloc_pd(ctx);
    chan = ibv_create_comp_channel(ctx);
    CHECK(pd && chan, "pd, channel");
    if (use_ex) {
        struct ibv_cq_init_attr_ex ca = {
            .cqe = 256,
            .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                        IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM
        };
        scq_ex = ibv_create_cq_ex(ctx, &ca);
        CHECK(scq_ex, "create_cq_ex with timestamps");
        scq = ibv_cq_ex_to_cq(scq_ex);
    } else {
        scq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
    }
    rcq = ibv_create_cq(ctx, 256, NULL, chan, 0);
    CHECK(scq && rcq, "cqs");
    buf = aligned_alloc(4096, BUF_SIZE);
    memset(buf, 0, BUF_SIZE);
    mr = ibv_reg_mr(pd, buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
                    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    CHECK(mr, "reg_mr");
    me.addr = (uintptr_t)buf;
    me.rkey = mr->rkey;
    {
        struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16,
                                                  .max_sge = 2 } };

        srq = ibv_create_srq(pd, &sa);
        CHECK(srq && sa.attr.max_wr >= 16, "create_srq");
    }
    for (i = 0; i < Q_NUM; ++i) {
        struct ibv_qp_init_attr ia = {
            .send_cq = scq, .recv_cq = rcq,
            .srq = (i == Q_UD) ? srq : NULL,
            .cap = { .max_send_wr = 64, .max_recv_wr = 64,
                     .max_send_sge = 4, .max_recv_sge = 4,
                     .max_inline_data = 128 },
            .qp_type = (i == Q_UC) ? IBV_QPT_UC :
                       (i == Q_UD) ? IBV_QPT_UD : IBV_QPT_RC
        };
        if (i == Q_RC2) {
            struct ibv_qp_init_attr_ex ix = {
                .send_cq = scq, .recv_cq = rcq, .cap = ia.cap,
                .qp_type = IBV_QPT_RC, .pd = pd,
                .comp_mask = IBV_QP_INIT_ATTR_PD |
                             IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                .send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
                                  IBV_QP_EX_WITH_SEND
            };
            qp[i] = ibv_create_qp_ex(ctx, &ix);
            CHECK(qp[i] && ibv_qp_to_qp_ex(qp[i]), "create_qp_ex");
            ia.cap = ix.cap;
        } else {
            qp[i] = ibv_create_qp(pd, &ia);
            CHECK(!ibv_qp_to_qp_ex(qp[i]), "no qp_ex without SEND_OPS");
        }
        CHECK(qp[i], "create qp %d", i);
        CHECK(ia.cap.max_send_sge > 1, "max_send_sge %u",
              ia.cap.max_send_sge);
        me.qpn[i] = qp[i]->qp_num;
        memset(&a, 0, sizeof(a));
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        if (i == Q_UD) {
            a.qkey = 0x11111111;
            CHECK(ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == EINVAL,
                  "UD INIT with ACCESS_FLAGS is EINVAL");
            CHECK(ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                IBV_QP_PORT | IBV_QP_QKEY) == 0, "UD INIT");
        } else {
            a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
                                IBV_ACCESS_REMOTE_READ;
            CHECK(ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_PORT) ==
                  EINVAL, "INIT without PKEY/ACCESS is EINVAL");
            CHECK(ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0,
                  "INIT %d", i);
        }
    }
}

static void connect_qps(void)
{
    struct ibv_qp_attr a;
    int i, rtr, rts;

    xsend(&me, sizeof(me));
    xrecv(&peer, sizeof(peer));
    for (i = 0; i < Q_NUM; ++i) {
        memset(&a, 0, sizeof(a));
        a.qp_state           = IBV_QPS_RTR;
        a.path_mtu           = IBV_MTU_4096;
        a.dest_qp_num        = peer.qpn[i];
        a.rq_psn             = 0;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer      = 1;
        a.ah_attr.dlid       = peer.lid;
        a.ah_attr.port_num   = 1;
        rtr = IBV_QP_STATE;
        rts = IBV_QP_STATE | IBV_QP_SQ_PSN;
        if ((i != Q_UC) && (i != Q_UD)) {
            rtr |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                   IBV_QP_MIN_RNR_TIMER;
            rts |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                   IBV_QP_MAX_QP_RD_ATOMIC;
        } else if (i == Q_UC) {
            rtr |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                   IBV_QP_RQ_PSN;
        }
        CHECK(ibv_modify_qp(qp[i], &a, rtr) == 0, "RTR %d", i);
        a.qp_state      = IBV_QPS_RTS;
        a.timeout       = 8;     /* ~1 ms */
        a.retry_cnt     = 2;
        a.rnr_retry     = 7;
        a.max_rd_atomic = 1;
        CHECK(ibv_modify_qp(qp[i], &a, rts) == 0, "RTS %d", i);
    }
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
    int n, spins = 0;

    while ((n = ibv_poll_cq(cq, 1, wc)) == 0) {
        if (++spins > 50000000) {
            return 0;
        }
    }
    return n;
}

static void post_recv(struct ibv_qp *q, uint64_t off, uint32_t len,
                      uint64_t id)
{
    struct ibv_sge s = { (uintptr_t)buf + off, len, mr->lkey };
    struct ibv_recv_wr r = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;

    CHECK(ibv_post_recv(q, &r, &bad) == 0, "post_recv %lu",
          (unsigned long)id);
}

static void fill(char *p, size_t n, int seed)
{
    size_t i;

    for (i = 0; i < n; ++i) {
        p[i] = (char)(seed + i * 7);
    }
}

static int check_fill(const char *p, size_t n, int seed)
{
    size_t i;

    for (i = 0; i < n; ++i) {
        if (p[i] != (char)(seed + i * 7)) {
            return 0;
        }
    }
    return 1;
}

static void responder(void)
{
    struct ibv_wc wc;
    struct ibv_cq *ecq;
    void *ectx;

    role = "resp";
    setup(0);
    post_recv(qp[Q_RC], 0x80000, 4096, 1);     /* for WRITE_WITH_IMM */
    post_recv(qp[Q_RC], 0x90000, 4096, 2);     /* for SEND */
    {
        struct ibv_sge s1 = { (uintptr_t)buf + 0xa0000, 4096 + 40, mr->lkey };
        struct ibv_recv_wr r[2] = {
            { .wr_id = 3, .sg_list = &s1, .num_sge = 1, .next = &r[1] },
            { .wr_id = 33, .sg_list = &s1, .num_sge = 1 } }, *bad;
        struct ibv_srq_attr la = { .srq_limit = 2 };

        CHECK(ibv_post_recv(qp[Q_UD], r, &bad) == EINVAL,
              "post_recv on an SRQ QP is EINVAL");
        CHECK(ibv_post_srq_recv(srq, r, &bad) == 0, "post_srq_recv chain");
        CHECK(ibv_modify_srq(srq, &la, IBV_SRQ_LIMIT) == 0, "arm limit 2");
    }
    post_recv(qp[Q_RC], 0xb0000, 64, 4);       /* inline SEND */
    connect_qps();

    /* 1: RC WRITE chain */
    sync_peer(1);
    sync_peer(11);
    CHECK(check_fill(buf + 0x1000, 3 * 1000, 1), "RC WRITE 3-SGE data");
    CHECK(check_fill(buf + 0x10000, 200000, 2), "RC WRITE 200000 B data");

    /* 2: WRITE_WITH_IMM, waited for through the completion channel */
    CHECK(ibv_req_notify_cq(rcq, 0) == 0, "req_notify");
    sync_peer(2);
    CHECK(ibv_get_cq_event(chan, &ecq, &ectx) == 0 && ecq == rcq,
          "channel event for the recv CQ");
    ibv_ack_cq_events(ecq, 1);
    CHECK(poll_one(rcq, &wc) == 1, "recv completion");
    CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode ==
          IBV_WC_RECV_RDMA_WITH_IMM && wc.wr_id == 1 &&
          (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0xabcd &&
          wc.byte_len == 5000 && wc.qp_num == me.qpn[Q_RC] &&
          wc.src_qp == peer.qpn[Q_RC] && wc.slid == peer.lid,
          "WRITE_WITH_IMM cqe (status %d op %d imm %x len %u)", wc.status,
          wc.opcode, ntohl(wc.imm_data), wc.byte_len);
    CHECK(check_fill(buf + 0x70000, 5000, 3), "WRITE_WITH_IMM data");

    /* 3: SEND with 2 SGEs */
    CHECK(poll_one(rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
          wc.opcode == IBV_WC_RECV && wc.wr_id == 2 && wc.byte_len == 3000,
          "SEND cqe (len %u)", wc.byte_len);
    CHECK(check_fill(buf + 0x90000, 3000, 4), "SEND data");
    /* 4: UD */
    CHECK(poll_one(rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
          wc.wr_id == 3 && (wc.wc_flags & IBV_WC_GRH) &&
          wc.byte_len == 1000 + 40 && wc.src_qp == peer.qpn[Q_UD] &&
          wc.qp_num == me.qpn[Q_UD], "UD cqe with GRH (len %u)",
          wc.byte_len);
    CHECK(check_fill(buf + 0xa0000 + 40, 1000, 5), "UD data after GRH");
    CHECK(buf[0xa0000] == 0x60, "GRH version 6");
    {
        struct ibv_async_event ev;

        ibv_poll_cq(rcq, 0, &wc);   /* lets the library notice */
        CHECK(ibv_get_async_event(ctx, &ev) == 0 &&
              ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
              ev.element.srq == srq, "SRQ limit event (type %d)",
              ev.event_type);
        ibv_ack_async_event(&ev);
    }
    /* 5: inline SEND with imm */
    CHECK(poll_one(rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
          wc.wr_id == 4 && wc.byte_len == 48 &&
          (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 77,
          "inline SEND_WITH_IMM cqe");
    CHECK(check_fill(buf + 0xb0000, 48, 6), "inline data");
    sync_peer(8);
    usleep(30000);
    post_recv(qp[Q_RC], 0xb8000, 4096, 5);
    CHECK(poll_one(rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
          wc.wr_id == 5 && wc.byte_len == 100, "RNR'd SEND arrived");
    CHECK(check_fill(buf + 0xb8000, 100, 11), "RNR'd SEND data");
    sync_peer(3);
    /* 6: UC WRITE, READ done by the requester */
    sync_peer(4);
    CHECK(check_fill(buf + 0xc0000, 70000, 8), "UC WRITE data");
    sync_peer(5);    /* bad rkey done */
    {
        struct ibv_async_event ev;
        struct ibv_qp_attr qa;
        struct ibv_qp_init_attr qia;
        struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

        ibv_poll_cq(rcq, 1, &wc);   /* lets the library notice */
        CHECK(poll(&pfd, 1, 1000) == 1, "async fd readable");
        CHECK(ibv_get_async_event(ctx, &ev) == 0 &&
              ev.event_type == IBV_EVENT_QP_ACCESS_ERR &&
              ev.element.qp == qp[Q_RC], "async QP_ACCESS_ERR (type %d)",
              ev.event_type);
        ibv_ack_async_event(&ev);
        CHECK(ibv_query_qp(qp[Q_RC], &qa, IBV_QP_STATE, &qia) == 0 &&
              qa.qp_state == IBV_QPS_ERR, "responder RC QP in ERR");
    }
    sync_peer(7);
    CHECK(check_fill(buf + 0xe0000, 4000, 9) &&
          check_fill(buf + 0xe0000 + 4000, 32, 10), "wr API data");
    {
        struct ibv_qp_attr ra = { .qp_state = IBV_QPS_RESET };

        CHECK(ibv_modify_qp(qp[Q_RC2], &ra, IBV_QP_STATE) == 0,
              "responder RC2 to RESET");
    }
    sync_peer(9);
    sync_peer(6);
    /* exit: the requester's Q_RC2 must end in RETRY_EXC_ERR */
    _exit(0);
}

static void poll_send(struct ibv_wc *wc)
{
    CHECK(poll_one(scq, wc) == 1, "send completion");
}

static void requester(void)
{
    struct ibv_sge sg[3];
    struct ibv_send_wr wr[2], *bad;
    struct ibv_wc wc;
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qia;
    struct ibv_ah_attr aa;
    struct ibv_ah *ah;
    struct ibv_poll_cq_attr pa = {};
    uint64_t ts0, ts1;
    int i, ret;

    role = "req";
    setup(1);
    connect_qps();
    sync_peer(1);

    /* 1: RC WRITE chain: 3 SGEs unsignaled + one 200000 B signaled */
    for (i = 0; i < 3; ++i) {
        sg[i] = (struct ibv_sge){ (uintptr_t)buf + 0x80000 + i * 1000, 1000,
                                  mr->lkey };
    }
    fill(buf + 0x80000, 3000, 1);
    fill(buf + 0x0, 200000, 2);
    struct ibv_sge big = { (uintptr_t)buf, 200000, mr->lkey };
    memset(wr, 0, sizeof(wr));
    wr[0] = (struct ibv_send_wr){ .wr_id = 10, .next = &wr[1], .sg_list = sg,
        .num_sge = 3, .opcode = IBV_WR_RDMA_WRITE,
        .wr.rdma = { peer.addr + 0x1000, peer.rkey } };
    wr[1] = (struct ibv_send_wr){ .wr_id = 11, .sg_list = &big, .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
        .wr.rdma = { peer.addr + 0x10000, peer.rkey } };
    CHECK(ibv_post_send(qp[Q_RC], wr, &bad) == 0, "post chain");
    CHECK(ibv_start_poll(scq_ex, &pa) == 0, "cq_ex start_poll");
    CHECK(scq_ex->status == IBV_WC_SUCCESS && scq_ex->wr_id == 11 &&
          ibv_wc_read_opcode(scq_ex) == IBV_WC_RDMA_WRITE &&
          ibv_wc_read_qp_num(scq_ex) == me.qpn[Q_RC],
          "one completion for the chain (wr_id %lu)",
          (unsigned long)scq_ex->wr_id);
    ts0 = ibv_wc_read_completion_ts(scq_ex);
    CHECK(ibv_next_poll(scq_ex) == ENOENT, "no more");
    ibv_end_poll(scq_ex);
    CHECK(ts0 > 0, "completion timestamp %llu", (unsigned long long)ts0);
    sync_peer(11);

    /* 2: WRITE_WITH_IMM */
    sync_peer(2);
    fill(buf + 0x20000, 5000, 3);
    sg[0] = (struct ibv_sge){ (uintptr_t)buf + 0x20000, 5000, mr->lkey };
    wr[0] = (struct ibv_send_wr){ .wr_id = 20, .sg_list = sg, .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .imm_data = htonl(0xabcd),
        .send_flags = IBV_SEND_SIGNALED,
        .wr.rdma = { peer.addr + 0x70000, peer.rkey } };
    CHECK(ibv_post_send(qp[Q_RC], wr, &bad) == 0, "post WRITE_WITH_IMM");
    poll_send(&wc);
    ts1 = ibv_wc_read_completion_ts(scq_ex);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 20, "WRITE_IMM done");
    (void)ts1;

    /* 3: SEND with 2 SGEs */
    fill(buf + 0x30000, 3000, 4);
    sg[0] = (struct ibv_sge){ (uintptr_t)buf + 0x30000, 1000, mr->lkey };
    sg[1] = (struct ibv_sge){ (uintptr_t)buf + 0x30000 + 1000, 2000,
                              mr->lkey };
    wr[0] = (struct ibv_send_wr){ .wr_id = 30, .sg_list = sg, .num_sge = 2,
        .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
    CHECK(ibv_post_send(qp[Q_RC], wr, &bad) == 0, "post SEND");
    poll_send(&wc);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND,
          "SEND done");

    /* 4: UD SEND */
    memset(&aa, 0, sizeof(aa));
    aa.dlid = peer.lid;
    aa.port_num = 1;
    ah = ibv_create_ah(pd, &aa);
    CHECK(ah, "create_ah");
    fill(buf + 0x50000, 1000, 5);
    sg[0] = (struct ibv_sge){ (uintptr_t)buf + 0x50000, 1000, mr->lkey };
    wr[0] = (struct ibv_send_wr){ .wr_id = 40, .sg_list = sg, .num_sge = 1,
        .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
        .wr.ud = { .ah = ah, .remote_qpn = peer.qpn[Q_UD],
                   .remote_qkey = 0x11111111 } };
    CHECK(ibv_post_send(qp[Q_UD], wr, &bad) == 0, "post UD");
    poll_send(&wc);
    CHECK(wc.status == IBV_WC_SUCCESS, "UD done");
    /* UD too long: one MTU at most */
    sg[0].length = 5000;
    wr[0].wr_id  = 41;
    CHECK(ibv_post_send(qp[Q_UD], wr, &bad) == 0, "post long UD");
    poll_send(&wc);
    CHECK(wc.status == IBV_WC_LOC_LEN_ERR, "UD longer than MTU: %s",
          ibv_wc_status_str(wc.status));

    /* 5: inline SEND_WITH_IMM, buffer overwritten right after posting */
    {
        char tmp[48];

        fill(tmp, 48, 6);
        sg[0] = (struct ibv_sge){ (uintptr_t)tmp, 48, 0 };
        wr[0] = (struct ibv_send_wr){ .wr_id = 50, .sg_list = sg,
            .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
            .imm_data = htonl(77),
            .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED };
        CHECK(ibv_post_send(qp[Q_RC], wr, &bad) == 0, "post inline");
        memset(tmp, 0, sizeof(tmp));
        poll_send(&wc);
        CHECK(wc.status == IBV_WC_SUCCESS, "inline done");
    }
    /* 5b: RNR: no receive posted yet; retried until the responder posts */
    fill(buf + 0x8000, 100, 11);
    sg[0] = (struct ibv_sge){ (uintptr_t)buf + 0x8000, 100, mr->lkey };
    wr[0] = (struct ibv_send_wr){ .wr_id = 55, .sg_list = sg, .num_sge = 1,
        .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
    CHECK(ibv_post_send(qp[Q_RC], wr, &bad) == 0, "post SEND before recv");
    CHECK(ibv_poll_cq(scq, 1, &wc) == 0, "no completion while RNR");
    sync_peer(8);
    poll_send(&wc);
    CHECK(wc.wr_id == 55 && wc.status == IBV_WC_SUCCESS,
          "RNR retried to success: %s", ibv_wc_status_str(wc.status));
    sync_peer(3);

    /* 6: UC WRITE and RC READ */
    fill(buf + 0x60000, 70000, 8);
    sg[0] = (struct ibv_sge){ (uintptr_t)buf + 0x60000, 70000, mr->lkey };
    wr[0] = (struct ibv_send_wr){ .wr_id = 60, .sg_list = sg, .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
        .wr.rdma = { peer.addr + 0xc0000, peer.rkey } };
    CHECK(ibv_post_send(qp[Q_UC], wr, &bad) == 0, "post UC WRITE");
    poll_send(&wc);
    CHECK(wc.status == IBV_WC_SUCCESS, "UC WRITE done");
    sync_peer(4);
    memset(buf + 0x38000, 0, 200000);
    sg[0] = (struct ibv_sge){ (uintptr_t)buf + 0x38000, 100000, mr->lkey };
    sg[1] = (struct ibv_sge){ (uintptr_t)buf + 0x38000 + 100000, 100000,
                              mr->lkey };
    wr[0] = (struct ibv_send_wr){ .wr_id = 61, .sg_list = sg, .num_sge = 2,
        .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
        .wr.rdma = { peer.addr + 0x10000, peer.rkey } };
    CHECK(ibv_post_send(qp[Q_RC], wr, &bad) == 0, "post READ");
    poll_send(&wc);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ &&
          wc.byte_len == 200000, "READ done (%s, len %u)",
          ibv_wc_status_str(wc.status), wc.byte_len);
    CHECK(check_fill(buf + 0x38000, 200000, 2), "READ data");

    /* 7: bad rkey -> REM_ACCESS_ERR, QP to ERR, next WR flushed */
    sg[0] = (struct ibv_sge){ (uintptr_t)buf, 100, mr->lkey };
    wr[0] = (struct ibv_send_wr){ .wr_id = 70, .sg_list = sg, .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE, .next = &wr[1],
        .wr.rdma = { peer.addr, peer.rkey ^ 0x100 } };
    wr[1] = (struct ibv_send_wr){ .wr_id = 71, .sg_list = sg, .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE,
        .wr.rdma = { peer.addr, peer.rkey } };
    CHECK(ibv_post_send(qp[Q_RC], wr, &bad) == 0, "post bad rkey");
    poll_send(&wc);
    CHECK(wc.wr_id == 70 && wc.status == IBV_WC_REM_ACCESS_ERR,
          "bad rkey: %s", ibv_wc_status_str(wc.status));
    poll_send(&wc);
    CHECK(wc.wr_id == 71 && wc.status == IBV_WC_WR_FLUSH_ERR,
          "flushed: %s", ibv_wc_status_str(wc.status));
    CHECK(ibv_query_qp(qp[Q_RC], &qa, IBV_QP_STATE, &qia) == 0 &&
          qa.qp_state == IBV_QPS_ERR, "QP in ERR");
    /* out of bounds on the good QP2 */
    wr[0].wr.rdma = (typeof(wr[0].wr.rdma)){ peer.addr + BUF_SIZE - 50,
                                             peer.rkey };
    wr[0].next = NULL;
    wr[0].wr_id = 72;
    /* bad lkey */
    sg[0].lkey ^= 0x100;
    CHECK(ibv_post_send(qp[Q_UC], wr, &bad) == 0, "post bad lkey");
    poll_send(&wc);
    CHECK(wc.status == IBV_WC_LOC_PROT_ERR, "bad lkey: %s",
          ibv_wc_status_str(wc.status));
    sg[0].lkey ^= 0x100;
    sync_peer(5);

    /* 7b: the ibv_wr_* API on RC2: a WRITE and an inline WRITE */
    {
        struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp[Q_RC2]);
        char tmp[32];

        fill(buf + 0x9000, 4000, 9);
        fill(tmp, 32, 10);
        ibv_wr_start(x);
        x->wr_id = 75;
        x->wr_flags = 0;
        ibv_wr_rdma_write(x, peer.rkey, peer.addr + 0xe0000);
        ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf + 0x9000, 4000);
        x->wr_id = 76;
        x->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_rdma_write(x, peer.rkey, peer.addr + 0xe0000 + 4000);
        ibv_wr_set_inline_data(x, tmp, 32);
        CHECK(ibv_wr_complete(x) == 0, "wr_complete");
        memset(tmp, 0, sizeof(tmp));
        poll_send(&wc);
        CHECK(wc.wr_id == 76 && wc.status == IBV_WC_SUCCESS,
              "wr API writes: %s", ibv_wc_status_str(wc.status));
    }
    sync_peer(7);

    /* 7c: the responder's QP is in RESET (alive process): RC retries with
     * its timeout, then RETRY_EXC_ERR; UC to it is silently dropped */
    sync_peer(9);
    sg[0] = (struct ibv_sge){ (uintptr_t)buf, 100, mr->lkey };
    wr[0] = (struct ibv_send_wr){ .wr_id = 78, .sg_list = sg, .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
        .wr.rdma = { peer.addr, peer.rkey } };
    CHECK(ibv_post_send(qp[Q_RC2], wr, &bad) == 0, "post to a RESET QP");
    poll_send(&wc);
    CHECK(wc.wr_id == 78 && wc.status == IBV_WC_RETRY_EXC_ERR,
          "target QP in RESET: %s", ibv_wc_status_str(wc.status));

    /* 8: dead peer: RC3 ends in RETRY_EXC_ERR */
    sync_peer(6);
    {
        siginfo_t si;

        /* exited but not reaped: a zombie must count as gone too */
        CHECK(waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) == 0 &&
              si.si_code == CLD_EXITED && si.si_status == 0,
              "responder exited 0 (still a zombie)");
    }
    usleep(20000);
    wr[0].wr_id = 80;
    wr[0].send_flags = IBV_SEND_SIGNALED;
    wr[0].wr.rdma = (typeof(wr[0].wr.rdma)){ peer.addr, peer.rkey };
    CHECK(ibv_post_send(qp[Q_RC3], wr, &bad) == 0, "post to dead peer");
    poll_send(&wc);
    CHECK(wc.wr_id == 80 && wc.status == IBV_WC_RETRY_EXC_ERR,
          "dead peer: %s", ibv_wc_status_str(wc.status));
    waitpid(-1, &ret, 0);

    for (i = 0; i < Q_NUM; ++i) {
        CHECK(ibv_destroy_qp(qp[i]) == 0, "destroy qp");
    }
    ibv_destroy_ah(ah);
    CHECK(ibv_dereg_mr(mr) == 0, "dereg");
    CHECK(ibv_destroy_srq(srq) == 0, "destroy srq");
    CHECK(ibv_destroy_cq(scq) == 0 && ibv_destroy_cq(rcq) == 0, "cqs");
    CHECK(ibv_destroy_comp_channel(chan) == 0, "channel");
    CHECK(ibv_dealloc_pd(pd) == 0, "pd");
    CHECK(ibv_close_device(ctx) == 0, "close");
    printf("sv_smoke: all checks passed\n");
}

int main(int argc, char **argv)
{
    int a[2], b[2];
    pid_t pid;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if ((argc > 1) && (strcmp(argv[1], "-q") == 0)) {
        verbose = 0;
    }
    if ((pipe(a) != 0) || (pipe(b) != 0)) {
        perror("pipe");
        return 1;
    }
    pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        rfd = a[0];
        wfd = b[1];
        responder();
        return 0;
    }
    rfd = b[0];
    wfd = a[1];
    requester();
    return 0;
}

/*
 * When a send completes, as a NIC reports it (run with SOFTVERBS_DELAY_US=D
 * large enough to stand out of scheduling noise):
 *   - an RC WRITE or SEND completes when its ACK is back: at least D after
 *     the target's receive completion, at least 2D after it was posted;
 *   - an RC READ when its response is back: at least 2D after the post;
 *   - a UC WRITE or SEND when its last packet left the sender: at least D
 *     before the target's receive completion.
 * Every check is a lower bound on a difference of completion timestamps
 * (the model's times) or of clock readings around the post and the poll:
 * a loaded machine can only make them larger.
 */
#include "sv_test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AT_LEN     8        /* bytes per message */
#define AT_POLL_NS 10000000000ull
#define AT_PINGS   4

enum { AT_RC, AT_UC, AT_NQP };

typedef struct at_ctx {
    struct ibv_cq_ex *cqx;
    struct ibv_mr    *mr;
    struct ibv_qp    *qp[AT_NQP];
    svt_info_t        peer;
    double            ns_per_tick;
} at_ctx_t;

/* One completion from the CQ (10 s at most): its opcode and timestamp */
static uint64_t at_poll(svt_t *t, at_ctx_t *c, enum ibv_wc_opcode op,
                        const char *what)
{
    struct ibv_poll_cq_attr pa = { 0 };
    uint64_t deadline = svt_now_ns() + AT_POLL_NS, ts;
    int ret;

    while ((ret = ibv_start_poll(c->cqx, &pa)) == ENOENT) {
        SVT_CHECK(t, svt_now_ns() < deadline, "%s: no completion for 10 s",
                  what);
    }
    SVT_CHECK(t, ret == 0, "%s: ibv_start_poll: %d", what, ret);
    SVT_CHECK(t, (c->cqx->status == IBV_WC_SUCCESS) &&
              (ibv_wc_read_opcode(c->cqx) == op),
              "%s: status %d opcode %d (expected %d)", what,
              c->cqx->status, ibv_wc_read_opcode(c->cqx), op);
    ts = ibv_wc_read_completion_ts(c->cqx);
    SVT_CHECK(t, ibv_next_poll(c->cqx) == ENOENT, "%s: a second completion",
              what);
    ibv_end_poll(c->cqx);
    return ts;
}

static void at_setup(svt_t *t, at_ctx_t *c)
{
    struct ibv_cq_init_attr_ex cax = {
        .cqe      = 64,
        .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };
    struct ibv_device_attr_ex dx;
    svt_info_t mine;
    int i;

    svt_open(t);
    SVT_CHECK(t, ibv_query_device_ex(t->ctx, NULL, &dx) == 0,
              "ibv_query_device_ex: %s", strerror(errno));
    SVT_CHECK(t, dx.hca_core_clock > 0, "hca_core_clock is 0");
    c->ns_per_tick = 1e6 / dx.hca_core_clock;      /* the clock is in kHz */
    c->cqx = ibv_create_cq_ex(t->ctx, &cax);
    SVT_CHECK(t, c->cqx != NULL, "ibv_create_cq_ex(with timestamps): %s",
              strerror(errno));
    c->mr = svt_mr(t, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                            IBV_ACCESS_REMOTE_READ);
    svt_info_init(t, &mine);
    for (i = 0; i < AT_NQP; ++i) {
        c->qp[i] = svt_qp(t, (i == AT_RC) ? IBV_QPT_RC : IBV_QPT_UC,
                          ibv_cq_ex_to_cq(c->cqx), ibv_cq_ex_to_cq(c->cqx),
                          NULL, 4, 1, 0);
        mine.qpn[i] = c->qp[i]->qp_num;
    }
    mine.nqp  = AT_NQP;
    mine.rkey = c->mr->rkey;
    mine.addr = (uintptr_t)c->mr->addr;
    svt_xchg(t, &mine, &c->peer, sizeof(mine));
    for (i = 0; i < AT_NQP; ++i) {
        svt_connect(t, c->qp[i], &c->peer, c->peer.qpn[i]);
    }
    svt_barrier(t);
}

/* The sender posts one message and polls its completion: the completion's
 * timestamp; *wall_ns: from before the post to after the poll */
static uint64_t at_send(svt_t *t, at_ctx_t *c, int q,
                        enum ibv_wr_opcode op, uint64_t *wall_ns,
                        const char *what)
{
    static const enum ibv_wc_opcode wc_op[] = {
        [IBV_WR_RDMA_WRITE]          = IBV_WC_RDMA_WRITE,
        [IBV_WR_RDMA_WRITE_WITH_IMM] = IBV_WC_RDMA_WRITE,
        [IBV_WR_SEND]                = IBV_WC_SEND,
        [IBV_WR_SEND_WITH_IMM]       = IBV_WC_SEND,
        [IBV_WR_RDMA_READ]           = IBV_WC_RDMA_READ };
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    uint64_t t0, ts;

    svt_sge(&sge, c->mr, 0, AT_LEN);
    wr = (struct ibv_send_wr){
        .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = op,
        .send_flags = IBV_SEND_SIGNALED, .imm_data = 7,
        .wr.rdma = { .remote_addr = c->peer.addr, .rkey = c->peer.rkey } };
    t0 = svt_now_ns();
    svt_post_send(t, c->qp[q], &wr);
    ts       = at_poll(t, c, wc_op[op], what);
    *wall_ns = svt_now_ns() - t0;
    return ts;
}

/* One message the target receives: the two completion timestamps (ns)
 * apart, sender's minus target's (both sides learn it) */
static double at_pair(svt_t *t, at_ctx_t *c, int q, enum ibv_wr_opcode op,
                      const char *what)
{
    struct ibv_recv_wr rwr;
    struct ibv_sge sge;
    uint64_t ts_s, ts_r, wall;

    if (t->role == 1) {
        svt_sge(&sge, c->mr, 0, AT_LEN);
        rwr = (struct ibv_recv_wr){ .wr_id = 2, .sg_list = &sge,
                                    .num_sge = 1 };
        svt_post_recv(t, c->qp[q], &rwr);
        svt_barrier(t);
        ts_r = at_poll(t, c, (op == IBV_WR_SEND) ? IBV_WC_RECV :
                       IBV_WC_RECV_RDMA_WITH_IMM, what);
        svt_send_u64(t, ts_r);
        ts_s = svt_recv_u64(t);
    } else {
        svt_barrier(t);
        ts_s = at_send(t, c, q, op, &wall, what);
        ts_r = svt_recv_u64(t);
        svt_send_u64(t, ts_s);
    }
    return ((double)ts_s - (double)ts_r) * c->ns_per_tick;
}

/* The sender alone: WRITEs or READs one at a time, each from before its
 * post to after its completion was polled (the first post to a peer also
 * pays for finding it: the fastest of several is the check) */
static void at_round_trip(svt_t *t, at_ctx_t *c, enum ibv_wr_opcode op,
                          uint64_t d_ns, const char *what)
{
    uint64_t wall = UINT64_MAX, w;
    int i;

    if (t->role == 0) {
        for (i = 0; i < AT_PINGS; ++i) {
            (void)at_send(t, c, AT_RC, op, &w, what);
            wall = (w < wall) ? w : wall;
        }
        SVT_LOG(t, "%s: completion polled %.1f us after the post at the "
                "fastest of %d (delay %.1f us each way)", what, wall / 1e3,
                AT_PINGS, d_ns / 1e3);
        SVT_CHECK(t, wall >= 2 * d_ns, "%s completed %.1f us after its "
                  "post: less than a round trip of 2 x %.1f us", what,
                  wall / 1e3, d_ns / 1e3);
    }
    svt_barrier(t);
}

void svt_ack_time(svt_t *t)
{
    const uint64_t d_ns = 1000 * svt_env_long("SOFTVERBS_DELAY_US", 0);
    static const struct {
        enum ibv_wr_opcode op;
        const char        *name;
    } ops[] = { { IBV_WR_RDMA_WRITE_WITH_IMM, "WRITE_WITH_IMM" },
                { IBV_WR_SEND, "SEND" } };
    at_ctx_t c;
    double gap;
    unsigned i;

    SVT_CHECK(t, d_ns > 0, "run with SOFTVERBS_DELAY_US set");
    memset(&c, 0, sizeof(c));
    at_setup(t, &c);

    at_round_trip(t, &c, IBV_WR_RDMA_WRITE, d_ns, "RC WRITE");
    at_round_trip(t, &c, IBV_WR_RDMA_READ, d_ns, "RC READ");
    for (i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i) {
        gap = at_pair(t, &c, AT_RC, ops[i].op, ops[i].name);
        SVT_LOG(t, "RC %s: sender's completion %.1f us after the target's",
                ops[i].name, gap / 1e3);
        SVT_CHECK(t, gap >= (double)d_ns, "RC %s: the sender's completion "
                  "came %.1f us after the target's, before an ACK could "
                  "be back (%.1f us)", ops[i].name, gap / 1e3, d_ns / 1e3);
        gap = at_pair(t, &c, AT_UC, ops[i].op, ops[i].name);
        SVT_LOG(t, "UC %s: sender's completion %.1f us before the target's",
                ops[i].name, -gap / 1e3);
        SVT_CHECK(t, -gap >= (double)d_ns, "UC %s: the sender's completion "
                  "came %.1f us before the target's, not when its packet "
                  "left (%.1f us of delay)", ops[i].name, -gap / 1e3,
                  d_ns / 1e3);
    }

    svt_barrier(t);
    svt_destroy(t, c.qp, AT_NQP, c.mr, ibv_cq_ex_to_cq(c.cqx));
}

/*
 * An answer later than the ACK timeout (run with SOFTVERBS_DELAY_US=2000:
 * the answer is back 4 ms after the post): a NIC's timer expires while
 * the ACK or the READ response is on its way, and resends for nothing;
 * retry_cnt expiries in a row fail the WR although its data arrived.
 * Per QP: its verbs timeout exponent (4.096 us << e), its retry_cnt, what
 * its one WR must end with, and its timer's expiries and resends (a
 * resent READ is its request and its response again). Run by
 * sv_stats_expect.sh, which checks the counts in the exit dumps.
 */
static const struct {
    enum ibv_wr_opcode  op;
    const char         *name;
    uint8_t             timeout;
    uint8_t             retry_cnt;
    enum ibv_wc_status  status;
    unsigned            expiries, resends;
} la_case[] = {
    { IBV_WR_RDMA_WRITE, "WRITE", 12, 0, IBV_WC_SUCCESS, 0, 0 }, /* 16.8 ms */
    { IBV_WR_RDMA_WRITE, "WRITE",  9, 7, IBV_WC_SUCCESS, 1, 1 }, /* 2.1 ms */
    { IBV_WR_RDMA_WRITE, "WRITE",  9, 0, IBV_WC_RETRY_EXC_ERR, 1, 0 },
    { IBV_WR_RDMA_READ,  "READ",  12, 0, IBV_WC_SUCCESS, 0, 0 },
    { IBV_WR_RDMA_READ,  "READ",   9, 7, IBV_WC_SUCCESS, 1, 1 },
    { IBV_WR_RDMA_READ,  "READ",   9, 0, IBV_WC_RETRY_EXC_ERR, 1, 0 },
};

#define LA_NQP (sizeof(la_case) / sizeof(la_case[0]))

void svt_late_ack(svt_t *t)
{
    const uint64_t d_ns = 1000 * svt_env_long("SOFTVERBS_DELAY_US", 0);
    struct ibv_qp *qp[LA_NQP];
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    struct ibv_wc wc;
    struct ibv_mr *mr;
    struct ibv_cq *cq;
    svt_info_t mine, peer;
    uint64_t t0, wall, timeout_ns;
    unsigned i, expiries = 0, resends = 0, tx = 0, peer_tx = 0;

    SVT_CHECK(t, d_ns >= 1000000, "run with SOFTVERBS_DELAY_US >= 1000");
    svt_open(t);
    cq = svt_cq(t, 64);
    mr = svt_mr(t, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                         IBV_ACCESS_REMOTE_READ);
    svt_info_init(t, &mine);
    for (i = 0; i < LA_NQP; ++i) {
        qp[i]       = svt_qp(t, IBV_QPT_RC, cq, cq, NULL, 4, 1, 0);
        mine.qpn[i] = qp[i]->qp_num;
    }
    mine.nqp  = LA_NQP;
    mine.rkey = mr->rkey;
    mine.addr = (uintptr_t)mr->addr;
    svt_xchg(t, &mine, &peer, sizeof(mine));
    for (i = 0; i < LA_NQP; ++i) {
        svt_connect_rc(t, qp[i], &peer, peer.qpn[i], la_case[i].timeout,
                       la_case[i].retry_cnt);
    }
    svt_barrier(t);

    for (i = 0; (t->role == 0) && (i < LA_NQP); ++i) {
        timeout_ns = 4096ull << la_case[i].timeout;
        svt_sge(&sge, mr, 0, AT_LEN);
        wr = (struct ibv_send_wr){
            .wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = la_case[i].op,
            .send_flags = IBV_SEND_SIGNALED,
            .wr.rdma = { .remote_addr = peer.addr, .rkey = peer.rkey } };
        t0 = svt_now_ns();
        svt_post_send(t, qp[i], &wr);
        svt_poll_n(t, cq, &wc, 1, AT_POLL_NS / 1000000, "late answer");
        wall = svt_now_ns() - t0;
        SVT_LOG(t, "QP %u (%s, timeout %.1f ms, retry_cnt %u): status %d "
                "after %.1f ms", i, la_case[i].name,
                timeout_ns / 1e6, la_case[i].retry_cnt, wc.status,
                wall / 1e6);
        SVT_CHECK(t, wc.status == la_case[i].status, "QP %u: status %s, "
                  "expected %s", i, ibv_wc_status_str(wc.status),
                  ibv_wc_status_str(la_case[i].status));
        SVT_CHECK(t, wall >= ((wc.status == IBV_WC_SUCCESS) ? 2 * d_ns :
                              (la_case[i].retry_cnt + 1u) * timeout_ns),
                  "QP %u completed %.1f ms after its post, too early", i,
                  wall / 1e6);
    }

    /* one packet (AT_LEN) a message, request and response a READ;
     * machine-readable: sv_stats_expect.sh matches these to the dumps */
    for (i = 0; i < LA_NQP; ++i) {
        expiries += la_case[i].expiries;
        resends  += la_case[i].resends;
        tx       += 1 + la_case[i].resends;
        peer_tx  += (la_case[i].op == IBV_WR_RDMA_READ) ?
                    1 + la_case[i].resends : 0;
    }
    if (t->role == 0) {
        printf("STATS_EXPECT requester pid=%d lid=%u rc_late_acks=%u "
               "rc_resends=%u tx_pkts=%u\n", (int)getpid(),
               t->port_attr.lid, expiries, resends, tx);
    } else {
        printf("STATS_EXPECT responder pid=%d lid=%u tx_pkts=%u\n",
               (int)getpid(), t->port_attr.lid, peer_tx);
    }
    fflush(stdout);

    svt_barrier(t);
    svt_destroy(t, qp, LA_NQP, mr, cq);
}

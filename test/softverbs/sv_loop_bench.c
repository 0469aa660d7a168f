/*
 * sv_loop_bench [ITERS]: what softverbs' verbs calls cost, per operation,
 * in one process (libsoftverbs preloaded, fabric model off). Its QPs talk
 * to each other through its own port, so every operation completes inside
 * ibv_post_send and a run is the same sequence of instructions each time:
 * compare builds by instruction counts (valgrind --tool=callgrind
 * --toggle-collect=svb_loop_*), which a busy shared machine cannot blur
 * as it blurs times. Each loop's time per operation is printed too.
 *
 *   svb_loop_send   64 B SEND on RC, its receive posted first: post_recv,
 *                   post_send, poll the two completions
 *   svb_loop_write  4 KiB RDMA WRITE on RC, signaled: post_send, poll
 *   svb_loop_ud     64 B UD SEND to itself: post_recv, post_send, poll 2
 *   svb_loop_poll1  64 B RDMA WRITE on RC, signaled, polled with
 *                   ibv_poll_cq; svb_loop_ex1 the same polled from an
 *                   ibv_cq_ex with completion timestamps (start_poll, the
 *                   fields uccl reads, end_poll)
 *   svb_loop_poll16, svb_loop_ex16: 16 such WRITEs, then their 16
 *                   completions in one poll (one start_poll and 15
 *                   next_poll)
 */
#include <infiniband/verbs.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SVB_BUF   65536
#define SVB_QKEY  0x11111111u

typedef struct svb {
    struct ibv_context *ctx;
    struct ibv_pd      *pd;
    struct ibv_cq      *cq;
    struct ibv_cq_ex   *cqx;       /* with completion timestamps */
    struct ibv_qp      *rc[2], *ud;
    struct ibv_qp      *rcx[2];    /* sending into cqx */
    struct ibv_ah      *ah;
    struct ibv_mr      *mr;
    char               *buf;
    uint16_t            lid;
} svb_t;

static void svb_die(const char *what)
{
    perror(what);
    exit(1);
}

static struct ibv_qp *svb_qp(svb_t *b, struct ibv_cq *cq,
                             enum ibv_qp_type type)
{
    struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq,
                                  .qp_type = type,
                                  .cap = { .max_send_wr = 64,
                                           .max_recv_wr = 64,
                                           .max_send_sge = 1,
                                           .max_recv_sge = 1 } };
    struct ibv_qp *qp = ibv_create_qp(b->pd, &a);

    if (qp == NULL) {
        svb_die("ibv_create_qp");
    }
    return qp;
}

static void svb_modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
    if (ibv_modify_qp(qp, a, mask)) {
        svb_die("ibv_modify_qp");
    }
}

static void svb_connect(svb_t *b, struct ibv_qp *qp, uint32_t dqpn)
{
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
                             .qkey = SVB_QKEY,
                             .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

    if (qp->qp_type == IBV_QPT_UD) {
        svb_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                   IBV_QP_QKEY);
        a.qp_state = IBV_QPS_RTR;
        svb_modify(qp, &a, IBV_QP_STATE);
        a.qp_state = IBV_QPS_RTS;
        svb_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
        return;
    }
    svb_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
               IBV_QP_ACCESS_FLAGS);
    memset(&a, 0, sizeof(a));
    a.qp_state           = IBV_QPS_RTR;
    a.path_mtu           = IBV_MTU_4096;
    a.dest_qp_num        = dqpn;
    a.ah_attr.dlid       = b->lid;
    a.ah_attr.port_num   = 1;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer      = 1;
    svb_modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
               IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
               IBV_QP_MIN_RNR_TIMER);
    memset(&a, 0, sizeof(a));
    a.qp_state      = IBV_QPS_RTS;
    a.timeout       = 14;
    a.retry_cnt     = 7;
    a.rnr_retry     = 7;
    a.max_rd_atomic = 1;
    svb_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
               IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void svb_open(svb_t *b)
{
    struct ibv_device **list;
    struct ibv_port_attr pa;
    struct ibv_ah_attr ah = { .port_num = 1 };
    struct ibv_cq_init_attr_ex cqx_attr = {
        .cqe      = 256,
        .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
                    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
                    IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP
    };
    int num;

    list = ibv_get_device_list(&num);
    if ((list == NULL) || (num < 1)) {
        svb_die("no verbs device (is libsoftverbs.so preloaded?)");
    }
    b->ctx = ibv_open_device(list[0]);
    if ((b->ctx == NULL) || ibv_query_port(b->ctx, 1, &pa)) {
        svb_die("ibv_open_device");
    }
    ibv_free_device_list(list);
    b->lid = pa.lid;
    b->pd  = ibv_alloc_pd(b->ctx);
    b->cq  = b->pd ? ibv_create_cq(b->ctx, 256, NULL, NULL, 0) : NULL;
    b->buf = calloc(1, SVB_BUF);
    b->mr  = (b->cq && b->buf) ? ibv_reg_mr(b->pd, b->buf, SVB_BUF,
                                            IBV_ACCESS_LOCAL_WRITE |
                                            IBV_ACCESS_REMOTE_WRITE) : NULL;
    if (b->mr == NULL) {
        svb_die("PD, CQ or MR");
    }
    b->cqx = ibv_create_cq_ex(b->ctx, &cqx_attr);
    if (b->cqx == NULL) {
        svb_die("ibv_create_cq_ex");
    }
    b->rc[0]  = svb_qp(b, b->cq, IBV_QPT_RC);
    b->rc[1]  = svb_qp(b, b->cq, IBV_QPT_RC);
    b->ud     = svb_qp(b, b->cq, IBV_QPT_UD);
    b->rcx[0] = svb_qp(b, ibv_cq_ex_to_cq(b->cqx), IBV_QPT_RC);
    b->rcx[1] = svb_qp(b, ibv_cq_ex_to_cq(b->cqx), IBV_QPT_RC);
    svb_connect(b, b->rc[0], b->rc[1]->qp_num);
    svb_connect(b, b->rc[1], b->rc[0]->qp_num);
    svb_connect(b, b->rcx[0], b->rcx[1]->qp_num);
    svb_connect(b, b->rcx[1], b->rcx[0]->qp_num);
    svb_connect(b, b->ud, 0);
    ah.dlid = b->lid;
    b->ah   = ibv_create_ah(b->pd, &ah);
    if (b->ah == NULL) {
        svb_die("ibv_create_ah");
    }
}

static void svb_post_recv(svb_t *b, struct ibv_qp *qp, size_t off,
                          uint32_t len)
{
    struct ibv_sge sge = { .addr = (uintptr_t)b->buf + off, .length = len,
                           .lkey = b->mr->lkey };
    struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

    if (ibv_post_recv(qp, &wr, &bad)) {
        svb_die("ibv_post_recv");
    }
}

static void svb_post_send(svb_t *b, struct ibv_qp *qp,
                          enum ibv_wr_opcode op, uint32_t len)
{
    struct ibv_sge sge = { .addr = (uintptr_t)b->buf, .length = len,
                           .lkey = b->mr->lkey };
    struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;

    if (qp->qp_type == IBV_QPT_UD) {
        wr.wr.ud.ah          = b->ah;
        wr.wr.ud.remote_qpn  = qp->qp_num;
        wr.wr.ud.remote_qkey = SVB_QKEY;
    } else {
        wr.wr.rdma.remote_addr = (uintptr_t)b->buf + SVB_BUF / 2;
        wr.wr.rdma.rkey        = b->mr->rkey;
    }
    if (ibv_post_send(qp, &wr, &bad)) {
        svb_die("ibv_post_send");
    }
}

static void svb_poll(svb_t *b, int n)
{
    struct ibv_wc wc[16];
    int got = 0, k, i;

    while (got < n) {
        k = ibv_poll_cq(b->cq, n - got, wc);
        for (i = 0; i < k; ++i) {
            if (wc[i].status != IBV_WC_SUCCESS) {
                fprintf(stderr, "completion: %s\n",
                        ibv_wc_status_str(wc[i].status));
                exit(1);
            }
        }
        got += k;
    }
}

/* noinline: callgrind toggles on these names */
__attribute__((noinline)) void svb_loop_send(svb_t *b, long n)
{
    long i;

    for (i = 0; i < n; ++i) {
        svb_post_recv(b, b->rc[1], SVB_BUF / 2, 64);
        svb_post_send(b, b->rc[0], IBV_WR_SEND, 64);
        svb_poll(b, 2);
    }
}

__attribute__((noinline)) void svb_loop_write(svb_t *b, long n)
{
    long i;

    for (i = 0; i < n; ++i) {
        svb_post_send(b, b->rc[0], IBV_WR_RDMA_WRITE, 4096);
        svb_poll(b, 1);
    }
}

/* n completions of cqx, reading what uccl's receive path reads */
static void svb_poll_ex(svb_t *b, int n)
{
    struct ibv_poll_cq_attr pa = {};
    struct ibv_cq_ex *cq       = b->cqx;
    volatile uint64_t sink;
    int got = 0, ret;

    while (got < n) {
        if ((ret = ibv_start_poll(cq, &pa)) == ENOENT) {
            continue;
        }
        do {
            if (ret || (cq->status != IBV_WC_SUCCESS)) {
                fprintf(stderr, "completion: %d %d\n", ret, cq->status);
                exit(1);
            }
            sink = cq->wr_id + ibv_wc_read_qp_num(cq) +
                   ibv_wc_read_byte_len(cq) + ibv_wc_read_wc_flags(cq) +
                   ibv_wc_read_opcode(cq) + ibv_wc_read_imm_data(cq) +
                   ibv_wc_read_completion_ts(cq);
            (void)sink;
        } while ((++got < n) && ((ret = ibv_next_poll(cq)) == 0));
        ibv_end_poll(cq);
    }
}

__attribute__((noinline)) void svb_loop_poll1(svb_t *b, long n)
{
    long i;

    for (i = 0; i < n; ++i) {
        svb_post_send(b, b->rc[0], IBV_WR_RDMA_WRITE, 64);
        svb_poll(b, 1);
    }
}

__attribute__((noinline)) void svb_loop_ex1(svb_t *b, long n)
{
    long i;

    for (i = 0; i < n; ++i) {
        svb_post_send(b, b->rcx[0], IBV_WR_RDMA_WRITE, 64);
        svb_poll_ex(b, 1);
    }
}

__attribute__((noinline)) void svb_loop_poll16(svb_t *b, long n)
{
    long i;
    int k;

    for (i = 0; i < n; i += 16) {
        for (k = 0; k < 16; ++k) {
            svb_post_send(b, b->rc[0], IBV_WR_RDMA_WRITE, 64);
        }
        svb_poll(b, 16);
    }
}

__attribute__((noinline)) void svb_loop_ex16(svb_t *b, long n)
{
    long i;
    int k;

    for (i = 0; i < n; i += 16) {
        for (k = 0; k < 16; ++k) {
            svb_post_send(b, b->rcx[0], IBV_WR_RDMA_WRITE, 64);
        }
        svb_poll_ex(b, 16);
    }
}

__attribute__((noinline)) void svb_loop_ud(svb_t *b, long n)
{
    long i;

    for (i = 0; i < n; ++i) {
        svb_post_recv(b, b->ud, SVB_BUF / 2, 64 + 40);
        svb_post_send(b, b->ud, IBV_WR_SEND, 64);
        svb_poll(b, 2);
    }
}

static void svb_close(svb_t *b)
{
    if (ibv_destroy_ah(b->ah) || ibv_destroy_qp(b->rc[0]) ||
        ibv_destroy_qp(b->rc[1]) || ibv_destroy_qp(b->ud) ||
        ibv_destroy_qp(b->rcx[0]) || ibv_destroy_qp(b->rcx[1]) ||
        ibv_dereg_mr(b->mr) || ibv_destroy_cq(b->cq) ||
        ibv_destroy_cq(ibv_cq_ex_to_cq(b->cqx)) ||
        ibv_dealloc_pd(b->pd) || ibv_close_device(b->ctx)) {
        svb_die("tear-down");
    }
    free(b->buf);
}

static double svb_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    long n = (argc > 1) ? atol(argv[1]) : 100000;
    void (*loop[])(svb_t*, long) = { svb_loop_send, svb_loop_write,
                                     svb_loop_ud, svb_loop_poll1,
                                     svb_loop_ex1, svb_loop_poll16,
                                     svb_loop_ex16 };
    const char *name[] = { "rc_send_64", "rc_write_4k", "ud_send_64",
                           "poll_1", "cq_ex_1", "poll_16", "cq_ex_16" };
    double t0;
    unsigned i;
    svb_t b;

    memset(&b, 0, sizeof(b));
    svb_open(&b);
    for (i = 0; i < sizeof(loop) / sizeof(loop[0]); ++i) {
        t0 = svb_now();
        loop[i](&b, n);
        printf("%-12s %8.1f ns/op\n", name[i], (svb_now() - t0) * 1e9 / n);
    }
    svb_close(&b);
    return 0;
}

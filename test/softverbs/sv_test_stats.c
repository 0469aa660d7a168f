/*
 * Doorbell accounting, seen from outside: the initiator posts a chain of 16
 * WRITEs with one ibv_post_send on one device, and 16 WRITEs with 16 calls
 * on a second device; sv_stats_expect.sh reads the SOFTVERBS_STATS dump
 * after both processes exit and checks doorbells/wrs of the two ports.
 */
#include "sv_test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DB_N 16

void svt_doorbell(svt_t *t)
{
    struct ibv_device **list;
    struct ibv_context *ctx2;
    struct ibv_port_attr pa2;
    struct ibv_send_wr wr[DB_N];
    struct ibv_sge sge[DB_N];
    struct ibv_wc wc[DB_N];
    struct ibv_pd *pd2;
    struct ibv_cq *cq, *cq2;
    struct ibv_mr *mr, *mr2;
    struct ibv_qp *qp, *qp2;
    svt_info_t mine, peer;
    int i, num;

    svt_open(t);
    cq = svt_cq(t, 64);
    mr = svt_mr(t, DB_N * 4096, IBV_ACCESS_LOCAL_WRITE |
                                IBV_ACCESS_REMOTE_WRITE);
    qp = svt_qp(t, IBV_QPT_RC, cq, cq, NULL, DB_N, 1, 0);
    svt_info_init(t, &mine);
    mine.qpn[0] = qp->qp_num;
    mine.rkey   = mr->rkey;
    mine.addr   = (uintptr_t)mr->addr;

    /* the initiator's second port: another device (or the same one opened
     * again: every opened device is a port of its own) */
    list = ibv_get_device_list(&num);
    SVT_CHECK(t, list != NULL && num > 0, "ibv_get_device_list");
    ctx2 = ibv_open_device(list[(t->role == 0) && (num > 1) ? 1 : 0]);
    SVT_CHECK(t, ctx2 != NULL, "second ibv_open_device: %s",
              strerror(errno));
    ibv_free_device_list(list);
    SVT_CHECK(t, ibv_query_port(ctx2, 1, &pa2) == 0, "ibv_query_port");
    pd2 = ibv_alloc_pd(ctx2);
    cq2 = ibv_create_cq(ctx2, 64, NULL, NULL, 0);
    SVT_CHECK(t, pd2 && cq2, "second PD/CQ: %s", strerror(errno));
    mr2 = ibv_reg_mr(pd2, mr->addr, DB_N * 4096, IBV_ACCESS_LOCAL_WRITE |
                     IBV_ACCESS_REMOTE_WRITE);
    qp2 = ibv_create_qp(pd2, &(struct ibv_qp_init_attr){
        .send_cq = cq2, .recv_cq = cq2, .qp_type = IBV_QPT_RC,
        .cap = { .max_send_wr = DB_N, .max_recv_wr = 1, .max_send_sge = 1,
                 .max_recv_sge = 1 } });
    SVT_CHECK(t, mr2 && qp2, "second MR/QP: %s", strerror(errno));
    mine.qpn[1] = qp2->qp_num;
    mine.rkey2  = mr2->rkey;
    mine.addr2  = (uintptr_t)mr2->addr;
    mine.len2   = pa2.lid;
    SVT_CHECK(t, ibv_query_gid(ctx2, 1, 0, &mine.gid2) == 0, "ibv_query_gid");
    mine.nqp    = 2;
    svt_xchg(t, &mine, &peer, sizeof(mine));

    /* qp <-> peer qp[0]; qp2 <-> peer qp[1], each to the right port */
    svt_connect(t, qp, &peer, peer.qpn[0]);
    {
        svt_info_t p2 = peer;
        struct ibv_context *save_ctx = t->ctx;

        p2.lid = (uint16_t)peer.len2;
        p2.gid = peer.gid2;
        t->ctx = ctx2;
        svt_connect(t, qp2, &p2, peer.qpn[1]);
        t->ctx = save_ctx;
    }
    svt_barrier(t);

    if (t->role == 0) {
        svt_fill(t, mr->addr, DB_N * 4096, 60);
        /* one doorbell: a chain of 16 */
        for (i = 0; i < DB_N; ++i) {
            svt_sge(&sge[i], mr, i * 4096, 4096);
            wr[i] = (struct ibv_send_wr){
                .wr_id = i, .sg_list = &sge[i], .num_sge = 1,
                .opcode = IBV_WR_RDMA_WRITE,
                .send_flags = (i == DB_N - 1) ? IBV_SEND_SIGNALED : 0,
                .next = (i < DB_N - 1) ? &wr[i + 1] : NULL,
                .wr.rdma = { .remote_addr = peer.addr + i * 4096,
                             .rkey = peer.rkey } };
        }
        svt_post_send(t, qp, &wr[0]);
        svt_poll_n(t, cq, wc, 1, 5000, "chain of 16");
        svt_check_wc(t, &wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, DB_N - 1,
                     qp, -1, "last WR of the chain");
        /* sixteen doorbells on the second port */
        for (i = 0; i < DB_N; ++i) {
            sge[i].lkey = mr2->lkey;
            wr[i].next  = NULL;
            wr[i].wr.rdma.remote_addr = peer.addr2 + i * 4096;
            wr[i].wr.rdma.rkey        = peer.rkey2;
            svt_post_send(t, qp2, &wr[i]);
        }
        svt_poll_n(t, cq2, wc, 1, 5000, "16 single posts");
        svt_check_wc(t, &wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, DB_N - 1,
                     qp2, -1, "last single post");
        /* machine-readable: sv_stats_expect.sh matches these to the dump */
        printf("STATS_EXPECT chain pid=%d lid=%u doorbells=1 wrs=%d\n",
               (int)getpid(), t->port_attr.lid, DB_N);
        printf("STATS_EXPECT single pid=%d lid=%u doorbells=%d wrs=%d\n",
               (int)getpid(), pa2.lid, DB_N, DB_N);
        svt_barrier(t);
    } else {
        svt_barrier(t);
        svt_verify(t, mr->addr, DB_N * 4096, 60, "chained WRITE data");
        SVT_LOG(t, "data of the chain and of the single posts verified");
    }
    svt_barrier(t);
    SVT_CHECK(t, ibv_destroy_qp(qp2) == 0 && ibv_dereg_mr(mr2) == 0 &&
              ibv_destroy_cq(cq2) == 0 && ibv_dealloc_pd(pd2) == 0 &&
              ibv_close_device(ctx2) == 0, "second port teardown: %s",
              strerror(errno));
    SVT_CHECK(t, ibv_destroy_qp(qp) == 0, "ibv_destroy_qp");
    svt_mr_free(mr);
    SVT_CHECK(t, ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
    svt_close(t);
}

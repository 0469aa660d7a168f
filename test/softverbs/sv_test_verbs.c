/*
 * Each verb and QP type between two processes, data always verified:
 * RC WRITE / WRITE_WITH_IMM / SEND / SEND_WITH_IMM / READ, UC, UD with GRH,
 * SRQ and shared CQ, inline and unsignaled sends.
 */
#include "sv_test.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#define MB (1024 * 1024)

/* Target side: nothing may show up in the CQ (e.g. after plain WRITEs). */
static void svt_expect_empty(svt_t *t, struct ibv_cq *cq, const char *what)
{
    struct ibv_wc wc;
    int n = svt_poll(t, cq, &wc, 1, 50);

    SVT_CHECK(t, n == 0, "%s: unexpected completion %s status %s qp 0x%x",
              what, svt_opcode_str(wc.opcode), ibv_wc_status_str(wc.status),
              wc.qp_num);
}

/* ---------------------------------------------------------------------- */
/* RC RDMA WRITE                                                           */

/* Multi-SGE gather layout: local offsets and lengths, concatenated remotely */
static const size_t wr_sg_off[] = { 3, 8192, 70001, 200000 };
static const size_t wr_sg_len[] = { 1000, 4096, 17, 30000 };
#define WR_NSG 4

void svt_rc_write(svt_t *t)
{
    struct ibv_send_wr wr[8], *w;
    struct ibv_sge sge[8], sg[WR_NSG];
    struct ibv_wc wc[8];
    svt_pair_t p;
    size_t off, total;
    uint8_t *lbuf, *rbuf;
    int i;

    svt_pair_setup(t, &p, IBV_QPT_RC, 2 * MB, 64, WR_NSG, 0);
    lbuf = p.mr->addr;
    if (t->role == 0) {
        svt_fill(t, lbuf, 2 * MB, 1);
        memset(wr, 0, sizeof(wr));

        /* a) one SGE, 64 KiB (16 packets) to remote offset 0 */
        svt_sge(&sge[0], p.mr, 0, 65536);
        wr[0] = (struct ibv_send_wr){
            .wr_id = 0xa, .sg_list = &sge[0], .num_sge = 1,
            .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
            .wr.rdma = { .remote_addr = p.peer.addr, .rkey = p.peer.rkey } };
        svt_post_send(t, p.qp, &wr[0]);
        svt_poll_n(t, p.cq, wc, 1, 5000, "single-SGE WRITE");
        svt_check_wc(t, &wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0xa, p.qp,
                     -1, "single-SGE WRITE");

        /* b) four SGEs gathered into remote offset 128 KiB + 5 */
        for (i = 0, total = 0; i < WR_NSG; ++i) {
            svt_sge(&sg[i], p.mr, wr_sg_off[i], wr_sg_len[i]);
            total += wr_sg_len[i];
        }
        wr[0] = (struct ibv_send_wr){
            .wr_id = 0xb, .sg_list = sg, .num_sge = WR_NSG,
            .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
            .wr.rdma = { .remote_addr = p.peer.addr + 131072 + 5,
                         .rkey = p.peer.rkey } };
        svt_post_send(t, p.qp, &wr[0]);
        svt_poll_n(t, p.cq, wc, 1, 5000, "multi-SGE WRITE");
        svt_check_wc(t, &wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0xb, p.qp,
                     -1, "multi-SGE WRITE");

        /* c) a chain of 8 WRITEs of 8 KiB + i at unaligned remote offsets,
         *    d) with a zero-length WRITE in the middle */
        for (i = 0; i < 8; ++i) {
            w = &wr[i];
            svt_sge(&sge[i], p.mr, 262144 + i * 9000, 8192 + i);
            *w = (struct ibv_send_wr){
                .wr_id = 0xc0 + i, .sg_list = &sge[i], .num_sge = 1,
                .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
                .next = (i < 7) ? &wr[i + 1] : NULL,
                .wr.rdma = { .remote_addr = p.peer.addr + 262144 + i * 9000,
                             .rkey = p.peer.rkey } };
        }
        wr[4].num_sge = 0;
        svt_post_send(t, p.qp, &wr[0]);
        svt_poll_n(t, p.cq, wc, 8, 5000, "chain of 8 WRITEs");
        for (i = 0; i < 8; ++i) {
            svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
                         0xc0 + i, p.qp, -1, "chained WRITE (in order)");
        }

        /* e) 1 MiB at once to remote offset 1 MiB */
        svt_sge(&sge[0], p.mr, MB, MB);
        wr[0] = (struct ibv_send_wr){
            .wr_id = 0xe, .sg_list = &sge[0], .num_sge = 1,
            .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
            .wr.rdma = { .remote_addr = p.peer.addr + MB,
                         .rkey = p.peer.rkey } };
        svt_post_send(t, p.qp, &wr[0]);
        svt_poll_n(t, p.cq, wc, 1, 10000, "1 MiB WRITE");
        svt_check_wc(t, &wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0xe, p.qp,
                     -1, "1 MiB WRITE");
        SVT_LOG(t, "single, 4-SGE, chained(8, one empty) and 1 MiB WRITEs "
                "completed");
        svt_barrier(t);
    } else {
        svt_barrier(t);
        rbuf = malloc(2 * MB);
        SVT_CHECK(t, rbuf != NULL, "no memory");
        svt_fill(t, rbuf, 2 * MB, 1);   /* the initiator's buffer */
        svt_verify(t, lbuf, 65536, 1, "single-SGE WRITE data");
        for (i = 0, off = 131072 + 5; i < WR_NSG; ++i) {
            SVT_CHECK(t, !memcmp(lbuf + off, rbuf + wr_sg_off[i],
                                 wr_sg_len[i]),
                      "multi-SGE WRITE: piece %d (%zu B at remote %zu) wrong",
                      i, wr_sg_len[i], off);
            off += wr_sg_len[i];
        }
        SVT_CHECK(t, lbuf[131072 + 4] == 0 && lbuf[off] == 0,
                  "multi-SGE WRITE wrote outside its range");
        for (i = 0; i < 8; ++i) {
            off = 262144 + i * 9000;
            if (i == 4) {
                SVT_CHECK(t, lbuf[off] == 0, "zero-length WRITE wrote data");
                continue;
            }
            SVT_CHECK(t, !memcmp(lbuf + off, rbuf + off, 8192 + i),
                      "chained WRITE %d data wrong", i);
            SVT_CHECK(t, lbuf[off + 8192 + i] == 0,
                      "chained WRITE %d wrote past its end", i);
        }
        SVT_CHECK(t, !memcmp(lbuf + MB, rbuf + MB, MB),
                  "1 MiB WRITE data wrong");
        SVT_LOG(t, "all WRITE data verified (single, 4 SGEs, chain, 1 MiB)");
        svt_expect_empty(t, p.cq, "target CQ after plain WRITEs");
        free(rbuf);
    }
    svt_barrier(t);
    svt_pair_destroy(t, &p);
}

/* ---------------------------------------------------------------------- */
/* RC WRITE_WITH_IMM                                                       */

#define IMM_N 16

static size_t imm_len(int i)
{
    /* zero length, small, one MTU, around MTU edges, many packets */
    static const size_t len[IMM_N] = { 0, 1, 64, 4095, 4096, 4097, 8192,
                                       12289, 65536, 100000, 7, 0, 300000,
                                       2048, 33, 1 << 19 };
    return len[i];
}

void svt_rc_write_imm(svt_t *t)
{
    struct ibv_send_wr wr[IMM_N];
    struct ibv_recv_wr rwr[IMM_N];
    struct ibv_sge sge[IMM_N];
    struct ibv_wc wc[IMM_N];
    char what[64];
    svt_pair_t p;
    size_t off;
    int i;

    svt_pair_setup(t, &p, IBV_QPT_RC, 2 * MB, 64, 1, 0);
    if (t->role == 1) {
        /* recv WQEs without buffers: WRITE_WITH_IMM only consumes them */
        for (i = 0; i < IMM_N; ++i) {
            rwr[i] = (struct ibv_recv_wr){
                .wr_id = 0x100 + i, .num_sge = 0,
                .next = (i < IMM_N - 1) ? &rwr[i + 1] : NULL };
        }
        svt_post_recv(t, p.qp, &rwr[0]);
    }
    svt_barrier(t);

    if (t->role == 0) {
        for (i = 0, off = 0; i < IMM_N; ++i) {
            svt_fill(t, (uint8_t *)p.mr->addr + off, imm_len(i), 10 + i);
            svt_sge(&sge[i], p.mr, off, imm_len(i));
            wr[i] = (struct ibv_send_wr){
                .wr_id = i, .sg_list = &sge[i], .num_sge = 1,
                .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                .send_flags = IBV_SEND_SIGNALED,
                .imm_data = htonl(0xabc00000 + i),
                .next = (i < IMM_N - 1) ? &wr[i + 1] : NULL,
                .wr.rdma = { .remote_addr = p.peer.addr + off,
                             .rkey = p.peer.rkey } };
            off += (imm_len(i) + 4095) & ~4095ul;
        }
        svt_post_send(t, p.qp, &wr[0]);
        svt_poll_n(t, p.cq, wc, IMM_N, 10000, "WRITE_WITH_IMM");
        for (i = 0; i < IMM_N; ++i) {
            svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, i,
                         p.qp, -1, "WRITE_WITH_IMM send completion");
        }
        SVT_LOG(t, "%d WRITE_WITH_IMM (0 B .. 512 KiB) completed", IMM_N);
    } else {
        svt_poll_n(t, p.cq, wc, IMM_N, 10000, "RECV_RDMA_WITH_IMM");
        for (i = 0, off = 0; i < IMM_N; ++i) {
            snprintf(what, sizeof(what), "WRITE_WITH_IMM %d (%zu B)", i,
                     imm_len(i));
            svt_check_wc(t, &wc[i], IBV_WC_SUCCESS,
                         IBV_WC_RECV_RDMA_WITH_IMM, 0x100 + i, p.qp,
                         imm_len(i), what);
            SVT_CHECK(t, wc[i].wc_flags & IBV_WC_WITH_IMM,
                      "%s: IBV_WC_WITH_IMM not set", what);
            SVT_CHECK(t, ntohl(wc[i].imm_data) == 0xabc00000u + i,
                      "%s: imm 0x%x, expected 0x%x", what,
                      ntohl(wc[i].imm_data), 0xabc00000u + i);
            svt_verify(t, (uint8_t *)p.mr->addr + off, imm_len(i), 10 + i,
                       what);
            off += (imm_len(i) + 4095) & ~4095ul;
        }
        SVT_LOG(t, "%d RECV_RDMA_WITH_IMM: opcode, imm, byte_len, qp_num, "
                "wr_id order and data verified", IMM_N);
    }
    svt_barrier(t);
    svt_pair_destroy(t, &p);
}

/* ---------------------------------------------------------------------- */
/* SEND / SEND_WITH_IMM (shared by RC and UC)                              */

#define SEND_N 8
/* receive WQE: three pieces of 100, 5000 and 70000 bytes */
static const size_t rcv_piece[3] = { 100, 5000, 70000 };
#define RCV_SLOT (128 * 1024)

static size_t send_len(int i)
{
    static const size_t len[SEND_N] = { 64, 0, 100, 101, 10000, 75100, 4096,
                                        40000 };
    return len[i];
}

/* Target: post SEND_N receive WQEs, each scattering into three pieces. */
static void svt_post_scatter_recvs(svt_t *t, struct ibv_qp *qp,
                                   struct ibv_mr *mr,
                                   struct ibv_sge (*sg)[3])
{
    struct ibv_recv_wr rwr[SEND_N];
    size_t off;
    int i, k;

    for (i = 0; i < SEND_N; ++i) {
        for (k = 0, off = i * RCV_SLOT; k < 3; ++k) {
            svt_sge(&sg[i][k], mr, off, rcv_piece[k]);
            off += rcv_piece[k] + 8;    /* gaps between the pieces */
        }
        rwr[i] = (struct ibv_recv_wr){
            .wr_id = 0x200 + i, .sg_list = sg[i], .num_sge = 3,
            .next = (i < SEND_N - 1) ? &rwr[i + 1] : NULL };
    }
    svt_post_recv(t, qp, &rwr[0]);
}

/* Initiator: SEND_N sends, odd ones WITH_IMM, message 5 gathered from three
 * SGEs; one chained post. */
static void svt_post_sends(svt_t *t, svt_pair_t *p)
{
    struct ibv_send_wr wr[SEND_N];
    struct ibv_sge sge[SEND_N][3];
    uint8_t *tmp, *buf = p->mr->addr;
    size_t off = 0, a, b;
    int i;

    for (i = 0; i < SEND_N; ++i) {
        wr[i] = (struct ibv_send_wr){
            .wr_id = 0x300 + i, .sg_list = sge[i], .num_sge = 1,
            .opcode = (i & 1) ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
            .send_flags = IBV_SEND_SIGNALED,
            .imm_data = htonl(0x5e0d0000 + i),
            .next = (i < SEND_N - 1) ? &wr[i + 1] : NULL };
        if (i == 5) {
            /* scattered in local memory, in three unequal pieces */
            tmp = malloc(send_len(i));
            svt_fill(t, tmp, send_len(i), 20 + i);
            a = 1000;
            b = 50000;
            memcpy(buf + off, tmp, a);
            memcpy(buf + off + a + 64, tmp + a, b);
            memcpy(buf + off + a + b + 128, tmp + a + b, send_len(i) - a - b);
            svt_sge(&sge[i][0], p->mr, off, a);
            svt_sge(&sge[i][1], p->mr, off + a + 64, b);
            svt_sge(&sge[i][2], p->mr, off + a + b + 128, send_len(i) - a - b);
            wr[i].num_sge = 3;
            off += send_len(i) + 256;
            free(tmp);
        } else {
            svt_fill(t, buf + off, send_len(i), 20 + i);
            svt_sge(&sge[i][0], p->mr, off, send_len(i));
            off += send_len(i);
        }
    }
    svt_post_send(t, p->qp, &wr[0]);
}

static void svt_check_sends(svt_t *t, svt_pair_t *p, struct ibv_sge (*sg)[3],
                            const char *qpt)
{
    struct ibv_wc wc[SEND_N];
    char what[64];
    int i;

    svt_poll_n(t, p->cq, wc, SEND_N, 10000, "receive completions");
    for (i = 0; i < SEND_N; ++i) {
        snprintf(what, sizeof(what), "%s %s %d (%zu B)", qpt,
                 (i & 1) ? "SEND_WITH_IMM" : "SEND", i, send_len(i));
        svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, IBV_WC_RECV, 0x200 + i,
                     p->qp, send_len(i), what);
        if (i & 1) {
            SVT_CHECK(t, (wc[i].wc_flags & IBV_WC_WITH_IMM) &&
                      ntohl(wc[i].imm_data) == 0x5e0d0000u + i,
                      "%s: flags 0x%x imm 0x%x", what, wc[i].wc_flags,
                      ntohl(wc[i].imm_data));
        } else {
            SVT_CHECK(t, !(wc[i].wc_flags & IBV_WC_WITH_IMM),
                      "%s: IBV_WC_WITH_IMM set on a plain SEND", what);
        }
        svt_verify_sg(t, sg[i], 3, send_len(i), 20 + i, what);
    }
    SVT_LOG(t, "%d %s receives: opcode, imm, byte_len, wr_id order and "
            "scattered data verified", SEND_N, qpt);
}

void svt_rc_send(svt_t *t)
{
    struct ibv_sge sg[SEND_N][3];
    struct ibv_wc wc[SEND_N];
    svt_pair_t p;
    int i;

    svt_pair_setup(t, &p, IBV_QPT_RC, SEND_N * RCV_SLOT, 64, 3, 0);
    if (t->role == 1) {
        svt_post_scatter_recvs(t, p.qp, p.mr, sg);
    }
    svt_barrier(t);
    if (t->role == 0) {
        svt_post_sends(t, &p);
        svt_poll_n(t, p.cq, wc, SEND_N, 10000, "SEND completions");
        for (i = 0; i < SEND_N; ++i) {
            svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, IBV_WC_SEND, 0x300 + i,
                         p.qp, -1, "SEND completion");
        }
        SVT_LOG(t, "%d SEND/SEND_WITH_IMM completed in order", SEND_N);
    } else {
        svt_check_sends(t, &p, sg, "RC");
    }
    svt_barrier(t);
    svt_pair_destroy(t, &p);
}

/* ---------------------------------------------------------------------- */
/* RC RDMA READ                                                            */

void svt_rc_read(svt_t *t)
{
    struct ibv_send_wr wr[6];
    struct ibv_sge sge[8];
    struct ibv_wc wc[6];
    uint8_t *lbuf, *rimg;
    svt_pair_t p;
    int i;

    svt_pair_setup(t, &p, IBV_QPT_RC, 2 * MB, 64, 3, 0);
    if (t->role == 1) {
        svt_fill(t, p.mr->addr, 2 * MB, 7);
        svt_barrier(t);             /* data in place */
        svt_barrier(t);             /* reads done */
        svt_verify(t, p.mr->addr, 2 * MB, 7, "READ source unchanged");
        svt_expect_empty(t, p.cq, "READ target CQ");
        svt_pair_destroy(t, &p);
        return;
    }

    svt_barrier(t);
    lbuf = p.mr->addr;
    rimg = malloc(2 * MB);
    svt_fill(t, rimg, 2 * MB, 7);

    /* 0: 300 KiB into one SGE; 1: 70000 B into three local SGEs;
     * 2..4: a chain of three small reads; 5: zero-length read */
    svt_sge(&sge[0], p.mr, 0, 300 * 1024);
    svt_sge(&sge[1], p.mr, 400000, 1000);
    svt_sge(&sge[2], p.mr, 500000, 60000);
    svt_sge(&sge[3], p.mr, 600000, 9000);
    for (i = 0; i < 3; ++i) {
        svt_sge(&sge[4 + i], p.mr, 700000 + i * 5000, 33 + i * 1000);
    }
    memset(wr, 0, sizeof(wr));
    wr[0] = (struct ibv_send_wr){
        .wr_id = 0x40, .sg_list = &sge[0], .num_sge = 1,
        .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
        .next = &wr[1],
        .wr.rdma = { .remote_addr = p.peer.addr + 4096, .rkey = p.peer.rkey } };
    wr[1] = (struct ibv_send_wr){
        .wr_id = 0x41, .sg_list = &sge[1], .num_sge = 3,
        .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
        .next = &wr[2],
        .wr.rdma = { .remote_addr = p.peer.addr + MB + 3,
                     .rkey = p.peer.rkey } };
    for (i = 0; i < 3; ++i) {
        wr[2 + i] = (struct ibv_send_wr){
            .wr_id = 0x42 + i, .sg_list = &sge[4 + i], .num_sge = 1,
            .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
            .next = &wr[3 + i],
            .wr.rdma = { .remote_addr = p.peer.addr + 1500000 + i * 7777,
                         .rkey = p.peer.rkey } };
    }
    wr[5] = (struct ibv_send_wr){
        .wr_id = 0x45, .num_sge = 0, .opcode = IBV_WR_RDMA_READ,
        .send_flags = IBV_SEND_SIGNALED,
        .wr.rdma = { .remote_addr = p.peer.addr, .rkey = p.peer.rkey } };
    svt_post_send(t, p.qp, &wr[0]);
    svt_poll_n(t, p.cq, wc, 6, 10000, "READ completions");
    svt_check_wc(t, &wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 0x40, p.qp,
                 300 * 1024, "300 KiB READ");
    svt_check_wc(t, &wc[1], IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 0x41, p.qp,
                 70000, "3-SGE READ");
    for (i = 0; i < 3; ++i) {
        svt_check_wc(t, &wc[2 + i], IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
                     0x42 + i, p.qp, 33 + i * 1000, "chained READ");
    }
    svt_check_wc(t, &wc[5], IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 0x45, p.qp, 0,
                 "zero-length READ");

    SVT_CHECK(t, !memcmp(lbuf, rimg + 4096, 300 * 1024),
              "300 KiB READ: data differs from the target's pattern");
    SVT_CHECK(t, !memcmp(lbuf + 400000, rimg + MB + 3, 1000) &&
              !memcmp(lbuf + 500000, rimg + MB + 3 + 1000, 60000) &&
              !memcmp(lbuf + 600000, rimg + MB + 3 + 61000, 9000),
              "3-SGE READ: scattered data differs");
    SVT_CHECK(t, lbuf[400000 + 1000] == 0 && lbuf[600000 + 9000] == 0,
              "3-SGE READ wrote past an SGE");
    for (i = 0; i < 3; ++i) {
        SVT_CHECK(t, !memcmp(lbuf + 700000 + i * 5000,
                             rimg + 1500000 + i * 7777, 33 + i * 1000),
                  "chained READ %d data differs", i);
    }
    SVT_LOG(t, "READs: 300 KiB, 3-SGE 70000 B, chain of 3, zero-length: "
            "completions and data verified");
    free(rimg);
    svt_barrier(t);
    svt_pair_destroy(t, &p);
}

/* ---------------------------------------------------------------------- */
/* UC: WRITE, WRITE_WITH_IMM, SEND                                         */

void svt_uc(svt_t *t)
{
    struct ibv_sge sg[SEND_N][3], sge;
    struct ibv_send_wr wr[2];
    struct ibv_recv_wr rwr;
    struct ibv_wc wc[SEND_N];
    svt_pair_t p;
    uint8_t *buf;
    int i;

    svt_pair_setup(t, &p, IBV_QPT_UC, 2 * MB, 64, 3, 0);
    buf = p.mr->addr;

    /* 1) WRITE 200 KiB and WRITE_WITH_IMM 100 KiB */
    if (t->role == 1) {
        rwr = (struct ibv_recv_wr){ .wr_id = 0x77, .num_sge = 0 };
        svt_post_recv(t, p.qp, &rwr);
    }
    svt_barrier(t);
    if (t->role == 0) {
        svt_fill(t, buf, 300 * 1024, 30);
        svt_sge(&sge, p.mr, 0, 200 * 1024);
        wr[0] = (struct ibv_send_wr){
            .wr_id = 1, .sg_list = &sge, .num_sge = 1, .next = &wr[1],
            .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
            .wr.rdma = { .remote_addr = p.peer.addr, .rkey = p.peer.rkey } };
        wr[1] = wr[0];
        wr[1].wr_id    = 2;
        wr[1].next     = NULL;
        wr[1].opcode   = IBV_WR_RDMA_WRITE_WITH_IMM;
        wr[1].imm_data = htonl(0xc0ffee);
        wr[1].sg_list  = &(struct ibv_sge){ .addr = sge.addr + 200 * 1024,
                                            .length = 100 * 1024,
                                            .lkey = p.mr->lkey };
        wr[1].wr.rdma.remote_addr = p.peer.addr + 200 * 1024;
        svt_post_send(t, p.qp, &wr[0]);
        svt_poll_n(t, p.cq, wc, 2, 10000, "UC WRITE completions");
        svt_check_wc(t, &wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 1, p.qp,
                     -1, "UC WRITE");
        svt_check_wc(t, &wc[1], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 2, p.qp,
                     -1, "UC WRITE_WITH_IMM");
    } else {
        svt_poll_n(t, p.cq, wc, 1, 10000, "UC RECV_RDMA_WITH_IMM");
        svt_check_wc(t, &wc[0], IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
                     0x77, p.qp, 100 * 1024, "UC WRITE_WITH_IMM receive");
        SVT_CHECK(t, (wc[0].wc_flags & IBV_WC_WITH_IMM) &&
                  ntohl(wc[0].imm_data) == 0xc0ffee,
                  "UC WRITE_WITH_IMM: imm 0x%x", ntohl(wc[0].imm_data));
        /* the plain WRITE was posted first, so it has landed too */
        svt_verify(t, buf, 300 * 1024, 30, "UC WRITE + WRITE_WITH_IMM data");
        SVT_LOG(t, "UC WRITE 200 KiB + WRITE_WITH_IMM 100 KiB verified");
    }
    svt_barrier(t);

    /* 2) SEND / SEND_WITH_IMM with scatter-gather, as for RC */
    if (t->role == 1) {
        memset(buf, 0, 2 * MB);
        svt_post_scatter_recvs(t, p.qp, p.mr, sg);
    }
    svt_barrier(t);
    if (t->role == 0) {
        svt_post_sends(t, &p);
        svt_poll_n(t, p.cq, wc, SEND_N, 10000, "UC SEND completions");
        for (i = 0; i < SEND_N; ++i) {
            svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, IBV_WC_SEND, 0x300 + i,
                         p.qp, -1, "UC SEND completion");
        }
    } else {
        svt_check_sends(t, &p, sg, "UC");
    }
    svt_barrier(t);
    svt_pair_destroy(t, &p);
}

/* ---------------------------------------------------------------------- */
/* UD                                                                      */

#define UD_N    6
#define UD_GRH  40

void svt_ud(svt_t *t)
{
    struct ibv_recv_wr rwr[UD_N + 1];
    struct ibv_send_wr wr[UD_N + 1];
    struct ibv_sge sge[UD_N + 1];
    struct ibv_wc wc[UD_N + 1];
    size_t mtu, len[UD_N];
    struct ibv_grh *grh;
    struct ibv_ah *ah;
    char what[64];
    svt_pair_t p;
    uint8_t *buf;
    int i;

    svt_pair_setup(t, &p, IBV_QPT_UD, 2 * MB, 64, 1, 0);
    buf = p.mr->addr;
    mtu = 128u << t->port_attr.active_mtu;
    /* both sides agree on sizes: the smaller active MTU is the limit */
    mtu = (mtu < 4096) ? mtu : 4096;
    for (i = 0; i < UD_N; ++i) {
        len[i] = (size_t[]){ 1, 0, 100, 1024, mtu - 1, mtu }[i];
    }

    if (t->role == 1) {
        for (i = 0; i < UD_N + 1; ++i) {
            svt_sge(&sge[i], p.mr, i * 8192, UD_GRH + mtu);
            rwr[i] = (struct ibv_recv_wr){
                .wr_id = 0x500 + i, .sg_list = &sge[i], .num_sge = 1,
                .next = (i < UD_N) ? &rwr[i + 1] : NULL };
        }
        svt_post_recv(t, p.qp, &rwr[0]);
    }
    svt_barrier(t);

    if (t->role == 0) {
        ah = svt_ah(t, &p.peer);
        /* first a datagram with a wrong qkey: the target must drop it */
        for (i = 0; i < UD_N + 1; ++i) {
            svt_fill(t, buf + i * 8192, mtu, 50 + i);
            svt_sge(&sge[i], p.mr, i * 8192, i ? len[i - 1] : 64);
            wr[i] = (struct ibv_send_wr){
                .wr_id = 0x600 + i, .sg_list = &sge[i], .num_sge = 1,
                .opcode = (i & 1) ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
                .send_flags = IBV_SEND_SIGNALED,
                .imm_data = htonl(0xd0d0 + i),
                .next = (i < UD_N) ? &wr[i + 1] : NULL,
                .wr.ud = { .ah = ah, .remote_qpn = p.peer.qpn[0],
                           .remote_qkey = i ? SVT_QKEY : SVT_QKEY + 1 } };
        }
        svt_post_send(t, p.qp, &wr[0]);
        svt_poll_n(t, p.cq, wc, UD_N + 1, 10000, "UD send completions");
        for (i = 0; i < UD_N + 1; ++i) {
            svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, IBV_WC_SEND, 0x600 + i,
                         p.qp, -1, "UD send completion");
        }
        svt_barrier(t);
        SVT_CHECK(t, ibv_destroy_ah(ah) == 0, "ibv_destroy_ah");
    } else {
        svt_poll_n(t, p.cq, wc, UD_N, 10000, "UD receive completions");
        for (i = 0; i < UD_N; ++i) {
            snprintf(what, sizeof(what), "UD datagram %d (%zu B)", i + 1,
                     len[i]);
            svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, IBV_WC_RECV, 0x500 + i,
                         p.qp, UD_GRH + len[i], what);
            SVT_CHECK(t, wc[i].src_qp == p.peer.qpn[0],
                      "%s: src_qp 0x%x, expected 0x%x", what, wc[i].src_qp,
                      p.peer.qpn[0]);
            SVT_CHECK(t, wc[i].wc_flags & IBV_WC_GRH,
                      "%s: IBV_WC_GRH not set (sent with a GRH)", what);
            SVT_CHECK(t, !!(wc[i].wc_flags & IBV_WC_WITH_IMM) == ((i + 1) & 1),
                      "%s: WITH_IMM flag %d", what,
                      !!(wc[i].wc_flags & IBV_WC_WITH_IMM));
            if ((i + 1) & 1) {
                SVT_CHECK(t, ntohl(wc[i].imm_data) == 0xd0d0u + i + 1,
                          "%s: imm 0x%x", what, ntohl(wc[i].imm_data));
            }
            SVT_CHECK(t, p.peer.link_layer == IBV_LINK_LAYER_ETHERNET ||
                      wc[i].slid == p.peer.lid, "%s: slid %u, expected %u",
                      what, wc[i].slid, p.peer.lid);
            grh = (struct ibv_grh *)(buf + i * 8192);
            SVT_CHECK(t, !memcmp(&grh->sgid, &p.peer.gid, 16) &&
                      !memcmp(&grh->dgid, &t->gid, 16),
                      "%s: GRH sgid/dgid are not the sender's/receiver's "
                      "GIDs", what);
            svt_verify(t, buf + i * 8192 + UD_GRH, len[i], 50 + i + 1, what);
        }
        /* the datagram with the wrong qkey must not have arrived */
        SVT_CHECK(t, svt_poll(t, p.cq, wc, 1, 100) == 0,
                  "a datagram with a wrong qkey was delivered (wr_id 0x%llx, "
                  "%u B)", (unsigned long long)wc[0].wr_id, wc[0].byte_len);
        SVT_LOG(t, "%d UD datagrams (0..%zu B): GRH (sgid, dgid), src_qp, "
                "slid, imm, byte_len, data verified; wrong qkey dropped",
                UD_N, mtu);
        svt_barrier(t);
    }
    svt_pair_destroy(t, &p);
}

/* ---------------------------------------------------------------------- */
/* SRQ shared by RC and UC QPs, one CQ for everything                      */

#define SRQ_NQP  6   /* 4 RC + 2 UC */
#define SRQ_MSGS 40  /* per QP */
#define SRQ_BUF  16384
#define SRQ_WQES 64

static size_t srq_len(int q, int m)
{
    return (q * 7919 + m * 104729) % SRQ_BUF;
}

void svt_srq(svt_t *t)
{
    struct ibv_send_wr wr[SRQ_MSGS];
    struct ibv_sge sge[SRQ_MSGS];
    struct ibv_qp *qp[SRQ_NQP];
    struct ibv_recv_wr rwr[SRQ_WQES];
    struct ibv_sge rsge[SRQ_WQES];
    struct ibv_wc wc[64];
    struct ibv_srq *srq = NULL;
    svt_info_t mine, peer;
    int next[SRQ_NQP] = { 0 };
    struct ibv_mr *mr;
    struct ibv_cq *cq;
    uint32_t imm, q, m;
    unsigned total, i, k, n, qpi;
    char what[80];
    size_t off;

    svt_open(t);
    cq = svt_cq(t, 1024);
    mr = svt_mr(t, 8 * MB, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (t->role == 1) {
        struct ibv_srq_init_attr sa = {
            .attr = { .max_wr = SRQ_WQES, .max_sge = 1 } };

        srq = ibv_create_srq(t->pd, &sa);
        SVT_CHECK(t, srq != NULL, "ibv_create_srq: %s", strerror(errno));
    }
    svt_info_init(t, &mine);
    mine.nqp = SRQ_NQP;
    for (i = 0; i < SRQ_NQP; ++i) {
        qp[i] = svt_qp(t, (i < 4) ? IBV_QPT_RC : IBV_QPT_UC, cq, cq, srq,
                       SRQ_MSGS, 1, 0);
        mine.qpn[i] = qp[i]->qp_num;
    }
    svt_xchg(t, &mine, &peer, sizeof(mine));
    for (i = 0; i < SRQ_NQP; ++i) {
        svt_connect(t, qp[i], &peer, peer.qpn[i]);
    }

    if (t->role == 1) {
        for (i = 0; i < SRQ_WQES; ++i) {
            svt_sge(&rsge[i], mr, i * SRQ_BUF, SRQ_BUF);
            rwr[i] = (struct ibv_recv_wr){
                .wr_id = i, .sg_list = &rsge[i], .num_sge = 1,
                .next = (i < SRQ_WQES - 1) ? &rwr[i + 1] : NULL };
        }
        SVT_CHECK(t, ibv_post_srq_recv(srq, &rwr[0],
                                       &(struct ibv_recv_wr *){ 0 }) == 0,
                  "ibv_post_srq_recv(chain of %d)", SRQ_WQES);
    }
    svt_barrier(t);

    if (t->role == 0) {
        /* per QP a chain of messages, QPs interleaved; the target's SRQ has
         * fewer WQEs than messages, so pace by rounds of 8 per QP */
        for (m = 0; m < SRQ_MSGS; m += 8) {
            for (q = 0; q < SRQ_NQP; ++q) {
                for (k = 0; k < 8; ++k) {
                    off = (q * SRQ_MSGS + m + k) * SRQ_BUF;
                    svt_fill(t, (uint8_t *)mr->addr + off,
                             srq_len(q, m + k), (q << 16) | (m + k));
                    svt_sge(&sge[m + k], mr, off, srq_len(q, m + k));
                    wr[m + k] = (struct ibv_send_wr){
                        .wr_id = (q << 16) | (m + k), .sg_list = &sge[m + k],
                        .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
                        .send_flags = IBV_SEND_SIGNALED,
                        .imm_data = htonl((q << 16) | (m + k)),
                        .next = (k < 7) ? &wr[m + k + 1] : NULL };
                }
                svt_post_send(t, qp[q], &wr[m]);
            }
            svt_poll_n(t, cq, wc, 8 * SRQ_NQP, 10000, "SRQ round sends");
            for (i = 0; i < 8 * SRQ_NQP; ++i) {
                q = wc[i].wr_id >> 16;
                SVT_CHECK(t, q < SRQ_NQP, "send wr_id 0x%llx unknown",
                          (unsigned long long)wc[i].wr_id);
                svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, IBV_WC_SEND, ~0ull,
                             qp[q], -1, "send on shared CQ");
            }
            /* the target re-arms its SRQ before the next round */
            svt_barrier(t);
        }
        SVT_LOG(t, "%d QPs x %d SEND_WITH_IMM: send completions on one CQ "
                "carry the right qp_num", SRQ_NQP, SRQ_MSGS);
    } else {
        for (total = 0; total < SRQ_NQP * SRQ_MSGS; ) {
            n = svt_poll(t, cq, wc, 8 * SRQ_NQP, 10000);
            SVT_CHECK(t, n == 8 * SRQ_NQP, "SRQ round: %u of %u receives",
                      n, 8 * SRQ_NQP);
            for (i = 0; i < n; ++i, ++total) {
                imm = ntohl(wc[i].imm_data);
                q   = imm >> 16;
                m   = imm & 0xffff;
                snprintf(what, sizeof(what), "SRQ receive (imm 0x%x)", imm);
                SVT_CHECK(t, q < SRQ_NQP, "%s: unknown QP index", what);
                for (qpi = 0; qpi < SRQ_NQP; ++qpi) {
                    if (qp[qpi]->qp_num == wc[i].qp_num) {
                        break;
                    }
                }
                SVT_CHECK(t, qpi == q, "%s: qp_num 0x%x is QP %u, sender's "
                          "imm says QP %u", what, wc[i].qp_num, qpi, q);
                svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, IBV_WC_RECV, ~0ull,
                             qp[q], srq_len(q, m), what);
                SVT_CHECK(t, m == (uint32_t)next[q], "%s: QP %u message %u "
                          "arrived, expected %d (order on one QP)", what, q, m,
                          next[q]);
                next[q]++;
                svt_verify(t, (uint8_t *)mr->addr + wc[i].wr_id * SRQ_BUF,
                           wc[i].byte_len, imm, what);
                /* re-arm that WQE */
                rwr[0] = (struct ibv_recv_wr){
                    .wr_id = wc[i].wr_id, .sg_list = &rsge[wc[i].wr_id],
                    .num_sge = 1 };
                SVT_CHECK(t, ibv_post_srq_recv(srq, &rwr[0],
                                               &(struct ibv_recv_wr *){ 0 })
                          == 0, "ibv_post_srq_recv");
            }
            svt_barrier(t);
        }
        SVT_LOG(t, "%u receives through one SRQ from 4 RC + 2 UC QPs: "
                "qp_num, imm, byte_len, per-QP order and data verified",
                total);
    }

    svt_barrier(t);
    for (i = 0; i < SRQ_NQP; ++i) {
        SVT_CHECK(t, ibv_destroy_qp(qp[i]) == 0, "ibv_destroy_qp");
    }
    if (srq) {
        SVT_CHECK(t, ibv_destroy_srq(srq) == 0, "ibv_destroy_srq");
    }
    svt_mr_free(mr);
    SVT_CHECK(t, ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
    svt_close(t);
}

/* ---------------------------------------------------------------------- */
/* Inline and unsignaled                                                   */

#define INL_N   64
#define INL_LEN 200

void svt_inline_unsig(svt_t *t)
{
    struct ibv_qp_init_attr ia;
    struct ibv_send_wr wr;
    struct ibv_wc wc[INL_N];
    uint8_t tmp[INL_LEN];
    struct ibv_sge sge;
    struct ibv_recv_wr rwr;
    svt_pair_t p;
    int i, n;

    svt_open(t);
    memset(&p, 0, sizeof(p));
    p.cq = svt_cq(t, 256);
    p.mr = svt_mr(t, MB, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ia = (struct ibv_qp_init_attr){
        .send_cq = p.cq, .recv_cq = p.cq, .qp_type = IBV_QPT_RC,
        .sq_sig_all = 0,
        .cap = { .max_send_wr = 2 * INL_N, .max_recv_wr = 16,
                 .max_send_sge = 1, .max_recv_sge = 1,
                 .max_inline_data = INL_LEN } };
    p.qp = ibv_create_qp(t->pd, &ia);
    SVT_CHECK(t, p.qp != NULL, "ibv_create_qp(inline %d): %s", INL_LEN,
              strerror(errno));
    SVT_CHECK(t, ia.cap.max_inline_data >= INL_LEN, "max_inline_data %u",
              ia.cap.max_inline_data);
    {
        svt_info_t mine;

        svt_info_init(t, &mine);
        mine.qpn[0] = p.qp->qp_num;
        mine.rkey   = p.mr->rkey;
        mine.addr   = (uintptr_t)p.mr->addr;
        svt_xchg(t, &mine, &p.peer, sizeof(mine));
        svt_connect(t, p.qp, &p.peer, p.peer.qpn[0]);
    }
    if (t->role == 1) {
        svt_sge(&sge, p.mr, 512 * 1024, 4096);
        rwr = (struct ibv_recv_wr){ .wr_id = 9, .sg_list = &sge,
                                    .num_sge = 1 };
        svt_post_recv(t, p.qp, &rwr);
    }
    svt_barrier(t);

    if (t->role == 0) {
        /* inline WRITEs from a stack buffer rewritten right after each
         * post, with an lkey that is not registered: inline data is copied
         * at post time and the lkey ignored; every 16th is signaled */
        for (i = 0; i < INL_N; ++i) {
            svt_fill(t, tmp, INL_LEN, 100 + i);
            sge = (struct ibv_sge){ .addr = (uintptr_t)tmp,
                                    .length = INL_LEN, .lkey = 0xdeadbeef };
            wr  = (struct ibv_send_wr){
                .wr_id = i, .sg_list = &sge, .num_sge = 1,
                .opcode = IBV_WR_RDMA_WRITE,
                .send_flags = IBV_SEND_INLINE |
                              ((i % 16 == 15) ? IBV_SEND_SIGNALED : 0),
                .wr.rdma = { .remote_addr = p.peer.addr + i * 256,
                             .rkey = p.peer.rkey } };
            svt_post_send(t, p.qp, &wr);
            memset(tmp, 0xee, sizeof(tmp));
        }
        n = svt_poll(t, p.cq, wc, INL_N, 300);
        SVT_CHECK(t, n == INL_N / 16, "%d completions for %d WRs with every "
                  "16th signaled, expected %d", n, INL_N, INL_N / 16);
        for (i = 0; i < n; ++i) {
            svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
                         i * 16 + 15, p.qp, -1, "signaled inline WRITE");
        }
        /* an inline SEND, signaled */
        svt_fill(t, tmp, INL_LEN, 99);
        sge = (struct ibv_sge){ .addr = (uintptr_t)tmp, .length = INL_LEN };
        wr  = (struct ibv_send_wr){
            .wr_id = 0x99, .sg_list = &sge, .num_sge = 1,
            .opcode = IBV_WR_SEND,
            .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED };
        svt_post_send(t, p.qp, &wr);
        memset(tmp, 0, sizeof(tmp));
        svt_poll_n(t, p.cq, wc, 1, 5000, "inline SEND");
        svt_check_wc(t, &wc[0], IBV_WC_SUCCESS, IBV_WC_SEND, 0x99, p.qp, -1,
                     "inline SEND");
        SVT_LOG(t, "%d inline WRITEs gave exactly %d completions (wr_id "
                "15, 31, ...); inline SEND completed", INL_N, INL_N / 16);
        svt_barrier(t);
    } else {
        svt_poll_n(t, p.cq, wc, 1, 5000, "inline SEND receive");
        svt_check_wc(t, &wc[0], IBV_WC_SUCCESS, IBV_WC_RECV, 9, p.qp,
                     INL_LEN, "inline SEND receive");
        svt_verify(t, (uint8_t *)p.mr->addr + 512 * 1024, INL_LEN, 99,
                   "inline SEND data");
        svt_barrier(t);
        for (i = 0; i < INL_N; ++i) {
            svt_verify(t, (uint8_t *)p.mr->addr + i * 256, INL_LEN, 100 + i,
                       "inline WRITE data (copied at post time)");
        }
        SVT_LOG(t, "%d inline WRITEs and the inline SEND verified", INL_N);
    }
    svt_barrier(t);
    svt_pair_destroy(t, &p);
}

/* ---------------------------------------------------------------------- */
/* rq_psn: an RC responder's expected PSN, as ibv_query_qp reports it,
 * counts the packets of what it executed (WRITE, SEND, READ; an empty
 * message takes one); once its owner moved it to ERR it executes nothing
 * and its PSN stays. A transport that replaces a QP pair learns from it
 * which of its flushed WRITEs landed. */

#define PSN_BUF     (2 * MB)
#define PSN_LATE    MB           /* where the WRITE after ERR aims */

static uint32_t svt_psn_span(uint32_t len, uint32_t mtu)
{
    return (len == 0) ? 1 : (len + mtu - 1) / mtu;
}

static void svt_rq_psn_target(svt_t *t, svt_pair_t *p)
{
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
    struct ibv_recv_wr rwr, *bad;
    uint8_t before[4096];
    struct ibv_sge sge;
    uint32_t want, psn;

    svt_fill(t, p->mr->addr, PSN_BUF, 3);
    memcpy(before, (uint8_t*)p->mr->addr + PSN_LATE, sizeof(before));
    svt_sge(&sge, p->mr, 0, 4096);
    rwr = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
    SVT_CHECK(t, ibv_post_recv(p->qp, &rwr, &bad) == 0, "ibv_post_recv");
    svt_barrier(t);                     /* receive posted */
    want = (uint32_t)svt_recv_u64(t);   /* everything completed */
    psn  = svt_qp_query(t, p->qp, IBV_QP_RQ_PSN).rq_psn;
    SVT_CHECK(t, psn == want, "rq_psn %u after the messages, expected %u",
              psn, want);
    SVT_CHECK(t, ibv_modify_qp(p->qp, &a, IBV_QP_STATE) == 0, "QP to ERR");
    svt_barrier(t);                     /* stopped */
    svt_barrier(t);                     /* the late WRITE failed */
    psn = svt_qp_query(t, p->qp, IBV_QP_RQ_PSN).rq_psn;
    SVT_CHECK(t, psn == want, "rq_psn %u after ERR, expected %u", psn, want);
    SVT_CHECK(t, !memcmp((uint8_t*)p->mr->addr + PSN_LATE, before,
                         sizeof(before)), "a WRITE landed on a QP in ERR");
}

void svt_rq_psn(svt_t *t)
{
    static const uint32_t len[] = { 65536, 0, 100, 10000, 4097 };
    static const enum ibv_wr_opcode op[] = {
        IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE, IBV_WR_SEND, IBV_WR_RDMA_READ,
        IBV_WR_RDMA_WRITE };
    const int n = sizeof(len) / sizeof(len[0]);
    struct ibv_send_wr wr[5];
    struct ibv_sge sge[5];
    struct ibv_wc wc[5];
    uint32_t mtu, want = 0;
    svt_pair_t p;
    int i;

    svt_pair_setup(t, &p, IBV_QPT_RC, PSN_BUF, 64, 1, 0);
    if (t->role == 1) {
        svt_rq_psn_target(t, &p);
        svt_pair_destroy(t, &p);
        return;
    }

    mtu = 128u << svt_qp_query(t, p.qp, IBV_QP_PATH_MTU).path_mtu;
    svt_fill(t, p.mr->addr, PSN_BUF, 5);
    memset(wr, 0, sizeof(wr));
    for (i = 0; i < n; ++i) {
        svt_sge(&sge[i], p.mr, i * 131072, len[i]);
        wr[i] = (struct ibv_send_wr){
            .wr_id = i, .sg_list = &sge[i], .num_sge = (len[i] > 0),
            .opcode = op[i], .send_flags = IBV_SEND_SIGNALED,
            .next = (i + 1 < n) ? &wr[i + 1] : NULL,
            .wr.rdma = { .remote_addr = p.peer.addr + i * 131072,
                         .rkey = p.peer.rkey } };
        want += svt_psn_span(len[i], mtu);
    }
    svt_barrier(t);
    svt_post_send(t, p.qp, &wr[0]);
    svt_poll_n(t, p.cq, wc, n, 10000, "the messages");
    for (i = 0; i < n; ++i) {
        SVT_CHECK(t, wc[i].status == IBV_WC_SUCCESS, "WR %d: %s", i,
                  ibv_wc_status_str(wc[i].status));
    }
    svt_send_u64(t, want);
    svt_barrier(t);

    /* the target stopped: this one is not executed, and fails */
    svt_sge(&sge[0], p.mr, 0, 4096);
    wr[0] = (struct ibv_send_wr){
        .wr_id = 9, .sg_list = &sge[0], .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
        .wr.rdma = { .remote_addr = p.peer.addr + PSN_LATE,
                     .rkey = p.peer.rkey } };
    svt_post_send(t, p.qp, &wr[0]);
    svt_poll_n(t, p.cq, wc, 1, 10000, "the WRITE after ERR");
    SVT_CHECK(t, wc[0].status != IBV_WC_SUCCESS,
              "a WRITE to a QP in ERR succeeded");
    SVT_LOG(t, "rq_psn %u: %d messages of mtu %u counted", want, n, mtu);
    svt_barrier(t);
    svt_pair_destroy(t, &p);
}

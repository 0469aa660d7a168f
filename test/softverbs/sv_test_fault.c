/*
 * Errors a NIC reports: bad keys, bounds and access rights, a receive buffer
 * too small, a deregistered region, and a peer killed mid-transfer.
 */
#include "sv_test.h"

#include <sys/mman.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MB (1024 * 1024)

/* ---------------------------------------------------------------------- */
/* Bad keys                                                                */

enum {
    BK_RKEY,        /* RC WRITE with a wrong rkey */
    BK_LKEY,        /* RC WRITE from a wrong lkey */
    BK_BOUNDS,      /* RC WRITE past the end of the remote region */
    BK_READ_ACCESS, /* RC READ of a region without REMOTE_READ */
    BK_DEREG,       /* RC WRITE with the rkey of a deregistered region */
    BK_RECV_LEN,    /* RC SEND larger than the receive buffer */
    BK_UC_RKEY,     /* UC WRITE with a wrong rkey: silently dropped */
    BK_LAST
};

static const char *bk_name[BK_LAST] = {
    [BK_RKEY]        = "wrong rkey",
    [BK_LKEY]        = "wrong lkey",
    [BK_BOUNDS]      = "remote bounds",
    [BK_READ_ACCESS] = "READ without REMOTE_READ",
    [BK_DEREG]       = "deregistered rkey",
    [BK_RECV_LEN]    = "SEND > receive buffer",
    [BK_UC_RKEY]     = "UC wrong rkey",
};

#define BK_LEN 65536

/* After an error the QP is in ERR: a further post is either refused or
 * flushed, never executed. */
static void svt_check_flushed(svt_t *t, struct ibv_qp *qp, struct ibv_cq *cq,
                              struct ibv_mr *mr, const svt_info_t *peer,
                              const char *what)
{
    struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = 64,
                           .lkey = mr->lkey };
    struct ibv_send_wr wr = {
        .wr_id = 0xf1, .sg_list = &sge, .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
        .wr.rdma = { .remote_addr = peer->addr, .rkey = peer->rkey } };
    struct ibv_send_wr *bad;
    struct ibv_wc wc;
    int ret;

    SVT_CHECK(t, svt_qp_state(t, qp) == IBV_QPS_ERR, "%s: QP state %d, "
              "expected ERR", what, svt_qp_state(t, qp));
    ret = ibv_post_send(qp, &wr, &bad);
    if (ret == 0) {
        svt_poll_n(t, cq, &wc, 1, 5000, "post after ERR");
        svt_check_wc(t, &wc, IBV_WC_WR_FLUSH_ERR, -1, 0xf1, qp, -1,
                     "WR posted to a QP in ERR");
    }
}

void svt_bad_keys(svt_t *t)
{
    struct ibv_mr *mr, *mr_ro, *mr_gone = NULL;
    struct ibv_send_wr wr[2];
    struct ibv_recv_wr rwr;
    struct ibv_sge sge[2];
    struct ibv_wc wc[2];
    svt_info_t mine, peer;
    struct ibv_qp *qp;
    struct ibv_cq *cq;
    uint32_t gone_rkey;
    int c, i;

    svt_open(t);
    cq = svt_cq(t, 256);
    mr = svt_mr(t, BK_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ);
    /* target: a region without remote read, and one deregistered below */
    mr_ro   = svt_mr(t, BK_LEN, IBV_ACCESS_LOCAL_WRITE |
                                IBV_ACCESS_REMOTE_WRITE);
    mr_gone = svt_mr(t, BK_LEN, IBV_ACCESS_LOCAL_WRITE |
                                IBV_ACCESS_REMOTE_WRITE);
    gone_rkey = mr_gone->rkey;
    svt_mr_free(mr_gone);
    if (t->role == 0) {
        svt_fill(t, mr->addr, BK_LEN, 8);
    }

    for (c = 0; c < BK_LAST; ++c) {
        qp = svt_qp(t, (c == BK_UC_RKEY) ? IBV_QPT_UC : IBV_QPT_RC, cq, cq,
                    NULL, 16, 2, 0);
        svt_info_init(t, &mine);
        mine.qpn[0] = qp->qp_num;
        mine.rkey   = mr->rkey;
        mine.addr   = (uintptr_t)mr->addr;
        mine.len    = BK_LEN;
        mine.rkey2  = mr_ro->rkey;
        mine.addr2  = (uintptr_t)mr_ro->addr;
        mine.len2   = gone_rkey;  /* the stale key travels in len2 */
        svt_xchg(t, &mine, &peer, sizeof(mine));
        /* short timeout: an error must not hide behind retries */
        svt_connect_rc(t, qp, &peer, peer.qpn[0], 12, 3);
        if ((t->role == 1) && (c == BK_RECV_LEN)) {
            sge[0] = (struct ibv_sge){ .addr = (uintptr_t)mr->addr,
                                       .length = 100, .lkey = mr->lkey };
            rwr    = (struct ibv_recv_wr){ .wr_id = 0xbb, .sg_list = sge,
                                           .num_sge = 1 };
            svt_post_recv(t, qp, &rwr);
        }
        svt_barrier(t);

        if (t->role == 0) {
            /* the bad WR, then a good one chained behind it */
            sge[0] = (struct ibv_sge){ .addr = (uintptr_t)mr->addr,
                                       .length = 1000, .lkey = mr->lkey };
            sge[1] = sge[0];
            wr[0]  = (struct ibv_send_wr){
                .wr_id = 0xb0 + c, .sg_list = &sge[0], .num_sge = 1,
                .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
                .next = &wr[1],
                .wr.rdma = { .remote_addr = peer.addr, .rkey = peer.rkey } };
            wr[1]  = wr[0];
            wr[1].wr_id   = 0xc0 + c;
            wr[1].sg_list = &sge[1];
            wr[1].next    = NULL;
            switch (c) {
            case BK_RKEY:
            case BK_UC_RKEY:
                wr[0].wr.rdma.rkey = peer.rkey ^ 0x5a5a00;
                break;
            case BK_LKEY:
                sge[0].lkey = mr->lkey ^ 0x5a5a00;
                break;
            case BK_BOUNDS:
                wr[0].wr.rdma.remote_addr = peer.addr + BK_LEN - 10;
                break;
            case BK_READ_ACCESS:
                wr[0].opcode       = IBV_WR_RDMA_READ;
                wr[0].wr.rdma.rkey = peer.rkey2;
                wr[0].wr.rdma.remote_addr = peer.addr2;
                break;
            case BK_DEREG:
                wr[0].wr.rdma.rkey = (uint32_t)peer.len2;
                break;
            case BK_RECV_LEN:
                wr[0].opcode = IBV_WR_SEND;
                sge[0].length = 200;
                break;
            }
            svt_post_send(t, qp, &wr[0]);
            svt_poll_n(t, cq, wc, 2, 10000, bk_name[c]);
            if (c == BK_UC_RKEY) {
                /* UC has no acknowledgements: the sender sees success */
                svt_check_wc(t, &wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
                             0xb0 + c, qp, -1, bk_name[c]);
                svt_check_wc(t, &wc[1], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
                             0xc0 + c, qp, -1, "UC WRITE after the bad one");
            } else {
                svt_check_wc(t, &wc[0],
                             (c == BK_LKEY) ? IBV_WC_LOC_PROT_ERR :
                             (c == BK_RECV_LEN) ? IBV_WC_REM_INV_REQ_ERR :
                                                  IBV_WC_REM_ACCESS_ERR,
                             -1, 0xb0 + c, qp, -1, bk_name[c]);
                svt_check_wc(t, &wc[1], IBV_WC_WR_FLUSH_ERR, -1, 0xc0 + c, qp,
                             -1, "WR chained after the failed one");
                svt_check_flushed(t, qp, cq, mr, &peer, bk_name[c]);
            }
            SVT_LOG(t, "%-26s -> %s, then %s", bk_name[c],
                    ibv_wc_status_str(wc[0].status),
                    ibv_wc_status_str(wc[1].status));
            svt_barrier(t);
        } else {
            svt_barrier(t);
            if (c == BK_RECV_LEN) {
                svt_poll_n(t, cq, wc, 1, 5000, "receive of a too long SEND");
                svt_check_wc(t, &wc[0], IBV_WC_LOC_LEN_ERR, -1, 0xbb, qp, -1,
                             "receive of a too long SEND");
            } else if (c == BK_UC_RKEY) {
                /* the good WRITE landed, the bad one did not */
                svt_verify(t, mr->addr, 1000, 8, "UC WRITE after a bad one");
                memset(mr->addr, 0, BK_LEN);
            } else {
                for (i = 0; i < BK_LEN; ++i) {
                    SVT_CHECK(t, ((uint8_t *)mr->addr)[i] == 0,
                              "%s: target memory modified at offset %d",
                              bk_name[c], i);
                }
                for (i = 0; i < BK_LEN; ++i) {
                    SVT_CHECK(t, ((uint8_t *)mr_ro->addr)[i] == 0,
                              "%s: protected region modified", bk_name[c]);
                }
            }
            /* drain whatever the responder reported (an RC responder
             * error may flush its own receive queue) */
            while (svt_poll(t, cq, wc, 2, 50) > 0) {
            }
        }
        svt_barrier(t);
        SVT_CHECK(t, ibv_destroy_qp(qp) == 0, "ibv_destroy_qp: %s",
                  strerror(errno));
    }
    if (t->role == 1) {
        SVT_LOG(t, "target memory untouched by every failed access");
    }
    svt_barrier(t);
    svt_mr_free(mr_ro);
    svt_mr_free(mr);
    SVT_CHECK(t, ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
    svt_close(t);
}

/* ---------------------------------------------------------------------- */
/* Killed peer                                                             */

void svt_killed_peer(svt_t *t)
{
    const double limit = svt_env_long("SVT_KILL_LIMIT_S", 10);
    struct ibv_qp *rc, *uc;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    struct ibv_wc wc[16];
    svt_info_t mine, peer;
    struct ibv_mr *mr;
    struct ibv_cq *cq;
    unsigned posted = 0, ok = 0, flushed = 0, i;
    uint64_t t_kill = 0, t_err = 0;
    int outstanding = 0, n, j, status, err_seen = 0;

    svt_open(t);
    cq = svt_cq(t, 256);
    mr = svt_mr(t, 16 * MB, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    rc = svt_qp(t, IBV_QPT_RC, cq, cq, NULL, 64, 1, 0);
    uc = svt_qp(t, IBV_QPT_UC, cq, cq, NULL, 64, 1, 0);
    svt_info_init(t, &mine);
    mine.qpn[0] = rc->qp_num;
    mine.qpn[1] = uc->qp_num;
    mine.rkey   = mr->rkey;
    mine.addr   = (uintptr_t)mr->addr;
    svt_xchg(t, &mine, &peer, sizeof(mine));
    /* timeout 14 (67 ms), 7 retries: about half a second to give up */
    svt_connect_rc(t, rc, &peer, peer.qpn[0], 14, 7);
    svt_connect(t, uc, &peer, peer.qpn[1]);
    svt_barrier(t);

    if (t->role == 1) {
        /* the target just sits there until it is killed */
        for (;;) {
            pause();
        }
    }

    svt_fill(t, mr->addr, 16 * MB, 4);
    while (!err_seen) {
        while (outstanding < 8) {
            sge = (struct ibv_sge){
                .addr = (uintptr_t)mr->addr + (posted % 16) * MB,
                .length = MB, .lkey = mr->lkey };
            wr  = (struct ibv_send_wr){
                .wr_id = posted, .sg_list = &sge, .num_sge = 1,
                .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
                .wr.rdma = { .remote_addr = peer.addr + (posted % 16) * MB,
                             .rkey = peer.rkey } };
            svt_post_send(t, rc, &wr);
            ++posted;
            ++outstanding;
        }
        n = svt_poll_some(t, cq, wc, 16, 1000);
        if ((n == 0) && t_kill &&
            ((svt_now_ns() - t_kill) / 1e9 > limit)) {
            SVT_CHECK(t, 0, "no error completion %.0f s after the peer was "
                      "killed (%u WRITEs ok, %d outstanding)", limit, ok,
                      outstanding);
        }
        for (j = 0; j < n; ++j, --outstanding) {
            if (wc[j].status == IBV_WC_SUCCESS) {
                SVT_CHECK(t, !err_seen, "success after the error");
                ++ok;
                continue;
            }
            SVT_CHECK(t, t_kill != 0, "error %s before the peer was killed",
                      ibv_wc_status_str(wc[j].status));
            svt_check_wc(t, &wc[j], IBV_WC_RETRY_EXC_ERR, -1, ~0ull, rc, -1,
                         "first error after the peer died");
            t_err    = svt_now_ns();
            err_seen = 1;
            /* everything behind it is flushed */
            for (++j, --outstanding; j < n; ++j, --outstanding) {
                svt_check_wc(t, &wc[j], IBV_WC_WR_FLUSH_ERR, -1, ~0ull, rc,
                             -1, "WR behind RETRY_EXC_ERR");
                ++flushed;
            }
            break;
        }
        if ((ok >= 40) && !t_kill) {
            svt_kill_child(t);
            while (waitpid(t->child, &status, 0) < 0) {
            }
            t_kill = svt_now_ns();
            SVT_LOG(t, "peer killed (SIGKILL) after %u 1 MiB WRITEs", ok);
        }
    }
    while (outstanding > 0) {
        n = svt_poll_some(t, cq, wc, 16, 5000);
        SVT_CHECK(t, n > 0, "%d WRs neither completed nor flushed",
                  outstanding);
        for (j = 0; j < n; ++j, --outstanding, ++flushed) {
            svt_check_wc(t, &wc[j], IBV_WC_WR_FLUSH_ERR, -1, ~0ull, rc, -1,
                         "WR behind RETRY_EXC_ERR");
        }
    }
    SVT_CHECK(t, rc->state == IBV_QPS_RTS, "ibv_qp.state %d after "
              "RETRY_EXC_ERR: only ibv_modify_qp/ibv_query_qp may change it",
              rc->state);
    SVT_CHECK(t, svt_qp_state(t, rc) == IBV_QPS_ERR, "RC QP state %d after "
              "RETRY_EXC_ERR, expected ERR", svt_qp_state(t, rc));
    SVT_LOG(t, "RETRY_EXC_ERR %.2f s after the kill, then %u flushed; "
            "QP in ERR", (t_err - t_kill) / 1e9, flushed);

    /* UC to the dead peer: dropped, but the sender completes */
    for (i = 0; i < 4; ++i) {
        sge = (struct ibv_sge){ .addr = (uintptr_t)mr->addr, .length = 4096,
                                .lkey = mr->lkey };
        wr  = (struct ibv_send_wr){
            .wr_id = 0x900 + i, .sg_list = &sge, .num_sge = 1,
            .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
            .wr.rdma = { .remote_addr = peer.addr, .rkey = peer.rkey } };
        svt_post_send(t, uc, &wr);
    }
    svt_poll_n(t, cq, wc, 4, 5000, "UC WRITE to a dead peer");
    for (i = 0; i < 4; ++i) {
        svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0x900 + i,
                     uc, -1, "UC WRITE to a dead peer");
    }
    SVT_LOG(t, "UC WRITEs to the dead peer complete (dropped on the wire)");

    SVT_CHECK(t, ibv_destroy_qp(rc) == 0, "ibv_destroy_qp");
    SVT_CHECK(t, ibv_destroy_qp(uc) == 0, "ibv_destroy_qp");
    svt_mr_free(mr);
    SVT_CHECK(t, ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
    svt_close(t);
}

/* ---------------------------------------------------------------------- */
/* A path down                                                             */

#define SVT_STALL_QPS    32    /* some hash to the dead path, most do not */
#define SVT_STALL_MSGS   400   /* more than the CQ's reorder window */
#define SVT_STALL_MS     200   /* far below the NIC's ~0.54 s of retries */

static void svt_stall_post(svt_t *t, struct ibv_qp *qp, struct ibv_mr *mr,
                           const svt_info_t *peer, enum ibv_wr_opcode opcode,
                           uint64_t wr_id)
{
    struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = 4096,
                           .lkey = mr->lkey };
    struct ibv_send_wr wr = {
        .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
        .opcode = opcode, .send_flags = IBV_SEND_SIGNALED,
        .wr.rdma = { .remote_addr = peer->addr, .rkey = peer->rkey } };

    svt_post_send(t, qp, &wr);
}

typedef struct svt_stall {
    struct ibv_qp *qp[SVT_STALL_QPS];
    struct ibv_cq *cq;
    struct ibv_mr *mr;
    svt_info_t    peer;
    unsigned      stuck[SVT_STALL_QPS], healthy[SVT_STALL_QPS];
    unsigned      nstuck, nhealthy;
} svt_stall_t;

/* RC QPs to the peer, which allows `access` to its memory; 0 on the
 * target's side, whose NIC only answers until the initiator is done */
static int svt_stall_open(svt_t *t, svt_stall_t *s, int access)
{
    svt_info_t mine;
    unsigned i;

    svt_open(t);
    s->cq = svt_cq(t, 1024);
    s->mr = svt_mr(t, MB, IBV_ACCESS_LOCAL_WRITE | access);
    svt_info_init(t, &mine);
    for (i = 0; i < SVT_STALL_QPS; ++i) {
        s->qp[i]    = svt_qp(t, IBV_QPT_RC, s->cq, s->cq, NULL, 64, 1, 0);
        mine.qpn[i] = s->qp[i]->qp_num;
    }
    mine.rkey = s->mr->rkey;
    mine.addr = (uintptr_t)s->mr->addr;
    svt_xchg(t, &mine, &s->peer, sizeof(mine));
    for (i = 0; i < SVT_STALL_QPS; ++i) {
        svt_connect_rc(t, s->qp[i], &s->peer, s->peer.qpn[i], 14, 7);
    }
    svt_barrier(t);
    if (t->role == 1) {
        svt_barrier(t);
        return 0;
    }
    return 1;
}

/* One `opcode` per QP: those on the dead path stay out (stuck) */
static void svt_stall_split(svt_t *t, svt_stall_t *s,
                            enum ibv_wr_opcode opcode)
{
    int out[SVT_STALL_QPS];
    struct ibv_wc wc[64];
    unsigned i;
    uint64_t t0;
    int n, j;

    for (i = 0; i < SVT_STALL_QPS; ++i) {
        out[i] = 1;
        svt_stall_post(t, s->qp[i], s->mr, &s->peer, opcode, i);
    }
    t0 = svt_now_ns();
    while ((svt_now_ns() - t0) < 50000000ull) {
        n = svt_poll_some(t, s->cq, wc, 64, 10);
        for (j = 0; j < n; ++j) {
            svt_check_wc(t, &wc[j], IBV_WC_SUCCESS, -1, ~0ull, NULL, -1,
                         "a WR on a path that is up");
            out[wc[j].wr_id] = 0;
        }
    }
    s->nstuck = s->nhealthy = 0;
    for (i = 0; i < SVT_STALL_QPS; ++i) {
        if (out[i]) {
            s->stuck[s->nstuck++] = i;
        } else {
            s->healthy[s->nhealthy++] = i;
        }
    }
    SVT_CHECK(t, (s->nstuck > 0) && (s->nhealthy > 0), "%u of %u QPs on "
              "the dead path: the test needs some of each", s->nstuck,
              SVT_STALL_QPS);
}

/* SVT_STALL_MSGS of `opcode` on the healthy QPs complete at once */
static void svt_stall_healthy(svt_t *t, svt_stall_t *s,
                              enum ibv_wr_opcode opcode, const char *what)
{
    struct ibv_wc wc[64];
    unsigned i, done = 0;
    uint64_t t0 = svt_now_ns();

    for (i = 0; i < SVT_STALL_MSGS; ++i) {
        svt_stall_post(t, s->qp[s->healthy[i % s->nhealthy]], s->mr,
                       &s->peer, opcode, 1000 + i);
        if ((i % 32) == 31) {
            svt_poll_n(t, s->cq, wc, 32, SVT_STALL_MS, what);
            done += 32;
        }
    }
    svt_poll_n(t, s->cq, wc, SVT_STALL_MSGS - done, SVT_STALL_MS, what);
    SVT_LOG(t, "%u QPs of %u on the dead path; %u WRs on the others took "
            "%.1f ms", s->nstuck, SVT_STALL_QPS, SVT_STALL_MSGS,
            (svt_now_ns() - t0) / 1e6);
}

static void svt_stall_close(svt_t *t, svt_stall_t *s)
{
    unsigned i;

    for (i = 0; i < SVT_STALL_QPS; ++i) {
        SVT_CHECK(t, ibv_destroy_qp(s->qp[i]) == 0, "ibv_destroy_qp");
    }
    svt_mr_free(s->mr);
    SVT_CHECK(t, ibv_destroy_cq(s->cq) == 0, "ibv_destroy_cq");
    svt_close(t);
}

/* RC QPs whose core path is down (SOFTVERBS_PATH_DOWN) resend until their
 * NIC gives up. Meanwhile they hold up neither the sender's link nor the
 * CQ they share with healthy QPs: the healthy QPs' completions, many more
 * than the CQ's reorder window, come at once. Moved to ERR, they complete
 * what they hold at once, flushed, as a NIC does. */
void svt_stalled_path(svt_t *t)
{
    struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
    struct ibv_wc wc[64];
    svt_stall_t s;
    unsigned i;
    uint64_t t0;

    if (!svt_stall_open(t, &s, IBV_ACCESS_REMOTE_WRITE)) {
        goto out;
    }
    svt_stall_split(t, &s, IBV_WR_RDMA_WRITE);
    svt_stall_healthy(t, &s, IBV_WR_RDMA_WRITE, "WRITEs behind a stalled "
                      "QP's (link or CQ held up)");

    /* to ERR: what the stalled QPs hold is flushed at once */
    t0 = svt_now_ns();
    for (i = 0; i < s.nstuck; ++i) {
        SVT_CHECK(t, ibv_modify_qp(s.qp[s.stuck[i]], &err, IBV_QP_STATE) == 0,
                  "ibv_modify_qp(ERR)");
    }
    svt_poll_n(t, s.cq, wc, s.nstuck, SVT_STALL_MS,
               "flush of the stalled WRs");
    for (i = 0; i < s.nstuck; ++i) {
        svt_check_wc(t, &wc[i], IBV_WC_WR_FLUSH_ERR, -1, ~0ull, NULL, -1,
                     "a stalled WR after ibv_modify_qp(ERR)");
    }
    SVT_LOG(t, "flushed %.1f ms after ibv_modify_qp(ERR)",
            (svt_now_ns() - t0) / 1e6);
    SVT_CHECK(t, svt_poll(t, s.cq, wc, 1, 700) == 0, "a completion after "
              "the flush (the NIC's give-up must not follow it)");
    svt_barrier(t);
out:
    svt_stall_close(t, &s);
}

/* A READ whose request the timer resends until its path is back (within
 * the NIC's retries) gets its response then. That response must not hold
 * the responder's link from the moment it was modelled: READs on the
 * healthy QPs meanwhile come back at once, and the stuck ones succeed
 * once the path is back. */
void svt_late_read(svt_t *t)
{
    struct ibv_wc wc[SVT_STALL_QPS];
    svt_stall_t s;
    unsigned i;

    if (!svt_stall_open(t, &s, IBV_ACCESS_REMOTE_READ)) {
        goto out;
    }
    svt_stall_split(t, &s, IBV_WR_RDMA_READ);
    svt_stall_healthy(t, &s, IBV_WR_RDMA_READ, "READs behind a READ "
                      "response modelled late (the responder's link held "
                      "up)");
    svt_poll_n(t, s.cq, wc, s.nstuck, 2000, "READs on the path come back");
    for (i = 0; i < s.nstuck; ++i) {
        svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, IBV_WC_RDMA_READ, ~0ull,
                     NULL, -1, "a READ once its path is back");
    }
    svt_barrier(t);
out:
    svt_stall_close(t, &s);
}

/* ---------------------------------------------------------------------- */
/* An unsignaled WR completes before the signaled one after it             */

#define SVT_UNSIG_ROUNDS 200
#define SVT_UNSIG_DEPTH  64

static void svt_unsig_wr(struct ibv_mr *mr, uint32_t imm, uint64_t wr_id,
                         int flags, struct ibv_send_wr *next_wr,
                         struct ibv_send_wr *wr, struct ibv_sge *sge)
{
    svt_sge(sge, mr, 0, 64);
    *wr = (struct ibv_send_wr){
        .wr_id = wr_id, .sg_list = sge, .num_sge = 1,
        .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = flags,
        .imm_data = htonl(imm), .next = next_wr };
}

static void svt_unsig_repost(svt_t *t, struct ibv_qp *qp, struct ibv_mr *mr,
                             uint64_t wr_id)
{
    struct ibv_sge sge;
    struct ibv_recv_wr rwr = { .wr_id = wr_id, .sg_list = &sge,
                               .num_sge = 1 };

    svt_sge(&sge, mr, 0, 64);
    svt_post_recv(t, qp, &rwr);
}

/* On QP A an unsignaled SEND and a signaled one; once the signaled one
 * completed, a SEND on QP B. An RC completion retires every WR before it
 * on its QP, so by then A's unsignaled SEND arrived too: at the target it
 * comes before B's, however often the lossy fabric made A's NIC resend
 * (the completion of the signaled SEND used to ignore the unsignaled one's
 * resends, and B's SEND overtook it). */
void svt_unsig_order(svt_t *t)
{
    struct ibv_send_wr wr[2];
    struct ibv_sge sge[2];
    struct ibv_qp *qa, *qb;
    struct ibv_wc wc[16];
    svt_info_t mine, peer;
    struct ibv_mr *mr;
    struct ibv_cq *cq;
    unsigned got = 0, i;
    uint32_t imm, last_a = 0;
    int n, j, seen_a = 0;

    svt_open(t);
    cq = svt_cq(t, 4 * SVT_UNSIG_DEPTH);
    mr = svt_mr(t, 4096, IBV_ACCESS_LOCAL_WRITE);
    qa = svt_qp(t, IBV_QPT_RC, cq, cq, NULL, SVT_UNSIG_DEPTH, 1, 0);
    qb = svt_qp(t, IBV_QPT_RC, cq, cq, NULL, SVT_UNSIG_DEPTH, 1, 0);
    svt_info_init(t, &mine);
    mine.qpn[0] = qa->qp_num;
    mine.qpn[1] = qb->qp_num;
    svt_xchg(t, &mine, &peer, sizeof(mine));
    svt_connect_rc(t, qa, &peer, peer.qpn[0], 10, 7);
    svt_connect_rc(t, qb, &peer, peer.qpn[1], 10, 7);
    if (t->role == 1) {
        for (i = 0; i < SVT_UNSIG_DEPTH; ++i) {
            svt_unsig_repost(t, qa, mr, 0);
            svt_unsig_repost(t, qb, mr, 1);
        }
    }
    svt_barrier(t);

    if (t->role == 0) {
        for (i = 0; i < SVT_UNSIG_ROUNDS; ++i) {
            /* two doorbells: a loss of the first is found by the NIC's
             * timer, not by the second's NAK */
            svt_unsig_wr(mr, 2 * i, 0, 0, NULL, &wr[0], &sge[0]);
            svt_post_send(t, qa, &wr[0]);
            svt_unsig_wr(mr, 2 * i + 1, i, IBV_SEND_SIGNALED, NULL, &wr[1],
                         &sge[1]);
            svt_post_send(t, qa, &wr[1]);
            svt_poll_n(t, cq, wc, 1, 10000, "signaled SEND on A");
            svt_check_wc(t, &wc[0], IBV_WC_SUCCESS, IBV_WC_SEND, i, qa, -1,
                         "signaled SEND on A");
            svt_unsig_wr(mr, i, i, IBV_SEND_SIGNALED, NULL, &wr[0], &sge[0]);
            svt_post_send(t, qb, &wr[0]);
            svt_poll_n(t, cq, wc, 1, 10000, "SEND on B");
        }
        SVT_LOG(t, "%u rounds sent", SVT_UNSIG_ROUNDS);
    } else {
        while (got < 3 * SVT_UNSIG_ROUNDS) {
            n = svt_poll_some(t, cq, wc, 16, 10000);
            SVT_CHECK(t, n > 0, "stuck after %u of %u messages", got,
                      3 * SVT_UNSIG_ROUNDS);
            for (j = 0; j < n; ++j, ++got) {
                svt_check_wc(t, &wc[j], IBV_WC_SUCCESS, IBV_WC_RECV, ~0ull,
                             NULL, -1, "a SEND");
                imm = ntohl(wc[j].imm_data);
                if (wc[j].qp_num == qa->qp_num) {
                    if (!(imm & 1)) {
                        last_a = imm / 2;
                        seen_a = 1;
                    }
                    svt_unsig_repost(t, qa, mr, 0);
                    continue;
                }
                SVT_CHECK(t, seen_a && (last_a >= imm), "B's SEND %u arrived "
                          "before A's unsignaled SEND %u (the last from A: "
                          "%u)", imm, imm, last_a);
                svt_unsig_repost(t, qb, mr, 1);
            }
        }
        SVT_LOG(t, "%u rounds: every SEND on B after A's unsignaled one",
                SVT_UNSIG_ROUNDS);
    }
    svt_barrier(t);
    SVT_CHECK(t, ibv_destroy_qp(qa) == 0, "ibv_destroy_qp");
    SVT_CHECK(t, ibv_destroy_qp(qb) == 0, "ibv_destroy_qp");
    svt_mr_free(mr);
    SVT_CHECK(t, ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
    svt_close(t);
}

/* ---------------------------------------------------------------------- */
/* ibv_qp.state belongs to the user                                        */

/* An error completion (requester) and a remote error (responder) move the
 * QPs to ERR inside the NIC; as with libibverbs, the ibv_qp.state field only
 * follows ibv_modify_qp and ibv_query_qp (UCX asserts on it). */
void svt_qp_state_field(svt_t *t)
{
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
    struct ibv_recv_wr rwr = { .wr_id = 7, .num_sge = 0 };
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    struct ibv_wc wc;
    svt_pair_t p;

    svt_pair_setup(t, &p, IBV_QPT_RC, 65536, 16, 1, 0);
    if (t->role == 1) {
        svt_post_recv(t, p.qp, &rwr);
    }
    svt_barrier(t);
    if (t->role == 0) {
        svt_sge(&sge, p.mr, 0, 64);
        wr = (struct ibv_send_wr){
            .wr_id = 1, .sg_list = &sge, .num_sge = 1,
            .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
            .wr.rdma = { .remote_addr = p.peer.addr,
                         .rkey = p.peer.rkey ^ 0x5a5a00 } };
        svt_post_send(t, p.qp, &wr);
        svt_poll_n(t, p.cq, &wc, 1, 5000, "WRITE with a wrong rkey");
        svt_check_wc(t, &wc, IBV_WC_REM_ACCESS_ERR, -1, 1, p.qp, -1,
                     "WRITE with a wrong rkey");
    } else {
        /* the remote error moved our QP to ERR: the receive is flushed */
        svt_poll_n(t, p.cq, &wc, 1, 5000, "receive behind a remote error");
        svt_check_wc(t, &wc, IBV_WC_WR_FLUSH_ERR, -1, 7, p.qp, -1,
                     "receive behind a remote error");
    }
    SVT_LOG(t, "QP in ERR inside; ibv_qp.state %d (RTS is %d)", p.qp->state,
            IBV_QPS_RTS);
    SVT_CHECK(t, p.qp->state == IBV_QPS_RTS, "ibv_qp.state %d after an "
              "internal move to ERR: only ibv_modify_qp/ibv_query_qp may "
              "change it", p.qp->state);
    SVT_CHECK(t, svt_qp_state(t, p.qp) == IBV_QPS_ERR, "ibv_query_qp: %d, "
              "expected ERR", svt_qp_state(t, p.qp));
    SVT_CHECK(t, p.qp->state == IBV_QPS_ERR, "ibv_qp.state %d after "
              "ibv_query_qp, expected ERR", p.qp->state);
    SVT_CHECK(t, ibv_modify_qp(p.qp, &a, IBV_QP_STATE) == 0,
              "ibv_modify_qp(RESET): %s", strerror(errno));
    SVT_CHECK(t, (p.qp->state == IBV_QPS_RESET) &&
              (svt_qp_state(t, p.qp) == IBV_QPS_RESET),
              "after ibv_modify_qp(RESET): field %d, query %d", p.qp->state,
              svt_qp_state(t, p.qp));
    svt_barrier(t);
    svt_pair_destroy(t, &p);
}

/* A registered buffer whose pages are taken away (the MR stays; the test
 * protects them, as munmap would let a later mapping take the range) */
static struct ibv_mr *svt_unreadable_mr(svt_t *t, size_t len)
{
    struct ibv_mr *mr;
    void *buf;

    buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
               -1, 0);
    SVT_CHECK(t, buf != MAP_FAILED, "mmap: %s", strerror(errno));
    mr = ibv_reg_mr(t->pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
    SVT_CHECK(t, mr != NULL, "ibv_reg_mr: %s", strerror(errno));
    SVT_CHECK(t, mprotect(buf, len, PROT_NONE) == 0, "mprotect: %s",
              strerror(errno));
    return mr;
}

static void svt_unreadable_free(svt_t *t, struct ibv_mr *mr)
{
    void *buf  = mr->addr;
    size_t len = mr->length;

    SVT_CHECK(t, ibv_dereg_mr(mr) == 0, "ibv_dereg_mr: %s", strerror(errno));
    munmap(buf, len);
}

/* The sender sends on UC from a buffer whose pages are gone. A NIC would
 * read pinned pages; softverbs cannot, and the fault is the sender's:
 * LOC_PROT_ERR on its send, its QP in ERR, while the receiver only sees
 * its claimed WQE complete as aborted and keeps its QP. */
void svt_unmapped_src(svt_t *t)
{
    struct ibv_recv_wr rwr;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    struct ibv_mr *mr;
    struct ibv_wc wc;
    svt_pair_t p;
    size_t len = 1 << 16;

    svt_pair_setup(t, &p, IBV_QPT_UC, len, 16, 1, 0);
    if (t->role == 1) {
        svt_sge(&sge, p.mr, 0, len);
        rwr = (struct ibv_recv_wr){ .wr_id = 0x51, .sg_list = &sge,
                                    .num_sge = 1 };
        svt_post_recv(t, p.qp, &rwr);
    }
    svt_barrier(t);

    if (t->role == 0) {
        mr = svt_unreadable_mr(t, len);
        svt_sge(&sge, mr, 0, len);
        wr  = (struct ibv_send_wr){ .wr_id = 0x50, .sg_list = &sge,
                                    .num_sge = 1, .opcode = IBV_WR_SEND,
                                    .send_flags = IBV_SEND_SIGNALED };
        svt_post_send(t, p.qp, &wr);
        svt_poll_n(t, p.cq, &wc, 1, 5000, "SEND from an unreadable buffer");
        svt_check_wc(t, &wc, IBV_WC_LOC_PROT_ERR, -1, 0x50, p.qp, -1,
                     "SEND from an unreadable buffer");
        SVT_CHECK(t, svt_qp_state(t, p.qp) == IBV_QPS_ERR,
                  "sender QP state %d after a local error, expected ERR",
                  svt_qp_state(t, p.qp));
        svt_unreadable_free(t, mr);
    } else {
        svt_poll_n(t, p.cq, &wc, 1, 5000, "receive of an aborted SEND");
        svt_check_wc(t, &wc, IBV_WC_REM_ABORT_ERR, -1, 0x51, p.qp, -1,
                     "receive of an aborted SEND");
        SVT_CHECK(t, svt_qp_state(t, p.qp) == IBV_QPS_RTS,
                  "receiver QP state %d: the sender's fault moved it",
                  svt_qp_state(t, p.qp));
    }
    svt_barrier(t);
    svt_pair_destroy(t, &p);
}

/* The same within one process (a loopback QP pair, as UCX's tests open):
 * a UC WRITE from a buffer whose pages are gone is the sender's error,
 * not a fault of the process that reads it */
void svt_unmapped_src_self(svt_t *t)
{
    struct ibv_qp *qp[2];
    struct ibv_send_wr wr;
    struct ibv_mr *dst, *mr;
    struct ibv_sge sge;
    struct ibv_wc wc;
    struct ibv_cq *cq;
    svt_info_t mine;
    size_t len = 1 << 16;
    int i;

    if (t->role == 0) {
        svt_open(t);
        cq  = svt_cq(t, 16);
        dst = svt_mr(t, len, IBV_ACCESS_LOCAL_WRITE |
                             IBV_ACCESS_REMOTE_WRITE);
        for (i = 0; i < 2; ++i) {
            qp[i] = svt_qp(t, IBV_QPT_UC, cq, cq, NULL, 16, 1, 0);
        }
        svt_info_init(t, &mine);
        for (i = 0; i < 2; ++i) {
            svt_connect(t, qp[i], &mine, qp[!i]->qp_num);
        }

        mr = svt_unreadable_mr(t, len);
        svt_sge(&sge, mr, 0, len);
        wr = (struct ibv_send_wr){ .wr_id = 0x52, .sg_list = &sge,
                                   .num_sge = 1,
                                   .opcode = IBV_WR_RDMA_WRITE,
                                   .send_flags = IBV_SEND_SIGNALED,
                                   .wr.rdma = {
                                       .remote_addr = (uintptr_t)dst->addr,
                                       .rkey        = dst->rkey } };
        svt_post_send(t, qp[0], &wr);
        svt_poll_n(t, cq, &wc, 1, 5000, "loopback WRITE from an unreadable "
                   "buffer");
        svt_check_wc(t, &wc, IBV_WC_LOC_PROT_ERR, -1, 0x52, qp[0], -1,
                     "loopback WRITE from an unreadable buffer");
        svt_unreadable_free(t, mr);
        svt_destroy(t, qp, 2, dst, cq);
    }
    svt_barrier(t);
}

/* One doorbell's WRITEs are placed with one copy (a batch); what the
 * requester and the target see must not change: on UC, eight WRITEs with
 * immediate of different sizes (the last one empty: nothing to copy, yet
 * it must not overtake the others) arrive whole and complete in order; on
 * RC,
 * a bad rkey in the middle of a chain completes the WRs before it (their
 * data landed), fails itself and flushes the rest. */
#define BT_N    8
#define BT_SEG  (1 << 16)
#define BT_LEN(_rc, _i) \
    ((!(_rc) && ((_i) == BT_N - 1)) ? 0 : (size_t)BT_SEG - 64 * (_i))
void svt_batch(svt_t *t)
{
    struct ibv_send_wr wr[BT_N];
    struct ibv_recv_wr rwr;
    struct ibv_sge sge[BT_N];
    struct ibv_wc wc[BT_N];
    svt_pair_t p;
    size_t len;
    int i, rc;

    for (rc = 0; rc < 2; ++rc) {
        svt_pair_setup(t, &p, rc ? IBV_QPT_RC : IBV_QPT_UC, BT_N * BT_SEG,
                       4 * BT_N, 1, 0);
        if (t->role == 1) {
            memset(p.mr->addr, 0, BT_N * BT_SEG);
            for (i = 0; i < BT_N; ++i) {
                rwr = (struct ibv_recv_wr){ .wr_id = 0x100 + i };
                svt_post_recv(t, p.qp, &rwr);
            }
        } else {
            for (i = 0; i < BT_N; ++i) {
                svt_fill(t, (char*)p.mr->addr + (size_t)i * BT_SEG, BT_SEG,
                         0xb0 + 16 * rc + i);
            }
        }
        svt_barrier(t);

        if (t->role == 0) {
            for (i = 0; i < BT_N; ++i) {
                len = BT_LEN(rc, i);            /* sizes differ */
                svt_sge(&sge[i], p.mr, (size_t)i * BT_SEG, len);
                wr[i] = (struct ibv_send_wr){
                    .wr_id = 0x200 + i, .sg_list = &sge[i],
                    .num_sge = (len > 0),
                    .opcode = rc ? IBV_WR_RDMA_WRITE :
                                   IBV_WR_RDMA_WRITE_WITH_IMM,
                    .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(i),
                    .next = (i + 1 < BT_N) ? &wr[i + 1] : NULL,
                    .wr.rdma = { .remote_addr = p.peer.addr +
                                                (uint64_t)i * BT_SEG,
                                 .rkey = p.peer.rkey } };
            }
            if (rc) {
                wr[BT_N / 2].wr.rdma.rkey ^= 0x5a5a00;
            }
            svt_post_send(t, p.qp, &wr[0]);
            svt_poll_n(t, p.cq, wc, BT_N, 5000, "chain of WRITEs");
            for (i = 0; i < BT_N; ++i) {
                svt_check_wc(t, &wc[i], !rc || (i < BT_N / 2) ?
                             IBV_WC_SUCCESS : (i == BT_N / 2) ?
                             IBV_WC_REM_ACCESS_ERR : IBV_WC_WR_FLUSH_ERR,
                             -1, 0x200 + i, p.qp, -1, "chained WRITE");
            }
        } else if (!rc) {
            svt_poll_n(t, p.cq, wc, BT_N, 5000, "WRITE immediates");
            for (i = 0; i < BT_N; ++i) {
                svt_check_wc(t, &wc[i], IBV_WC_SUCCESS,
                             IBV_WC_RECV_RDMA_WITH_IMM, 0x100 + i, p.qp,
                             BT_LEN(rc, i), "WRITE immediate");
                SVT_CHECK(t, ntohl(wc[i].imm_data) == (uint32_t)i,
                          "immediate %u in place %d: reordered",
                          ntohl(wc[i].imm_data), i);
            }
        }
        svt_barrier(t);
        if (t->role == 1) {
            /* what completed landed whole (sv_verify reports a diff) */
            for (i = 0; i < (rc ? BT_N / 2 : BT_N); ++i) {
                len = BT_LEN(rc, i);
                svt_verify(t, (char*)p.mr->addr + (size_t)i * BT_SEG, len,
                           0xb0 + 16 * rc + i, "batched WRITE data");
            }
        }
        svt_barrier(t);
        svt_pair_destroy(t, &p);
    }
}

/* A loss in the middle of a batched UC chain: every WRITE completes at the
 * requester, in order; at the target a message either arrived whole (with
 * its immediate, in order) or, lost, left a prefix of whole packets placed
 * and nothing after it (UC places the packets before the loss). The lost
 * messages' prefixes travel in the chain's copy. Run with SOFTVERBS_LOSS. */
#define BL_N      16
#define BL_ROUNDS 8
#define BL_MTU    4096
void svt_batch_loss(svt_t *t)
{
    struct ibv_send_wr wr[BL_N];
    struct ibv_recv_wr rwr;
    struct ibv_sge sge[BL_N];
    struct ibv_wc wc[BL_N];
    unsigned r, i, k, got, lost = 0, partial = 0;
    uint8_t *mine, *want;
    size_t off, pkts;
    svt_pair_t p;
    int seen[BL_N];

    svt_pair_setup(t, &p, IBV_QPT_UC, BL_N * BT_SEG, 4 * BL_N, 1, 0);
    want = malloc(BT_SEG);
    SVT_CHECK(t, want != NULL, "no memory");
    /* BL_N receives posted at all times: a lost message consumes none */
    for (got = BL_N, r = 0; r < BL_ROUNDS; ++r) {
        if (t->role == 1) {
            memset(p.mr->addr, 0, BL_N * BT_SEG);
            for (k = 0; k < got; ++k) {
                rwr = (struct ibv_recv_wr){ .wr_id = 0x100 };
                svt_post_recv(t, p.qp, &rwr);
            }
        } else {
            for (i = 0; i < BL_N; ++i) {
                svt_fill(t, (char*)p.mr->addr + (size_t)i * BT_SEG, BT_SEG,
                         0x1000 * r + i);
            }
        }
        svt_barrier(t);

        if (t->role == 0) {
            for (i = 0; i < BL_N; ++i) {
                svt_sge(&sge[i], p.mr, (size_t)i * BT_SEG, BT_SEG);
                wr[i] = (struct ibv_send_wr){
                    .wr_id = 0x200 + i, .sg_list = &sge[i], .num_sge = 1,
                    .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                    .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(i),
                    .next = (i + 1 < BL_N) ? &wr[i + 1] : NULL,
                    .wr.rdma = { .remote_addr = p.peer.addr +
                                                (uint64_t)i * BT_SEG,
                                 .rkey = p.peer.rkey } };
            }
            svt_post_send(t, p.qp, &wr[0]);
            svt_poll_n(t, p.cq, wc, BL_N, 5000, "lossy chain of WRITEs");
            for (i = 0; i < BL_N; ++i) {
                svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, -1, 0x200 + i, p.qp,
                             -1, "lossy chained WRITE");
            }
        }
        svt_barrier(t);      /* the sender is done: what came, came */

        if (t->role == 1) {
            memset(seen, 0, sizeof(seen));
            got = svt_poll(t, p.cq, wc, BL_N, 200);
            for (k = 0; k < got; ++k) {
                i = ntohl(wc[k].imm_data);
                svt_check_wc(t, &wc[k], IBV_WC_SUCCESS,
                             IBV_WC_RECV_RDMA_WITH_IMM, 0x100, p.qp,
                             BT_SEG, "lossy WRITE immediate");
                SVT_CHECK(t, (i < BL_N) && ((k == 0) ||
                          (i > ntohl(wc[k - 1].imm_data))),
                          "immediate %u after %u: reordered", i,
                          (k > 0) ? ntohl(wc[k - 1].imm_data) : 0);
                seen[i] = 1;
            }
            for (i = 0; i < BL_N; ++i) {
                mine = (uint8_t*)p.mr->addr + (size_t)i * BT_SEG;
                svt_fill(t, want, BT_SEG, 0x1000 * r + i);
                for (pkts = 0; (pkts < BT_SEG / BL_MTU) &&
                     !memcmp(mine + pkts * BL_MTU, want + pkts * BL_MTU,
                             BL_MTU); ++pkts) {
                }
                if (seen[i]) {
                    SVT_CHECK(t, pkts == BT_SEG / BL_MTU, "round %u message "
                              "%u completed with %zu of %u packets placed",
                              r, i, pkts, BT_SEG / BL_MTU);
                    continue;
                }
                ++lost;
                partial += (pkts > 0);
                for (off = pkts * BL_MTU; off < BT_SEG; ++off) {
                    SVT_CHECK(t, mine[off] == 0, "round %u lost message %u: "
                              "byte %zu written after a loss at packet %zu",
                              r, i, off, pkts);
                }
            }
        }
        svt_barrier(t);
    }
    if (t->role == 1) {
        printf("batch_loss: %u of %u messages lost, %u with a prefix "
               "placed\n", lost, BL_ROUNDS * BL_N, partial);
        SVT_CHECK(t, partial > 0, "no lost message left a prefix: is "
                  "SOFTVERBS_LOSS set?");
    }
    free(want);
    svt_pair_destroy(t, &p);
}

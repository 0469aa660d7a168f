/*
 * Fabric behaviour seen by verbs programs: ordering on one QP, UC loss rate,
 * RC recovery under loss, link rate, reordering across paths.  The fabric
 * model is configured by the SOFTVERBS_* variables tests.cmake sets.
 */
#include "sv_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MB (1024 * 1024)

static double svt_env_double(const char *name, double def)
{
    const char *v = getenv(name);

    return (v && *v) ? atof(v) : def;
}

/* Keep at most `window` sends outstanding on `cq`. */
static void svt_reap(svt_t *t, struct ibv_cq *cq, int *outstanding,
                     int window, int op, const char *what)
{
    struct ibv_wc wc[64];
    int n, i;

    while (*outstanding > window) {
        n = svt_poll(t, cq, wc, 64, 0);
        for (i = 0; i < n; ++i) {
            svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, op, ~0ull, NULL, -1,
                         what);
        }
        *outstanding -= n;
        if (n == 0) {
            n = svt_poll(t, cq, wc, 1, 10000);
            SVT_CHECK(t, n == 1, "%s: no send completion for 10 s (%d "
                      "outstanding)", what, *outstanding);
            svt_check_wc(t, &wc[0], IBV_WC_SUCCESS, op, ~0ull, NULL, -1,
                         what);
            *outstanding -= 1;
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Ordering on one QP                                                      */

#define ORD_N     1024
#define ORD_SLOT  65536

static size_t ord_len(unsigned i)
{
    /* mostly small, every 7th spans many packets */
    return (i % 7 == 3) ? 40000 + i : (i * 37) % 3000;
}

static void svt_order_qp(svt_t *t, enum ibv_qp_type type)
{
    const char *qpt = (type == IBV_QPT_RC) ? "RC" : "UC";
    struct ibv_send_wr wr[16];
    struct ibv_sge sge[16];
    struct ibv_recv_wr rwr;
    struct ibv_sge rsge;
    struct ibv_wc wc[64];
    unsigned i, k, got, imm;
    int outstanding = 0, n, j;
    svt_pair_t p;
    char what[64];

    /* a slot per message at the target: SEND lands in a receive buffer
     * of its slot, WRITE_WITH_IMM writes it directly */
    svt_pair_setup(t, &p, type, ORD_N / 2 * ORD_SLOT, ORD_N, 1, 0);
    if (t->role == 1) {
        for (i = 0; i < ORD_N; ++i) {
            svt_sge(&rsge, p.mr, (i / 2) * ORD_SLOT, ORD_SLOT);
            rwr = (struct ibv_recv_wr){ .wr_id = i, .sg_list = &rsge,
                                        .num_sge = 1 };
            svt_post_recv(t, p.qp, &rwr);
        }
    }
    svt_barrier(t);

    if (t->role == 0) {
        /* even i: SEND_WITH_IMM, odd i: WRITE_WITH_IMM into the same slot
         * right after the SEND filled it: order is visible in the data */
        for (i = 0; i < ORD_N; i += 16) {
            for (k = 0; k < 16; ++k) {
                svt_fill(t, (uint8_t *)p.mr->addr + ((i + k) % 64) * ORD_SLOT,
                         ord_len(i + k), 1000 + i + k);
                svt_sge(&sge[k], p.mr, ((i + k) % 64) * ORD_SLOT,
                        ord_len(i + k));
                wr[k] = (struct ibv_send_wr){
                    .wr_id = i + k, .sg_list = &sge[k], .num_sge = 1,
                    .opcode = ((i + k) & 1) ? IBV_WR_RDMA_WRITE_WITH_IMM :
                                              IBV_WR_SEND_WITH_IMM,
                    .send_flags = IBV_SEND_SIGNALED,
                    .imm_data = htonl(i + k),
                    .next = (k < 15) ? &wr[k + 1] : NULL,
                    .wr.rdma = { .remote_addr = p.peer.addr +
                                                ((i + k) / 2) * ORD_SLOT,
                                 .rkey = p.peer.rkey } };
            }
            /* the local slots are reused every 64 messages: wait until the
             * ones from 48 messages ago are done */
            svt_reap(t, p.cq, &outstanding, 32, -1, "ordering send");
            svt_post_send(t, p.qp, &wr[0]);
            outstanding += 16;
        }
        svt_reap(t, p.cq, &outstanding, 0, -1, "ordering send");
        SVT_LOG(t, "%s: %d SEND_WITH_IMM/WRITE_WITH_IMM sent", qpt, ORD_N);
    } else {
        for (got = 0; got < ORD_N; got += n) {
            n = svt_poll_some(t, p.cq, wc, 64, 10000);
            SVT_CHECK(t, n > 0, "%s ordering: stuck after %u of %d messages",
                      qpt, got, ORD_N);
            for (j = 0; j < n; ++j) {
                i   = got + j;
                imm = ntohl(wc[j].imm_data);
                snprintf(what, sizeof(what), "%s message %u", qpt, i);
                SVT_CHECK(t, imm == i, "%s: imm %u arrived at position %u "
                          "(messages on one QP reordered)", what, imm, i);
                svt_check_wc(t, &wc[j], IBV_WC_SUCCESS,
                             (i & 1) ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
                             i, p.qp, ord_len(i), what);
                /* the WRITE (odd) overwrote the SEND's (even) data */
                if (i & 1) {
                    svt_verify(t, (uint8_t *)p.mr->addr + (i / 2) * ORD_SLOT,
                               ord_len(i), 1000 + i, what);
                }
            }
        }
        SVT_LOG(t, "%s: %d messages arrived in posting order, receive WQEs "
                "consumed in order, data verified", qpt, ORD_N);
    }
    svt_barrier(t);
    svt_pair_destroy(t, &p);
}

void svt_order(svt_t *t)
{
    svt_order_qp(t, IBV_QPT_RC);
    svt_order_qp(t, IBV_QPT_UC);
}

/* ---------------------------------------------------------------------- */
/* UC loss statistics                                                      */

#define LOSS_ROUND 512   /* messages per round, synchronized every 128 */
#define LOSS_RQ    512

static unsigned svt_loss_rq_posted;   /* target: receive WQEs posted */

/*
 * The initiator sends rounds of UC WRITE_WITH_IMM messages of `len` bytes;
 * the target counts which arrived (by imm), checks their data and that a
 * lost message produced no completion. Returns the number lost.
 */
static unsigned svt_uc_loss_run(svt_t *t, svt_pair_t *p, unsigned nmsg,
                                size_t len, unsigned tagbase)
{
    struct ibv_send_wr wr;
    struct ibv_recv_wr rwr;
    struct ibv_sge sge;
    struct ibv_wc wc[64];
    unsigned i, r, got = 0, lost, imm;
    uint8_t *seen = calloc(nmsg, 1);
    size_t slot   = (len + 4095) & ~4095ul;
    int outstanding = 0, n, j;
    char what[64];

    for (r = 0; r < nmsg; r += LOSS_ROUND) {
        if (t->role == 1) {
            /* WQEs left by lost messages stay posted: top up to the depth */
            for (; svt_loss_rq_posted < LOSS_RQ; ++svt_loss_rq_posted) {
                rwr = (struct ibv_recv_wr){ .wr_id = 0, .num_sge = 0 };
                svt_post_recv(t, p->qp, &rwr);
            }
        }
        svt_barrier(t);
        if (t->role == 0) {
            for (i = r; i < r + LOSS_ROUND; ++i) {
                svt_reap(t, p->cq, &outstanding, 256, IBV_WC_RDMA_WRITE,
                         "UC send under loss");
                svt_sge(&sge, p->mr, (i % 256) * slot, len);
                svt_fill(t, (void *)(uintptr_t)sge.addr, len, tagbase + i);
                wr = (struct ibv_send_wr){
                    .wr_id = i, .sg_list = &sge, .num_sge = 1,
                    .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                    .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(i),
                    .wr.rdma = { .remote_addr = p->peer.addr + (i % 256) * slot,
                                 .rkey = p->peer.rkey } };
                svt_post_send(t, p->qp, &wr);
                ++outstanding;
                /* pace so the target sees each message before its slot
                 * is overwritten 256 messages later */
                if (i % 128 == 127) {
                    svt_reap(t, p->cq, &outstanding, 0, IBV_WC_RDMA_WRITE,
                             "UC send under loss");
                    svt_barrier(t);
                }
            }
            svt_reap(t, p->cq, &outstanding, 0, IBV_WC_RDMA_WRITE,
                     "UC send under loss");
        } else {
            for (i = r; i < r + LOSS_ROUND; i += 128) {
                /* after the sender's barrier every sent packet has left;
                 * wait past the model's delivery times, then drain */
                svt_barrier(t);
                do {
                    n = svt_poll_some(t, p->cq, wc, 64, 100);
                    for (j = 0; j < n; ++j) {
                        imm = ntohl(wc[j].imm_data);
                        snprintf(what, sizeof(what), "UC message %u", imm);
                        svt_check_wc(t, &wc[j], IBV_WC_SUCCESS,
                                     IBV_WC_RECV_RDMA_WITH_IMM, ~0ull, p->qp,
                                     len, what);
                        SVT_CHECK(t, imm < nmsg && !seen[imm],
                                  "%s: unknown or duplicate", what);
                        seen[imm] = 1;
                        ++got;
                        --svt_loss_rq_posted;
                        svt_verify(t, (uint8_t *)p->mr->addr +
                                   (imm % 256) * slot, len, tagbase + imm,
                                   what);
                    }
                } while (n > 0);
            }
        }
        svt_barrier(t);
    }

    if (t->role == 1) {
        lost = nmsg - got;
        svt_send_u64(t, lost);
    } else {
        lost = svt_recv_u64(t);
    }
    free(seen);
    return lost;
}

void svt_loss(svt_t *t)
{
    double p = svt_env_double("SOFTVERBS_LOSS", 0), q, sigma, mtu, lo, hi;
    const unsigned n1 = (unsigned)svt_env_long("SVT_LOSS_MSGS", 4096);
    const unsigned n2 = 1024;
    unsigned lost, pk;
    svt_pair_t pr;

    /* p = 0 demands no loss at all (a fabric must not keep an old run's) */
    SVT_CHECK(t, p >= 0 && p <= 0.5, "run with SOFTVERBS_LOSS in [0, 0.5]: "
              "%g", p);
    SVT_CHECK(t, n1 % LOSS_ROUND == 0, "SVT_LOSS_MSGS must be a multiple of "
              "%d", LOSS_ROUND);
    svt_pair_setup(t, &pr, IBV_QPT_UC, 256 * 65536, LOSS_RQ, 1, 0);
    mtu = 128u << t->port_attr.active_mtu;

    /* single-packet messages: P(lost) = p */
    lost = svt_uc_loss_run(t, &pr, n1, 1000, 0);
    sigma = sqrt(n1 * p * (1 - p));
    if (t->role == 0) {
        SVT_LOG(t, "1000 B messages (1 packet): %u of %u lost = %.4f, "
                "configured %.4f, expected %.1f +- %.1f (3 sigma)", lost, n1,
                (double)lost / n1, p, n1 * p, 3 * sigma);
        SVT_CHECK(t, fabs(lost - n1 * p) <= 3 * sigma,
                  "UC loss %u of %u outside 3 sigma of p=%g", lost, n1, p);
    }

    /* 40000 B messages: lost if any of its packets is; the wire header may
     * or may not push the packet count up by one */
    pk   = (unsigned)ceil(40000 / mtu);
    lost = svt_uc_loss_run(t, &pr, n2, 40000, 1u << 20);
    q    = 1 - pow(1 - p, pk);
    lo   = n2 * q - 3 * sqrt(n2 * q * (1 - q));
    q    = 1 - pow(1 - p, pk + 1);
    hi   = n2 * q + 3 * sqrt(n2 * q * (1 - q));
    if (t->role == 0) {
        SVT_LOG(t, "40000 B messages (%u-%u packets): %u of %u lost, "
                "expected %.1f .. %.1f (3 sigma)", pk, pk + 1, lost, n2, lo,
                hi);
        SVT_CHECK(t, lost >= lo && lost <= hi, "multi-packet UC loss %u of "
                  "%u outside [%.1f, %.1f]", lost, n2, lo, hi);
    }
    svt_barrier(t);
    svt_pair_destroy(t, &pr);
}

/* ---------------------------------------------------------------------- */
/* RC under loss: everything arrives, in order, intact                     */

void svt_rc_loss(svt_t *t)
{
    const unsigned n = 200;
    const size_t len = 65536;
    struct ibv_send_wr wr;
    struct ibv_recv_wr rwr;
    struct ibv_sge sge;
    struct ibv_wc wc[16];
    unsigned i, got;
    int outstanding = 0, k, j;
    uint64_t t0 = svt_now_ns();
    svt_pair_t p;
    char what[64];

    svt_open(t);
    p.cq = svt_cq(t, 1024);
    p.mr = svt_mr(t, n * len, IBV_ACCESS_LOCAL_WRITE |
                              IBV_ACCESS_REMOTE_WRITE);
    p.qp = svt_qp(t, IBV_QPT_RC, p.cq, p.cq, NULL, n, 1, 0);
    {
        svt_info_t mine;

        svt_info_init(t, &mine);
        mine.qpn[0] = p.qp->qp_num;
        mine.rkey   = p.mr->rkey;
        mine.addr   = (uintptr_t)p.mr->addr;
        svt_xchg(t, &mine, &p.peer, sizeof(mine));
        /* timeout 10: 4 ms; 7 retries survive a few percent loss */
        svt_connect_rc(t, p.qp, &p.peer, p.peer.qpn[0], 10, 7);
    }
    if (t->role == 1) {
        for (i = 0; i < n; ++i) {
            svt_sge(&sge, p.mr, i * len, len);
            rwr = (struct ibv_recv_wr){ .wr_id = i, .sg_list = &sge,
                                        .num_sge = 1 };
            svt_post_recv(t, p.qp, &rwr);
        }
    }
    svt_barrier(t);
    if (t->role == 0) {
        svt_fill(t, p.mr->addr, n * len, 77);
        for (i = 0; i < n; ++i) {
            svt_sge(&sge, p.mr, i * len, len);
            wr = (struct ibv_send_wr){
                .wr_id = i, .sg_list = &sge, .num_sge = 1,
                .opcode = (i & 1) ? IBV_WR_RDMA_WRITE_WITH_IMM :
                                    IBV_WR_SEND_WITH_IMM,
                .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(i),
                .wr.rdma = { .remote_addr = p.peer.addr + i * len,
                             .rkey = p.peer.rkey } };
            svt_post_send(t, p.qp, &wr);
            ++outstanding;
            svt_reap(t, p.cq, &outstanding, 16, -1, "RC send under loss");
        }
        svt_reap(t, p.cq, &outstanding, 0, -1, "RC send under loss");
        SVT_LOG(t, "%u RC messages of %zu B all completed successfully under "
                "SOFTVERBS_LOSS=%s in %.2f s", n, len,
                getenv("SOFTVERBS_LOSS") ? getenv("SOFTVERBS_LOSS") : "0",
                (svt_now_ns() - t0) / 1e9);
    } else {
        for (got = 0; got < n; got += k) {
            k = svt_poll_some(t, p.cq, wc, 16, 20000);
            SVT_CHECK(t, k > 0, "RC under loss: stuck after %u of %u", got,
                      n);
            for (j = 0; j < k; ++j) {
                i = got + j;
                snprintf(what, sizeof(what), "RC message %u", i);
                SVT_CHECK(t, ntohl(wc[j].imm_data) == i, "%s: imm %u (order)",
                          what, ntohl(wc[j].imm_data));
                svt_check_wc(t, &wc[j], IBV_WC_SUCCESS,
                             (i & 1) ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
                             i, p.qp, len, what);
            }
        }
        svt_verify(t, p.mr->addr, n * len, 77, "RC data under loss");
        SVT_LOG(t, "%u RC messages arrived once, in order, data intact", n);
    }
    svt_barrier(t);
    svt_pair_destroy(t, &p);
}

/* ---------------------------------------------------------------------- */
/* Link rate accuracy                                                      */

/*
 * The link's rate must hold within 5% by the completion timestamps of an
 * extended CQ at the receiver (the device clock: what hardware reports),
 * taken from the median time between two messages: a sender descheduled
 * for longer than its 32 messages in flight leaves the link idle once,
 * which widens one gap, not the median. The sender's wall clock, from its
 * first post to its last completion, must agree from above (a completion
 * never shows before its packets could have arrived: +5%); from below a
 * loaded machine may make it as slow as it likes.
 */
static void svt_rate_check(svt_t *t, const char *who, double got, double want,
                           double lo, double hi)
{
    double err = got / want - 1;

    SVT_LOG(t, "%s: %.3f Gbit/s of payload, expected %.3f: %+.2f%% "
            "(allowed %+.0f%% .. %+.0f%%)", who, got, want, err * 100,
            lo * 100, hi * 100);
    SVT_CHECK(t, err >= lo && err <= hi, "%s rate %.3f Gbit/s is off by "
              "%+.2f%% from %.3f", who, got, err * 100, want);
}

static int svt_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

void svt_rate(svt_t *t)
{
    const double gbps  = svt_env_double("SOFTVERBS_LINK_GBPS", 0);
    const unsigned n   = (unsigned)svt_env_long("SVT_RATE_MSGS", 256);
    const size_t len   = MB;
    const double hdr   = svt_env_double("SVT_RATE_HDR", 64);
    struct ibv_cq_init_attr_ex cax = {
        .cqe      = 256,
        .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                    IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
                    IBV_WC_EX_WITH_QP_NUM };
    struct ibv_poll_cq_attr pa = { 0 };
    struct ibv_device_attr_ex dx;
    struct ibv_cq_ex *cqx = NULL;
    struct ibv_send_wr wr;
    struct ibv_recv_wr rwr;
    struct ibv_sge sge;
    struct ibv_wc wc[16];
    uint64_t first = 0, last = 0, ts, ts_last = 0, *gaps;
    uint64_t deadline;
    int outstanding = 0, k, j, ret;
    double mtu, wire;
    unsigned i, done;
    svt_info_t mine;
    svt_pair_t p;

    SVT_CHECK(t, gbps > 0, "run with SOFTVERBS_LINK_GBPS set");
    SVT_CHECK(t, n >= 2, "SVT_RATE_MSGS must be at least 2");
    gaps = calloc(n, sizeof(*gaps));
    SVT_CHECK(t, gaps != NULL, "out of memory");
    svt_open(t);
    memset(&p, 0, sizeof(p));
    p.mr = svt_mr(t, 16 * MB, IBV_ACCESS_LOCAL_WRITE |
                              IBV_ACCESS_REMOTE_WRITE);
    if (t->role == 1) {
        SVT_CHECK(t, ibv_query_device_ex(t->ctx, NULL, &dx) == 0,
                  "ibv_query_device_ex: %s", strerror(errno));
        SVT_CHECK(t, dx.hca_core_clock > 0, "hca_core_clock is 0: completion "
                  "timestamps cannot be converted to time");
        cqx = ibv_create_cq_ex(t->ctx, &cax);
        SVT_CHECK(t, cqx != NULL, "ibv_create_cq_ex(with timestamps): %s",
                  strerror(errno));
        p.cq = ibv_cq_ex_to_cq(cqx);
    } else {
        p.cq = svt_cq(t, 256);
    }
    p.qp = svt_qp(t, IBV_QPT_RC, p.cq, p.cq, NULL, 64, 1, 0);
    svt_info_init(t, &mine);
    mine.qpn[0] = p.qp->qp_num;
    mine.rkey   = p.mr->rkey;
    mine.addr   = (uintptr_t)p.mr->addr;
    svt_xchg(t, &mine, &p.peer, sizeof(mine));
    svt_connect(t, p.qp, &p.peer, p.peer.qpn[0]);
    mtu = 128u << t->port_attr.active_mtu;
    /* payload share of the wire: the model charges a header per packet */
    wire = gbps * mtu / (mtu + hdr);

    if (t->role == 1) {
        for (i = 0; i < 64; ++i) {
            rwr = (struct ibv_recv_wr){ .wr_id = i, .num_sge = 0 };
            svt_post_recv(t, p.qp, &rwr);
        }
    }
    svt_barrier(t);
    if (t->role == 0) {
        svt_fill(t, p.mr->addr, 16 * MB, 5);
        first = svt_now_ns();
        for (i = 0, done = 0; i < n || done < n; ) {
            /* 32 MiB in flight: 67 ms even of a 4 Gbit/s link, so a sender
             * descheduled for a while still keeps the link busy */
            while ((i < n) && (outstanding < 32)) {
                svt_sge(&sge, p.mr, (i % 16) * len, len);
                wr = (struct ibv_send_wr){
                    .wr_id = i, .sg_list = &sge, .num_sge = 1,
                    .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                    .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(i),
                    .wr.rdma = { .remote_addr = p.peer.addr + (i % 16) * len,
                                 .rkey = p.peer.rkey } };
                svt_post_send(t, p.qp, &wr);
                ++outstanding;
                ++i;
            }
            k = svt_poll_some(t, p.cq, wc, 16, 10000);
            SVT_CHECK(t, k > 0, "rate: no completion for 10 s");
            for (j = 0; j < k; ++j) {
                svt_check_wc(t, &wc[j], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
                             done + j, p.qp, -1, "bulk WRITE_WITH_IMM");
            }
            done        += k;
            outstanding -= k;
            last         = svt_now_ns();
        }
        SVT_LOG(t, "%u x 1 MiB WRITE_WITH_IMM on a %.3f Gbit/s link (%.0f B "
                "headers per %.0f B packet)", n, gbps, hdr, mtu);
        svt_rate_check(t, "sender, first post to last completion",
                       n * len * 8.0 / (last - first), wire, -1, 0.05);
    } else {
        /* k: receive WQEs re-posted so far */
        for (done = 0, k = 0; done < n; ) {
            deadline = svt_now_ns() + 10000000000ull;
            while ((ret = ibv_start_poll(cqx, &pa)) == ENOENT) {
                SVT_CHECK(t, svt_now_ns() < deadline, "rate: receiver stuck "
                          "after %u", done);
            }
            SVT_CHECK(t, ret == 0, "ibv_start_poll: %d", ret);
            do {
                SVT_CHECK(t, cqx->status == IBV_WC_SUCCESS &&
                          ibv_wc_read_opcode(cqx) ==
                          IBV_WC_RECV_RDMA_WITH_IMM &&
                          ibv_wc_read_byte_len(cqx) == len &&
                          ibv_wc_read_qp_num(cqx) == p.qp->qp_num &&
                          ntohl(ibv_wc_read_imm_data(cqx)) == done,
                          "bulk receive %u: status %d opcode %d len %u "
                          "qp 0x%x imm %u", done, cqx->status,
                          ibv_wc_read_opcode(cqx), ibv_wc_read_byte_len(cqx),
                          ibv_wc_read_qp_num(cqx),
                          ntohl(ibv_wc_read_imm_data(cqx)));
                ts = ibv_wc_read_completion_ts(cqx);
                SVT_CHECK(t, done == 0 || ts >= ts_last, "completion "
                          "timestamps go backwards: %llu after %llu",
                          (unsigned long long)ts,
                          (unsigned long long)ts_last);
                if (done > 0) {
                    gaps[done - 1] = ts - ts_last;
                }
                ts_last = ts;
                ++done;
            } while ((ret = ibv_next_poll(cqx)) == 0);
            SVT_CHECK(t, ret == ENOENT, "ibv_next_poll: %d", ret);
            ibv_end_poll(cqx);
            for (; k < (int)done; ++k) {
                rwr = (struct ibv_recv_wr){ .wr_id = 0, .num_sge = 0 };
                svt_post_recv(t, p.qp, &rwr);
            }
        }
        qsort(gaps, n - 1, sizeof(*gaps), svt_u64_cmp);
        svt_rate_check(t, "receiver, median completion timestamp gap",
                       len * 8.0 /
                       (gaps[(n - 1) / 2] * 1e6 / dx.hca_core_clock),
                       wire, -0.05, 0.05);
        /* the data of the last 16 messages is in place */
        svt_verify(t, p.mr->addr, 16 * MB, 5, "bulk data");
    }
    svt_barrier(t);
    SVT_CHECK(t, ibv_destroy_qp(p.qp) == 0, "ibv_destroy_qp");
    svt_mr_free(p.mr);
    SVT_CHECK(t, ibv_destroy_cq(p.cq) == 0, "ibv_destroy_cq");
    free(gaps);
    svt_close(t);
}

/* ---------------------------------------------------------------------- */
/* Reordering across paths                                                 */

#define RO_NQP   16
#define RO_ROUND 64

void svt_reorder(svt_t *t)
{
    struct ibv_qp *qp[RO_NQP];
    struct ibv_send_wr wr;
    struct ibv_recv_wr rwr;
    struct ibv_sge sge;
    struct ibv_wc wc[64];
    svt_info_t mine, peer;
    uint32_t next[RO_NQP] = { 0 }, imm, q, s, maxseq = 0;
    unsigned i, got, inversions = 0, qpi;
    int outstanding = 0, n, j;
    const unsigned total = RO_NQP * RO_ROUND;
    struct ibv_mr *mr;
    struct ibv_cq *cq;
    char what[64];

    svt_open(t);
    cq = svt_cq(t, 4096);
    mr = svt_mr(t, total * 1024, IBV_ACCESS_LOCAL_WRITE |
                                 IBV_ACCESS_REMOTE_WRITE);
    svt_info_init(t, &mine);
    mine.nqp  = RO_NQP;
    mine.rkey = mr->rkey;
    mine.addr = (uintptr_t)mr->addr;
    for (i = 0; i < RO_NQP; ++i) {
        qp[i]       = svt_qp(t, IBV_QPT_RC, cq, cq, NULL, RO_ROUND, 1, 0);
        mine.qpn[i] = qp[i]->qp_num;
    }
    svt_xchg(t, &mine, &peer, sizeof(mine));
    for (i = 0; i < RO_NQP; ++i) {
        svt_connect(t, qp[i], &peer, peer.qpn[i]);
        if (t->role == 1) {
            for (j = 0; j < RO_ROUND; ++j) {
                rwr = (struct ibv_recv_wr){ .wr_id = j, .num_sge = 0 };
                svt_post_recv(t, qp[i], &rwr);
            }
        }
    }
    svt_barrier(t);

    if (t->role == 0) {
        svt_fill(t, mr->addr, total * 1024, 3);
        /* one message per QP in turn: global sequence = posting order */
        for (s = 0; s < total; ++s) {
            q = s % RO_NQP;
            svt_sge(&sge, mr, s * 1024, 1024);
            wr = (struct ibv_send_wr){
                .wr_id = s, .sg_list = &sge, .num_sge = 1,
                .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(s),
                .wr.rdma = { .remote_addr = peer.addr + s * 1024,
                             .rkey = peer.rkey } };
            svt_post_send(t, qp[q], &wr);
            ++outstanding;
            svt_reap(t, cq, &outstanding, 512, IBV_WC_RDMA_WRITE,
                     "reorder send");
        }
        svt_reap(t, cq, &outstanding, 0, IBV_WC_RDMA_WRITE, "reorder send");
        SVT_LOG(t, "%u WRITE_WITH_IMM posted round-robin over %d RC QPs",
                total, RO_NQP);
    } else {
        for (got = 0; got < total; got += n) {
            n = svt_poll_some(t, cq, wc, 64, 10000);
            SVT_CHECK(t, n > 0, "reorder: stuck after %u of %u", got, total);
            for (j = 0; j < n; ++j) {
                imm = ntohl(wc[j].imm_data);
                q   = imm % RO_NQP;
                snprintf(what, sizeof(what), "message %u (QP %u)", imm, q);
                for (qpi = 0; qpi < RO_NQP; ++qpi) {
                    if (qp[qpi]->qp_num == wc[j].qp_num) {
                        break;
                    }
                }
                SVT_CHECK(t, imm < total && qpi == q, "%s: arrived on QP "
                          "index %u", what, qpi);
                svt_check_wc(t, &wc[j], IBV_WC_SUCCESS,
                             IBV_WC_RECV_RDMA_WITH_IMM, ~0ull, qp[q], 1024,
                             what);
                SVT_CHECK(t, imm / RO_NQP == next[q], "%s: per-QP sequence "
                          "%u, expected %u (one QP must stay in order)", what,
                          imm / RO_NQP, next[q]);
                next[q]++;
                if (got + j && (imm < maxseq)) {
                    ++inversions;
                }
                maxseq = (imm > maxseq) ? imm : maxseq;
            }
        }
        svt_verify(t, mr->addr, total * 1024, 3, "reordered data");
        SVT_LOG(t, "%u completions: %u arrived after a later-posted one on "
                "another QP; every QP in order; data verified", total,
                inversions);
        SVT_CHECK(t, inversions > 0, "no reordering across %d QPs with "
                  "SOFTVERBS_PATH_SKEW_US=%s: completions follow posting "
                  "order exactly", RO_NQP,
                  getenv("SOFTVERBS_PATH_SKEW_US") ?
                  getenv("SOFTVERBS_PATH_SKEW_US") : "(unset)");
    }
    svt_barrier(t);
    for (i = 0; i < RO_NQP; ++i) {
        SVT_CHECK(t, ibv_destroy_qp(qp[i]) == 0, "ibv_destroy_qp");
    }
    svt_mr_free(mr);
    SVT_CHECK(t, ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
    svt_close(t);
}

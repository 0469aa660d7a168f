/*
 * Harness of the two-process verbs tests: exchange, verbs object set-up with
 * loud failures, completion polling and checking, seeded data patterns.
 */
#include "sv_test.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void svt_fail(svt_t *t, const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    fprintf(stderr, "[%s %s] FAIL (%s:%d): ", t->test,
            t->role ? "child" : "parent", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n[%s %s] seed %llu (rerun with SVT_SEED=%llu)\n",
            t->test, t->role ? "child" : "parent",
            (unsigned long long)t->seed, (unsigned long long)t->seed);
    fflush(stderr);
    if ((t->role == 0) && (t->child > 0) && !t->child_gone) {
        kill(t->child, SIGKILL);
    }
    _exit(1);
}

long svt_env_long(const char *name, long def)
{
    const char *v = getenv(name);
    char *end;
    long x;

    if ((v == NULL) || (*v == '\0')) {
        return def;
    }
    x = strtol(v, &end, 0);
    if (*end != '\0') {
        fprintf(stderr, "%s=\"%s\": not a number\n", name, v);
        exit(2);
    }
    return x;
}

uint64_t svt_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ---------------------------------------------------------------------- */

static void svt_write_all(svt_t *t, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = write(t->sock, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        SVT_CHECK(t, n > 0, "peer socket write: %s",
                  (n < 0) ? strerror(errno) : "closed");
        p   += n;
        len -= n;
    }
}

static void svt_read_all(svt_t *t, void *buf, size_t len)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = read(t->sock, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        SVT_CHECK(t, n > 0, "peer socket read: %s (peer failed or exited)",
                  (n < 0) ? strerror(errno) : "closed");
        p   += n;
        len -= n;
    }
}

void svt_xchg(svt_t *t, const void *mine, void *theirs, size_t len)
{
    svt_write_all(t, mine, len);
    svt_read_all(t, theirs, len);
}

void svt_barrier(svt_t *t)
{
    uint32_t a = 0x5a5a5a5a, b = 0;

    svt_xchg(t, &a, &b, sizeof(a));
    SVT_CHECK(t, b == a, "barrier: got 0x%x from the peer", b);
}

void svt_send_u64(svt_t *t, uint64_t v)
{
    svt_write_all(t, &v, sizeof(v));
}

uint64_t svt_recv_u64(svt_t *t)
{
    uint64_t v;

    svt_read_all(t, &v, sizeof(v));
    return v;
}

/* ---------------------------------------------------------------------- */

void svt_open(svt_t *t)
{
    struct ibv_device **list;
    int num, idx;

    list = ibv_get_device_list(&num);
    SVT_CHECK(t, list != NULL && num > 0, "no verbs device (num %d, %s): is "
              "libsoftverbs.so preloaded?", num, strerror(errno));
    /* parent on the first device, child on the last: two NICs if there are */
    idx = t->role ? (num - 1) : 0;
    snprintf(t->dev, sizeof(t->dev), "%s", ibv_get_device_name(list[idx]));
    t->ctx = ibv_open_device(list[idx]);
    SVT_CHECK(t, t->ctx != NULL, "ibv_open_device(%s): %s", t->dev,
              strerror(errno));
    ibv_free_device_list(list);

    SVT_CHECK(t, ibv_query_port(t->ctx, 1, &t->port_attr) == 0,
              "ibv_query_port(%s:1): %s", t->dev, strerror(errno));
    SVT_CHECK(t, t->port_attr.state == IBV_PORT_ACTIVE,
              "%s:1 state %d, not ACTIVE", t->dev, t->port_attr.state);
    SVT_CHECK(t, ibv_query_gid(t->ctx, 1, 0, &t->gid) == 0,
              "ibv_query_gid(%s:1, 0): %s", t->dev, strerror(errno));
    t->pd = ibv_alloc_pd(t->ctx);
    SVT_CHECK(t, t->pd != NULL, "ibv_alloc_pd: %s", strerror(errno));
}

void svt_close(svt_t *t)
{
    SVT_CHECK(t, ibv_dealloc_pd(t->pd) == 0, "ibv_dealloc_pd: %s",
              strerror(errno));
    SVT_CHECK(t, ibv_close_device(t->ctx) == 0, "ibv_close_device: %s",
              strerror(errno));
}

struct ibv_cq *svt_cq(svt_t *t, int depth)
{
    struct ibv_cq *cq = ibv_create_cq(t->ctx, depth, NULL, NULL, 0);

    SVT_CHECK(t, cq != NULL, "ibv_create_cq(%d): %s", depth, strerror(errno));
    return cq;
}

struct ibv_mr *svt_mr(svt_t *t, size_t len, int access)
{
    struct ibv_mr *mr;
    void *buf;

    SVT_CHECK(t, posix_memalign(&buf, 4096, len) == 0, "no memory for %zu B",
              len);
    memset(buf, 0, len);
    mr = ibv_reg_mr(t->pd, buf, len, access);
    SVT_CHECK(t, mr != NULL, "ibv_reg_mr(%zu, 0x%x): %s", len, access,
              strerror(errno));
    return mr;
}

void svt_mr_free(struct ibv_mr *mr)
{
    void *buf = mr->addr;

    if (ibv_dereg_mr(mr)) {
        fprintf(stderr, "ibv_dereg_mr: %s\n", strerror(errno));
        exit(1);
    }
    free(buf);
}

struct ibv_qp *svt_qp(svt_t *t, enum ibv_qp_type type, struct ibv_cq *scq,
                      struct ibv_cq *rcq, struct ibv_srq *srq, int depth,
                      int max_sge, int max_inline)
{
    struct ibv_qp_init_attr attr = {
        .send_cq = scq,
        .recv_cq = rcq,
        .srq     = srq,
        .qp_type = type,
        .cap     = {
            .max_send_wr     = depth,
            .max_recv_wr     = srq ? 0 : depth,
            .max_send_sge    = max_sge,
            .max_recv_sge    = max_sge,
            .max_inline_data = max_inline,
        },
    };
    struct ibv_qp *qp = ibv_create_qp(t->pd, &attr);

    SVT_CHECK(t, qp != NULL, "ibv_create_qp(type %d, depth %d, sge %d, "
              "inline %d): %s", type, depth, max_sge, max_inline,
              strerror(errno));
    SVT_CHECK(t, attr.cap.max_send_wr >= (uint32_t)depth &&
              attr.cap.max_send_sge >= (uint32_t)max_sge &&
              attr.cap.max_inline_data >= (uint32_t)max_inline,
              "ibv_create_qp returned smaller caps: wr %u sge %u inline %u",
              attr.cap.max_send_wr, attr.cap.max_send_sge,
              attr.cap.max_inline_data);
    return qp;
}

void svt_info_init(svt_t *t, svt_info_t *info)
{
    memset(info, 0, sizeof(*info));
    info->lid        = t->port_attr.lid;
    info->link_layer = t->port_attr.link_layer;
    info->gid        = t->gid;
}

static void svt_ah_attr(const svt_info_t *remote, struct ibv_ah_attr *ah,
                        int force_grh)
{
    memset(ah, 0, sizeof(*ah));
    ah->dlid     = remote->lid;
    ah->port_num = 1;
    ah->sl       = 0;
    if (force_grh || (remote->link_layer == IBV_LINK_LAYER_ETHERNET)) {
        ah->is_global      = 1;
        ah->grh.dgid       = remote->gid;
        ah->grh.sgid_index = 0;
        ah->grh.hop_limit  = 64;
    }
}

void svt_connect_rc(svt_t *t, struct ibv_qp *qp, const svt_info_t *remote,
                    uint32_t rqpn, uint8_t timeout, uint8_t retry_cnt)
{
    enum ibv_qp_type type = qp->qp_type;
    struct ibv_qp_attr a;
    int mask;

    memset(&a, 0, sizeof(a));
    a.qp_state   = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num   = 1;
    mask         = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (type == IBV_QPT_UD) {
        a.qkey = SVT_QKEY;
        mask  |= IBV_QP_QKEY;
    } else {
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        mask             |= IBV_QP_ACCESS_FLAGS;
    }
    SVT_CHECK(t, ibv_modify_qp(qp, &a, mask) == 0, "QP 0x%x to INIT: %s",
              qp->qp_num, strerror(errno));

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    mask       = IBV_QP_STATE;
    if (type != IBV_QPT_UD) {
        a.path_mtu    = IBV_MTU_4096 < t->port_attr.active_mtu ?
                        IBV_MTU_4096 : t->port_attr.active_mtu;
        a.dest_qp_num = rqpn;
        a.rq_psn      = 0;
        svt_ah_attr(remote, &a.ah_attr, 0);
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                IBV_QP_RQ_PSN;
        if (type == IBV_QPT_RC) {
            a.max_dest_rd_atomic = 16;
            a.min_rnr_timer      = 12;
            mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        }
    }
    SVT_CHECK(t, ibv_modify_qp(qp, &a, mask) == 0, "QP 0x%x to RTR: %s",
              qp->qp_num, strerror(errno));

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn   = 0;
    mask       = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (type == IBV_QPT_RC) {
        a.timeout       = timeout;
        a.retry_cnt     = retry_cnt;
        a.rnr_retry     = 7;
        a.max_rd_atomic = 16;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                IBV_QP_MAX_QP_RD_ATOMIC;
    }
    SVT_CHECK(t, ibv_modify_qp(qp, &a, mask) == 0, "QP 0x%x to RTS: %s",
              qp->qp_num, strerror(errno));
}

void svt_connect(svt_t *t, struct ibv_qp *qp, const svt_info_t *remote,
                 uint32_t rqpn)
{
    svt_connect_rc(t, qp, remote, rqpn, 14, 7);
}

struct ibv_ah *svt_ah(svt_t *t, const svt_info_t *remote)
{
    struct ibv_ah_attr attr;
    struct ibv_ah *ah;

    svt_ah_attr(remote, &attr, 1);
    ah = ibv_create_ah(t->pd, &attr);
    SVT_CHECK(t, ah != NULL, "ibv_create_ah(lid %u): %s", remote->lid,
              strerror(errno));
    return ah;
}

struct ibv_qp_attr svt_qp_query(svt_t *t, struct ibv_qp *qp, int mask)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr a;

    SVT_CHECK(t, ibv_query_qp(qp, &a, mask, &init) == 0,
              "ibv_query_qp(0x%x): %s", qp->qp_num, strerror(errno));
    return a;
}

enum ibv_qp_state svt_qp_state(svt_t *t, struct ibv_qp *qp)
{
    return svt_qp_query(t, qp, IBV_QP_STATE).qp_state;
}

/* ---------------------------------------------------------------------- */

int svt_poll(svt_t *t, struct ibv_cq *cq, struct ibv_wc *wc, int n,
             int timeout_ms)
{
    uint64_t deadline = svt_now_ns() + (uint64_t)timeout_ms * 1000000;
    int got = 0, ret;

    while (got < n) {
        ret = ibv_poll_cq(cq, n - got, wc + got);
        SVT_CHECK(t, ret >= 0, "ibv_poll_cq: %d", ret);
        got += ret;
        if ((ret == 0) && (svt_now_ns() > deadline)) {
            break;
        }
    }
    return got;
}

int svt_poll_some(svt_t *t, struct ibv_cq *cq, struct ibv_wc *wc, int max,
                  int timeout_ms)
{
    uint64_t deadline = svt_now_ns() + (uint64_t)timeout_ms * 1000000;
    int ret;

    do {
        ret = ibv_poll_cq(cq, max, wc);
        SVT_CHECK(t, ret >= 0, "ibv_poll_cq: %d", ret);
    } while ((ret == 0) && (svt_now_ns() <= deadline));
    return ret;
}

void svt_poll_n(svt_t *t, struct ibv_cq *cq, struct ibv_wc *wc, int n,
                int timeout_ms, const char *what)
{
    int got = svt_poll(t, cq, wc, n, timeout_ms);

    SVT_CHECK(t, got == n, "%s: %d of %d completions within %d ms", what,
              got, n, timeout_ms);
}

const char *svt_opcode_str(int opcode)
{
    switch (opcode) {
    case IBV_WC_SEND:               return "SEND";
    case IBV_WC_RDMA_WRITE:         return "RDMA_WRITE";
    case IBV_WC_RDMA_READ:          return "RDMA_READ";
    case IBV_WC_RECV:               return "RECV";
    case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
    default:                        return "?";
    }
}

void svt_check_wc(svt_t *t, const struct ibv_wc *wc, enum ibv_wc_status st,
                  int opcode, uint64_t wr_id, struct ibv_qp *qp,
                  long byte_len, const char *what)
{
    SVT_CHECK(t, wc->status == st, "%s: status %s (%d), expected %s "
              "(wr_id 0x%llx)", what, ibv_wc_status_str(wc->status),
              wc->status, ibv_wc_status_str(st),
              (unsigned long long)wc->wr_id);
    SVT_CHECK(t, wr_id == ~0ull || wc->wr_id == wr_id,
              "%s: wr_id 0x%llx, expected 0x%llx", what,
              (unsigned long long)wc->wr_id, (unsigned long long)wr_id);
    SVT_CHECK(t, qp == NULL || wc->qp_num == qp->qp_num,
              "%s: qp_num 0x%x, expected 0x%x", what, wc->qp_num,
              qp ? qp->qp_num : 0);
    if (st != IBV_WC_SUCCESS) {
        return;                 /* only wr_id, status, qp_num are valid */
    }
    SVT_CHECK(t, opcode < 0 || (int)wc->opcode == opcode,
              "%s: opcode %s (%d), expected %s", what,
              svt_opcode_str(wc->opcode), wc->opcode, svt_opcode_str(opcode));
    SVT_CHECK(t, byte_len < 0 || wc->byte_len == (uint32_t)byte_len,
              "%s: byte_len %u, expected %ld", what, wc->byte_len, byte_len);
}

void svt_post_send(svt_t *t, struct ibv_qp *qp, struct ibv_send_wr *wr)
{
    struct ibv_send_wr *bad = NULL;
    int ret = ibv_post_send(qp, wr, &bad);

    SVT_CHECK(t, ret == 0, "ibv_post_send(qp 0x%x): %s (bad wr_id 0x%llx)",
              qp->qp_num, strerror(ret),
              bad ? (unsigned long long)bad->wr_id : 0ull);
}

void svt_post_recv(svt_t *t, struct ibv_qp *qp, struct ibv_recv_wr *wr)
{
    struct ibv_recv_wr *bad = NULL;
    int ret = ibv_post_recv(qp, wr, &bad);

    SVT_CHECK(t, ret == 0, "ibv_post_recv(qp 0x%x): %s", qp->qp_num,
              strerror(ret));
}

/* ---------------------------------------------------------------------- */

static inline uint64_t svt_mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dull;
    x ^= x >> 33;
    return x;
}

uint64_t svt_rand(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return svt_mix(*state);
}

static inline uint8_t svt_byte(uint64_t seed, uint64_t tag, size_t i)
{
    return svt_mix(seed ^ (tag * 0xd6e8feb86659fd93ull) ^ (i >> 3)) >>
           ((i & 7) * 8);
}

void svt_fill(svt_t *t, void *buf, size_t len, uint64_t tag)
{
    uint8_t *p = buf;
    size_t i;

    for (i = 0; i < len; ++i) {
        p[i] = svt_byte(t->seed, tag, i);
    }
}

void svt_verify(svt_t *t, const void *buf, size_t len, uint64_t tag,
                const char *what)
{
    const uint8_t *p = buf;
    size_t i, bad = 0, first = 0;

    for (i = 0; i < len; ++i) {
        if (p[i] != svt_byte(t->seed, tag, i)) {
            if (bad++ == 0) {
                first = i;
            }
        }
    }
    SVT_CHECK(t, bad == 0, "%s: %zu of %zu bytes differ, first at offset %zu "
              "(0x%02x, expected 0x%02x, pattern tag %llu)", what, bad, len,
              first, p[first], svt_byte(t->seed, tag, first),
              (unsigned long long)tag);
}

void svt_kill_child(svt_t *t)
{
    t->child_gone = 1;
    kill(t->child, SIGKILL);
}

/* ---------------------------------------------------------------------- */

void svt_pair_setup(svt_t *t, svt_pair_t *p, enum ibv_qp_type type,
                    size_t len, int depth, int max_sge, int max_inline)
{
    svt_info_t mine;

    svt_open(t);
    p->cq = svt_cq(t, 4 * depth);
    p->mr = svt_mr(t, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ);
    p->qp = svt_qp(t, type, p->cq, p->cq, NULL, depth, max_sge, max_inline);
    svt_info_init(t, &mine);
    mine.nqp    = 1;
    mine.qpn[0] = p->qp->qp_num;
    mine.rkey   = p->mr->rkey;
    mine.addr   = (uintptr_t)p->mr->addr;
    mine.len    = len;
    svt_xchg(t, &mine, &p->peer, sizeof(mine));
    svt_connect(t, p->qp, &p->peer, p->peer.qpn[0]);
    SVT_LOG(t, "%s QP 0x%x on %s lid %u <-> QP 0x%x lid %u",
            type == IBV_QPT_RC ? "RC" : type == IBV_QPT_UC ? "UC" : "UD",
            p->qp->qp_num, t->dev, mine.lid, p->peer.qpn[0], p->peer.lid);
    /* both QPs in RTS before anyone sends */
    svt_barrier(t);
}

void svt_destroy(svt_t *t, struct ibv_qp **qp, unsigned nqp,
                 struct ibv_mr *mr, struct ibv_cq *cq)
{
    unsigned i;

    for (i = 0; i < nqp; ++i) {
        SVT_CHECK(t, ibv_destroy_qp(qp[i]) == 0, "ibv_destroy_qp: %s",
                  strerror(errno));
    }
    svt_mr_free(mr);
    SVT_CHECK(t, ibv_destroy_cq(cq) == 0, "ibv_destroy_cq: %s",
              strerror(errno));
    svt_close(t);
}

void svt_pair_destroy(svt_t *t, svt_pair_t *p)
{
    svt_destroy(t, &p->qp, 1, p->mr, p->cq);
}

void svt_sge(struct ibv_sge *sge, struct ibv_mr *mr, size_t off, size_t len)
{
    sge->addr   = (uintptr_t)mr->addr + off;
    sge->length = len;
    sge->lkey   = mr->lkey;
}

void svt_verify_sg(svt_t *t, const struct ibv_sge *sg, int n, size_t len,
                   uint64_t tag, const char *what)
{
    uint8_t *tmp = malloc(len + 1);
    size_t done = 0, chunk;
    int i;

    SVT_CHECK(t, tmp != NULL, "no memory");
    for (i = 0; (i < n) && (done < len); ++i) {
        chunk = (sg[i].length < len - done) ? sg[i].length : len - done;
        memcpy(tmp + done, (void *)(uintptr_t)sg[i].addr, chunk);
        done += chunk;
    }
    SVT_CHECK(t, done == len, "%s: scatter list holds %zu of %zu bytes", what,
              done, len);
    svt_verify(t, tmp, len, tag, what);
    free(tmp);
}

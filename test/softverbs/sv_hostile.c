/*
 * sv_hostile_test SUBTEST: a hostile member of a softverbs fabric.
 *
 * The parent is the victim: an ordinary verbs program whose QPs talk to
 * each other (loopback, through its own port) and, in `fuzz`, receive from
 * the child. The child is the hostile process: it joins the same fabric
 * (same user, as any member may), maps the victim's port segment and the
 * fabric file, and overwrites what the victim shares there - queue sizes
 * and indexes, completions, memory region entries, its port entry, the
 * model configuration - or claims a receive WQE and dies. The victim must
 * see only clean errors: verbs calls that fail, error completions, no
 * completion naming a work request it did not post, no crash and no access
 * out of bounds (run under ASan/UBSan in CI). It then makes fresh objects
 * and checks that a transfer through them delivers its data.
 *
 * The child reaches into the segment layout (sv_fabric.h): it is built
 * with the softverbs sources' headers, as sv_fabric_tool is.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_test.h"
#include "sv_fabric.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define HST_BUF      (64 * 1024)
#define HST_DEPTH    64
#define HST_SGE      2
#define HST_IDS      (1u << 16)
#define HST_WRID_TAG (0x5aull << 56)
#define HST_POLL_MS  5000

enum { HST_NONE, HST_POSTED, HST_DONE };

/* The victim's objects: RC pair rc[0] -> rc[1] (own RQs), SRQ pair
 * sq[1] -> sq[0] (sq[0] on the SRQ), a UD QP sending to itself; one CQ. */
typedef struct hst_victim {
    svt_t          *t;
    struct ibv_cq  *cq;
    struct ibv_srq *srq;
    struct ibv_qp  *rc[2], *sq[2], *ud;
    struct ibv_ah  *ah;
    struct ibv_mr  *mr[2];
    svt_info_t      self;
    uint8_t         ids[HST_IDS];  /* HST_* per wr_id */
    uint32_t        next_id;
    unsigned        errors;        /* error completions seen */
    unsigned        ok;            /* successful ones */
} hst_victim_t;

/* What the hostile needs to find the victim's tables. */
typedef struct hst_info {
    int32_t  pid;
    uint32_t port;
    uint32_t qp[5];    /* rc[0], rc[1], sq[0], sq[1], ud: table indexes */
    uint32_t cq, srq;
    uint32_t mr[2];    /* keys */
    uint64_t addr[2];
} hst_info_t;

/* ---------------------------------------------------------------------- */
/* Victim                                                                  */

static uint64_t hst_id(hst_victim_t *v)
{
    uint32_t i = v->next_id++;

    SVT_CHECK(v->t, i < HST_IDS, "out of wr_ids");
    v->ids[i] = HST_POSTED;
    return HST_WRID_TAG | i;
}

/* A completion must name a request we posted and have not seen complete. */
static void hst_check_wc(hst_victim_t *v, const struct ibv_wc *wc)
{
    uint64_t i = wc->wr_id & ~HST_WRID_TAG;

    SVT_CHECK(v->t, ((wc->wr_id & HST_WRID_TAG) == HST_WRID_TAG) &&
              (i < HST_IDS) && (v->ids[i] == HST_POSTED),
              "completion for wr_id %#llx (status %d, opcode %d, qp 0x%x) "
              "that was never posted or completed already",
              (unsigned long long)wc->wr_id, wc->status, wc->opcode,
              wc->qp_num);
    SVT_CHECK(v->t, (unsigned)wc->status <= IBV_WC_GENERAL_ERR,
              "completion status %d is not a verbs status", wc->status);
    v->ids[i] = HST_DONE;
    v->errors += (wc->status != IBV_WC_SUCCESS);
    v->ok     += (wc->status == IBV_WC_SUCCESS);
}

/* Poll up to `max` completions for `ms`; every one is checked. */
static int hst_poll(hst_victim_t *v, struct ibv_wc *wc, int max, int ms)
{
    uint64_t end = svt_now_ns() + (uint64_t)ms * 1000000;
    int got = 0, n, i;

    while (got < max) {
        n = ibv_poll_cq(v->cq, max - got, wc + got);
        SVT_CHECK(v->t, n >= 0, "ibv_poll_cq: %d", n);
        for (i = 0; i < n; ++i) {
            hst_check_wc(v, &wc[got + i]);
        }
        got += n;
        if ((n == 0) && (svt_now_ns() > end)) {
            break;
        }
    }
    return got;
}

static int hst_post_recv(hst_victim_t *v, struct ibv_qp *qp,
                         struct ibv_srq *srq, size_t off, size_t len,
                         uint64_t *wr_id)
{
    struct ibv_recv_wr wr = { .num_sge = 1 }, *bad;
    struct ibv_sge sge;
    int ret;

    svt_sge(&sge, v->mr[1], off, len);
    wr.sg_list = &sge;
    wr.wr_id   = hst_id(v);
    ret = srq ? ibv_post_srq_recv(srq, &wr, &bad) :
                ibv_post_recv(qp, &wr, &bad);
    if (ret != 0) {
        v->ids[wr.wr_id & ~HST_WRID_TAG] = HST_NONE;
    } else if (wr_id != NULL) {
        *wr_id = wr.wr_id;
    }
    return ret;
}

static int hst_post_send(hst_victim_t *v, struct ibv_qp *qp,
                         enum ibv_wr_opcode op, size_t off, size_t len,
                         uint64_t *wr_id)
{
    struct ibv_send_wr wr = { .num_sge = 1, .opcode = op,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;
    struct ibv_sge sge;
    int ret;

    svt_sge(&sge, v->mr[0], off, len);
    wr.sg_list = &sge;
    wr.wr_id   = hst_id(v);
    if (qp->qp_type == IBV_QPT_UD) {
        wr.wr.ud.ah          = v->ah;
        wr.wr.ud.remote_qpn  = qp->qp_num;
        wr.wr.ud.remote_qkey = SVT_QKEY;
    } else {
        wr.wr.rdma.remote_addr = (uintptr_t)v->mr[1]->addr + off;
        wr.wr.rdma.rkey        = v->mr[1]->rkey;
    }
    ret = ibv_post_send(qp, &wr, &bad);
    if (ret != 0) {
        v->ids[wr.wr_id & ~HST_WRID_TAG] = HST_NONE;
    } else if (wr_id != NULL) {
        *wr_id = wr.wr_id;
    }
    return ret;
}

/* RC with short timers: a peer that stops answering fails within ms. */
static void hst_connect(hst_victim_t *v, struct ibv_qp *a, struct ibv_qp *b)
{
    svt_connect_rc(v->t, a, &v->self, b->qp_num, 8, 1);
    svt_connect_rc(v->t, b, &v->self, a->qp_num, 8, 1);
}

static void hst_victim_objects(hst_victim_t *v)
{
    svt_t *t = v->t;
    struct ibv_srq_init_attr sa = { .attr = { .max_wr  = HST_DEPTH,
                                              .max_sge = HST_SGE } };
    int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
              IBV_ACCESS_REMOTE_READ, i;

    v->cq  = svt_cq(t, 8 * HST_DEPTH);
    v->srq = ibv_create_srq(t->pd, &sa);
    SVT_CHECK(t, v->srq != NULL, "ibv_create_srq: %s", strerror(errno));
    for (i = 0; i < 2; ++i) {
        v->mr[i] = svt_mr(t, HST_BUF, acc);
        v->rc[i] = svt_qp(t, IBV_QPT_RC, v->cq, v->cq, NULL, HST_DEPTH,
                          HST_SGE, 0);
    }
    v->sq[0] = svt_qp(t, IBV_QPT_RC, v->cq, v->cq, v->srq, HST_DEPTH,
                      HST_SGE, 0);
    v->sq[1] = svt_qp(t, IBV_QPT_RC, v->cq, v->cq, NULL, HST_DEPTH, HST_SGE,
                      0);
    v->ud    = svt_qp(t, IBV_QPT_UD, v->cq, v->cq, NULL, HST_DEPTH, HST_SGE,
                      0);
    svt_info_init(t, &v->self);
    hst_connect(v, v->rc[0], v->rc[1]);
    hst_connect(v, v->sq[0], v->sq[1]);
    svt_connect(t, v->ud, &v->self, 0);
    v->ah = svt_ah(t, &v->self);
}

static void hst_victim_info(hst_victim_t *v, hst_info_t *info)
{
    memset(info, 0, sizeof(*info));
    info->pid     = getpid();
    info->port    = v->t->port_attr.lid - 1;
    info->qp[0]   = v->rc[0]->qp_num & 0xffff;
    info->qp[1]   = v->rc[1]->qp_num & 0xffff;
    info->qp[2]   = v->sq[0]->qp_num & 0xffff;
    info->qp[3]   = v->sq[1]->qp_num & 0xffff;
    info->qp[4]   = v->ud->qp_num & 0xffff;
    info->cq      = v->cq->handle;
    info->srq     = v->srq->handle;
    info->mr[0]   = v->mr[0]->rkey;
    info->mr[1]   = v->mr[1]->rkey;
    info->addr[0] = (uintptr_t)v->mr[0]->addr;
    info->addr[1] = (uintptr_t)v->mr[1]->addr;
}

static void hst_to_err(hst_victim_t *v, struct ibv_qp *qp)
{
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

    SVT_CHECK(v->t, ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0,
              "QP 0x%x to ERR: %s", qp->qp_num, strerror(errno));
}

/* Every QP to ERR, every completion polled (a WQE a hostile process made
 * unreachable may never complete: counted, not waited for), all destroyed:
 * each verb must succeed. Returns the requests left without completion. */
static unsigned hst_victim_teardown(hst_victim_t *v)
{
    struct ibv_qp *qps[] = { v->rc[0], v->rc[1], v->sq[0], v->sq[1],
                             v->ud };
    struct ibv_wc wc[64];
    unsigned i, left = 0;

    for (i = 0; i < 5; ++i) {
        hst_to_err(v, qps[i]);
    }
    while (hst_poll(v, wc, 64, 300) > 0) {
    }
    for (i = 0; i < HST_IDS; ++i) {
        left += (v->ids[i] == HST_POSTED);
    }
    for (i = 0; i < 5; ++i) {
        SVT_CHECK(v->t, ibv_destroy_qp(qps[i]) == 0, "ibv_destroy_qp: %s",
                  strerror(errno));
    }
    SVT_CHECK(v->t, ibv_destroy_ah(v->ah) == 0, "ibv_destroy_ah");
    SVT_CHECK(v->t, ibv_destroy_srq(v->srq) == 0, "ibv_destroy_srq: %s",
              strerror(errno));
    SVT_CHECK(v->t, ibv_destroy_cq(v->cq) == 0, "ibv_destroy_cq: %s",
              strerror(errno));
    svt_mr_free(v->mr[0]);
    svt_mr_free(v->mr[1]);
    return left;
}

/* Data at `off` of the source buffer: a stream of its own per offset. */
static void hst_fill(hst_victim_t *v, size_t off, size_t len)
{
    svt_fill(v->t, (char*)v->mr[0]->addr + off, len, 1000 + off);
}

static void hst_verify(hst_victim_t *v, size_t dst, size_t src, size_t len,
                       const char *what)
{
    svt_verify(v->t, (char*)v->mr[1]->addr + dst, len, 1000 + src, what);
}

/* Fresh objects after the attack: a SEND into the SRQ, an RDMA WRITE and
 * a UD datagram each deliver their data. */
static void hst_victim_works(hst_victim_t *v, const char *what)
{
    struct ibv_wc wc[8];
    int n;

    memset(v->ids, 0, sizeof(v->ids));
    v->errors  = 0;
    v->next_id = 0;
    hst_victim_objects(v);
    hst_fill(v, 0, 4096);
    hst_fill(v, 16384, 4096);
    hst_fill(v, 24576, 2048);
    SVT_CHECK(v->t, hst_post_recv(v, NULL, v->srq, 0, 4096, NULL) == 0 &&
              hst_post_recv(v, v->ud, NULL, 8192, 4096 + 40, NULL) == 0,
              "%s: posting receives on fresh objects failed", what);
    SVT_CHECK(v->t, hst_post_send(v, v->sq[1], IBV_WR_SEND, 0, 4096,
                                  NULL) == 0 &&
              hst_post_send(v, v->rc[0], IBV_WR_RDMA_WRITE, 16384, 4096,
                            NULL) == 0 &&
              hst_post_send(v, v->ud, IBV_WR_SEND, 24576, 2048, NULL) == 0,
              "%s: posting sends on fresh objects failed", what);
    n = hst_poll(v, wc, 5, HST_POLL_MS);
    SVT_CHECK(v->t, (n == 5) && (v->errors == 0), "%s: %d of 5 completions "
              "on fresh objects, %u errors (outstanding: SRQ recv %d, UD "
              "recv %d, SEND %d, WRITE %d, UD SEND %d)", what, n, v->errors,
              v->ids[0] == HST_POSTED, v->ids[1] == HST_POSTED,
              v->ids[2] == HST_POSTED, v->ids[3] == HST_POSTED,
              v->ids[4] == HST_POSTED);
    hst_verify(v, 0, 0, 4096, "SEND through the SRQ");
    hst_verify(v, 8192 + 40, 24576, 2048, "UD datagram");
    hst_verify(v, 16384, 16384, 4096, "RDMA WRITE");
    SVT_CHECK(v->t, hst_victim_teardown(v) == 0, "%s: fresh objects left "
              "requests without completion", what);
    SVT_LOG(v->t, "%s: fresh objects deliver their data", what);
}

static void hst_victim_open(hst_victim_t *v, svt_t *t)
{
    memset(v, 0, sizeof(*v));
    v->t = t;
    svt_open(t);
    hst_victim_objects(v);
}

/* ---------------------------------------------------------------------- */
/* Hostile                                                                 */

typedef struct hst_attacker {
    svt_t           *t;
    hst_info_t       v;
    sv_fabric_hdr_t *fab;
    sv_seg_t        *seg;
    uint64_t         seg_size;
    uint64_t         rng;
    /* a UD QP of its own: the responder side runs in this process too,
     * on the tables it corrupts */
    struct ibv_cq   *cq;
    struct ibv_qp   *ud;
    struct ibv_mr   *mr;
    struct ibv_ah   *ah;
} hst_attacker_t;

static uint32_t sv_mr_idx(uint32_t key)
{
    return ((key >> 8) - 1) % SV_MAX_MR;
}

static void *hst_map(svt_t *t, const char *name, uint64_t *size)
{
    struct stat st;
    void *p;
    int fd;

    fd = shm_open(name, O_RDWR, 0);
    SVT_CHECK(t, fd >= 0, "shm_open(%s): %s", name, strerror(errno));
    SVT_CHECK(t, fstat(fd, &st) == 0, "fstat(%s)", name);
    p = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    SVT_CHECK(t, p != MAP_FAILED, "mmap(%s): %s", name, strerror(errno));
    close(fd);
    *size = st.st_size;
    return p;
}

/* Join the fabric (a member like any other) and map the victim's port. */
static void hst_attacker_open(hst_attacker_t *a, svt_t *t)
{
    const char *fab = getenv("SOFTVERBS_FABRIC");
    hst_info_t info;
    char name[160];
    uint64_t size;

    memset(a, 0, sizeof(*a));
    a->t   = t;
    a->rng = t->seed;
    svt_open(t);
    memset(&info, 0, sizeof(info));
    svt_xchg(t, &info, &a->v, sizeof(a->v));
    snprintf(name, sizeof(name), "/softverbs.%s", fab ? fab : "default");
    a->fab = hst_map(t, name, &size);
    SVT_CHECK(t, a->v.port < SV_MODEL_MAX_PORTS, "victim port %u",
              a->v.port);
    snprintf(name, sizeof(name), "/softverbs.%s.%u.%u", fab ? fab : "default",
             a->v.port, a->fab->port[a->v.port].gen);
    a->seg = hst_map(t, name, &a->seg_size);
    SVT_LOG(t, "mapped the victim's port %u (pid %d, %s)", a->v.port,
            a->v.pid, name);
}

static void hst_attacker_close(hst_attacker_t *a)
{
    if (a->ud != NULL) {
        SVT_CHECK(a->t, ibv_destroy_ah(a->ah) == 0 &&
                  ibv_destroy_qp(a->ud) == 0 && ibv_destroy_cq(a->cq) == 0,
                  "attacker's own objects");
        svt_mr_free(a->mr);
    }
    svt_close(a->t);
}

static uint64_t hst_rand(hst_attacker_t *a)
{
    return svt_rand(&a->rng);
}

/* A value a careless or malicious writer might leave: 0, all ones, a
 * boundary, or random bits. */
static uint64_t hst_bad(hst_attacker_t *a)
{
    static const uint64_t edge[] = {
        0, 1, 2, 31, 32, 33, 63, 64, 4095, 4096, 65535, 65536, 0x7fffffff,
        0x80000000, 0xffffffff, 0x100000000ull, 1ull << 46, ~0ull,
        ~0ull >> 1
    };
    uint64_t r = hst_rand(a);

    return (r & 1) ? edge[(r >> 1) % (sizeof(edge) / sizeof(edge[0]))] :
                     hst_rand(a);
}

static void *hst_seg_at(hst_attacker_t *a, uint64_t off, uint64_t len)
{
    if ((off < sizeof(sv_seg_t)) || (off > a->seg_size) ||
        (len > a->seg_size - off)) {
        return NULL;
    }
    return (char*)a->seg + off;
}

/* Forge a completion in the victim's CQ as any producer can. */
static void hst_forge_cqe(hst_attacker_t *a, const sv_cqe_t *cqe)
{
    sv_cq_shm_t *e = &a->seg->cq[a->v.cq];
    uint32_t size = e->q.size;
    sv_cqe_t *ring = hst_seg_at(a, e->q.ring_off,
                                (uint64_t)size * sizeof(sv_cqe_t));

    if ((ring != NULL) && (size > 0) && !(size & (size - 1))) {
        (void)sv_cq_ring_push(&e->q, ring, size, cqe);
    }
}

static void hst_forge_random_cqe(hst_attacker_t *a)
{
    sv_cqe_t c;
    unsigned i;

    for (i = 0; i < sizeof(c); i += 8) {
        uint64_t r = hst_rand(a);

        memcpy((char*)&c + i, &r, 8);
    }
    c.ts = 0;
    if (hst_rand(a) & 1) {   /* often about one of the victim's QPs */
        c.qp_num = (a->v.port << 16) | a->v.qp[hst_rand(a) % 5];
    }
    if (hst_rand(a) & 1) {
        c.status = IBV_WC_SUCCESS;
    }
    hst_forge_cqe(a, &c);
}

/* Overwrite one randomly chosen 4- or 8-byte field the victim shares. */
static void hst_corrupt_one(hst_attacker_t *a)
{
    sv_qp_shm_t *qp = &a->seg->qp[a->v.qp[hst_rand(a) % 5]];
    sv_srq_shm_t *srq = &a->seg->srq[a->v.srq];
    sv_cq_shm_t *cq = &a->seg->cq[a->v.cq];
    sv_port_entry_t *pe = &a->fab->port[a->v.port];
    sv_mr_shm_t *mr = &a->seg->mr[sv_mr_idx(a->v.mr[hst_rand(a) & 1])];
    sv_rq_ring_t *rq = (hst_rand(a) & 1) ? &qp->rq : &srq->q;
    uint64_t v = hst_bad(a);
    void *p;

    /* a few fields break an object for good (its CQ's size, where its
     * ring is): rarely, or the rest of the run would test nothing */
    unsigned what = hst_rand(a) % 24;

    if (((what == 13) || (what == 14) || (what == 9) || (what == 23)) &&
        (hst_rand(a) % 16 != 0)) {
        what = 16;
    }
    switch (what) {
    case 0:  rq->size = v; break;
    case 1:  rq->max_sge = v; break;
    case 2:  rq->wqe_size = v; break;
    case 3:  rq->ring_off = v; break;
    case 4:  rq->head = v; break;
    case 5:  rq->tail = v; break;
    case 6:
        /* the ring and pool themselves */
        p = hst_seg_at(a, rq->ring_off + (hst_rand(a) % 4096 & ~7ull), 8);
        if (p != NULL) {
            memcpy(p, &v, 8);
        }
        break;
    case 7:  qp->state = v; break;
    case 8:  qp->srq = v; break;
    case 9:  qp->rcq = v; break;
    case 10: qp->err_event = v; qp->state = IBV_QPS_ERR;
             a->seg->err_pending++; break;
    case 11: cq->q.head = v; break;
    case 12: cq->q.tail = v; break;
    case 13: cq->q.size = v; break;
    case 14: cq->q.ring_off = v; break;
    case 15: cq->q.armed = v; cq->q.chan_id = v; break;
    case 16: hst_forge_random_cqe(a); break;
    case 17: mr->vaddr = v; break;
    case 18: mr->length = v; mr->iova = hst_bad(a); break;
    case 19: mr->key = v; break;
    case 20: pe->seg_size = v; break;
    case 21: pe->pid = v; pe->starttime = hst_bad(a); break;
    case 22: a->seg->err_pending = v; break;
    default: srq->valid = v; srq->pd_id = v; qp->pd_id = hst_bad(a); break;
    }
}

/* Claim the WQE at the head of a victim's receive queue as a sender does
 * (through the same code, sv_queue.h), then never complete it. */
static void hst_claim(hst_attacker_t *a, sv_rq_ring_t *q, uint32_t qp_idx)
{
    struct {
        sv_rwqe_t      w;
        struct ibv_sge sge[SV_MAX_SGE];
    } wqe;
    uint32_t size = q->size, wqe_size = q->wqe_size;
    unsigned me = a->t->port_attr.lid - 1;
    void *ring;
    int ret;

#ifdef SV_RWQE_CLAIMED
    sv_rq_claimed_t cl;

    ring = hst_seg_at(a, q->ring_off, sv_rq_ring_bytes(size, wqe_size));
    SVT_CHECK(a->t, ring != NULL, "victim's ring out of its segment");
    ret = sv_rq_ring_claim(q, ring, size, wqe_size, q->max_sge,
                           SV_RWQE_ID(me, a->fab->port[me].gen, qp_idx),
                           &wqe.w, &cl);
#else
    ring = hst_seg_at(a, q->ring_off, (uint64_t)size * wqe_size);
    SVT_CHECK(a->t, ring != NULL, "victim's ring out of its segment");
    ret = sv_rq_ring_pop(q, ring, size, wqe_size, q->max_sge, &wqe.w);
    (void)me;
    (void)qp_idx;
#endif
    SVT_CHECK(a->t, ret == 0, "no WQE to claim");
}

static void hst_claim_and_die(hst_attacker_t *a)
{
    hst_claim(a, &a->seg->srq[a->v.srq].q, a->v.qp[2]);
    hst_claim(a, &a->seg->qp[a->v.qp[4]].rq, a->v.qp[4]);
    SVT_LOG(a->t, "claimed two receive WQEs; dying");
    _exit(0);
}

/* One UD datagram to the victim's UD QP (its receive queue is what the
 * attack rewrites): the attacker's own softverbs reads those tables. */
static void hst_send_datagram(hst_attacker_t *a)
{
    struct ibv_send_wr wr = { .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;
    struct ibv_ah_attr ah = { .dlid = a->v.port + 1, .port_num = 1 };
    struct ibv_wc wc[16];
    struct ibv_sge sge;

    if (a->ud == NULL) {
        a->cq = svt_cq(a->t, 256);
        a->mr = svt_mr(a->t, 4096, IBV_ACCESS_LOCAL_WRITE);
        a->ud = svt_qp(a->t, IBV_QPT_UD, a->cq, a->cq, NULL, 64, 1, 0);
        svt_connect(a->t, a->ud, NULL, 0);
        a->ah = ibv_create_ah(a->t->pd, &ah);
        SVT_CHECK(a->t, a->ah != NULL, "ibv_create_ah: %s", strerror(errno));
    }
    svt_sge(&sge, a->mr, 0, 1 + hst_rand(a) % 2048);
    wr.sg_list           = &sge;
    wr.wr.ud.ah          = a->ah;
    wr.wr.ud.remote_qpn  = (a->v.port << 16) | a->v.qp[4];
    wr.wr.ud.remote_qkey = SVT_QKEY;
    (void)ibv_post_send(a->ud, &wr, &bad);
    while (ibv_poll_cq(a->cq, 16, wc) > 0) {
    }
}

/* Back to RTS after an error, without checks: the attack may make any
 * step fail. */
static void hst_reconnect(hst_victim_t *v, struct ibv_qp *qp,
                          struct ibv_qp *peer)
{
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

    (void)ibv_modify_qp(qp, &a, IBV_QP_STATE);
    memset(&a, 0, sizeof(a));
    a.qp_state        = IBV_QPS_INIT;
    a.port_num        = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    (void)ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                        IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    memset(&a, 0, sizeof(a));
    a.qp_state           = IBV_QPS_RTR;
    a.path_mtu           = IBV_MTU_4096;
    a.dest_qp_num        = peer->qp_num;
    a.ah_attr.dlid       = v->self.lid;
    a.ah_attr.port_num   = 1;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer      = 1;
    (void)ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                        IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    memset(&a, 0, sizeof(a));
    a.qp_state      = IBV_QPS_RTS;
    a.timeout       = 8;
    a.retry_cnt     = 1;
    a.rnr_retry     = 1;
    a.max_rd_atomic = 1;
    (void)ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
                        IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                        IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* One step of the victim's traffic in round r; any verb may fail. */
static void hst_victim_step(hst_victim_t *v, long r)
{
    struct ibv_mr *mr;
    size_t off = (r * 512) % (HST_BUF - 4096);
    int i;

    switch (r % 6) {
    case 0:
        for (i = 0; i < 2; ++i) {
            (void)hst_post_recv(v, v->rc[1], NULL, off, 512, NULL);
            (void)hst_post_recv(v, NULL, v->srq, off, 512, NULL);
            (void)hst_post_recv(v, v->ud, NULL, off, 2048 + 40, NULL);
        }
        break;
    case 1:
        (void)hst_post_send(v, v->rc[0], IBV_WR_SEND, off, 256, NULL);
        (void)hst_post_send(v, v->rc[0], IBV_WR_RDMA_WRITE, off, 1024, NULL);
        (void)hst_post_send(v, v->sq[1], IBV_WR_SEND, off, 256, NULL);
        (void)hst_post_send(v, v->ud, IBV_WR_SEND, off, 1024, NULL);
        break;
    case 2:
        (void)hst_post_send(v, v->rc[0], IBV_WR_RDMA_READ, off, 2048, NULL);
        break;
    case 3:
        mr = ibv_reg_mr(v->t->pd, v->mr[0]->addr, 4096,
                        IBV_ACCESS_LOCAL_WRITE);
        if (mr != NULL) {
            (void)ibv_dereg_mr(mr);
        }
        break;
    case 4:
        for (i = 0; i < 2; ++i) {
            if (svt_qp_state(v->t, v->rc[i]) == IBV_QPS_ERR) {
                hst_reconnect(v, v->rc[i], v->rc[!i]);
            }
            if (svt_qp_state(v->t, v->sq[i]) == IBV_QPS_ERR) {
                hst_reconnect(v, v->sq[i], v->sq[!i]);
            }
        }
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------------- */
/* Sub-tests                                                               */

static void hst_start(svt_t *t, hst_victim_t *v, hst_attacker_t *a)
{
    hst_info_t info, none;

    if (t->role == 0) {
        hst_victim_open(v, t);
        hst_victim_info(v, &info);
        svt_xchg(t, &info, &none, sizeof(info));
    } else {
        hst_attacker_open(a, t);
    }
}

static void hst_victim_end(hst_victim_t *v, const char *what)
{
    unsigned left = hst_victim_teardown(v);

    SVT_LOG(v->t, "%s: survived; %u successful and %u error completions, "
            "%u requests made unreachable", what, v->ok, v->errors, left);
    hst_victim_works(v, what);
    svt_close(v->t);
}

/* Own receive queue: sizes and indexes rewritten after and before posts. */
void hst_rq_sizes(svt_t *t)
{
    hst_attacker_t a;
    hst_victim_t v;
    sv_rq_ring_t *q;
    struct ibv_wc wc[64];
    int i;

    hst_start(t, &v, &a);
    if (t->role == 1) {
        svt_barrier(t);
        q = &a.seg->qp[a.v.qp[1]].rq;
        q->size     = 0x40000000;
        q->wqe_size = 0x7fffffff;
        q->max_sge  = 1000;
        q->ring_off = 8;
        q->head     = 12345678901ull;
        q->tail     = 5;
        svt_barrier(t);
        hst_attacker_close(&a);
        return;
    }
    for (i = 0; i < 8; ++i) {
        SVT_CHECK(t, hst_post_recv(&v, v.rc[1], NULL, i * 512, 512, NULL) ==
                  0, "ibv_post_recv before the attack: %s", strerror(errno));
    }
    svt_barrier(t);
    svt_barrier(t);
    /* may be refused (ENOMEM, EINVAL), must not write out of bounds */
    for (i = 0; i < HST_DEPTH; ++i) {
        (void)hst_post_recv(&v, v.rc[1], NULL, (i % 16) * 512, 512, NULL);
    }
    for (i = 0; i < 4; ++i) {
        (void)hst_post_send(&v, v.rc[0], IBV_WR_SEND, i * 512, 512, NULL);
    }
    hst_poll(&v, wc, 64, 200);
    /* the flush must find every receive we posted, whatever shm says */
    hst_to_err(&v, v.rc[1]);
    hst_to_err(&v, v.rc[0]);
    while (hst_poll(&v, wc, 64, 300) > 0) {
    }
    for (i = 0; i < (int)v.next_id; ++i) {
        SVT_CHECK(t, v.ids[i] != HST_POSTED, "wr_id %d never completed "
                  "after the QPs went to ERR", i);
    }
    hst_victim_end(&v, "rq_sizes");
}

/* SRQ: sizes and indexes rewritten, then posts and sends into it. */
void hst_srq_sizes(svt_t *t)
{
    hst_attacker_t a;
    hst_victim_t v;
    sv_rq_ring_t *q;
    struct ibv_wc wc[64];
    int i, k;

    hst_start(t, &v, &a);
    if (t->role == 1) {
        /* first the sizes, with indexes that leave room to post ... */
        svt_barrier(t);
        q = &a.seg->srq[a.v.srq].q;
        q->size     = 0x80000000;
        q->wqe_size = 0x7ffffff0;
        q->max_sge  = 0xffffffff;
        svt_barrier(t);
        /* ... then the indexes */
        svt_barrier(t);
        q->head     = 77;
        q->tail     = 0xfffffffffff0ull;
        svt_barrier(t);
        hst_attacker_close(&a);
        return;
    }
    for (i = 0; i < 4; ++i) {
        SVT_CHECK(t, hst_post_recv(&v, NULL, v.srq, i * 512, 512, NULL) == 0,
                  "ibv_post_srq_recv before the attack: %s", strerror(errno));
    }
    for (k = 0; k < 2; ++k) {
        svt_barrier(t);
        svt_barrier(t);
        for (i = 0; i < HST_DEPTH / 2; ++i) {
            (void)hst_post_recv(&v, NULL, v.srq, (i % 16) * 512, 512, NULL);
        }
        for (i = 0; i < 4; ++i) {
            (void)hst_post_send(&v, v.sq[1], IBV_WR_SEND, i * 512, 512,
                                NULL);
        }
        hst_poll(&v, wc, 64, 300);
    }
    hst_victim_end(&v, "srq_sizes");
}

/* Completions forged in the victim's CQ, among its own. */
void hst_cqe_forge(svt_t *t)
{
    struct ibv_wc wc[64];
    hst_attacker_t a;
    hst_victim_t v;
    sv_cqe_t c;
    int i, n;

    hst_start(t, &v, &a);
    if (t->role == 1) {
        svt_barrier(t);
        for (i = 0; i < 64; ++i) {
            memset(&c, 0, sizeof(c));
            c.wr_id    = 0xdead0000beef0000ull | i;
            c.qp_num   = (a.v.port << 16) | a.v.qp[i % 5];
            c.opcode   = (i & 1) ? IBV_WC_RECV : IBV_WC_SEND;
            c.status   = (i % 3) ? IBV_WC_SUCCESS : 200 + i;
#ifdef SV_RWQE_CLAIMED
            c.wqe_seq  = (i < 32) ? 0xffffffffu : (uint32_t)hst_rand(&a);
            c.wqe_idx  = hst_rand(&a);
#else
            c.sq_retire = (i < 32) ? 0xffffffffu : (uint32_t)hst_rand(&a);
#endif
            c.byte_len = 0xffffffff;
            hst_forge_cqe(&a, &c);
        }
        for (i = 0; i < 64; ++i) {
            hst_forge_random_cqe(&a);
        }
        svt_barrier(t);
        hst_attacker_close(&a);
        return;
    }
    for (i = 0; i < 4; ++i) {
        SVT_CHECK(t, hst_post_recv(&v, v.rc[1], NULL, i * 512, 512, NULL) ==
                  0, "ibv_post_recv: %s", strerror(errno));
    }
    svt_barrier(t);     /* forged completions go in now ... */
    svt_barrier(t);
    /* ... and ours after them: a SQ's worth and more, so that a forged
     * retire count would show as a full (or endless) send queue */
    for (i = 0; i < 4; ++i) {
        SVT_CHECK(t, hst_post_send(&v, v.rc[0], IBV_WR_SEND, i * 512, 512,
                                   NULL) == 0, "ibv_post_send: %s",
                  strerror(errno));
    }
    n = hst_poll(&v, wc, 8, HST_POLL_MS);
    SVT_CHECK(t, (n == 8) && (v.errors == 0), "%d of our 8 completions "
              "(%u errors)", n, v.errors);
    for (i = 0; i < 4 * HST_DEPTH; ++i) {
        SVT_CHECK(t, hst_post_send(&v, v.rc[0], IBV_WR_RDMA_WRITE, 0, 64,
                                   NULL) == 0,
                  "WRITE %d after the forged completions: %s", i,
                  strerror(errno));
        SVT_CHECK(t, hst_poll(&v, wc, 1, HST_POLL_MS) == 1,
                  "WRITE %d did not complete", i);
    }
    SVT_CHECK(t, hst_poll(&v, wc, 64, 100) == 0, "a completion too many");
    hst_victim_end(&v, "cqe_forge");
}

/* Memory region entries rewritten: the victim's own use of its regions
 * goes by what it registered, and a new registration takes no live slot. */
void hst_mr_forge(svt_t *t)
{
    struct ibv_wc wc[8];
    struct ibv_mr *extra[2];
    hst_attacker_t a;
    hst_victim_t v;
    sv_mr_shm_t *e;
    int i;

    hst_start(t, &v, &a);
    if (t->role == 1) {
        svt_barrier(t);
        for (i = 0; i < 2; ++i) {
            e = &a.seg->mr[sv_mr_idx(a.v.mr[i])];
            e->vaddr  = a.v.addr[!i];
            e->iova   = a.v.addr[!i];
            e->length = 1ull << 40;
            e->access = ~0u;
            e->pd_id  = 0xabcdef;
        }
        a.seg->mr[sv_mr_idx(a.v.mr[0])].key = 0;
        svt_barrier(t);
        hst_attacker_close(&a);
        return;
    }
    svt_barrier(t);
    svt_barrier(t);
    for (i = 0; i < 2; ++i) {
        extra[i] = svt_mr(t, HST_BUF, IBV_ACCESS_LOCAL_WRITE);
    }
    hst_fill(&v, 0, 8192);
    hst_fill(&v, 8192, 4096);
    memset(v.mr[1]->addr, 0, HST_BUF);
    SVT_CHECK(t, hst_post_recv(&v, v.rc[1], NULL, 32768, 4096, NULL) == 0 &&
              hst_post_send(&v, v.rc[0], IBV_WR_RDMA_WRITE, 0, 8192,
                            NULL) == 0 &&
              hst_post_send(&v, v.rc[0], IBV_WR_SEND, 8192, 4096, NULL) == 0,
              "posting after the attack: %s", strerror(errno));
    SVT_CHECK(t, hst_poll(&v, wc, 3, HST_POLL_MS) == 3 && (v.errors == 0),
              "WRITE and SEND with rewritten region entries: %u errors",
              v.errors);
    hst_verify(&v, 0, 0, 8192, "WRITE into our own region");
    hst_verify(&v, 32768, 8192, 4096, "SEND into our own region");
    svt_mr_free(extra[0]);
    svt_mr_free(extra[1]);
    hst_victim_end(&v, "mr_forge");
}

/* The victim's port entry in the fabric file rewritten: closing and
 * reopening the device must work and leave nothing behind. */
void hst_port_forge(svt_t *t)
{
    sv_port_entry_t *pe;
    hst_attacker_t a;
    hst_victim_t v;
    unsigned i;

    hst_start(t, &v, &a);
    if (t->role == 1) {
        svt_barrier(t);
        pe = &a.fab->port[a.v.port];
        pe->seg_size  = 1ull << 34;   /* munmap() of that much: libraries */
        pe->gen      += 7;
        pe->pid       = getpid();
        pe->starttime = 0;
        for (i = 0; i < SV_MAX_MEMBERS; ++i) {
            if (a.fab->member[i].pid == a.v.pid) {
                a.fab->member[i].pid = 1;
            }
        }
        memset(pe->comm, 'x', sizeof(pe->comm));
        svt_barrier(t);
        svt_barrier(t);     /* victim re-opened */
        hst_attacker_close(&a);
        return;
    }
    svt_barrier(t);
    svt_barrier(t);
    hst_victim_end(&v, "port_forge (first device)");
    svt_open(t);
    hst_victim_works(&v, "port_forge (reopened)");
    svt_close(t);
    svt_barrier(t);
}

/* The fabric model's configuration rewritten under a running victim. */
void hst_model_forge(svt_t *t)
{
    hst_attacker_t a;
    hst_victim_t v;
    uint32_t *w;
    unsigned i;

    hst_start(t, &v, &a);
    if (t->role == 1) {
        svt_barrier(t);
        /* the configuration starts the model area (after two u64): npaths
         * and mtu 0, every word after them garbage */
        w = (uint32_t*)(a.fab->model + 16);
        for (i = 0; i < 4096; ++i) {
            w[i] = (i < 64) ? 0 : (uint32_t)hst_rand(&a);
        }
        svt_barrier(t);
        hst_attacker_close(&a);
        return;
    }
    svt_barrier(t);
    svt_barrier(t);
    hst_victim_end(&v, "model_forge");
}

/* A process claims a receive WQE of the SRQ and one of a QP's own receive
 * queue, as a sender does, and dies before it completes them. */
void hst_dead_claimer(svt_t *t)
{
    struct ibv_wc wc[8];
    uint64_t srq_id[4], ud_id[4];
    hst_attacker_t a;
    hst_victim_t v;
    int i, n;

    hst_start(t, &v, &a);
    if (t->role == 1) {
        svt_barrier(t);
        hst_claim_and_die(&a);
    }
    for (i = 0; i < 4; ++i) {
        SVT_CHECK(t, hst_post_recv(&v, NULL, v.srq, i * 4096, 4096,
                                   &srq_id[i]) == 0 &&
                  hst_post_recv(&v, v.ud, NULL, 16384 + i * 4096, 4096,
                                &ud_id[i]) == 0, "ibv_post_recv: %s",
                  strerror(errno));
    }
    svt_barrier(t);
    waitpid(t->child, NULL, 0);
    t->child_gone = 1;
    SVT_LOG(t, "the claimer died");
    /* each claimed WQE completes, with an error, within a few seconds */
    n = hst_poll(&v, wc, 2, HST_POLL_MS);
    SVT_CHECK(t, n == 2, "%d of 2 completions for the WQEs a dead process "
              "claimed", n);
    for (i = 0; i < 2; ++i) {
        SVT_CHECK(t, (wc[i].status == IBV_WC_REM_ABORT_ERR) &&
                  ((wc[i].wr_id == srq_id[0]) || (wc[i].wr_id == ud_id[0])),
                  "completion %d: wr_id %#llx status %s", i,
                  (unsigned long long)wc[i].wr_id,
                  ibv_wc_status_str(wc[i].status));
    }
    /* the queues are whole again: as many WQEs as they hold, and the
     * next messages land in the WQEs after the lost ones */
    hst_fill(&v, 0, 4096);
    hst_fill(&v, 4096, 1024);
    SVT_CHECK(t, hst_post_send(&v, v.sq[1], IBV_WR_SEND, 0, 4096,
                               NULL) == 0 &&
              hst_post_send(&v, v.ud, IBV_WR_SEND, 4096, 1024, NULL) == 0,
              "sends after the claimer died: %s", strerror(errno));
    SVT_CHECK(t, hst_poll(&v, wc, 4, HST_POLL_MS) == 4 && (v.errors == 2),
              "sends after the claimer died: %u errors", v.errors);
    hst_verify(&v, 4096, 0, 4096, "SRQ's next WQE");
    hst_verify(&v, 16384 + 4096 + 40, 4096, 1024, "RQ's next WQE");
    n = 0;
    while (hst_post_recv(&v, NULL, v.srq, 0, 64, NULL) == 0) {
        ++n;
    }
    SVT_CHECK(t, n == HST_DEPTH - 2, "the SRQ took %d more WQEs with 2 "
              "outstanding, expected %d", n, HST_DEPTH - 2);
    hst_victim_end(&v, "dead_claimer");
}

/* Seeded random corruption, in lock step with the victim's traffic. */
void hst_fuzz(svt_t *t)
{
    long rounds = svt_env_long("SVT_HOSTILE_ROUNDS", 300);
    struct ibv_wc wc[64];
    hst_attacker_t a;
    hst_victim_t v;
    long r;
    int k;

    hst_start(t, &v, &a);
    for (r = 0; r < rounds; ++r) {
        if (t->role == 1) {
            /* mostly one field per round, some rounds none or several */
            for (k = (hst_rand(&a) % 8 == 0) ? 4 : hst_rand(&a) % 2; k > 0;
                 --k) {
                hst_corrupt_one(&a);
            }
            hst_send_datagram(&a);
            svt_barrier(t);
            continue;
        }
        svt_barrier(t);
        hst_victim_step(&v, r);
        (void)hst_poll(&v, wc, 64, 1);
    }
    if (t->role == 1) {
        svt_barrier(t);
        hst_attacker_close(&a);
        return;
    }
    svt_barrier(t);
    hst_victim_end(&v, "fuzz");
}

static const svt_case_t hst_cases[] = {
    { "rq_sizes",     hst_rq_sizes,
      "a QP's receive queue sizes and indexes rewritten" },
    { "srq_sizes",    hst_srq_sizes,
      "an SRQ's sizes and indexes rewritten" },
    { "cqe_forge",    hst_cqe_forge,
      "completions forged into the victim's CQ" },
    { "mr_forge",     hst_mr_forge,
      "the victim's memory region entries rewritten" },
    { "port_forge",   hst_port_forge,
      "the victim's port entry (size, pid, generation) rewritten" },
    { "model_forge",  hst_model_forge,
      "the fabric model's configuration rewritten" },
    { "dead_claimer", hst_dead_claimer,
      "receive WQEs claimed by a process that dies" },
    { "fuzz",         hst_fuzz,
      "seeded random corruption of everything the victim shares" },
};

int main(int argc, char **argv)
{
    return svt_main(argc, argv, hst_cases,
                    sizeof(hst_cases) / sizeof(hst_cases[0]));
}

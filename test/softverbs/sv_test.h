/*
 * Two-process verbs test harness for softverbs.
 *
 * The programs are plain verbs programs: they link the real libibverbs and
 * get softverbs through LD_PRELOAD, like any user.  The parent (role 0,
 * usually the initiator) forks the child (role 1, usually the target) before
 * touching verbs; both run the same sub-test function and exchange QP
 * numbers, LIDs, GIDs and keys over a socketpair.
 */
#ifndef SV_TEST_H_
#define SV_TEST_H_

#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define SVT_MAX_QPS 64

typedef struct svt {
    int                 role;       /* 0: parent, 1: child */
    int                 sock;       /* to the peer */
    pid_t               child;      /* in the parent */
    int                 child_gone; /* the parent killed it on purpose */
    const char         *test;
    uint64_t            seed;
    struct ibv_context *ctx;
    struct ibv_pd      *pd;
    struct ibv_port_attr port_attr;
    union ibv_gid       gid;
    char                dev[64];
} svt_t;

/* What one side tells the other to connect. */
typedef struct svt_info {
    uint16_t      lid;
    uint8_t       link_layer;
    uint8_t       pad;
    uint32_t      nqp;
    union ibv_gid gid;
    union ibv_gid gid2;     /* a second port's, where a test uses one */
    uint32_t      qpn[SVT_MAX_QPS];
    uint32_t      rkey;
    uint32_t      rkey2;
    uint64_t      addr;
    uint64_t      len;
    uint64_t      addr2;
    uint64_t      len2;
} svt_info_t;

/* Fail this process loudly: message, role, test name and seed. */
#define SVT_CHECK(_t, _cond, _fmt, ...) \
    do { \
        if (!(_cond)) { \
            svt_fail(_t, __FILE__, __LINE__, _fmt, ## __VA_ARGS__); \
        } \
    } while (0)

#define SVT_LOG(_t, _fmt, ...) \
    printf("[%s %s] " _fmt "\n", (_t)->test, (_t)->role ? "child " : "parent", \
           ## __VA_ARGS__)

void svt_fail(svt_t *t, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));

/* Environment knobs of the harness itself. */
long svt_env_long(const char *name, long def);

/* socketpair exchange */
void svt_xchg(svt_t *t, const void *mine, void *theirs, size_t len);
void svt_barrier(svt_t *t);
void svt_send_u64(svt_t *t, uint64_t v);
uint64_t svt_recv_u64(svt_t *t);

/* verbs objects; every failure ends the test with a message */
void svt_open(svt_t *t);
void svt_close(svt_t *t);
struct ibv_cq *svt_cq(svt_t *t, int depth);
struct ibv_mr *svt_mr(svt_t *t, size_t len, int access);
void svt_mr_free(struct ibv_mr *mr);
struct ibv_qp *svt_qp(svt_t *t, enum ibv_qp_type type, struct ibv_cq *scq,
                      struct ibv_cq *rcq, struct ibv_srq *srq, int depth,
                      int max_sge, int max_inline);
void svt_info_init(svt_t *t, svt_info_t *info);
/* INIT -> RTR -> RTS for RC/UC to remote QP `rqpn`; for UD only the states. */
void svt_connect(svt_t *t, struct ibv_qp *qp, const svt_info_t *remote,
                 uint32_t rqpn);
/* connect with RC timers: timeout exponent and retry count */
void svt_connect_rc(svt_t *t, struct ibv_qp *qp, const svt_info_t *remote,
                    uint32_t rqpn, uint8_t timeout, uint8_t retry_cnt);
struct ibv_ah *svt_ah(svt_t *t, const svt_info_t *remote);
/* ibv_query_qp of the attributes in `mask`, or the test fails */
struct ibv_qp_attr svt_qp_query(svt_t *t, struct ibv_qp *qp, int mask);
enum ibv_qp_state svt_qp_state(svt_t *t, struct ibv_qp *qp);

#define SVT_QKEY 0x11111111u

/* Poll until `n` completions or `timeout_ms`; returns the number polled. */
int svt_poll(svt_t *t, struct ibv_cq *cq, struct ibv_wc *wc, int n,
             int timeout_ms);
/* Poll until at least one completion (up to `max`) or `timeout_ms`. */
int svt_poll_some(svt_t *t, struct ibv_cq *cq, struct ibv_wc *wc, int max,
                  int timeout_ms);
/* Poll exactly `n` successful-or-not completions; failure on timeout. */
void svt_poll_n(svt_t *t, struct ibv_cq *cq, struct ibv_wc *wc, int n,
                int timeout_ms, const char *what);
/* Check one completion's fields (-1 / ~0 for "don't care"). */
void svt_check_wc(svt_t *t, const struct ibv_wc *wc, enum ibv_wc_status st,
                  int opcode, uint64_t wr_id, struct ibv_qp *qp,
                  long byte_len, const char *what);
const char *svt_opcode_str(int opcode);

void svt_post_send(svt_t *t, struct ibv_qp *qp, struct ibv_send_wr *wr);
void svt_post_recv(svt_t *t, struct ibv_qp *qp, struct ibv_recv_wr *wr);

/* Deterministic data: byte i of stream `tag` under the test's seed. */
void svt_fill(svt_t *t, void *buf, size_t len, uint64_t tag);
/* 0 if equal; otherwise report the first difference and fail */
void svt_verify(svt_t *t, const void *buf, size_t len, uint64_t tag,
                const char *what);
uint64_t svt_rand(uint64_t *state);

uint64_t svt_now_ns(void);

/* The parent kills the child on purpose and will not check its status. */
void svt_kill_child(svt_t *t);

/* One QP of a type connected to the peer's, on its own CQ and buffer. */
typedef struct svt_pair {
    struct ibv_cq *cq;
    struct ibv_mr *mr;
    struct ibv_qp *qp;
    svt_info_t     peer;
} svt_pair_t;

void svt_pair_setup(svt_t *t, svt_pair_t *p, enum ibv_qp_type type,
                    size_t len, int depth, int max_sge, int max_inline);
void svt_pair_destroy(svt_t *t, svt_pair_t *p);
/* Destroy nqp QPs, then the MR (svt_mr_free) and the CQ, and close */
void svt_destroy(svt_t *t, struct ibv_qp **qp, unsigned nqp,
                 struct ibv_mr *mr, struct ibv_cq *cq);

/* Work request helpers */
void svt_sge(struct ibv_sge *sge, struct ibv_mr *mr, size_t off, size_t len);
/* Compare `len` bytes gathered from a scatter list with pattern `tag`. */
void svt_verify_sg(svt_t *t, const struct ibv_sge *sg, int n, size_t len,
                   uint64_t tag, const char *what);

typedef void (*svt_fn_t)(svt_t *t);

typedef struct svt_case {
    const char *name;
    svt_fn_t    fn;
    const char *doc;
} svt_case_t;

/* Run the sub-test argv[1] of `cases` (sv_test_run.c): the program's main. */
int svt_main(int argc, char **argv, const svt_case_t *cases, unsigned ncases);

/* Sub-tests, one file per group. */
void svt_rc_write(svt_t *t);
void svt_rc_write_imm(svt_t *t);
void svt_rc_send(svt_t *t);
void svt_rc_read(svt_t *t);
void svt_uc(svt_t *t);
void svt_ud(svt_t *t);
void svt_srq(svt_t *t);
void svt_inline_unsig(svt_t *t);
void svt_order(svt_t *t);
void svt_loss(svt_t *t);
void svt_rc_loss(svt_t *t);
void svt_rate(svt_t *t);
void svt_reorder(svt_t *t);
void svt_bad_keys(svt_t *t);
void svt_killed_peer(svt_t *t);
void svt_stalled_path(svt_t *t);
void svt_late_read(svt_t *t);
void svt_unsig_order(svt_t *t);
void svt_doorbell(svt_t *t);
void svt_qp_state_field(svt_t *t);
void svt_unmapped_src(svt_t *t);
void svt_unmapped_src_self(svt_t *t);
void svt_batch(svt_t *t);
void svt_batch_loss(svt_t *t);
void svt_comp_channel(svt_t *t);
void svt_ack_time(svt_t *t);
void svt_late_ack(svt_t *t);
void svt_rq_psn(svt_t *t);

#endif

/*
 * softverbs objects (what the verbs handles point to) and the internal
 * interfaces between the files: sv_<object>_<verb>.
 */
#ifndef SV_VERBS_H_
#define SV_VERBS_H_

#include "sv_fabric.h"

#include <infiniband/verbs.h>
#include <sys/uio.h>

/* rdma-core's struct verbs_device: mlx5dv_is_supported() and friends read
 * `ops` right after struct ibv_device. */
typedef struct sv_device {
    struct ibv_device dev;
    const void       *ops;
    int               refcount;
    void             *entry[2];
    void             *sysfs;
    uint64_t          core_support;
    unsigned          index;
} sv_device_t;

/* A port's table of one kind of object, indexed by the number peers know
 * it by (QP number, CQ or SRQ index, MR key). Next-fit: a freed slot is not
 * reused at once, so a stale number held by a peer rarely meets a new
 * object. The caller holds the port lock. */
typedef struct sv_slots {
    void   **obj;      /* [first, first + count) are the table */
    uint32_t first, count;
    uint32_t next;     /* where the next search starts */
} sv_slots_t;

static inline void sv_slots_init(sv_slots_t *s, void *table, uint32_t first,
                                 uint32_t count)
{
    *s = (sv_slots_t){ .obj = table, .first = first, .count = count,
                       .next = first };
}

/* Put `obj` in a free slot: its index, or -1 when the table is full. */
static inline int sv_slots_take(sv_slots_t *s, void *obj)
{
    uint32_t i, idx;

    for (i = 0; i < s->count; ++i) {
        idx = s->first + (s->next - s->first + i) % s->count;
        if (s->obj[idx] == NULL) {
            s->obj[idx] = obj;
            s->next     = idx + 1;
            return (int)idx;
        }
    }
    return -1;
}

static inline void sv_slots_put(sv_slots_t *s, uint32_t idx)
{
    s->obj[idx] = NULL;
}

/* A device opened in this process: one fabric port, shared by contexts. */
typedef struct sv_port {
    unsigned          index;      /* fabric port, LID - 1 */
    uint32_t          gen;
    unsigned          dev;
    int               refcnt;     /* contexts */
    int               nobjs;      /* live objects: keep the segment */
    int               fd;
    sv_seg_t         *seg;
    pthread_mutex_t   lock;       /* tables and counters below */
    uint32_t          next_pd, next_token;
    struct sv_qp     *qp[SV_MAX_QP];
    struct sv_cq     *cq[SV_MAX_CQ];
    struct sv_srq    *srq[SV_MAX_SRQ];
    struct sv_mr     *mr[SV_MAX_MR];
    sv_slots_t        qp_slots, cq_slots, srq_slots, mr_slots;
    uint8_t           mr_gen[SV_MAX_MR];
    uint32_t          err_seen;   /* last seg->err_pending handled */
    uint32_t          npending;   /* QPs with deferred send work */
    uint32_t          srq_armed;  /* SRQs with a limit armed */
    uint32_t          nprogress;  /* progress calls, to pace sv_port_tend */
    uint64_t          tend_ns;    /* sv_port_tend's last pass */
    pthread_mutex_t   pend_lock;
    struct sv_qp     *pend_list;
} sv_port_t;

typedef struct sv_context {
    struct verbs_context vctx;    /* ends with struct ibv_context */
    sv_port_t           *port;
    pthread_mutex_t      async_lock;
    struct ibv_async_event events[64];
    unsigned             ev_head, ev_tail;
} sv_context_t;

typedef struct sv_pd {
    struct ibv_pd pd;
    uint32_t      id;
    int           nobjs;
} sv_pd_t;

typedef struct sv_mr {
    struct ibv_mr mr;
    uint32_t      idx;
} sv_mr_t;

typedef struct sv_ah {
    struct ibv_ah      ah;
    struct ibv_ah_attr attr;
    unsigned           dport;
} sv_ah_t;

typedef struct sv_chan {
    struct ibv_comp_channel ch;
    uint32_t                id;
} sv_chan_t;

typedef struct sv_cq {
    struct ibv_cq_ex   ex;         /* starts like struct ibv_cq */
    sv_port_t         *port;
    uint32_t           idx;
    int                ready;      /* set up: others may use it */
    uint32_t           token;      /* tells events of a reused index apart */
    sv_cq_ring_t      *q;
    sv_cqe_t          *ring;
    uint32_t           size;
    uint32_t           chan_id;    /* completion channel (0: none) */
    uint64_t           head;       /* consumer index (shm has a copy) */
    uint64_t           ring_off;
    size_t             ring_bytes;
    uint64_t           wc_flags;
    pthread_spinlock_t lock;
    /* ibv_cq_ex iteration: completions taken a batch at a time (as
     * ibv_poll_cq takes them), handed out one by one; what end_poll left
     * goes first to the next poll of either kind */
    const sv_cqe_t    *cur;        /* the one being read */
    sv_cqe_t           exq[SV_CQ_BATCH];
    uint32_t           exq_next;   /* next to hand out */
    uint32_t           exq_count;  /* taken */
    int                nqps;
    int                overrun_seen;
    uint64_t           stall_head;  /* reserved slot not published ... */
    uint64_t           stall_ns;    /* ... since then */
    uint64_t           empty_polls;
    /* entries not due yet (an RC WR's while its NIC retries) moved off the
     * ring's head, so that what completes after them is not held behind
     * it: sorted by ts, ring order among equal ones */
    uint32_t           held_n;
    sv_cqe_t           held[SV_CQ_HELD];
} sv_cq_t;

/* A receive WQE as its owner posted it: private, never read back from
 * shared memory. */
typedef struct sv_rq_rec {
    uint64_t wr_id;
    uint64_t len;          /* bytes its SGEs hold */
    uint32_t seq;          /* ring index it was posted at, low 32 bits */
    uint8_t  posted;       /* outstanding: its completion not polled yet */
    uint8_t  aged;         /* seen claimed by the last reaper pass */
} sv_rq_rec_t;

/* The owner's side of a receive queue (a QP's own, or an SRQ's). */
typedef struct sv_rq {
    sv_rq_ring_t      *q;          /* shared: indexes and sizes, for senders */
    void              *ring;       /* shared: slots, then the pool */
    uint64_t           ring_off;
    size_t             ring_bytes;
    uint32_t           size, max_sge, wqe_size;
    uint64_t           tail;       /* the ring index published last */
    sv_rq_rec_t       *rec;        /* one per pool entry */
    uint32_t          *free;       /* stack of free pool entries */
    uint32_t           nfree;
    uint32_t          *order;      /* pool entry of each ring slot */
    pthread_spinlock_t lock;
} sv_rq_t;

typedef struct sv_srq {
    struct ibv_srq     srq;
    sv_port_t         *port;
    uint32_t           idx;
    int                ready;      /* set up: others may use it */
    sv_srq_shm_t      *shm;
    sv_rq_t            rq;
    uint32_t           limit;      /* armed limit (private copy) */
    sv_pd_t           *pd;
    int                nqps;
    int                armed;      /* limit event pending */
} sv_srq_t;

/* A send work request as posted: what its completion reports (private). */
typedef struct sv_sq_rec {
    uint64_t wr_id;
    uint32_t len;
    uint32_t opcode;       /* enum ibv_wr_opcode */
} sv_sq_rec_t;

/* A send work request, as executed or as kept for a later retry. */
typedef struct sv_swqe {
    uint64_t              wr_id;
    uint64_t              seq;        /* SQ index */
    uint32_t              opcode;     /* enum ibv_wr_opcode */
    uint32_t              flags;      /* enum ibv_send_flags */
    uint32_t              imm;        /* network order */
    uint32_t              num_sge;
    uint64_t              raddr;
    uint32_t              rkey;
    uint32_t              qkey;       /* UD */
    unsigned              dport;
    uint32_t              dqpn;
    uint8_t               sl;
    uint8_t               retries;    /* timeouts / NAK rounds left */
    uint8_t               rnr_left;
    uint8_t               started;
    uint64_t              len;
    const struct ibv_sge *sg;
    struct ibv_sge       *sg_copy;    /* owned copies when deferred */
    void                 *inl_copy;
} sv_swqe_t;

enum { SV_QP_EX = 1 };

typedef struct sv_qp {
    union {
        struct ibv_qp    qp;
        struct ibv_qp_ex qpx;
    };
    uint32_t           comp_mask;     /* SV_QP_EX: qpx is valid */
    int                ready;         /* set up: others may use it */
    sv_port_t         *port;
    uint32_t           idx;
    sv_qp_shm_t       *shm;
    sv_pd_t           *pd;
    sv_cq_t           *scq, *rcq;
    sv_srq_t          *srq;
    struct ibv_qp_cap  cap;
    int                sq_sig_all;
    struct ibv_qp_attr attr;          /* what ibv_query_qp reports */
    sv_rq_t            rq;            /* own receive queue (no SRQ) */
    pthread_spinlock_t sq_lock;
    uint64_t           sq_posted, sq_retired;
    sv_sq_rec_t       *sq_rec;        /* by SQ index & sq_mask */
    uint32_t           sq_mask;
    uint64_t           sq_last_ts;
    /* connection (RC/UC) */
    unsigned           dport;
    uint32_t           mtu;
    uint64_t           timeout_ns;
    uint64_t           ack_clock_ns;  /* RC: the latest answer modelled */
    /* deferred send work: RNR waits, retries to a QP not ready yet */
    sv_swqe_t         *pend;
    uint32_t           pend_size, pend_head, pend_tail;
    uint64_t           next_try_ns;
    struct sv_qp      *pend_next;
    int                on_pend_list;
    /* WRITEs of one doorbell whose copy is still to do (sv_req.c) */
    struct sv_batch   *batch;
    sv_model_acct_t    acct;          /* counters of this doorbell */
    /* ibv_wr_* builder */
    struct ibv_send_wr *wrx;
    struct ibv_sge     *wrx_sge;
    char               *wrx_inl;
    uint32_t            wrx_n, wrx_cap, wrx_inl_used;
    int                 wrx_err;
} sv_qp_t;

#define sv_ctx_of(_c)  ((sv_context_t*)verbs_get_ctx(_c))
#define sv_pd_of(_p)   ((sv_pd_t*)(_p))
#define sv_cq_of(_c)   ((sv_cq_t*)(_c))
#define sv_qp_of(_q)   ((sv_qp_t*)(_q))
#define sv_srq_of(_s)  ((sv_srq_t*)(_s))

static inline uint32_t sv_mtu_bytes(enum ibv_mtu m)
{
    return ((m >= IBV_MTU_256) && (m <= IBV_MTU_4096)) ? (128u << m) : 0;
}

/* PSNs an RC message of len bytes takes: one a packet, one when empty */
static inline uint32_t sv_psn_span(uint64_t len, uint32_t mtu)
{
    return (len == 0) ? 1 : (uint32_t)((len + mtu - 1) / mtu);
}

/* No requester executes on the QP from now on (SV_RQ_PSN_CLOSED) */
static inline void sv_qp_psn_close(sv_qp_shm_t *e)
{
    __atomic_fetch_or(&e->rq_psn, SV_RQ_PSN_CLOSED, __ATOMIC_ACQ_REL);
}

static inline uint32_t sv_qpn(unsigned port, uint32_t idx)
{
    return ((uint32_t)port << 16) | idx;   /* port in bits 23..16 */
}

static inline uint16_t sv_port_lid(unsigned port)
{
    return (uint16_t)(port + 1);
}

static inline uint32_t sv_mr_key(uint32_t idx, uint8_t gen)
{
    return ((idx + 1) << 8) | gen;
}

static inline uint32_t sv_mr_key_idx(uint32_t key)
{
    return (key >> 8) - 1;     /* may be out of range: callers check */
}

/* sv_device.c */
struct ibv_device **sv_device_list(int *num);
struct ibv_context *sv_device_open(struct ibv_device *dev);
int  sv_device_close(struct ibv_context *ctx);
int  sv_device_query(struct ibv_context *ctx, struct ibv_device_attr *attr);
int  sv_device_query_ex(struct ibv_context *ctx,
                        const struct ibv_query_device_ex_input *in,
                        struct ibv_device_attr_ex *attr, size_t size);
int  sv_port_query(struct ibv_context *ctx, uint8_t port,
                   struct ibv_port_attr *attr, size_t size);
int  sv_port_gid(struct ibv_context *ctx, uint8_t port, int index,
                 union ibv_gid *gid);
void sv_port_gid_of(unsigned port, union ibv_gid *gid);
int  sv_port_of_gid(const union ibv_gid *gid);
int  sv_device_pkey(struct ibv_context *ctx, uint8_t port, int index,
                    __be16 *pkey);
void sv_device_async_event(sv_context_t *ctx, enum ibv_event_type type,
                           void *obj);
int  sv_device_get_async_event(struct ibv_context *ctx,
                               struct ibv_async_event *ev);
int  sv_device_query_rt_values(struct ibv_context *ctx,
                               struct ibv_values_ex *values);
/* the completion timestamp flags this process's devices offer
 * (SOFTVERBS_CQ_TS) */
uint64_t sv_device_ts_flags(void);
int  sv_device_is(struct ibv_device *dev);
int  sv_port_get_obj(sv_port_t *port);
void sv_port_put_obj(sv_port_t *port);

/* sv_port.c: a port's upkeep */
void sv_port_progress(sv_port_t *port);
/* Lost receive WQEs and overwritten shared fields, paced (force: on every
 * call, still at most every 100 ms). */
void sv_port_tend(sv_port_t *port, int force);

/* sv_pd / sv_mr.c */
struct ibv_pd *sv_pd_alloc(struct ibv_context *ctx);
int  sv_pd_dealloc(struct ibv_pd *pd);
struct ibv_mr *sv_mr_reg(struct ibv_pd *pd, void *addr, size_t len,
                         uint64_t iova, unsigned access);
int  sv_mr_dereg(struct ibv_mr *mr);
int  sv_mr_rereg(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
                 size_t len, int access);
int  sv_mr_lookup(const sv_peer_t *peer, uint32_t key, uint32_t pd_id,
                  uint64_t addr, uint64_t len, unsigned access,
                  uint64_t *vaddr);

/* sv_cq.c */
struct ibv_comp_channel *sv_chan_create(struct ibv_context *ctx);
int  sv_chan_destroy(struct ibv_comp_channel *ch);
struct ibv_cq_ex *sv_cq_create(struct ibv_context *ctx,
                               struct ibv_cq_init_attr_ex *attr);
int  sv_cq_destroy(struct ibv_cq *cq);
int  sv_cq_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int  sv_cq_req_notify(struct ibv_cq *cq, int solicited);
int  sv_cq_get_event(struct ibv_comp_channel *ch, struct ibv_cq **cq,
                     void **cq_context);
void sv_cq_ack_events(struct ibv_cq *cq, unsigned n);
void sv_cq_signal(pid_t pid, uint32_t chan_id, uint32_t cq_idx,
                  uint32_t token);
void sv_cq_heal(sv_cq_t *cq);
void sv_cq_flush_qp(sv_cq_t *cq, uint32_t qpn, uint64_t now);

/* sv_srq.c */
struct ibv_srq *sv_srq_create(struct ibv_pd *pd,
                              struct ibv_srq_init_attr *attr);
int  sv_srq_modify(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int  sv_srq_query(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int  sv_srq_destroy(struct ibv_srq *srq);
int  sv_srq_post_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
                      struct ibv_recv_wr **bad);
void sv_srq_check_limits(sv_port_t *port);
void sv_srq_reap(sv_srq_t *srq);

/* sv_rq.c: the owner's side of a receive queue */
int  sv_rq_init(sv_rq_t *rq, unsigned port, sv_rq_ring_t *q, uint32_t max_wr,
                uint32_t max_sge);
void sv_rq_cleanup(sv_rq_t *rq, unsigned port);
int  sv_rq_post(sv_rq_t *rq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad,
                uint32_t *nposted);
/* A completion naming pool entry `wqe` posted at `seq` is polled: frees the
 * entry; 0 and its wr_id and length, or -1 if it names nothing outstanding. */
int  sv_rq_polled(sv_rq_t *rq, uint32_t wqe, uint32_t seq, uint64_t *wr_id,
                  uint64_t *len);
void sv_rq_reset(sv_rq_t *rq);
uint64_t sv_rq_unclaimed(sv_rq_t *rq);
/* Writes the error completion of a lost or flushed WQE (for the owner's QP
 * index `qp`, SV_RWQE_QP_MASK + 1 if unknown): 0 if it did, -1 if it
 * cannot now (try again later), 1 if no QP can take it (entry freed). */
typedef int (*sv_rq_lost_fn)(void *arg, uint32_t qp, uint32_t wqe,
                             uint32_t seq);
/* Complete every outstanding WQE nobody claimed, oldest first, claimed
 * with `id` (the owner's): found from the private records, whatever the
 * shared indexes say. */
unsigned sv_rq_flush(sv_rq_t *rq, uint32_t id, sv_rq_lost_fn fn, void *arg);
/* Complete with an error every WQE whose claimer died. */
unsigned sv_rq_reap(sv_rq_t *rq, sv_rq_lost_fn fn, void *arg);

/* sv_qp.c */
struct ibv_qp *sv_qp_create(struct ibv_context *ctx,
                            struct ibv_qp_init_attr_ex *attr);
int  sv_qp_modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int  sv_qp_query(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
                 struct ibv_qp_init_attr *init);
int  sv_qp_destroy(struct ibv_qp *qp);
int  sv_qp_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                     struct ibv_recv_wr **bad);
void sv_qp_to_err(sv_qp_t *qp, int sq_locked);
void sv_req_batch_free(sv_qp_t *qp);
void sv_qp_flush_rq(sv_qp_t *qp);
void sv_qp_reap(sv_qp_t *qp);
void sv_qp_wr_init(sv_qp_t *qp);
sv_qp_t *sv_qp_lookup(sv_port_t *port, uint32_t qpn);

/* sv_ah.c */
struct ibv_ah *sv_ah_create(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int  sv_ah_destroy(struct ibv_ah *ah);
int  sv_ah_init_from_wc(struct ibv_context *ctx, uint8_t port,
                        struct ibv_wc *wc, struct ibv_grh *grh,
                        struct ibv_ah_attr *attr);
int  sv_ah_dport(const struct ibv_ah_attr *attr, unsigned *dport);

/* sv_req.c: requester */
int  sv_req_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                      struct ibv_send_wr **bad);
void sv_req_progress(sv_qp_t *qp);
void sv_req_flush(sv_qp_t *qp);

/* sv_resp.c: responder, runs in the sender's process on the target */
enum sv_resp {
    SV_RESP_OK,
    SV_RESP_RNR,        /* no receive WQE */
    SV_RESP_NOT_READY,  /* target QP not in RTR/RTS or not ours: dropped */
    SV_RESP_ACCESS,     /* bad rkey, bounds or rights */
    SV_RESP_INV_REQ,    /* receive buffer too small, bad opcode */
    SV_RESP_OP_ERR,     /* target's receive WQE is bad */
    SV_RESP_DEAD,       /* target process gone */
    SV_RESP_LOCAL       /* the requester's own buffer is unreadable */
};

typedef struct sv_msg {
    sv_qp_t          *sqp;
    sv_peer_t        *peer;
    sv_qp_shm_t      *dqp;
    unsigned          dport;
    uint32_t          dqpn;
    const sv_swqe_t  *w;
    struct iovec     *liov;
    int               liovcnt;
    uint64_t          len;
    uint64_t          ts;       /* arrival of the last packet */
    uint64_t          sent;     /* the last packet left the sender */
    uint64_t          ack;      /* RC: the answer's way back to the sender */
    uint64_t          first;    /* RC: the first packet arrived (0: lost) */
    uint64_t          start;    /* RC: the first packet left the sender */
    int               partial;  /* UC: only a prefix arrived, no CQE */
    int               psn_taken; /* RC: the target's PSN moved past it */
} sv_msg_t;

sv_qp_shm_t *sv_resp_qp(sv_peer_t *peer, unsigned dport, uint32_t dqpn);
enum sv_resp sv_resp_write(sv_msg_t *m);
enum sv_resp sv_resp_write_check(sv_msg_t *m, uint64_t *va);
enum sv_resp sv_resp_write_done(sv_msg_t *m);
enum sv_resp sv_resp_copy_status(ssize_t n, uint64_t len,
                                 const struct iovec *liov, int lcnt);
enum sv_resp sv_resp_send(sv_msg_t *m);
enum sv_resp sv_resp_read(sv_msg_t *m);
ssize_t sv_copy(const sv_peer_t *peer, int to_peer, const struct iovec *liov,
                int lcnt, const struct iovec *riov, int rcnt);

/* sv_comp.c: completions */
int  sv_comp_push(sv_peer_t *peer, unsigned port, unsigned cq_idx,
                  sv_cqe_t *cqe, int solicited);
void sv_comp_send(sv_qp_t *qp, const sv_swqe_t *w, enum ibv_wc_status st,
                  uint64_t ts);
int  sv_comp_recv_error(sv_qp_t *qp, uint32_t wqe, uint32_t seq,
                        enum ibv_wc_status st);

static inline enum ibv_wc_opcode sv_wc_opcode(uint32_t wr_opcode)
{
    switch (wr_opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
        return IBV_WC_RDMA_READ;
    default:
        return IBV_WC_SEND;
    }
}

/* sv_stats.c */
void sv_stats_port_closed(unsigned port, unsigned dev);
void sv_stats_dump(FILE *f, int all_ports);

#endif

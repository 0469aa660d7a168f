/*
 * Completion queues and completion channels.
 *
 * Entries carry the time their packets arrive; ibv_poll_cq hands out only
 * those whose time has come, in arrival order within a small window, so the
 * fabric model's queues delay completions and its paths reorder them.
 *
 * A completion channel is an abstract unix datagram socket named after the
 * owner's pid and the channel id: any producer process can wake it with one
 * sendto(), and its fd is pollable like a real channel's.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_verbs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SV_CQ_WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
                        IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | \
                        IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
                        IBV_WC_EX_WITH_DLID_PATH_BITS | SV_CQ_TS_FLAGS)
/* what SOFTVERBS_CQ_TS may take away (sv_device_ts_flags) */
#define SV_CQ_TS_FLAGS (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
                        IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

typedef struct sv_chan_msg {
    uint32_t cq_idx;
    uint32_t token;
} sv_chan_msg_t;

static uint32_t sv_chan_next_id = 1;
static int      sv_chan_tx_fd   = -1;

static socklen_t sv_chan_addr(struct sockaddr_un *a, pid_t pid, uint32_t id)
{
    int n;

    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    /* abstract namespace: no file, gone with the socket */
    n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
                 "softverbs.%s.%d.%u", sv_fabric_name, (int)pid, id);
    return offsetof(struct sockaddr_un, sun_path) + 1 + n;
}

struct ibv_comp_channel *sv_chan_create(struct ibv_context *c)
{
    struct sockaddr_un a;
    socklen_t len;
    sv_chan_t *ch;
    int ret, one = 1;

    ch = calloc(1, sizeof(*ch));
    if (ch == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ch->id    = __atomic_fetch_add(&sv_chan_next_id, 1, __ATOMIC_RELAXED);
    ch->ch.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (ch->ch.fd < 0) {
        goto err_free;
    }
    len = sv_chan_addr(&a, getpid(), ch->id);
    if ((bind(ch->ch.fd, (struct sockaddr*)&a, len) != 0) ||
        (setsockopt(ch->ch.fd, SOL_SOCKET, SO_PASSCRED, &one,
                    sizeof(one)) != 0)) {
        goto err_close;
    }
    ch->ch.context = c;
    ch->ch.refcnt  = 0;
    return &ch->ch;

err_close:
    ret = errno;
    close(ch->ch.fd);
    errno = ret;
err_free:
    ret = errno;
    free(ch);
    errno = ret;
    return NULL;
}

int sv_chan_destroy(struct ibv_comp_channel *ch)
{
    if (__atomic_load_n(&ch->refcnt, __ATOMIC_RELAXED) > 0) {
        return EBUSY;
    }
    close(ch->fd);
    free(ch);
    return 0;
}

void sv_cq_signal(pid_t pid, uint32_t chan_id, uint32_t cq_idx,
                  uint32_t token)
{
    sv_chan_msg_t msg = { .cq_idx = cq_idx, .token = token };
    struct sockaddr_un a;
    socklen_t len;
    int fd = __atomic_load_n(&sv_chan_tx_fd, __ATOMIC_ACQUIRE), nfd;

    if (fd < 0) {
        nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (nfd < 0) {
            return;
        }
        if (!__atomic_compare_exchange_n(&sv_chan_tx_fd, &fd, nfd, 0,
                                         __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            close(nfd);
        } else {
            fd = nfd;
        }
    }
    len = sv_chan_addr(&a, pid, chan_id);
    /* a full queue already wakes the owner: EAGAIN is fine */
    (void)sendto(fd, &msg, sizeof(msg), MSG_DONTWAIT, (struct sockaddr*)&a,
                 len);
}

static int sv_cq_take(sv_cq_t *cq, int max, sv_cqe_t *out, int *raw);

/* --- ibv_cq_ex iteration --- */

static inline sv_cq_t *sv_cq_ex_of(struct ibv_cq_ex *ex)
{
    return (sv_cq_t*)ex;
}

/* The next completion of the iteration: from the batch taken last, or a
 * new batch (a take costs a clock read, an atomic add and a store to
 * shared memory: once per batch, as for ibv_poll_cq). Called with
 * cq->lock held. */
static int sv_cq_ex_load(sv_cq_t *cq)
{
    if (cq->exq_next == cq->exq_count) {
        cq->exq_next  = 0;
        cq->exq_count = sv_cq_take(cq, SV_CQ_BATCH, cq->exq, NULL);
        if (cq->exq_count == 0) {
            return 0;
        }
    }
    cq->cur       = &cq->exq[cq->exq_next++];
    cq->ex.status = cq->cur->status;
    cq->ex.wr_id  = cq->cur->wr_id;
    return 1;
}

static int sv_cq_ex_start(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
    sv_cq_t *cq = sv_cq_ex_of(ex);

    if (attr->comp_mask != 0) {
        return EINVAL;
    }
    sv_port_progress(cq->port);
    pthread_spin_lock(&cq->lock);
    if (!sv_cq_ex_load(cq)) {
        pthread_spin_unlock(&cq->lock);
        return ENOENT;
    }
    return 0;
}

static int sv_cq_ex_next(struct ibv_cq_ex *ex)
{
    return sv_cq_ex_load(sv_cq_ex_of(ex)) ? 0 : ENOENT;
}

static void sv_cq_ex_end(struct ibv_cq_ex *ex)
{
    pthread_spin_unlock(&sv_cq_ex_of(ex)->lock);
}

static enum ibv_wc_opcode sv_cq_ex_opcode(struct ibv_cq_ex *ex)
{
    return sv_cq_ex_of(ex)->cur->opcode;
}

static uint32_t sv_cq_ex_vendor_err(struct ibv_cq_ex *ex)
{
    return sv_cq_ex_of(ex)->cur->vendor_err;
}

static uint32_t sv_cq_ex_byte_len(struct ibv_cq_ex *ex)
{
    return sv_cq_ex_of(ex)->cur->byte_len;
}

static __be32 sv_cq_ex_imm(struct ibv_cq_ex *ex)
{
    return sv_cq_ex_of(ex)->cur->imm;
}

static uint32_t sv_cq_ex_qp_num(struct ibv_cq_ex *ex)
{
    return sv_cq_ex_of(ex)->cur->qp_num;
}

static uint32_t sv_cq_ex_src_qp(struct ibv_cq_ex *ex)
{
    return sv_cq_ex_of(ex)->cur->src_qp;
}

static unsigned int sv_cq_ex_wc_flags(struct ibv_cq_ex *ex)
{
    return sv_cq_ex_of(ex)->cur->wc_flags;
}

static uint32_t sv_cq_ex_slid(struct ibv_cq_ex *ex)
{
    return sv_cq_ex_of(ex)->cur->slid;
}

static uint8_t sv_cq_ex_sl(struct ibv_cq_ex *ex)
{
    return sv_cq_ex_of(ex)->cur->sl;
}

static uint8_t sv_cq_ex_dlid_path_bits(struct ibv_cq_ex *ex)
{
    return 0;
}

static uint64_t sv_cq_ex_ts(struct ibv_cq_ex *ex)
{
    return sv_cq_ex_of(ex)->cur->ts;
}

static uint64_t sv_cq_ex_wallclock(struct ibv_cq_ex *ex)
{
    struct timespec rt;
    uint64_t now = sv_now_ns(), ts = sv_cq_ex_of(ex)->cur->ts;

    clock_gettime(CLOCK_REALTIME, &rt);
    return (uint64_t)rt.tv_sec * 1000000000ull + rt.tv_nsec - (now - ts);
}

static uint16_t sv_cq_ex_cvlan(struct ibv_cq_ex *ex)
{
    return 0;
}

static uint32_t sv_cq_ex_flow_tag(struct ibv_cq_ex *ex)
{
    return 0;
}

static void sv_cq_ex_tm_info(struct ibv_cq_ex *ex, struct ibv_wc_tm_info *tm)
{
    memset(tm, 0, sizeof(*tm));
}

struct ibv_cq_ex *sv_cq_create(struct ibv_context *c,
                               struct ibv_cq_init_attr_ex *attr)
{
    sv_port_t *port = sv_ctx_of(c)->port;
    sv_cq_shm_t *e = NULL;
    uint32_t idx = 0, size;
    sv_cq_t *cq;
    int ret, slot;

    if ((attr->comp_mask & ~(IBV_CQ_INIT_ATTR_MASK_FLAGS |
                             IBV_CQ_INIT_ATTR_MASK_PD)) ||
        ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
         (attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (attr->wc_flags & ~(((uint64_t)SV_CQ_WC_FLAGS & ~SV_CQ_TS_FLAGS) |
                           sv_device_ts_flags())) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if ((attr->cqe == 0) || (attr->cqe > SV_MAX_CQE) ||
        (attr->comp_vector >= (uint32_t)c->num_comp_vectors)) {
        errno = EINVAL;
        return NULL;
    }
    cq = calloc(1, sizeof(*cq));
    if (cq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    size           = sv_roundup_pow2(attr->cqe + 1);
    cq->ring_bytes = (size_t)size * sizeof(sv_cqe_t);
    cq->ring_off   = sv_heap_alloc(port->index, cq->ring_bytes);
    if (cq->ring_off == 0) {
        ret = ENOMEM;
        goto err_free;
    }

    pthread_mutex_lock(&port->lock);
    slot = sv_slots_take(&port->cq_slots, cq);
    if (slot < 0) {
        pthread_mutex_unlock(&port->lock);
        ret = ENOMEM;
        goto err_heap;
    }
    idx           = slot;
    e             = &port->seg->cq[idx];
    cq->token     = ++port->next_token;
    pthread_mutex_unlock(&port->lock);

    pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
    cq->port     = port;
    cq->idx      = idx;
    cq->size     = size;
    cq->chan_id  = (attr->channel != NULL) ?
                   ((sv_chan_t*)attr->channel)->id : 0;
    cq->q        = &e->q;
    cq->ring     = (sv_cqe_t*)((char*)port->seg + cq->ring_off);
    cq->wc_flags = attr->wc_flags;
    memset(&e->q, 0, sizeof(e->q));
    e->q.size     = size;
    e->q.ring_off = cq->ring_off;
    e->q.chan_id  = cq->chan_id;
    e->token      = cq->token;
    SV_STORE(&e->valid, 1);

    cq->ex.context     = c;
    cq->ex.channel     = attr->channel;
    cq->ex.cq_context  = attr->cq_context;
    cq->ex.handle      = idx;
    cq->ex.cqe         = size - 1;
    pthread_mutex_init(&cq->ex.mutex, NULL);
    pthread_cond_init(&cq->ex.cond, NULL);
    cq->ex.start_poll            = sv_cq_ex_start;
    cq->ex.next_poll             = sv_cq_ex_next;
    cq->ex.end_poll              = sv_cq_ex_end;
    cq->ex.read_opcode           = sv_cq_ex_opcode;
    cq->ex.read_vendor_err       = sv_cq_ex_vendor_err;
    cq->ex.read_byte_len         = sv_cq_ex_byte_len;
    cq->ex.read_imm_data         = sv_cq_ex_imm;
    cq->ex.read_qp_num           = sv_cq_ex_qp_num;
    cq->ex.read_src_qp           = sv_cq_ex_src_qp;
    cq->ex.read_wc_flags         = sv_cq_ex_wc_flags;
    cq->ex.read_slid             = sv_cq_ex_slid;
    cq->ex.read_sl               = sv_cq_ex_sl;
    cq->ex.read_dlid_path_bits   = sv_cq_ex_dlid_path_bits;
    cq->ex.read_completion_ts    = sv_cq_ex_ts;
    cq->ex.read_cvlan            = sv_cq_ex_cvlan;
    cq->ex.read_flow_tag         = sv_cq_ex_flow_tag;
    cq->ex.read_tm_info          = sv_cq_ex_tm_info;
    cq->ex.read_completion_wallclock_ns = sv_cq_ex_wallclock;
    if (attr->channel != NULL) {
        __atomic_fetch_add(&attr->channel->refcnt, 1, __ATOMIC_RELAXED);
    }
    sv_port_get_obj(port);
    __atomic_store_n(&cq->ready, 1, __ATOMIC_RELEASE);
    return &cq->ex;

err_heap:
    sv_heap_free(port->index, cq->ring_off, cq->ring_bytes);
err_free:
    free(cq);
    errno = ret;
    return NULL;
}

int sv_cq_destroy(struct ibv_cq *ibcq)
{
    sv_cq_t *cq = sv_cq_of(ibcq);
    sv_port_t *port = cq->port;

    if (__atomic_load_n(&cq->nqps, __ATOMIC_RELAXED) > 0) {
        return EBUSY;
    }
    pthread_mutex_lock(&port->lock);
    sv_slots_put(&port->cq_slots, cq->idx);
    pthread_mutex_unlock(&port->lock);
    SV_STORE(&port->seg->cq[cq->idx].valid, 0);
    sv_heap_free(port->index, cq->ring_off, cq->ring_bytes);
    if (ibcq->channel != NULL) {
        __atomic_fetch_sub(&ibcq->channel->refcnt, 1, __ATOMIC_RELAXED);
    }
    pthread_spin_destroy(&cq->lock);
    free(cq);
    sv_port_put_obj(port);
    return 0;
}

/*
 * Take up to `max` visible entries.  Model off: entries arrive in ring order,
 * take them from head while visible.  Model on (or an entry at head not
 * visible yet): scan a window and take the visible ones by arrival time.
 * Called with cq->lock held.
 */
/*
 * A producer reserved the slot at head but never published it: it died
 * between the two steps.  After a second, skip the slot rather than stall
 * the queue forever.  Returns the new head.  `tail` is the producers' hot
 * cache line: a busy poller looks at it only every SV_CQ_STALL_POLLS empty
 * polls, or every push would miss on it.
 */
#define SV_CQ_STALL_POLLS 64

static uint64_t sv_cq_unstick(sv_cq_t *cq, uint64_t head)
{
    sv_cqe_t *s = &cq->ring[head & (cq->size - 1)];
    uint64_t now, tail;

    if ((++cq->empty_polls % SV_CQ_STALL_POLLS) != 0) {
        return head;
    }
    tail = SV_LOAD(&cq->q->tail);
    if (tail - head > cq->size) {
        /* no producer reserves past head + size: someone wrote garbage,
         * and every push would find the queue full */
        (void)SV_CAS(&cq->q->tail, &tail, head);
        sv_debug_log("cq %u: producer index %llu out of range, reset",
                     cq->idx, (unsigned long long)tail);
        return head;
    }
    if (tail <= head) {
        return head;          /* empty, nothing reserved */
    }
    now = sv_now_ns();
    if (cq->stall_head != head + 1) {
        cq->stall_head = head + 1;
        cq->stall_ns   = now;
        return head;
    }
    if ((now - cq->stall_ns < 1000000000ull) ||
        (SV_LOAD(&s->seq) == head + 1)) {
        return head;
    }
    sv_log("cq %u: slot %llu reserved but never written (a producer died);"
           " skipped", cq->idx, (unsigned long long)head);
    cq->stall_head = 0;
    return head + 1;
}

/* What producers read of the CQ and only its owner writes, put back if
 * someone changed it (called with the port lock held, from sv_port.c). */
void sv_cq_heal(sv_cq_t *cq)
{
    sv_cq_ring_t *q = cq->q;

    if (SV_LOAD_RELAXED(&q->size) != cq->size) {
        SV_STORE(&q->size, cq->size);
    }
    if (SV_LOAD_RELAXED(&q->ring_off) != cq->ring_off) {
        SV_STORE(&q->ring_off, cq->ring_off);
    }
    if (SV_LOAD_RELAXED(&q->chan_id) != cq->chan_id) {
        SV_STORE(&q->chan_id, cq->chan_id);
    }
}

/* The consumer index is ours (cq->head); shared memory has a copy for the
 * producers to see room. Storing an unchanged value would take its cache
 * line away from them at every empty poll; a copy someone else changed is
 * put right. */
static inline void sv_cq_set_head(sv_cq_t *cq, uint64_t head)
{
    __atomic_store_n(&cq->head, head, __ATOMIC_RELAXED);
    if (head != SV_LOAD_RELAXED(&cq->q->head)) {
        SV_STORE(&cq->q->head, head);
    }
}

/* Keep `s`, not due yet, off the ring (sorted by ts, after equal ones) */
static void sv_cq_hold(sv_cq_t *cq, const sv_cqe_t *s)
{
    uint32_t j;

    for (j = cq->held_n++; (j > 0) && (cq->held[j - 1].ts > s->ts); --j) {
        cq->held[j] = cq->held[j - 1];
    }
    cq->held[j] = *s;
}

/* The held entries due at `now`, oldest first, up to max */
static int sv_cq_take_held(sv_cq_t *cq, int max, sv_cqe_t *out,
                           uint64_t now)
{
    uint32_t n = 0;

    while ((n < cq->held_n) && ((int)n < max) && (cq->held[n].ts <= now)) {
        out[n] = cq->held[n];
        ++n;
    }
    cq->held_n -= n;
    memmove(cq->held, cq->held + n, cq->held_n * sizeof(*cq->held));
    return n;
}

/* A full window whose head is not due: its entries not due go to the
 * held list, as a NIC's CQ has no entry yet for a WR it still resends,
 * and holds none of the later ones behind it */
static void sv_cq_hold_head(sv_cq_t *cq, uint64_t head, uint64_t now)
{
    uint32_t mask = cq->size - 1, i;
    sv_cqe_t *s;

    for (i = 0; (i < SV_CQ_SCAN) && (cq->held_n < SV_CQ_HELD); ++i) {
        s = &cq->ring[(head + i) & mask];
        if (SV_LOAD(&s->seq) != head + i + 1) {
            break;
        }
        if (s->taken) {
            continue;
        }
        if (s->ts <= now) {
            break;
        }
        sv_cq_hold(cq, s);
        s->taken = 1;
    }
}

static int sv_cq_take_ring(sv_cq_t *cq, int max, sv_cqe_t *out)
{
    uint32_t mask = cq->size - 1, cand[SV_CQ_SCAN], ci, tmp;
    sv_cqe_t *ring = cq->ring, *s;
    uint64_t head = cq->head, now = 0;
    int got = 0, n, i, j;

    if (cq->held_n > 0) {
        /* older than anything on the ring (their QPs' later completions
         * are due no earlier) */
        now  = sv_now_ns();
        got  = sv_cq_take_held(cq, max, out, now);
        if (got == max) {
            return got;
        }
    }
    if (sv_model_timed()) {
        /* paths and queues reorder: even visible entries go by arrival;
         * an empty queue needs no clock (a busy poller reads it often).
         * Loss alone does not reorder: entries come in ring order, and
         * one not due yet (an RC resend's) sends us to the scan below. */
        if (SV_LOAD(&ring[head & mask].seq) == head + 1) {
            now = sv_now_ns();
        }
        goto scan;
    }
    while (got < max) {
        s = &ring[head & mask];
        if (SV_LOAD(&s->seq) != head + 1) {
            break;
        }
        if (s->taken) {
            ++head;
            continue;
        }
        if (now < s->ts) {
            now = sv_now_ns();
            if (now < s->ts) {
                goto scan;
            }
        }
        out[got++] = *s;
        ++head;
    }
    if (got == 0) {
        head = sv_cq_unstick(cq, head);
    }
    sv_cq_set_head(cq, head);
    return got;

scan:
    n = 0;
    for (i = 0; i < SV_CQ_SCAN; ++i) {
        s = &ring[(head + i) & mask];
        if (SV_LOAD(&s->seq) != head + i + 1) {
            break;
        }
        if (s->taken || (s->ts > now)) {
            continue;
        }
        /* insertion by (ts, ring order) */
        ci = i;
        for (j = n++; (j > 0) && (ring[(head + cand[j - 1]) & mask].ts >
                                  s->ts); --j) {
            cand[j] = cand[j - 1];
        }
        cand[j] = ci;
    }
    for (i = 0; (i < n) && (got < max); ++i) {
        s          = &ring[(head + cand[i]) & mask];
        out[got++] = *s;
        s->taken   = 1;
    }
    if ((got < max) && (SV_LOAD(&ring[(head + SV_CQ_SCAN - 1) & mask].seq) ==
                        head + SV_CQ_SCAN)) {
        sv_cq_hold_head(cq, head, now);
    }
    tmp = 0;
    while (tmp < SV_CQ_SCAN) {
        s = &ring[head & mask];
        if ((SV_LOAD(&s->seq) != head + 1) || !s->taken) {
            break;
        }
        ++head;
        ++tmp;
    }
    if ((got == 0) && (SV_LOAD(&ring[head & mask].seq) != head + 1)) {
        head = sv_cq_unstick(cq, head);
    }
    sv_cq_set_head(cq, head);
    return got;
}

/* `s`, due later, is due at `now` as a flush */
static void sv_cqe_flush(sv_cqe_t *s, uint64_t now)
{
    s->ts         = now;
    s->status     = IBV_WC_WR_FLUSH_ERR;
    s->vendor_err = 0x100 + IBV_WC_WR_FLUSH_ERR;
}

/*
 * The owner moved `qpn` to ERR: a NIC flushes every WR the QP still has
 * out at once, also one it keeps resending (whose completion the model
 * put at the end of its retries). Such completions, already in the ring
 * but not due yet, are due now and report a flush.
 */
void sv_cq_flush_qp(sv_cq_t *cq, uint32_t qpn, uint64_t now)
{
    uint32_t mask = cq->size - 1, n, j;
    sv_cqe_t held[SV_CQ_HELD], *s;
    uint64_t i;

    pthread_spin_lock(&cq->lock);
    /* a lap at most: producers (other processes) write the ring */
    for (i = cq->head; (i - cq->head < cq->size) &&
                       (SV_LOAD(&cq->ring[i & mask].seq) == i + 1); ++i) {
        s = &cq->ring[i & mask];
        if (s->taken || (s->qp_num != qpn) || (s->ts <= now)) {
            continue;
        }
        sv_cqe_flush(s, now);
    }
    for (n = 0, j = 0; j < cq->held_n; ++j) {
        if ((cq->held[j].qp_num == qpn) && (cq->held[j].ts > now)) {
            held[n] = cq->held[j];
            sv_cqe_flush(&held[n++], now);
        } else if (n > 0) {
            cq->held[j - n] = cq->held[j];
        }
    }
    cq->held_n -= n;
    for (j = 0; j < n; ++j) {
        sv_cq_hold(cq, &held[j]);
    }
    pthread_spin_unlock(&cq->lock);
}

/* A send completion: the oldest of the WRs it retires is the one it names
 * by SQ index (a QP's send completions come in order); wr_id, opcode and
 * length come from the QP's private record of that WR. */
static int sv_cq_accept_send(sv_cq_t *cq, sv_qp_t *qp, sv_cqe_t *e)
{
    uint64_t retired = __atomic_load_n(&qp->sq_retired, __ATOMIC_RELAXED);
    uint64_t posted  = __atomic_load_n(&qp->sq_posted, __ATOMIC_RELAXED);
    uint32_t d = e->wqe_seq - (uint32_t)retired;
    const sv_sq_rec_t *r;

    if ((qp->scq != cq) || (d >= posted - retired)) {
        return 0;
    }
    r           = &qp->sq_rec[(retired + d) & qp->sq_mask];
    e->wr_id    = r->wr_id;
    e->opcode   = sv_wc_opcode(r->opcode);
    e->byte_len = (r->opcode == IBV_WR_RDMA_READ) ? r->len : 0;
    e->wc_flags = 0;
    __atomic_store_n(&qp->sq_retired, retired + d + 1, __ATOMIC_RELEASE);
    return 1;
}

/* A receive completion names the WQE it consumed (pool entry and ring
 * index): it must be one the QP's receive queue has outstanding. */
static int sv_cq_accept_recv(sv_cq_t *cq, sv_qp_t *qp, sv_cqe_t *e)
{
    sv_rq_t *rq = (qp->srq != NULL) ? &qp->srq->rq : &qp->rq;
    uint64_t wr_id, len;

    if ((qp->rcq != cq) ||
        ((e->opcode != IBV_WC_RECV) &&
         (e->opcode != IBV_WC_RECV_RDMA_WITH_IMM)) ||
        (sv_rq_polled(rq, e->wqe_idx, e->wqe_seq, &wr_id, &len) != 0)) {
        return 0;
    }
    e->wr_id     = wr_id;
    e->wc_flags &= IBV_WC_WITH_IMM | IBV_WC_GRH;
    if ((e->opcode == IBV_WC_RECV) && (e->byte_len > len)) {
        e->status   = IBV_WC_LOC_LEN_ERR;   /* more than the WQE holds */
        e->byte_len = 0;
    }
    return 1;
}

/*
 * What the owner lets out of its CQ: any process of the fabric can write
 * there, so a completion counts only if it names a work request this port
 * has outstanding on a QP of this CQ, and reports that request's wr_id from
 * the private records. The rest is dropped and counted (bad_cqes).
 */
static int sv_cq_accept(sv_cq_t *cq, sv_cqe_t *e)
{
    sv_qp_t *qp = sv_qp_lookup(cq->port, e->qp_num);

    if (qp == NULL) {
        return 0;
    }
    if (e->status > IBV_WC_GENERAL_ERR) {
        e->status = IBV_WC_GENERAL_ERR;
    }
    e->sl &= 0xf;
    return (e->opcode & IBV_WC_RECV) ? sv_cq_accept_recv(cq, qp, e) :
                                       sv_cq_accept_send(cq, qp, e);
}

/* The consumer counts what it takes: a producer's atomic add on the
 * owner's counters bounced their cache line between the processes at
 * every completion (a tenth of a sender's time with small chunks).
 * Returns the completions accepted; *raw (if not NULL) the entries taken
 * off the ring, to tell a full batch. */
static int sv_cq_take(sv_cq_t *cq, int max, sv_cqe_t *out, int *raw)
{
    uint32_t taken = 0;
    sv_port_stats_t *st;
    int got, i, n, errs, bad;

    do {
        got = sv_cq_take_ring(cq, max, out);
        for (i = 0, n = 0, errs = 0; i < got; ++i) {
            if (!sv_cq_accept(cq, &out[i])) {
                continue;
            }
            errs += (out[i].status != IBV_WC_SUCCESS);
            if (n != i) {
                out[n] = out[i];
            }
            ++n;
        }
        if (got == 0) {
            break;
        }
        st  = sv_port_stats(cq->port->index);
        bad = got - n;
        SV_ADD(&st->cqes, n);
        if (errs > 0) {
            SV_ADD(&st->err_cqes, errs);
        }
        if (bad > 0) {
            SV_ADD(&st->bad_cqes, bad);
            sv_debug_log("cq %u: %d completion(s) naming no outstanding "
                         "work request dropped", cq->idx, bad);
        }
        taken += got;
        /* a batch of only bad entries must not look like an empty CQ (but
         * a flood of them must not keep us here either) */
    } while ((n == 0) && (raw == NULL) && (taken < cq->size));
    if (raw != NULL) {
        *raw = got;
    }
    return n;
}

static void sv_cq_wc_fill(struct ibv_wc *wc, const sv_cqe_t *e)
{
    wc->wr_id          = e->wr_id;
    wc->status         = e->status;
    wc->opcode         = e->opcode;
    wc->vendor_err     = e->vendor_err;
    wc->byte_len       = e->byte_len;
    wc->imm_data       = e->imm;
    wc->qp_num         = e->qp_num;
    wc->src_qp         = e->src_qp;
    wc->wc_flags       = e->wc_flags;
    wc->pkey_index     = e->pkey_index;
    wc->slid           = e->slid;
    wc->sl             = e->sl;
    wc->dlid_path_bits = 0;
}

int sv_cq_poll(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
    sv_cq_t *cq = sv_cq_of(ibcq);
    sv_cqe_t e[SV_CQ_BATCH];
    int got = 0, k, i, raw, want;
    uint32_t taken = 0;      /* bounded: a flood of bad entries */

    if (n < 0) {
        return -EINVAL;
    }
    sv_port_progress(cq->port);
    if (cq->q->overruns && !cq->overrun_seen) {
        cq->overrun_seen = 1;
        sv_device_async_event(sv_ctx_of(ibcq->context), IBV_EVENT_CQ_ERR,
                              ibcq);
    }
    pthread_spin_lock(&cq->lock);
    /* what an ibv_cq_ex iteration took and did not hand out comes first */
    for (; (got < n) && (cq->exq_next < cq->exq_count); ++got, ++wc) {
        sv_cq_wc_fill(wc, &cq->exq[cq->exq_next++]);
    }
    while ((got < n) && (taken < cq->size)) {
        want   = (n - got < SV_CQ_BATCH) ? n - got : SV_CQ_BATCH;
        k      = sv_cq_take(cq, want, e, &raw);
        taken += raw;
        for (i = 0; i < k; ++i, ++wc) {
            sv_cq_wc_fill(wc, &e[i]);
        }
        got += k;
        if (raw < want) {
            break;
        }
    }
    pthread_spin_unlock(&cq->lock);
    return got;
}

int sv_cq_req_notify(struct ibv_cq *ibcq, int solicited)
{
    sv_cq_t *cq = sv_cq_of(ibcq);
    sv_cq_ring_t *q = cq->q;
    uint32_t armed;

    if (ibcq->channel == NULL) {
        return 0;            /* armed, but there is nobody to tell */
    }
    SV_STORE(&q->armed, solicited ? SV_CQ_ARM_SOLICITED : SV_CQ_ARM_NEXT);
    /* Entries already queued (or not visible yet, or taken by an ibv_cq_ex
     * iteration and not handed out) fire at once, as a NIC whose consumer
     * index lags behind its producer index does; otherwise a completion
     * that is still in flight would never wake the channel. */
    if ((SV_LOAD(&q->tail) != __atomic_load_n(&cq->head, __ATOMIC_RELAXED)) ||
        (cq->exq_next != cq->exq_count)) {
        armed = SV_LOAD(&q->armed);
        if ((armed != SV_CQ_ARM_NONE) &&
            SV_CAS(&q->armed, &armed, SV_CQ_ARM_NONE)) {
            sv_cq_signal(getpid(), cq->chan_id, cq->idx, cq->token);
        }
    }
    return 0;
}

/*
 * One event from the channel socket: 1, 0 for a datagram to ignore, -1 on
 * error (errno). An abstract socket has no permissions: anyone on the host
 * can send to it, so only senders the fabric lets in count.
 */
static int sv_chan_recv(int fd, sv_chan_msg_t *msg)
{
    union {
        char           buf[CMSG_SPACE(sizeof(struct ucred))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = { .iov_base = msg, .iov_len = sizeof(*msg) };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = ctl.buf,
                         .msg_controllen = sizeof(ctl.buf) };
    struct ucred cred;
    struct cmsghdr *c;
    ssize_t n;

    n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    if (n < 0) {
        return -1;
    }
    c = CMSG_FIRSTHDR(&mh);
    if ((n != sizeof(*msg)) || (mh.msg_flags & MSG_CTRUNC) || (c == NULL) ||
        (c->cmsg_level != SOL_SOCKET) || (c->cmsg_type != SCM_CREDENTIALS)) {
        return 0;
    }
    memcpy(&cred, CMSG_DATA(c), sizeof(cred));
    if (!sv_fabric_cred_ok(cred.uid, cred.gid)) {
        sv_debug_log("channel event from uid %u ignored", (unsigned)cred.uid);
        return 0;
    }
    return msg->cq_idx < SV_MAX_CQ;
}

/* While a blocking wait lasts, deferred sends progress (every ms) and lost
 * receive WQEs are found (every SV_CHAN_WAIT_MS), as the NIC would. */
#define SV_CHAN_WAIT_MS 100

int sv_cq_get_event(struct ibv_comp_channel *ch, struct ibv_cq **cq_p,
                    void **cq_context)
{
    sv_port_t *port = sv_ctx_of(ch->context)->port;
    struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
    int flags = fcntl(ch->fd, F_GETFL), ret;
    sv_chan_msg_t msg;
    sv_cq_t *cq;

    for (;;) {
        if (!(flags & O_NONBLOCK)) {
            ret = poll(&pfd, 1, SV_LOAD(&port->npending) ? 1 :
                                SV_CHAN_WAIT_MS);
            if (ret <= 0) {
                sv_port_progress(port);
                sv_port_tend(port, 1);
                continue;     /* timeout, or a signal: wait on */
            }
        }
        ret = sv_chan_recv(ch->fd, &msg);
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        if (ret == 0) {
            continue;
        }
        pthread_mutex_lock(&port->lock);
        cq = port->cq[msg.cq_idx];
        if ((cq != NULL) && ((cq->token != msg.token) ||
                             (cq->ex.channel != ch))) {
            cq = NULL;
        }
        pthread_mutex_unlock(&port->lock);
        if (cq == NULL) {
            continue;         /* stale: the CQ is gone */
        }
        *cq_p       = (struct ibv_cq*)&cq->ex;
        *cq_context = cq->ex.cq_context;
        return 0;
    }
}

void sv_cq_ack_events(struct ibv_cq *cq, unsigned n)
{
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += n;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

/*
 * Completion channels between two processes, the way event-driven programs
 * use them: ibv_create_comp_channel, a CQ bound to it, ibv_req_notify_cq,
 * a thread blocked in ibv_get_cq_event until the peer's message completes,
 * ibv_ack_cq_events. Also: no event without re-arming, solicited-only
 * notification, a non-blocking channel, and (as root) events forged by a
 * process of another user are ignored.
 *
 * The child receives, the parent sends. Every blocking wait has a watchdog:
 * a wait that does not end fails the test within CHAN_WAIT_S.
 */
#define _GNU_SOURCE
#include "sv_test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHAN_WAIT_S   10       /* longest blocking wait */
#define CHAN_QUIET_MS 300      /* "no event" means none in this long */
#define CHAN_DELAY_MS 200      /* the sender waits so that the wait blocks */
#define CHAN_MSG      4096
#define CHAN_MSGS     8

/* ---------------------------------------------------------------------- */
/* watchdog: a blocking call that does not return fails the test           */

typedef struct chan_dog {
    svt_t          *t;
    const char     *what;
    pthread_t       thread;
    pthread_mutex_t lock;
    pthread_cond_t  cond;
    int             done;
} chan_dog_t;

static void *chan_dog_run(void *arg)
{
    chan_dog_t *d = arg;
    struct timespec ts;
    int ret = 0;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += CHAN_WAIT_S;
    pthread_mutex_lock(&d->lock);
    while (!d->done && (ret != ETIMEDOUT)) {
        ret = pthread_cond_timedwait(&d->cond, &d->lock, &ts);
    }
    pthread_mutex_unlock(&d->lock);
    SVT_CHECK(d->t, d->done, "%s: still blocked after %d s", d->what,
              CHAN_WAIT_S);
    return NULL;
}

static void chan_dog_arm(chan_dog_t *d, svt_t *t, const char *what)
{
    d->t    = t;
    d->what = what;
    d->done = 0;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->cond, NULL);
    SVT_CHECK(t, pthread_create(&d->thread, NULL, chan_dog_run, d) == 0,
              "watchdog thread");
}

static void chan_dog_disarm(chan_dog_t *d)
{
    pthread_mutex_lock(&d->lock);
    d->done = 1;
    pthread_cond_signal(&d->cond);
    pthread_mutex_unlock(&d->lock);
    pthread_join(d->thread, NULL);
}

/* ---------------------------------------------------------------------- */

typedef struct chan_side {
    struct ibv_comp_channel *ch;
    struct ibv_cq           *cq;      /* the channel's (receiver) */
    struct ibv_cq           *scq;
    struct ibv_qp           *qp;
    struct ibv_mr           *mr;
    svt_info_t               peer;
    int                      events;  /* got, not acked yet */
} chan_side_t;

static int chan_context;   /* its address is the CQ's context */

static void chan_setup(svt_t *t, chan_side_t *s)
{
    svt_info_t mine;

    svt_open(t);
    memset(s, 0, sizeof(*s));
    s->scq = svt_cq(t, 4 * CHAN_MSGS);
    if (t->role == 1) {
        s->ch = ibv_create_comp_channel(t->ctx);
        SVT_CHECK(t, s->ch != NULL, "ibv_create_comp_channel: %s",
                  strerror(errno));
        s->cq = ibv_create_cq(t->ctx, 4 * CHAN_MSGS, &chan_context, s->ch, 0);
        SVT_CHECK(t, s->cq != NULL, "ibv_create_cq with a channel: %s",
                  strerror(errno));
    } else {
        s->cq = svt_cq(t, 4 * CHAN_MSGS);
    }
    s->mr = svt_mr(t, CHAN_MSGS * CHAN_MSG, IBV_ACCESS_LOCAL_WRITE);
    s->qp = svt_qp(t, IBV_QPT_RC, s->scq, s->cq, NULL, 4 * CHAN_MSGS, 1, 0);
    svt_info_init(t, &mine);
    mine.nqp    = 1;
    mine.qpn[0] = s->qp->qp_num;
    svt_xchg(t, &mine, &s->peer, sizeof(mine));
    svt_connect(t, s->qp, &s->peer, s->peer.qpn[0]);
    svt_barrier(t);
}

/* The parent sends message i (solicited or not) and waits for its send
 * completion. */
static void chan_send(svt_t *t, chan_side_t *s, int i, int solicited)
{
    struct ibv_send_wr wr = { .wr_id = i, .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED |
                                            (solicited ? IBV_SEND_SOLICITED :
                                                         0) };
    struct ibv_sge sge;
    struct ibv_wc wc;

    svt_sge(&sge, s->mr, i * CHAN_MSG, CHAN_MSG);
    wr.sg_list = &sge;
    svt_fill(t, (char*)s->mr->addr + i * CHAN_MSG, CHAN_MSG, 100 + i);
    svt_post_send(t, s->qp, &wr);
    svt_poll_n(t, s->scq, &wc, 1, 5000, "send");
    svt_check_wc(t, &wc, IBV_WC_SUCCESS, IBV_WC_SEND, i, s->qp, -1, "send");
}

/* Block in ibv_get_cq_event: it must return our CQ and its context. */
static void chan_wait(svt_t *t, chan_side_t *s, const char *what)
{
    struct ibv_cq *cq = NULL;
    void *ctx = NULL;
    chan_dog_t dog;

    chan_dog_arm(&dog, t, what);
    SVT_CHECK(t, ibv_get_cq_event(s->ch, &cq, &ctx) == 0,
              "%s: ibv_get_cq_event: %s", what, strerror(errno));
    chan_dog_disarm(&dog);
    SVT_CHECK(t, (cq == s->cq) && (ctx == &chan_context),
              "%s: event for cq %p context %p, expected %p %p", what,
              (void*)cq, ctx, (void*)s->cq, (void*)&chan_context);
    s->events++;
}

/* No event may come within CHAN_QUIET_MS. */
static void chan_quiet(svt_t *t, chan_side_t *s, const char *what)
{
    struct pollfd pfd = { .fd = s->ch->fd, .events = POLLIN };
    struct ibv_cq *cq;
    void *ctx;
    int flags;

    if (poll(&pfd, 1, CHAN_QUIET_MS) == 0) {
        return;
    }
    /* something is readable: it must not be an event for us */
    flags = fcntl(s->ch->fd, F_GETFL);
    fcntl(s->ch->fd, F_SETFL, flags | O_NONBLOCK);
    SVT_CHECK(t, ibv_get_cq_event(s->ch, &cq, &ctx) != 0,
              "%s: an event came", what);
    fcntl(s->ch->fd, F_SETFL, flags);
}

/* Receive completion of message i: polled, checked, data verified. */
static void chan_recv_done(svt_t *t, chan_side_t *s, int i, const char *what)
{
    struct ibv_wc wc;

    svt_poll_n(t, s->cq, &wc, 1, 5000, what);
    svt_check_wc(t, &wc, IBV_WC_SUCCESS, IBV_WC_RECV, i, s->qp, CHAN_MSG,
                 what);
    svt_verify(t, (char*)s->mr->addr + i * CHAN_MSG, CHAN_MSG, 100 + i,
               what);
}

static void chan_post_recvs(svt_t *t, chan_side_t *s)
{
    struct ibv_recv_wr wr;
    struct ibv_sge sge;
    int i;

    for (i = 0; i < CHAN_MSGS; ++i) {
        svt_sge(&sge, s->mr, i * CHAN_MSG, CHAN_MSG);
        wr = (struct ibv_recv_wr){ .wr_id = i, .sg_list = &sge,
                                   .num_sge = 1 };
        svt_post_recv(t, s->qp, &wr);
    }
}

/* As root: a process of another user sends channel datagrams naming every
 * CQ index and token a guess would; none may become an event. */
static void chan_forged(svt_t *t, chan_side_t *s)
{
    const char *fab = getenv("SOFTVERBS_FABRIC");
    struct { uint32_t cq_idx, token; } msg;
    struct sockaddr_un a;
    uint32_t id, tok;
    socklen_t len;
    pid_t pid, me = getpid();
    int fd, n, status;

    if (geteuid() != 0) {
        SVT_LOG(t, "not root: events from another user not tried");
        return;
    }
    pid = fork();
    SVT_CHECK(t, pid >= 0, "fork");
    if (pid == 0) {
        if ((setgid(65534) != 0) || (setuid(65534) != 0)) {
            _exit(2);
        }
        fd = socket(AF_UNIX, SOCK_DGRAM, 0);
        for (id = 1; id <= 4; ++id) {
            memset(&a, 0, sizeof(a));
            a.sun_family = AF_UNIX;
            n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1,
                         "softverbs.%s.%d.%u", fab ? fab : "default",
                         (int)me, id);
            len = offsetof(struct sockaddr_un, sun_path) + 1 + n;
            for (tok = 0; tok < 16; ++tok) {
                msg.cq_idx = s->cq->handle;
                msg.token  = tok;
                /* a full queue drops the rest: the first tokens count */
                (void)sendto(fd, &msg, sizeof(msg), MSG_DONTWAIT,
                             (struct sockaddr*)&a, len);
            }
        }
        _exit(0);
    }
    SVT_CHECK(t, (waitpid(pid, &status, 0) == pid) && WIFEXITED(status) &&
              (WEXITSTATUS(status) == 0), "the other user's process");
    chan_quiet(t, s, "events forged by another user");
    SVT_LOG(t, "events forged by uid 65534 ignored");
}

static void chan_teardown(svt_t *t, chan_side_t *s)
{
    ibv_ack_cq_events(s->cq, s->events);
    SVT_CHECK(t, ibv_destroy_qp(s->qp) == 0, "ibv_destroy_qp");
    SVT_CHECK(t, ibv_destroy_cq(s->cq) == 0, "ibv_destroy_cq");
    SVT_CHECK(t, ibv_destroy_cq(s->scq) == 0, "ibv_destroy_cq");
    if (s->ch != NULL) {
        SVT_CHECK(t, ibv_destroy_comp_channel(s->ch) == 0,
                  "ibv_destroy_comp_channel: %s", strerror(errno));
    }
    svt_mr_free(s->mr);
    svt_close(t);
}

/* The parent's part: messages 0..3, each when the child is ready for it. */
static void chan_sender(svt_t *t, chan_side_t *s)
{
    svt_barrier(t);                 /* child armed, about to block */
    usleep(CHAN_DELAY_MS * 1000);
    chan_send(t, s, 0, 0);
    svt_barrier(t);                 /* child woken; it does not re-arm */
    chan_send(t, s, 1, 0);
    svt_barrier(t);                 /* child armed solicited-only */
    chan_send(t, s, 2, 0);
    svt_barrier(t);                 /* child about to block */
    usleep(CHAN_DELAY_MS * 1000);
    chan_send(t, s, 3, 1);
    svt_barrier(t);                 /* child done */
    chan_teardown(t, s);
}

void svt_comp_channel(svt_t *t)
{
    struct ibv_cq *cq;
    chan_side_t s;
    uint64_t t0;
    void *ctx;
    int flags;

    chan_setup(t, &s);
    if (t->role == 0) {
        chan_sender(t, &s);
        return;
    }
    chan_post_recvs(t, &s);

    /* armed: a thread blocked in ibv_get_cq_event wakes up when the
     * peer's message completes here */
    SVT_CHECK(t, ibv_req_notify_cq(s.cq, 0) == 0, "ibv_req_notify_cq: %s",
              strerror(errno));
    svt_barrier(t);
    t0 = svt_now_ns();
    chan_wait(t, &s, "blocked in ibv_get_cq_event for the first message");
    SVT_CHECK(t, svt_now_ns() - t0 >= CHAN_DELAY_MS * 1000000ull / 2,
              "ibv_get_cq_event returned after %llu ms, before the message "
              "was sent", (unsigned long long)(svt_now_ns() - t0) / 1000000);
    chan_recv_done(t, &s, 0, "first message");
    ibv_ack_cq_events(s.cq, s.events);
    s.events = 0;
    SVT_LOG(t, "woken by the first message's completion");

    /* one arm, one event: the next completion wakes nobody */
    svt_barrier(t);
    chan_quiet(t, &s, "a completion without a new ibv_req_notify_cq");
    chan_recv_done(t, &s, 1, "second message (no event)");

    /* solicited only: an unsolicited completion does not wake us, a
     * solicited one does */
    SVT_CHECK(t, ibv_req_notify_cq(s.cq, 1) == 0, "arm solicited-only");
    svt_barrier(t);
    chan_quiet(t, &s, "an unsolicited SEND with a solicited-only arm");
    chan_recv_done(t, &s, 2, "unsolicited message");
    svt_barrier(t);
    chan_wait(t, &s, "a solicited SEND with a solicited-only arm");
    chan_recv_done(t, &s, 3, "solicited message");
    SVT_LOG(t, "solicited-only: woken by the solicited SEND only");

    /* events forged by another user are no events; a non-blocking channel
     * without an event says EAGAIN */
    SVT_CHECK(t, ibv_req_notify_cq(s.cq, 0) == 0, "arm");
    chan_forged(t, &s);
    flags = fcntl(s.ch->fd, F_GETFL);
    fcntl(s.ch->fd, F_SETFL, flags | O_NONBLOCK);
    errno = 0;
    SVT_CHECK(t, (ibv_get_cq_event(s.ch, &cq, &ctx) != 0) &&
              (errno == EAGAIN), "non-blocking channel without an event: %s",
              strerror(errno));
    svt_barrier(t);
    chan_teardown(t, &s);
}

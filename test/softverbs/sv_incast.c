/*
 * sv_incast_test lossless|taildrop: several processes share one receiving
 * port. The receiver (the parent, port 0: tests.cmake makes its link the
 * slow one) gives each of SVT_INCAST_SENDERS sender processes (3) a QP and
 * a region; each sends its region in 64 KiB WRITEs, a few at a time. Then
 * the receiver reads the counters with softverbs-stat (SVT_STAT_TOOL) and
 * checks what src/softverbs/README.md promises:
 *   lossless (SOFTVERBS_BUF_BYTES=0), RC: no drop anywhere, no resend, a
 *     queue of more than one packet formed at the receiver, every byte
 *     arrived;
 *   taildrop (SOFTVERBS_BUF_BYTES=B), UC: the receiver's link tail-dropped
 *     (every drop of the run is one of those), the deepest queue a packet
 *     found, itself included, is at most B, and the senders count the
 *     messages they lost. (Not RC: with a sender eight times faster than
 *     the link, go-back-N's first resent packet keeps finding the buffer
 *     full, and the QP fails with RETRY_EXC_ERR after retry_cnt rounds
 *     without progress, as documented; SVT_INCAST_RC=1 runs it.)
 * One 64 KiB WRITE into a link eight times slower than its sender's
 * already queues (and overflows a small buffer), whatever the processes'
 * timing: the checks hold however the senders overlap.
 */
#include "sv_test.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define IC_MAX_SENDERS 8
#define IC_MSG         (64 * 1024)  /* bytes per WRITE */
#define IC_MSGS        16           /* per sender */
#define IC_WINDOW      4            /* WRITEs outstanding per sender */
#define IC_PKT_HDR     64           /* the model's headers per packet */
#define IC_POLL_MS     20000

static pid_t ic_children[IC_MAX_SENDERS];
static unsigned ic_nchildren;
static enum ibv_qp_type ic_type;   /* RC lossless, UC with tail drop */

static void ic_alarm(int sig)
{
    static const char msg[] = "sv_incast_test: TIMEOUT (SVT_TIMEOUT "
                              "seconds)\n";
    unsigned i;
    ssize_t r;

    (void)sig;
    r = write(2, msg, sizeof(msg) - 1);
    (void)r;
    for (i = 0; i < ic_nchildren; ++i) {
        kill(ic_children[i], SIGKILL);
    }
    _exit(3);
}

/* A sender: its QP to the receiver's, its region in IC_MSG WRITEs */
static void ic_sender(svt_t *t, unsigned idx)
{
    struct ibv_wc wc[IC_WINDOW];
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    svt_info_t mine, peer;
    struct ibv_cq *cq;
    struct ibv_mr *mr;
    struct ibv_qp *qp;
    unsigned posted = 0, done = 0, i;
    int n;

    (void)svt_recv_u64(t);       /* the receiver has its port: open ours */
    svt_open(t);
    cq = svt_cq(t, 2 * IC_WINDOW);
    mr = svt_mr(t, IC_MSGS * IC_MSG, IBV_ACCESS_LOCAL_WRITE);
    qp = svt_qp(t, ic_type, cq, cq, NULL, IC_WINDOW, 1, 0);
    svt_info_init(t, &mine);
    mine.nqp    = 1;
    mine.qpn[0] = qp->qp_num;
    svt_xchg(t, &mine, &peer, sizeof(mine));
    svt_connect(t, qp, &peer, peer.qpn[0]);
    svt_fill(t, mr->addr, IC_MSGS * IC_MSG, idx + 1);
    svt_barrier(t);

    while (done < IC_MSGS) {
        while ((posted < IC_MSGS) && (posted - done < IC_WINDOW)) {
            svt_sge(&sge, mr, posted * IC_MSG, IC_MSG);
            wr = (struct ibv_send_wr){
                .wr_id = posted, .sg_list = &sge, .num_sge = 1,
                .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
                .wr.rdma = { .remote_addr = peer.addr + posted * IC_MSG,
                             .rkey = peer.rkey } };
            svt_post_send(t, qp, &wr);
            ++posted;
        }
        n = svt_poll_some(t, cq, wc, IC_WINDOW, IC_POLL_MS);
        SVT_CHECK(t, n > 0, "sender %u: no completion after %u of %u", idx,
                  done, IC_MSGS);
        for (i = 0; i < (unsigned)n; ++i) {
            svt_check_wc(t, &wc[i], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
                         done + i, qp, -1, "incast WRITE");
        }
        done += n;
    }
    SVT_LOG(t, "sender %u (lid %u): %u x %u B written", idx, mine.lid,
            IC_MSGS, IC_MSG);
    svt_barrier(t);              /* all sent */
    svt_barrier(t);              /* the receiver read the counters */
    SVT_CHECK(t, ibv_destroy_qp(qp) == 0, "ibv_destroy_qp: %s",
              strerror(errno));
    svt_mr_free(mr);
    SVT_CHECK(t, ibv_destroy_cq(cq) == 0, "ibv_destroy_cq: %s",
              strerror(errno));
    svt_close(t);
}

/* softverbs-stat's output for this fabric, "key value" lines */
typedef struct ic_stats {
    char   *text;
    size_t  len;
} ic_stats_t;

static void ic_stats_read(svt_t *t, ic_stats_t *st)
{
    const char *tool = getenv("SVT_STAT_TOOL");
    const char *fabric = getenv("SOFTVERBS_FABRIC");
    char cmd[4096];
    size_t cap = 0;
    FILE *f;
    int c;

    SVT_CHECK(t, (tool != NULL) && (fabric != NULL), "run with SVT_STAT_TOOL "
              "(softverbs-stat) and SOFTVERBS_FABRIC set");
    /* the tool maps the fabric itself: not through the preloaded NIC */
    snprintf(cmd, sizeof(cmd), "env -u LD_PRELOAD '%s' '%s'", tool, fabric);
    f = popen(cmd, "r");
    SVT_CHECK(t, f != NULL, "popen(%s): %s", cmd, strerror(errno));
    st->len = 0;
    while ((c = fgetc(f)) != EOF) {
        if (st->len + 2 > cap) {
            cap       = cap ? 2 * cap : 65536;
            st->text = realloc(st->text, cap);
            SVT_CHECK(t, st->text != NULL, "out of memory");
        }
        st->text[st->len++] = (char)c;
    }
    SVT_CHECK(t, (pclose(f) == 0) && (st->len > 0), "%s failed", cmd);
    st->text[st->len] = '\0';
}

/* The value of "port.<port>.<name>"; the test fails if there is none */
static uint64_t ic_stat(svt_t *t, const ic_stats_t *st, unsigned port,
                        const char *name)
{
    char key[128];
    const char *p;
    size_t klen;

    klen = snprintf(key, sizeof(key), "\nport.%u.%s ", port, name);
    p    = strstr(st->text, key);
    SVT_CHECK(t, p != NULL, "softverbs-stat printed no %s", key + 1);
    return strtoull(p + klen, NULL, 10);
}

typedef struct ic_recv {
    svt_t          link[IC_MAX_SENDERS];   /* to each sender */
    svt_info_t     peer[IC_MAX_SENDERS];
    struct ibv_qp *qp[IC_MAX_SENDERS];
    struct ibv_cq *cq;
    struct ibv_mr *mr;
    unsigned       n;
} ic_recv_t;

static void ic_recv_setup(svt_t *t, ic_recv_t *r)
{
    svt_info_t mine;
    unsigned i;

    svt_open(t);
    SVT_CHECK(t, t->port_attr.lid == 1, "the receiver is on lid %u, not "
              "port 0 (lid 1), the slow port tests.cmake configures: is "
              "the fabric %s fresh?", t->port_attr.lid,
              getenv("SOFTVERBS_FABRIC"));
    r->cq = svt_cq(t, 16);
    r->mr = svt_mr(t, (size_t)r->n * IC_MSGS * IC_MSG,
                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    for (i = 0; i < r->n; ++i) {
        r->qp[i] = svt_qp(t, ic_type, r->cq, r->cq, NULL, 4, 1, 0);
        svt_info_init(t, &mine);
        mine.nqp    = 1;
        mine.qpn[0] = r->qp[i]->qp_num;
        mine.rkey   = r->mr->rkey;
        mine.addr   = (uintptr_t)r->mr->addr + (size_t)i * IC_MSGS * IC_MSG;
        mine.len    = IC_MSGS * IC_MSG;
        svt_send_u64(&r->link[i], 1);       /* go: open your port */
        svt_xchg(&r->link[i], &mine, &r->peer[i], sizeof(mine));
        svt_connect(t, r->qp[i], &r->peer[i], r->peer[i].qpn[0]);
    }
}

/* What the counters must say (see the top of the file) */
static void ic_check(svt_t *t, ic_recv_t *r, const ic_stats_t *st,
                     uint64_t buf)
{
    unsigned port = t->port_attr.lid - 1, i;
    uint64_t qmax, qdrops, drops, resends = 0, lost = 0;
    const uint64_t pkt = (128u << t->port_attr.active_mtu) + IC_PKT_HDR;

    qmax   = ic_stat(t, st, port, "rx_queue_max");
    qdrops = ic_stat(t, st, port, "rx_queue_drops");
    drops  = ic_stat(t, st, port, "rx_drops");
    for (i = 0; i < r->n; ++i) {
        resends += ic_stat(t, st, r->peer[i].lid - 1, "rc_resends");
        lost    += ic_stat(t, st, r->peer[i].lid - 1, "msg_drops");
    }
    SVT_LOG(t, "receiver port %u: rx_queue_max %llu B, rx_queue_drops %llu, "
            "rx_drops %llu; senders' rc_resends %llu, msg_drops %llu "
            "(buffer %llu B, packet %llu B)", port, (unsigned long long)qmax,
            (unsigned long long)qdrops, (unsigned long long)drops,
            (unsigned long long)resends, (unsigned long long)lost,
            (unsigned long long)buf, (unsigned long long)pkt);
    if (buf == 0) {
        SVT_CHECK(t, (qdrops == 0) && (drops == 0) && (resends == 0) &&
                  (lost == 0), "lossless: %llu tail drops, %llu drops, "
                  "%llu resends, %llu messages lost",
                  (unsigned long long)qdrops, (unsigned long long)drops,
                  (unsigned long long)resends, (unsigned long long)lost);
        SVT_CHECK(t, qmax > pkt, "lossless: the deepest queue (%llu B) "
                  "held no more than one packet (%llu B)",
                  (unsigned long long)qmax, (unsigned long long)pkt);
    } else {
        SVT_CHECK(t, qdrops > 0, "tail drop: the receiver's link dropped "
                  "nothing");
        SVT_CHECK(t, qdrops == drops, "tail drop: %llu drops at the "
                  "receiver's link, %llu in all (no other loss here)",
                  (unsigned long long)qdrops, (unsigned long long)drops);
        SVT_CHECK(t, (qmax > 0) && (qmax <= buf), "tail drop: the deepest "
                  "queue %llu B, the buffer %llu B",
                  (unsigned long long)qmax, (unsigned long long)buf);
        SVT_CHECK(t, (ic_type == IBV_QPT_RC) ? (resends > 0) : (lost > 0),
                  "tail drop: the senders resent or lost nothing");
    }
}

static void ic_receiver(svt_t *t, ic_recv_t *r, uint64_t buf)
{
    ic_stats_t st = { 0 };
    unsigned i;

    ic_recv_setup(t, r);
    for (i = 0; i < r->n; ++i) {
        svt_barrier(&r->link[i]);    /* connected, data ready */
    }
    for (i = 0; i < r->n; ++i) {
        svt_barrier(&r->link[i]);    /* all sent and completed */
    }
    for (i = 0; (i < r->n) && (ic_type == IBV_QPT_RC); ++i) {
        svt_verify(t, (char*)r->mr->addr + (size_t)i * IC_MSGS * IC_MSG,
                   IC_MSGS * IC_MSG, i + 1, "a sender's region");
        SVT_LOG(t, "sender %u's %u B verified", i, IC_MSGS * IC_MSG);
    }
    ic_stats_read(t, &st);
    ic_check(t, r, &st, buf);
    free(st.text);
    for (i = 0; i < r->n; ++i) {
        svt_barrier(&r->link[i]);
        SVT_CHECK(t, ibv_destroy_qp(r->qp[i]) == 0, "ibv_destroy_qp: %s",
                  strerror(errno));
    }
    svt_mr_free(r->mr);
    SVT_CHECK(t, ibv_destroy_cq(r->cq) == 0, "ibv_destroy_cq: %s",
              strerror(errno));
    svt_close(t);
}

static int ic_wait_children(const char *test)
{
    int status, bad = 0;
    unsigned i;

    for (i = 0; i < ic_nchildren; ++i) {
        while (waitpid(ic_children[i], &status, 0) < 0) {
        }
        if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
            fprintf(stderr, "[%s] FAIL: sender %u %s %d\n", test, i,
                    WIFEXITED(status) ? "exited with" : "killed by signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) :
                                        WTERMSIG(status));
            bad = 1;
        }
    }
    return bad;
}

int main(int argc, char **argv)
{
    static ic_recv_t r;
    svt_t t = { 0 };
    uint64_t buf;
    int sv[2];
    unsigned i;
    pid_t pid;

    if ((argc != 2) ||
        (strcmp(argv[1], "lossless") && strcmp(argv[1], "taildrop"))) {
        fprintf(stderr, "usage: %s lossless|taildrop\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    t.test  = argv[1];
    t.seed  = svt_env_long("SVT_SEED", 14);
    r.n     = svt_env_long("SVT_INCAST_SENDERS", 3);
    buf     = svt_env_long("SOFTVERBS_BUF_BYTES", 0);  /* bytes, no suffix */
    ic_type = ((buf == 0) || svt_env_long("SVT_INCAST_RC", 0)) ?
              IBV_QPT_RC : IBV_QPT_UC;
    printf("[%s] %u %s senders into one port; seed %llu, fabric %s\n",
           t.test, r.n, (ic_type == IBV_QPT_RC) ? "RC" : "UC",
           (unsigned long long)t.seed, getenv("SOFTVERBS_FABRIC"));
    SVT_CHECK(&t, (r.n > 0) && (r.n <= IC_MAX_SENDERS), "1..%d senders",
              IC_MAX_SENDERS);
    SVT_CHECK(&t, !strcmp(t.test, "lossless") == (buf == 0),
              "%s with SOFTVERBS_BUF_BYTES=%llu", t.test,
              (unsigned long long)buf);

    /* fork before any verbs call: nothing of the NIC is shared */
    for (i = 0; i < r.n; ++i) {
        SVT_CHECK(&t, socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0,
                  "socketpair: %s", strerror(errno));
        pid = fork();
        SVT_CHECK(&t, pid >= 0, "fork: %s", strerror(errno));
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            close(sv[0]);
            t.role = 1;
            t.sock = sv[1];
            ic_sender(&t, i);
            SVT_LOG(&t, "passed");
            return 0;
        }
        close(sv[1]);
        ic_children[ic_nchildren++] = pid;
        r.link[i]       = t;
        r.link[i].sock  = sv[0];
        r.link[i].child = pid;
    }
    signal(SIGALRM, ic_alarm);
    signal(SIGPIPE, SIG_IGN);
    alarm(svt_env_long("SVT_TIMEOUT", 60));

    ic_receiver(&t, &r, buf);
    if (ic_wait_children(t.test)) {
        return 1;
    }
    printf("[%s] PASS\n", t.test);
    return 0;
}

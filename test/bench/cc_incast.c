/*
 * Incast benchmark for the congestion control scenarios (cc_scenarios.sh):
 * one UCP receiver ("server") and N clients on one fabric. "bulk" clients
 * stream tagged messages to the server, W in flight each; "probe" clients
 * ping-pong small messages with it and time every round trip. All share
 * the server's worker, so all cross the server's one link (softverbs
 * port): an incast.
 *
 *   cc_incast server -p PORT -n CLIENTS [-s SIZE] [-w W] [-i BIN_MS]
 *                    [-o TIMELINE] [-T TIMEOUT] [-e]
 *   cc_incast bulk|probe -p PORT [-s SIZE] [-w W] [-t SECONDS] [-T TIMEOUT]
 *                    [-e]
 *
 * -e: when idle, sleep on the worker's event fd (at most 1 ms) instead of
 * yielding the CPU, so that waiting processes leave the cores to the
 * others.
 *
 * Worker addresses go over a loopback TCP socket on PORT (the server
 * listens; clients retry until it does); the server starts every client
 * at once when all have connected. Results, one "key value" per line on
 * stdout: the server prints the goodput it received (aggregate and per
 * client, over the clients' common run time) and writes TIMELINE (time
 * since it started in ms, Gbit/s received in that bin); a probe prints
 * its round-trip percentiles in us. Messages carry a pattern the server
 * checks (first and last 8 bytes: client id and sequence number).
 */
#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CI_MAX_CLIENTS  64
#define CI_KIND_SHIFT   56
#define CI_KIND_MASK    (0xffull << CI_KIND_SHIFT)
#define CI_MAX_SAMPLES  (4u << 20)
#define CI_MAX_ADDR     (1u << 20)

enum { CI_DATA = 1, CI_PING, CI_PONG, CI_FIN };
enum { CI_SERVER, CI_BULK, CI_PROBE };

typedef struct {
    int      role;
    unsigned port;
    unsigned clients;
    size_t   size;
    unsigned window;
    double   seconds;
    double   bin_ms;
    double   timeout;
    int      event;      /* sleep on the event fd when idle */
    const char *timeline;
} ci_opts_t;

typedef struct {
    void                *req;
    void                *buf;
    ucp_tag_recv_info_t info;
    int                 kind;
} ci_slot_t;

static ucp_context_h ci_context;
static ucp_worker_h  ci_worker;
static int           ci_efd = -1; /* wait on the worker's event fd */

static void ci_die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "cc_incast: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static double ci_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void ci_check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        ci_die("%s: %s", what, ucs_status_string(status));
    }
}

/* progress; give the CPU away when there was nothing to do (the bench
 * runs more processes than cores): sleep on the worker's event fd (at
 * most CI_WAIT_MS) in event mode, else yield */
#define CI_WAIT_MS 1
static void ci_progress(void)
{
    struct pollfd pfd = {.fd = ci_efd, .events = POLLIN};

    if (ucp_worker_progress(ci_worker) != 0) {
        return;
    }
    if ((ci_efd >= 0) && (ucp_worker_arm(ci_worker) == UCS_OK)) {
        (void)poll(&pfd, 1, CI_WAIT_MS);
    } else {
        sched_yield();
    }
}

/* --- out-of-band socket --- */

static void ci_sock_io(int fd, void *buf, size_t len, int out, double tmo)
{
    double deadline = ci_now() + tmo;
    struct pollfd pfd = {.fd = fd, .events = out ? POLLOUT : POLLIN};
    char *p = buf;
    ssize_t ret;

    while (len > 0) {
        if (ci_now() > deadline) {
            ci_die("out-of-band socket: timeout");
        }
        if (ci_worker != NULL) {
            ci_progress();
        }
        if (poll(&pfd, 1, 0) != 1) {
            continue;
        }
        ret = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
        if ((ret < 0) && (errno == EINTR)) {
            continue;
        }
        if (ret <= 0) {
            ci_die("out-of-band socket: %s", ret ? strerror(errno) :
                                                   "closed by the peer");
        }
        p   += ret;
        len -= ret;
    }
}

static int ci_listen(unsigned port)
{
    struct sockaddr_in sa = {.sin_family      = AF_INET,
                             .sin_port        = htons(port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if ((fd < 0) || bind(fd, (struct sockaddr*)&sa, sizeof(sa)) ||
        listen(fd, CI_MAX_CLIENTS)) {
        ci_die("listen on port %u: %s", port, strerror(errno));
    }
    return fd;
}

static int ci_dial(unsigned port, double tmo)
{
    struct sockaddr_in sa = {.sin_family      = AF_INET,
                             .sin_port        = htons(port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    double deadline = ci_now() + tmo;
    int fd, one = 1;

    for (;;) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            ci_die("socket: %s", strerror(errno));
        }
        if (connect(fd, (struct sockaddr*)&sa, sizeof(sa)) == 0) {
            break;
        }
        close(fd);
        if (ci_now() > deadline) {
            ci_die("no server on port %u", port);
        }
        usleep(20000);
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* --- UCP --- */

static void ci_ucp_init(int event)
{
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features   = UCP_FEATURE_TAG |
                                         (event ? UCP_FEATURE_WAKEUP : 0)};
    ucp_worker_params_t wparams = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE
    };

    ci_check(ucp_init(&params, NULL, &ci_context), "ucp_init");
    ci_check(ucp_worker_create(ci_context, &wparams, &ci_worker),
             "ucp_worker_create");
    if (event) {
        ci_check(ucp_worker_get_efd(ci_worker, &ci_efd),
                 "ucp_worker_get_efd");
    }
}

/* send our worker address, return the peer's (malloc'ed) */
static void *ci_exchange(int fd, double tmo)
{
    ucp_address_t *addr;
    size_t addr_len;
    uint64_t len;
    void *peer;

    ci_check(ucp_worker_get_address(ci_worker, &addr, &addr_len),
             "ucp_worker_get_address");
    len = addr_len;
    ci_sock_io(fd, &len, sizeof(len), 1, tmo);
    ci_sock_io(fd, addr, addr_len, 1, tmo);
    ucp_worker_release_address(ci_worker, addr);
    ci_sock_io(fd, &len, sizeof(len), 0, tmo);
    if ((len == 0) || (len > CI_MAX_ADDR)) {
        ci_die("peer worker address of %" PRIu64 " bytes", len);
    }
    peer = malloc(len);
    if (peer == NULL) {
        ci_die("out of memory");
    }
    ci_sock_io(fd, peer, len, 0, tmo);
    return peer;
}

static ucp_ep_h ci_ep_create(void *addr)
{
    ucp_ep_params_t params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                              .address    = addr};
    ucp_ep_h ep;

    ci_check(ucp_ep_create(ci_worker, &params, &ep), "ucp_ep_create");
    return ep;
}

/* wait for a request from an nbx call; NULL is done */
static void ci_wait(void *req, const char *what, double tmo)
{
    double deadline = ci_now() + tmo;
    ucs_status_t status;

    if (UCS_PTR_IS_ERR(req)) {
        ci_check(UCS_PTR_STATUS(req), what);
    }
    if (req == NULL) {
        return;
    }
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        if (ci_now() > deadline) {
            ci_die("%s: timeout", what);
        }
        ci_progress();
    }
    ucp_request_free(req);
    ci_check(status, what);
}

static void ci_ep_close(ucp_ep_h ep, double tmo)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags        = UCP_EP_CLOSE_FLAG_FORCE};
    void *req = ucp_ep_close_nbx(ep, &param);

    if (UCS_PTR_IS_ERR(req)) {
        return; /* the peer may be gone already: nothing to flush */
    }
    if (req != NULL) {
        double deadline = ci_now() + tmo;

        while ((ucp_request_check_status(req) == UCS_INPROGRESS) &&
               (ci_now() < deadline)) {
            ci_progress();
        }
        ucp_request_free(req);
    }
}

static void ci_ucp_cleanup(void)
{
    ucp_worker_destroy(ci_worker);
    ucp_cleanup(ci_context);
}

static uint64_t ci_tag(int kind, unsigned id)
{
    return ((uint64_t)kind << CI_KIND_SHIFT) | id;
}

static void *ci_send(ucp_ep_h ep, const void *buf, size_t len, uint64_t tag)
{
    ucp_request_param_t param = {.op_attr_mask = 0};

    return ucp_tag_send_nbx(ep, buf, len, tag, &param);
}

/* post a receive for any client's message of this kind into the slot */
static void ci_post(ci_slot_t *slot, int kind, size_t len)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO,
        .recv_info.tag_info = &slot->info
    };
    void *req;

    slot->kind = kind;
    req        = ucp_tag_recv_nbx(ci_worker, slot->buf, len,
                                  ci_tag(kind, 0), CI_KIND_MASK, &param);
    if (UCS_PTR_IS_ERR(req)) {
        ci_check(UCS_PTR_STATUS(req), "ucp_tag_recv_nbx");
    }
    /* completed at once: info is filled, the slot marks it */
    slot->req = (req != NULL) ? req : (void*)slot;
}

/* a completed receive: 1 with slot->info filled, 0 if still running */
static int ci_done(ci_slot_t *slot)
{
    ucs_status_t status;

    if (slot->req == (void*)slot) {
        return 1;
    }
    status = ucp_tag_recv_request_test(slot->req, &slot->info);
    if (status == UCS_INPROGRESS) {
        return 0;
    }
    ucp_request_free(slot->req);
    ci_check(status, "receive");
    return 1;
}

/* --- server --- */

typedef struct {
    ucp_ep_h ep;
    int      fd;
    int      role;
    uint64_t bytes;       /* in the common run time */
    uint64_t bytes_all;
    uint64_t msgs;
    int      fin;
    void     *pong_req;
} ci_client_t;

static void ci_server(const ci_opts_t *o)
{
    static ci_client_t c[CI_MAX_CLIENTS];
    unsigned nslots = o->clients * o->window + 2 * o->clients, i, nfin = 0;
    unsigned nbins  = (unsigned)((o->timeout * 1e3) / o->bin_ms) + 1;
    double t_start  = ci_now(), t_go, t_end = 0, t_first_fin = 0, t, t_sum;
    uint64_t *bins  = calloc(nbins, sizeof(*bins)), total = 0, id, hdr[2];
    /* each client's bins, bin-major: the timeline's later columns */
    uint64_t *cbins = calloc((size_t)nbins * o->clients, sizeof(*cbins));
    ci_slot_t *slots = calloc(nslots, sizeof(*slots));
    int lfd, role;
    void *peer;
    char go = 'g';
    FILE *f;

    if ((bins == NULL) || (cbins == NULL) || (slots == NULL)) {
        ci_die("out of memory");
    }
    lfd = ci_listen(o->port);
    ci_ucp_init(o->event);
    for (i = 0; i < o->clients; ++i) {
        c[i].fd = accept(lfd, NULL, NULL);
        if (c[i].fd < 0) {
            ci_die("accept: %s", strerror(errno));
        }
        ci_sock_io(c[i].fd, &role, sizeof(role), 0, o->timeout);
        c[i].role = role;
        ci_sock_io(c[i].fd, &i, sizeof(i), 1, o->timeout);
        peer      = ci_exchange(c[i].fd, o->timeout);
        c[i].ep   = ci_ep_create(peer);
        free(peer);
    }
    close(lfd);

    for (i = 0; i < nslots; ++i) {
        slots[i].buf = malloc(o->size);
        if (slots[i].buf == NULL) {
            ci_die("out of memory");
        }
        ci_post(&slots[i], (i < o->clients * o->window) ? CI_DATA :
                           ((i < o->clients * (o->window + 1)) ? CI_PING :
                                                                 CI_FIN),
                o->size);
    }
    for (i = 0; i < o->clients; ++i) {
        ci_sock_io(c[i].fd, &go, 1, 1, o->timeout);
    }
    t_go = ci_now();

    while (nfin < o->clients) {
        t = ci_now();
        if (t - t_start > o->timeout) {
            ci_die("server: timeout with %u of %u clients done", nfin,
                   o->clients);
        }
        ci_progress();
        for (i = 0; i < nslots; ++i) {
            if (!ci_done(&slots[i])) {
                continue;
            }
            id = slots[i].info.sender_tag & ~CI_KIND_MASK;
            if (id >= o->clients) {
                ci_die("message from unknown client %" PRIu64, id);
            }
            switch (slots[i].kind) {
            case CI_DATA:
                /* the pattern: client id and sequence at both ends
                 * (rendezvous messages may complete out of order) */
                memcpy(hdr, slots[i].buf, sizeof(hdr));
                if ((slots[i].info.length < sizeof(hdr)) || (hdr[0] != id) ||
                    memcmp((char*)slots[i].buf + slots[i].info.length -
                           sizeof(hdr), hdr, sizeof(hdr))) {
                    ci_die("client %" PRIu64 ": bad message %" PRIu64, id,
                           hdr[1]);
                }
                ++c[id].msgs;
                c[id].bytes_all += slots[i].info.length;
                if ((t_first_fin == 0) && (t > t_go)) {
                    c[id].bytes += slots[i].info.length;
                    total       += slots[i].info.length;
                }
                if ((unsigned)((t - t_start) * 1e3 / o->bin_ms) < nbins) {
                    bins[(unsigned)((t - t_start) * 1e3 / o->bin_ms)] +=
                        slots[i].info.length;
                    cbins[(unsigned)((t - t_start) * 1e3 / o->bin_ms) *
                          o->clients + id] += slots[i].info.length;
                }
                break;
            case CI_PING:
                if (c[id].pong_req != NULL) {
                    ci_wait(c[id].pong_req, "pong", o->timeout);
                }
                c[id].pong_req = ci_send(c[id].ep, slots[i].buf,
                                         slots[i].info.length,
                                         ci_tag(CI_PONG, id));
                if (UCS_PTR_IS_ERR(c[id].pong_req)) {
                    ci_check(UCS_PTR_STATUS(c[id].pong_req), "pong");
                }
                break;
            case CI_FIN:
                c[id].fin = 1;
                if (++nfin == 1) {
                    t_first_fin = t;
                }
                t_end = t;
                break;
            }
            ci_post(&slots[i], slots[i].kind, o->size);
        }
    }

    /* every client is done */
    for (i = 0; i < o->clients; ++i) {
        if (c[i].pong_req != NULL) {
            ci_wait(c[i].pong_req, "pong", o->timeout);
        }
    }
    t_sum = t_first_fin - t_go;
    printf("clients %u\nrun_s %.3f\nlast_fin_s %.3f\n", o->clients, t_sum,
           t_end - t_go);
    printf("goodput_gbps %.4f\n", total * 8e-9 / t_sum);
    for (i = 0; i < o->clients; ++i) {
        if (c[i].role == CI_BULK) {
            printf("client%u_gbps %.4f\n", i, c[i].bytes * 8e-9 / t_sum);
        }
    }
    if (o->timeline != NULL) {
        f = fopen(o->timeline, "w");
        if (f == NULL) {
            ci_die("cannot write %s: %s", o->timeline, strerror(errno));
        }
        /* start_ns: time 0 in CLOCK_MONOTONIC ns, to put the fabric's
         * events (softverbs' model.epoch_ns) on the same axis */
        fprintf(f, "# ms gbps (received by the server; go at %.1f ms), "
                "then each client's gbps\n"
                "# start_ns %.0f\n", (t_go - t_start) * 1e3, t_start * 1e9);
        for (i = 0; (i < nbins) && (i * o->bin_ms <= (t_end - t_start) * 1e3);
             ++i) {
            fprintf(f, "%.1f %.4f", (i + 0.5) * o->bin_ms,
                    bins[i] * 8e-6 / o->bin_ms);
            for (id = 0; id < o->clients; ++id) {
                fprintf(f, " %.4f",
                        cbins[(size_t)i * o->clients + id] * 8e-6 / o->bin_ms);
            }
            fprintf(f, "\n");
        }
        fclose(f);
    }
    fflush(stdout);
    for (i = 0; i < nslots; ++i) {
        if ((slots[i].req != NULL) && (slots[i].req != (void*)&slots[i])) {
            ucp_request_cancel(ci_worker, slots[i].req);
            ucp_request_free(slots[i].req);
        }
        free(slots[i].buf);
    }
    /* our eps go before the clients may leave: a transport without error
     * handling fails fatally on a WR to a peer that is gone (rc_verbs'
     * flow-control grants, for one) */
    for (i = 0; i < o->clients; ++i) {
        ci_ep_close(c[i].ep, 1.0);
    }
    for (i = 0; i < o->clients; ++i) {
        ci_sock_io(c[i].fd, &go, 1, 1, o->timeout);
        close(c[i].fd);
    }
    free(slots);
    free(bins);
    free(cbins);
    ci_ucp_cleanup();
}

/* --- clients --- */

static int ci_cmp(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

static double ci_pct(const double *v, size_t n, double p)
{
    size_t i = (size_t)(p * (double)n);

    return v[(i < n) ? i : n - 1] * 1e6;
}

/* ping-pong until the time is up; the round trips' percentiles */
static void ci_probe(ucp_ep_h ep, unsigned id, const ci_opts_t *o)
{
    double *rtt = malloc(CI_MAX_SAMPLES * sizeof(*rtt)), end, t0;
    char *buf   = calloc(1, o->size), *rbuf = calloc(1, o->size);
    ucp_request_param_t param = {.op_attr_mask = 0};
    void *rreq, *sreq;
    size_t n = 0;

    if ((rtt == NULL) || (buf == NULL) || (rbuf == NULL)) {
        ci_die("out of memory");
    }
    end = ci_now() + o->seconds;
    while ((ci_now() < end) && (n < CI_MAX_SAMPLES)) {
        t0   = ci_now();
        rreq = ucp_tag_recv_nbx(ci_worker, rbuf, o->size,
                                ci_tag(CI_PONG, id), ~0ull, &param);
        sreq = ci_send(ep, buf, o->size, ci_tag(CI_PING, id));
        ci_wait(sreq, "ping", o->timeout);
        ci_wait(rreq, "pong", o->timeout);
        rtt[n++] = ci_now() - t0;
    }
    if (n == 0) {
        ci_die("probe: no round trip");
    }
    qsort(rtt, n, sizeof(*rtt), ci_cmp);
    printf("samples %zu\nrtt_p50_us %.1f\nrtt_p99_us %.1f\n"
           "rtt_p999_us %.1f\nrtt_max_us %.1f\n", n, ci_pct(rtt, n, 0.5),
           ci_pct(rtt, n, 0.99), ci_pct(rtt, n, 0.999), rtt[n - 1] * 1e6);
    free(rtt);
    free(buf);
    free(rbuf);
}

/* W messages in flight until the time is up */
static void ci_bulk(ucp_ep_h ep, unsigned id, const ci_opts_t *o)
{
    void **req = calloc(o->window, sizeof(*req));
    char **buf = calloc(o->window, sizeof(*buf));
    uint64_t seq = 0, bytes = 0, hdr[2];
    double end = ci_now() + o->seconds, t0 = ci_now();
    unsigned i, busy;

    if ((req == NULL) || (buf == NULL) || (o->size < sizeof(hdr))) {
        ci_die("bad size or out of memory");
    }
    for (i = 0; i < o->window; ++i) {
        buf[i] = calloc(1, o->size);
        if (buf[i] == NULL) {
            ci_die("out of memory");
        }
    }
    do {
        ci_progress();
        busy = 0;
        for (i = 0; i < o->window; ++i) {
            if ((req[i] != NULL) &&
                (ucp_request_check_status(req[i]) != UCS_INPROGRESS)) {
                ci_check(ucp_request_check_status(req[i]), "send");
                ucp_request_free(req[i]);
                req[i] = NULL;
            }
            if ((req[i] == NULL) && (ci_now() < end)) {
                hdr[0] = id;
                hdr[1] = seq++;
                memcpy(buf[i], hdr, sizeof(hdr));
                memcpy(buf[i] + o->size - sizeof(hdr), hdr, sizeof(hdr));
                req[i] = ci_send(ep, buf[i], o->size, ci_tag(CI_DATA, id));
                if (UCS_PTR_IS_ERR(req[i])) {
                    ci_check(UCS_PTR_STATUS(req[i]), "send");
                }
                bytes += o->size;
            }
            busy |= (req[i] != NULL);
        }
        if (ci_now() > end + o->timeout) {
            ci_die("bulk: sends not done %.0f s after the end", o->timeout);
        }
    } while (busy || (ci_now() < end));
    printf("sent_gbps %.4f\nmessages %" PRIu64 "\n",
           bytes * 8e-9 / (ci_now() - t0), seq);
    for (i = 0; i < o->window; ++i) {
        free(buf[i]);
    }
    free(buf);
    free(req);
}

static void ci_client(const ci_opts_t *o)
{
    int fd = ci_dial(o->port, o->timeout);
    unsigned id;
    uint64_t fin = 0;
    ucp_ep_h ep;
    void *peer;
    char go;

    ci_sock_io(fd, (void*)&o->role, sizeof(o->role), 1, o->timeout);
    ci_sock_io(fd, &id, sizeof(id), 0, o->timeout);
    ci_ucp_init(o->event);
    peer = ci_exchange(fd, o->timeout);
    ep   = ci_ep_create(peer);
    free(peer);
    ci_sock_io(fd, &go, 1, 0, o->timeout);

    printf("client %u\n", id);
    if (o->role == CI_PROBE) {
        ci_probe(ep, id, o);
    } else {
        ci_bulk(ep, id, o);
    }
    ci_wait(ci_send(ep, &fin, sizeof(fin), ci_tag(CI_FIN, id)), "fin",
            o->timeout);
    ci_sock_io(fd, &go, 1, 0, o->timeout); /* all are done */
    fflush(stdout);
    ci_ep_close(ep, 1.0);
    close(fd);
    ci_ucp_cleanup();
}

int main(int argc, char **argv)
{
    ci_opts_t o = {.size = 65536, .window = 4, .seconds = 2, .bin_ms = 5,
                   .timeout = 120};
    int opt;

    if (argc < 2) {
        goto usage;
    }
    if (!strcmp(argv[1], "server")) {
        o.role = CI_SERVER;
    } else if (!strcmp(argv[1], "bulk")) {
        o.role = CI_BULK;
    } else if (!strcmp(argv[1], "probe")) {
        o.role = CI_PROBE;
        o.size = 64;
    } else {
        goto usage;
    }
    optind = 2;
    while ((opt = getopt(argc, argv, "p:n:s:w:t:i:o:T:e")) != -1) {
        switch (opt) {
        case 'p': o.port     = strtoul(optarg, NULL, 0); break;
        case 'n': o.clients  = strtoul(optarg, NULL, 0); break;
        case 's': o.size     = strtoull(optarg, NULL, 0); break;
        case 'w': o.window   = strtoul(optarg, NULL, 0); break;
        case 't': o.seconds  = strtod(optarg, NULL); break;
        case 'i': o.bin_ms   = strtod(optarg, NULL); break;
        case 'o': o.timeline = optarg; break;
        case 'T': o.timeout  = strtod(optarg, NULL); break;
        case 'e': o.event    = 1; break;
        default:  goto usage;
        }
    }
    if ((o.port == 0) || (o.port > 65535) || (o.size < 16) ||
        (o.size > (1ull << 30)) || (o.window == 0) || (o.window > 1024) ||
        !(o.bin_ms > 0) || !(o.seconds > 0) || !(o.timeout > 0) ||
        ((o.role == CI_SERVER) &&
         ((o.clients == 0) || (o.clients > CI_MAX_CLIENTS)))) {
        goto usage;
    }
    signal(SIGPIPE, SIG_IGN);
    if (o.role == CI_SERVER) {
        ci_server(&o);
    } else {
        ci_client(&o);
    }
    return 0;

usage:
    fprintf(stderr, "usage: %s server -p PORT -n CLIENTS [-s SIZE] [-w W] "
            "[-i BIN_MS] [-o TIMELINE] [-T TIMEOUT] [-e]\n"
            "       %s bulk|probe -p PORT [-s SIZE] [-w W] [-t SECONDS] "
            "[-T TIMEOUT] [-e]\n", argv[0], argv[0]);
    return 2;
}

/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uct_verify: moves data over a uccl UCT endpoint between two processes and
 * checks every byte (ucx_perftest does not).
 *
 *   server: uct_verify -s [-p PORT] [-d DEV] [-K MS]
 *   client: uct_verify [-p PORT] [-d DEV] [-n ITERS] [-S SEED] [-m MODE]
 *
 * With -D (data mode, client) a first ep streams 1 MiB PUTs and is
 * destroyed with them in flight: each completion must come exactly once,
 * with UCS_OK or UCS_ERR_CANCELED, and the data test then runs on a new ep
 * of the same iface (the old QPs drain behind it).
 * Addresses and keys are exchanged over a TCP socket. Modes:
 *   data  (default) GET bcopy/zcopy of the server's pattern, PUT
 *         short/bcopy/zcopy of the client's pattern at random offsets and
 *         sizes, AM short/bcopy/zcopy with sequence numbers; the server
 *         checks its buffer and the AM order and count, the client the GETs.
 *         Also: a second registration of a buffer returns the cached region,
 *         a GET with a wrong rkey (UC mode) completes with an error.
 *   kill  the server kills itself (SIGKILL) -K ms after the client starts
 *         streaming PUTs; the client must see its ep error callback within
 *         -T seconds of the peer's death.
 *   idle  as kill, but the client sends nothing: it only calls
 *         uct_ep_check every 100 ms (as UCP's keepalive does), which must
 *         not fail while the server lives and must fail once it died.
 *         With -W s the client then progresses s seconds more (so that its
 *         iface reaps the dead server's passive connection).
 *   reset (UC) the client GETs from the server's buffer in a loop; -K ms
 *         after the start the server unmaps that buffer, so its engine
 *         cannot read the data it serves and its connection fails. It
 *         must tell the client: the client's ep must fail with
 *         UCS_ERR_CONNECTION_RESET within -T seconds (far below the
 *         peer timeout that would otherwise end it).
 *   fuzz  the client first sends malformed and unexpected control packets
 *         to the server's control QP from a raw verbs UD QP (white box: it
 *         knows uccl's address layout), then runs the data test: the
 *         server must count and drop them and keep working.
 * Random choices come from -S SEED (printed on failure). Exit status 0 on
 * success, 1 with a message on any mismatch.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE      (8u << 20)
#define AM_ID         7
#define AM_SLOTS      256           /* zero-copy AMs in flight */
#define AM_SLOT_SIZE  (BUF_SIZE / AM_SLOTS)
#define ADDR_MAX      256

typedef struct {
    uint64_t buf_addr;
    uint32_t dev_len, iface_len, rkey_len;
    uint8_t  dev[ADDR_MAX], iface[ADDR_MAX], rkey[ADDR_MAX];
} peer_info_t;

static struct {
    int               server;
    const char        *host;
    int               port;
    const char        *dev;
    unsigned          iters;
    unsigned          seed;
    const char        *mode;
    unsigned          kill_ms;
    unsigned          linger_s;     /* -W: progress after the ep error */
    unsigned          pause_ms;
    unsigned          err_timeout;
    int               destroy_busy; /* -D */

    uct_component_h   component;
    uct_md_h          md;
    uct_md_attr_t     md_attr;
    ucs_async_context_t *async;
    uct_worker_h      worker;
    uct_iface_h       iface;
    uct_iface_attr_t  iface_attr;
    uct_ep_h          ep;
    uint8_t           *buf;
    uct_mem_h         memh;
    uct_rkey_bundle_t rkey;
    peer_info_t       peer;
    int               sock;

    /* AM receive state */
    uint64_t          am_expected;
    uint64_t          am_errors;
    /* error handling */
    volatile int      ep_error;
    ucs_status_t      ep_status;
    double            ep_error_time;
} g = {
    .host = "localhost", .port = 13377, .dev = "sv0:1", .iters = 200,
    .seed = 1, .mode = "data", .kill_ms = 300, .err_timeout = 10
};

static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "uct_verify[%s] FAIL (seed %u): ",
            g.server ? "server" : "client", g.seed);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static double now_sec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint8_t pattern(unsigned who, uint64_t offset)
{
    uint64_t x = (offset + 1) * 0x9e3779b97f4a7c15ull ^ (who * 0x5bd1e995u);

    return (uint8_t)(x >> 29);
}

static unsigned rnd(unsigned *state, unsigned max)
{
    *state = *state * 1103515245u + 12345u;
    return (*state >> 8) % max;
}

/* ------------------------------------------------------------------------ */

static void xfer(void *data, size_t len, int send)
{
    char *p = data;
    ssize_t n;

    while (len > 0) {
        n = send ? write(g.sock, p, len) : read(g.sock, p, len);
        if (n <= 0) {
            die("socket %s failed", send ? "write" : "read");
        }
        p   += n;
        len -= n;
    }
}

static void sock_connect(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET };
    struct hostent *he;
    int one = 1, lsock, i;

    addr.sin_port = htons(g.port);
    if (g.server) {
        lsock = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        addr.sin_addr.s_addr = INADDR_ANY;
        if (bind(lsock, (void*)&addr, sizeof(addr)) || listen(lsock, 1)) {
            die("cannot listen on port %d", g.port);
        }
        g.sock = accept(lsock, NULL, NULL);
        close(lsock);
    } else {
        he = gethostbyname(g.host);
        if (he == NULL) {
            die("unknown host %s", g.host);
        }
        memcpy(&addr.sin_addr, he->h_addr_list[0], he->h_length);
        for (i = 0; i < 100; ++i) {
            g.sock = socket(AF_INET, SOCK_STREAM, 0);
            if (connect(g.sock, (void*)&addr, sizeof(addr)) == 0) {
                break;
            }
            close(g.sock);
            g.sock = -1;
            usleep(100000);
        }
    }
    if (g.sock < 0) {
        die("no connection on port %d", g.port);
    }
    setsockopt(g.sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ------------------------------------------------------------------------ */

static ucs_status_t am_handler(void *arg, void *data, size_t length,
                               unsigned flags)
{
    const uint64_t *hdr = data;
    const uint8_t *payload = (const uint8_t*)data + sizeof(uint64_t);
    size_t i;

    if (length < sizeof(uint64_t)) {
        ++g.am_errors;
        return UCS_OK;
    }
    if (hdr[0] != g.am_expected) {
        fprintf(stderr, "AM out of order: got seq %lu, expected %lu\n",
                hdr[0], g.am_expected);
        ++g.am_errors;
    }
    for (i = 0; i < length - sizeof(uint64_t); ++i) {
        if (payload[i] != pattern(2, hdr[0] * 131 + i)) {
            fprintf(stderr, "AM seq %lu: byte %zu is 0x%x, expected 0x%x\n",
                    hdr[0], i, payload[i], pattern(2, hdr[0] * 131 + i));
            ++g.am_errors;
            break;
        }
    }
    g.am_expected = hdr[0] + 1;
    return UCS_OK;
}

static ucs_status_t err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    if (!g.ep_error) {
        g.ep_error_time = now_sec();
        g.ep_status     = status;
        g.ep_error      = 1;
    }
    return UCS_OK;
}

static void check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        die("%s: %s", what, ucs_status_string(status));
    }
}

static void setup(void)
{
    uct_component_h *components;
    uct_component_attr_t cattr;
    uct_md_config_t *md_config;
    uct_iface_config_t *iface_config;
    uct_iface_params_t params;
    unsigned i, num;
    char md_name[64];
    char *colon;

    check(uct_query_components(&components, &num), "uct_query_components");
    for (i = 0; i < num; ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                           UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        check(uct_component_query(components[i], &cattr), "component query");
        if (!strcmp(cattr.name, "uccl")) {
            g.component = components[i];
        }
    }
    uct_release_component_list(components);
    if (g.component == NULL) {
        die("no uccl component: run under uccl-run");
    }

    snprintf(md_name, sizeof(md_name), "%s", g.dev);
    colon = strchr(md_name, ':');
    if (colon != NULL) {
        *colon = '\0';
    }

    check(uct_md_config_read(g.component, NULL, NULL, &md_config),
          "md config");
    check(uct_md_open(g.component, md_name, md_config, &g.md), "md open");
    uct_config_release(md_config);
    check(uct_md_query(g.md, &g.md_attr), "md query");

    check(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &g.async),
          "async");
    check(uct_worker_create(g.async, UCS_THREAD_MODE_SINGLE, &g.worker),
          "worker");
    check(uct_md_iface_config_read(g.md, "uccl", NULL, NULL, &iface_config),
          "iface config");

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                        UCT_IFACE_PARAM_FIELD_DEVICE |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "uccl";
    params.mode.device.dev_name = g.dev;
    params.err_handler          = err_handler;
    params.err_handler_arg      = NULL;
    params.err_handler_flags    = 0;
    check(uct_iface_open(g.md, g.worker, &params, iface_config, &g.iface),
          "iface open");
    uct_config_release(iface_config);
    check(uct_iface_query(g.iface, &g.iface_attr), "iface query");
    uct_iface_progress_enable(g.iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    check(uct_iface_set_am_handler(g.iface, AM_ID, am_handler, NULL, 0),
          "am handler");

    if (!strcmp(g.mode, "reset")) {
        /* the server unmaps it: not from the heap */
        g.buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (g.buf == MAP_FAILED) {
            die("mmap: %m");
        }
    } else if (posix_memalign((void**)&g.buf, 4096, BUF_SIZE)) {
        die("no memory");
    }
    memset(g.buf, 0, BUF_SIZE);
    check(uct_md_mem_reg(g.md, g.buf, BUF_SIZE, UCT_MD_MEM_ACCESS_ALL,
                         &g.memh), "mem reg");
}

static void ep_connect(void);

static void exchange(void)
{
    peer_info_t me;

    memset(&me, 0, sizeof(me));
    me.buf_addr  = (uintptr_t)g.buf;
    me.dev_len   = g.iface_attr.device_addr_len;
    me.iface_len = g.iface_attr.iface_addr_len;
    me.rkey_len  = g.md_attr.rkey_packed_size;
    if ((me.dev_len > ADDR_MAX) || (me.iface_len > ADDR_MAX) ||
        (me.rkey_len > ADDR_MAX)) {
        die("addresses too long");
    }
    check(uct_iface_get_device_address(g.iface, (void*)me.dev), "dev addr");
    check(uct_iface_get_address(g.iface, (void*)me.iface), "iface addr");
    check(uct_md_mkey_pack(g.md, g.memh, me.rkey), "mkey pack");

    sock_connect();
    xfer(&me, sizeof(me), 1);
    xfer(&g.peer, sizeof(g.peer), 0);

    if (!uct_iface_is_reachable(g.iface, (void*)g.peer.dev,
                                (void*)g.peer.iface)) {
        die("peer is not reachable");
    }
    check(uct_rkey_unpack(g.component, g.peer.rkey, &g.rkey), "rkey unpack");
    ep_connect();
}

static void ep_connect(void)
{
    uct_ep_params_t ep_params;

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = g.iface;
    ep_params.dev_addr   = (void*)g.peer.dev;
    ep_params.iface_addr = (void*)g.peer.iface;
    check(uct_ep_create(&ep_params, &g.ep), "ep create");
}

/* ------------------------------------------------------------------------ */

typedef struct {
    uct_completion_t comp;
    int              done;
} req_t;

static void req_cb(uct_completion_t *self)
{
    req_t *req = ucs_container_of(self, req_t, comp);

    ++req->done;
}

static void req_init(req_t *req)
{
    req->comp.func   = req_cb;
    req->comp.count  = 1;
    req->comp.status = UCS_OK;
    req->done        = 0;
}

static void progress(void)
{
    uct_worker_progress(g.worker);
}

static void wait_req(req_t *req, ucs_status_t status, const char *what)
{
    double deadline = now_sec() + 60;

    if (status == UCS_OK) {
        return;
    }
    if (status != UCS_INPROGRESS) {
        die("%s: %s", what, ucs_status_string(status));
    }
    while (!req->done) {
        progress();
        if (now_sec() > deadline) {
            die("%s: no completion after 60 s", what);
        }
    }
    if (req->comp.status != UCS_OK) {
        die("%s completed with %s", what,
            ucs_status_string(req->comp.status));
    }
}

/* retry an operation while the ep is connecting or its queue is full */
#define RETRY(_what, _call) \
    ({ \
        __typeof__(_call) _s; \
        double _deadline = now_sec() + 60; \
        while ((_s = (_call)) == UCS_ERR_NO_RESOURCE) { \
            progress(); \
            if (now_sec() > _deadline) { \
                die("%s: no resources for 60 s", _what); \
            } \
        } \
        _s; \
    })

static void flush_ep(void)
{
    req_t req;

    req_init(&req);
    wait_req(&req, RETRY("flush", uct_ep_flush(g.ep, 0, &req.comp)),
             "flush");
}

typedef struct {
    const uint8_t *src;
    size_t        len;
} pack_arg_t;

static size_t pack_cb(void *dest, void *arg)
{
    pack_arg_t *p = arg;

    memcpy(dest, p->src, p->len);
    return p->len;
}

typedef struct {
    uint8_t *dst;
} unpack_arg_t;

static void unpack_cb(void *arg, const void *data, size_t length)
{
    unpack_arg_t *u = arg;

    memcpy(u->dst, data, length);
}

static size_t am_fill(uint8_t *dst, uint64_t seq, size_t payload)
{
    size_t i;

    memcpy(dst, &seq, sizeof(seq));
    for (i = 0; i < payload; ++i) {
        dst[sizeof(seq) + i] = pattern(2, seq * 131 + i);
    }
    return sizeof(seq) + payload;
}

static void client_data(void)
{
    size_t max_am   = g.iface_attr.cap.am.max_bcopy;
    size_t max_copy = g.iface_attr.cap.put.max_bcopy;
    uint8_t *local  = malloc(BUF_SIZE);
    uint8_t *tmp    = malloc(max_am + 64);
    uint64_t raddr  = g.peer.buf_addr;
    unsigned rs     = g.seed, i, k;
    uint64_t am_seq = 0, off;
    ucs_status_t zstat[AM_SLOTS];
    unsigned nz = 0;
    req_t *zreqs;
    uct_mem_h memh2;
    pack_arg_t parg;
    unpack_arg_t uarg;
    uct_iov_t iov;
    size_t len;
    req_t req;
    uint32_t result[2];

    /* the registration cache hands out the same region for the same
     * buffer: no second memory registration */
    check(uct_md_mem_reg(g.md, g.buf, BUF_SIZE, UCT_MD_MEM_ACCESS_ALL,
                         &memh2), "second mem reg");
    if ((memh2 != g.memh) && !(getenv("UCX_UCCL_RCACHE") &&
                               !strcmp(getenv("UCX_UCCL_RCACHE"), "no"))) {
        die("second registration of the same buffer made a new memory "
            "region (memh %p != %p): registration cache not used", memh2,
            g.memh);
    }
    printf("rcache: second registration returned memh %p (first %p)\n",
           memh2, g.memh);
    check(uct_md_mem_dereg(g.md, memh2), "second dereg");

    /* GET: the server's buffer holds pattern(1) */
    for (i = 0; i < g.iters / 4 + 2; ++i) {
        k   = rnd(&rs, 3);
        len = (k == 0) ? 1 + rnd(&rs, g.iface_attr.cap.get.max_bcopy) :
                         1 + rnd(&rs, (k == 1) ? 65536 * 3 : BUF_SIZE / 2);
        off = rnd(&rs, BUF_SIZE - len);
        memset(g.buf + off, 0xee, len);
        req_init(&req);
        if (k == 0) {
            uarg.dst = g.buf + off;
            wait_req(&req, RETRY("get_bcopy",
                     uct_ep_get_bcopy(g.ep, unpack_cb, &uarg, len,
                                      raddr + off, g.rkey.rkey, &req.comp)),
                     "get_bcopy");
        } else {
            iov.buffer = g.buf + off;
            iov.length = len;
            iov.memh   = g.memh;
            iov.stride = 0;
            iov.count  = 1;
            wait_req(&req, RETRY("get_zcopy",
                     uct_ep_get_zcopy(g.ep, &iov, 1, raddr + off,
                                      g.rkey.rkey, &req.comp)),
                     "get_zcopy");
        }
        for (k = 0; k < len; ++k) {
            if (g.buf[off + k] != pattern(1, off + k)) {
                die("GET of %zu bytes at %lu: byte %u is 0x%x, expected 0x%x",
                    len, off, k, g.buf[off + k], pattern(1, off + k));
            }
        }
    }
    printf("GET: %u transfers verified\n", g.iters / 4 + 2);

    /* PUT: write pattern(0) into the server's buffer at random places; the
     * final content is pattern(0) wherever something was written */
    for (off = 0; off < BUF_SIZE; ++off) {
        local[off] = pattern(0, off);
    }
    memcpy(g.buf, local, BUF_SIZE);
    for (i = 0; i < g.iters; ++i) {
        k   = rnd(&rs, 3);
        len = (k == 2) ? 1 + rnd(&rs, BUF_SIZE / 4) :
                         1 + rnd(&rs, (k == 0) ?
                                 g.iface_attr.cap.put.max_short : max_copy);
        off = rnd(&rs, BUF_SIZE - len);
        if (k == 0) {
            RETRY("put_short", uct_ep_put_short(g.ep, local + off, len,
                                                raddr + off, g.rkey.rkey));
        } else if (k == 1) {
            parg.src = local + off;
            parg.len = len;
            if (RETRY("put_bcopy", uct_ep_put_bcopy(g.ep, pack_cb, &parg,
                                                    raddr + off,
                                                    g.rkey.rkey)) < 0) {
                die("put_bcopy failed");
            }
        } else {
            iov.buffer = g.buf + off;
            iov.length = len;
            iov.memh   = g.memh;
            iov.stride = 0;
            iov.count  = 1;
            req_init(&req);
            wait_req(&req, RETRY("put_zcopy",
                     uct_ep_put_zcopy(g.ep, &iov, 1, raddr + off,
                                      g.rkey.rkey, &req.comp)),
                     "put_zcopy");
        }
    }
    /* then the whole buffer in one zcopy, so the server can check it all */
    iov.buffer = g.buf;
    iov.length = BUF_SIZE;
    iov.memh   = g.memh;
    iov.stride = 0;
    iov.count  = 1;
    req_init(&req);
    wait_req(&req, RETRY("put_zcopy", uct_ep_put_zcopy(g.ep, &iov, 1, raddr,
                         g.rkey.rkey, &req.comp)), "put_zcopy all");
    flush_ep();
    printf("PUT: %u transfers + 1 of %u bytes done\n", g.iters, BUF_SIZE);

    /* AM: sequence numbers and pattern(2), the server checks order; the
     * zero-copy ones are not waited for, so many are in flight at once */
    zreqs = calloc(AM_SLOTS, sizeof(*zreqs));
    for (i = 0; i < g.iters * 4; ++i) {
        k   = rnd(&rs, 3);
        len = rnd(&rs, ((k == 0) ? g.iface_attr.cap.am.max_short :
                        max_am) - sizeof(uint64_t));
        am_fill(tmp, am_seq, len);
        if (k == 0) {
            RETRY("am_short", uct_ep_am_short(g.ep, AM_ID, *(uint64_t*)tmp,
                                              tmp + 8, len));
        } else if (k == 1) {
            parg.src = tmp;
            parg.len = len + 8;
            if (RETRY("am_bcopy", uct_ep_am_bcopy(g.ep, AM_ID, pack_cb,
                                                  &parg, 0)) < 0) {
                die("am_bcopy failed");
            }
        } else {
            /* header from the stack, payload zero-copy from a slot of the
             * buffer that stays untouched until its completion */
            if (nz == AM_SLOTS) {
                for (k = 0; k < nz; ++k) {
                    wait_req(&zreqs[k], zstat[k], "am_zcopy");
                }
                nz = 0;
            }
            memcpy(g.buf + nz * AM_SLOT_SIZE, tmp + 8, len);
            iov.buffer = g.buf + nz * AM_SLOT_SIZE;
            iov.length = len;
            iov.memh   = g.memh;
            iov.stride = 0;
            iov.count  = 1;
            req_init(&zreqs[nz]);
            zstat[nz] = RETRY("am_zcopy",
                              uct_ep_am_zcopy(g.ep, AM_ID, tmp, 8, &iov, 1, 0,
                                              &zreqs[nz].comp));
            ++nz;
        }
        ++am_seq;
    }
    for (k = 0; k < nz; ++k) {
        wait_req(&zreqs[k], zstat[k], "am_zcopy");
    }
    free(zreqs);
    flush_ep();
    printf("AM: %lu messages sent\n", am_seq);

    /* a GET with a key the peer does not have must fail, not hang */
    if (getenv("UCX_UCCL_MODE") && !strcmp(getenv("UCX_UCCL_MODE"), "uc")) {
        iov.buffer = g.buf;
        iov.length = 4096;
        iov.memh   = g.memh;
        iov.stride = 0;
        iov.count  = 1;
        req_init(&req);
        if (RETRY("bad get", uct_ep_get_zcopy(g.ep, &iov, 1, raddr,
                                              g.rkey.rkey ^ 0x5a5a0000,
                                              &req.comp)) == UCS_INPROGRESS) {
            while (!req.done) {
                progress();
            }
        }
        if (req.comp.status == UCS_OK) {
            die("GET with a wrong rkey completed without an error");
        }
        printf("bad rkey: GET completed with '%s' as expected\n",
               ucs_status_string(req.comp.status));
    }

    result[0] = (uint32_t)am_seq;
    xfer(result, sizeof(result[0]), 1);
    xfer(result, sizeof(result), 0);
    if (result[0] != 0) {
        die("server found %u errors (see its output)", result[0]);
    }
    printf("server verified %u bytes of PUT data and %u AMs in order\n",
           BUF_SIZE, result[1]);
    free(local);
    free(tmp);
}

static void server_data(void)
{
    uint32_t expected_am, result[2];
    uint64_t off, bad = 0;
    double deadline;
    fd_set fds;
    struct timeval tv;

    /* serve until the client says how many AMs it sent; with -P stop
     * serving for a while once AMs flow, so the receive queue runs dry */
    for (;;) {
        progress();
        if (g.pause_ms && (g.am_expected > 0)) {
            printf("server: not progressing for %u ms\n", g.pause_ms);
            usleep(g.pause_ms * 1000);
            g.pause_ms = 0;
        }
        FD_ZERO(&fds);
        FD_SET(g.sock, &fds);
        tv.tv_sec = tv.tv_usec = 0;
        if (select(g.sock + 1, &fds, NULL, NULL, &tv) > 0) {
            break;
        }
    }
    xfer(&expected_am, sizeof(expected_am), 0);
    /* the client flushed: everything arrived, though in RC mode (where a
     * send completion is the acknowledgement) AMs may still wait in our
     * completion queue */
    deadline = now_sec() + 10;
    while ((g.am_expected < expected_am) && (now_sec() < deadline)) {
        progress();
    }
    for (off = 0; off < BUF_SIZE; ++off) {
        if (g.buf[off] != pattern(0, off)) {
            if (bad++ < 5) {
                fprintf(stderr, "PUT data: byte %lu is 0x%x, expected 0x%x\n",
                        off, g.buf[off], pattern(0, off));
            }
        }
    }
    if (g.am_expected != expected_am) {
        fprintf(stderr, "AM: received %lu, client sent %u\n", g.am_expected,
                expected_am);
        ++bad;
    }
    result[0] = bad + g.am_errors;
    result[1] = g.am_expected;
    printf("server: %lu bad PUT bytes, %lu AM errors, %lu AMs received\n",
           bad, g.am_errors, g.am_expected);
    xfer(result, sizeof(result), 1);
    /* let the client's last ACKs out before closing */
    for (off = 0; off < 1000; ++off) {
        progress();
        usleep(100);
    }
}

/* kill/idle/reset: the client's 1 MiB transfers use the start of g.buf */
static void mib_iov(uct_iov_t *iov)
{
    iov->buffer = g.buf;
    iov->length = 1 << 20;
    iov->memh   = g.memh;
    iov->stride = 0;
    iov->count  = 1;
}

#define DB_PUTS  16

/* -D: destroy an ep with PUTs in flight, then connect a new one */
static void client_destroy_busy(void)
{
    double deadline = now_sec() + 10;
    req_t reqs[DB_PUTS];
    ucs_status_t status;
    unsigned i, done;
    uct_iov_t iov;

    /* what the server's buffer holds already: the GETs that follow
     * expect it there, whether these PUTs landed or not */
    for (i = 0; i < (1u << 20); ++i) {
        g.buf[i] = pattern(1, i);
    }
    mib_iov(&iov);
    for (i = 0; i < DB_PUTS; ++i) {
        req_init(&reqs[i]);
        status = RETRY("busy put",
                       uct_ep_put_zcopy(g.ep, &iov, 1, g.peer.buf_addr,
                                        g.rkey.rkey, &reqs[i].comp));
        if (status == UCS_OK) {
            reqs[i].done = 1;
        } else if (status != UCS_INPROGRESS) {
            die("busy put %u: %s", i, ucs_status_string(status));
        }
    }
    uct_ep_destroy(g.ep);
    g.ep = NULL;

    do {
        progress();
        for (i = done = 0; i < DB_PUTS; ++i) {
            if (reqs[i].done > 1) {
                die("busy put %u completed %d times", i, reqs[i].done);
            }
            done += reqs[i].done;
        }
        if (now_sec() > deadline) {
            die("%u of %u PUTs of the destroyed ep never completed",
                DB_PUTS - done, DB_PUTS);
        }
    } while (done < DB_PUTS);
    for (i = done = 0; i < DB_PUTS; ++i) {
        if ((reqs[i].comp.status != UCS_OK) &&
            (reqs[i].comp.status != UCS_ERR_CANCELED)) {
            die("busy put %u completed with %s", i,
                ucs_status_string(reqs[i].comp.status));
        }
        done += (reqs[i].comp.status == UCS_ERR_CANCELED);
    }
    if (done == 0) {
        die("no PUT was in flight at ep destroy: the test tests nothing");
    }
    printf("uct_verify[client] %u PUTs in flight at ep destroy completed "
           "once each (%u canceled)\n", DB_PUTS, done);
    ep_connect();
}

/* kill/idle/reset: the server serves -K ms after the client's go; returns
 * when the go came */
static double server_serve_go(void)
{
    uint32_t go;
    double start;

    xfer(&go, sizeof(go), 0);
    start = now_sec();
    while (now_sec() - start < g.kill_ms / 1000.0) {
        progress();
    }
    return start;
}

static void client_kill(int idle)
{
    double start, dead = 0, deadline, next_check = 0;
    uint32_t go = 1;
    uct_iov_t iov;
    char c;
    ucs_status_t status;
    unsigned posted = 0;

    mib_iov(&iov);
    xfer(&go, sizeof(go), 1);
    start    = now_sec();
    deadline = start + g.kill_ms / 1000.0 + g.err_timeout + 5;
    while (!g.ep_error) {
        if (!idle) {
            status = uct_ep_put_zcopy(g.ep, &iov, 1, g.peer.buf_addr,
                                      g.rkey.rkey, NULL);
            posted += (status == UCS_INPROGRESS) || (status == UCS_OK);
        } else if (now_sec() >= next_check) {
            check(uct_ep_check(g.ep, 0, NULL), "ep check");
            next_check = now_sec() + 0.1;
        }
        progress();
        if ((dead == 0) && (recv(g.sock, &c, 1, MSG_DONTWAIT) == 0)) {
            dead = now_sec(); /* the peer's socket closed: it died */
            printf("peer died %.3f s after start (%u PUTs posted)\n",
                   dead - start, posted);
        }
        if (now_sec() > deadline) {
            die("no ep error %.1f s after the peer died",
                dead ? now_sec() - dead : -1.0);
        }
    }

    if (dead == 0) {
        if (idle) {
            /* nothing in flight: only the probe can have failed it */
            die("ep error '%s' while the peer was alive",
                ucs_status_string(g.ep_status));
        }
        dead = g.ep_error_time; /* error noticed before the socket */
    }
    printf("ep error '%s' %.3f s after the peer died\n",
           ucs_status_string(g.ep_status), g.ep_error_time - dead);
    if (g.ep_error_time - dead > g.err_timeout) {
        die("ep error took %.1f s (limit %u s)", g.ep_error_time - dead,
            g.err_timeout);
    }
    for (start = now_sec(); now_sec() - start < g.linger_s;) {
        progress();
    }
    /* the iface still works: a flush of the failed ep returns at once */
    status = uct_ep_flush(g.ep, UCT_FLUSH_FLAG_CANCEL, NULL);
    printf("flush(cancel) of the failed ep: %s\n", ucs_status_string(status));
}

static void server_kill(void)
{
    (void)server_serve_go();
    printf("server: killing myself %u ms after the client started\n",
           g.kill_ms);
    fflush(stdout);
    kill(getpid(), SIGKILL);
}

static void client_reset(void)
{
    double start, deadline;
    uint32_t go = 1;
    unsigned done = 0;
    uct_iov_t iov;
    req_t req;
    ucs_status_t status;

    mib_iov(&iov);
    xfer(&go, sizeof(go), 1);
    start    = now_sec();
    deadline = start + g.kill_ms / 1000.0 + g.err_timeout;
    req.done = 1;
    while (!g.ep_error) {
        if (req.done) {
            done += (req.comp.status == UCS_OK);
            req_init(&req);
            status = uct_ep_get_zcopy(g.ep, &iov, 1, g.peer.buf_addr,
                                      g.rkey.rkey, &req.comp);
            if (status == UCS_OK) {
                req.done = 1;
            } else if (status != UCS_INPROGRESS) {
                req.done = (status == UCS_ERR_NO_RESOURCE);
            }
        }
        progress();
        if (now_sec() > deadline) {
            die("no ep error %.1f s after the start (%u GETs done)",
                now_sec() - start, done);
        }
    }
    printf("ep error '%s' %.3f s after the start, %u GETs done before\n",
           ucs_status_string(g.ep_status), g.ep_error_time - start, done);
    if (g.ep_status != UCS_ERR_CONNECTION_RESET) {
        die("ep error '%s', expected '%s' (the server's engine should "
            "have said it failed)", ucs_status_string(g.ep_status),
            ucs_status_string(UCS_ERR_CONNECTION_RESET));
    }
    while (!req.done) {
        progress();       /* the purge completes the GET with an error */
    }
}

static void server_reset(void)
{
    double start = server_serve_go();
    char c;

    /* what a program that frees registered memory too early does */
    if (munmap(g.buf, BUF_SIZE) != 0) {
        die("munmap: %m");
    }
    printf("server: unmapped the buffer the client reads\n");
    fflush(stdout);
    /* serve (and fail) until the client is done */
    while (recv(g.sock, &c, 1, MSG_DONTWAIT) != 0) {
        progress();
        if (now_sec() - start > 60) {
            die("the client did not finish");
        }
    }
    g.buf = NULL;         /* unmapped: not to be freed */
}

/* uccl's address layout (uccl_iface.h): device = lid(2) is_global(1)
 * rsvd(1) gid(16); iface = control QPN(4) */
#define FUZZ_QKEY 0x1ee7a330u

static void client_fuzz(void)
{
    struct ibv_qp_init_attr qp_init = {};
    struct ibv_qp_attr attr         = {};
    struct ibv_ah_attr ah_attr      = {};
    struct ibv_device **devs;
    struct ibv_context *ctx = NULL;
    struct ibv_send_wr wr, *bad_wr;
    struct ibv_wc wc;
    struct ibv_sge sge;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_ah *ah;
    struct ibv_mr *mr;
    uint8_t *pkt;
    uint32_t qpn;
    uint16_t lid;
    unsigned rs = g.seed, i, n, sent = 0;
    size_t len;
    char name[64];
    int num;

    memcpy(&lid, g.peer.dev, sizeof(lid));
    memcpy(&qpn, g.peer.iface, sizeof(qpn));
    snprintf(name, sizeof(name), "%s", g.dev);
    *strchrnul(name, ':') = '\0';

    devs = ibv_get_device_list(&num);
    for (i = 0; (devs != NULL) && (i < (unsigned)num); ++i) {
        if (!strcmp(ibv_get_device_name(devs[i]), name)) {
            ctx = ibv_open_device(devs[i]);
        }
    }
    if (ctx == NULL) {
        die("fuzz: cannot open %s", name);
    }
    pd  = ibv_alloc_pd(ctx);
    cq  = ibv_create_cq(ctx, 64, NULL, NULL, 0);
    pkt = calloc(1, 4096);
    mr  = ibv_reg_mr(pd, pkt, 4096, IBV_ACCESS_LOCAL_WRITE);
    qp_init.send_cq          = cq;
    qp_init.recv_cq          = cq;
    qp_init.qp_type          = IBV_QPT_UD;
    qp_init.cap.max_send_wr  = 16;
    qp_init.cap.max_recv_wr  = 1;
    qp_init.cap.max_send_sge = 1;
    qp_init.cap.max_recv_sge = 1;
    qp = ibv_create_qp(pd, &qp_init);
    if ((pd == NULL) || (cq == NULL) || (mr == NULL) || (qp == NULL)) {
        die("fuzz: cannot create verbs resources");
    }
    attr.qp_state   = IBV_QPS_INIT;
    attr.port_num   = 1;
    attr.qkey       = FUZZ_QKEY;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_QKEY)) {
        die("fuzz: QP to INIT");
    }
    attr.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE)) {
        die("fuzz: QP to RTR");
    }
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn   = 0;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
        die("fuzz: QP to RTS");
    }
    ah_attr.dlid     = lid;
    ah_attr.port_num = 1;
    if (g.peer.dev[2]) {
        ah_attr.is_global = 1;
        memcpy(ah_attr.grh.dgid.raw, g.peer.dev + 4, 16);
        ah_attr.grh.hop_limit = 64;
    }
    ah = ibv_create_ah(pd, &ah_attr);
    if (ah == NULL) {
        die("fuzz: cannot create an address handle");
    }

    /* packets: each case is (type, version, claimed length, real length)
     * over a random body; types: 1 REQ 2 REP 3 ACK 4 BATCH 5 DISCONNECT */
    for (i = 0; i < 64; ++i) {
        for (n = 0; n < 4096; ++n) {
            pkt[n] = rnd(&rs, 256);
        }
        switch (i % 8) {
        case 0: len = 1; break;                              /* runt */
        case 1: pkt[0] = 99; pkt[1] = 1; len = 64; break;    /* bad type */
        case 2: pkt[0] = 1; pkt[1] = 7; len = 100; break;    /* bad version */
        case 3: pkt[0] = 1; pkt[1] = 1; pkt[2] = 80; pkt[3] = 0;
                len = 20; break;                             /* short REQ */
        case 4: pkt[0] = 2; pkt[1] = 1; pkt[2] = 84; pkt[3] = 0;
                len = 84; break;                             /* junk REP */
        case 5: pkt[0] = 3; pkt[1] = 1; pkt[2] = 32; pkt[3] = 0;
                memset(pkt + 4, 0, 28);
                pkt[4] = 0xe8; pkt[5] = 0x03;                /* conn 1000 */
                len = 32; break;                             /* ACK, unknown */
        case 6: pkt[0] = 4; pkt[1] = 1; pkt[2] = 40; pkt[3] = 0;
                pkt[4] = 5; pkt[5] = 0; pkt[6] = 0; pkt[7] = 0;
                len = 40; break;                             /* bad batch */
        default: pkt[0] = 5; pkt[1] = 1; pkt[2] = 16; pkt[3] = 0;
                memset(pkt + 4, 0, 12);
                pkt[4] = 0xe9; pkt[5] = 0x03;
                len = 16; break;                             /* DISCONNECT */
        }
        sge.addr   = (uintptr_t)pkt;
        sge.length = len;
        sge.lkey   = mr->lkey;
        memset(&wr, 0, sizeof(wr));
        wr.sg_list           = &sge;
        wr.num_sge           = 1;
        wr.opcode            = IBV_WR_SEND;
        wr.send_flags        = IBV_SEND_SIGNALED;
        wr.wr.ud.ah          = ah;
        wr.wr.ud.remote_qpn  = qpn;
        wr.wr.ud.remote_qkey = FUZZ_QKEY;
        if (ibv_post_send(qp, &wr, &bad_wr)) {
            die("fuzz: ibv_post_send failed");
        }
        while (ibv_poll_cq(cq, 1, &wc) == 0) {
            progress();
        }
        if (wc.status != IBV_WC_SUCCESS) {
            die("fuzz: send completed with %s", ibv_wc_status_str(wc.status));
        }
        ++sent;
    }
    printf("fuzz: sent %u malformed control packets to QPN 0x%x\n", sent,
           qpn);

    ibv_destroy_ah(ah);
    ibv_destroy_qp(qp);
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(devs);
    free(pkt);
}

int main(int argc, char **argv)
{
    uint64_t i;
    int c;

    while ((c = getopt(argc, argv, "sh:p:d:n:S:m:K:T:W:P:D")) != -1) {
        switch (c) {
        case 's': g.server = 1; break;
        case 'h': g.host = optarg; break;
        case 'p': g.port = atoi(optarg); break;
        case 'd': g.dev = optarg; break;
        case 'n': g.iters = atoi(optarg); break;
        case 'S': g.seed = atoi(optarg); break;
        case 'm': g.mode = optarg; break;
        case 'K': g.kill_ms = atoi(optarg); break;
        case 'T': g.err_timeout = atoi(optarg); break;
        case 'W': g.linger_s = atoi(optarg); break;
        case 'P': g.pause_ms = atoi(optarg); break;
        case 'D': g.destroy_busy = 1; break;
        default:
            fprintf(stderr, "usage: %s [-s] [-h host] [-p port] [-d dev] "
                    "[-n iters] [-S seed] [-m data|kill|idle|reset|fuzz] "
                    "[-K ms] [-T s] [-W s] [-P ms] [-D]\n",
                    argv[0]);
            return 2;
        }
    }

    setup();
    if (g.server) {
        /* before the client hears of us: our engine may serve its GETs
         * (RC: the NIC; UC: the async timer) before we call progress */
        for (i = 0; i < BUF_SIZE; ++i) {
            g.buf[i] = pattern(1, i);
        }
    }
    exchange();
    if (!strcmp(g.mode, "data") || !strcmp(g.mode, "fuzz")) {
        if (!g.server && !strcmp(g.mode, "fuzz")) {
            client_fuzz();
        }
        if (!g.server && g.destroy_busy) {
            client_destroy_busy();
        }
        g.server ? server_data() : client_data();
    } else if (!strcmp(g.mode, "reset")) {
        g.server ? server_reset() : client_reset();
    } else if (!strcmp(g.mode, "kill") || !strcmp(g.mode, "idle")) {
        g.server ? server_kill() : client_kill(!strcmp(g.mode, "idle"));
    } else {
        die("unknown mode %s", g.mode);
    }

    if ((strcmp(g.mode, "kill") && strcmp(g.mode, "idle") &&
         strcmp(g.mode, "reset")) || g.server) {
        flush_ep();
    }
    uct_ep_destroy(g.ep);
    uct_rkey_release(g.component, &g.rkey);
    uct_md_mem_dereg(g.md, g.memh);
    uct_iface_close(g.iface);
    uct_worker_destroy(g.worker);
    ucs_async_context_destroy(g.async);
    uct_md_close(g.md);
    printf("uct_verify[%s] %s: OK\n", g.server ? "server" : "client",
           g.mode);
    close(g.sock);
    if (strcmp(g.mode, "reset")) {
        free(g.buf);
    } else if (g.buf != NULL) {
        munmap(g.buf, BUF_SIZE);
    }
    return 0;
}

/*
 * uct_pingpong: UCT-level latency and bandwidth between two processes.
 *
 *   uct_pingpong [-t TL] [-d DEV]                 both ends in one command
 *   uct_pingpong -l [-p PORT] [-t TL] [-d DEV]    server
 *   uct_pingpong -c HOST [-p PORT] [-t TL] [-d DEV] client
 *
 * TL/DEV default to uccl on sv0:1 (run through uccl-run); any transport
 * that connects to an interface works, e.g. -t tcp -d lo. The client
 * measures active-message ping-pong latency (AM short, then AM bcopy for
 * larger messages) and PUT zero-copy bandwidth into a registered window of
 * the server's; every ping, pong and window is checked against a known
 * pattern. Addresses and the rkey travel over a TCP socket.
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PP_AM_ID      11
#define PP_PING       1ull
#define PP_PONG       2ull
#define PP_WINDOW     (16ul << 20)   /* server's put target */
#define PP_IDLE_S     30             /* a peer silent this long is gone */

typedef struct {
    const char         *who;
    int                sock;
    ucs_async_context_t *async;
    uct_worker_h       worker;
    uct_component_h    component;
    uct_md_h           md;
    uct_md_attr_t      md_attr;
    uct_iface_h        iface;
    uct_iface_attr_t   attr;
    uct_ep_h           ep;
    /* the last active message */
    volatile int       got;
    uint64_t           got_hdr;
    size_t             got_len;
    int                bad;
} pp_t;

/* What the client asks of the server over the socket. */
typedef struct {
    uint32_t op;       /* PP_OP_* */
    uint32_t iters;
    uint64_t size;
} pp_cmd_t;

enum { PP_OP_LAT = 1, PP_OP_BW, PP_OP_BW_CHECK, PP_OP_END };

static void pp_die(const pp_t *pp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

static void pp_die(const pp_t *pp, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "uct_pingpong %s: ", pp->who);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(1);
}

static void pp_check(const pp_t *pp, ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        pp_die(pp, "%s: %s", what, ucs_status_string(status));
    }
}

static double pp_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* byte i of message `seq` (any length) */
static inline uint8_t pp_pattern(uint64_t seq, size_t i)
{
    return (uint8_t)((seq * 0x9e3779b97f4a7c15ull + i * 0x2545f491ull) >> 29);
}

static void pp_fill(uint8_t *p, size_t len, uint64_t seq)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        p[i] = pp_pattern(seq, i);
    }
}

static size_t pp_count_bad(const uint8_t *p, size_t len, uint64_t seq)
{
    size_t i, bad = 0;

    for (i = 0; i < len; ++i) {
        bad += (p[i] != pp_pattern(seq, i));
    }
    return bad;
}

/* --- socket: the UCT side keeps progressing while we wait --- */

static void pp_sock_send(pp_t *pp, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = send(pp->sock, p, len, MSG_NOSIGNAL);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        } else if (n < 0) {
            pp_die(pp, "socket send: %s", strerror(errno));
        }
        p   += n;
        len -= n;
    }
}

static void pp_sock_recv(pp_t *pp, void *buf, size_t len)
{
    struct pollfd pfd = { .fd = pp->sock, .events = POLLIN };
    double deadline = pp_now() + PP_IDLE_S;
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        if (poll(&pfd, 1, 0) == 0) {
            if (pp->worker != NULL) {
                uct_worker_progress(pp->worker);
            } else {
                poll(&pfd, 1, 10);
            }
            if (pp_now() > deadline) {
                pp_die(pp, "peer silent for %d s", PP_IDLE_S);
            }
            continue;
        }
        n = recv(pp->sock, p, len, 0);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        } else if (n <= 0) {
            pp_die(pp, "socket: %s", (n == 0) ? "peer closed the connection"
                                              : strerror(errno));
        }
        p   += n;
        len -= n;
    }
}

static void pp_sock_send_blob(pp_t *pp, const void *buf, size_t len)
{
    uint32_t n = htonl((uint32_t)len);

    pp_sock_send(pp, &n, sizeof(n));
    pp_sock_send(pp, buf, len);
}

static void *pp_sock_recv_blob(pp_t *pp, size_t *len_p)
{
    uint32_t n;
    void *buf;

    pp_sock_recv(pp, &n, sizeof(n));
    n = ntohl(n);
    if (n > 65536) {
        pp_die(pp, "peer sent a %u-byte address or key", n);
    }
    buf = malloc(n ? n : 1);
    if (buf == NULL) {
        pp_die(pp, "out of memory");
    }
    pp_sock_recv(pp, buf, n);
    *len_p = n;
    return buf;
}

/* --- UCT set-up --- */

/* Find the component and memory domain that offer TL on DEV. */
static void pp_open_md(pp_t *pp, const char *tl, const char *dev)
{
    uct_component_attr_t cattr;
    uct_tl_resource_desc_t *res;
    uct_component_h *comps;
    uct_md_config_t *mdc;
    unsigned ncomps, c, m, nres, r;
    int found;

    pp_check(pp, uct_query_components(&comps, &ncomps), "uct_query_components");
    for (c = 0; c < ncomps; ++c) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        pp_check(pp, uct_component_query(comps[c], &cattr), "component");
        cattr.md_resources = calloc(cattr.md_resource_count + 1,
                                    sizeof(*cattr.md_resources));
        cattr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        pp_check(pp, uct_component_query(comps[c], &cattr), "component");
        for (m = 0; m < cattr.md_resource_count; ++m) {
            pp_check(pp, uct_md_config_read(comps[c], NULL, NULL, &mdc),
                     "uct_md_config_read");
            if (uct_md_open(comps[c], cattr.md_resources[m].md_name, mdc,
                            &pp->md) != UCS_OK) {
                uct_config_release(mdc);
                continue;
            }
            uct_config_release(mdc);
            found = 0;
            if (uct_md_query_tl_resources(pp->md, &res, &nres) == UCS_OK) {
                for (r = 0; r < nres; ++r) {
                    found |= !strcmp(res[r].tl_name, tl) &&
                             !strcmp(res[r].dev_name, dev);
                }
                uct_release_tl_resource_list(res);
            }
            if (found) {
                pp->component = comps[c];
                free(cattr.md_resources);
                uct_release_component_list(comps);
                pp_check(pp, uct_md_query(pp->md, &pp->md_attr),
                         "uct_md_query");
                return;
            }
            uct_md_close(pp->md);
        }
        free(cattr.md_resources);
    }
    uct_release_component_list(comps);
    pp_die(pp, "no transport '%s' on device '%s' (is it loaded? run through "
           "uccl-run; `ucx_info -d` lists what UCX sees)", tl, dev);
}

static ucs_status_t pp_am_cb(void *arg, void *data, size_t length,
                             unsigned flags)
{
    pp_t *pp = arg;
    uint64_t hdr;

    if (length < sizeof(hdr)) {
        ++pp->bad;
        pp->got = 1;
        return UCS_OK;
    }
    memcpy(&hdr, data, sizeof(hdr));
    length -= sizeof(hdr);
    /* the payload of message seq is pattern(seq) */
    if (pp_count_bad((uint8_t*)data + sizeof(hdr), length, hdr >> 8) != 0) {
        ++pp->bad;
    }
    pp->got_hdr = hdr;
    pp->got_len = length;
    pp->got     = 1;
    return UCS_OK;
}

/* What this example uses of a transport. */
static const struct {
    uint64_t   flag;
    const char *name;
} pp_caps[] = {
    { UCT_IFACE_FLAG_CONNECT_TO_IFACE, "connect to iface" },
    { UCT_IFACE_FLAG_AM_SHORT,         "AM short" },
    { UCT_IFACE_FLAG_AM_BCOPY,         "AM bcopy" },
    { UCT_IFACE_FLAG_PUT_ZCOPY,        "PUT zcopy" },
    { UCT_IFACE_FLAG_CB_SYNC,          "sync callbacks" }
};

static void pp_open_iface(pp_t *pp, const char *tl, const char *dev)
{
    uct_iface_params_t params = {
        .field_mask  = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                       UCT_IFACE_PARAM_FIELD_DEVICE |
                       UCT_IFACE_PARAM_FIELD_RX_HEADROOM,
        .open_mode   = UCT_IFACE_OPEN_MODE_DEVICE,
        .mode.device = { .tl_name = tl, .dev_name = dev },
        .rx_headroom = 0
    };
    uct_iface_config_t *config;
    unsigned i;

    pp_check(pp, ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                          &pp->async), "async context");
    pp_check(pp, uct_worker_create(pp->async, UCS_THREAD_MODE_SINGLE,
                                   &pp->worker), "uct_worker_create");
    pp_open_md(pp, tl, dev);
    pp_check(pp, uct_md_iface_config_read(pp->md, tl, NULL, NULL, &config),
             "uct_md_iface_config_read");
    pp_check(pp, uct_iface_open(pp->md, pp->worker, &params, config,
                                &pp->iface), "uct_iface_open");
    uct_config_release(config);
    pp_check(pp, uct_iface_query(pp->iface, &pp->attr), "uct_iface_query");
    for (i = 0; i < sizeof(pp_caps) / sizeof(pp_caps[0]); ++i) {
        if (!(pp->attr.cap.flags & pp_caps[i].flag)) {
            pp_die(pp, "%s/%s has no %s, which this example needs", tl, dev,
                   pp_caps[i].name);
        }
    }
    pp_check(pp, uct_iface_set_am_handler(pp->iface, PP_AM_ID, pp_am_cb, pp,
                                          0), "uct_iface_set_am_handler");
    uct_iface_progress_enable(pp->iface, UCT_PROGRESS_SEND |
                              UCT_PROGRESS_RECV);
}

/* Swap addresses with the peer and connect our ep to its iface. */
static void pp_connect(pp_t *pp)
{
    uct_ep_params_t params = {
        .field_mask = UCT_EP_PARAM_FIELD_IFACE |
                      UCT_EP_PARAM_FIELD_DEV_ADDR |
                      UCT_EP_PARAM_FIELD_IFACE_ADDR,
        .iface      = pp->iface
    };
    void *dev = malloc(pp->attr.device_addr_len + 1);
    void *ifa = malloc(pp->attr.iface_addr_len + 1);
    void *peer_dev, *peer_ifa;
    size_t len;

    if ((dev == NULL) || (ifa == NULL)) {
        pp_die(pp, "out of memory");
    }
    pp_check(pp, uct_iface_get_device_address(pp->iface, dev),
             "uct_iface_get_device_address");
    pp_check(pp, uct_iface_get_address(pp->iface, ifa),
             "uct_iface_get_address");
    pp_sock_send_blob(pp, dev, pp->attr.device_addr_len);
    pp_sock_send_blob(pp, ifa, pp->attr.iface_addr_len);
    peer_dev = pp_sock_recv_blob(pp, &len);
    peer_ifa = pp_sock_recv_blob(pp, &len);
    if (!uct_iface_is_reachable(pp->iface, peer_dev, peer_ifa)) {
        pp_die(pp, "the peer's interface is not reachable from here (same "
               "transport, device and fabric on both sides?)");
    }
    params.dev_addr   = peer_dev;
    params.iface_addr = peer_ifa;
    pp_check(pp, uct_ep_create(&params, &pp->ep), "uct_ep_create");
    free(dev);
    free(ifa);
    free(peer_dev);
    free(peer_ifa);
}

static void pp_flush_done(uct_completion_t *comp)
{
}

static void pp_flush(pp_t *pp)
{
    uct_completion_t comp = { .func = pp_flush_done, .count = 1,
                              .status = UCS_OK };
    double deadline = pp_now() + PP_IDLE_S;
    ucs_status_t status;

    for (;;) {
        status = uct_ep_flush(pp->ep, 0, &comp);
        if (status == UCS_OK) {
            return;
        } else if (status == UCS_INPROGRESS) {
            break;
        } else if (status != UCS_ERR_NO_RESOURCE) {
            pp_check(pp, status, "uct_ep_flush");
        }
        uct_worker_progress(pp->worker);
    }
    while (comp.count > 0) {
        uct_worker_progress(pp->worker);
        if (pp_now() > deadline) {
            pp_die(pp, "flush did not complete in %d s", PP_IDLE_S);
        }
    }
    pp_check(pp, comp.status, "flush");
}

/* --- active messages --- */

typedef struct {
    uint64_t hdr;
    size_t   len;
} pp_pack_arg_t;

static size_t pp_pack(void *dest, void *arg)
{
    pp_pack_arg_t *a = arg;

    memcpy(dest, &a->hdr, sizeof(a->hdr));
    pp_fill((uint8_t*)dest + sizeof(a->hdr), a->len, a->hdr >> 8);
    return sizeof(a->hdr) + a->len;
}

/* Send one message `kind` number `seq` of `len` payload bytes. */
static void pp_am_send(pp_t *pp, uint64_t kind, uint64_t seq, size_t len,
                       const uint8_t *payload)
{
    pp_pack_arg_t a = { .hdr = (seq << 8) | kind, .len = len };
    double deadline = pp_now() + PP_IDLE_S;
    ucs_status_t status;
    ssize_t packed;

    for (;;) {
        if (sizeof(a.hdr) + len <= pp->attr.cap.am.max_short) {
            status = uct_ep_am_short(pp->ep, PP_AM_ID, a.hdr, payload, len);
        } else {
            packed = uct_ep_am_bcopy(pp->ep, PP_AM_ID, pp_pack, &a, 0);
            status = (packed < 0) ? (ucs_status_t)packed : UCS_OK;
        }
        if (status != UCS_ERR_NO_RESOURCE) {
            break;
        }
        uct_worker_progress(pp->worker);
        if (pp_now() > deadline) {
            pp_die(pp, "no send resources for %d s", PP_IDLE_S);
        }
    }
    pp_check(pp, status, "active message send");
}

static void pp_am_wait(pp_t *pp, uint64_t kind, uint64_t seq, size_t len)
{
    double deadline = pp_now() + PP_IDLE_S;

    while (!pp->got) {
        uct_worker_progress(pp->worker);
        if (pp_now() > deadline) {
            pp_die(pp, "no message %llu within %d s",
                   (unsigned long long)seq, PP_IDLE_S);
        }
    }
    pp->got = 0;
    if ((pp->got_hdr != ((seq << 8) | kind)) || (pp->got_len != len) ||
        pp->bad) {
        pp_die(pp, "message %llu: got header 0x%llx length %zu%s, expected "
               "0x%llx length %zu", (unsigned long long)seq,
               (unsigned long long)pp->got_hdr, pp->got_len,
               pp->bad ? " with corrupt payload" : "",
               (unsigned long long)((seq << 8) | kind), len);
    }
}

/* --- server --- */

static void pp_server(pp_t *pp)
{
    uint8_t *win = malloc(PP_WINDOW), *payload = NULL;
    uint8_t rkey[pp->md_attr.rkey_packed_size + 1];
    uint64_t addr = (uintptr_t)win, bad;
    uct_mem_h memh;
    pp_cmd_t cmd;
    uint32_t i;

    if (win == NULL) {
        pp_die(pp, "out of memory");
    }
    memset(win, 0, PP_WINDOW);
    pp_check(pp, uct_md_mem_reg(pp->md, win, PP_WINDOW, UCT_MD_MEM_ACCESS_ALL,
                                &memh), "uct_md_mem_reg");
    pp_check(pp, uct_md_mkey_pack(pp->md, memh, rkey), "uct_md_mkey_pack");
    pp_sock_send(pp, &addr, sizeof(addr));
    pp_sock_send_blob(pp, rkey, pp->md_attr.rkey_packed_size);

    for (;;) {
        pp_sock_recv(pp, &cmd, sizeof(cmd));
        switch (cmd.op) {
        case PP_OP_LAT:
            free(payload);
            payload = malloc(cmd.size + 1);
            if (payload == NULL) {
                pp_die(pp, "out of memory");
            }
            for (i = 0; i < cmd.iters; ++i) {
                pp_am_wait(pp, PP_PING, i, cmd.size);
                pp_fill(payload, cmd.size, i);
                pp_am_send(pp, PP_PONG, i, cmd.size, payload);
            }
            break;
        case PP_OP_BW:
            /* a clean window for every size, so stale data cannot pass */
            memset(win, 0, PP_WINDOW);
            pp_sock_send(pp, &cmd, sizeof(cmd));
            break;
        case PP_OP_BW_CHECK:
            bad = pp_count_bad(win, cmd.size, 7);
            pp_sock_send(pp, &bad, sizeof(bad));
            break;
        case PP_OP_END:
            pp_flush(pp);
            pp_sock_send(pp, &cmd, sizeof(cmd));
            free(payload);
            uct_md_mem_dereg(pp->md, memh);
            free(win);
            return;
        default:
            pp_die(pp, "unknown command %u", cmd.op);
        }
    }
}

/* --- client --- */

static void pp_latency(pp_t *pp, size_t size, uint32_t iters)
{
    uint8_t *payload = malloc(size + 1);
    pp_cmd_t cmd = { .op = PP_OP_LAT, .iters = iters, .size = size };
    uint32_t i, warm = iters / 10;
    double t0 = 0;

    if (payload == NULL) {
        pp_die(pp, "out of memory");
    }
    pp_sock_send(pp, &cmd, sizeof(cmd));
    for (i = 0; i < iters; ++i) {
        if (i == warm) {
            t0 = pp_now();
        }
        pp_fill(payload, size, i);
        pp_am_send(pp, PP_PING, i, size, payload);
        pp_am_wait(pp, PP_PONG, i, size);
    }
    printf("  %-9zu %-9s %10.2f %10u\n", size,
           (sizeof(uint64_t) + size <= pp->attr.cap.am.max_short) ?
           "am_short" : "am_bcopy",
           (pp_now() - t0) * 1e6 / 2 / (iters - warm), iters);
    fflush(stdout);
    free(payload);
}

static void pp_bandwidth(pp_t *pp, uint64_t raddr, uct_rkey_t rkey,
                         const uint8_t *src, uct_mem_h memh, size_t size,
                         size_t total)
{
    pp_cmd_t cmd = { .op = PP_OP_BW, .size = size };
    size_t max_zcopy = pp->attr.cap.put.max_zcopy, n, off, slot, done = 0;
    size_t slots = PP_WINDOW / size;
    double t0, deadline, secs;
    ucs_status_t status;
    uct_iov_t iov;
    uint64_t bad;

    pp_sock_send(pp, &cmd, sizeof(cmd));
    pp_sock_recv(pp, &cmd, sizeof(cmd));

    t0 = pp_now();
    for (slot = 0; done < total; slot = (slot + 1) % slots) {
        for (off = 0; off < size; off += n) {
            n   = (size - off < max_zcopy) ? size - off : max_zcopy;
            iov = (uct_iov_t){ .buffer = (void*)(src + slot * size + off),
                               .length = n, .memh = memh, .count = 1 };
            deadline = pp_now() + PP_IDLE_S;
            /* completion through the final flush: the source never
             * changes, so nothing waits for a single put */
            while ((status = uct_ep_put_zcopy(pp->ep, &iov, 1,
                                              raddr + slot * size + off,
                                              rkey, NULL)) ==
                   UCS_ERR_NO_RESOURCE) {
                uct_worker_progress(pp->worker);
                if (pp_now() > deadline) {
                    pp_die(pp, "put: no resources for %d s", PP_IDLE_S);
                }
            }
            if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
                pp_check(pp, status, "uct_ep_put_zcopy");
            }
        }
        done += size;
    }
    pp_flush(pp);
    secs = pp_now() - t0;

    cmd.op   = PP_OP_BW_CHECK;
    cmd.size = (done / size < slots ? done / size : slots) * size;
    pp_sock_send(pp, &cmd, sizeof(cmd));
    pp_sock_recv(pp, &bad, sizeof(bad));
    printf("  %-9zu %-9s %10.1f %10.0f %s\n", size, "put_zcopy",
           done / secs / 1e6, done / 1e6,
           bad ? "BAD DATA" : "ok");
    fflush(stdout);
    if (bad) {
        pp_die(pp, "%llu of %zu bytes of the server's window differ after "
               "put %zu + flush", (unsigned long long)bad, (size_t)cmd.size,
               size);
    }
}

static void pp_client(pp_t *pp, const char *tl, const char *dev)
{
    static const size_t lat_sizes[] = { 8, 64, 256, 1024, 4096, 8192 };
    static const size_t bw_sizes[] = { 8192, 65536, 1 << 20, 4 << 20 };
    uint8_t *src = malloc(PP_WINDOW);
    uct_rkey_bundle_t rkey;
    pp_cmd_t cmd = { .op = PP_OP_END };
    uint64_t raddr;
    uct_mem_h memh;
    size_t i, len;
    void *packed;

    if (src == NULL) {
        pp_die(pp, "out of memory");
    }
    pp_fill(src, PP_WINDOW, 7);
    pp_sock_recv(pp, &raddr, sizeof(raddr));
    packed = pp_sock_recv_blob(pp, &len);
    pp_check(pp, uct_rkey_unpack(pp->component, packed, &rkey),
             "uct_rkey_unpack");
    free(packed);
    pp_check(pp, uct_md_mem_reg(pp->md, src, PP_WINDOW, UCT_MD_MEM_ACCESS_ALL,
                                &memh), "uct_md_mem_reg");

    printf("uct_pingpong: %s/%s, am max short %zu bcopy %zu, put max "
           "zcopy %zu\n", tl, dev, pp->attr.cap.am.max_short,
           pp->attr.cap.am.max_bcopy, pp->attr.cap.put.max_zcopy);
    printf("  %-9s %-9s %10s %10s\n", "bytes", "method", "lat (us)",
           "iters");
    for (i = 0; i < sizeof(lat_sizes) / sizeof(lat_sizes[0]); ++i) {
        if (sizeof(uint64_t) + lat_sizes[i] <= pp->attr.cap.am.max_bcopy) {
            pp_latency(pp, lat_sizes[i], 2000);
        }
    }
    printf("  %-9s %-9s %10s %10s %s\n", "bytes", "method", "MB/s",
           "MB moved", "window");
    for (i = 0; i < sizeof(bw_sizes) / sizeof(bw_sizes[0]); ++i) {
        pp_bandwidth(pp, raddr, rkey.rkey, src, memh, bw_sizes[i],
                     256ul << 20);
    }

    pp_sock_send(pp, &cmd, sizeof(cmd));
    pp_sock_recv(pp, &cmd, sizeof(cmd));
    uct_rkey_release(pp->component, &rkey);
    uct_md_mem_dereg(pp->md, memh);
    free(src);
    printf("uct_pingpong: all pings, pongs and windows verified\n");
}

static void pp_close(pp_t *pp)
{
    uct_ep_destroy(pp->ep);
    uct_iface_close(pp->iface);
    uct_md_close(pp->md);
    uct_worker_destroy(pp->worker);
    ucs_async_context_destroy(pp->async);
    close(pp->sock);
}

/* --- sockets and main --- */

/* Listen on PORT (0: any; the port goes to port_fd if >= 0, and then the
 * client must come within PP_IDLE_S), accept one. */
static void pp_listen(pp_t *pp, int port, int port_fd)
{
    struct pollfd pfd;
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_port   = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_ANY) };
    socklen_t len = sizeof(sa);
    int lfd, one = 1;
    uint16_t p;

    lfd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if ((lfd < 0) || bind(lfd, (struct sockaddr*)&sa, sizeof(sa)) ||
        listen(lfd, 1) || getsockname(lfd, (struct sockaddr*)&sa, &len)) {
        pp_die(pp, "listen on port %d: %s", port, strerror(errno));
    }
    p = ntohs(sa.sin_port);
    if (port_fd >= 0) {
        if (write(port_fd, &p, sizeof(p)) != sizeof(p)) {
            pp_die(pp, "cannot pass the port on");
        }
        close(port_fd);
    } else {
        printf("server: waiting on port %u\n", p);
        fflush(stdout);
    }
    pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
    if ((port_fd >= 0) && (poll(&pfd, 1, PP_IDLE_S * 1000) != 1)) {
        pp_die(pp, "no client within %d s", PP_IDLE_S);
    }
    pp->sock = accept(lfd, NULL, NULL);
    if (pp->sock < 0) {
        pp_die(pp, "accept: %s", strerror(errno));
    }
    close(lfd);
}

static void pp_dial(pp_t *pp, const char *host, int port)
{
    struct addrinfo hints = { .ai_family = AF_INET,
                              .ai_socktype = SOCK_STREAM }, *ai;
    char service[16];
    int ret;

    snprintf(service, sizeof(service), "%d", port);
    ret = getaddrinfo(host, service, &hints, &ai);
    if (ret != 0) {
        pp_die(pp, "%s: %s", host, gai_strerror(ret));
    }
    pp->sock = socket(AF_INET, SOCK_STREAM, 0);
    if ((pp->sock < 0) || connect(pp->sock, ai->ai_addr, ai->ai_addrlen)) {
        pp_die(pp, "connect to %s:%d: %s", host, port, strerror(errno));
    }
    freeaddrinfo(ai);
}

static void pp_run(pp_t *pp, int server, const char *tl, const char *dev)
{
    pp_open_iface(pp, tl, dev);
    pp_connect(pp);
    if (server) {
        pp_server(pp);
    } else {
        pp_client(pp, tl, dev);
    }
    pp_close(pp);
}

int main(int argc, char **argv)
{
    pp_t pp = { .who = "client", .sock = -1 };
    const char *tl = "uccl", *dev = "sv0:1", *host = NULL;
    int c, server = 0, port = 13371, pfd[2], status;
    uint16_t p;
    pid_t pid;

    while ((c = getopt(argc, argv, "lc:p:t:d:h")) != -1) {
        switch (c) {
        case 'l': server = 1; break;
        case 'c': host = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 't': tl = optarg; break;
        case 'd': dev = optarg; break;
        default:
            fprintf(stderr, "usage: uct_pingpong [-l | -c HOST] [-p PORT] "
                    "[-t TL] [-d DEV]\n"
                    "  no -l/-c: server and client in one command\n");
            return 2;
        }
    }
    if ((optind != argc) || (server && (host != NULL)) || (port < 0) ||
        (port > 65535)) {
        fprintf(stderr, "uct_pingpong: bad arguments (-h for help)\n");
        return 2;
    }
    if (server) {
        pp.who = "server";
        pp_listen(&pp, port, -1);
        pp_run(&pp, 1, tl, dev);
        return 0;
    } else if (host != NULL) {
        pp_dial(&pp, host, port);
        pp_run(&pp, 0, tl, dev);
        return 0;
    }

    /* both ends: fork before UCX is touched; the child serves */
    if (pipe(pfd)) {
        pp_die(&pp, "pipe: %s", strerror(errno));
    }
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        pp_die(&pp, "fork: %s", strerror(errno));
    } else if (pid == 0) {
        close(pfd[0]);
        pp.who = "server";
        pp_listen(&pp, 0, pfd[1]);
        pp_run(&pp, 1, tl, dev);
        fflush(stdout);
        _exit(0);
    }
    close(pfd[1]);
    if (read(pfd[0], &p, sizeof(p)) != sizeof(p)) {
        pp_die(&pp, "the server did not start");
    }
    close(pfd[0]);
    pp_dial(&pp, "127.0.0.1", p);
    pp_run(&pp, 0, tl, dev);
    return ((waitpid(pid, &status, 0) == pid) && WIFEXITED(status) &&
            (WEXITSTATUS(status) == 0)) ? 0 : 1;
}

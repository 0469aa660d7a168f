/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Two-process UCT test harness (see uct_harness.h).
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include "uct_harness.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define UH_CONNECT_TRIES  300   /* every 100 ms: the server may start late */
#define UH_WAIT_S         60

uh_t uh = {
    .name = "uct_test", .host = "localhost", .port = 13377, .dev = "sv0:1",
    .seed = 1, .buf_size = 8u << 20, .sock = -1
};

void uh_die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (uh.local) {
        fprintf(stderr, "%s: FAIL (seed %u): ", uh.name, uh.seed);
    } else {
        fprintf(stderr, "%s[%s] FAIL (seed %u): ", uh.name,
                uh.server ? "server" : "client", uh.seed);
    }
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

void uh_check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        uh_die("%s: %s", what, ucs_status_string(status));
    }
}

double uh_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

uint8_t uh_pattern(unsigned who, uint64_t offset)
{
    uint64_t x = (offset + 1) * 0x9e3779b97f4a7c15ull ^ (who * 0x5bd1e995u);

    return (uint8_t)(x >> 29);
}

unsigned uh_rnd(unsigned *state, unsigned max)
{
    *state = *state * 1103515245u + 12345u;
    return (*state >> 8) % max;
}

void uh_xfer(void *data, size_t len, int send)
{
    char *p = data;
    ssize_t n;

    while (len > 0) {
        n = send ? write(uh.sock, p, len) : read(uh.sock, p, len);
        if (n <= 0) {
            uh_die("socket %s failed", send ? "write" : "read");
        }
        p   += n;
        len -= n;
    }
}

int uh_peer_gone(void)
{
    char c;

    return recv(uh.sock, &c, 1, MSG_DONTWAIT) == 0;
}

static void uh_sock_listen(struct sockaddr_in *addr)
{
    int one = 1, lsock;

    lsock = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    addr->sin_addr.s_addr = INADDR_ANY;
    if (bind(lsock, (void*)addr, sizeof(*addr)) || listen(lsock, 1)) {
        uh_die("cannot listen on port %d", uh.port);
    }
    uh.sock = accept(lsock, NULL, NULL);
    close(lsock);
}

static void uh_sock_connect(struct sockaddr_in *addr)
{
    struct hostent *he = gethostbyname(uh.host);
    int i;

    if (he == NULL) {
        uh_die("unknown host %s", uh.host);
    }
    memcpy(&addr->sin_addr, he->h_addr_list[0], he->h_length);
    for (i = 0; i < UH_CONNECT_TRIES; ++i) {
        uh.sock = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(uh.sock, (void*)addr, sizeof(*addr)) == 0) {
            return;
        }
        close(uh.sock);
        uh.sock = -1;
        usleep(100000);
    }
}

static void uh_sock_open(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET };
    int one = 1;

    addr.sin_port = htons(uh.port);
    if (uh.server) {
        uh_sock_listen(&addr);
    } else {
        uh_sock_connect(&addr);
    }
    if (uh.sock < 0) {
        uh_die("no connection on port %d", uh.port);
    }
    setsockopt(uh.sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static ucs_status_t uh_err_handler(void *arg, uct_ep_h ep,
                                   ucs_status_t status)
{
    if (!uh.ep_error) {
        uh.err_ep        = ep;
        uh.ep_error_time = uh_now();
        uh.ep_status     = status;
        uh.ep_error      = 1;
    }
    if (uh.destroy_on_error && (ep == uh.ep)) {
        uct_ep_destroy(ep);     /* what UCP does with a failed lane */
        uh.ep = NULL;
    }
    return UCS_OK;
}

static void uh_find_component(void)
{
    uct_component_h *components;
    uct_component_attr_t cattr;
    unsigned i, num;

    uh_check(uct_query_components(&components, &num), "uct_query_components");
    for (i = 0; i < num; ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                           UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        uh_check(uct_component_query(components[i], &cattr),
                 "component query");
        if (!strcmp(cattr.name, "uccl")) {
            uh.component = components[i];
        }
    }
    uct_release_component_list(components);
    if (uh.component == NULL) {
        uh_die("no uccl component: run under uccl-run");
    }
}

/* "NAME=VALUE" into a UCT config */
static void uh_config_set(void *config, const char *setting)
{
    char name[64], *eq;

    snprintf(name, sizeof(name), "%s", setting);
    eq = strchr(name, '=');
    if (eq == NULL) {
        uh_die("setting '%s' is not NAME=VALUE", setting);
    }
    *eq = '\0';
    uh_check(uct_config_modify(config, name, eq + 1), setting);
}

/* uh.dev's md, with a "NAME=VALUE" setting or NULL */
static void uh_open_md(const char *md_setting)
{
    uct_md_config_t *md_config;
    char md_name[64];

    snprintf(md_name, sizeof(md_name), "%s", uh.dev);
    *strchrnul(md_name, ':') = '\0';
    uh_check(uct_md_config_read(uh.component, NULL, NULL, &md_config),
             "md config");
    if (md_setting != NULL) {
        uh_config_set(md_config, md_setting);
    }
    uh_check(uct_md_open(uh.component, md_name, md_config, &uh.md),
             "md open");
    uct_config_release(md_config);
    uh_check(uct_md_query(uh.md, &uh.md_attr), "md query");
}

void uh_iface_open(uct_iface_h *iface_p, uct_iface_attr_t *attr_p)
{
    uct_iface_config_t *iface_config;
    uct_iface_params_t params = {
        .field_mask            = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                 UCT_IFACE_PARAM_FIELD_DEVICE |
                                 UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                 UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                 UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS,
        .open_mode             = UCT_IFACE_OPEN_MODE_DEVICE,
        .mode.device.tl_name   = "uccl",
        .mode.device.dev_name  = uh.dev,
        .err_handler           = uh_err_handler,
        .err_handler_arg       = NULL,
        .err_handler_flags     = 0
    };

    uh_check(uct_md_iface_config_read(uh.md, "uccl", NULL, NULL,
                                      &iface_config), "iface config");
    uh_check(uct_iface_open(uh.md, uh.worker, &params, iface_config,
                            iface_p), "iface open");
    uct_config_release(iface_config);
    uh_check(uct_iface_query(*iface_p, attr_p), "iface query");
    uct_iface_progress_enable(*iface_p, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

/* the md, the async context and the worker */
static void uh_open_worker(const char *md_setting)
{
    uh_find_component();
    uh_open_md(md_setting);
    uh_check(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &uh.async), "async");
    uh_check(uct_worker_create(uh.async, UCS_THREAD_MODE_SINGLE, &uh.worker),
             "worker");
}

void uh_setup(void)
{
    uh_open_worker(NULL);
    uh_iface_open(&uh.iface, &uh.iface_attr);
    if (uh.buf_mmap) {
        uh.buf = mmap(NULL, uh.buf_size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (uh.buf == MAP_FAILED) {
            uh_die("mmap: %m");
        }
    } else if (posix_memalign((void**)&uh.buf, 4096, uh.buf_size)) {
        uh_die("no memory");
    }
    memset(uh.buf, 0, uh.buf_size);
    uh_check(uct_md_mem_reg(uh.md, uh.buf, uh.buf_size,
                            UCT_MD_MEM_ACCESS_ALL, &uh.memh), "mem reg");
}

void uh_exchange(void)
{
    uh_exchange_info();
    if (!uct_iface_is_reachable(uh.iface, (void*)uh.peer.dev,
                                (void*)uh.peer.iface)) {
        uh_die("peer is not reachable");
    }
    uh_check(uct_rkey_unpack(uh.component, uh.peer.rkey, &uh.rkey),
             "rkey unpack");
    uh_ep_connect();
}

void uh_exchange_info(void)
{
    uh_peer_t me;

    memset(&me, 0, sizeof(me));
    if (uh.iface == NULL) {     /* a peer without UCX (a raw verbs one) */
        uh_sock_open();
        uh_xfer(&uh.raw_me, sizeof(uh.raw_me), 1);
        uh_xfer(&uh.peer, sizeof(uh.peer), 0);
        return;
    }
    me.buf_addr  = (uintptr_t)uh.buf;
    me.dev_len   = uh.iface_attr.device_addr_len;
    me.iface_len = uh.iface_attr.iface_addr_len;
    me.rkey_len  = uh.md_attr.rkey_packed_size;
    if ((me.dev_len > UH_ADDR_MAX) || (me.iface_len > UH_ADDR_MAX) ||
        (me.rkey_len > UH_ADDR_MAX)) {
        uh_die("addresses too long");
    }
    uh_check(uct_iface_get_device_address(uh.iface, (void*)me.dev),
             "dev addr");
    uh_check(uct_iface_get_address(uh.iface, (void*)me.iface), "iface addr");
    uh_check(uct_md_mkey_pack(uh.md, uh.memh, me.rkey), "mkey pack");

    uh_sock_open();
    uh_xfer(&me, sizeof(me), 1);
    uh_xfer(&uh.peer, sizeof(uh.peer), 0);
}

uct_ep_h uh_ep_create(void)
{
    uct_ep_params_t ep_params = {
        .field_mask = UCT_EP_PARAM_FIELD_IFACE |
                      UCT_EP_PARAM_FIELD_DEV_ADDR |
                      UCT_EP_PARAM_FIELD_IFACE_ADDR,
        .iface      = uh.iface,
        .dev_addr   = (void*)uh.peer.dev,
        .iface_addr = (void*)uh.peer.iface
    };
    uct_ep_h ep;

    uh_check(uct_ep_create(&ep_params, &ep), "ep create");
    return ep;
}

void uh_ep_connect(void)
{
    uh.ep = uh_ep_create();
}

void uh_teardown(void)
{
    if (uh.ep != NULL) {
        uct_ep_destroy(uh.ep);
        uct_rkey_release(uh.component, &uh.rkey);
    }
    uct_md_mem_dereg(uh.md, uh.memh);
    uct_iface_close(uh.iface);
    uct_worker_destroy(uh.worker);
    ucs_async_context_destroy(uh.async);
    uct_md_close(uh.md);
    close(uh.sock);
    if (uh.buf == NULL) {
        return; /* unmapped by the test */
    }
    if (uh.buf_mmap) {
        munmap(uh.buf, uh.buf_size);
    } else {
        free(uh.buf);
    }
}

static void uh_req_cb(uct_completion_t *self)
{
    uh_req_t *req = ucs_container_of(self, uh_req_t, comp);

    ++req->done;
}

void uh_req_init(uh_req_t *req)
{
    req->comp.func   = uh_req_cb;
    req->comp.count  = 1;
    req->comp.status = UCS_OK;
    req->done        = 0;
}

void uh_progress(void)
{
    uct_worker_progress(uh.worker);
}

void uh_wait(uh_req_t *req, ucs_status_t status, const char *what)
{
    double deadline = uh_now() + UH_WAIT_S;

    if (status == UCS_OK) {
        return;
    }
    if (status != UCS_INPROGRESS) {
        uh_die("%s: %s", what, ucs_status_string(status));
    }
    while (!req->done) {
        uh_progress();
        if (uh_now() > deadline) {
            uh_die("%s: no completion after %d s", what, UH_WAIT_S);
        }
    }
    if (req->comp.status != UCS_OK) {
        uh_die("%s completed with %s", what,
               ucs_status_string(req->comp.status));
    }
}

void uh_flush(void)
{
    uh_req_t req;

    uh_req_init(&req);
    uh_wait(&req, UH_RETRY("flush", uct_ep_flush(uh.ep, 0, &req.comp)),
            "flush");
}

void uh_finish(void)
{
    uint8_t mine = 'F', theirs;

    uh_flush();
    uh_xfer(&mine, 1, 1);
    uh_xfer(&theirs, 1, 0);
}

void uh_iov(uct_iov_t *iov, void *buffer, size_t length)
{
    iov->buffer = buffer;
    iov->length = length;
    iov->memh   = uh.memh;
    iov->stride = 0;
    iov->count  = 1;
}

size_t uh_pack(void *dest, void *arg)
{
    uh_pack_arg_t *p = arg;

    memcpy(dest, p->src, p->len);
    return p->len;
}

void uh_unpack(void *arg, const void *data, size_t length)
{
    memcpy(*(uint8_t**)arg, data, length);
}

void uh_local_init(const char *md_setting)
{
    uh.local = 1;
    uh_open_worker(md_setting);
}

ucs_status_t uh_local_iface_open(uh_iface_t *ifc,
                                 const uct_iface_params_t *params,
                                 const char *const *settings)
{
    uct_iface_config_t *config;
    ucs_status_t status;

    uh_check(uct_md_iface_config_read(uh.md, "uccl", NULL, NULL, &config),
             "iface config");
    for (; (settings != NULL) && (*settings != NULL); ++settings) {
        uh_config_set(config, *settings);
    }
    status = uct_iface_open(uh.md, uh.worker, params, config, &ifc->iface);
    uct_config_release(config);
    if (status != UCS_OK) {
        return status;
    }

    uh_check(uct_iface_query(ifc->iface, &ifc->attr), "iface query");
    if ((ifc->attr.device_addr_len > UH_ADDR_MAX) ||
        (ifc->attr.iface_addr_len > UH_ADDR_MAX)) {
        uh_die("addresses too long");
    }
    uh_check(uct_iface_get_device_address(ifc->iface, (void*)ifc->dev_addr),
             "device address");
    uh_check(uct_iface_get_address(ifc->iface, (void*)ifc->iface_addr),
             "iface address");
    uct_iface_progress_enable(ifc->iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return UCS_OK;
}

uct_ep_h uh_local_ep(const uh_iface_t *from, const uh_iface_t *to)
{
    uct_ep_params_t params = {
        .field_mask = UCT_EP_PARAM_FIELD_IFACE |
                      UCT_EP_PARAM_FIELD_DEV_ADDR |
                      UCT_EP_PARAM_FIELD_IFACE_ADDR,
        .iface      = from->iface,
        .dev_addr   = (const void*)to->dev_addr,
        .iface_addr = (const void*)to->iface_addr
    };
    uct_ep_h ep;

    uh_check(uct_ep_create(&params, &ep), "ep create");
    return ep;
}

void uh_local_cleanup(void)
{
    uct_worker_destroy(uh.worker);
    ucs_async_context_destroy(uh.async);
    uct_md_close(uh.md);
}

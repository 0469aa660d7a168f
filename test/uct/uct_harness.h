/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * What the UCT test programs share: a uccl md/iface/ep between a server
 * and a client, addresses and keys exchanged over a TCP socket, one
 * registered buffer on each side, completion waiting and retries; and for
 * the single-process tests, the md, worker, ifaces and eps between them in
 * one process (uh_local_*).
 */
#ifndef UCCL_TEST_UCT_HARNESS_H_
#define UCCL_TEST_UCT_HARNESS_H_

#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <stddef.h>
#include <stdint.h>

#define UH_ADDR_MAX  256

typedef struct {
    uint64_t buf_addr;
    uint32_t dev_len, iface_len, rkey_len;
    uint8_t  dev[UH_ADDR_MAX], iface[UH_ADDR_MAX], rkey[UH_ADDR_MAX];
} uh_peer_t;

typedef struct {
    /* set by the program before uh_setup() */
    const char          *name;       /* for messages */
    int                 server;
    int                 local;       /* one process: no server or client */
    const char          *host;
    int                 port;
    const char          *dev;
    unsigned            seed;
    size_t              buf_size;
    int                 buf_mmap;    /* buffer from mmap, not the heap */
    int                 destroy_on_error; /* the error handler destroys
                                             the failed ep */
    uh_peer_t           raw_me;      /* what a peer without UCX sends */

    /* filled by uh_setup() and uh_exchange() */
    uct_component_h     component;
    uct_md_h            md;
    uct_md_attr_t       md_attr;
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_iface_h         iface;
    uct_iface_attr_t    iface_attr;
    uct_ep_h            ep;
    uint8_t             *buf;
    uct_mem_h           memh;
    uct_rkey_bundle_t   rkey;
    uh_peer_t           peer;
    int                 sock;

    /* the iface's error handler (the first error) */
    uct_ep_h            err_ep;
    volatile int        ep_error;
    ucs_status_t        ep_status;
    double              ep_error_time;
} uh_t;

extern uh_t uh;

void uh_die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void uh_check(ucs_status_t status, const char *what);
double uh_now(void);
/* the byte `who` writes at `offset` */
uint8_t uh_pattern(unsigned who, uint64_t offset);
/* a seeded random number below max */
unsigned uh_rnd(unsigned *state, unsigned max);

/* uccl md, worker, iface (with the error handler), the registered buffer */
void uh_setup(void);
/* TCP connection, addresses and rkeys both ways, then the ep */
void uh_exchange(void);
/* only the TCP connection and the addresses (uh.peer) */
void uh_exchange_info(void);
/* one more iface on the same md and worker */
void uh_iface_open(uct_iface_h *iface_p, uct_iface_attr_t *attr_p);
/* a new ep to the peer's iface (uh.peer) */
uct_ep_h uh_ep_create(void);
void uh_ep_connect(void);
void uh_teardown(void);
/* both ways over the TCP socket */
void uh_xfer(void *data, size_t len, int send);
/* has the peer closed its socket (died)? */
int uh_peer_gone(void);

/* One process, several ifaces on one md and worker */
typedef struct {
    uct_iface_h         iface;
    uct_iface_attr_t    attr;
    uint8_t             dev_addr[UH_ADDR_MAX];
    uint8_t             iface_addr[UH_ADDR_MAX];
} uh_iface_t;

/* uh.md (of uh.dev's device, with a "NAME=VALUE" md setting or NULL),
 * uh.async and uh.worker */
void uh_local_init(const char *md_setting);
/* an iface of uh.md on uh.worker with params and the "NAME=VALUE" iface
 * settings of a NULL-ended list (or NULL), queried, its addresses read,
 * progress enabled; what uct_iface_open returned */
ucs_status_t uh_local_iface_open(uh_iface_t *ifc,
                                 const uct_iface_params_t *params,
                                 const char *const *settings);
/* an ep of `from` to `to`'s address */
uct_ep_h uh_local_ep(const uh_iface_t *from, const uh_iface_t *to);
/* the worker, the async context and the md (the ifaces closed before) */
void uh_local_cleanup(void);

typedef struct {
    uct_completion_t comp;
    int              done;
} uh_req_t;

void uh_req_init(uh_req_t *req);
void uh_progress(void);
/* wait for req if status is UCS_INPROGRESS; any error but OK dies */
void uh_wait(uh_req_t *req, ucs_status_t status, const char *what);
void uh_flush(void);
/* flush the ep, then wait for the peer to have flushed too: a closing
 * iface fails its peers' eps, so neither side closes before both are done */
void uh_finish(void);
void uh_iov(uct_iov_t *iov, void *buffer, size_t length);

/* bcopy helpers: pack_arg is {src, len}; unpack copies to *dst */
typedef struct {
    const uint8_t *src;
    size_t        len;
} uh_pack_arg_t;
size_t uh_pack(void *dest, void *arg);
void uh_unpack(void *arg, const void *data, size_t length);

/* retry an operation while the ep is connecting or its queue is full */
#define UH_RETRY(_what, _call) \
    ({ \
        __typeof__(_call) _s; \
        double _deadline = uh_now() + 60; \
        while ((_s = (_call)) == UCS_ERR_NO_RESOURCE) { \
            uh_progress(); \
            if (uh_now() > _deadline) { \
                uh_die("%s: no resources for 60 s", _what); \
            } \
        } \
        _s; \
    })

#endif

/*
 * RMA: each side maps a window and gives the peer its address and rkey.
 * Put: write each size at an odd offset of the peer's window, flush (ep and
 * worker flush alternate), then the peer checks its window. Get: the owner
 * fills its window, the peer reads it back and checks. Then many small puts
 * under one flush, and many gets in flight at once.
 */
#include "ucp_check.h"

#include <stdlib.h>
#include <string.h>

#define UC_RMA_SLACK  4096   /* room for the offsets */
#define UC_RMA_MANY   1000

typedef struct {
    uint8_t    *win;         /* our window, exposed to the peer */
    size_t     win_size;
    ucp_mem_h  memh;
    uint64_t   peer_win;     /* the peer's window address */
    ucp_rkey_h rkey;
    uint8_t    *local;       /* source of puts, target of gets */
} uc_rma_t;

static uint64_t uc_rma_stream(int owner, int op, size_t index)
{
    return (2ull << 40) | ((uint64_t)owner << 32) | ((uint64_t)op << 24) |
           index;
}

static void uc_rma_flush(uc_t *uc, int worker, const char *what)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };
    void *req;

    req = worker ? ucp_worker_flush_nbx(uc->worker, &param) :
                   ucp_ep_flush_nbx(uc->ep, &param);
    uc_check_status(uc, uc_wait(uc, req, what), what);
}

static void uc_rma_setup(uc_t *uc, uc_rma_t *r)
{
    ucp_mem_map_params_t mparams = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                      UCP_MEM_MAP_PARAM_FIELD_LENGTH,
    };
    uint64_t addr, rkey_len;
    void *rkey_buf;
    size_t len;

    r->win_size = uc->max_size + UC_RMA_SLACK;
    r->win      = uc_xmalloc(uc, r->win_size);
    r->local    = uc_xmalloc(uc, r->win_size);
    memset(r->win, 0, r->win_size);
    mparams.address = r->win;
    mparams.length  = r->win_size;
    uc_check_status(uc, ucp_mem_map(uc->context, &mparams, &r->memh),
                    "ucp_mem_map");
    uc_check_status(uc, ucp_rkey_pack(uc->context, r->memh, &rkey_buf, &len),
                    "ucp_rkey_pack");

    addr     = (uintptr_t)r->win;
    rkey_len = len;
    uc_oob_send(uc, &addr, sizeof(addr));
    uc_oob_send(uc, &rkey_len, sizeof(rkey_len));
    uc_oob_send(uc, rkey_buf, len);
    ucp_rkey_buffer_release(rkey_buf);

    uc_oob_recv(uc, &r->peer_win, sizeof(r->peer_win));
    uc_oob_recv(uc, &rkey_len, sizeof(rkey_len));
    if ((rkey_len == 0) || (rkey_len > 65536)) {
        uc_fail(uc, "peer sent an rkey of %llu bytes",
                (unsigned long long)rkey_len);
    }
    rkey_buf = uc_xmalloc(uc, rkey_len);
    uc_oob_recv(uc, rkey_buf, rkey_len);
    uc_check_status(uc, ucp_ep_rkey_unpack(uc->ep, rkey_buf, &r->rkey),
                    "ucp_ep_rkey_unpack");
    free(rkey_buf);
}

static void uc_rma_teardown(uc_t *uc, uc_rma_t *r)
{
    /* the peer must be done with our window before it goes */
    uc_oob_barrier(uc);
    ucp_rkey_destroy(r->rkey);
    ucp_mem_unmap(uc->context, r->memh);
    free(r->win);
    free(r->local);
}

static int uc_rma_put(uc_t *uc, uc_rma_t *r, size_t index, size_t size)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };
    size_t off = (index * 1031) % UC_RMA_SLACK;
    int worker = index & 1;
    void *req;

    uc_fill(r->local, size, uc->seed, uc_rma_stream(uc->server, 0, index),
            0);
    req = ucp_put_nbx(uc->ep, r->local, size, r->peer_win + off, r->rkey,
                      &param);
    uc_rma_flush(uc, worker, worker ? "worker flush after put" :
                                      "ep flush after put");
    uc_check_status(uc, uc_wait(uc, req, "put"), "put");
    uc_oob_barrier(uc);
    /* the peer put into our window at the same offset */
    return uc_verify(uc, r->win + off, size,
                     uc_rma_stream(!uc->server, 0, index), 0,
                     "window after peer's put");
}

static int uc_rma_get(uc_t *uc, uc_rma_t *r, size_t index, size_t size)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };
    size_t off = (index * 2053) % UC_RMA_SLACK;
    void *req;
    int ret;

    uc_fill(r->win + off, size, uc->seed,
            uc_rma_stream(uc->server, 1, index), 0);
    memset(r->local, 0x5a, size);
    uc_oob_barrier(uc);
    req = ucp_get_nbx(uc->ep, r->local, size, r->peer_win + off, r->rkey,
                      &param);
    if (index & 1) {
        uc_rma_flush(uc, 0, "ep flush after get");
    }
    uc_check_status(uc, uc_wait(uc, req, "get"), "get");
    ret = uc_verify(uc, r->local, size,
                    uc_rma_stream(!uc->server, 1, index), 0,
                    "data read with get");
    /* the peer may still be reading our window */
    uc_oob_barrier(uc);
    return ret;
}

/* Many small puts to disjoint places, completed by one flush. */
static int uc_rma_many_puts(uc_t *uc, uc_rma_t *r)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };
    size_t i, len, total = 0, nreqs = 0;
    void **reqs = uc_xmalloc(uc, 2 * UC_RMA_MANY * sizeof(*reqs));
    int ret;

    len = (UC_RMA_MANY * 64 < r->win_size) ? 64 : r->win_size / UC_RMA_MANY;
    uc_fill(r->local, len * UC_RMA_MANY, uc->seed,
            uc_rma_stream(uc->server, 2, 0), 0);
    for (i = 0; i < UC_RMA_MANY; ++i) {
        /* reverse order: a transport that reorders still ends the same */
        size_t j = UC_RMA_MANY - 1 - i, n = 8 + (j * 13) % (len - 7);
        reqs[nreqs++] = ucp_put_nbx(uc->ep, r->local + j * len, n,
                                    r->peer_win + j * len, r->rkey, &param);
        /* the rest of each slot gets its own put */
        if (n < len) {
            reqs[nreqs++] = ucp_put_nbx(uc->ep, r->local + j * len + n,
                                        len - n, r->peer_win + j * len + n,
                                        r->rkey, &param);
        }
        total += len;
    }
    uc_rma_flush(uc, 0, "ep flush after many puts");
    uc_check_status(uc, uc_wait_all(uc, reqs, nreqs, "put"), "put");
    free(reqs);
    uc_oob_barrier(uc);
    ret = uc_verify(uc, r->win, len * UC_RMA_MANY,
                    uc_rma_stream(!uc->server, 2, 0), 0,
                    "window after many small puts");
    if (ret == 0) {
        uc_log(uc, "%zu small puts + 1 ep flush: %zu bytes compared", nreqs,
               total);
    }
    uc_oob_barrier(uc);
    return ret;
}

/* Many gets in flight at once, then a worker flush. */
static int uc_rma_many_gets(uc_t *uc, uc_rma_t *r)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };
    size_t i, len = (r->win_size / 128 < 65536) ? r->win_size / 128 : 65536;
    void *reqs[128];
    int ret;

    uc_fill(r->win, len * 128, uc->seed, uc_rma_stream(uc->server, 3, 0), 0);
    memset(r->local, 0, len * 128);
    uc_oob_barrier(uc);
    for (i = 0; i < 128; ++i) {
        reqs[i] = ucp_get_nbx(uc->ep, r->local + i * len, len,
                              r->peer_win + i * len, r->rkey, &param);
    }
    uc_rma_flush(uc, 1, "worker flush after many gets");
    uc_check_status(uc, uc_wait_all(uc, reqs, 128, "get"), "get");
    ret = uc_verify(uc, r->local, len * 128, uc_rma_stream(!uc->server, 3, 0),
                    0, "data of 128 gets in flight");
    if (ret == 0) {
        uc_log(uc, "128 gets of %zu bytes in flight + worker flush: %zu "
               "bytes compared", len, len * 128);
    }
    uc_oob_barrier(uc);
    return ret;
}

int uc_test_rma(uc_t *uc)
{
    size_t sizes[64], n, i;
    uc_rma_t r;
    int ret = 0;

    uc_rma_setup(uc, &r);
    n = uc_sizes(uc, sizes, 64);
    for (i = 0; (i < n) && (ret == 0); ++i) {
        ret = uc_rma_put(uc, &r, i, sizes[i]) ||
              uc_rma_get(uc, &r, i, sizes[i]);
        if (ret == 0) {
            uc_log(uc, "size %zu: put (+%s flush) and get both ways, %zu "
                   "bytes each compared", sizes[i], (i & 1) ? "worker" : "ep",
                   sizes[i]);
        }
    }
    if (ret == 0) {
        ret = uc_rma_many_puts(uc, &r) || uc_rma_many_gets(uc, &r);
    }
    uc_rma_teardown(uc, &r);
    return ret ? -1 : 0;
}

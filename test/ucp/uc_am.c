/*
 * Active messages: ucp_am_send_nbx with a header, both directions, for every
 * size and three modes (default with a reply endpoint, forced eager, forced
 * rendezvous). Eager data is checked in the handler; rendezvous data is
 * fetched with ucp_am_recv_data_nbx and checked when it lands.
 */
#include "ucp_check.h"

#include <stdlib.h>
#include <string.h>

#define UC_AM_ID  5

enum { UC_AM_DEFAULT, UC_AM_EAGER, UC_AM_RNDV, UC_AM_LAST };

static const char *uc_am_names[] = { "default+reply", "eager", "rndv" };

typedef struct {
    uint64_t index;
    uint64_t size;
    uint64_t mode;
} uc_am_hdr_t;

typedef struct {
    uc_t        *uc;
    uc_am_hdr_t expect;     /* the message we wait for */
    int         arrived;    /* its handler ran */
    int         done;       /* its data is all checked */
    int         bad;        /* something did not match */
    int         was_rndv;
    void        *rndv_req;  /* ucp_am_recv_data_nbx in flight */
    void        *rndv_buf;
} uc_am_ctx_t;

static uint64_t uc_am_stream(int sender, uint64_t index, uint64_t mode)
{
    return (1ull << 40) | ((uint64_t)sender << 32) | (index << 4) | mode;
}

static void uc_am_data_cb(void *request, ucs_status_t status, size_t length,
                          void *user_data)
{
    uc_am_ctx_t *ctx = user_data;

    if ((status != UCS_OK) || (length != ctx->expect.size)) {
        uc_log(ctx->uc, "FAIL: rndv data: %s, %zu bytes of %llu",
               ucs_status_string(status), length,
               (unsigned long long)ctx->expect.size);
        ctx->bad = 1;
    }
    ctx->done = 1;
}

static ucs_status_t uc_am_cb(void *arg, const void *header, size_t header_len,
                             void *data, size_t length,
                             const ucp_am_recv_param_t *param)
{
    uc_am_ctx_t *ctx = arg;
    uc_t *uc = ctx->uc;
    ucp_request_param_t rparam = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.recv_am   = uc_am_data_cb,
        .user_data    = ctx
    };
    uc_am_hdr_t hdr;

    ctx->arrived = 1;
    if (header_len != sizeof(hdr)) {
        uc_log(uc, "FAIL: am header of %zu bytes, expected %zu", header_len,
               sizeof(hdr));
        ctx->bad = ctx->done = 1;
        return UCS_OK;
    }
    memcpy(&hdr, header, sizeof(hdr));
    if (memcmp(&hdr, &ctx->expect, sizeof(hdr)) || (length != hdr.size)) {
        uc_log(uc, "FAIL: am message index %llu size %llu mode %llu length "
               "%zu, expected index %llu size %llu mode %llu",
               (unsigned long long)hdr.index, (unsigned long long)hdr.size,
               (unsigned long long)hdr.mode, length,
               (unsigned long long)ctx->expect.index,
               (unsigned long long)ctx->expect.size,
               (unsigned long long)ctx->expect.mode);
        ctx->bad = ctx->done = 1;
        return UCS_OK;
    }
    if ((hdr.mode == UC_AM_DEFAULT) &&
        (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ||
         (param->reply_ep == NULL))) {
        uc_log(uc, "FAIL: am sent with FLAG_REPLY has no reply ep");
        ctx->bad = 1;
    }
    if ((hdr.mode == UC_AM_RNDV) &&
        !(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        uc_log(uc, "FAIL: am sent with FLAG_RNDV arrived as eager");
        ctx->bad = 1;
    }

    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        ctx->was_rndv = 1;
        ctx->rndv_buf = uc_xmalloc(uc, length);
        ctx->rndv_req = ucp_am_recv_data_nbx(uc->worker, data, ctx->rndv_buf,
                                             length, &rparam);
        if (UCS_PTR_IS_ERR(ctx->rndv_req)) {
            uc_log(uc, "FAIL: ucp_am_recv_data_nbx: %s",
                   ucs_status_string(UCS_PTR_STATUS(ctx->rndv_req)));
            ctx->rndv_req = NULL;
            ctx->bad = ctx->done = 1;
        } else if (ctx->rndv_req == NULL) {
            ctx->done = 1;     /* completed in place, no callback */
        }
        return UCS_OK;
    }

    if (uc_verify(uc, data, length,
                  uc_am_stream(uc->server, hdr.index, hdr.mode), 0,
                  "am eager data")) {
        ctx->bad = 1;
    }
    ctx->done = 1;
    return UCS_OK;
}

static int uc_am_exchange(uc_t *uc, uc_am_ctx_t *ctx, size_t index,
                          size_t size, int mode)
{
    static const uint32_t flags[] = {
        [UC_AM_DEFAULT] = UCP_AM_SEND_FLAG_REPLY,
        [UC_AM_EAGER]   = UCP_AM_SEND_FLAG_EAGER,
        [UC_AM_RNDV]    = UCP_AM_SEND_FLAG_RNDV
    };
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags        = flags[mode]
    };
    uc_am_hdr_t hdr = { .index = index, .size = size, .mode = mode };
    double deadline = uc_now() + uc->timeout;
    uint8_t *sbuf = uc_xmalloc(uc, size);
    void *sreq;
    char what[96];

    snprintf(what, sizeof(what), "%s am of %zu bytes", uc_am_names[mode],
             size);
    uc_fill(sbuf, size, uc->seed, uc_am_stream(!uc->server, index, mode), 0);
    /* expect the peer's message before the barrier lets it send */
    *ctx = (uc_am_ctx_t){ .uc = uc, .expect = hdr };
    uc_oob_barrier(uc);

    sreq = ucp_am_send_nbx(uc->ep, UC_AM_ID, &hdr, sizeof(hdr), sbuf, size,
                           &param);
    uc_check_status(uc, uc_wait(uc, sreq, what), what);
    while (!ctx->done) {
        ucp_worker_progress(uc->worker);
        if (uc_now() > deadline) {
            uc_fail(uc, "%s: %s within %.0f s", what,
                    ctx->arrived ? "rendezvous data did not arrive" :
                    "no message", uc->timeout);
        }
    }
    if (ctx->rndv_req != NULL) {
        ucp_request_free(ctx->rndv_req);
    }
    if (ctx->was_rndv && !ctx->bad &&
        uc_verify(uc, ctx->rndv_buf, size,
                  uc_am_stream(uc->server, index, mode), 0, "am rndv data")) {
        ctx->bad = 1;
    }
    free(ctx->rndv_buf);
    free(sbuf);
    return ctx->bad ? -1 : 0;
}

int uc_test_am(uc_t *uc)
{
    uc_am_ctx_t ctx = { .uc = uc, .expect.index = (uint64_t)-1 };
    ucp_am_handler_param_t hparam = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                      UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG |
                      UCP_AM_HANDLER_PARAM_FIELD_FLAGS,
        .id         = UC_AM_ID,
        .cb         = uc_am_cb,
        .arg        = &ctx,
        .flags      = UCP_AM_FLAG_WHOLE_MSG
    };
    size_t sizes[64], n, i;
    int mode, nrndv;

    uc_check_status(uc, ucp_worker_set_am_recv_handler(uc->worker, &hparam),
                    "ucp_worker_set_am_recv_handler");

    n = uc_sizes(uc, sizes, 64);
    for (i = 0; i < n; ++i) {
        nrndv = 0;
        for (mode = 0; mode < UC_AM_LAST; ++mode) {
            if (uc_am_exchange(uc, &ctx, i, sizes[i], mode)) {
                return -1;
            }
            nrndv += ctx.was_rndv;
        }
        uc_log(uc, "size %zu: am both ways (default+reply, eager, rndv), "
               "%zu bytes each compared, %d of 3 arrived as rndv", sizes[i],
               sizes[i], nrndv);
    }
    return 0;
}

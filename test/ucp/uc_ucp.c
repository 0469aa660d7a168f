/*
 * UCP set-up for ucp_check: one context, one worker, one endpoint to the
 * peer's worker address (exchanged over the out-of-band socket), and
 * request waits that never block longer than the test's timeout.
 */
#include "ucp_check.h"

#include <stdio.h>
#include <stdlib.h>

void uc_check_status(uc_t *uc, ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        uc_fail(uc, "%s: %s", what, ucs_status_string(status));
    }
}

void uc_init(uc_t *uc, uint64_t features)
{
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME,
        .features   = features,
        .name       = uc->name
    };
    ucp_worker_params_t wparams = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE
    };
    ucp_address_t *addr;
    uint64_t len;
    size_t addr_len;

    uc_check_status(uc, ucp_init(&params, NULL, &uc->context), "ucp_init");
    uc_check_status(uc, ucp_worker_create(uc->context, &wparams, &uc->worker),
                    "ucp_worker_create");
    uc_check_status(uc, ucp_worker_get_address(uc->worker, &addr, &addr_len),
                    "ucp_worker_get_address");

    len = addr_len;
    uc_oob_send(uc, &len, sizeof(len));
    uc_oob_send(uc, addr, addr_len);
    ucp_worker_release_address(uc->worker, addr);

    uc_oob_recv(uc, &len, sizeof(len));
    if ((len == 0) || (len > (1 << 20))) {
        uc_fail(uc, "peer sent a worker address of %llu bytes",
                (unsigned long long)len);
    }
    uc->peer_addr_len = len;
    uc->peer_addr     = uc_xmalloc(uc, len);
    uc_oob_recv(uc, uc->peer_addr, len);
}

static void uc_ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    uc_t *uc = arg;

    if (uc->ep_error == UCS_OK) {
        uc->ep_error      = status;
        uc->ep_error_time = uc_now();
    }
}

void uc_ep_create(uc_t *uc)
{
    ucp_ep_params_t params = {
        .field_mask      = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                           UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                           UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address         = uc->peer_addr,
        .err_mode        = uc->err_mode,
        .err_handler     = { .cb = uc_ep_error_cb, .arg = uc }
    };

    uc->ep_error = UCS_OK;
    uc_check_status(uc, ucp_ep_create(uc->worker, &params, &uc->ep),
                    "ucp_ep_create");
}

ucs_status_t uc_ep_close(uc_t *uc, uint32_t flags)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags        = flags
    };
    ucs_status_t status;

    status = uc_wait(uc, ucp_ep_close_nbx(uc->ep, &param), "ucp_ep_close_nbx");
    uc->ep = NULL;
    return status;
}

ucs_status_t uc_wait(uc_t *uc, void *request, const char *what)
{
    double deadline = uc_now() + uc->timeout;
    ucs_status_t status;

    if (request == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(request)) {
        return UCS_PTR_STATUS(request);
    }
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(uc->worker);
        if (uc_now() > deadline) {
            uc_fail(uc, "%s did not complete within %.0f s", what,
                    uc->timeout);
        }
    }
    ucp_request_free(request);
    return status;
}

ucs_status_t uc_wait_all(uc_t *uc, void **requests, size_t count,
                         const char *what)
{
    ucs_status_t status, ret = UCS_OK;
    size_t i;

    for (i = 0; i < count; ++i) {
        status = uc_wait(uc, requests[i], what);
        if ((status != UCS_OK) && (ret == UCS_OK)) {
            ret = status;
        }
        requests[i] = NULL;
    }
    return ret;
}

void uc_cleanup(uc_t *uc)
{
    if (uc->ep != NULL) {
        uc_ep_close(uc, UCP_EP_CLOSE_FLAG_FORCE);
    }
    if (uc->worker != NULL) {
        ucp_worker_destroy(uc->worker);
    }
    if (uc->context != NULL) {
        ucp_cleanup(uc->context);
    }
    free(uc->peer_addr);
}

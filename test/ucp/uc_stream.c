/*
 * Stream API: each side sends one message per size of the list (a byte
 * stream of their concatenation) and receives the peer's stream in pieces
 * of other sizes (WAITALL), so message boundaries must not matter.
 */
#include "ucp_check.h"

#include <stdlib.h>

#define UC_STREAM_ID  7

static const size_t uc_stream_pieces[] = {
    1, 4093, 65536 + 11, UC_MIB - 3, 17, 3 * UC_MIB + 1, 256
};

#define UC_NUM_PIECES (sizeof(uc_stream_pieces) / sizeof(uc_stream_pieces[0]))

int uc_test_stream(uc_t *uc)
{
    ucp_request_param_t sparam = { .op_attr_mask = 0 };
    ucp_request_param_t rparam = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags        = UCP_STREAM_RECV_FLAG_WAITALL
    };
    size_t sizes[64], n, i, total = 0, off = 0, piece, length, npieces = 0;
    double deadline;
    void **sreq;
    uint8_t **sbuf, *rbuf;
    ucs_status_t status;
    void *req;
    int ret = 0;

    n    = uc_sizes(uc, sizes, 64);
    sreq = uc_xmalloc(uc, n * sizeof(*sreq));
    sbuf = uc_xmalloc(uc, n * sizeof(*sbuf));
    for (i = 0; i < n; ++i) {
        sbuf[i] = uc_xmalloc(uc, sizes[i]);
        uc_fill(sbuf[i], sizes[i], uc->seed, !uc->server, total);
        total += sizes[i];
    }
    for (i = 0; i < n; ++i) {
        sreq[i] = ucp_stream_send_nbx(uc->ep, sbuf[i], sizes[i], &sparam);
        if (UCS_PTR_IS_ERR(sreq[i])) {
            uc_fail(uc, "stream send of %zu bytes: %s", sizes[i],
                    ucs_status_string(UCS_PTR_STATUS(sreq[i])));
        }
    }

    /* the peer's stream has the same total length */
    rbuf = uc_xmalloc(uc, 3 * UC_MIB + 1);
    while ((off < total) && (ret == 0)) {
        piece  = uc_stream_pieces[npieces++ % UC_NUM_PIECES];
        piece  = (piece > total - off) ? total - off : piece;
        length = 0;
        req    = ucp_stream_recv_nbx(uc->ep, rbuf, piece, &length, &rparam);
        if (UCS_PTR_IS_ERR(req)) {
            uc_fail(uc, "stream recv: %s",
                    ucs_status_string(UCS_PTR_STATUS(req)));
        } else if (req != NULL) {
            deadline = uc_now() + uc->timeout;
            while ((status = ucp_stream_recv_request_test(req, &length)) ==
                   UCS_INPROGRESS) {
                ucp_worker_progress(uc->worker);
                if (uc_now() > deadline) {
                    uc_fail(uc, "stream recv of %zu bytes at offset %zu did "
                            "not complete within %.0f s", piece, off,
                            uc->timeout);
                }
            }
            ucp_request_free(req);
            uc_check_status(uc, status, "stream recv");
        }
        if (length != piece) {
            uc_fail(uc, "stream recv with WAITALL returned %zu of %zu bytes",
                    length, piece);
        }
        ret  = uc_verify(uc, rbuf, piece, uc->server, off, "stream data");
        off += piece;
    }
    uc_check_status(uc, uc_wait_all(uc, sreq, n, "stream send"),
                    "stream send");

    if (ret == 0) {
        uc_log(uc, "stream: sent %zu messages (%zu bytes), received and "
               "compared %zu bytes in %zu pieces", n, total, off, npieces);
    }
    for (i = 0; i < n; ++i) {
        free(sbuf[i]);
    }
    free(sbuf);
    free(sreq);
    free(rbuf);
    return ret;
}

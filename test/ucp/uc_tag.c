/*
 * Tag send/recv, both directions at once, for every size of the list and
 * three send flavours (normal, fast completion, synchronous), then a burst
 * of same-tag messages that must match in order. Which protocol (eager
 * short/bcopy/zcopy, rendezvous put/get) carries a size depends on the
 * transport and on UCX_RNDV_SCHEME / UCX_RNDV_THRESH, set by the test.
 */
#include "ucp_check.h"

#include <stdlib.h>
#include <string.h>

#define UC_GUARD      64
#define UC_BURST      64
#define UC_TAG_MASK   ((ucp_tag_t)-1)

enum { UC_SEND_NORMAL, UC_SEND_FAST, UC_SEND_SYNC, UC_SEND_LAST };

static const char *uc_send_names[] = { "normal", "fast", "sync" };

static uint64_t uc_tag_stream(int sender, size_t index, int mode)
{
    return ((uint64_t)sender << 32) | (index << 4) | mode;
}

/* Wait for a receive and return what it received. */
static void uc_tag_recv_wait(uc_t *uc, void *req, ucp_tag_recv_info_t *info,
                             const char *what)
{
    double deadline = uc_now() + uc->timeout;
    ucs_status_t status;

    if (req == NULL) {
        uc_fail(uc, "%s: recv completed in place despite NO_IMM_CMPL", what);
    } else if (UCS_PTR_IS_ERR(req)) {
        uc_fail(uc, "%s: recv failed: %s", what,
                ucs_status_string(UCS_PTR_STATUS(req)));
    }
    while ((status = ucp_tag_recv_request_test(req, info)) == UCS_INPROGRESS) {
        ucp_worker_progress(uc->worker);
        if (uc_now() > deadline) {
            uc_fail(uc, "%s: receive did not complete within %.0f s", what,
                    uc->timeout);
        }
    }
    ucp_request_free(req);
    uc_check_status(uc, status, what);
}

static void *uc_tag_send(uc_t *uc, const void *buf, size_t size,
                         ucp_tag_t tag, int mode)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };

    if (mode == UC_SEND_FAST) {
        param.op_attr_mask = UCP_OP_ATTR_FLAG_FAST_CMPL;
    } else if (mode == UC_SEND_SYNC) {
        return ucp_tag_send_sync_nbx(uc->ep, buf, size, tag, &param);
    }
    return ucp_tag_send_nbx(uc->ep, buf, size, tag, &param);
}

/* Exchange one message each way and check it, guard bytes included. */
static int uc_tag_exchange(uc_t *uc, size_t index, size_t size, int mode)
{
    /* UCX 1.13 fills no receive info on immediate completion: always get a
     * request and read the info from it */
    ucp_request_param_t rparam = {
        .op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL
    };
    ucp_tag_recv_info_t info;
    ucp_tag_t tag = ((ucp_tag_t)index << 8) | mode;
    uint8_t *sbuf = uc_xmalloc(uc, size);
    uint8_t *rbuf = uc_xmalloc(uc, size + UC_GUARD);
    char what[128];
    void *rreq, *sreq;
    size_t i;
    int ret;

    snprintf(what, sizeof(what), "%s tag message of %zu bytes",
             uc_send_names[mode], size);
    uc_fill(sbuf, size, uc->seed, uc_tag_stream(!uc->server, index, mode), 0);
    memset(rbuf, 0xa5, size + UC_GUARD);

    rreq = ucp_tag_recv_nbx(uc->worker, rbuf, size, tag, UC_TAG_MASK,
                            &rparam);
    sreq = uc_tag_send(uc, sbuf, size, tag, mode);
    uc_check_status(uc, uc_wait(uc, sreq, what), what);
    uc_tag_recv_wait(uc, rreq, &info, what);

    if ((info.length != size) || (info.sender_tag != tag)) {
        uc_fail(uc, "%s: received length %zu tag 0x%llx, expected %zu 0x%llx",
                what, info.length, (unsigned long long)info.sender_tag, size,
                (unsigned long long)tag);
    }
    ret = uc_verify(uc, rbuf, size, uc_tag_stream(uc->server, index, mode), 0,
                    what);
    for (i = size; (ret == 0) && (i < size + UC_GUARD); ++i) {
        if (rbuf[i] != 0xa5) {
            uc_log(uc, "FAIL: %s: byte %zu past the end was written", what, i);
            ret = -1;
        }
    }
    free(sbuf);
    free(rbuf);
    return ret;
}

/* Many messages with one tag: they must match posted receives in order. */
static int uc_tag_burst(uc_t *uc, const size_t *sizes, size_t nsizes)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };
    ucp_tag_recv_info_t info[UC_BURST];
    void *sreq[UC_BURST], *rreq[UC_BURST];
    uint8_t *sbuf[UC_BURST], *rbuf[UC_BURST];
    size_t len[UC_BURST], total = 0;
    ucp_request_param_t rparam;
    int i, ret = 0;

    for (i = 0; i < UC_BURST; ++i) {
        /* at most 1 MiB each, so the burst stays quick */
        len[i] = sizes[(i * 7) % nsizes];
        len[i] = (len[i] > UC_MIB) ? UC_MIB : len[i];
        total += len[i];
        sbuf[i] = uc_xmalloc(uc, len[i]);
        rbuf[i] = uc_xmalloc(uc, len[i]);
        uc_fill(sbuf[i], len[i], uc->seed, uc_tag_stream(!uc->server, i, 15),
                0);
        rparam  = (ucp_request_param_t){
            .op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL
        };
        rreq[i] = ucp_tag_recv_nbx(uc->worker, rbuf[i], len[i], 0x77,
                                   UC_TAG_MASK, &rparam);
    }
    for (i = 0; i < UC_BURST; ++i) {
        sreq[i] = ucp_tag_send_nbx(uc->ep, sbuf[i], len[i], 0x77, &param);
    }
    uc_check_status(uc, uc_wait_all(uc, sreq, UC_BURST, "burst send"),
                    "burst send");
    for (i = 0; i < UC_BURST; ++i) {
        uc_tag_recv_wait(uc, rreq[i], &info[i], "burst receive");
        if (info[i].length != len[i]) {
            uc_fail(uc, "burst message %d: %zu bytes, expected %zu (order "
                    "lost?)", i, info[i].length, len[i]);
        }
        if (uc_verify(uc, rbuf[i], len[i],
                      uc_tag_stream(uc->server, i, 15), 0, "burst message")) {
            ret = -1;
        }
        free(sbuf[i]);
        free(rbuf[i]);
    }
    uc_log(uc, "burst: %d same-tag messages (%zu bytes) matched in order and "
           "verified", UC_BURST, total);
    return ret;
}

int uc_test_tag(uc_t *uc)
{
    size_t sizes[64], n, i;
    int mode;

    n = uc_sizes(uc, sizes, 64);
    for (i = 0; i < n; ++i) {
        for (mode = 0; mode < UC_SEND_LAST; ++mode) {
            if (uc_tag_exchange(uc, i, sizes[i], mode)) {
                return -1;
            }
        }
        uc_log(uc, "size %zu: sent and received both ways (normal, fast, "
               "sync), %zu bytes each compared", sizes[i], sizes[i]);
    }
    uc_oob_barrier(uc);
    return (n > 0) ? uc_tag_burst(uc, sizes, n) : 0;
}

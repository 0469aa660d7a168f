/*
 * Flush and close: rounds of traffic on a fresh endpoint each time; every
 * round flushes (ep flush and worker flush alternate), checks what arrived,
 * closes the endpoint in flush mode and makes a new one. A transport whose
 * flush never completes, or whose endpoints cannot be closed and re-made,
 * fails here with a timeout instead of hanging.
 */
#include "ucp_check.h"

#include <stdlib.h>

#define UC_ROUNDS    4
#define UC_MSGS      16
#define UC_TAG_MASK  ((ucp_tag_t)-1)

static uint64_t uc_fc_stream(int sender, int round, int msg)
{
    return (3ull << 40) | ((uint64_t)sender << 32) | (round << 8) | msg;
}

static int uc_fc_round(uc_t *uc, int round, const size_t *sizes, size_t n)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };
    void *sreq[UC_MSGS], *rreq[UC_MSGS], *req;
    uint8_t *sbuf[UC_MSGS], *rbuf[UC_MSGS];
    size_t len[UC_MSGS], total = 0;
    const char *how = (round & 1) ? "worker" : "ep";
    int i, ret = 0;

    for (i = 0; i < UC_MSGS; ++i) {
        len[i]  = sizes[(round * 5 + i * 3) % n];
        len[i]  = (len[i] > 4 * UC_MIB) ? 4 * UC_MIB : len[i];
        sbuf[i] = uc_xmalloc(uc, len[i]);
        rbuf[i] = uc_xmalloc(uc, len[i]);
        uc_fill(sbuf[i], len[i], uc->seed,
                uc_fc_stream(!uc->server, round, i), 0);
        rreq[i] = ucp_tag_recv_nbx(uc->worker, rbuf[i], len[i], i,
                                   UC_TAG_MASK, &param);
        total  += len[i];
    }
    for (i = 0; i < UC_MSGS; ++i) {
        sreq[i] = ucp_tag_send_nbx(uc->ep, sbuf[i], len[i], i, &param);
    }

    req = (round & 1) ? ucp_worker_flush_nbx(uc->worker, &param) :
                        ucp_ep_flush_nbx(uc->ep, &param);
    uc_check_status(uc, uc_wait(uc, req, "flush"), "flush");
    uc_check_status(uc, uc_wait_all(uc, sreq, UC_MSGS, "send"), "send");
    uc_check_status(uc, uc_wait_all(uc, rreq, UC_MSGS, "recv"), "recv");
    for (i = 0; i < UC_MSGS; ++i) {
        if (uc_verify(uc, rbuf[i], len[i], uc_fc_stream(uc->server, round, i),
                      0, "message of a flush/close round")) {
            ret = -1;
        }
        free(sbuf[i]);
        free(rbuf[i]);
    }
    /* both sides received everything before either closes */
    uc_oob_barrier(uc);
    uc_check_status(uc, uc_ep_close(uc, 0), "ep close (flush mode)");
    uc_check_status(uc, uc_wait(uc, ucp_worker_flush_nbx(uc->worker, &param),
                                "worker flush after close"),
                    "worker flush after close");
    uc_oob_barrier(uc);
    if (ret == 0) {
        uc_log(uc, "round %d: %d messages (%zu bytes) compared, %s flush, ep "
               "closed", round, UC_MSGS, total, how);
    }
    return ret;
}

int uc_test_flush_close(uc_t *uc)
{
    size_t sizes[64], n;
    int round;

    n = uc_sizes(uc, sizes, 64);
    if (n == 0) {
        uc_fail(uc, "no sizes in the range given");
    }
    for (round = 0; round < UC_ROUNDS; ++round) {
        if (round > 0) {
            uc_ep_create(uc);
        }
        if (uc_fc_round(uc, round, sizes, n)) {
            return -1;
        }
    }
    uc_log(uc, "%d rounds of connect, traffic, flush, close", UC_ROUNDS);
    return 0;
}

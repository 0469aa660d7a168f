/*
 * Peer failure (both endpoints in UCP_ERR_HANDLING_MODE_PEER): the client
 * receives a few messages and then kills itself with SIGKILL while the
 * server still has sends in flight. The server must see a send complete
 * with an error (and its endpoint error callback), every outstanding send
 * complete, and a forced ep close finish, all within the timeout after the
 * death (the moment its out-of-band socket reads EOF). No hang, no crash.
 */
#include "ucp_check.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define UC_PF_WINDOW    8
#define UC_PF_RECVS     8
#define UC_PF_MAX_SIZE  UC_MIB

static void uc_pf_victim(uc_t *uc)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };
    uint8_t *buf = uc_xmalloc(uc, UC_PF_MAX_SIZE);
    int i;

    for (i = 0; i < UC_PF_RECVS; ++i) {
        uc_check_status(uc, uc_wait(uc, ucp_tag_recv_nbx(uc->worker, buf,
                                    UC_PF_MAX_SIZE, 0, 0, &param), "recv"),
                        "recv");
    }
    /* one more receive in progress, then die with the server mid-send */
    ucp_tag_recv_nbx(uc->worker, buf, UC_PF_MAX_SIZE, 0, 0, &param);
    for (i = 0; i < 100; ++i) {
        ucp_worker_progress(uc->worker);
    }
    uc_log(uc, "received %d messages, killing myself with SIGKILL",
           UC_PF_RECVS);
    raise(SIGKILL);
}

static int uc_pf_peer_gone(uc_t *uc)
{
    struct pollfd pfd = { .fd = uc->sock, .events = POLLIN };
    char c;

    return (poll(&pfd, 1, 0) == 1) &&
           (recv(uc->sock, &c, 1, MSG_DONTWAIT) <= 0);
}

int uc_test_peer_failure(uc_t *uc)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };
    uint8_t *buf = uc_xmalloc(uc, UC_PF_MAX_SIZE);
    void *reqs[UC_PF_WINDOW] = { NULL };
    double start = uc_now(), t_dead = 0, t_err = 0, t_all, t_closed;
    size_t nsent = 0, nok = 0, nerr = 0, inflight = 0, i;
    ucs_status_t status, first_err = UCS_OK;

    if (uc->err_mode != UCP_ERR_HANDLING_MODE_PEER) {
        uc_fail(uc, "peer_failure needs -e peer");
    }
    if (!uc->server) {
        uc_pf_victim(uc);
    }

    uc_fill(buf, UC_PF_MAX_SIZE, uc->seed, 4ull << 40, 0);
    /* keep UC_PF_WINDOW sends in flight until one fails, then drain */
    for (;;) {
        for (i = 0; i < UC_PF_WINDOW; ++i) {
            if ((reqs[i] == NULL) && (first_err == UCS_OK) &&
                (uc->ep_error == UCS_OK)) {
                /* 64 KiB and 1 MiB: eager and rendezvous on most TLs */
                reqs[i] = ucp_tag_send_nbx(uc->ep, buf, (nsent & 1) ?
                                           UC_PF_MAX_SIZE : 65536, 1, &param);
                ++nsent;
                if (reqs[i] == NULL) {
                    ++nok;
                    continue;
                }
                if (!UCS_PTR_IS_ERR(reqs[i])) {
                    ++inflight;
                    continue;
                }
                status  = UCS_PTR_STATUS(reqs[i]);
                reqs[i] = NULL;
            } else if (reqs[i] != NULL) {
                status = ucp_request_check_status(reqs[i]);
                if (status == UCS_INPROGRESS) {
                    continue;
                }
                ucp_request_free(reqs[i]);
                reqs[i] = NULL;
                --inflight;
            } else {
                continue;
            }
            if (status == UCS_OK) {
                ++nok;
            } else if (nerr++ == 0) {
                first_err = status;
                t_err     = uc_now();
            }
        }
        ucp_worker_progress(uc->worker);

        if ((t_dead == 0) && uc_pf_peer_gone(uc)) {
            t_dead = uc_now();
            uc_log(uc, "peer died after %.3f s (%zu sends completed OK, %zu "
                   "in flight)", t_dead - start, nok, inflight);
        }
        if ((first_err != UCS_OK) && (uc->ep_error != UCS_OK) &&
            (inflight == 0)) {
            break;
        }
        if (uc_now() > ((t_dead != 0) ? t_dead : start) + uc->timeout) {
            uc_fail(uc, "%s %.0f s: %zu sends OK, %zu failed (%s), %zu still "
                    "in flight, ep error callback %s",
                    (t_dead != 0) ? "peer killed but no recovery within" :
                                    "peer did not die within", uc->timeout,
                    nok, nerr, ucs_status_string(first_err), inflight,
                    (uc->ep_error != UCS_OK) ?
                    ucs_status_string(uc->ep_error) : "not called");
        }
    }
    t_all = uc_now();
    if (t_dead == 0) {
        t_dead = t_err;      /* noticed through UCX before the socket */
    }

    status   = uc_ep_close(uc, UCP_EP_CLOSE_FLAG_FORCE);
    t_closed = uc_now();
    if (t_closed - t_dead > uc->timeout) {
        uc_fail(uc, "forced ep close took %.1f s", t_closed - t_all);
    }
    uc_log(uc, "first send error after %.3f s (%s), ep error callback after "
           "%.3f s (%s), all %zu sends done after %.3f s (%zu OK, %zu "
           "failed), forced close after %.3f s (%s); limit %.0f s",
           t_err - t_dead, ucs_status_string(first_err),
           uc->ep_error_time - t_dead, ucs_status_string(uc->ep_error), nsent,
           t_all - t_dead, nok, nerr, t_closed - t_dead,
           ucs_status_string(status), uc->timeout);
    free(buf);
    return 0;
}

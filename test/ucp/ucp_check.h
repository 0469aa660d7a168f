/*
 * ucp_check: two-process UCP tests (tag, stream, am, rma, flush/close, peer
 * failure) with every byte verified. One process is the "server" (it listens
 * on a TCP socket used only to exchange worker addresses, keys and
 * barriers), the other the "client"; both run the same test symmetrically
 * unless the test says otherwise.
 */
#ifndef UCP_CHECK_H_
#define UCP_CHECK_H_

#include <ucp/api/ucp.h>
#include <stddef.h>
#include <stdint.h>

#define UC_MIB        (1ul << 20)
#define UC_MAX_SIZE   (64 * UC_MIB)

typedef struct uc {
    int                     server;     /* 1: the side that listened */
    const char              *name;      /* "server" / "client" */
    int                     sock;       /* out-of-band TCP socket */
    uint64_t                seed;
    double                  timeout;    /* seconds allowed for one wait */
    size_t                  min_size;   /* size range a test covers */
    size_t                  max_size;
    ucp_context_h           context;
    ucp_worker_h            worker;
    ucp_ep_h                ep;
    ucp_err_handling_mode_t err_mode;
    void                    *peer_addr; /* the peer's worker address */
    size_t                  peer_addr_len;
    ucs_status_t            ep_error;   /* set by the ep error callback */
    double                  ep_error_time;
} uc_t;

typedef int (*uc_test_fn_t)(uc_t *uc);

/* uc_util.c */
void uc_fail(uc_t *uc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
void uc_log(uc_t *uc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
double uc_now(void);
void *uc_xmalloc(uc_t *uc, size_t size);
void uc_fill(void *buf, size_t len, uint64_t seed, uint64_t stream,
             size_t offset);
int uc_verify(uc_t *uc, const void *buf, size_t len, uint64_t stream,
              size_t offset, const char *what);
size_t uc_sizes(const uc_t *uc, size_t *sizes, size_t max_count);

/* uc_oob.c: out-of-band socket, port published through a file */
void uc_oob_connect(uc_t *uc, const char *port_file);
void uc_oob_send(uc_t *uc, const void *buf, size_t len);
void uc_oob_recv(uc_t *uc, void *buf, size_t len);
void uc_oob_barrier(uc_t *uc);

/* uc_ucp.c: context, worker, endpoint, requests */
void uc_init(uc_t *uc, uint64_t features);
void uc_cleanup(uc_t *uc);
void uc_ep_create(uc_t *uc);
ucs_status_t uc_ep_close(uc_t *uc, uint32_t flags);
ucs_status_t uc_wait(uc_t *uc, void *request, const char *what);
ucs_status_t uc_wait_all(uc_t *uc, void **requests, size_t count,
                         const char *what);
void uc_check_status(uc_t *uc, ucs_status_t status, const char *what);

/* one file per test */
int uc_test_tag(uc_t *uc);
int uc_test_stream(uc_t *uc);
int uc_test_am(uc_t *uc);
int uc_test_rma(uc_t *uc);
int uc_test_flush_close(uc_t *uc);
int uc_test_peer_failure(uc_t *uc);

#endif

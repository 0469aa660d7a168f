/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uct_verify: moves data over a uccl UCT endpoint between two processes and
 * checks every byte (ucx_perftest does not).
 *
 *   server: uct_verify -s [-p PORT] [-d DEV] [-K MS]
 *   client: uct_verify [-p PORT] [-d DEV] [-n ITERS] [-S SEED] [-m MODE]
 *           [-C BYTES]
 *
 * With -C BYTES (data mode, client, RC) the client also counts the chunks
 * it should send when uccl cuts zero-copy PUTs and GETs into chunks of
 * BYTES (one WRITE or READ each; every other operation is one chunk) and
 * prints "chunks expected N": verify_pair.sh (UCCL_EXPECT_CHUNKS) holds it
 * against the chunks the client's UCX_UCCL_STATS_DUMP counted.
 * With -D (data mode, client) a first ep streams 1 MiB PUTs and is
 * destroyed with them in flight: each completion must come exactly once,
 * with UCS_OK or UCS_ERR_CANCELED, and the data test then runs on a new ep
 * of the same iface (the old QPs drain behind it).
 * Addresses and keys are exchanged over a TCP socket. Modes:
 *   data  (default) GET bcopy/zcopy of the server's pattern, PUT
 *         short/bcopy/zcopy of the client's pattern at random offsets and
 *         sizes, AM short/bcopy/zcopy with sequence numbers; the server
 *         checks its buffer and the AM order and count, the client the GETs.
 *         Also: a second registration of a buffer returns the cached region,
 *         a GET with a wrong rkey (UC mode) completes with an error.
 *   kill  the server kills itself (SIGKILL) -K ms after the client starts
 *         streaming PUTs; the client must see its ep error callback within
 *         -T seconds of the peer's death.
 *   idle  as kill, but the client sends nothing: it only calls
 *         uct_ep_check every 100 ms (as UCP's keepalive does), which must
 *         not fail while the server lives and must fail once it died.
 *         With -W s the client then progresses s seconds more (so that its
 *         iface reaps the dead server's passive connection).
 *   reset (UC) the client GETs from the server's buffer in a loop; -K ms
 *         after the start the server unmaps that buffer, so its engine
 *         cannot read the data it serves and its connection fails. It
 *         must tell the client: the client's ep must fail with
 *         UCS_ERR_CONNECTION_RESET within -T seconds (far below the
 *         peer timeout that would otherwise end it).
 * Random choices come from -S SEED (printed on failure). Exit status 0 on
 * success, 1 with a message on any mismatch.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include "uct_harness.h"

#include <ucs/sys/math.h>



#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE      (8u << 20)
#define AM_ID         7
#define AM_SLOTS      256           /* zero-copy AMs in flight */
#define AM_SLOT_SIZE  (BUF_SIZE / AM_SLOTS)

static struct {
    unsigned          iters;
    const char        *mode;
    unsigned          kill_ms;
    unsigned          linger_s;     /* -W: progress after the ep error */
    unsigned          pause_ms;
    unsigned          err_timeout;
    int               destroy_busy; /* -D */
    size_t            chunk;        /* -C: chunk size to count at */
    uint64_t          chunks;       /* chunks the data test should send */

    /* AM receive state */
    uint64_t          am_expected;
    uint64_t          am_errors;
} g = {
    .iters = 200, .mode = "data", .kill_ms = 300, .err_timeout = 10
};

/* ------------------------------------------------------------------------ */

static ucs_status_t am_handler(void *arg, void *data, size_t length,
                               unsigned flags)
{
    const uint64_t *hdr = data;
    const uint8_t *payload = (const uint8_t*)data + sizeof(uint64_t);
    size_t i;

    if (length < sizeof(uint64_t)) {
        ++g.am_errors;
        return UCS_OK;
    }
    if (hdr[0] != g.am_expected) {
        fprintf(stderr, "AM out of order: got seq %lu, expected %lu\n",
                hdr[0], g.am_expected);
        ++g.am_errors;
    }
    for (i = 0; i < length - sizeof(uint64_t); ++i) {
        if (payload[i] != uh_pattern(2, hdr[0] * 131 + i)) {
            fprintf(stderr, "AM seq %lu: byte %zu is 0x%x, expected 0x%x\n",
                    hdr[0], i, payload[i], uh_pattern(2, hdr[0] * 131 + i));
            ++g.am_errors;
            break;
        }
    }
    g.am_expected = hdr[0] + 1;
    return UCS_OK;
}

static size_t am_fill(uint8_t *dst, uint64_t seq, size_t payload)
{
    size_t i;

    memcpy(dst, &seq, sizeof(seq));
    for (i = 0; i < payload; ++i) {
        dst[sizeof(seq) + i] = uh_pattern(2, seq * 131 + i);
    }
    return sizeof(seq) + payload;
}

/* the registration cache hands out the same region for the same buffer:
 * no second memory registration */
static void client_rcache_check(void)
{
    uct_mem_h memh2;

    uh_check(uct_md_mem_reg(uh.md, uh.buf, BUF_SIZE, UCT_MD_MEM_ACCESS_ALL,
                            &memh2), "second mem reg");
    if ((memh2 != uh.memh) && !(getenv("UCX_UCCL_RCACHE") &&
                                !strcmp(getenv("UCX_UCCL_RCACHE"), "no"))) {
        uh_die("second registration of the same buffer made a new memory "
               "region (memh %p != %p): registration cache not used", memh2,
               uh.memh);
    }
    printf("rcache: second registration returned memh %p (first %p)\n",
           memh2, uh.memh);
    uh_check(uct_md_mem_dereg(uh.md, memh2), "second dereg");
}

/* an operation of len bytes sent as chunks (zero-copy PUT or GET) or in
 * one */
static void count_chunks(size_t len, int chunked)
{
    if (g.chunk != 0) {
        g.chunks += chunked ? ucs_max(1, ucs_div_round_up(len, g.chunk)) : 1;
    }
}

/* GET bcopy/zcopy of random ranges of the server's pattern(1) */
static void client_get_phase(unsigned *rs)
{
    uint64_t raddr = uh.peer.buf_addr, off;
    unsigned i, k, n = g.iters / 4 + 2;
    uint8_t *udst;
    uct_iov_t iov;
    uh_req_t req;
    size_t len;

    for (i = 0; i < n; ++i) {
        k   = uh_rnd(rs, 3);
        len = (k == 0) ? 1 + uh_rnd(rs, uh.iface_attr.cap.get.max_bcopy) :
                         1 + uh_rnd(rs, (k == 1) ? 65536 * 3 : BUF_SIZE / 2);
        off = uh_rnd(rs, BUF_SIZE - len);
        memset(uh.buf + off, 0xee, len);
        count_chunks(len, k != 0);
        uh_req_init(&req);
        if (k == 0) {
            udst = uh.buf + off;
            uh_wait(&req, UH_RETRY("get_bcopy",
                    uct_ep_get_bcopy(uh.ep, uh_unpack, &udst, len,
                                     raddr + off, uh.rkey.rkey, &req.comp)),
                    "get_bcopy");
        } else {
            uh_iov(&iov, uh.buf + off, len);
            uh_wait(&req, UH_RETRY("get_zcopy",
                    uct_ep_get_zcopy(uh.ep, &iov, 1, raddr + off,
                                     uh.rkey.rkey, &req.comp)),
                    "get_zcopy");
        }
        for (k = 0; k < len; ++k) {
            if (uh.buf[off + k] != uh_pattern(1, off + k)) {
                uh_die("GET of %zu bytes at %lu: byte %u is 0x%x, expected "
                       "0x%x", len, off, k, uh.buf[off + k],
                       uh_pattern(1, off + k));
            }
        }
    }
    printf("GET: %u transfers verified\n", n);
}

static void mark_written(uint8_t *written, uint64_t off, size_t len)
{
    for (; len > 0; ++off, --len) {
        written[off / 8] |= 1u << (off % 8);
    }
}

/* PUT short/bcopy/zcopy of pattern(0) to random places, none waited for:
 * one flush must cover them all. The server then finds pattern(0) exactly
 * where the written map says, and its own pattern(1) elsewhere. */
static void client_put_phase(unsigned *rs, uint8_t *written)
{
    size_t max_copy = uh.iface_attr.cap.put.max_bcopy;
    uint64_t raddr  = uh.peer.buf_addr, off;
    uh_req_t *reqs  = calloc(g.iters, sizeof(*reqs));
    ucs_status_t *st = calloc(g.iters, sizeof(*st));
    uh_pack_arg_t parg;
    unsigned i, k;
    uct_iov_t iov;
    size_t len;

    for (off = 0; off < BUF_SIZE; ++off) {
        uh.buf[off] = uh_pattern(0, off);
    }
    for (i = 0; i < g.iters; ++i) {
        k   = uh_rnd(rs, 3);
        len = (k == 2) ? 1 + uh_rnd(rs, BUF_SIZE / 4) :
                         1 + uh_rnd(rs, (k == 0) ?
                                    uh.iface_attr.cap.put.max_short :
                                    max_copy);
        off   = uh_rnd(rs, BUF_SIZE - len);
        st[i] = UCS_OK;
        count_chunks(len, k == 2);
        if (k == 0) {
            uh_check(UH_RETRY("put_short",
                              uct_ep_put_short(uh.ep, uh.buf + off, len,
                                               raddr + off, uh.rkey.rkey)),
                     "put_short");
        } else if (k == 1) {
            parg.src = uh.buf + off;
            parg.len = len;
            if (UH_RETRY("put_bcopy",
                         uct_ep_put_bcopy(uh.ep, uh_pack, &parg, raddr + off,
                                          uh.rkey.rkey)) != (ssize_t)len) {
                uh_die("put_bcopy failed");
            }
        } else {
            uh_iov(&iov, uh.buf + off, len);
            uh_req_init(&reqs[i]);
            st[i] = UH_RETRY("put_zcopy",
                             uct_ep_put_zcopy(uh.ep, &iov, 1, raddr + off,
                                              uh.rkey.rkey, &reqs[i].comp));
        }
        mark_written(written, off, len);
    }
    uh_flush();
    for (i = 0; i < g.iters; ++i) {
        if ((st[i] == UCS_INPROGRESS) && !reqs[i].done) {
            uh_die("put_zcopy %u not complete after the flush", i);
        }
        uh_wait(&reqs[i], st[i], "put_zcopy");
    }
    printf("PUT: %u transfers, one flush\n", g.iters);
    free(st);
    free(reqs);
}

/* AM short/bcopy/zcopy with sequence numbers and pattern(2): the server
 * checks order; the zero-copy ones are not waited for, so many are in
 * flight at once */
static uint64_t client_am_phase(unsigned *rs)
{
    size_t max_am  = uh.iface_attr.cap.am.max_bcopy;
    uint8_t *tmp   = malloc(max_am + 64);
    uh_req_t *reqs = calloc(AM_SLOTS, sizeof(*reqs));
    ucs_status_t st[AM_SLOTS];
    uint64_t seq   = 0;
    unsigned i, k, nz = 0;
    uh_pack_arg_t parg;
    uct_iov_t iov;
    size_t len;

    for (i = 0; i < g.iters * 4; ++i, ++seq) {
        k   = uh_rnd(rs, 3);
        len = uh_rnd(rs, ((k == 0) ? uh.iface_attr.cap.am.max_short :
                          max_am) - sizeof(uint64_t));
        if (k == 2) {
            len = (len < AM_SLOT_SIZE) ? len : AM_SLOT_SIZE; /* its slot */
        }
        am_fill(tmp, seq, len);
        count_chunks(len, 0);
        if (k == 0) {
            uh_check(UH_RETRY("am_short",
                              uct_ep_am_short(uh.ep, AM_ID, *(uint64_t*)tmp,
                                              tmp + 8, len)), "am_short");
            continue;
        } else if (k == 1) {
            parg.src = tmp;
            parg.len = len + 8;
            if (UH_RETRY("am_bcopy", uct_ep_am_bcopy(uh.ep, AM_ID, uh_pack,
                                                     &parg, 0)) < 0) {
                uh_die("am_bcopy failed");
            }
            continue;
        }
        /* header from the stack, payload zero-copy from a slot of the
         * buffer that stays untouched until its completion */
        for (k = 0; (nz == AM_SLOTS) && (k < nz); ++k) {
            uh_wait(&reqs[k], st[k], "am_zcopy");
        }
        nz %= AM_SLOTS;
        memcpy(uh.buf + nz * AM_SLOT_SIZE, tmp + 8, len);
        uh_iov(&iov, uh.buf + nz * AM_SLOT_SIZE, len);
        uh_req_init(&reqs[nz]);
        st[nz] = UH_RETRY("am_zcopy",
                          uct_ep_am_zcopy(uh.ep, AM_ID, tmp, 8, &iov, 1, 0,
                                          &reqs[nz].comp));
        ++nz;
    }
    for (k = 0; k < nz; ++k) {
        uh_wait(&reqs[k], st[k], "am_zcopy");
    }
    uh_flush();
    printf("AM: %lu messages sent\n", seq);
    free(reqs);
    free(tmp);
    return seq;
}

/* UC: a GET with a key the peer does not have must fail, not hang */
static void client_bad_get(void)
{
    uct_iov_t iov;
    uh_req_t req;

    if (!getenv("UCX_UCCL_MODE") || strcmp(getenv("UCX_UCCL_MODE"), "uc")) {
        return;
    }
    uh_iov(&iov, uh.buf, 4096);
    uh_req_init(&req);
    if (UH_RETRY("bad get", uct_ep_get_zcopy(uh.ep, &iov, 1,
                                             uh.peer.buf_addr,
                                             uh.rkey.rkey ^ 0x5a5a0000,
                                             &req.comp)) == UCS_INPROGRESS) {
        while (!req.done) {
            uh_progress();
        }
    }
    if (req.comp.status == UCS_OK) {
        uh_die("GET with a wrong rkey completed without an error");
    }
    printf("bad rkey: GET completed with '%s' as expected\n",
           ucs_status_string(req.comp.status));
}

static void client_data(void)
{
    uint8_t *written = calloc(1, BUF_SIZE / 8);
    unsigned rs      = uh.seed;
    uint32_t result[2];

    client_rcache_check();
    client_get_phase(&rs);
    client_put_phase(&rs, written);
    result[0] = (uint32_t)client_am_phase(&rs);
    client_bad_get();

    uh_xfer(result, sizeof(result[0]), 1);
    uh_xfer(written, BUF_SIZE / 8, 1);
    uh_xfer(result, sizeof(result), 0);
    if (result[0] != 0) {
        uh_die("server found %u errors (see its output)", result[0]);
    }
    printf("server verified %u bytes of PUT data and %u AMs in order\n",
           BUF_SIZE, result[1]);
    if (g.chunk != 0) {
        printf("chunks expected %lu at %zu bytes\n", g.chunks, g.chunk);
    }
    free(written);
}

/* serve until the client says how many AMs it sent; with -P stop serving
 * for a while once AMs flow, so the receive queue runs dry */
static void server_serve_data(void)
{
    struct timeval tv;
    fd_set fds;

    for (;;) {
        uh_progress();
        if (g.pause_ms && (g.am_expected > 0)) {
            printf("server: not progressing for %u ms\n", g.pause_ms);
            usleep(g.pause_ms * 1000);
            g.pause_ms = 0;
        }
        FD_ZERO(&fds);
        FD_SET(uh.sock, &fds);
        tv.tv_sec = tv.tv_usec = 0;
        if (select(uh.sock + 1, &fds, NULL, NULL, &tv) > 0) {
            return;
        }
    }
}

/* pattern(0) where the client wrote, our pattern(1) elsewhere */
static uint64_t server_check_puts(const uint8_t *written)
{
    uint64_t off, bad = 0, nwritten = 0;
    uint8_t exp;
    int w;

    for (off = 0; off < BUF_SIZE; ++off) {
        w         = !!(written[off / 8] & (1u << (off % 8)));
        nwritten += w;
        exp       = uh_pattern(w ? 0 : 1, off);
        if ((uh.buf[off] != exp) && (bad++ < 5)) {
            fprintf(stderr, "PUT data: byte %lu (%s) is 0x%x, expected "
                    "0x%x\n", off, w ? "written" : "not written",
                    uh.buf[off], exp);
        }
    }
    printf("server: %lu of %u bytes written by PUTs\n", nwritten, BUF_SIZE);
    return bad;
}

static void server_data(void)
{
    uint8_t *written = malloc(BUF_SIZE / 8);
    uint32_t expected_am, result[2];
    uint64_t bad;
    double deadline;
    unsigned i;

    server_serve_data();
    uh_xfer(&expected_am, sizeof(expected_am), 0);
    uh_xfer(written, BUF_SIZE / 8, 0);
    /* the client flushed: everything arrived, though in RC mode (where a
     * send completion is the acknowledgement) AMs may still wait in our
     * completion queue */
    deadline = uh_now() + 10;
    while ((g.am_expected < expected_am) && (uh_now() < deadline)) {
        uh_progress();
    }
    bad = server_check_puts(written);
    if (g.am_expected != expected_am) {
        fprintf(stderr, "AM: received %lu, client sent %u\n", g.am_expected,
                expected_am);
        ++bad;
    }
    result[0] = bad + g.am_errors;
    result[1] = g.am_expected;
    printf("server: %lu bad PUT bytes, %lu AM errors, %lu AMs received\n",
           bad, g.am_errors, g.am_expected);
    uh_xfer(result, sizeof(result), 1);
    /* let the client's last ACKs out before closing */
    for (i = 0; i < 1000; ++i) {
        uh_progress();
        usleep(100);
    }
    free(written);
}

/* kill/idle/reset: the client's 1 MiB transfers use the start of uh.buf */
static void mib_iov(uct_iov_t *iov)
{
    uh_iov(iov, uh.buf, 1 << 20);
}

#define DB_PUTS  16
#define DB_GETS  4

/* -D: one more in flight; a completion at once counts as done */
static void busy_started(uh_req_t *req, ucs_status_t status, const char *what)
{
    if (status == UCS_OK) {
        req->done = 1;
    } else if (status != UCS_INPROGRESS) {
        uh_die("%s: %s", what, ucs_status_string(status));
    }
}

/* -D: wait until every request completed once, with OK or CANCELED;
 * returns how many were canceled */
static unsigned busy_wait(uh_req_t *reqs, unsigned n)
{
    double deadline = uh_now() + 10;
    unsigned i, done, canceled = 0;

    do {
        uh_progress();
        for (i = done = 0; i < n; ++i) {
            if (reqs[i].done > 1) {
                uh_die("busy op %u completed %d times", i, reqs[i].done);
            }
            done += reqs[i].done;
        }
        if (uh_now() > deadline) {
            uh_die("%u of %u operations of the destroyed ep never "
                   "completed", n - done, n);
        }
    } while (done < n);
    for (i = 0; i < n; ++i) {
        if ((reqs[i].comp.status != UCS_OK) &&
            (reqs[i].comp.status != UCS_ERR_CANCELED)) {
            uh_die("busy op %u completed with %s", i,
                   ucs_status_string(reqs[i].comp.status));
        }
        canceled += (reqs[i].comp.status == UCS_ERR_CANCELED);
    }
    return canceled;
}

/* -D: destroy an ep with PUTs and GETs in flight, then connect a new one.
 * The PUTs write the server's first MiB with what it holds already, the
 * GETs read its next MiBs into the same places here (what the later GET
 * checks expect there), so whatever lands late changes nothing. */
static void client_destroy_busy(void)
{
    uh_req_t reqs[DB_PUTS + DB_GETS];
    const size_t mib = 1u << 20;
    unsigned i, canceled;
    uct_iov_t iov;

    for (i = 0; i < mib; ++i) {
        uh.buf[i] = uh_pattern(1, i);
    }
    mib_iov(&iov);
    for (i = 0; i < DB_PUTS; ++i) {
        uh_req_init(&reqs[i]);
        busy_started(&reqs[i],
                     UH_RETRY("busy put",
                              uct_ep_put_zcopy(uh.ep, &iov, 1,
                                               uh.peer.buf_addr, uh.rkey.rkey,
                                               &reqs[i].comp)), "busy put");
    }
    for (i = 0; i < DB_GETS; ++i) {
        uh_iov(&iov, uh.buf + (i + 1) * mib, mib);
        uh_req_init(&reqs[DB_PUTS + i]);
        busy_started(&reqs[DB_PUTS + i],
                     UH_RETRY("busy get",
                              uct_ep_get_zcopy(uh.ep, &iov, 1,
                                               uh.peer.buf_addr +
                                               (i + 1) * mib, uh.rkey.rkey,
                                               &reqs[DB_PUTS + i].comp)),
                     "busy get");
    }
    uct_ep_destroy(uh.ep);
    uh.ep = NULL;

    canceled = busy_wait(reqs, DB_PUTS + DB_GETS);
    if (canceled == 0) {
        uh_die("nothing was in flight at ep destroy: the test tests nothing");
    }
    printf("uct_verify[client] %u PUTs and %u GETs in flight at ep destroy "
           "completed once each (%u canceled)\n", DB_PUTS, DB_GETS,
           canceled);
    uh_ep_connect();
}

/* kill/idle/reset: the server serves -K ms after the client's go; returns
 * when the go came */
static double server_serve_go(void)
{
    uint32_t go;
    double start;

    uh_xfer(&go, sizeof(go), 0);
    start = uh_now();
    while (uh_now() - start < g.kill_ms / 1000.0) {
        uh_progress();
    }
    return start;
}

static void client_kill(int idle)
{
    double start, dead = 0, deadline, next_check = 0;
    uint32_t go = 1;
    uct_iov_t iov;
    char c;
    ucs_status_t status;
    unsigned posted = 0;

    mib_iov(&iov);
    uh_xfer(&go, sizeof(go), 1);
    start    = uh_now();
    deadline = start + g.kill_ms / 1000.0 + g.err_timeout + 5;
    while (!uh.ep_error) {
        if (!idle) {
            status = uct_ep_put_zcopy(uh.ep, &iov, 1, uh.peer.buf_addr,
                                      uh.rkey.rkey, NULL);
            posted += (status == UCS_INPROGRESS) || (status == UCS_OK);
        } else if (uh_now() >= next_check) {
            uh_check(uct_ep_check(uh.ep, 0, NULL), "ep check");
            next_check = uh_now() + 0.1;
        }
        uh_progress();
        if ((dead == 0) && (recv(uh.sock, &c, 1, MSG_DONTWAIT) >= 0)) {
            dead = uh_now(); /* its last word, or its socket closed */
            printf("peer died %.3f s after start (%u PUTs posted)\n",
                   dead - start, posted);
        }
        if (uh_now() > deadline) {
            uh_die("no ep error %.1f s after the peer died",
                dead ? uh_now() - dead : -1.0);
        }
    }

    if (dead == 0) {
        /* the peer says it dies before it does: an error without that
         * word came while it lived */
        if (recv(uh.sock, &c, 1, MSG_DONTWAIT) < 0) {
            uh_die("ep error '%s' while the peer was alive",
                   ucs_status_string(uh.ep_status));
        }
        dead = uh.ep_error_time; /* the word came with the error */
    }
    printf("ep error '%s' %.3f s after the peer died\n",
           ucs_status_string(uh.ep_status), uh.ep_error_time - dead);
    if (uh.ep_error_time - dead > g.err_timeout) {
        uh_die("ep error took %.1f s (limit %u s)", uh.ep_error_time - dead,
            g.err_timeout);
    }
    for (start = uh_now(); uh_now() - start < g.linger_s;) {
        uh_progress();
    }
    if (uh.ep == NULL) {
        printf("the error handler destroyed the failed ep\n");
        return;
    }
    /* the iface still works: a flush of the failed ep returns at once */
    status = uct_ep_flush(uh.ep, UCT_FLUSH_FLAG_CANCEL, NULL);
    printf("flush(cancel) of the failed ep: %s\n", ucs_status_string(status));
}

static void server_kill(void)
{
    const char word = 'D';

    (void)server_serve_go();
    printf("server: killing myself %u ms after the client started\n",
           g.kill_ms);
    fflush(stdout);
    uh_xfer((void*)&word, 1, 1);   /* the client's proof that we died */
    kill(getpid(), SIGKILL);
}

static void client_reset(void)
{
    double start, deadline;
    uint32_t go = 1;
    unsigned done = 0;
    uct_iov_t iov;
    uh_req_t req;
    ucs_status_t status;

    mib_iov(&iov);
    uh_xfer(&go, sizeof(go), 1);
    start    = uh_now();
    deadline = start + g.kill_ms / 1000.0 + g.err_timeout;
    req.done = 1;
    while (!uh.ep_error) {
        if (req.done) {
            done += (req.comp.status == UCS_OK);
            uh_req_init(&req);
            status = uct_ep_get_zcopy(uh.ep, &iov, 1, uh.peer.buf_addr,
                                      uh.rkey.rkey, &req.comp);
            if (status == UCS_OK) {
                req.done = 1;
            } else if (status != UCS_INPROGRESS) {
                req.done = (status == UCS_ERR_NO_RESOURCE);
            }
        }
        uh_progress();
        if (uh_now() > deadline) {
            uh_die("no ep error %.1f s after the start (%u GETs done)",
                uh_now() - start, done);
        }
    }
    printf("ep error '%s' %.3f s after the start, %u GETs done before\n",
           ucs_status_string(uh.ep_status), uh.ep_error_time - start, done);
    if (uh.ep_status != UCS_ERR_CONNECTION_RESET) {
        uh_die("ep error '%s', expected '%s' (the server's engine should "
            "have said it failed)", ucs_status_string(uh.ep_status),
            ucs_status_string(UCS_ERR_CONNECTION_RESET));
    }
    while (!req.done) {
        uh_progress();       /* the purge completes the GET with an error */
    }
}

static void server_reset(void)
{
    double start = server_serve_go();
    char c;

    /* what a program that frees registered memory too early does */
    if (munmap(uh.buf, BUF_SIZE) != 0) {
        uh_die("munmap: %m");
    }
    printf("server: unmapped the buffer the client reads\n");
    fflush(stdout);
    /* serve (and fail) until the client is done */
    while (recv(uh.sock, &c, 1, MSG_DONTWAIT) != 0) {
        uh_progress();
        if (uh_now() - start > 60) {
            uh_die("the client did not finish");
        }
    }
    uh.buf = NULL;         /* unmapped: not to be freed */
}

int main(int argc, char **argv)
{
    uint64_t i;
    int c;

    while ((c = getopt(argc, argv, "sh:p:d:n:S:m:K:T:W:P:C:DX")) != -1) {
        switch (c) {
        case 's': uh.server = 1; break;
        case 'h': uh.host = optarg; break;
        case 'p': uh.port = atoi(optarg); break;
        case 'd': uh.dev = optarg; break;
        case 'n': g.iters = atoi(optarg); break;
        case 'S': uh.seed = atoi(optarg); break;
        case 'm': g.mode = optarg; break;
        case 'K': g.kill_ms = atoi(optarg); break;
        case 'T': g.err_timeout = atoi(optarg); break;
        case 'W': g.linger_s = atoi(optarg); break;
        case 'P': g.pause_ms = atoi(optarg); break;
        case 'C': g.chunk = strtoul(optarg, NULL, 0); break;
        case 'D': g.destroy_busy = 1; break;
        case 'X': uh.destroy_on_error = 1; break;
        default:
            fprintf(stderr, "usage: %s [-s] [-h host] [-p port] [-d dev] "
                    "[-n iters] [-S seed] [-m data|kill|idle|reset] "
                    "[-K ms] [-T s] [-W s] [-P ms] [-C bytes] [-D] "
                    "[-X]\n",
                    argv[0]);
            return 2;
        }
    }

    uh.name     = "uct_verify";
    uh.buf_size = BUF_SIZE;
    uh.buf_mmap = !strcmp(g.mode, "reset"); /* the server unmaps it */
    uh_setup();
    uh_check(uct_iface_set_am_handler(uh.iface, AM_ID, am_handler, NULL, 0),
             "am handler");
    if (uh.server) {
        /* before the client hears of us: our engine may serve its GETs
         * (RC: the NIC; UC: the async timer) before we call progress */
        for (i = 0; i < BUF_SIZE; ++i) {
            uh.buf[i] = uh_pattern(1, i);
        }
    }
    uh_exchange();
    if (!strcmp(g.mode, "data")) {
        if (!uh.server && g.destroy_busy) {
            client_destroy_busy();
        }
        uh.server ? server_data() : client_data();
    } else if (!strcmp(g.mode, "reset")) {
        uh.server ? server_reset() : client_reset();
    } else if (!strcmp(g.mode, "kill") || !strcmp(g.mode, "idle")) {
        uh.server ? server_kill() : client_kill(!strcmp(g.mode, "idle"));
    } else {
        uh_die("unknown mode %s", g.mode);
    }

    /* the others end with a dead or failed peer */
    if (!strcmp(g.mode, "data")) {
        uh_finish();
    }
    uh_teardown();
    printf("uct_verify[%s] %s: OK\n", uh.server ? "server" : "client",
           g.mode);
    return 0;
}

/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uct_order: the order in which the operations of one uccl ep take effect
 * at the target (docs/STATUS.md, "UCT ordering and completion"). Each
 * iteration runs one pattern on its own slot of the server's buffer, with
 * nothing waited for in between unless the pattern says so:
 *
 *   put-am     PUT v, then an AM that checks the slot holds v (the AM
 *              sees every PUT issued before it);
 *   put-get    PUT v, then GET: reads v;
 *   get-put    the slot holds v0; GET, then PUT v1: the GET reads v0;
 *   get-am     the slot holds v0; GET, then an AM that sets the slot to
 *              v1: the GET reads v0;
 *   fence      a large PUT v1, a fence (ep or iface), a small PUT v2 over
 *              its start, then GET: v2 then v1.
 *
 * PUTs are short, bcopy or zcopy, GETs bcopy or zcopy, at random sizes.
 * The server counts the AMs' checks that failed; the client checks every
 * GET. Loss (SOFTVERBS_LOSS) makes resends overtake, which is where these
 * rules are needed. An AM's handler may run after a later PUT landed (as
 * on an RC QP, the peer handles it when it polls): before a slot is used
 * again, the server confirms over the socket that it handled every AM.
 *
 *   server: uct_order -s [-p PORT] [-d DEV]
 *   client: uct_order [-p PORT] [-d DEV] [-n ITERS] [-S SEED]
 */
#include "uct_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NSLOTS       32
#define SLOT         (256u << 10)
/* client: a zero-copy source must stay as it is until its PUT completed,
 * so the two PUTs of a pattern read from areas of their own */
#define SRC_OFF(_s, _k) ((size_t)((_k) * NSLOTS + (_s)) * SLOT)
#define DST_OFF(_s)     ((size_t)(2 * NSLOTS + (_s)) * SLOT) /* GETs */
#define AM_ID        9
#define REQS         4          /* operations with a completion per slot */

typedef enum {
    AM_CHECK = 1,   /* the slot's first len bytes must be value */
    AM_SET   = 2    /* write value into them */
} am_op_t;

typedef enum {
    PAT_PUT_AM, PAT_PUT_GET, PAT_GET_PUT, PAT_GET_AM, PAT_FENCE, PAT_LAST
} pattern_t;

static const char *pattern_names[] = {
    "put-am", "put-get", "get-put", "get-am", "fence"
};

typedef struct {
    uh_req_t req;
    int      pending;       /* req in flight */
    uint8_t  *udst;         /* GET bcopy: where to unpack */
    size_t   len;           /* GET: bytes read into the slot's DST */
    size_t   head;          /* GET: the first head bytes are expected ... */
    uint8_t  head_val;      /* ... to be head_val, the rest rest_val */
    uint8_t  rest_val;
} op_t;

typedef struct {
    op_t     ops[REQS];
    unsigned iter;
    int      pattern;
} slot_t;

static struct {
    unsigned iters;
    slot_t   slots[NSLOTS];
    unsigned gets_checked;
    /* server */
    unsigned checks, bad_checks, sets;
    unsigned done;
} g = { .iters = 400 };


/* ---------------------------------------------------------------------- */
/* Server: the AMs act on its buffer                                        */
/* ---------------------------------------------------------------------- */

static ucs_status_t am_handler(void *arg, void *data, size_t length,
                               unsigned flags)
{
    uint64_t hdr = *(const uint64_t*)data, off;
    am_op_t op   = hdr >> 56;
    uint8_t val  = hdr >> 48;
    size_t len   = hdr & 0xffffffffu, i;

    if (length != 2 * sizeof(uint64_t)) {
        ++g.bad_checks;
        return UCS_OK;
    }
    off = ((const uint64_t*)data)[1];
    if ((off > uh.buf_size) || (len > uh.buf_size - off)) {
        ++g.bad_checks;
        return UCS_OK;
    }
    if (op == AM_SET) {
        memset(uh.buf + off, val, len);
        ++g.sets;
        return UCS_OK;
    }
    ++g.checks;
    for (i = 0; i < len; ++i) {
        if (uh.buf[off + i] != val) {
            if (g.bad_checks++ < 5) {
                fprintf(stderr, "AM check at %lu: byte %zu of %zu is 0x%x, "
                        "expected 0x%x (an earlier PUT had not landed)\n",
                        off, i, len, uh.buf[off + i], val);
            }
            break;
        }
    }
    return UCS_OK;
}

/* progress until the client asks something: how many AMs it sent so far
 * (then wait until we handled them) or UINT32_MAX when done */
static uint32_t server_next_request(void)
{
    uint32_t sent;
    ssize_t n;

    do {
        uh_progress();
        n = recv(uh.sock, &sent, sizeof(sent), MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) {
            uh_die("the client went away");
        }
    } while (n < (ssize_t)sizeof(sent));
    uh_xfer(&sent, sizeof(sent), 0);
    return sent;
}

static void server(void)
{
    uint32_t result[3], sent;
    double deadline;

    while ((sent = server_next_request()) != UINT32_MAX) {
        deadline = uh_now() + 30;
        while (g.checks + g.sets < sent) {
            uh_progress();
            if (uh_now() > deadline) {
                uh_die("handled %u of %u AMs after 30 s", g.checks + g.sets,
                       sent);
            }
        }
        uh_xfer(&sent, sizeof(sent), 1);
    }
    result[0] = g.bad_checks;
    result[1] = g.checks;
    result[2] = g.sets;
    printf("server: %u AM checks (%u failed), %u AM sets\n", g.checks,
           g.bad_checks, g.sets);
    uh_xfer(result, sizeof(result), 1);
}


/* ---------------------------------------------------------------------- */
/* Client                                                                   */
/* ---------------------------------------------------------------------- */

static uint64_t remote(unsigned slot)
{
    return uh.peer.buf_addr + (uint64_t)slot * SLOT;
}

/* wait for what the slot's previous pattern left in flight and check the
 * GETs it issued */
static void slot_drain(unsigned s)
{
    slot_t *slot = &g.slots[s];
    const uint8_t *dst = uh.buf + DST_OFF(s);
    op_t *op;
    size_t i;

    for (op = slot->ops; op < slot->ops + REQS; ++op) {
        if (!op->pending) {
            continue;
        }
        uh_wait(&op->req, UCS_INPROGRESS, pattern_names[slot->pattern]);
        op->pending = 0;
        for (i = 0; i < op->len; ++i) {
            if (dst[i] != ((i < op->head) ? op->head_val : op->rest_val)) {
                uh_die("%s, iteration %u: GET byte %zu of %zu is 0x%x, "
                       "expected 0x%x", pattern_names[slot->pattern],
                       slot->iter, i, op->len, dst[i],
                       (i < op->head) ? op->head_val : op->rest_val);
            }
        }
        g.gets_checked += (op->len > 0);
        op->len = 0;
    }
}

static op_t *slot_op(unsigned s)
{
    op_t *op;

    for (op = g.slots[s].ops; op < g.slots[s].ops + REQS; ++op) {
        if (!op->pending && (op->len == 0)) {
            uh_req_init(&op->req);
            return op;
        }
    }
    uh_die("slot %u: more than %d operations", s, REQS);
}

static void op_started(op_t *op, ucs_status_t status, const char *what)
{
    if (status == UCS_INPROGRESS) {
        op->pending = 1;
    } else if (status == UCS_OK) {
        op->req.done = 1;
        op->pending  = 1;
    } else {
        uh_die("%s: %s", what, ucs_status_string(status));
    }
}

/* PUT len bytes of value to the start of slot s: short, bcopy or zcopy
 * (zcopy from source area k of the slot, untouched until the slot drains) */
static void put(unsigned *rs, unsigned s, unsigned k_src, size_t len,
                uint8_t value, int zcopy_only)
{
    size_t max_short = uh.iface_attr.cap.put.max_short;
    size_t max_bcopy = uh.iface_attr.cap.put.max_bcopy;
    uint8_t *src     = uh.buf + SRC_OFF(s, k_src);
    unsigned k       = zcopy_only ? 2 : uh_rnd(rs, 3);
    uh_pack_arg_t parg = { .src = src, .len = len };
    uct_iov_t iov;
    op_t *op;

    memset(src, value, len);
    if ((k == 0) && (len <= max_short)) {
        uh_check(UH_RETRY("put_short",
                          uct_ep_put_short(uh.ep, src, len, remote(s),
                                           uh.rkey.rkey)), "put_short");
    } else if ((k <= 1) && (len <= max_bcopy)) {
        if (UH_RETRY("put_bcopy",
                     uct_ep_put_bcopy(uh.ep, uh_pack, &parg, remote(s),
                                      uh.rkey.rkey)) != (ssize_t)len) {
            uh_die("put_bcopy failed");
        }
    } else {
        op = slot_op(s);
        uh_iov(&iov, src, len);
        op_started(op, UH_RETRY("put_zcopy",
                                uct_ep_put_zcopy(uh.ep, &iov, 1, remote(s),
                                                 uh.rkey.rkey,
                                                 &op->req.comp)),
                   "put_zcopy");
    }
}

/* GET the first len bytes of slot s; checked when the slot is drained */
static void get(unsigned *rs, unsigned s, size_t len, size_t head,
                uint8_t head_val, uint8_t rest_val)
{
    uint8_t *dst = uh.buf + DST_OFF(s);
    op_t *op     = slot_op(s);
    uct_iov_t iov;

    memset(dst, 0xee, len);
    op->len      = len;
    op->head     = head;
    op->head_val = head_val;
    op->rest_val = rest_val;
    if ((len <= uh.iface_attr.cap.get.max_bcopy) && uh_rnd(rs, 2)) {
        op->udst = dst;
        op_started(op, UH_RETRY("get_bcopy",
                                uct_ep_get_bcopy(uh.ep, uh_unpack, &op->udst,
                                                 len, remote(s), uh.rkey.rkey,
                                                 &op->req.comp)),
                   "get_bcopy");
        return;
    }
    uh_iov(&iov, dst, len);
    op_started(op, UH_RETRY("get_zcopy",
                            uct_ep_get_zcopy(uh.ep, &iov, 1, remote(s),
                                             uh.rkey.rkey, &op->req.comp)),
               "get_zcopy");
}

static unsigned ams_sent;

static void am(unsigned s, am_op_t op, size_t len, uint8_t value)
{
    uint64_t hdr = ((uint64_t)op << 56) | ((uint64_t)value << 48) | len;
    uint64_t off = (uint64_t)s * SLOT;

    uh_check(UH_RETRY("am_short", uct_ep_am_short(uh.ep, AM_ID, hdr, &off,
                                                  sizeof(off))), "am_short");
    ++ams_sent;
}

/* every AM sent so far was handled: the slots may be used again */
static void client_sync(void)
{
    uint32_t sent = ams_sent;

    uh_flush();
    uh_xfer(&sent, sizeof(sent), 1);
    uh_xfer(&sent, sizeof(sent), 0);
}

/* the slot holds value in its first len bytes, and we know it landed */
static void establish(unsigned *rs, unsigned s, size_t len, uint8_t value)
{
    put(rs, s, 0, len, value, 1);
    slot_drain(s);
}

static size_t random_len(unsigned *rs)
{
    switch (uh_rnd(rs, 3)) {
    case 0:  return 1 + uh_rnd(rs, 64);
    case 1:  return 1 + uh_rnd(rs, uh.iface_attr.cap.put.max_bcopy);
    default: return 1 + uh_rnd(rs, SLOT);
    }
}

static void run_pattern(unsigned *rs, unsigned i, unsigned s, pattern_t pat)
{
    uint8_t v0 = (uint8_t)(2 * i + 1), v1 = (uint8_t)(2 * i + 2);
    size_t len = random_len(rs), head;

    switch (pat) {
    case PAT_PUT_AM:
        put(rs, s, 0, len, v1, 0);
        am(s, AM_CHECK, len, v1);
        break;
    case PAT_PUT_GET:
        put(rs, s, 0, len, v1, 0);
        get(rs, s, len, len, v1, v1);
        break;
    case PAT_GET_PUT:
        establish(rs, s, len, v0);
        get(rs, s, len, len, v0, v0);
        put(rs, s, 1, len, v1, 0);
        break;
    case PAT_GET_AM:
        establish(rs, s, len, v0);
        get(rs, s, len, len, v0, v0);
        am(s, AM_SET, len, v1);
        break;
    default:
        len  = SLOT / 2 + uh_rnd(rs, SLOT / 2);
        head = 1 + uh_rnd(rs, uh.iface_attr.cap.put.max_short);
        put(rs, s, 0, len, v0, 1);
        if (uh_rnd(rs, 2)) {
            uh_check(uct_ep_fence(uh.ep, 0), "ep fence");
        } else {
            uh_check(uct_iface_fence(uh.iface, 0), "iface fence");
        }
        put(rs, s, 1, head, v1, 0);
        get(rs, s, len, head, v1, v0);
        break;
    }
}

static void client(void)
{
    unsigned rs = uh.seed, i, s, counts[PAT_LAST] = {0};
    uint32_t result[3];
    pattern_t pat;

    for (i = 0; i < g.iters; ++i) {
        s   = i % NSLOTS;
        pat = uh_rnd(&rs, PAT_LAST);
        if ((s == 0) && (i > 0)) {
            client_sync();
        }
        slot_drain(s);
        g.slots[s].iter    = i;
        g.slots[s].pattern = pat;
        run_pattern(&rs, i, s, pat);
        ++counts[pat];
        uh_progress();
    }
    for (s = 0; s < NSLOTS; ++s) {
        slot_drain(s);
    }
    client_sync();

    result[0] = UINT32_MAX;
    uh_xfer(result, sizeof(result[0]), 1);
    uh_xfer(result, sizeof(result), 0);
    printf("client: %u iterations (", g.iters);
    for (pat = 0; pat < PAT_LAST; ++pat) {
        printf("%s%s %u", pat ? ", " : "", pattern_names[pat], counts[pat]);
    }
    printf("), %u GETs checked; server: %u AM checks, %u failed, %u sets\n",
           g.gets_checked, result[1], result[0], result[2]);
    if (result[0] != 0) {
        uh_die("%u AM checks failed at the server: an AM overtook a PUT "
               "issued before it", result[0]);
    }
    if (result[1] != counts[PAT_PUT_AM]) {
        uh_die("the server checked %u AMs, %u were sent", result[1],
               counts[PAT_PUT_AM]);
    }
}

int main(int argc, char **argv)
{
    int c;

    uh.name     = "uct_order";
    uh.buf_size = 3 * NSLOTS * SLOT;
    while ((c = getopt(argc, argv, "sh:p:d:n:S:")) != -1) {
        switch (c) {
        case 's': uh.server = 1; break;
        case 'h': uh.host = optarg; break;
        case 'p': uh.port = atoi(optarg); break;
        case 'd': uh.dev = optarg; break;
        case 'n': g.iters = atoi(optarg); break;
        case 'S': uh.seed = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-s] [-h host] [-p port] [-d dev] "
                    "[-n iters] [-S seed]\n", argv[0]);
            return 2;
        }
    }

    uh_setup();
    uh_check(uct_iface_set_am_handler(uh.iface, AM_ID, am_handler, NULL, 0),
             "am handler");
    uh_exchange();
    uh.server ? server() : client();
    uh_finish();
    uh_teardown();
    printf("uct_order[%s]: OK\n", uh.server ? "server" : "client");
    return 0;
}

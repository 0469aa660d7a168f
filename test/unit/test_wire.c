/*
 * Wire formats: immediate encoding, encode/validate round trips of every
 * packet, every truncation rejected, garbled fields rejected, and random
 * input that never reads out of bounds (each check runs on an exact-size
 * heap copy, so a sanitizer build catches any over-read).
 */
#include "unit_test.h"

#include <uct/uccl/proto/uccl_wire.h>
#include <uct/api/uct_def.h>

#include <string.h>

#define BUF_MAX 4096

/* validate a copy of exactly len bytes */
static ucs_status_t ctl_check(const void *pkt, size_t len)
{
    void *copy = malloc(len ? len : 1);
    ucs_status_t status;

    memcpy(copy, pkt, len);
    status = uct_uccl_wire_ctl_check(copy, len);
    free(copy);
    return status;
}

static ucs_status_t data_check(const void *pkt, size_t len, uint32_t imm)
{
    void *copy = malloc(len ? len : 1);
    ucs_status_t status;

    memcpy(copy, pkt, len);
    status = uct_uccl_wire_data_check(copy, len, imm);
    free(copy);
    return status;
}

/* every strict prefix of a valid packet is rejected */
static void ctl_truncations(const void *pkt, size_t len)
{
    size_t l;

    UT_EQ(ctl_check(pkt, len), UCS_OK);
    for (l = 0; l < len; ++l) {
        if (ctl_check(pkt, l) == UCS_OK) {
            UT_FAIL("control packet type %u truncated to %zu of %zu bytes "
                    "accepted", *(const uint8_t*)pkt, l, len);
        }
    }
}

static void data_truncations(const void *pkt, size_t len, uint32_t imm)
{
    size_t l;

    UT_EQ(data_check(pkt, len, imm), UCS_OK);
    for (l = 0; l < len; ++l) {
        if (data_check(pkt, l, imm) == UCS_OK) {
            UT_FAIL("data SEND kind %u truncated to %zu of %zu accepted",
                    uct_uccl_imm_kind(imm), l, len);
        }
    }
    /* one byte too many is garbage too */
    UT_TRUE(data_check(pkt, len + 1, imm) != UCS_OK);
}

/* An AM with UCT_UCCL_AM_F_ACK: the ACK record after the payload is part
 * of the length, read back unchanged, and checked as a control ACK */
static void put_ack(uct_uccl_am_hdr_t *am, const uct_uccl_ack_t *ack)
{
    memcpy(uct_uccl_wire_am_ack_ptr(am), ack, sizeof(*ack));
}

static void check_am_ack(uint8_t *buf, uint32_t imm)
{
    uct_uccl_am_hdr_t *am = (void*)buf;
    uct_uccl_ack_t in, out;
    size_t len;

    memset(buf, 0, BUF_MAX);
    am->type   = UCT_UCCL_KIND_AM;
    am->flags  = UCT_UCCL_AM_F_ACK;
    am->length = 13;                /* the ACK starts unaligned */
    len        = sizeof(*am) + am->length + sizeof(in);
    memset(&in, 0, sizeof(in));
    uct_uccl_wire_hdr_init(&in.hdr, UCT_UCCL_CTL_ACK, sizeof(in));
    in.dst_conn_id = 5;
    in.token       = 0x1234567890abcdefull;
    in.cum_csn     = 77;
    in.echo_csn    = 76;
    in.rx_delay_ns = 1000;
    in.echo_path   = 3;
    in.flags       = UCT_UCCL_ACK_F_BUSY | UCT_UCCL_ACK_F_CREDIT |
                     UCT_UCCL_ACK_F_IDLE;
    in.credit      = 0xfffffff0u;
    put_ack(am, &in);
    data_truncations(buf, len, imm);
    uct_uccl_wire_am_ack(am, &out);
    UT_EQ(memcmp(&in, &out, sizeof(in)), 0);
    /* without the flag the ACK is garbage after the payload */
    am->flags = 0;
    UT_TRUE(data_check(buf, len, imm) != UCS_OK);
    am->flags = UCT_UCCL_AM_F_ACK;
    /* not an ACK, SACK words it has no room for, an unknown ACK flag,
     * CSNs beyond 24 bits */
    out      = in;
    out.hdr.type = UCT_UCCL_CTL_KEEPALIVE;
    put_ack(am, &out);
    UT_TRUE(data_check(buf, len, imm) != UCS_OK);
    out            = in;
    out.sack_words = 1;
    put_ack(am, &out);
    UT_TRUE(data_check(buf, len, imm) != UCS_OK);
    out       = in;
    out.flags = 0x80;
    put_ack(am, &out);
    UT_TRUE(data_check(buf, len, imm) != UCS_OK);
    out       = in;
    out.flags = UCT_UCCL_ACK_F_BUSY;   /* a credit without its flag */
    put_ack(am, &out);
    UT_TRUE(data_check(buf, len, imm) != UCS_OK);
    out        = in;
    out.flags  = UCT_UCCL_ACK_F_IDLE;  /* the hint without a grant */
    out.credit = 0;
    put_ack(am, &out);
    UT_TRUE(data_check(buf, len, imm) != UCS_OK);
    out         = in;
    out.cum_csn = 1u << 24;
    put_ack(am, &out);
    UT_TRUE(data_check(buf, len, imm) != UCS_OK);
    out          = in;
    out.echo_csn = UINT32_MAX;
    put_ack(am, &out);
    UT_TRUE(data_check(buf, len, imm) != UCS_OK);
}

static void test_imm(void)
{
    uint32_t csn, imm, be;
    unsigned i, kind, last;

    for (i = 0; i < 100000; ++i) {
        csn  = ut_rand_below(1u << 24);
        kind = ut_rand_below(UCT_UCCL_KIND_LAST);
        last = ut_rand_below(2);
        imm  = uct_uccl_imm_pack(csn, kind, last);
        UT_EQ(uct_uccl_imm_csn(imm), csn);
        UT_EQ(uct_uccl_imm_kind(imm), kind);
        UT_EQ(uct_uccl_imm_last(imm), last);
        UT_EQ(uct_uccl_imm_check(imm), UCS_OK);
        UT_EQ(uct_uccl_imm_from_wire(uct_uccl_imm_to_wire(imm)), imm);
        /* reserved bits and unknown kinds are rejected */
        UT_EQ(uct_uccl_imm_check(imm | (1u << (28 + ut_rand_below(4)))),
              UCS_ERR_INVALID_PARAM);
    }
    UT_EQ(uct_uccl_imm_check(7u << UCT_UCCL_IMM_KIND_SHIFT),
          UCS_ERR_INVALID_PARAM);
    /* imm csn masks to 24 bits */
    UT_EQ(uct_uccl_imm_csn(uct_uccl_imm_pack(1u << 24 | 5, 0, 0)), 5);
    /* on the wire the immediate is big-endian */
    be = uct_uccl_imm_to_wire(0x0a123456);
    UT_EQ(((uint8_t*)&be)[0], 0x0a);
    UT_EQ(((uint8_t*)&be)[3], 0x56);
    printf("  imm: 100000 random (csn, kind, last) round trips\n");
}

static void test_data(void)
{
    uint8_t buf[BUF_MAX];
    uct_uccl_am_hdr_t *am        = (void*)buf;
    uct_uccl_get_req_t *req      = (void*)buf;
    uct_uccl_get_done_t *done    = (void*)buf;
    uct_uccl_get_data_t *gdata   = (void*)buf;
    uct_uccl_retx_hdr_t *retx    = (void*)buf;
    uint32_t imm;

    /* AM with 100 bytes of payload */
    memset(buf, 0, sizeof(buf));
    am->type   = UCT_UCCL_KIND_AM;
    am->am_id  = 17;
    am->length = 100;
    imm        = uct_uccl_imm_pack(42, UCT_UCCL_KIND_AM, 1);
    data_truncations(buf, sizeof(*am) + 100, imm);
    UT_EQ(am->am_id, 17);
    /* zero-length AM */
    am->length = 0;
    data_truncations(buf, sizeof(*am), imm);
    /* garbled: type vs imm, reserved, wrong imm */
    am->type = UCT_UCCL_KIND_GET_REQ;
    UT_TRUE(data_check(buf, sizeof(*am), imm) != UCS_OK);
    am->type = UCT_UCCL_KIND_AM;
    am->flags = 2;  /* an unknown flag */
    UT_TRUE(data_check(buf, sizeof(*am), imm) != UCS_OK);
    am->flags = 0;
    UT_TRUE(data_check(buf, sizeof(*am), imm | (1u << 31)) != UCS_OK);
    /* an id beyond UCX's handler table */
    am->am_id = UCT_AM_ID_MAX;
    UT_TRUE(data_check(buf, sizeof(*am), imm) != UCS_OK);
    am->am_id = UCT_AM_ID_MAX - 1;
    UT_EQ(data_check(buf, sizeof(*am), imm), UCS_OK);
    /* a PUT/GET_RESP kind never arrives as a SEND */
    UT_TRUE(data_check(buf, sizeof(*am),
                       uct_uccl_imm_pack(42, UCT_UCCL_KIND_PUT, 0)) != UCS_OK);
    /* a huge claimed length is truncation, not an over-read */
    am->length = UINT32_MAX;
    UT_EQ(data_check(buf, sizeof(*am) + 8, imm), UCS_ERR_MESSAGE_TRUNCATED);

    /* an AM carrying an ACK after its payload */
    check_am_ack(buf, imm);

    /* GET request */
    memset(buf, 0, sizeof(buf));
    req->type        = UCT_UCCL_KIND_GET_REQ;
    req->rkey        = 0x1234;
    req->remote_addr = 0x7f0000001000ull;
    req->length      = 1 << 20;
    req->reply_addr  = 0x7f0000100000ull;
    req->reply_rkey  = 0x5678;
    req->op_id       = 0xdeadbeefcafeull;
    imm              = uct_uccl_imm_pack(7, UCT_UCCL_KIND_GET_REQ, 1);
    data_truncations(buf, sizeof(*req), imm);
    req->length = UINT64_MAX - 10;    /* address range wraps */
    UT_TRUE(data_check(buf, sizeof(*req), imm) != UCS_OK);
    req->length = 1;
    req->rsvd1  = 3;
    UT_TRUE(data_check(buf, sizeof(*req), imm) != UCS_OK);
    req->rsvd1  = 0;
    /* a reply by SEND names no reply buffer, and no other flag exists */
    req->flags  = UCT_UCCL_GET_F_SEND;
    UT_TRUE(data_check(buf, sizeof(*req), imm) != UCS_OK);
    req->reply_addr = 0;
    req->reply_rkey = 0;
    UT_EQ(data_check(buf, sizeof(*req), imm), UCS_OK);
    req->flags  = 0x2;
    UT_TRUE(data_check(buf, sizeof(*req), imm) != UCS_OK);

    /* GET data: header, then the bytes when the status is OK */
    memset(buf, 0, sizeof(buf));
    gdata->type   = UCT_UCCL_KIND_GET_DATA;
    gdata->op_id  = 98;
    gdata->length = 200;
    imm           = uct_uccl_imm_pack(9, UCT_UCCL_KIND_GET_DATA, 1);
    data_truncations(buf, sizeof(*gdata) + 200, imm);
    gdata->status = UCS_ERR_INVALID_ADDR;   /* an error carries no bytes */
    UT_TRUE(data_check(buf, sizeof(*gdata) + 200, imm) != UCS_OK);
    gdata->length = 0;
    UT_EQ(data_check(buf, sizeof(*gdata), imm), UCS_OK);
    gdata->status = 2;
    UT_TRUE(data_check(buf, sizeof(*gdata), imm) != UCS_OK);

    /* GET done */
    memset(buf, 0, sizeof(buf));
    done->type   = UCT_UCCL_KIND_GET_DONE;
    done->status = UCS_ERR_INVALID_ADDR;
    done->op_id  = 99;
    done->length = 0;
    imm          = uct_uccl_imm_pack(8, UCT_UCCL_KIND_GET_DONE, 1);
    data_truncations(buf, sizeof(*done), imm);
    done->status = 1;                  /* not a ucs_status_t */
    UT_TRUE(data_check(buf, sizeof(*done), imm) != UCS_OK);

    /* retransmitted WRITE chunk: header + payload */
    memset(buf, 0, sizeof(buf));
    retx->type        = UCT_UCCL_KIND_RETX;
    retx->imm         = uct_uccl_imm_pack(0xabcdef, UCT_UCCL_KIND_PUT, 1);
    retx->remote_addr = 0x1000;
    retx->rkey        = 77;
    retx->length      = 1000;
    imm               = uct_uccl_imm_pack(0xabcdef, UCT_UCCL_KIND_RETX, 1);
    data_truncations(buf, sizeof(*retx) + 1000, imm);
    retx->imm = uct_uccl_imm_pack(0xabcdef, UCT_UCCL_KIND_GET_RESP, 0);
    UT_EQ(data_check(buf, sizeof(*retx) + 1000, imm), UCS_OK);
    /* inner CSN differs from the outer one */
    retx->imm = uct_uccl_imm_pack(0xabcdee, UCT_UCCL_KIND_PUT, 1);
    UT_TRUE(data_check(buf, sizeof(*retx) + 1000, imm) != UCS_OK);
    /* inner kind must be a WRITE kind */
    retx->imm = uct_uccl_imm_pack(0xabcdef, UCT_UCCL_KIND_AM, 1);
    UT_TRUE(data_check(buf, sizeof(*retx) + 1000, imm) != UCS_OK);
    printf("  data SENDs: AM, GET_REQ, GET_DONE, GET_DATA, RETX accepted; "
           "every truncation and garbled field rejected\n");
}

static size_t build_conn(uint8_t *buf, int type, unsigned paths)
{
    uct_uccl_conn_pkt_t *c = (void*)buf;
    size_t len             = uct_uccl_wire_conn_size(paths);
    unsigned i;

    memset(buf, 0, len);
    uct_uccl_wire_hdr_init(&c->hdr, type, len);
    c->magic       = UCT_UCCL_WIRE_MAGIC;
    c->iface_uuid  = 0x0123456789abcdefull;
    c->token       = 0xfeedfacecafebeefull;
    c->echo_token  = (type == UCT_UCCL_CTL_CONN_REQ) ? 0 : 0x1234;
    c->src_conn_id = 5;
    c->dst_conn_id = (type == UCT_UCCL_CTL_CONN_REQ) ?
                     UCT_UCCL_CONN_ID_NONE : 9;
    c->mode        = UCT_UCCL_MODE_UC;
    c->num_paths   = paths;
    c->mtu         = 4096;
    c->lid         = 3;
    c->ctl_qpn     = 0x123;
    c->chunk_size  = 65536;
    c->rx_buf_size = 65536 + 64;
    c->sack_bits   = 4096;
    c->init_csn    = 0xfffff0;
    c->psn         = 0x42;
    for (i = 0; i < 16; ++i) {
        c->gid[i] = i;
    }
    for (i = 0; i < UCT_UCCL_WIRE_CTL_ALT; ++i) {
        c->ctl_alt_qpn[i] = 0x124 + i;
    }
    for (i = 0; i < paths; ++i) {
        c->qpn[i] = 0x1000 + i;
    }
    return len;
}

/* apply f to a fresh valid packet and expect it rejected */
#define CONN_GARBLE(_paths, _stmt) \
    do { \
        size_t _len = build_conn(buf, UCT_UCCL_CTL_CONN_REQ, _paths); \
        _stmt; \
        if (ctl_check(buf, _len) == UCS_OK) { \
            UT_FAIL("garbled CONN_REQ accepted: %s", #_stmt); \
        } \
        ++ut_checks; \
    } while (0)

static void test_conn(void)
{
    static const unsigned paths[] = {1, 2, 32, 255, 256};
    uint8_t buf[BUF_MAX], copy[BUF_MAX];
    uct_uccl_conn_pkt_t *c = (void*)buf;
    size_t len;
    unsigned i;

    for (i = 0; i < sizeof(paths) / sizeof(paths[0]); ++i) {
        len = build_conn(buf, UCT_UCCL_CTL_CONN_REQ, paths[i]);
        UT_TRUE(len <= UCT_UCCL_WIRE_CTL_MAX);
        ctl_truncations(buf, len);
        memcpy(copy, buf, len);
        UT_EQ(((uct_uccl_conn_pkt_t*)copy)->qpn[paths[i] - 1],
              0x1000 + paths[i] - 1);
        len = build_conn(buf, UCT_UCCL_CTL_CONN_REP, paths[i]);
        ctl_truncations(buf, len);
    }
    UT_EQ(uct_uccl_wire_conn_size(256), 108 + 1024);

    CONN_GARBLE(4, c->magic ^= 1);
    CONN_GARBLE(4, c->hdr.version = UCT_UCCL_WIRE_VERSION + 1);
    CONN_GARBLE(4, c->rsvd = 1);
    CONN_GARBLE(4, c->token = 0);
    CONN_GARBLE(4, c->echo_token = 7);   /* a REQ echoes nothing */
    CONN_GARBLE(4, c->hdr.type = 0);
    CONN_GARBLE(4, c->hdr.type = UCT_UCCL_CTL_LAST);
    CONN_GARBLE(4, c->hdr.length += 4);
    CONN_GARBLE(4, c->hdr.length -= 4);
    CONN_GARBLE(4, c->num_paths = 0);
    CONN_GARBLE(4, c->num_paths = 5);
    CONN_GARBLE(4, c->num_paths = 3);
    CONN_GARBLE(4, c->mode = 2);
    CONN_GARBLE(4, c->flags = 1);
    CONN_GARBLE(4, c->mtu = 1000);
    CONN_GARBLE(4, c->mtu = 8192);
    CONN_GARBLE(4, c->chunk_size = 0);
    CONN_GARBLE(4, c->sack_bits = 0);
    CONN_GARBLE(4, c->sack_bits = UCT_UCCL_WIRE_SACK_MAX_BITS + 1);
    CONN_GARBLE(4, c->init_csn = 1u << 24);
    CONN_GARBLE(4, c->psn = 1u << 24);
    CONN_GARBLE(4, c->qpn[3] = 1u << 24);
    CONN_GARBLE(4, c->ctl_alt_qpn[2] = 1u << 24);
    CONN_GARBLE(4, c->dst_conn_id = 1);   /* a REQ names no peer conn */
    CONN_GARBLE(4, c->status = -1);       /* only a REP carries a status */
    CONN_GARBLE(4, c->hdr.type = UCT_UCCL_CTL_CONN_REP); /* REP: no dst */
    /* 257 paths do not exist */
    len = build_conn(buf, UCT_UCCL_CTL_CONN_REQ, 256);
    c->num_paths = 257;
    c->hdr.length += 4;
    UT_TRUE(ctl_check(buf, len + 4) != UCS_OK);
    /* a REP may carry a rejection */
    len = build_conn(buf, UCT_UCCL_CTL_CONN_REP, 8);
    c->status = UCS_ERR_REJECTED;
    UT_EQ(ctl_check(buf, len), UCS_OK);
    /* the version byte is reported as such */
    c->hdr.version = UCT_UCCL_WIRE_VERSION - 1;
    UT_EQ(ctl_check(buf, len), UCS_ERR_UNSUPPORTED);
    printf("  CONN_REQ/REP: 1..256 paths round trip, all truncations and "
           "23 kinds of garbling rejected\n");
}

/* an ACK record with n SACK words of random content */
static size_t build_ack(void *rec, unsigned n, uint32_t conn)
{
    uct_uccl_ack_t *ack = rec;
    uint64_t w;
    unsigned j;

    uct_uccl_wire_hdr_init(&ack->hdr, UCT_UCCL_CTL_ACK,
                           uct_uccl_wire_ack_size(n));
    ack->dst_conn_id = conn;
    ack->cum_csn     = ut_rand_below(1u << 24);
    ack->echo_csn    = ut_rand_below(1u << 24);
    ack->rx_delay_ns = ut_rand_below(100000);
    ack->credit      = 0;
    ack->echo_path   = ut_rand_below(256);
    ack->flags       = 0;
    ack->sack_words  = n;
    ack->rx_wait_ns  = ut_rand();
    for (j = 0; j < n; ++j) {
        w = ut_rand();
        memcpy((char*)rec + sizeof(*ack) + 8 * j, &w, 8);
    }
    return uct_uccl_wire_ack_size(n);
}

static void test_ack_batch(void)
{
    uint8_t buf[BUF_MAX], ref[8][BUF_MAX];
    uct_uccl_ack_batch_t *b = (void*)buf;
    const uct_uccl_ctl_hdr_t *rec;
    uct_uccl_ack_t *ack;
    unsigned round, count, i, n, nwords[8];
    size_t size;
    void *p;

    for (round = 0; round < 500; ++round) {
        uct_uccl_wire_batch_init(b);
        count = 1 + ut_rand_below(8);
        for (i = 0; i < count; ++i) {
            nwords[i] = ut_rand_below(round < 250 ? 8 : 100);
            size      = uct_uccl_wire_ack_size(nwords[i]);
            p         = uct_uccl_wire_batch_add(b, size,
                                                UCT_UCCL_WIRE_CTL_MAX);
            if (p == NULL) {
                UT_TRUE(b->hdr.length + size > UCT_UCCL_WIRE_CTL_MAX);
                break;
            }
            build_ack(ref[i], nwords[i], 1000 + i);
            memcpy(p, ref[i], size);
        }
        count = i;
        UT_EQ(b->count, count);
        if (count == 0) {
            continue;
        }
        ctl_truncations(buf, b->hdr.length);

        /* decode: the same records in the same order */
        rec = uct_uccl_wire_batch_first(b);
        for (i = 0; i < count; ++i) {
            UT_EQ(rec->type, UCT_UCCL_CTL_ACK);
            ack = (uct_uccl_ack_t*)rec;
            UT_EQ(ack->sack_words, nwords[i]);
            UT_EQ(memcmp(rec, ref[i], uct_uccl_wire_ack_size(nwords[i])), 0);
            rec = uct_uccl_wire_batch_next(rec);
        }
        UT_TRUE((const uint8_t*)rec == buf + b->hdr.length);

        /* garbling: count off by one either way, a record's word count,
         * a record of a type not allowed in a batch, a reserved field */
        ++b->count;
        UT_TRUE(ctl_check(buf, b->hdr.length) != UCS_OK);
        b->count -= 2;
        UT_TRUE(ctl_check(buf, b->hdr.length) != UCS_OK);
        ++b->count;
        ack = (uct_uccl_ack_t*)uct_uccl_wire_batch_first(b);
        ++ack->sack_words;
        UT_TRUE(ctl_check(buf, b->hdr.length) != UCS_OK);
        --ack->sack_words;
        ack->hdr.type = UCT_UCCL_CTL_DISCONNECT;
        UT_TRUE(ctl_check(buf, b->hdr.length) != UCS_OK);
        ack->hdr.type = UCT_UCCL_CTL_ACK;
        ack->rx_wait_ns = UINT32_MAX; /* any value: clamped where used */
        UT_EQ(ctl_check(buf, b->hdr.length), UCS_OK);
        ack->cum_csn = 1u << 24;
        UT_TRUE(ctl_check(buf, b->hdr.length) != UCS_OK);
        ack->cum_csn = 0;
        UT_EQ(ctl_check(buf, b->hdr.length), UCS_OK);
    }

    /* a lone ACK is valid too; the widest one fits a batch in one MTU */
    n = UCT_UCCL_WIRE_SACK_MAX_WORDS;
    size = build_ack(buf, n, 1);
    ctl_truncations(buf, size);
    UT_TRUE(uct_uccl_wire_ack_max_words(UCT_UCCL_WIRE_CTL_MAX) >= n);
    UT_EQ(uct_uccl_wire_ack_max_words(sizeof(uct_uccl_ack_batch_t) +
                                      sizeof(uct_uccl_ack_t) + 17), 2);
    UT_EQ(uct_uccl_wire_ack_max_words(10), 0);
    ((uct_uccl_ack_t*)buf)->sack_words = n + 1;
    ((uct_uccl_ack_t*)buf)->hdr.length = uct_uccl_wire_ack_size(n + 1);
    memset(buf + size, 0, 8);
    UT_TRUE(ctl_check(buf, size + 8) != UCS_OK);
    printf("  ACK batches: 500 random batches round trip; truncations and "
           "garbled counts/records rejected\n");
}

static size_t build_credit(void *rec, uint32_t flags, uint32_t conn)
{
    uct_uccl_credit_t *c = rec;

    memset(c, 0, sizeof(*c));
    uct_uccl_wire_hdr_init(&c->hdr, UCT_UCCL_CTL_CREDIT, sizeof(*c));
    c->dst_conn_id = conn;
    c->token       = 0x0badc0ffee0ddf00ull;
    c->flags       = flags;
    if (flags & UCT_UCCL_CREDIT_F_REQUEST) {
        c->want = (uint32_t)ut_rand();
        c->spec = (uint32_t)ut_rand();
        c->lost = (uint32_t)ut_rand();
        c->held = (uint32_t)ut_rand();
        c->seen = (uint32_t)ut_rand();
    }
    if (flags & UCT_UCCL_CREDIT_F_GRANT) {
        c->grant = (uint32_t)ut_rand();
    }
    return sizeof(*c);
}

/* apply _stmt to a fresh valid credit and expect it rejected */
#define CREDIT_GARBLE(_flags, _stmt) \
    do { \
        size_t _len = build_credit(buf, _flags, 3); \
        _stmt; \
        if (ctl_check(buf, _len) == UCS_OK) { \
            UT_FAIL("garbled CREDIT accepted: %s", #_stmt); \
        } \
        ++ut_checks; \
    } while (0)

/* CREDIT alone and in a batch beside ACKs; the credit an ACK carries */
static void test_credit(void)
{
    static const uint32_t flags[] = {
        UCT_UCCL_CREDIT_F_REQUEST, UCT_UCCL_CREDIT_F_GRANT,
        UCT_UCCL_CREDIT_F_REQUEST | UCT_UCCL_CREDIT_F_GRANT,
        UCT_UCCL_CREDIT_F_GRANT | UCT_UCCL_CREDIT_F_IDLE,
        UCT_UCCL_CREDIT_F_REQUEST | UCT_UCCL_CREDIT_F_GRANT |
        UCT_UCCL_CREDIT_F_IDLE
    };
    uint8_t buf[BUF_MAX], ref[BUF_MAX];
    uct_uccl_ack_batch_t *b = (void*)buf;
    uct_uccl_credit_t *c    = (void*)buf;
    const uct_uccl_ctl_hdr_t *rec;
    uct_uccl_ack_t *ack;
    size_t size;
    unsigned i;
    void *p;

    for (i = 0; i < sizeof(flags) / sizeof(flags[0]); ++i) {
        size = build_credit(buf, flags[i], 7);
        ctl_truncations(buf, size);
        memcpy(ref, buf, size);
        UT_EQ(((uct_uccl_credit_t*)ref)->flags, flags[i]);
    }
    UT_TRUE(!strcmp(uct_uccl_wire_ctl_name(UCT_UCCL_CTL_CREDIT), "CREDIT"));

    CREDIT_GARBLE(UCT_UCCL_CREDIT_F_GRANT, c->flags = 0);
    CREDIT_GARBLE(UCT_UCCL_CREDIT_F_GRANT, c->flags |= 0x8);
    CREDIT_GARBLE(UCT_UCCL_CREDIT_F_REQUEST,
                  c->flags |= UCT_UCCL_CREDIT_F_IDLE); /* hint, no grant */
    CREDIT_GARBLE(UCT_UCCL_CREDIT_F_GRANT, c->want = 1);
    CREDIT_GARBLE(UCT_UCCL_CREDIT_F_GRANT, c->spec = 1);
    CREDIT_GARBLE(UCT_UCCL_CREDIT_F_GRANT, c->lost = 1);
    CREDIT_GARBLE(UCT_UCCL_CREDIT_F_GRANT, c->held = 1);
    CREDIT_GARBLE(UCT_UCCL_CREDIT_F_GRANT, c->seen = 1);
    CREDIT_GARBLE(UCT_UCCL_CREDIT_F_REQUEST, c->reserved = 1);
    CREDIT_GARBLE(UCT_UCCL_CREDIT_F_REQUEST, c->grant = 1);
    CREDIT_GARBLE(UCT_UCCL_CREDIT_F_REQUEST, c->hdr.length = sizeof(*c) + 8);
    CREDIT_GARBLE(UCT_UCCL_CREDIT_F_REQUEST, c->hdr.length = sizeof(*c) - 4);
    CREDIT_GARBLE(UCT_UCCL_CREDIT_F_REQUEST,
                  c->hdr.version = UCT_UCCL_WIRE_VERSION - 1);
    /* a longer packet than its record is garbage after it */
    size = build_credit(buf, UCT_UCCL_CREDIT_F_GRANT, 3);
    c->hdr.length = size + 8;
    UT_TRUE(ctl_check(buf, size + 8) != UCS_OK);

    /* a batch of ACKs and CREDITs, in any order, decodes as built */
    for (i = 0; i < 200; ++i) {
        unsigned n = 1 + ut_rand_below(8), j, types = 0;

        uct_uccl_wire_batch_init(b);
        for (j = 0; j < n; ++j) {
            if (ut_rand_below(2)) {
                size = build_credit(ref, flags[ut_rand_below(3)], j);
                types |= 1u << j;
            } else {
                size = build_ack(ref, ut_rand_below(4), j);
            }
            p = uct_uccl_wire_batch_add(b, size, UCT_UCCL_WIRE_CTL_MAX);
            UT_TRUE(p != NULL);
            memcpy(p, ref, size);
        }
        ctl_truncations(buf, b->hdr.length);
        rec = uct_uccl_wire_batch_first(b);
        for (j = 0; j < n; ++j) {
            UT_EQ(rec->type, (types & (1u << j)) ? UCT_UCCL_CTL_CREDIT :
                                                   UCT_UCCL_CTL_ACK);
            UT_EQ(((const uct_uccl_credit_t*)rec)->dst_conn_id, j);
            rec = uct_uccl_wire_batch_next(rec);
        }
        UT_TRUE((const uint8_t*)rec == buf + b->hdr.length);
        /* a garbled credit record spoils the batch */
        if (types & 1) {
            ((uct_uccl_credit_t*)uct_uccl_wire_batch_first(b))->flags = 0;
            UT_TRUE(ctl_check(buf, b->hdr.length) != UCS_OK);
        }
    }

    /* an ACK's credit is a grant only with its flag */
    size = build_ack(buf, 2, 1);
    ack  = (void*)buf;
    ack->credit = 12345;
    UT_TRUE(ctl_check(buf, size) != UCS_OK);
    ack->flags = UCT_UCCL_ACK_F_CREDIT;
    ctl_truncations(buf, size);
    ack->credit = 0;   /* a cumulative grant may be 0 */
    UT_EQ(ctl_check(buf, size), UCS_OK);
    ack->flags = UCT_UCCL_ACK_F_CREDIT | UCT_UCCL_ACK_F_BUSY;
    UT_EQ(ctl_check(buf, size), UCS_OK);
    ack->flags = 0x4;
    UT_TRUE(ctl_check(buf, size) != UCS_OK);
    printf("  CREDIT: request, grant, both round trip; 8 kinds of garbling "
           "rejected; 200 mixed batches; an ACK's grant needs its flag\n");
}

/* PATH_RESET: each step with its QPN rule, the path and QPN bounds */
static void test_path_reset(uint8_t *buf)
{
    uct_uccl_path_reset_t *r = (void*)buf;

    memset(buf, 0, sizeof(*r));
    uct_uccl_wire_hdr_init(&r->hdr, UCT_UCCL_CTL_PATH_RESET, sizeof(*r));
    r->dst_conn_id = 3;
    r->token       = 0x1234;
    r->src_conn_id = 4;
    r->path        = UCT_UCCL_WIRE_MAX_PATHS - 1;
    r->step        = UCT_UCCL_PATH_RESET_REQUEST;
    r->gen         = 7;
    r->qpn         = 0xffffff;
    ctl_truncations(buf, sizeof(*r));
    r->step = UCT_UCCL_PATH_RESET_REPLY;
    UT_EQ(ctl_check(buf, sizeof(*r)), UCS_OK);
    r->qpn = 0;                        /* a REPLY names its QP */
    UT_TRUE(ctl_check(buf, sizeof(*r)) != UCS_OK);
    r->step = UCT_UCCL_PATH_RESET_CONFIRM;
    UT_EQ(ctl_check(buf, sizeof(*r)), UCS_OK);
    r->qpn = 5;                        /* a CONFIRM names none */
    UT_TRUE(ctl_check(buf, sizeof(*r)) != UCS_OK);
    r->step = UCT_UCCL_PATH_RESET_REQUEST;
    r->qpn  = 1u << 24;
    UT_TRUE(ctl_check(buf, sizeof(*r)) != UCS_OK);
    r->qpn  = 5;
    r->path = UCT_UCCL_WIRE_MAX_PATHS;
    UT_TRUE(ctl_check(buf, sizeof(*r)) != UCS_OK);
    r->path = 0;
    r->step = UCT_UCCL_PATH_RESET_LAST;
    UT_TRUE(ctl_check(buf, sizeof(*r)) != UCS_OK);
    r->step  = UCT_UCCL_PATH_RESET_REQUEST;
    r->flags = UCT_UCCL_PATH_RESET_F_PSN;  /* a REQUEST tells no PSN */
    UT_TRUE(ctl_check(buf, sizeof(*r)) != UCS_OK);
    r->step  = UCT_UCCL_PATH_RESET_REPLY;
    r->psn   = 0xffffff;
    UT_EQ(ctl_check(buf, sizeof(*r)), UCS_OK);
    r->psn   = 1u << 24;                   /* 24 bits */
    UT_TRUE(ctl_check(buf, sizeof(*r)) != UCS_OK);
    r->flags = 0;                          /* a PSN needs its flag */
    r->psn   = 7;
    UT_TRUE(ctl_check(buf, sizeof(*r)) != UCS_OK);
    r->flags = 2;                          /* unknown flags */
    r->psn   = 0;
    UT_TRUE(ctl_check(buf, sizeof(*r)) != UCS_OK);
    r->flags = 0;
    r->step  = UCT_UCCL_PATH_RESET_REQUEST;
    UT_EQ(ctl_check(buf, sizeof(*r)), UCS_OK);
    UT_TRUE(!strcmp(uct_uccl_wire_ctl_name(UCT_UCCL_CTL_PATH_RESET),
                    "PATH_RESET"));
}

static void test_small_ctl(void)
{
    uint8_t buf[BUF_MAX];
    uct_uccl_disconnect_t *d = (void*)buf;
    uct_uccl_keepalive_t *k  = (void*)buf;

    memset(buf, 0, sizeof(buf));
    uct_uccl_wire_hdr_init(&d->hdr, UCT_UCCL_CTL_DISCONNECT, sizeof(*d));
    d->dst_conn_id = 1;
    d->src_conn_id = 2;
    d->reason      = UCS_ERR_CONNECTION_RESET;
    ctl_truncations(buf, sizeof(*d));
    d->reason = 5;
    UT_TRUE(ctl_check(buf, sizeof(*d)) != UCS_OK);
    /* a longer claimed length than the type has */
    d->reason     = 0;
    d->hdr.length = sizeof(*d) + 4;
    UT_TRUE(ctl_check(buf, sizeof(*d) + 4) != UCS_OK);

    memset(buf, 0, sizeof(buf));
    uct_uccl_wire_hdr_init(&k->hdr, UCT_UCCL_CTL_KEEPALIVE, sizeof(*k));
    k->flags = UCT_UCCL_KEEPALIVE_REPLY;
    k->ts_ns = 123456789;
    ctl_truncations(buf, sizeof(*k));
    k->flags = 2;
    UT_TRUE(ctl_check(buf, sizeof(*k)) != UCS_OK);

    test_path_reset(buf);

    UT_TRUE(!strcmp(uct_uccl_wire_ctl_name(UCT_UCCL_CTL_ACK_BATCH),
                    "ACK_BATCH"));
    UT_TRUE(!strcmp(uct_uccl_wire_ctl_name(0), "?"));
    UT_TRUE(!strcmp(uct_uccl_wire_ctl_name(200), "?"));
}

/* random and mutated input: must return, never over-read; anything
 * accepted must be self-consistent */
static void test_fuzz(void)
{
    uint8_t buf[BUF_MAX], good[BUF_MAX];
    unsigned i, j, accepted = 0, mutated_ok = 0;
    size_t len, glen;
    uint32_t imm;

    for (i = 0; i < 200000; ++i) {
        len = ut_rand_below(600);
        for (j = 0; j < len; ++j) {
            buf[j] = (uint8_t)ut_rand();
        }
        if ((len >= 4) && ut_rand_below(2)) {
            /* plausible header, random body */
            buf[0] = 1 + ut_rand_below(UCT_UCCL_CTL_LAST - 1);
            buf[1] = UCT_UCCL_WIRE_VERSION;
            *(uint16_t*)&buf[2] = ut_rand_below(len + 1);
        }
        if (ctl_check(buf, len) == UCS_OK) {
            ++accepted;
            UT_TRUE(((uct_uccl_ctl_hdr_t*)buf)->length <= len);
        }
        imm = (uint32_t)ut_rand() & ~UCT_UCCL_IMM_RSVD_MASK;
        if (len > 0) {
            buf[0] = uct_uccl_imm_kind(imm);
        }
        (void)data_check(buf, len, imm);
    }

    /* single-byte mutations of a valid batch */
    uct_uccl_wire_batch_init((uct_uccl_ack_batch_t*)good);
    for (j = 0; j < 4; ++j) {
        build_ack(uct_uccl_wire_batch_add((uct_uccl_ack_batch_t*)good,
                                          uct_uccl_wire_ack_size(j + 1),
                                          BUF_MAX), j + 1, j);
    }
    build_credit(uct_uccl_wire_batch_add((uct_uccl_ack_batch_t*)good,
                                         sizeof(uct_uccl_credit_t), BUF_MAX),
                 UCT_UCCL_CREDIT_F_REQUEST | UCT_UCCL_CREDIT_F_GRANT, 9);
    glen = ((uct_uccl_ack_batch_t*)good)->hdr.length;
    for (i = 0; i < 100000; ++i) {
        memcpy(buf, good, glen);
        buf[ut_rand_below(glen)] ^= 1 + ut_rand_below(255);
        if (ctl_check(buf, glen) == UCS_OK) {
            ++mutated_ok;             /* e.g. a SACK bit or a conn id */
        }
    }
    printf("  fuzz: 200000 random packets (%u accepted, all consistent), "
           "100000 mutated batches (%u still valid)\n", accepted,
           mutated_ok);
}

int main(int argc, char **argv)
{
    ut_init(argc, argv, "test_wire");
    test_imm();
    test_data();
    test_conn();
    test_ack_batch();
    test_credit();
    test_small_ctl();
    test_fuzz();
    return ut_done("test_wire");
}

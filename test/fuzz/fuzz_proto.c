/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * libFuzzer target: uccl's protocol core against input a peer controls.
 * The input is a program for a sender (tracker) and a receiver (SACK state
 * and ordered delivery) of one conn:
 *
 *   'S' n path          the sender posts n chunks on a path
 *   'R' off ordered     the receiver sees CSN (start + off)
 *   'A'                 the receiver's ACK, packed, checked and applied
 *   'C' len2 bytes...   a raw control packet: checked, and applied to the
 *                       sender when accepted (ACKs, batches of them)
 *   'D' imm4 len2 bytes a raw SEND payload of a data QP: checked
 *   'T' age             the sender's loss rules (fast retransmit, RTO)
 *
 * Invariants hold after every step (trap otherwise): una <= nxt, what the
 * tracker acked was sent and is acked once, ordered messages come out once
 * and in CSN order, after everything before them arrived.
 */
#include <uct/uccl/proto/uccl_order.h>
#include <uct/uccl/proto/uccl_sack.h>
#include <uct/uccl/proto/uccl_tracker.h>
#include <uct/uccl/proto/uccl_wire.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW      256
#define PATHS       8
#define HOLD_LIMIT  8
#define CHECK(_c)   do { if (!(_c)) { __builtin_trap(); } } while (0)

typedef struct {
    uct_uccl_tracker_t t;
    uct_uccl_sack_t    s;
    uct_uccl_order_t   o;
    uint32_t           start;           /* first CSN of the stream */
    uint8_t            sent[1u << 16];  /* by CSN offset: 1 sent, 2 acked */
    uint8_t            ordered[1u << 16];
    uint8_t            arrived[1u << 16];
    uint32_t           delivered_next;  /* offset: none below is pending */
    uint64_t           now;
} fz_t;

typedef struct {
    const uint8_t *p;
    size_t        left;
} fz_in_t;

static int fz_byte(fz_in_t *in, uint8_t *b)
{
    if (in->left == 0) {
        return 0;
    }
    *b = *in->p++;
    --in->left;
    return 1;
}

static uint32_t fz_off(const fz_t *f, uint32_t csn)
{
    return uct_uccl_seq_dist(csn, f->start);
}

static void fz_acked(void *arg, uint32_t csn, uct_uccl_tx_entry_t *e)
{
    fz_t *f      = arg;
    uint32_t off = fz_off(f, csn);

    CHECK(off < sizeof(f->sent) && (f->sent[off] == 1));
    CHECK(e->desc == &f->sent[off]);
    f->sent[off] = 2;
}

static ucs_status_t fz_retx(void *arg, uint32_t csn, uct_uccl_tx_entry_t *e)
{
    fz_t *f = arg;

    CHECK(fz_off(f, csn) < sizeof(f->sent) && (f->sent[fz_off(f, csn)] == 1));
    e->path = (e->path + 1) % PATHS;
    return UCS_OK;
}

static void fz_check_tracker(const fz_t *f)
{
    CHECK(uct_uccl_tracker_outstanding(&f->t) <= f->t.limit);
    CHECK(f->t.sacked_cnt <= uct_uccl_tracker_outstanding(&f->t));
}

static void fz_send(fz_t *f, fz_in_t *in)
{
    uint8_t n, path;
    uint32_t csn;

    if (!fz_byte(in, &n) || !fz_byte(in, &path)) {
        return;
    }
    while (n-- > 0 && !uct_uccl_tracker_full(&f->t) &&
           (fz_off(f, f->t.nxt) < sizeof(f->sent))) {
        csn = uct_uccl_tracker_add(&f->t, 4096, path % PATHS, ++f->now,
                                   &f->sent[fz_off(f, f->t.nxt)]);
        f->sent[fz_off(f, csn)] = 1;
    }
}

/* an ordered message leaves: once, in order, after all before it */
static void fz_deliver(fz_t *f, uint32_t off)
{
    uint32_t i;

    CHECK(f->ordered[off] == 1);
    for (i = f->delivered_next; i < off; ++i) {
        CHECK(f->arrived[i] && (f->ordered[i] != 1));
    }
    f->ordered[off]   = 2;
    f->delivered_next = off + 1;
}

static void fz_receive(fz_t *f, fz_in_t *in)
{
    uint8_t off, ordered;
    uct_uccl_sack_result_t r;
    uint32_t csn;
    void *d;

    if (!fz_byte(in, &off) || !fz_byte(in, &ordered)) {
        return;
    }
    csn     = uct_uccl_seq_add(f->s.cum, off);
    ordered = ordered & 1;
    if (fz_off(f, csn) >= sizeof(f->arrived)) {
        return;
    }
    if (ordered && !uct_uccl_order_may_take(&f->o, csn, f->s.cum) &&
        !uct_uccl_sack_has(&f->s, csn)) {
        return;   /* refused unrecorded */
    }
    r = uct_uccl_sack_record(&f->s, csn);
    if ((r == UCT_UCCL_SACK_DUPLICATE) || (r == UCT_UCCL_SACK_OUT_OF_WINDOW)) {
        return;
    }
    CHECK(!f->arrived[fz_off(f, csn)]);
    f->arrived[fz_off(f, csn)] = 1;
    if (ordered) {
        f->ordered[fz_off(f, csn)] = 1;
        if (uct_uccl_order_ready(&f->o, csn, f->s.cum)) {
            fz_deliver(f, fz_off(f, csn));
        } else {
            CHECK(uct_uccl_order_hold(&f->o, csn, f->s.cum,
                                      &f->ordered[fz_off(f, csn)]) == UCS_OK);
        }
    }
    while ((d = uct_uccl_order_pop(&f->o, f->s.cum)) != NULL) {
        fz_deliver(f, (uint8_t*)d - f->ordered);
    }
}

/* the receiver's own ACK, through the wire check, to the tracker */
static void fz_ack(fz_t *f)
{
    uint64_t buf[(sizeof(uct_uccl_ack_t) + 8 * UCT_UCCL_WIRE_SACK_MAX_WORDS) /
                 8 + 1];
    uct_uccl_ack_t *ack = (uct_uccl_ack_t*)buf;
    unsigned words;

    memset(buf, 0, sizeof(buf));
    words = uct_uccl_sack_ack_pack(&f->s, ack, UCT_UCCL_WIRE_SACK_MAX_WORDS);
    uct_uccl_wire_hdr_init(&ack->hdr, UCT_UCCL_CTL_ACK,
                           uct_uccl_wire_ack_size(words));
    CHECK(uct_uccl_wire_ctl_check(ack, ack->hdr.length) == UCS_OK);
    (void)uct_uccl_tracker_ack(&f->t, ack, ++f->now, fz_acked, f, NULL);
}

/* the next len bytes of the input in a buffer of exactly that size, so
 * that reading past what was received is an ASan report; 8-byte aligned
 * like a receive buffer */
static void *fz_take(fz_in_t *in, size_t max, size_t *len_p)
{
    uint8_t lo, hi;
    size_t len;
    void *buf;

    if (!fz_byte(in, &lo) || !fz_byte(in, &hi)) {
        return NULL;
    }
    len = ((size_t)hi << 8 | lo) % (max + 1);
    len = (len < in->left) ? len : in->left;
    buf = malloc(len ? len : 1);
    CHECK(buf != NULL);
    memcpy(buf, in->p, len);
    in->p    += len;
    in->left -= len;
    *len_p    = len;
    return buf;
}

/* a control packet the peer made up */
static void fz_raw_ctl(fz_t *f, fz_in_t *in)
{
    const uct_uccl_ctl_hdr_t *rec;
    const uct_uccl_ack_batch_t *b;
    size_t len;
    unsigned i;
    void *buf;

    buf = fz_take(in, UCT_UCCL_WIRE_CTL_MAX, &len);
    if (buf == NULL) {
        return;
    }
    if (uct_uccl_wire_ctl_check(buf, len) != UCS_OK) {
        free(buf);
        return;
    }
    rec = (const uct_uccl_ctl_hdr_t*)buf;
    if (rec->type == UCT_UCCL_CTL_ACK) {
        (void)uct_uccl_tracker_ack(&f->t, (const uct_uccl_ack_t*)rec,
                                   ++f->now, fz_acked, f, NULL);
    } else if (rec->type == UCT_UCCL_CTL_ACK_BATCH) {
        b   = (const uct_uccl_ack_batch_t*)buf;
        rec = uct_uccl_wire_batch_first(b);
        for (i = 0; i < b->count; ++i) {
            CHECK((const char*)rec + rec->length <= (const char*)buf + len);
            (void)uct_uccl_tracker_ack(&f->t, (const uct_uccl_ack_t*)rec,
                                       ++f->now, fz_acked, f, NULL);
            rec = uct_uccl_wire_batch_next(rec);
        }
    }
    free(buf);
}

/* a SEND's payload the peer made up, as the receiver checks it */
static void fz_raw_data(fz_in_t *in)
{
    uint8_t b[4];
    uint32_t imm;
    size_t len;
    unsigned i;
    void *buf;

    for (i = 0; i < 4; ++i) {
        if (!fz_byte(in, &b[i])) {
            return;
        }
    }
    memcpy(&imm, b, 4);
    buf = fz_take(in, 4096, &len);
    if (buf != NULL) {
        (void)uct_uccl_wire_data_check(buf, len, imm);
        free(buf);
    }
}

static void fz_timers(fz_t *f, fz_in_t *in)
{
    uint8_t age;

    if (!fz_byte(in, &age)) {
        return;
    }
    f->now += age;
    (void)uct_uccl_tracker_fast_retx(&f->t, f->now, age, 16, fz_retx, f);
    (void)uct_uccl_tracker_expire(&f->t, f->now, age + 1, 4, fz_retx, f);
}

static void fz_drop(void *arg, void *desc)
{
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fz_t f;
    uct_uccl_tracker_params_t tp = {
        .size = WINDOW, .dupack_thresh = 3, .reorder_csns = 3,
        .num_paths = PATHS
    };
    fz_in_t in = { .p = data, .left = size };
    uint8_t op, s0 = 0, s1 = 0;

    memset(&f, 0, sizeof(f));
    (void)fz_byte(&in, &s0);
    (void)fz_byte(&in, &s1);
    f.start     = (UCT_UCCL_SEQ_MASK - 300 + ((uint32_t)s1 << 8 | s0)) &
                  UCT_UCCL_SEQ_MASK;   /* near the wrap */
    tp.init_csn = f.start;
    CHECK(uct_uccl_tracker_init(&f.t, &tp) == UCS_OK);
    CHECK(uct_uccl_sack_init(&f.s, WINDOW, f.start) == UCS_OK);
    CHECK(uct_uccl_order_init(&f.o, WINDOW, HOLD_LIMIT) == UCS_OK);
    uct_uccl_tracker_set_limit(&f.t, WINDOW);

    while (fz_byte(&in, &op)) {
        switch (op) {
        case 'S': fz_send(&f, &in); break;
        case 'R': fz_receive(&f, &in); break;
        case 'A': fz_ack(&f); break;
        case 'C': fz_raw_ctl(&f, &in); break;
        case 'D': fz_raw_data(&in); break;
        case 'T': fz_timers(&f, &in); break;
        default: break;
        }
        fz_check_tracker(&f);
    }

    uct_uccl_order_drain(&f.o, fz_drop, NULL);
    uct_uccl_order_cleanup(&f.o);
    uct_uccl_sack_cleanup(&f.s);
    uct_uccl_tracker_cleanup(&f.t);
    return 0;
}

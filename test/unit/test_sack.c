/*
 * Receiver SACK state against a reference model: random arrival orders,
 * duplicates, window edges, sequence wrap, and the bitmap round trip
 * receiver -> ACK -> sender tracker.
 */
#include "unit_test.h"

#include <uct/uccl/proto/uccl_sack.h>
#include <uct/uccl/proto/uccl_tracker.h>

#include <string.h>

#define MAX_WORDS UCT_UCCL_WIRE_SACK_MAX_WORDS

typedef union {
    uct_uccl_ack_t ack;
    uint8_t        buf[sizeof(uct_uccl_ack_t) + 8 * MAX_WORDS];
} ack_buf_t;

static uint64_t ack_word(const uct_uccl_ack_t *ack, unsigned j)
{
    uint64_t w;

    memcpy(&w, (const char*)ack + sizeof(*ack) + 8 * j, sizeof(w));
    return w;
}

static void test_edges(void)
{
    const uint32_t W = 256;
    uint32_t init    = UCT_UCCL_SEQ_MASK - 100; /* cross the wrap */
    uct_uccl_sack_t s;
    ack_buf_t a;
    unsigned n;

    UT_EQ(uct_uccl_sack_init(&s, 100, 0), UCS_ERR_INVALID_PARAM);
    UT_EQ(uct_uccl_sack_init(&s, 32, 0), UCS_ERR_INVALID_PARAM);
    UT_EQ(uct_uccl_sack_init(&s, 32768, 0), UCS_ERR_INVALID_PARAM);
    UT_EQ(uct_uccl_sack_init(&s, 64, 1u << 24), UCS_ERR_INVALID_PARAM);
    UT_EQ(uct_uccl_sack_init(&s, W, init), UCS_OK);

    /* nothing received: no SACK words, cum = init */
    n = uct_uccl_sack_ack_pack(&s, &a.ack, MAX_WORDS);
    UT_EQ(n, 0);
    UT_EQ(a.ack.cum_csn, init);

    /* window edge: cum + W - 1 accepted, cum + W not */
    UT_EQ(uct_uccl_sack_record(&s, uct_uccl_seq_add(init, W)),
          UCT_UCCL_SACK_OUT_OF_WINDOW);
    UT_EQ(uct_uccl_sack_record(&s, uct_uccl_seq_add(init, W - 1)),
          UCT_UCCL_SACK_OUT_OF_ORDER);
    UT_EQ(uct_uccl_sack_record(&s, uct_uccl_seq_add(init, W - 1)),
          UCT_UCCL_SACK_DUPLICATE);
    UT_EQ(uct_uccl_sack_record(&s, uct_uccl_seq_add(init, 1u << 22)),
          UCT_UCCL_SACK_OUT_OF_WINDOW);
    /* far "behind" is old: a duplicate */
    UT_EQ(uct_uccl_sack_record(&s, uct_uccl_seq_add(init, 1u << 23)),
          UCT_UCCL_SACK_DUPLICATE);
    UT_TRUE(uct_uccl_sack_has_holes(&s));
    UT_EQ(s.high, uct_uccl_seq_add(init, W));

    /* ACK: one bit at offset W-1 from cum, base = cum & ~63 */
    n = uct_uccl_sack_ack_pack(&s, &a.ack, MAX_WORDS);
    UT_EQ(a.ack.cum_csn, init);
    UT_EQ(n, ((init & 63) + W + 63) / 64);
    UT_EQ(ack_word(&a.ack, n - 1),
          1ull << (((init & 63) + W - 1) & 63));
    /* truncated export keeps the first words only */
    UT_EQ(uct_uccl_sack_ack_pack(&s, &a.ack, 1), 1);
    UT_EQ(ack_word(&a.ack, 0), 0);

    /* fill everything in order, crossing 2^24: cum jumps over the parked
     * one at W-1 and the slot is free again one window later */
    for (n = 0; n < W - 1; ++n) {
        UT_EQ(uct_uccl_sack_record(&s, uct_uccl_seq_add(init, n)),
              UCT_UCCL_SACK_IN_ORDER);
    }
    UT_EQ(s.cum, uct_uccl_seq_add(init, W));
    UT_TRUE(!uct_uccl_sack_has_holes(&s));
    UT_TRUE(uct_uccl_sack_has(&s, init));
    UT_TRUE(!uct_uccl_sack_has(&s, s.cum));
    UT_EQ(uct_uccl_sack_record(&s, init), UCT_UCCL_SACK_DUPLICATE);
    UT_EQ(uct_uccl_sack_record(&s, uct_uccl_seq_add(init, 2 * W - 1)),
          UCT_UCCL_SACK_OUT_OF_ORDER);
    UT_EQ(uct_uccl_sack_record(&s, uct_uccl_seq_add(init, 2 * W)),
          UCT_UCCL_SACK_OUT_OF_WINDOW);
    UT_EQ(uct_uccl_sack_ack_pack(&s, &a.ack, MAX_WORDS),
          ((s.cum & 63) + W + 63) / 64);
    uct_uccl_sack_cleanup(&s);

    /* widest window with an unaligned cum needs every one of MAX_WORDS */
    UT_EQ(uct_uccl_sack_init(&s, UCT_UCCL_WIRE_SACK_MAX_BITS, 5), UCS_OK);
    UT_EQ(uct_uccl_sack_record(&s, 5 + UCT_UCCL_WIRE_SACK_MAX_BITS - 1),
          UCT_UCCL_SACK_OUT_OF_ORDER);
    UT_EQ(uct_uccl_sack_record(&s, 5 + UCT_UCCL_WIRE_SACK_MAX_BITS),
          UCT_UCCL_SACK_OUT_OF_WINDOW);
    UT_EQ(uct_uccl_sack_ack_pack(&s, &a.ack, MAX_WORDS), MAX_WORDS);
    UT_EQ(ack_word(&a.ack, MAX_WORDS - 1), 1ull << 4);
    UT_EQ(uct_uccl_wire_ack_size(MAX_WORDS) <=
          UCT_UCCL_WIRE_CTL_MAX - sizeof(uct_uccl_ack_batch_t), 1);
    uct_uccl_sack_cleanup(&s);
}

/*
 * One connection's life: a sender limited to W chunks in flight, arrivals
 * in random order with duplicates, periodic ACKs (sometimes truncated)
 * applied to a tracker. The model: rx[] and acked[] per chunk offset.
 */
typedef struct {
    uint8_t  *rx;       /* received, by offset from init */
    uint8_t  *acked;    /* acked at the sender */
    uint32_t init;
    uint32_t nacked;
} model_t;

static void round_ack_cb(void *arg, uint32_t csn, uct_uccl_tx_entry_t *e)
{
    model_t *m   = arg;
    uint32_t off = uct_uccl_seq_dist(csn, m->init);

    if (m->acked[off]) {
        UT_FAIL("csn %u acked twice", csn);
    }
    if (!m->rx[off]) {
        UT_FAIL("csn %u acked but never received", csn);
    }
    if ((uintptr_t)e->desc != off + 1) {
        UT_FAIL("csn %u: desc %p, expected %u", csn, e->desc, off + 1);
    }
    m->acked[off] = 1;
    ++m->nacked;
}

static void test_round(unsigned round)
{
    uint32_t W     = 64u << ut_rand_below(7); /* 64 .. 4096 */
    uint32_t total = W * (4 + ut_rand_below(8));
    uint32_t init  = (round & 1) ? UCT_UCCL_SEQ_MASK - ut_rand_below(3 * W) :
                                   ut_rand_below(1u << 24);
    uint32_t *flight = malloc(sizeof(*flight) * 2 * W);
    uint32_t *sent   = malloc(sizeof(*sent) * total);
    uint32_t nflight = 0, nsent = 0, delivered = 0, dups = 0, acks = 0;
    uint32_t i, off, cum_off, csn, words, base;
    uct_uccl_tracker_params_t tp = {
        .size = W, .init_csn = init, .dupack_thresh = 3, .num_paths = 1
    };
    uct_uccl_sack_result_t res, exp;
    uct_uccl_tracker_t t;
    uct_uccl_sack_t s;
    ack_buf_t a;
    model_t m;
    uint64_t w;

    m.rx     = calloc(total, 1);
    m.acked  = calloc(total, 1);
    m.init   = init;
    m.nacked = 0;
    UT_EQ(uct_uccl_sack_init(&s, W, init), UCS_OK);
    UT_EQ(uct_uccl_tracker_init(&t, &tp), UCS_OK);

    cum_off = 0;
    while (m.nacked < total) {
        /* send what the window allows, in bursts */
        while ((nsent < total) && !uct_uccl_tracker_full(&t) &&
               (ut_rand_below(4) != 0)) {
            csn = uct_uccl_tracker_add(&t, 1000, 0, nsent,
                                       (void*)(uintptr_t)(nsent + 1));
            UT_EQ(csn, uct_uccl_seq_add(init, nsent));
            flight[nflight++] = nsent;
            sent[nsent]       = nsent;
            ++nsent;
        }

        /* deliver one random in-flight chunk, or replay an old one */
        if ((nflight > 0) && (ut_rand_below(8) != 0)) {
            i   = ut_rand_below(nflight);
            off = flight[i];
            flight[i] = flight[--nflight];
        } else if (nsent > 0) {
            off = sent[ut_rand_below(nsent)];
            if (!m.rx[off]) {
                continue;           /* still in flight: not a replay */
            }
            ++dups;
        } else {
            continue;
        }

        if (m.rx[off]) {
            exp = UCT_UCCL_SACK_DUPLICATE;
        } else if (off == cum_off) {
            exp = UCT_UCCL_SACK_IN_ORDER;
        } else {
            exp = UCT_UCCL_SACK_OUT_OF_ORDER;
        }
        res = uct_uccl_sack_record(&s, uct_uccl_seq_add(init, off));
        if (res != exp) {
            UT_FAIL("W %u csn %u (off %u, cum_off %u): result %d, "
                    "expected %d", W, uct_uccl_seq_add(init, off), off,
                    cum_off, res, exp);
        }
        if (exp != UCT_UCCL_SACK_DUPLICATE) {
            m.rx[off] = 1;
            ++delivered;
            while ((cum_off < total) && m.rx[cum_off]) {
                ++cum_off;
            }
        }
        if (s.cum != uct_uccl_seq_add(init, cum_off)) {
            UT_FAIL("cum %u, expected %u", s.cum,
                    uct_uccl_seq_add(init, cum_off));
        }

        /* ACK now and then, or when the sender is stuck */
        if ((ut_rand_below(6) == 0) || (nflight == 0)) {
            words = (ut_rand_below(4) == 0) ? ut_rand_below(3) : MAX_WORDS;
            words = uct_uccl_sack_ack_pack(&s, &a.ack, words);
            a.ack.echo_csn    = s.cum;
            a.ack.rx_delay_ns = 0;
            ++acks;
            /* exported words are exactly the model's arrivals >= cum */
            base = s.cum & ~63u;
            for (i = 0; i < words * 64; ++i) {
                off = uct_uccl_seq_dist(uct_uccl_seq_add(base, i), init);
                w   = (ack_word(&a.ack, i / 64) >> (i % 64)) & 1;
                if (w != ((off >= cum_off) && (off < total) && m.rx[off])) {
                    UT_FAIL("ack bit %u (off %u): %u", i, off, (unsigned)w);
                }
            }
            UT_EQ(uct_uccl_tracker_ack(&t, &a.ack, 0, round_ack_cb, &m,
                                       NULL), UCS_OK);
            UT_EQ(t.una, s.cum);
            /* with a full export the sender knows all the receiver knows */
            if (words == uct_uccl_sack_ack_pack(&s, &a.ack, MAX_WORDS)) {
                for (off = cum_off; off < nsent; ++off) {
                    if (m.acked[off] != m.rx[off]) {
                        UT_FAIL("off %u: acked %u rx %u", off, m.acked[off],
                                m.rx[off]);
                    }
                }
            }
        }
    }

    UT_EQ(delivered, total);
    UT_EQ(m.nacked, total);
    UT_TRUE(uct_uccl_tracker_empty(&t));
    UT_EQ(t.inflight_bytes, 0);
    UT_EQ(t.sacked_cnt, 0);
    UT_TRUE(!uct_uccl_sack_has_holes(&s));
    if (round < 4) {
        printf("  round %u: W %u init %u: %u chunks, %u replays, %u acks\n",
               round, W, init, total, dups, acks);
    }
    uct_uccl_tracker_cleanup(&t);
    uct_uccl_sack_cleanup(&s);
    free(m.rx);
    free(m.acked);
    free(flight);
    free(sent);
}

int main(int argc, char **argv)
{
    unsigned r;

    ut_init(argc, argv, "test_sack");
    test_edges();
    for (r = 0; r < 60; ++r) {
        test_round(r);
    }
    printf("  60 rounds: every arrival classified as the model says, cum "
           "and exported bitmaps exact, every chunk acked once\n");
    return ut_done("test_sack");
}

/*
 * Receiver SACK state (see uccl_sack.h).
 */
#include "uccl_sack.h"

#include <stdlib.h>
#include <string.h>


ucs_status_t uct_uccl_sack_init(uct_uccl_sack_t *s, uint32_t window,
                                uint32_t init_csn)
{
    uint32_t words;

    if ((window < 64) || (window > UCT_UCCL_WIRE_SACK_MAX_BITS) ||
        (window & (window - 1)) || (init_csn & ~UCT_UCCL_SEQ_MASK)) {
        return UCS_ERR_INVALID_PARAM;
    }

    words   = 2 * window / 64;
    s->bits = calloc(words, sizeof(*s->bits));
    if (s->bits == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    s->cum       = init_csn;
    s->high      = init_csn;
    s->window    = window;
    s->word_mask = words - 1;
    return UCS_OK;
}

void uct_uccl_sack_cleanup(uct_uccl_sack_t *s)
{
    free(s->bits);
    s->bits = NULL;
}

void uct_uccl_sack_advance(uct_uccl_sack_t *s)
{
    uint64_t *w, run;
    unsigned off, n;

    for (;;) {
        w   = &s->bits[(s->cum >> 6) & s->word_mask];
        off = s->cum & 63;
        run = ~(*w >> off);         /* first zero from cum = end of run */
        n   = run ? __builtin_ctzll(run) : 64;
        if (n > 64 - off) {
            n = 64 - off;
        }
        if (n == 0) {
            break;
        }
        /* forget the passed bits so the slot can be reused a ring later */
        *w    &= ~(((n == 64) ? ~0ull : ((1ull << n) - 1)) << off);
        s->cum = uct_uccl_seq_add(s->cum, n);
        if (off + n < 64) {
            break;
        }
    }
    if (uct_uccl_seq_lt(s->high, s->cum)) {
        s->high = s->cum;
    }
}

unsigned uct_uccl_sack_ack_pack(const uct_uccl_sack_t *s, uct_uccl_ack_t *ack,
                                unsigned max_words)
{
    uint32_t base = s->cum & ~63u;
    unsigned n, j;
    uint64_t word;

    /* words covering [base, high) */
    n = (uct_uccl_seq_dist(s->high, base) + 63) / 64;
    if (s->high == s->cum) {
        n = 0;                      /* no holes: cum says everything */
    }
    if (n > max_words) {
        n = max_words;
    }

    ack->cum_csn    = s->cum;
    ack->sack_words = n;
    for (j = 0; j < n; ++j) {
        word = s->bits[((base >> 6) + j) & s->word_mask];
        memcpy((char*)ack + sizeof(*ack) + 8 * j, &word, sizeof(word));
    }
    return n;
}

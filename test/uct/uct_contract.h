/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * What the files of uct_contract share (see uct_contract.c): the AM ids,
 * what the handlers saw, ifaces opened with the error handler that records
 * an ep's failure, waiting with a deadline.
 */
#ifndef UCCL_TEST_UCT_CONTRACT_H_
#define UCCL_TEST_UCT_CONTRACT_H_

#include "uct_harness.h"

#include <stddef.h>
#include <stdint.h>

#define AM_ID        7
#define AM_ID_SYNC   8
#define AM_ID_REPLY  9
#define TIMEOUT_S    30.0
#define MANY_EPS     2048
#define NPEERS       64
#define RX_EPS       32
#define RX_AMS       400      /* per ep */
#define NPEERS_QPS   "1000"   /* 32 paths each would take 4096 */
#define GET_FREED_GETS 400

/* what the handlers saw */
typedef struct {
    unsigned            count;      /* AMs of AM_ID */
    unsigned            sync_count; /* AMs of AM_ID_SYNC */
    unsigned            count_at_sync; /* count when the last one came */
    unsigned            replies;
    unsigned            errors;
    uint64_t            seen[MANY_EPS / 64];
    size_t              align, align_offset;
    const uint8_t       *expect;    /* payload expected, or NULL */
    size_t              expect_len;
    int                 ep_error;
    ucs_status_t        ep_status;
} rx_t;

extern rx_t rx;

/* a seeded random number below max (SEED) */
unsigned rnd(unsigned max);
/* progress until *flag reaches value, or die */
void wait_for(volatile unsigned *flag, unsigned value, const char *what);
/* the params of an iface of uh.dev with the error handler (into rx) */
void iface_params_init(uct_iface_params_t *params);
/* an iface with those params and "NAME=VALUE" settings (NULL-ended, or
 * NULL), or die */
void iface_open(uh_iface_t *ifc, const char *const *settings);
void flush_ep(uct_ep_h ep);

/* AM_ID: counts, checks the payload against rx.expect and the data pointer
 * against rx.align/align_offset, records the sender index in the header */
ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags);
/* AM_ID_SYNC: counts, and notes rx.count when it came */
ucs_status_t sync_cb(void *arg, void *data, size_t length, unsigned flags);
/* len random bytes (and one more), or die */
uint8_t *pattern_buf(size_t len);
void expect_status(ucs_status_t got, ucs_status_t want, const char *what);

/* the tests (uct_contract_am.c, uct_contract_life.c, uct_contract_scale.c) */
void test_am_limits(void);
void test_tx_max_bufs(void);
void test_am_align(void);
void test_connecting(void);
void test_async_am(void);
void test_peer_close(void);
void test_destroy(void);
void test_flush_deferred(void);
void test_get_freed(void);
void test_many_eps(void);
void test_idle_eps(void);
void test_rx_bound(void);
void test_many_peers(void);

#endif

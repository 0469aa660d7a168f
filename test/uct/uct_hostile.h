/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * What the files of uct_hostile share (see uct_hostile.c): the AM ids and
 * bytes both sides agree on, and the hostile's raw verbs peer
 * (uct_hostile_peer.c) that its cases (uct_hostile_cases.c) drive.
 */
#ifndef UCCL_TEST_UCT_HOSTILE_H_
#define UCCL_TEST_UCT_HOSTILE_H_

#include "uct_harness.h"

#include <uct/uccl/proto/uccl_wire.h>
#include <infiniband/verbs.h>

#include <stddef.h>
#include <stdint.h>

#define HV_PATHS       4
#define AM_HOSTILE     3          /* from the hostile, counted */
#define LEGIT_MIN      50         /* honest rounds while under attack */
/* the victim GETs SERVE_LEN bytes at SERVE_OFF of the hostile's buffer */
#define SERVE_LEN      64
#define SERVE_OFF      256

/* the byte i of what the hostile serves */
static inline uint8_t serve_val(unsigned i)
{
    return (uint8_t)(i * 3 + 1);
}

/* the victim: serves honest traffic until the hostile is done, then
 * reports and dies if that traffic suffered (uct_hostile.c) */
void victim(void);
/* the hostile: the cases named in `which` (NULL: all), then the victim's
 * report (uct_hostile_cases.c) */
void hostile(const char *which);


/* The hostile peer: raw verbs (uct_hostile_peer.c) */

typedef struct {
    struct ibv_context *ctx;
    struct ibv_pd      *pd;
    struct ibv_cq      *cq;
    struct ibv_qp      *ud;
    struct ibv_ah      *ah;
    struct ibv_mr      *mr;
    uint8_t            *buf;      /* send area, then rx buffers */
    uint16_t           lid;
    union ibv_gid      gid;
    uct_uccl_device_addr_t peer_dev;
    uint32_t           peer_ctl_qpn;
    unsigned           rs;        /* random state */
    struct ibv_wc      stash;     /* a data QP's receive seen while */
    int                stashed;   /* waiting for a send */
} hv_t;

/* one uccl conn of the hostile to the victim */
typedef struct {
    struct ibv_qp *qp[HV_PATHS];
    unsigned      num_paths;
    uint64_t      uuid, token, peer_token;
    uint32_t      id, peer_id, csn;
} hv_conn_t;

extern hv_t hv;

uint64_t hv_rand64(void);
/* the device of uh.dev, the UD QP (our control QP), the buffer */
void hv_open(void);
/* our address as uccl's would be, in uh.raw_me */
void hv_fill_me(void);
/* the victim's address, after the exchange */
void hv_open_peer(void);
/* wait for the send just posted, throwing away what came meanwhile */
void hv_wait_send(void);
/* a control packet from our UD QP to the victim's control QP */
void hv_ctl_send(const void *pkt, size_t len);
/* conn c's request (naming ctl_qpn as ours) in buf; its length */
size_t hv_conn_req(const hv_conn_t *c, void *buf, uint32_t ctl_qpn);
/* a conn packet of `type` for conn `id` echoing `token` (a REQ: any) from
 * the victim within secs, or NULL */
const uct_uccl_conn_pkt_t *hv_wait_conn(uint8_t type, uint32_t id,
                                        uint64_t token, double secs);
/* conn c's UC QPs in INIT, with a fresh id, token and first CSN */
void hv_conn_qps(hv_conn_t *c);
/* conn c's QPs to the victim's, as its conn packet p names them */
void hv_conn_rts(hv_conn_t *c, const uct_uccl_conn_pkt_t *p);
/* a uccl conn to the victim, as its initiator; 0 if it did not answer */
int hv_connect(hv_conn_t *c);
/* a SEND_WITH_IMM of len bytes from the send area on path 0 */
void hv_data_send(hv_conn_t *c, uint32_t csn, uct_uccl_kind_t kind,
                  size_t len);
/* an AM with seq as its payload, to handler id */
void hv_am(hv_conn_t *c, uint32_t csn, uint8_t id, uint64_t seq);
/* an AM to AM_HOSTILE carrying `ack` after the payload */
void hv_am_ack(hv_conn_t *c, uint32_t csn, uint64_t seq,
               const uct_uccl_ack_t *ack);
/* receive buffers for the victim's SENDs on conn c */
void hv_conn_post_recvs(hv_conn_t *c);
/* a SEND of `kind` from the victim on conn c within secs: its first len
 * bytes copied to msg, its CSN; 0 if none came */
int hv_serve_wait(hv_conn_t *c, uct_uccl_kind_t kind, void *msg,
                  size_t len, uint32_t *csn, double secs);
/* our REP to the victim's REQ vreq, for conn c */
void hv_conn_rep(const hv_conn_t *c, const uct_uccl_conn_pkt_t *vreq);
/* an ACK of everything up to and with csn, on conn c */
void hv_serve_ack(const hv_conn_t *c, uint32_t csn);

#endif

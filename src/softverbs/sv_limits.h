/*
 * softverbs limits and defaults: what the emulated device reports in
 * ibv_query_device / ibv_query_port and what the implementation relies on.
 */
#ifndef SV_LIMITS_H_
#define SV_LIMITS_H_

#include "sv_model.h"

#define SV_ABI_VERSION       9           /* bump when any shm layout changes */

#define SV_DEF_DEVICES       2           /* SOFTVERBS_DEVICES */
#define SV_MAX_DEVICES       16
#define SV_DEF_FABRIC        "default"   /* SOFTVERBS_FABRIC */
#define SV_DEF_SEG_MB        512         /* SOFTVERBS_SEG_MB: per-port shm */
#ifndef SV_DEVNAME_PREFIX                /* configure: SOFTVERBS_DEVNAME */
#define SV_DEVNAME_PREFIX    "uverbs_sv" /* /dev/infiniband/<prefix><N> */
#endif

/* Per port (= opened device in one process); index fields are 16 bits. */
#define SV_MAX_QP            16384
#define SV_MAX_CQ            1024
#define SV_MAX_SRQ           1024
#define SV_MAX_MR            16384
#define SV_MAX_PD            65535
#define SV_MAX_AH            65535
#define SV_MAX_QP_WR         16384
#define SV_MAX_SRQ_WR        16384
#define SV_MAX_CQE           262143
#define SV_MAX_SGE           32
#define SV_MAX_INLINE        1024
#define SV_MAX_RD_ATOM       16
#define SV_MAX_MSG           (1u << 31)
#define SV_MAX_MR_SIZE       (1ull << 46)
#define SV_FIRST_QP_IDX      2           /* QPN 0 and 1 are special in IB */

#define SV_GRH_LEN           40
#define SV_PKT_HDR           64          /* wire overhead charged per packet */
#define SV_ACK_BYTES         64          /* an ACK/NAK or READ request */
#define SV_PKEY_DEFAULT      0xffff
#define SV_QKEY_PRIVILEGED   0x80000000u

#define SV_FABRIC_LOCK_S     10          /* give up on a stuck fabric lock */
#define SV_PEER_CHECK_NS     (10ull * 1000 * 1000) /* liveness cache */
#define SV_CQ_SCAN           64          /* reorder window of ibv_poll_cq */
#define SV_CQ_HELD           256         /* completions not due yet taken
                                            off a full window (sv_cq.c) */
#define SV_CQ_BATCH          16          /* completions taken off a ring at
                                            once (ibv_poll_cq, ibv_cq_ex) */
#define SV_RC_TIMEOUT_MIN_NS 8192        /* attr.timeout 0/1 floor */
#define SV_PSN_TAKE_TRIES    64          /* CAS tries on a changing rq_psn */

#define SV_GUID_PREFIX       0x0253560000000000ull /* "\x02SV" locally admin. */

#endif

/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uccl memory domain: one per verbs device. Owns the device context and the
 * protection domain, knows what the device can do (probed once at open) and
 * registers memory through a registration cache.
 */
#ifndef UCT_UCCL_MD_H_
#define UCT_UCCL_MD_H_

#include "uccl_budget.h"
#include "proto/uccl_wire.h"

#include <ucs_glue/ucs_glue.h>

#include <infiniband/verbs.h>
#include <ucs/memory/rcache.h>
#include <ucs/datastruct/khash.h>
#include <ucs/type/spinlock.h>

#define UCT_UCCL_NAME          "uccl"
#define UCT_UCCL_MAX_PORTS     8

/* What the receive CQ's completions carry besides a plain ibv_wc: data
 * QPs need the immediate, the control QP its sender */
#define UCT_UCCL_CQ_WC_FLAGS   (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
                                IBV_WC_EX_WITH_QP_NUM | \
                                IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID)

/* The clocks a device stamps completions with (uct_uccl_md_t caps.cq_ts) */
typedef enum {
    UCT_UCCL_CQ_TS_NONE      = 0,
    UCT_UCCL_CQ_TS_RAW       = UCS_BIT(0), /* the NIC's free-running clock,
                                              readable with
                                              ibv_query_rt_values_ex */
    UCT_UCCL_CQ_TS_WALLCLOCK = UCS_BIT(1)  /* ns of a clock the provider
                                              keeps near CLOCK_REALTIME */
} uct_uccl_cq_ts_t;


typedef struct uct_uccl_md_config {
    uct_md_config_t         super;
    uct_md_rcache_config_t  rcache;
    int                     rcache_enable; /* ucs_ternary_auto_value_t */
    unsigned long           gid_index;     /* UCS_ULUNITS_AUTO or index */
    int                     probe_uc;
    unsigned long           max_qps;       /* UCS_ULUNITS_AUTO: max_qp */
    double                  reg_overhead;
} uct_uccl_md_config_t;


/* What one port offers, filled at md open */
typedef struct uct_uccl_port {
    uint8_t         active;
    uint8_t         is_global;     /* routes need a GRH (RoCE) */
    uint16_t        lid;
    enum ibv_mtu    mtu;
    int             gid_index;
    union ibv_gid   gid;
    uint64_t        rate_bps;      /* data rate; 0: speed or width unknown */
} uct_uccl_port_t;


/* A live memory region, found by its rkey: a peer's request naming one of
 * our keys is checked against it before we touch memory */
typedef struct uct_uccl_mr_info {
    uint64_t                start;
    uint64_t                end;
    uint32_t                lkey;
} uct_uccl_mr_info_t;

KHASH_MAP_INIT_INT(uct_uccl_mr, uct_uccl_mr_info_t);


typedef struct uct_uccl_md {
    uct_md_t                super;
    struct ibv_context      *ctx;
    struct ibv_pd           *pd;
    struct ibv_device_attr  dev_attr;
    ucs_rcache_t            *rcache;
    char                    name[UCT_MD_NAME_MAX];
    struct {
        int                 uc;          /* UC QPs can be created */
        int                 cq_ex;       /* ibv_create_cq_ex works */
        unsigned            cq_ts;       /* uct_uccl_cq_ts_t bits */
        uint64_t            ts_khz;      /* the RAW clock's rate */
        uint64_t            ts_mask;     /* and its bits */
        unsigned            max_sge;
        unsigned            max_qp_wr;
        unsigned            max_srq_wr;
    } caps;
    unsigned                num_ports;
    uct_uccl_port_t         ports[UCT_UCCL_MAX_PORTS];
    ucs_linear_func_t       reg_cost;
    unsigned long           num_reg_mr;  /* ibv_reg_mr calls, for tests */
    khash_t(uct_uccl_mr)    mrs;         /* rkey -> region */
    ucs_spinlock_t          mrs_lock;    /* engines read mrs from their
                                            async timers */
    uct_uccl_budget_t       *budget;     /* the device's QPs */
} uct_uccl_md_t;


/* Memory handle: what a registration gives the data path */
typedef struct uct_uccl_mem {
    struct ibv_mr           *mr;
    uint32_t                lkey;
    uint32_t                rkey;
    uint8_t                 cached;    /* lives in an rcache region */
} uct_uccl_mem_t;


typedef struct uct_uccl_rcache_region {
    ucs_rcache_region_t     super;
    uct_uccl_mem_t          memh;
} uct_uccl_rcache_region_t;


extern uct_component_t uct_uccl_component;

/* The device (uccl_dev.c) */
const uct_uccl_port_t *uct_uccl_md_port(uct_uccl_md_t *md, uint8_t port_num);

/* The verbs device named md_name, opened; NULL if there is none */
struct ibv_context *uct_uccl_md_open_device(const char *md_name);

/* md->ports from the device's ports; UCS_ERR_NO_DEVICE if none is usable */
ucs_status_t uct_uccl_md_ports_init(uct_uccl_md_t *md,
                                    const uct_uccl_md_config_t *config);

/* md->caps probed; UCS_ERR_UNSUPPORTED if the device can do too little */
ucs_status_t uct_uccl_md_caps_init(uct_uccl_md_t *md,
                                   const uct_uccl_md_config_t *config);

/* Bytes of a verbs MTU enum (IBV_MTU_256 is 1, each step doubles) */
static inline unsigned uct_uccl_mtu_bytes(enum ibv_mtu mtu)
{
    return 128u << mtu;
}

/* Register the engine's own memory (pools): local access only, never in
 * the rkey map. Deregister with ibv_dereg_mr. */
struct ibv_mr *uct_uccl_md_reg_local(uct_uccl_md_t *md, void *addr,
                                     size_t length);

/* Is [addr, addr + length) inside the region of our rkey? Gives its lkey. */
int uct_uccl_md_rkey_check(uct_uccl_md_t *md, uint32_t rkey, uint64_t addr,
                           uint64_t length, uint32_t *lkey_p);

#endif

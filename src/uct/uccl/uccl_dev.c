/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The md's device: the verbs devices listed as memory domains, one opened,
 * its usable ports (GID choice) and what it can do for us (UC, completion
 * timestamps and their clock, SGEs, queue depths), probed once at open.
 */
#include "uccl_md.h"
#include "proto/uccl_link.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <string.h>


const uct_uccl_port_t *uct_uccl_md_port(uct_uccl_md_t *md, uint8_t port_num)
{
    if ((port_num < 1) || (port_num > md->num_ports) ||
        !md->ports[port_num - 1].active) {
        return NULL;
    }
    return &md->ports[port_num - 1];
}

/* A GID entry is usable when it can be read and is not all zeros. Some
 * devices have holes or entries that fail to read: skip them, do not fail. */
static int uct_uccl_md_gid_usable(struct ibv_context *ctx, uint8_t port,
                                  int index, union ibv_gid *gid)
{
    static const union ibv_gid zero_gid;

    if (ibv_query_gid(ctx, port, index, gid) != 0) {
        ucs_debug("%s:%d: GID index %d cannot be read, skipped",
                  ibv_get_device_name(ctx->device), port, index);
        return 0;
    }
    return memcmp(gid, &zero_gid, sizeof(*gid)) != 0;
}

static ucs_status_t uct_uccl_md_port_init(uct_uccl_md_t *md, uint8_t port_num,
                                          const uct_uccl_md_config_t *config)
{
    uct_uccl_port_t *port = &md->ports[port_num - 1];
    struct ibv_port_attr attr;
    int i;

    memset(port, 0, sizeof(*port));
    if (ibv_query_port(md->ctx, port_num, &attr) != 0) {
        ucs_debug("%s:%d: ibv_query_port() failed: %m", md->name, port_num);
        return UCS_ERR_IO_ERROR;
    }

    if (attr.state != IBV_PORT_ACTIVE) {
        ucs_debug("%s:%d: port is not active", md->name, port_num);
        return UCS_ERR_UNREACHABLE;
    }

    port->is_global  = (attr.link_layer == IBV_LINK_LAYER_ETHERNET);
    port->lid        = attr.lid;
    port->mtu        = attr.active_mtu;
    port->rate_bps   = uct_uccl_link_rate_bps(attr.active_speed,
                                              attr.active_width);
    port->gid_index  = -1;

    if (config->gid_index != UCS_ULUNITS_AUTO) {
        if (((int)config->gid_index >= attr.gid_tbl_len) ||
            !uct_uccl_md_gid_usable(md->ctx, port_num, config->gid_index,
                                    &port->gid)) {
            ucs_error("%s:%d: UCX_UCCL_GID_INDEX=%lu is not a usable GID "
                      "(table length %d)", md->name, port_num,
                      config->gid_index, attr.gid_tbl_len);
            return UCS_ERR_INVALID_PARAM;
        }
        port->gid_index = (int)config->gid_index;
    } else {
        for (i = 0; i < attr.gid_tbl_len; ++i) {
            if (uct_uccl_md_gid_usable(md->ctx, port_num, i, &port->gid)) {
                port->gid_index = i;
                break;
            }
        }
    }

    if ((port->gid_index < 0) && port->is_global) {
        ucs_debug("%s:%d: no usable GID on a RoCE port", md->name, port_num);
        return UCS_ERR_UNREACHABLE;
    }
    if (port->gid_index < 0) {
        memset(&port->gid, 0, sizeof(port->gid));
    }

    port->active = 1;
    ucs_debug("%s:%d: %s lid %u mtu %d gid index %d rate %.1f Gbit/s "
              "(speed %u width %u)", md->name, port_num,
              port->is_global ? "ethernet" : "infiniband", port->lid,
              uct_uccl_mtu_bytes(port->mtu), port->gid_index,
              port->rate_bps / 1e9, attr.active_speed, attr.active_width);
    return UCS_OK;
}

/* UC support cannot be read from device attributes: try to create one */
static int uct_uccl_md_probe_uc(uct_uccl_md_t *md)
{
    struct ibv_qp_init_attr qp_attr = {};
    struct ibv_cq *cq;
    struct ibv_qp *qp;

    cq = ibv_create_cq(md->ctx, 1, NULL, NULL, 0);
    if (cq == NULL) {
        return 0;
    }

    qp_attr.send_cq          = cq;
    qp_attr.recv_cq          = cq;
    qp_attr.qp_type          = IBV_QPT_UC;
    qp_attr.cap.max_send_wr  = 1;
    qp_attr.cap.max_recv_wr  = 1;
    qp_attr.cap.max_send_sge = 1;
    qp_attr.cap.max_recv_sge = 1;
    qp = ibv_create_qp(md->pd, &qp_attr);
    if (qp != NULL) {
        ibv_destroy_qp(qp);
    }
    ibv_destroy_cq(cq);
    return qp != NULL;
}

/* Does the device create a receive CQ of ours with these extra flags? */
static int uct_uccl_md_probe_cq_ex(uct_uccl_md_t *md, uint64_t wc_flags)
{
    struct ibv_cq_init_attr_ex cq_attr = {
        .cqe      = 1,
        .wc_flags = UCT_UCCL_CQ_WC_FLAGS | wc_flags
    };
    struct ibv_cq_ex *cq;

    cq = ibv_create_cq_ex(md->ctx, &cq_attr);
    if (cq == NULL) {
        return 0;
    }
    ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
    return 1;
}

/* Raw completion timestamps are of use only with the clock's rate and a
 * way to read it now */
static int uct_uccl_md_probe_raw_clock(uct_uccl_md_t *md)
{
    struct ibv_device_attr_ex attr = {};
    struct ibv_values_ex values    = {
        .comp_mask = IBV_VALUES_MASK_RAW_CLOCK
    };

    if ((ibv_query_device_ex(md->ctx, NULL, &attr) != 0) ||
        (attr.hca_core_clock == 0) || (attr.completion_timestamp_mask == 0) ||
        (ibv_query_rt_values_ex(md->ctx, &values) != 0) ||
        !(values.comp_mask & IBV_VALUES_MASK_RAW_CLOCK)) {
        return 0;
    }
    md->caps.ts_khz  = attr.hca_core_clock;
    md->caps.ts_mask = attr.completion_timestamp_mask;
    return 1;
}

/* The clocks the device stamps our receive completions with */
static void uct_uccl_md_probe_cq_ts(uct_uccl_md_t *md)
{
    md->caps.cq_ex = uct_uccl_md_probe_cq_ex(md, 0);
    md->caps.cq_ts = UCT_UCCL_CQ_TS_NONE;
    if (!md->caps.cq_ex) {
        return;
    }
    if (uct_uccl_md_probe_raw_clock(md) &&
        uct_uccl_md_probe_cq_ex(md, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)) {
        md->caps.cq_ts |= UCT_UCCL_CQ_TS_RAW;
    }
    if (uct_uccl_md_probe_cq_ex(
                md, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)) {
        md->caps.cq_ts |= UCT_UCCL_CQ_TS_WALLCLOCK;
    }
}

/* The verbs device named md_name, opened; NULL if there is none */
struct ibv_context *uct_uccl_md_open_device(const char *md_name)
{
    struct ibv_context *ctx = NULL;
    struct ibv_device **devs;
    int i, num_devs;

    devs = ibv_get_device_list(&num_devs);
    if (devs == NULL) {
        ucs_debug("ibv_get_device_list() failed: %m");
        return NULL;
    }
    for (i = 0; i < num_devs; ++i) {
        if (!strcmp(ibv_get_device_name(devs[i]), md_name)) {
            ctx = ibv_open_device(devs[i]);
            if (ctx == NULL) {
                ucs_debug("%s: ibv_open_device() failed: %m", md_name);
            }
            break;
        }
    }
    if (i == num_devs) {
        ucs_debug("uccl: verbs device '%s' not found", md_name);
    }
    ibv_free_device_list(devs);
    return ctx;
}

/* The ports worth an iface; UCS_ERR_NO_DEVICE if none is */
ucs_status_t uct_uccl_md_ports_init(uct_uccl_md_t *md,
                                    const uct_uccl_md_config_t *config)
{
    unsigned num_active = 0;
    ucs_status_t status;
    int i;

    md->num_ports = ucs_min(md->dev_attr.phys_port_cnt, UCT_UCCL_MAX_PORTS);
    for (i = 1; i <= md->num_ports; ++i) {
        status = uct_uccl_md_port_init(md, i, config);
        if (status == UCS_ERR_INVALID_PARAM) {
            return status;
        }
        num_active += (status == UCS_OK);
    }
    if (num_active == 0) {
        ucs_debug("%s: no usable port", md->name);
        return UCS_ERR_NO_DEVICE;
    }
    return UCS_OK;
}

/* What the device can do for us; UCS_ERR_UNSUPPORTED if too little */
ucs_status_t uct_uccl_md_caps_init(uct_uccl_md_t *md,
                                   const uct_uccl_md_config_t *config)
{
    md->caps.uc         = config->probe_uc && uct_uccl_md_probe_uc(md);
    uct_uccl_md_probe_cq_ts(md);
    md->caps.max_sge    = md->dev_attr.max_sge;
    md->caps.max_qp_wr  = md->dev_attr.max_qp_wr;
    md->caps.max_srq_wr = md->dev_attr.max_srq_wr;
    if (md->caps.max_sge < 3) {
        ucs_debug("%s: needs 3 SGEs per work request, has %u", md->name,
                  md->caps.max_sge);
        return UCS_ERR_UNSUPPORTED;
    }
    return UCS_OK;
}

ucs_status_t
uct_uccl_query_md_resources(uct_component_t *component,
                            uct_md_resource_desc_t **resources_p,
                            unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources;
    struct ibv_device **devs;
    int i, num_devs;

    devs = ibv_get_device_list(&num_devs);
    if ((devs == NULL) || (num_devs == 0)) {
        if (devs != NULL) {
            ibv_free_device_list(devs);
        }
        ucs_debug("uccl: no verbs devices");
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }

    resources = ucs_calloc(num_devs, sizeof(*resources), "uccl_md_resources");
    if (resources == NULL) {
        ibv_free_device_list(devs);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < num_devs; ++i) {
        ucs_strncpy_zero(resources[i].md_name, ibv_get_device_name(devs[i]),
                         sizeof(resources[i].md_name));
    }

    ibv_free_device_list(devs);
    *resources_p     = resources;
    *num_resources_p = num_devs;
    return UCS_OK;
}

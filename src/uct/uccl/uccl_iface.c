/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The UCT iface: its operations (query, addresses, flush, fence), and its
 * construction and destruction from the engine's parts.
 */
#include "uccl_tx.h"

#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <ucs/type/class.h>
#include <string.h>



/* ------------------------------------------------------------------------ */
/* UCT iface operations                                                     */
/* ------------------------------------------------------------------------ */

ucs_status_t uct_uccl_iface_query(uct_iface_h tl_iface,
                                  uct_iface_attr_t *attr)
{
    uct_uccl_iface_t *iface = ucs_derived_of(tl_iface, uct_uccl_iface_t);
    size_t seg              = iface->config.seg_size;
    size_t max_zcopy        = UCT_UCCL_MAX_ZCOPY;

    uct_base_iface_query(&iface->super, attr);
    /* an ep takes one QP of the device at least (uccl_budget.h) */
    attr->max_num_eps     = ucs_min(attr->max_num_eps,
                                    uct_uccl_budget_max(iface->md->budget));

    attr->iface_addr_len  = sizeof(uct_uccl_iface_addr_t);
    attr->device_addr_len = sizeof(uct_uccl_device_addr_t);
    attr->ep_addr_len     = 0;
    attr->max_conn_priv   = 0;
    attr->cap.flags       = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                            UCT_IFACE_FLAG_AM_SHORT |
                            UCT_IFACE_FLAG_AM_BCOPY |
                            UCT_IFACE_FLAG_AM_ZCOPY |
                            UCT_IFACE_FLAG_PUT_SHORT |
                            UCT_IFACE_FLAG_PUT_BCOPY |
                            UCT_IFACE_FLAG_PUT_ZCOPY |
                            UCT_IFACE_FLAG_GET_BCOPY |
                            UCT_IFACE_FLAG_GET_ZCOPY |
                            UCT_IFACE_FLAG_PENDING |
                            UCT_IFACE_FLAG_CB_SYNC |
                            /* UCP sends wireup messages (remote ep ids for
                             * rendezvous) only to ifaces that take async
                             * callbacks; ours are called from the user's
                             * progress, also for what the async timer's
                             * background passes found (uccl_async.c) */
                            UCT_IFACE_FLAG_CB_ASYNC |
                            UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                            UCT_IFACE_FLAG_EP_CHECK |
                            UCT_UCCL_GLUE_IFACE_FLAG_INTER_NODE;
    attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                            UCT_IFACE_FLAG_EVENT_RECV |
                            UCT_IFACE_FLAG_EVENT_FD;

    attr->cap.put.max_short       = seg;
    attr->cap.put.max_bcopy       = seg;
    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = max_zcopy;
    attr->cap.put.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.put.align_mtu       = uct_uccl_mtu_bytes(iface->config.mtu);
    attr->cap.put.max_iov         = 1;

    /* one device's GET already spreads over every path, and each GET costs
     * its own request and completion: UCP's rendezvous splits a message
     * over devices only in parts of at least min_zcopy, and takes GET zcopy
     * for RMA and rendezvous only from there (smaller GETs are bcopy, and
     * smaller messages eager) */
    attr->cap.get.max_bcopy       = seg;
    attr->cap.get.min_zcopy       = UCT_UCCL_GET_MIN_ZCOPY;
    attr->cap.get.max_zcopy       = max_zcopy;
    attr->cap.get.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.get.align_mtu       = uct_uccl_mtu_bytes(iface->config.mtu);
    attr->cap.get.max_iov         = 1;

    attr->cap.am.max_short        = uct_uccl_iface_am_max(iface);
    attr->cap.am.max_bcopy        = uct_uccl_iface_am_max(iface);
    attr->cap.am.min_zcopy        = 0;
    attr->cap.am.max_zcopy        = uct_uccl_iface_am_max(iface);
    attr->cap.am.opt_zcopy_align  = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.am.align_mtu        = uct_uccl_mtu_bytes(iface->config.mtu);
    attr->cap.am.max_hdr          = uct_uccl_iface_am_max_hdr(iface);
    attr->cap.am.max_iov          = 1;

    /* a software engine in front of the NIC: the NIC's latency and
     * bandwidth, and per-message CPU overhead of the engine; UCP weighs the
     * latency against copies to choose rendezvous (a zero-copy GET or PUT)
     * over eager copies, so an inflated one keeps large messages copied */
    attr->latency                 = ucs_linear_func_make(UCT_UCCL_LATENCY, 0);
    attr->bandwidth.dedicated     = 0;
    attr->bandwidth.shared        = 10000.0 * UCS_MBYTE;
    attr->overhead                = 100e-9;
    attr->priority                = 0;
    return UCS_OK;
}

ucs_status_t uct_uccl_iface_get_device_address(uct_iface_h tl_iface,
                                               uct_device_addr_t *addr)
{
    uct_uccl_iface_t *iface        = ucs_derived_of(tl_iface, uct_uccl_iface_t);
    uct_uccl_device_addr_t *dev    = (uct_uccl_device_addr_t*)addr;

    dev->lid       = iface->port->lid;
    dev->is_global = iface->port->is_global;
    dev->rsvd      = 0;
    memcpy(dev->gid, iface->port->gid.raw, sizeof(dev->gid));
    return UCS_OK;
}

ucs_status_t uct_uccl_iface_get_address(uct_iface_h tl_iface,
                                        uct_iface_addr_t *addr)
{
    uct_uccl_iface_t *iface = ucs_derived_of(tl_iface, uct_uccl_iface_t);

    ((uct_uccl_iface_addr_t*)addr)->ctl_qpn = iface->ctl.qp->qp_num;
    return UCS_OK;
}

int uct_uccl_iface_is_reachable(const uct_iface_h tl_iface,
                                const uct_device_addr_t *dev_addr,
                                const uct_iface_addr_t *iface_addr)
{
    uct_uccl_iface_t *iface           = ucs_derived_of(tl_iface,
                                                       uct_uccl_iface_t);
    const uct_uccl_device_addr_t *dev = (const void*)dev_addr;

    if (dev == NULL) {
        return 0;
    }
    /* an InfiniBand port reaches LIDs, a RoCE port GIDs: not each other */
    return dev->is_global == iface->port->is_global;
}

ucs_status_t uct_uccl_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                  uct_completion_t *comp)
{
    uct_uccl_iface_t *iface = ucs_derived_of(tl_iface, uct_uccl_iface_t);
    uct_uccl_conn_t *conn;

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    /* done once the user heard of every operation before it */
    ucs_list_for_each(conn, &iface->conns, list) {
        if (!uct_uccl_tx_is_flushed(conn)) {
            UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
            return UCS_INPROGRESS;
        }
    }
    if (!ucs_list_is_empty(&iface->async.ops)) {
        UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
        return UCS_INPROGRESS;
    }

    UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    return UCS_OK;
}

/* Every ep's next operation waits for what its ep issued before */
ucs_status_t uct_uccl_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_uccl_iface_t *iface = ucs_derived_of(tl_iface, uct_uccl_iface_t);
    uct_uccl_conn_t *conn;

    ucs_list_for_each(conn, &iface->conns, list) {
        if (conn->ep != NULL) {
            uct_uccl_tx_fence(conn);
        }
    }
    UCT_TL_IFACE_STAT_FENCE(&iface->super);
    return UCS_OK;
}

/* The congestion control every conn starts with, the receiver's credit
 * pacer (receiver-driven) and the pacing wheel */
static ucs_status_t
uct_uccl_iface_cc_init(uct_uccl_iface_t *iface,
                       const uct_uccl_iface_config_t *config)
{
    const uct_uccl_cc_ops_t *ops = uct_uccl_cc_find(config->cc.name);
    ucs_status_t status;

    status = uct_uccl_cc_config_params(&config->cc, iface->config.chunk_size,
                                       uct_uccl_mtu_bytes(iface->config.mtu),
                                       iface->port->rate_bps,
                                       &iface->config.cc_params);
    if (status != UCS_OK) {
        return status;
    }
    iface->config.cc          = ops->name;
    iface->config.cc_rx_bytes = (ops->rx_on_data != NULL);
    status = uct_uccl_credit_init(iface, &config->cc);
    if (status != UCS_OK) {
        return status;
    }
    return ucs_twheel_init(&iface->pace_wheel, iface->config.pace_res,
                           ucs_get_time());
}

/* The engine's lists, look-up tables, idle-conn wheel and stats node */
static ucs_status_t uct_uccl_iface_tables_init(uct_uccl_iface_t *iface)
{
    ucs_status_t status;

    ucs_list_head_init(&iface->conns);
    uct_uccl_sched_init(iface);
    ucs_list_head_init(&iface->ack_list);
    ucs_list_head_init(&iface->acks_in);
    ucs_list_head_init(&iface->timers.active);
    kh_init_inplace(uct_uccl_qpn, &iface->qpn_hash);
    memset(iface->qpn_cache, 0, sizeof(iface->qpn_cache));
    kh_init_inplace(uct_uccl_peers, &iface->peers);
    ucs_ptr_array_init(&iface->conn_ids, "uccl_conn_ids");
    UCS_STATS_NODE_RESET(&iface->stats_node);
    status = ucs_twheel_init(&iface->timers.idle_wheel,
                             ucs_time_from_sec(UCT_UCCL_IDLE_WHEEL_RES),
                             ucs_get_time());
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_uccl_stats_iface_init(iface);
    if (status != UCS_OK) {
        goto err_wheel;
    }
    return UCS_OK;

err_wheel:
    ucs_twheel_cleanup(&iface->timers.idle_wheel);
err:
    ucs_ptr_array_cleanup(&iface->conn_ids, 0);
    kh_destroy_inplace(uct_uccl_peers, &iface->peers);
    kh_destroy_inplace(uct_uccl_qpn, &iface->qpn_hash);
    return status;
}

static void uct_uccl_iface_tables_cleanup(uct_uccl_iface_t *iface)
{
    uct_uccl_stats_iface_cleanup(iface);
    ucs_twheel_cleanup(&iface->timers.idle_wheel);
    ucs_ptr_array_cleanup(&iface->conn_ids, 0);
    kh_destroy_inplace(uct_uccl_peers, &iface->peers);
    kh_destroy_inplace(uct_uccl_qpn, &iface->qpn_hash);
    uct_uccl_sched_cleanup(iface);
}

/* The port of "<device>:<port>" the user opens the iface on */
static ucs_status_t uct_uccl_iface_port_parse(uct_uccl_md_t *md,
                                              const uct_iface_params_t *params,
                                              unsigned *port_num_p)
{
    const char *dev_name, *colon;

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) ||
        !(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("uccl: iface needs a device name");
        return UCS_ERR_INVALID_PARAM;
    }

    dev_name = params->mode.device.dev_name;
    colon    = strrchr(dev_name, ':');
    if ((colon == NULL) || (sscanf(colon + 1, "%u", port_num_p) != 1) ||
        (uct_uccl_md_port(md, *port_num_p) == NULL)) {
        ucs_error("uccl: '%s' is not an active <device>:<port> of %s",
                  dev_name, md->name);
        return UCS_ERR_NO_DEVICE;
    }
    return UCS_OK;
}

/* What the iface is: its port, its mode, its completion timestamps and
 * the settings the configuration gives it */
static ucs_status_t
uct_uccl_iface_settings_init(uct_uccl_iface_t *iface, uct_uccl_md_t *md,
                             const uct_uccl_iface_config_t *config,
                             const uct_iface_params_t *params)
{
    unsigned port_num;
    ucs_status_t status;

    status = uct_uccl_iface_port_parse(md, params, &port_num);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_uccl_iface_config_check(config);
    if (status != UCS_OK) {
        return status;
    }

    iface->md       = md;
    iface->port_num = port_num;
    iface->port     = uct_uccl_md_port(md, port_num);
    iface->uuid     = ucs_generate_uuid((uintptr_t)iface);

    status = uct_uccl_iface_mode_select(iface, md, config->mode);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_uccl_iface_cq_ts_select(iface, md, config->cq_ts);
    if (status != UCS_OK) {
        return status;
    }
    uct_uccl_iface_config_set(iface, config);
    return UCS_OK;
}

/* The engine's verbs resources: pools, the CQs' event channel, CQs and
 * SRQ, control QP; the SRQ filled */
static ucs_status_t
uct_uccl_iface_resources_init(uct_uccl_iface_t *iface,
                              const uct_uccl_iface_config_t *config,
                              const uct_iface_params_t *params)
{
    ucs_status_t status;

    status = uct_uccl_iface_pools_init(iface, config, params);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_uccl_event_init(iface);
    if (status != UCS_OK) {
        goto err_pools;
    }

    status = uct_uccl_iface_queues_init(iface);
    if (status != UCS_OK) {
        goto err_event;
    }

    status = uct_uccl_iface_ctl_init(iface);
    if (status != UCS_OK) {
        goto err_queues;
    }

    iface->srq_posted = 1; /* not "ran dry" before the first fill */
    uct_uccl_rx_refill(iface);
    --iface->srq_posted;
    return UCS_OK;

err_queues:
    uct_uccl_iface_queues_cleanup(iface);
err_event:
    uct_uccl_event_cleanup(iface);
err_pools:
    uct_uccl_iface_pools_cleanup(iface);
err:
    return status;
}

static void uct_uccl_iface_resources_cleanup(uct_uccl_iface_t *iface)
{
    uct_uccl_iface_ctl_cleanup(iface);
    uct_uccl_iface_queues_cleanup(iface);
    uct_uccl_event_cleanup(iface);
    /* descs posted on destroyed QPs never complete: no leak check */
    uct_uccl_iface_pools_cleanup(iface);
}

static UCS_CLASS_INIT_FUNC(uct_uccl_iface_t, uct_md_h tl_md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_uccl_iface_config_t *config = ucs_derived_of(tl_config,
                                                     uct_uccl_iface_config_t);
    uct_uccl_md_t *md               = ucs_derived_of(tl_md, uct_uccl_md_t);
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_uccl_iface_tl_ops,
                              UCT_UCCL_GLUE_IFACE_INTERNAL_OPS, tl_md, worker,
                              params, tl_config
                              UCS_STATS_ARG(params->stats_root)
                              UCS_STATS_ARG(UCT_UCCL_NAME));

    /* the class allocator does not zero: start from a clean engine */
    memset(UCS_PTR_BYTE_OFFSET(self, sizeof(self->super)), 0,
           sizeof(*self) - sizeof(self->super));

    status = uct_uccl_iface_settings_init(self, md, config, params);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_uccl_iface_cc_init(self, config);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_uccl_iface_tables_init(self);
    if (status != UCS_OK) {
        goto err_cc;
    }

    status = uct_uccl_iface_resources_init(self, config, params);
    if (status != UCS_OK) {
        goto err_tables;
    }
    uct_uccl_iface_dump_init(self);

    /* last: from here on the timer may run the engine */
    status = uct_uccl_async_init(self, config->async_idle);
    if (status != UCS_OK) {
        goto err_resources;
    }
    ucs_debug("uccl: iface %s mode %s paths %u chunk %zu ctl qpn 0x%x",
              params->mode.device.dev_name, self->rc_mode ? "rc" : "uc",
              self->config.num_paths, self->config.chunk_size,
              self->ctl.qp->qp_num);
    return UCS_OK;

err_resources:
    uct_uccl_iface_resources_cleanup(self);
err_tables:
    uct_uccl_iface_tables_cleanup(self);
err_cc:
    ucs_twheel_cleanup(&self->pace_wheel);
    uct_uccl_credit_cleanup(self);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_uccl_iface_t)
{
    uct_uccl_conn_t *conn, *tmp;
    uct_uccl_qp_t *path;

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    uct_uccl_async_cleanup(self);
    if (self->config.stats_dump) {
        uct_uccl_iface_dump_stats(self);
    }

    uct_uccl_iface_disconnect_all(self);
    ucs_list_for_each_safe(conn, tmp, &self->conns, list) {
        uct_uccl_conn_destroy(conn);
    }
    /* QPs of destroyed conns still draining */
    kh_foreach_value(&self->qpn_hash, path, {
        if (path->conn == NULL) {
            uct_uccl_iface_qp_drained(self, path);  /* kh_del is safe here */
        }
    });

    uct_uccl_iface_resources_cleanup(self);
    uct_uccl_iface_tables_cleanup(self);
    ucs_twheel_cleanup(&self->pace_wheel);
    uct_uccl_credit_cleanup(self);
}

UCS_CLASS_DEFINE(uct_uccl_iface_t, uct_base_iface_t);

UCS_CLASS_DEFINE_NEW_FUNC(uct_uccl_iface_t, uct_iface_t, uct_md_h,
                          uct_worker_h, const uct_iface_params_t*,
                          const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_uccl_iface_t, uct_iface_t);


/* uct_uccl_iface_tl_ops is in uccl_async.c: every entry point blocks the
 * async context */
void uct_uccl_iface_close(uct_iface_h tl_iface)
{
    UCS_CLASS_DELETE_FUNC_NAME(uct_uccl_iface_t)(tl_iface);
}


ucs_status_t
uct_uccl_query_tl_devices(uct_md_h tl_md,
                          uct_tl_device_resource_t **tl_devices_p,
                          unsigned *num_tl_devices_p)
{
    uct_uccl_md_t *md = ucs_derived_of(tl_md, uct_uccl_md_t);
    uct_tl_device_resource_t *devices;
    unsigned i, num = 0;

    devices = ucs_calloc(md->num_ports, sizeof(*devices), "uccl_devices");
    if (devices == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 1; i <= md->num_ports; ++i) {
        if (uct_uccl_md_port(md, i) == NULL) {
            continue;
        }
        ucs_snprintf_zero(devices[num].name, sizeof(devices[num].name),
                          "%s:%u", md->name, i);
        devices[num].type       = UCT_DEVICE_TYPE_NET;
        devices[num].sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
        ++num;
    }

    *tl_devices_p     = devices;
    *num_tl_devices_p = num;
    return UCS_OK;
}


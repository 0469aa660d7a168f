/*
 * Devices sv0..svN-1, contexts, and what ibv_query_* reports about them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_verbs.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* Not rdma-core's: compared by address only (mlx5dv_is_supported). */
static const struct { const char *name; } sv_device_ops = { "softverbs" };

static pthread_mutex_t sv_device_lock = PTHREAD_MUTEX_INITIALIZER;
static sv_device_t    *sv_devices[SV_MAX_DEVICES];
static int             sv_num_devices = -1;
static sv_port_t      *sv_dev_port[SV_MAX_DEVICES];

static int sv_device_count(void)
{
    const char *s = getenv("SOFTVERBS_DEVICES");
    char *end;
    long n;

    if ((s == NULL) || (*s == '\0')) {
        return SV_DEF_DEVICES;
    }
    n = strtol(s, &end, 10);
    if ((*end != '\0') || (n < 0) || (n > SV_MAX_DEVICES)) {
        sv_log("SOFTVERBS_DEVICES='%s' is not 0..%d, using %d", s,
               SV_MAX_DEVICES, SV_DEF_DEVICES);
        return SV_DEF_DEVICES;
    }
    return (int)n;
}

static void sv_device_init(void)
{
    sv_device_t *d;
    int i, n = sv_device_count();

    for (i = 0; i < n; ++i) {
        d = calloc(1, sizeof(*d));
        if (d == NULL) {
            break;
        }
        d->dev.node_type      = IBV_NODE_CA;
        d->dev.transport_type = IBV_TRANSPORT_IB;
        snprintf(d->dev.name, sizeof(d->dev.name), "sv%d", i);
        snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "%s%d",
                 SV_DEVNAME_PREFIX, i);
        snprintf(d->dev.dev_path, sizeof(d->dev.dev_path),
                 "/sys/class/infiniband_verbs/%s", d->dev.dev_name);
        snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path),
                 "/sys/class/infiniband/%s", d->dev.name);
        d->ops      = &sv_device_ops;
        d->refcount = 1;
        d->index    = i;
        sv_devices[i] = d;
    }
    sv_num_devices = i;
}

struct ibv_device **sv_device_list(int *num)
{
    struct ibv_device **list;
    int i;

    pthread_mutex_lock(&sv_device_lock);
    if (sv_num_devices < 0) {
        sv_device_init();
    }
    pthread_mutex_unlock(&sv_device_lock);

    list = calloc(sv_num_devices + 1, sizeof(*list));
    if (list == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    for (i = 0; i < sv_num_devices; ++i) {
        list[i] = &sv_devices[i]->dev;
    }
    if (num != NULL) {
        *num = sv_num_devices;
    }
    return list;
}

int sv_device_is(struct ibv_device *dev)
{
    int i;

    for (i = 0; i < sv_num_devices; ++i) {
        if (dev == &sv_devices[i]->dev) {
            return 1;
        }
    }
    return 0;
}

static sv_port_t *sv_port_get(unsigned dev)
{
    sv_port_t *port = sv_dev_port[dev];
    int ret;

    if (port != NULL) {
        port->refcnt++;
        return port;
    }
    port = calloc(1, sizeof(*port));
    if (port == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ret = sv_fabric_port_alloc(dev, &port->index, &port->gen, &port->seg,
                               &port->fd);
    if (ret < 0) {
        free(port);
        errno = -ret;
        return NULL;
    }
    pthread_mutex_init(&port->lock, NULL);
    pthread_mutex_init(&port->pend_lock, NULL);
    port->dev      = dev;
    port->refcnt   = 1;
    port->next_pd  = 1;
    sv_slots_init(&port->qp_slots, port->qp, SV_FIRST_QP_IDX,
                  SV_MAX_QP - SV_FIRST_QP_IDX);
    sv_slots_init(&port->cq_slots, port->cq, 0, SV_MAX_CQ);
    sv_slots_init(&port->srq_slots, port->srq, 0, SV_MAX_SRQ);
    sv_slots_init(&port->mr_slots, port->mr, 0, SV_MAX_MR);
    sv_dev_port[dev] = port;
    sv_debug_log("sv%u is port %u (lid %u)", dev, port->index,
                 sv_port_lid(port->index));
    return port;
}

static void sv_port_release(sv_port_t *port)
{
    if ((port->refcnt > 0) || (port->nobjs > 0)) {
        return;
    }
    sv_stats_port_closed(port->index, port->dev);
    sv_fabric_port_free(port->index, port->gen, port->seg, port->fd);
    sv_dev_port[port->dev] = NULL;
    free(port);
}

int sv_port_get_obj(sv_port_t *port)
{
    pthread_mutex_lock(&sv_device_lock);
    port->nobjs++;
    pthread_mutex_unlock(&sv_device_lock);
    return 0;
}

void sv_port_put_obj(sv_port_t *port)
{
    pthread_mutex_lock(&sv_device_lock);
    port->nobjs--;
    sv_port_release(port);
    pthread_mutex_unlock(&sv_device_lock);
}

struct ibv_context *sv_device_open(struct ibv_device *ibdev)
{
    sv_device_t *dev = (sv_device_t*)ibdev;
    struct ibv_context *c;
    sv_context_t *ctx;
    int ret;

    if ((ibdev == NULL) || !sv_device_is(ibdev)) {
        errno = ENODEV;
        return NULL;
    }
    ret = sv_fabric_init();
    if (ret < 0) {
        errno = -ret;
        return NULL;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    c = &ctx->vctx.context;
    c->async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    if (c->async_fd < 0) {
        goto err_free;
    }
    /* nobody sends commands, but some programs look at the fd */
    c->cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (c->cmd_fd < 0) {
        goto err_async;
    }

    pthread_mutex_lock(&sv_device_lock);
    ctx->port = sv_port_get(dev->index);
    pthread_mutex_unlock(&sv_device_lock);
    if (ctx->port == NULL) {
        ret = errno;
        close(c->cmd_fd);
        close(c->async_fd);
        free(ctx);
        errno = ret;
        return NULL;
    }

    pthread_mutex_init(&ctx->async_lock, NULL);
    pthread_mutex_init(&c->mutex, NULL);
    c->device             = ibdev;
    c->num_comp_vectors   = 1;
    c->abi_compat         = __VERBS_ABI_IS_EXTENDED;
    c->ops.poll_cq        = sv_cq_poll;
    c->ops.req_notify_cq  = sv_cq_req_notify;
    c->ops.post_send      = sv_req_post_send;
    c->ops.post_recv      = sv_qp_post_recv;
    c->ops.post_srq_recv  = sv_srq_post_recv;
    ctx->vctx.sz              = sizeof(ctx->vctx);
    ctx->vctx.query_port      = sv_port_query;
    ctx->vctx.query_device_ex = sv_device_query_ex;
    ctx->vctx.create_cq_ex    = sv_cq_create;
    ctx->vctx.create_qp_ex    = sv_qp_create;
    ctx->vctx.query_rt_values = sv_device_query_rt_values;
    return c;

err_async:
    close(c->async_fd);
err_free:
    ret = errno;
    free(ctx);
    errno = ret;
    return NULL;
}

int sv_device_close(struct ibv_context *c)
{
    sv_context_t *ctx = sv_ctx_of(c);

    close(c->async_fd);
    close(c->cmd_fd);
    pthread_mutex_lock(&sv_device_lock);
    ctx->port->refcnt--;
    sv_port_release(ctx->port);
    pthread_mutex_unlock(&sv_device_lock);
    free(ctx);
    return 0;
}

static uint64_t sv_node_guid(unsigned dev)
{
    return htobe64(SV_GUID_PREFIX | ((uint64_t)dev << 16));
}

int sv_device_query(struct ibv_context *c, struct ibv_device_attr *a)
{
    sv_device_t *dev = (sv_device_t*)c->device;

    memset(a, 0, sizeof(*a));
    snprintf(a->fw_ver, sizeof(a->fw_ver), "softverbs-%d", SV_ABI_VERSION);
    a->node_guid                 = sv_node_guid(dev->index);
    a->sys_image_guid            = a->node_guid;
    a->max_mr_size               = SV_MAX_MR_SIZE;
    a->page_size_cap             = 4096;
    a->vendor_id                 = 0x5356;   /* "SV": not a real OUI */
    a->vendor_part_id            = 1;
    a->hw_ver                    = 1;
    a->max_qp                    = SV_MAX_QP - SV_FIRST_QP_IDX;
    a->max_qp_wr                 = SV_MAX_QP_WR;
    a->device_cap_flags          = IBV_DEVICE_RC_RNR_NAK_GEN |
                                   IBV_DEVICE_PORT_ACTIVE_EVENT |
                                   IBV_DEVICE_SYS_IMAGE_GUID |
                                   IBV_DEVICE_UD_AV_PORT_ENFORCE;
    a->max_sge                   = SV_MAX_SGE;
    a->max_sge_rd                = SV_MAX_SGE;
    a->max_cq                    = SV_MAX_CQ;
    a->max_cqe                   = SV_MAX_CQE;
    a->max_mr                    = SV_MAX_MR;
    a->max_pd                    = SV_MAX_PD;
    a->max_qp_rd_atom            = SV_MAX_RD_ATOM;
    a->max_ee_rd_atom            = 0;
    a->max_res_rd_atom           = SV_MAX_RD_ATOM * SV_MAX_QP;
    a->max_qp_init_rd_atom       = SV_MAX_RD_ATOM;
    a->atomic_cap                = IBV_ATOMIC_NONE;
    a->max_mcast_grp             = 0;
    a->max_ah                    = SV_MAX_AH;
    a->max_srq                   = SV_MAX_SRQ;
    a->max_srq_wr                = SV_MAX_SRQ_WR;
    a->max_srq_sge               = SV_MAX_SGE;
    a->max_pkeys                 = 1;
    a->local_ca_ack_delay        = 15;
    a->phys_port_cnt             = 1;
    return 0;
}

/* SOFTVERBS_CQ_TS: the completion timestamps a device offers, as a device
 * without them (or with only one kind) would: both (default), raw (the
 * device clock, readable with ibv_query_rt_values_ex), wallclock, none */
uint64_t sv_device_ts_flags(void)
{
    static const struct {
        const char *name;
        uint64_t   flags;
    } kinds[] = {
        { "both", IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK },
        { "raw", IBV_WC_EX_WITH_COMPLETION_TIMESTAMP },
        { "wallclock", IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK },
        { "none", 0 }
    };
    static int64_t flags = -1;
    const char *s;
    unsigned i;

    if (__atomic_load_n(&flags, __ATOMIC_RELAXED) >= 0) {
        return flags;
    }
    s = getenv("SOFTVERBS_CQ_TS");
    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); ++i) {
        if ((s == NULL) || (*s == '\0') || !strcmp(s, kinds[i].name)) {
            break;
        }
    }
    if (i == sizeof(kinds) / sizeof(kinds[0])) {
        sv_log("SOFTVERBS_CQ_TS='%s' is not both, raw, wallclock or none, "
               "using both", s);
        i = 0;
    }
    __atomic_store_n(&flags, (int64_t)kinds[i].flags, __ATOMIC_RELAXED);
    return kinds[i].flags;
}

int sv_device_query_ex(struct ibv_context *c,
                       const struct ibv_query_device_ex_input *in,
                       struct ibv_device_attr_ex *attr, size_t size)
{
    struct ibv_device_attr_ex a;

    if ((in != NULL) && (in->comp_mask != 0)) {
        return EINVAL;
    }
    if (size < sizeof(a.orig_attr)) {
        return EINVAL;
    }
    memset(&a, 0, sizeof(a));
    sv_device_query(c, &a.orig_attr);
    if (sv_device_ts_flags() & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) {
        a.completion_timestamp_mask = UINT64_MAX;
        a.hca_core_clock            = 1000000; /* kHz: timestamps are ns */
    }
    a.max_wq_type_rq            = 0;
    memcpy(attr, &a, (size < sizeof(a)) ? size : sizeof(a));
    return 0;
}

int sv_device_query_rt_values(struct ibv_context *c,
                              struct ibv_values_ex *v)
{
    uint32_t mask = v->comp_mask;

    v->comp_mask = 0;
    if (!(sv_device_ts_flags() & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)) {
        return EOPNOTSUPP;
    }
    if (mask & IBV_VALUES_MASK_RAW_CLOCK) {
        uint64_t ns = sv_now_ns();

        v->raw_clock.tv_sec  = ns / 1000000000ull;
        v->raw_clock.tv_nsec = ns % 1000000000ull;
        v->comp_mask        |= IBV_VALUES_MASK_RAW_CLOCK;
    }
    return 0;
}

static enum ibv_mtu sv_mtu_enum(uint32_t mtu)
{
    if (mtu >= 4096) {
        return IBV_MTU_4096;
    } else if (mtu >= 2048) {
        return IBV_MTU_2048;
    } else if (mtu >= 1024) {
        return IBV_MTU_1024;
    } else if (mtu >= 512) {
        return IBV_MTU_512;
    }
    return IBV_MTU_256;
}

/* The speed and width codes (ibv_port_attr) of a port whose modelled link
 * carries `gbps` of data: the fastest pair not above it (1x SDR below
 * that), so a transport that paces from the port's rate paces below the
 * link; 4x EDR (100 Gbit/s) when the link is not modelled. */
static void sv_port_speed(double gbps, uint8_t *speed, uint8_t *width)
{
    static const struct { uint8_t code; double gbps; } speeds[] = {
        {1, 2}, {2, 4}, {4, 8}, {8, 10}, {16, 13.636}, {32, 25}, {64, 50},
        {128, 100}
    };
    static const struct { uint8_t code; unsigned lanes; } widths[] = {
        {1, 1}, {16, 2}, {2, 4}, {4, 8}, {8, 12}
    };
    double best = 0, rate;
    unsigned s, w;

    *speed = 32;
    *width = 2;
    if (gbps <= 0) {
        return;
    }
    *speed = 1;
    *width = 1;
    for (s = 0; s < sizeof(speeds) / sizeof(speeds[0]); ++s) {
        for (w = 0; w < sizeof(widths) / sizeof(widths[0]); ++w) {
            rate = speeds[s].gbps * widths[w].lanes;
            if ((rate <= gbps * (1 + 1e-9)) && (rate > best)) {
                best   = rate;
                *speed = speeds[s].code;
                *width = widths[w].code;
            }
        }
    }
}

int sv_port_query(struct ibv_context *c, uint8_t port_num,
                  struct ibv_port_attr *attr, size_t size)
{
    sv_context_t *ctx = sv_ctx_of(c);
    struct ibv_port_attr a;

    if (port_num != 1) {
        return EINVAL;
    }
    memset(&a, 0, sizeof(a));
    a.state           = IBV_PORT_ACTIVE;
    a.max_mtu         = IBV_MTU_4096;
    a.active_mtu      = sv_mtu_enum(sv_model_mtu());
    a.gid_tbl_len     = 1;
    a.port_cap_flags  = IBV_PORT_SM;
    a.max_msg_sz      = SV_MAX_MSG;
    a.bad_pkey_cntr   = 0;
    a.qkey_viol_cntr  = 0;
    a.pkey_tbl_len    = 1;
    a.lid             = sv_port_lid(ctx->port->index);
    a.sm_lid          = 1;
    a.lmc             = 0;
    a.max_vl_num      = 1;
    a.sm_sl           = 0;
    a.subnet_timeout  = 18;
    a.init_type_reply = 0;
    sv_port_speed(sv_model_port_gbps(ctx->port->index), &a.active_speed,
                  &a.active_width);
    a.phys_state      = 5;     /* LinkUp */
    a.link_layer      = IBV_LINK_LAYER_INFINIBAND;
    a.flags           = 0;
    a.port_cap_flags2 = 0;
    memcpy(attr, &a, (size < sizeof(a)) ? size : sizeof(a));
    return 0;
}

/* fe80::0253:56ff:ffff:pppp, with 24 bits of the fabric id (ff) */
void sv_port_gid_of(unsigned port, union ibv_gid *gid)
{
    uint64_t ifid = SV_GUID_PREFIX | ((sv_fabric->id & 0xffffff) << 16) |
                    (port & 0xffff);

    gid->global.subnet_prefix = htobe64(0xfe80000000000000ull);
    gid->global.interface_id  = htobe64(ifid);
}

int sv_port_of_gid(const union ibv_gid *gid)
{
    uint64_t ifid = be64toh(gid->global.interface_id);

    if ((ifid & ~0xffffffffffull) != SV_GUID_PREFIX) {
        return -1;
    }
    if (((ifid >> 16) & 0xffffff) != (sv_fabric->id & 0xffffff)) {
        return -1;
    }
    return (int)(ifid & 0xffff);
}

int sv_port_gid(struct ibv_context *c, uint8_t port_num, int index,
                union ibv_gid *gid)
{
    if ((port_num != 1) || (index != 0)) {
        return EINVAL;
    }
    sv_port_gid_of(sv_ctx_of(c)->port->index, gid);
    return 0;
}

int sv_device_pkey(struct ibv_context *c, uint8_t port_num, int index,
                   __be16 *pkey)
{
    if ((port_num != 1) || (index != 0)) {
        return EINVAL;
    }
    *pkey = htobe16(SV_PKEY_DEFAULT);
    return 0;
}

void sv_device_async_event(sv_context_t *ctx, enum ibv_event_type type,
                           void *obj)
{
    struct ibv_async_event *ev;
    uint64_t one = 1;

    pthread_mutex_lock(&ctx->async_lock);
    if (ctx->ev_tail - ctx->ev_head < 64) {
        ev = &ctx->events[ctx->ev_tail++ % 64];
        ev->event_type = type;
        ev->element.qp = obj;
        (void)!write(ctx->vctx.context.async_fd, &one, sizeof(one));
    }
    pthread_mutex_unlock(&ctx->async_lock);
}

int sv_device_get_async_event(struct ibv_context *c,
                              struct ibv_async_event *ev)
{
    sv_context_t *ctx = sv_ctx_of(c);
    uint64_t cnt;
    int ret = -1;

    /* one count per queued event (semaphore mode): blocks unless the
     * application made the fd non-blocking */
    if (read(c->async_fd, &cnt, sizeof(cnt)) < 0) {
        return -1;
    }
    pthread_mutex_lock(&ctx->async_lock);
    if (ctx->ev_head != ctx->ev_tail) {
        *ev = ctx->events[ctx->ev_head++ % 64];
        ret = 0;
    } else {
        errno = EAGAIN;
    }
    pthread_mutex_unlock(&ctx->async_lock);
    return ret;
}

/*
 * The exported libibverbs entry points.  softverbs.map gives each the
 * symbol version the installed libibverbs gives it, so a preloaded
 * libsoftverbs.so answers every call a verbs program makes.  The data-path
 * verbs (post_send, poll_cq, ...) are inline in verbs.h and dispatch
 * through context->ops, set in sv_device_open.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_verbs.h"

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* macros in verbs.h: the library defines the functions themselves */
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define SV_EXPORT __attribute__((visibility("default")))

SV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
    return sv_device_list(num_devices);
}

SV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

SV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
    return device->name;
}

SV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
    return htobe64(SV_GUID_PREFIX |
                   ((uint64_t)((sv_device_t*)device)->index << 16));
}

SV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
    return sv_device_is(device) ? (int)((sv_device_t*)device)->index : -1;
}

SV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    return sv_device_open(device);
}

SV_EXPORT int ibv_close_device(struct ibv_context *context)
{
    return sv_device_close(context);
}

SV_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
    errno = EOPNOTSUPP;
    return NULL;
}

SV_EXPORT int ibv_get_async_event(struct ibv_context *context,
                                  struct ibv_async_event *event)
{
    return sv_device_get_async_event(context, event);
}

SV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
}

SV_EXPORT int ibv_query_device(struct ibv_context *context,
                               struct ibv_device_attr *device_attr)
{
    return sv_device_query(context, device_attr);
}

/* the legacy symbol may only write the old, shorter port attributes */
SV_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
                             struct _compat_ibv_port_attr *port_attr)
{
    return sv_port_query(context, port_num, (struct ibv_port_attr*)port_attr,
                         offsetof(struct ibv_port_attr, port_cap_flags2));
}

SV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num,
                            int index, union ibv_gid *gid)
{
    int ret = sv_port_gid(context, port_num, index, gid);

    return (ret == 0) ? 0 : -1;
}

SV_EXPORT int ibv_query_gid_type(struct ibv_context *context,
                                 uint8_t port_num, unsigned int index,
                                 int *type)
{
    if ((port_num != 1) || (index != 0)) {
        errno = EINVAL;
        return -1;
    }
    *type = 0;         /* IB / RoCE v1 */
    return 0;
}

SV_EXPORT int _ibv_query_gid_ex(struct ibv_context *context,
                                uint32_t port_num, uint32_t gid_index,
                                struct ibv_gid_entry *entry, uint32_t flags,
                                size_t entry_size)
{
    if ((flags != 0) || (entry_size < sizeof(*entry))) {
        return EINVAL;
    }
    if ((port_num != 1) || (gid_index != 0)) {
        return EINVAL;
    }
    memset(entry, 0, sizeof(*entry));
    sv_port_gid(context, 1, 0, &entry->gid);
    entry->gid_index = 0;
    entry->port_num  = 1;
    entry->gid_type  = IBV_GID_TYPE_IB;
    return 0;
}

SV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
                                       struct ibv_gid_entry *entries,
                                       size_t max_entries, uint32_t flags,
                                       size_t entry_size)
{
    if ((flags != 0) || (entry_size < sizeof(*entries))) {
        return -EINVAL;
    }
    if (max_entries < 1) {
        return -EINVAL;
    }
    _ibv_query_gid_ex(context, 1, 0, entries, 0, sizeof(*entries));
    return 1;
}

SV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num,
                             int index, __be16 *pkey)
{
    int ret = sv_device_pkey(context, port_num, index, pkey);

    return (ret == 0) ? 0 : -1;
}

SV_EXPORT int ibv_get_pkey_index(struct ibv_context *context,
                                 uint8_t port_num, __be16 pkey)
{
    if ((port_num != 1) || ((be16toh(pkey) & 0x7fff) != 0x7fff)) {
        return -1;
    }
    return 0;
}

SV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    return sv_pd_alloc(context);
}

SV_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
    return sv_pd_dealloc(pd);
}

SV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context,
                                       uint32_t pd_handle)
{
    errno = EOPNOTSUPP;
    return NULL;
}

SV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
}

SV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr,
                                    size_t length, int access)
{
    return sv_mr_reg(pd, addr, length, (uintptr_t)addr, access);
}

SV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
                                         size_t length, uint64_t iova,
                                         int access)
{
    return sv_mr_reg(pd, addr, length, iova, access);
}

SV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
                                          size_t length, uint64_t iova,
                                          unsigned int access)
{
    return sv_mr_reg(pd, addr, length, iova, access);
}

SV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
                                           size_t length, uint64_t iova,
                                           int fd, int access)
{
    errno = EOPNOTSUPP;
    return NULL;
}

SV_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
                           void *addr, size_t length, int access)
{
    return sv_mr_rereg(mr, flags, pd, addr, length, access);
}

SV_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
    return sv_mr_dereg(mr);
}

SV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
    errno = EOPNOTSUPP;
    return NULL;
}

SV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
}

SV_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context,
                                       uint32_t dm_handle)
{
    errno = EOPNOTSUPP;
    return NULL;
}

SV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
}

SV_EXPORT struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
    return sv_chan_create(context);
}

SV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    return sv_chan_destroy(channel);
}

SV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
                                       void *cq_context,
                                       struct ibv_comp_channel *channel,
                                       int comp_vector)
{
    struct ibv_cq_init_attr_ex attr = {
        .cqe         = (cqe > 0) ? cqe : 0,
        .cq_context  = cq_context,
        .channel     = channel,
        .comp_vector = (comp_vector >= 0) ? comp_vector : UINT32_MAX,
        .wc_flags    = IBV_WC_STANDARD_FLAGS
    };
    struct ibv_cq_ex *cq = sv_cq_create(context, &attr);

    return (cq != NULL) ? ibv_cq_ex_to_cq(cq) : NULL;
}

SV_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
    return EOPNOTSUPP;
}

SV_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
    return sv_cq_destroy(cq);
}

SV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel,
                               struct ibv_cq **cq, void **cq_context)
{
    return sv_cq_get_event(channel, cq, cq_context);
}

SV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    sv_cq_ack_events(cq, nevents);
}

SV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
                                         struct ibv_srq_init_attr *attr)
{
    return sv_srq_create(pd, attr);
}

SV_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
                             int attr_mask)
{
    return sv_srq_modify(srq, attr, attr_mask);
}

SV_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
    return sv_srq_query(srq, attr);
}

SV_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
    return sv_srq_destroy(srq);
}

SV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
                                       struct ibv_qp_init_attr *init)
{
    struct ibv_qp_init_attr_ex a = {
        .qp_context = init->qp_context,
        .send_cq    = init->send_cq,
        .recv_cq    = init->recv_cq,
        .srq        = init->srq,
        .cap        = init->cap,
        .qp_type    = init->qp_type,
        .sq_sig_all = init->sq_sig_all,
        .comp_mask  = IBV_QP_INIT_ATTR_PD,
        .pd         = pd
    };
    struct ibv_qp *qp = sv_qp_create(pd->context, &a);

    if (qp != NULL) {
        init->cap = a.cap;
    }
    return qp;
}

SV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
    sv_qp_t *sqp = sv_qp_of(qp);

    if (!(sqp->comp_mask & SV_QP_EX)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return &sqp->qpx;
}

SV_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                            int attr_mask)
{
    return sv_qp_modify(qp, attr, attr_mask);
}

SV_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                           int attr_mask, struct ibv_qp_init_attr *init_attr)
{
    return sv_qp_query(qp, attr, attr_mask, init_attr);
}

SV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp,
                                         enum ibv_wr_opcode op,
                                         uint32_t flags)
{
    return 0;
}

SV_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
    return sv_qp_destroy(qp);
}

SV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    return EOPNOTSUPP;
}

SV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    return EOPNOTSUPP;
}

SV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd,
                                       struct ibv_ah_attr *attr)
{
    return sv_ah_create(pd, attr);
}

SV_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
    return sv_ah_destroy(ah);
}

SV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context,
                                  uint8_t port_num, struct ibv_wc *wc,
                                  struct ibv_grh *grh,
                                  struct ibv_ah_attr *ah_attr)
{
    int ret = sv_ah_init_from_wc(context, port_num, wc, grh, ah_attr);

    if (ret != 0) {
        errno = ret;
        return -1;
    }
    return 0;
}

SV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd,
                                               struct ibv_wc *wc,
                                               struct ibv_grh *grh,
                                               uint8_t port_num)
{
    struct ibv_ah_attr attr;

    if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr) != 0) {
        return NULL;
    }
    return sv_ah_create(pd, &attr);
}

SV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
                                          struct ibv_ah_attr *attr,
                                          uint8_t eth_mac[6],
                                          uint16_t *vid)
{
    return EINVAL;        /* InfiniBand link layer: there is no Ethernet */
}

SV_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
                               uint16_t lid)
{
    return EOPNOTSUPP;
}

SV_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
                               uint16_t lid)
{
    return EOPNOTSUPP;
}

SV_EXPORT int ibv_fork_init(void)
{
    return 0;   /* copies go through the kernel: fork needs no care */
}

SV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return IBV_FORK_UNNEEDED;
}

/*
 * Validation of received packets (formats in uccl_wire.h). Everything here
 * runs before any field of a packet is trusted.
 */
#include "uccl_wire.h"
#include "uccl_seq.h"

#include <uct/api/uct_def.h>


static const char *uct_uccl_ctl_names[UCT_UCCL_CTL_LAST] = {
    [UCT_UCCL_CTL_CONN_REQ]   = "CONN_REQ",
    [UCT_UCCL_CTL_CONN_REP]   = "CONN_REP",
    [UCT_UCCL_CTL_ACK]        = "ACK",
    [UCT_UCCL_CTL_ACK_BATCH]  = "ACK_BATCH",
    [UCT_UCCL_CTL_DISCONNECT] = "DISCONNECT",
    [UCT_UCCL_CTL_KEEPALIVE]  = "KEEPALIVE",
    [UCT_UCCL_CTL_CREDIT]     = "CREDIT",
    [UCT_UCCL_CTL_PATH_RESET] = "PATH_RESET",
};

/* fixed part of each control type; 0 = not a valid type */
static const uint16_t uct_uccl_ctl_min_size[UCT_UCCL_CTL_LAST] = {
    [UCT_UCCL_CTL_CONN_REQ]   = sizeof(uct_uccl_conn_pkt_t),
    [UCT_UCCL_CTL_CONN_REP]   = sizeof(uct_uccl_conn_pkt_t),
    [UCT_UCCL_CTL_ACK]        = sizeof(uct_uccl_ack_t),
    [UCT_UCCL_CTL_ACK_BATCH]  = sizeof(uct_uccl_ack_batch_t),
    [UCT_UCCL_CTL_DISCONNECT] = sizeof(uct_uccl_disconnect_t),
    [UCT_UCCL_CTL_KEEPALIVE]  = sizeof(uct_uccl_keepalive_t),
    [UCT_UCCL_CTL_CREDIT]     = sizeof(uct_uccl_credit_t),
    [UCT_UCCL_CTL_PATH_RESET] = sizeof(uct_uccl_path_reset_t),
};

const char *uct_uccl_wire_ctl_name(unsigned type)
{
    if ((type >= UCT_UCCL_CTL_LAST) || (uct_uccl_ctl_names[type] == NULL)) {
        return "?";
    }
    return uct_uccl_ctl_names[type];
}

static int uct_uccl_wire_seq_ok(uint32_t seq)
{
    return !(seq & ~UCT_UCCL_SEQ_MASK);
}

static ucs_status_t uct_uccl_wire_ack_check(const uct_uccl_ack_t *ack);

/* An AM: its id, its flags, its length, and a carried ACK record */
static ucs_status_t uct_uccl_wire_am_check(const void *buf, size_t len)
{
    const uct_uccl_am_hdr_t *am = buf;
    uct_uccl_ack_t ack;
    size_t need;

    if (len < sizeof(*am)) {
        return UCS_ERR_MESSAGE_TRUNCATED;
    }
    /* the id indexes UCX's handler table */
    if ((am->flags & ~UCT_UCCL_AM_F_ACK) || (am->am_id >= UCT_AM_ID_MAX)) {
        return UCS_ERR_INVALID_PARAM;
    }
    need = sizeof(*am) + (size_t)am->length +
           ((am->flags & UCT_UCCL_AM_F_ACK) ? sizeof(ack) : 0);
    if (len != need) {
        return (len < need) ? UCS_ERR_MESSAGE_TRUNCATED :
                              UCS_ERR_INVALID_PARAM;
    }
    if (am->flags & UCT_UCCL_AM_F_ACK) {
        /* a whole ACK packet without SACK words */
        uct_uccl_wire_am_ack(am, &ack);
        if ((ack.hdr.type != UCT_UCCL_CTL_ACK) ||
            (ack.hdr.version != UCT_UCCL_WIRE_VERSION) ||
            (ack.hdr.length != sizeof(ack)) ||
            (uct_uccl_wire_ack_check(&ack) != UCS_OK)) {
            return UCS_ERR_INVALID_PARAM;
        }
    }
    return UCS_OK;
}

ucs_status_t uct_uccl_wire_data_check(const void *buf, size_t len,
                                      uint32_t imm)
{
    uct_uccl_kind_t kind = uct_uccl_imm_kind(imm);
    const uct_uccl_get_req_t *req;
    const uct_uccl_get_done_t *done;
    const uct_uccl_get_data_t *data;
    const uct_uccl_retx_hdr_t *retx;

    if (uct_uccl_imm_check(imm) != UCS_OK) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (len < 1) {
        return UCS_ERR_MESSAGE_TRUNCATED;
    }
    if (*(const uint8_t*)buf != kind) {
        return UCS_ERR_INVALID_PARAM;
    }

    switch (kind) {
    case UCT_UCCL_KIND_AM:
        return uct_uccl_wire_am_check(buf, len);
    case UCT_UCCL_KIND_GET_REQ:
        if (len < sizeof(*req)) {
            return UCS_ERR_MESSAGE_TRUNCATED;
        }
        req = buf;
        if ((len != sizeof(*req)) || (req->flags & ~UCT_UCCL_GET_F_SEND) ||
            req->rsvd0[0] || req->rsvd0[1] || req->rsvd1 ||
            (req->remote_addr + req->length < req->remote_addr) ||
            (req->reply_addr + req->length < req->reply_addr) ||
            ((req->flags & UCT_UCCL_GET_F_SEND) &&
             (req->reply_addr || req->reply_rkey))) {
            return UCS_ERR_INVALID_PARAM;
        }
        return UCS_OK;
    case UCT_UCCL_KIND_GET_DATA:
        if (len < sizeof(*data)) {
            return UCS_ERR_MESSAGE_TRUNCATED;
        }
        data = buf;
        if (data->rsvd0[0] || data->rsvd0[1] || data->rsvd0[2] ||
            data->rsvd1 || (data->status > 0) ||
            ((data->status != 0) && (data->length != 0))) {
            return UCS_ERR_INVALID_PARAM;
        }
        if (len != sizeof(*data) + (size_t)data->length) {
            return (len < sizeof(*data) + (size_t)data->length) ?
                   UCS_ERR_MESSAGE_TRUNCATED : UCS_ERR_INVALID_PARAM;
        }
        return UCS_OK;
    case UCT_UCCL_KIND_GET_DONE:
        if (len < sizeof(*done)) {
            return UCS_ERR_MESSAGE_TRUNCATED;
        }
        done = buf;
        if ((len != sizeof(*done)) || done->rsvd0[0] || done->rsvd0[1] ||
            done->rsvd0[2] || (done->status > 0)) {
            return UCS_ERR_INVALID_PARAM;
        }
        return UCS_OK;
    case UCT_UCCL_KIND_RETX:
        if (len < sizeof(*retx)) {
            return UCS_ERR_MESSAGE_TRUNCATED;
        }
        retx = buf;
        /* the inner imm must be a WRITE chunk with the same CSN */
        if (retx->rsvd0[0] || retx->rsvd0[1] || retx->rsvd0[2] ||
            (uct_uccl_imm_check(retx->imm) != UCS_OK) ||
            ((uct_uccl_imm_kind(retx->imm) != UCT_UCCL_KIND_PUT) &&
             (uct_uccl_imm_kind(retx->imm) != UCT_UCCL_KIND_GET_RESP)) ||
            (uct_uccl_imm_csn(retx->imm) != uct_uccl_imm_csn(imm)) ||
            (retx->remote_addr + retx->length < retx->remote_addr)) {
            return UCS_ERR_INVALID_PARAM;
        }
        if (len != sizeof(*retx) + (size_t)retx->length) {
            return (len < sizeof(*retx) + (size_t)retx->length) ?
                   UCS_ERR_MESSAGE_TRUNCATED : UCS_ERR_INVALID_PARAM;
        }
        return UCS_OK;
    default:
        /* PUT/GET_RESP are WRITEs: never a SEND */
        return UCS_ERR_INVALID_PARAM;
    }
}

static ucs_status_t uct_uccl_wire_conn_check(const uct_uccl_conn_pkt_t *c)
{
    unsigned i;

    if (c->hdr.length < sizeof(*c) + 4) {
        return UCS_ERR_MESSAGE_TRUNCATED;
    }
    if ((c->magic != UCT_UCCL_WIRE_MAGIC) || (c->num_paths == 0) ||
        (c->num_paths > UCT_UCCL_WIRE_MAX_PATHS) ||
        (c->hdr.length != uct_uccl_wire_conn_size(c->num_paths)) ||
        (c->mode > UCT_UCCL_MODE_RC) || c->flags ||
        (c->mtu < 256) || (c->mtu > 4096) || (c->mtu & (c->mtu - 1)) ||
        (c->chunk_size == 0) || (c->sack_bits == 0) ||
        (c->sack_bits > UCT_UCCL_WIRE_SACK_MAX_BITS) ||
        !uct_uccl_wire_seq_ok(c->init_csn) ||
        c->rsvd ||
        !uct_uccl_wire_seq_ok(c->psn) || !uct_uccl_wire_seq_ok(c->ctl_qpn) ||
        (c->status > 0) || (c->token == 0) ||
        ((c->hdr.type == UCT_UCCL_CTL_CONN_REQ) &&
         ((c->dst_conn_id != UCT_UCCL_CONN_ID_NONE) || c->status ||
          c->echo_token)) ||
        ((c->hdr.type == UCT_UCCL_CTL_CONN_REP) &&
         (c->dst_conn_id == UCT_UCCL_CONN_ID_NONE))) {
        return UCS_ERR_INVALID_PARAM;
    }
    for (i = 0; i < c->num_paths; ++i) {
        if (!uct_uccl_wire_seq_ok(c->qpn[i])) {
            return UCS_ERR_INVALID_PARAM;
        }
    }
    for (i = 0; i < UCT_UCCL_WIRE_CTL_ALT; ++i) {
        if (!uct_uccl_wire_seq_ok(c->ctl_alt_qpn[i])) {
            return UCS_ERR_INVALID_PARAM;
        }
    }
    return UCS_OK;
}

static ucs_status_t uct_uccl_wire_ack_check(const uct_uccl_ack_t *ack)
{
    if (ack->hdr.length < uct_uccl_wire_ack_size(ack->sack_words)) {
        return UCS_ERR_MESSAGE_TRUNCATED;
    }
    if ((ack->hdr.length != uct_uccl_wire_ack_size(ack->sack_words)) ||
        (ack->sack_words > UCT_UCCL_WIRE_SACK_MAX_WORDS) ||
        (ack->flags & ~(UCT_UCCL_ACK_F_BUSY | UCT_UCCL_ACK_F_CREDIT |
                        UCT_UCCL_ACK_F_IDLE)) ||
        (!(ack->flags & UCT_UCCL_ACK_F_CREDIT) &&
         ((ack->credit != 0) || (ack->flags & UCT_UCCL_ACK_F_IDLE))) ||
        !uct_uccl_wire_seq_ok(ack->cum_csn) ||
        !uct_uccl_wire_seq_ok(ack->echo_csn)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

static ucs_status_t uct_uccl_wire_credit_check(const uct_uccl_credit_t *c)
{
    const uint32_t all = UCT_UCCL_CREDIT_F_REQUEST | UCT_UCCL_CREDIT_F_GRANT;

    if ((c->hdr.length != sizeof(*c)) || !(c->flags & all) ||
        (c->flags & ~(all | UCT_UCCL_CREDIT_F_IDLE)) ||
        (!(c->flags & UCT_UCCL_CREDIT_F_REQUEST) &&
         (c->want || c->spec || c->lost || c->held || c->seen)) ||
        (!(c->flags & UCT_UCCL_CREDIT_F_GRANT) &&
         (c->grant || (c->flags & UCT_UCCL_CREDIT_F_IDLE))) || c->reserved) {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/* common header of a packet or record of `avail` bytes */
static ucs_status_t
uct_uccl_wire_hdr_check(const uct_uccl_ctl_hdr_t *hdr, size_t avail)
{
    if (avail < sizeof(*hdr)) {
        return UCS_ERR_MESSAGE_TRUNCATED;
    }
    if (hdr->version != UCT_UCCL_WIRE_VERSION) {
        return UCS_ERR_UNSUPPORTED;
    }
    if ((hdr->type == 0) || (hdr->type >= UCT_UCCL_CTL_LAST)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if ((hdr->length > avail) ||
        (avail < uct_uccl_ctl_min_size[hdr->type])) {
        return UCS_ERR_MESSAGE_TRUNCATED;
    }
    if (hdr->length < uct_uccl_ctl_min_size[hdr->type]) {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

static ucs_status_t uct_uccl_wire_batch_check(const uct_uccl_ack_batch_t *b)
{
    const uct_uccl_ctl_hdr_t *rec;
    const char *end = (const char*)b + b->hdr.length;
    ucs_status_t status;
    size_t avail;
    unsigned i;

    if ((b->count == 0) || b->rsvd) {
        return UCS_ERR_INVALID_PARAM;
    }
    rec = uct_uccl_wire_batch_first(b);
    for (i = 0; i < b->count; ++i) {
        if ((const char*)rec > end) {
            return UCS_ERR_MESSAGE_TRUNCATED;
        }
        avail  = end - (const char*)rec;
        status = uct_uccl_wire_hdr_check(rec, avail);
        if (status != UCS_OK) {
            return status;
        }
        if (rec->type == UCT_UCCL_CTL_ACK) {
            status = uct_uccl_wire_ack_check((const uct_uccl_ack_t*)rec);
        } else if (rec->type == UCT_UCCL_CTL_CREDIT) {
            status = uct_uccl_wire_credit_check((const uct_uccl_credit_t*)
                                                rec);
        } else {
            return UCS_ERR_INVALID_PARAM;
        }
        if (status != UCS_OK) {
            return status;
        }
        rec = uct_uccl_wire_batch_next(rec);
    }
    /* records must fill the batch exactly (padding included) */
    return ((const char*)rec == end) ? UCS_OK : UCS_ERR_INVALID_PARAM;
}

static ucs_status_t uct_uccl_wire_path_reset_check(const void *pkt)
{
    const uct_uccl_path_reset_t *r = pkt;

    if ((r->hdr.length != sizeof(*r)) ||
        (r->flags & ~UCT_UCCL_PATH_RESET_F_PSN) ||
        (r->step >= UCT_UCCL_PATH_RESET_LAST) ||
        (r->path >= UCT_UCCL_WIRE_MAX_PATHS) ||
        !uct_uccl_wire_seq_ok(r->qpn) || !uct_uccl_wire_seq_ok(r->psn) ||
        ((r->step == UCT_UCCL_PATH_RESET_CONFIRM) != (r->qpn == 0)) ||
        ((r->step == UCT_UCCL_PATH_RESET_REQUEST) && r->flags) ||
        (!(r->flags & UCT_UCCL_PATH_RESET_F_PSN) && r->psn)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

ucs_status_t uct_uccl_wire_ctl_check(const void *pkt, size_t len)
{
    const uct_uccl_ctl_hdr_t *hdr = pkt;
    const uct_uccl_disconnect_t *d;
    const uct_uccl_keepalive_t *k;
    ucs_status_t status;

    status = uct_uccl_wire_hdr_check(hdr, len);
    if (status != UCS_OK) {
        return status;
    }

    switch (hdr->type) {
    case UCT_UCCL_CTL_CONN_REQ:
    case UCT_UCCL_CTL_CONN_REP:
        return uct_uccl_wire_conn_check(pkt);
    case UCT_UCCL_CTL_ACK:
        return uct_uccl_wire_ack_check(pkt);
    case UCT_UCCL_CTL_ACK_BATCH:
        return uct_uccl_wire_batch_check(pkt);
    case UCT_UCCL_CTL_CREDIT:
        return uct_uccl_wire_credit_check(pkt);
    case UCT_UCCL_CTL_DISCONNECT:
        d = pkt;
        return ((d->hdr.length == sizeof(*d)) && (d->reason <= 0)) ?
               UCS_OK : UCS_ERR_INVALID_PARAM;
    case UCT_UCCL_CTL_KEEPALIVE:
        k = pkt;
        return ((k->hdr.length == sizeof(*k)) &&
                !(k->flags & ~UCT_UCCL_KEEPALIVE_REPLY)) ?
               UCS_OK : UCS_ERR_INVALID_PARAM;
    case UCT_UCCL_CTL_PATH_RESET:
        return uct_uccl_wire_path_reset_check(pkt);
    default:
        return UCS_ERR_INVALID_PARAM;
    }
}

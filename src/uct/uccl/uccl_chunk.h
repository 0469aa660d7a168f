/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Chunks (one work request's worth of data, from a registered pool), the
 * receive descriptors and the operations UCX waits on; their life cycle
 * (uccl_chunk.c).
 */
#ifndef UCT_UCCL_CHUNK_H_
#define UCT_UCCL_CHUNK_H_

#include "uccl_def.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue.h>
#include <infiniband/verbs.h>


/* Registered memory for the pools (one MR per mpool chunk) */
typedef struct uct_uccl_mp_chunk_hdr {
    struct ibv_mr           *mr;
} uct_uccl_mp_chunk_hdr_t;


/* What a chunk carries: the kind of its WR and local bookkeeping */
enum {
    UCT_UCCL_CHUNK_F_ACKED       = UCS_BIT(0), /* reliability layer done */
    UCT_UCCL_CHUNK_F_TRACKED     = UCS_BIT(1), /* in the UC tracker */
    UCT_UCCL_CHUNK_F_READ        = UCS_BIT(2), /* RC RDMA READ of a GET */
    UCT_UCCL_CHUNK_F_FENCE       = UCS_BIT(3), /* wait for all before it */
    UCT_UCCL_CHUNK_F_ZOMBIE      = UCS_BIT(4), /* released, WRs in flight */
    UCT_UCCL_CHUNK_F_SERVED      = UCS_BIT(5), /* a reply to a peer's GET */
    UCT_UCCL_CHUNK_F_REDO        = UCS_BIT(6), /* RC: queued again, its QP
                                                  failed */
    UCT_UCCL_CHUNK_F_RUN         = UCS_BIT(7)  /* a PUT's bytes right after
                                                  the chunk queued before it,
                                                  of its op */
};


/*
 * One work request's worth of data, from a registered pool. It stays until
 * the peer acknowledged it (UC) or its send completed (RC), and until every
 * WR that carries it completed (it can be posted twice: original and resend).
 */
struct uct_uccl_chunk {
    ucs_queue_elem_t        queue;       /* conn's unsent queue */
    ucs_list_link_t         zlink;       /* conn's zombies */
    uct_uccl_conn_t         *conn;       /* NULL: orphan, freed on completion */
    uct_uccl_op_t           *op;         /* completion to update, or NULL */
    uint32_t                lkey;        /* of this desc (header/data) */
    uint8_t                 kind;        /* uct_uccl_kind_t */
    uint8_t                 flags;
    uint8_t                 posted;      /* WRs in send queues */
    uint8_t                 last;
    uint16_t                path;
    uint32_t                csn;
    uint32_t                chain_gen;   /* conn's chain_gen when its WR
                                            was last chained */
    uint32_t                rc_seq;      /* RC: its place in issue order */
    uint32_t                rc_psn_end;  /* RC: the PSN after its WR's */
    uint32_t                barrier;     /* GETs issued before it */
    uint32_t                length;      /* payload bytes */
    uint32_t                hdr_len;     /* SEND header bytes in hdr */
    uint64_t                laddr;       /* payload */
    uint32_t                payload_lkey;
    uint32_t                extra_len;   /* AM zcopy: user header in data */
    uint32_t                rkey;        /* PUT/GET_RESP/READ target */
    uint32_t                src_rkey;    /* GET_RESP: our rkey of laddr */
    uint64_t                raddr;
    uint64_t                sent_ns;     /* RC: posted at (RTT sample) */
    struct ibv_send_wr      wr;
    struct ibv_sge          sge[3];
    union {
        uct_uccl_am_hdr_t   am;
        uct_uccl_get_req_t  get_req;
        uct_uccl_get_done_t get_done;
        uct_uccl_get_data_t get_data;
        uct_uccl_retx_hdr_t retx;
        uint8_t             raw[UCT_UCCL_SEND_HDR_MAX];
    } hdr;
    char                    data[];      /* seg_size bytes */
};


/* SRQ receive buffer. A SEND lands at data + pad: the payload after an AM
 * header is then aligned for the AM handler (8 bytes, or the iface's
 * am_alignment and am_align_offset); data itself starts on a cache line
 * or on that alignment. */
typedef struct uct_uccl_rx_desc {
    ucs_queue_elem_t        queue;       /* iface's deferred AMs */
    uint32_t                lkey;
    uint32_t                pad;         /* iface's config.rx_pad */
    char                    data[] UCS_V_ALIGNED(8);
} uct_uccl_rx_desc_t;


static inline void *uct_uccl_rx_data(uct_uccl_rx_desc_t *desc)
{
    return desc->data + desc->pad;
}


typedef enum {
    UCT_UCCL_OP_ZCOPY,       /* put/am zcopy: comp when all chunks acked */
    UCT_UCCL_OP_GET_BCOPY,
    UCT_UCCL_OP_GET_ZCOPY,
    UCT_UCCL_OP_FLUSH,
    UCT_UCCL_OP_GET_SERVE    /* peer's GET (UC): GET_DONE when all acked */
} uct_uccl_op_type_t;

/* An operation with a user completion */
struct uct_uccl_op {
    ucs_list_link_t         list;        /* conn's outstanding ops */
    const void              *owner;      /* its conn (compared, never
                                            followed: it may be gone) */
    ucs_list_link_t         get_link;    /* GET: conn's GETs, in order */
    uint32_t                gseq;        /* GET: its place in that order */
    uct_uccl_op_type_t      type;
    uint32_t                pending;     /* parts still to complete */
    ucs_status_t            status;
    uct_completion_t        *comp;
    uint64_t                id;          /* GET: echoed in GET_DONE */
    uint32_t                flush_csn;   /* FLUSH: tracker nxt to reach */
    uct_unpack_callback_t   unpack_cb;   /* GET bcopy */
    void                    *unpack_arg;
    uct_uccl_chunk_t        *buf;        /* GET bcopy, RC: READ lands here */
    struct uct_uccl_rx_desc *data_desc;  /* GET bcopy, UC: the GET_DATA */
    size_t                  length;
};


static inline int uct_uccl_op_is_get(const uct_uccl_op_t *op)
{
    return (op->type == UCT_UCCL_OP_GET_BCOPY) ||
           (op->type == UCT_UCCL_OP_GET_ZCOPY);
}

/* an RC chunk that writes the peer's memory (a PUT; not a READ) */
static inline int uct_uccl_chunk_is_rc_write(const uct_uccl_chunk_t *chunk)
{
    return (chunk->kind == UCT_UCCL_KIND_PUT) &&
           !(chunk->flags & UCT_UCCL_CHUNK_F_READ);
}

/* A bulk WRITE (PUT chunk or GET reply): an empty WRITE to its target can
 * follow it on its path to show whether it arrived (tail marks, probes) */
static inline int uct_uccl_chunk_is_bulk_write(const uct_uccl_chunk_t *chunk)
{
    return (chunk->length > UCT_UCCL_BULK_MIN) &&
           ((chunk->kind == UCT_UCCL_KIND_PUT) ||
            (chunk->kind == UCT_UCCL_KIND_GET_RESP));
}

/* a chunk that reads the peer's memory (a GET request or an RC READ) */
static inline int uct_uccl_chunk_is_read(const uct_uccl_chunk_t *chunk)
{
    return (chunk->kind == UCT_UCCL_KIND_GET_REQ) ||
           (chunk->flags & UCT_UCCL_CHUNK_F_READ);
}

/* The bytes a chunk makes the peer send us (a GET request's reply, an RC
 * READ's data): a receiver-driven cc's own pacer schedules them before
 * the chunk goes */
static inline uint64_t
uct_uccl_chunk_pull_bytes(const uct_uccl_chunk_t *chunk)
{
    if (chunk->kind == UCT_UCCL_KIND_GET_REQ) {
        return chunk->hdr.get_req.length;
    }
    return (chunk->flags & UCT_UCCL_CHUNK_F_READ) ? chunk->length : 0;
}

/* Does a queued chunk ask its peer's credit for its bytes? Not one its
 * receiver pulls (a reply to the peer's GET; in RC our READ) */
static UCS_F_ALWAYS_INLINE uint32_t
uct_uccl_chunk_asks(const uct_uccl_chunk_t *chunk)
{
    return (chunk->flags & (UCT_UCCL_CHUNK_F_SERVED |
                            UCT_UCCL_CHUNK_F_READ)) ? 0 : chunk->length;
}

/* RC: which way the chunk's data goes (uct_uccl_rc_dir_t) */
static inline unsigned uct_uccl_chunk_rc_dir(const uct_uccl_chunk_t *chunk)
{
    return (chunk->flags & UCT_UCCL_CHUNK_F_READ) ? UCT_UCCL_RC_DIR_IN :
                                                    UCT_UCCL_RC_DIR_OUT;
}

/* life cycle (uccl_chunk.c; getting one and queueing it: uccl_tx.h) */
void uct_uccl_chunk_wr_done(uct_uccl_chunk_t *chunk);
void uct_uccl_chunk_done(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk,
                         ucs_status_t status);
uct_uccl_op_t *uct_uccl_op_get(uct_uccl_conn_t *conn, uct_uccl_op_type_t type,
                               uct_completion_t *comp);
void uct_uccl_op_complete(uct_uccl_conn_t *conn, uct_uccl_op_t *op);
void uct_uccl_op_part_done(uct_uccl_conn_t *conn, uct_uccl_op_t *op,
                           ucs_status_t status);
void uct_uccl_op_report(uct_uccl_op_t *op);

#endif

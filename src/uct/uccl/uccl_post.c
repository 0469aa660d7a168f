/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Posting: may the next chunk leave (the order the target must see), on
 * which path, and how its WR looks; chunks are chained per path and go out
 * with one ibv_post_send per chain.
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <string.h>


/* May the chunk at the head of the queue leave? The target sees the
 * operations of a conn in the order they were issued (docs/STATUS.md):
 *  - nothing issued after a GET goes before that GET completed, so no
 *    later write reaches the target before the GET read it, and no later
 *    AM's reply overtakes the GET's data (a GET after a GET does not
 *    wait: reads do not conflict);
 *  - a fenced chunk waits for everything before it;
 *  - RC: an AM or READ waits for the WRITEs before it (they take other
 *    QPs); in UC the receiver holds AMs and GET requests for them.
 * Chunks behind the head wait with it: the queue keeps issue order. */
int uct_uccl_tx_may_leave(uct_uccl_conn_t *conn,
                          const uct_uccl_chunk_t *chunk)
{
    int fenced = !!(chunk->flags & UCT_UCCL_CHUNK_F_FENCE);
    const uct_uccl_op_t *oldest;

    if (!ucs_list_is_empty(&conn->gets) &&
        (fenced || !uct_uccl_chunk_is_read(chunk))) {
        oldest = ucs_list_head(&conn->gets, uct_uccl_op_t, get_link);
        if ((int32_t)(oldest->gseq - chunk->barrier) < 0) {
            return 0;
        }
    }
    if (fenced && (uct_uccl_conn_inflight(conn) > 0)) {
        return 0;
    }
    return !conn->rc || (conn->rc_writes == 0) ||
           ((chunk->kind != UCT_UCCL_KIND_AM) &&
            !(chunk->flags & UCT_UCCL_CHUNK_F_READ));
}

/* The path for the next chunk: a burst of PATH_BURST chunks (one while the
 * paths queue unevenly, uccl_path.h) stays on one path (one chain, one
 * doorbell), then the scoreboard picks the better of two random paths
 * (small messages keep theirs: path_sticky). A path whose send queue is
 * full is skipped; NULL when every path is full. `avoid` is the
 * path a resent chunk was lost on. A parked path takes no chunk: when the
 * scoreboard asks for a probe of it, the next bulk chunk chained brings
 * one (uct_uccl_path_probe_send). */
uct_uccl_qp_t *uct_uccl_path_select(uct_uccl_conn_t *conn, size_t length,
                                    int avoid, uint64_t now)
{
    uct_uccl_qp_t *path = &conn->paths[conn->sel.last];
    unsigned i, n = conn->num_paths;
    unsigned burst, max_burst;
    int probe;

    if ((avoid < 0) && (conn->burst_left > 0) &&
        uct_uccl_path_has_room(conn, path)) {
        --conn->burst_left;
        return path;
    }

    if (ucs_unlikely(conn->sel.nparked > 0) && !conn->rc && (avoid < 0) &&
        (length > UCT_UCCL_BULK_MIN) && (conn->sel.probe_due == 0) &&
        ((probe = uct_uccl_paths_probe(&conn->sel, now)) >= 0)) {
        conn->sel.probe_due = probe + 1; /* with this chunk: path_chain */
    }

    if (avoid >= 0) {
        /* a resend joins a chain already built (another resend's): order
         * does not matter for it, and it saves a doorbell */
        for (path = conn->chains; path != NULL; path = path->chain_next) {
            if ((path->index != avoid) && uct_uccl_path_has_room(conn, path) &&
                !uct_uccl_paths_parked(&conn->sel, path->index)) {
                return path;
            }
        }
    } else if (length <= UCT_UCCL_PATH_STICKY_MAX) {
        /* small messages keep one path (UCT_UCCL_PATH_STICKY_NS), and wait
         * when its send queue is full; a parked one they leave at once */
        path = uct_uccl_path_sticky(conn, &conn->small, length, now);
        return uct_uccl_path_has_room(conn, path) ? path : NULL;
    }

    /* a path that already has a chain in this round is not taken again:
     * its chain goes out first, and the chunks added to it now would
     * overtake those on the paths chosen in between */
    for (i = 0; i < 4; ++i) {
        path = &conn->paths[uct_uccl_paths_select(&conn->sel, length, now)];
        if ((path->index != avoid) && (path->chain == NULL) &&
            uct_uccl_path_has_room(conn, path)) {
            goto found;
        }
    }

    for (i = 0; i < n; ++i) {
        path = &conn->paths[(conn->sel.last + 1 + i) % n];
        if ((path->index != avoid) && uct_uccl_path_has_room(conn, path) &&
            !uct_uccl_paths_parked(&conn->sel, path->index)) {
            conn->sel.last = path->index;
            goto found;
        }
    }
    /* the only path not parked is the one to avoid: a resend takes it
     * rather than wait for ever (a parked path takes no resend) */
    if ((avoid >= 0) && !uct_uccl_paths_parked(&conn->sel, avoid)) {
        path = &conn->paths[avoid];
        if (uct_uccl_path_has_room(conn, path)) {
            conn->sel.last = avoid;
            goto found;
        }
    }
    return NULL;

found:
    max_burst               = uct_uccl_conn_path_burst(conn);
    burst                   = uct_uccl_paths_burst(&conn->sel, max_burst);
    conn->burst_left        = burst - 1;
    conn->stats.bursts_cut += (burst < max_burst);
    return path;
}

/* RC: has the path's oldest WR stalled? Its NIC retries there (the path
 * lost its packets) when a WR posted `margin` after it completed, or when
 * one posted after it completed and `margin` later it is still out (a
 * window that holds few chunks posts none that late). A queue every path
 * shares delays all alike and overtakes nothing. Out for `wait`,
 * RC_STALL_MIN at least (a few of the NIC's ACK timeouts: its resends come
 * first), it stalled (a conn that sends nothing else sees nothing overtake
 * it). Only WRs whose data goes the same way count (a READ's data and a
 * WRITE's queue apart), and both bounds grow with their completion times,
 * `wait` to twice their RTO (before the first, twice RC_STALL_RTO_INIT_NS)
 * and `margin` to its part above the mean: behind a deep queue a WR is out
 * long and uneven queues reorder by that part; taken for stalls, its WRs
 * would go again and deepen the queue. Times are those of the latest poll
 * that emptied the send CQ: a process that was off the CPU finds its
 * completions there, late, not stalled. */
static int uct_uccl_path_stalled_rc(uct_uccl_conn_t *conn,
                                    uct_uccl_qp_t *path, uint64_t now)
{
    uint64_t seen   = conn->iface->tx_drained_ns;
    uint64_t margin = UCT_UCCL_PATH_STALL_MIN_NS;
    uint64_t wait   = conn->iface->config.rc_stall_min_ns;
    const uct_uccl_chunk_t *oldest;
    const uct_uccl_rc_dir_t *dir;
    uint64_t rto;

    oldest = path->sent[path->sent_head & conn->iface->config.tx_ring_mask];
    if (seen < oldest->sent_ns) {
        return 0;
    }
    dir  = &conn->rc_dir[uct_uccl_chunk_rc_dir(oldest)];
    rto  = dir->lat.rto_ns;
    wait = ucs_max(wait, rto * UCT_UCCL_RC_STALL_LATE_MULT);
    if (dir->lat.samples > 0) {
        margin = ucs_max(margin, rto - ucs_min(rto, dir->lat.srtt_ns));
    }
    if (seen - oldest->sent_ns > wait) {
        return 1;
    }
    if (dir->done_sent <= oldest->sent_ns) {
        return 0;
    }
    if (path->overtaken_sent != oldest->sent_ns) {
        path->overtaken_sent = oldest->sent_ns;
        path->overtaken_at   = now;
    }
    return (dir->done_sent > oldest->sent_ns + margin) ||
           ((seen > path->overtaken_at) &&
            (seen - path->overtaken_at > margin));
}

/* RC: a stalled path is parked: it keeps only the chunks the NIC holds,
 * until they complete (it is back) or fail (it is retired), and asks for
 * a new QP pair (uccl_reset.c), which ends the NIC's retries */
static void uct_uccl_path_health_rc(uct_uccl_conn_t *conn, uint64_t now)
{
    uct_uccl_qp_t *path;
    unsigned i;

    for (i = 0; i < conn->num_paths; ++i) {
        path = &conn->paths[i];
        if ((path->outstanding == 0) ||
            uct_uccl_paths_parked(&conn->sel, i) ||
            !uct_uccl_path_stalled_rc(conn, path, now)) {
            continue;
        }
        if (!uct_uccl_paths_park_rc(&conn->sel, i, now)) {
            return; /* as many parked as may be */
        }
        uct_uccl_reset_start(conn, i, now);
    }
}

/* From the timer: paths with chunks out and no ACK for STALL_RTOS base
 * RTOs are parked (uccl_path.h); RC: path_health_rc */
void uct_uccl_path_health(uct_uccl_conn_t *conn, uint64_t now,
                          uint32_t inflight)
{
    if (inflight == 0) {
        uct_uccl_paths_idle(&conn->sel);
        return;
    }
    if (conn->rc) {
        uct_uccl_path_health_rc(conn, now);
        return;
    }
    (void)uct_uccl_paths_check(&conn->sel, now,
                               ucs_max(UCT_UCCL_PATH_STALL_RTOS *
                                       conn->rto.rto_ns,
                                       UCT_UCCL_PATH_STALL_MIN_NS));
}

/* RC: AMs keep one path while anything is outstanding there, so the peer
 * receives them in order; they may move once everything on it completed
 * (an RC completion means delivered). Off a parked path too: they wait
 * for what it holds to complete, or to fail and go first. Their path is
 * their own: other small chunks move theirs when it is parked. */
uct_uccl_qp_t *uct_uccl_path_select_ordered(uct_uccl_conn_t *conn,
                                            uint64_t now)
{
    uct_uccl_qp_t *path = &conn->paths[conn->rc_am.path];

    if (ucs_unlikely(uct_uccl_paths_parked(&conn->sel, path->index)) &&
        (path->outstanding > 0)) {
        return NULL;
    }
    path = uct_uccl_path_sticky(conn, &conn->rc_am, 0, now);

    return uct_uccl_path_has_room(conn, path) ? path : NULL;
}

/* A probe of the parked path the scoreboard named: a mark (uccl_tx.c: an
 * empty tracked WRITE_WITH_IMM) to the target of `chunk`, a bulk PUT or
 * GET reply just chained. Its ACK brings the path back; its loss costs no
 * data and no credit, where a data chunk probing a path still down was
 * lost, resent and, receiver-driven, paid for twice. Skipped when the
 * path, the CQ or the tracker has no room: the scoreboard asks again. */
void uct_uccl_path_probe_send(uct_uccl_conn_t *conn,
                              const uct_uccl_chunk_t *chunk)
{
    uct_uccl_qp_t *path = &conn->paths[conn->sel.probe_due - 1];

    conn->sel.probe_due = 0;
    (void)uct_uccl_tx_mark(conn, path, chunk->raddr, chunk->rkey,
                           uct_uccl_now_ns());
}

void uct_uccl_path_chain(uct_uccl_conn_t *conn, uct_uccl_qp_t *path,
                         uct_uccl_chunk_t *chunk, uint64_t now)
{
    uct_uccl_path_link(conn, path, chunk, now);
}

/* One ibv_post_send per path that has a chain, in the order the chains
 * began, so chunks leave in CSN order as far as the paths allow. Only the
 * last WR of a chain asks for a completion: the QP completes in order, so
 * its CQE tells that every WR before it is done too (half the CQEs the NIC
 * writes and the engine polls). */
void uct_uccl_conn_post_chains(uct_uccl_conn_t *conn)
{
    uct_uccl_iface_t *iface = conn->iface;
    struct ibv_send_wr *bad_wr, *wr;
    uct_uccl_chunk_t *chunk;
    uct_uccl_qp_t *path, *next;
    int ret, failed = 0;

    next              = conn->chains;
    conn->chains      = NULL;
    conn->chains_tail = &conn->chains;
    ++conn->chain_gen; /* what was chained so far is not any more */
    while ((path = next) != NULL) {
        next = path->chain_next;

        ++iface->stats.doorbells;
        iface->stats.wrs += path->chain_len;
        /* solicited: a peer away from progress wakes for it */
        path->chain_tail->send_flags |= IBV_SEND_SIGNALED |
                                        IBV_SEND_SOLICITED;
        ret = ibv_post_send(path->qp, path->chain, &bad_wr);
        if (ucs_unlikely(ret != 0)) {
            /* cannot happen while we respect max_send_wr; undo the
             * accounting and let the reliability layer (or the error
             * path) deal with what was not posted. A posted part without
             * its signaled end never completes: the conn cannot go on. */
            ucs_error("uccl: ibv_post_send(qp 0x%x, %u WRs) failed: %s",
                      path->qp->qp_num, path->chain_len, strerror(ret));
            failed |= conn->rc || (bad_wr != path->chain);
            for (wr = bad_wr; wr != NULL; wr = wr->next) {
                chunk = (uct_uccl_chunk_t*)wr->wr_id;
                --chunk->posted;
                --path->outstanding;
                --iface->tx_outstanding;
            }
        }
        if (ret == 0) {
            path->unsig_run = 0; /* its signaled end follows them */
        }
        path->chain     = NULL;
        path->chain_len = 0;
    }
    if (failed) {
        uct_uccl_conn_fail(conn, UCS_ERR_IO_ERROR);
    }
}

/* An AM whose payload is in its own segment carries the ACK conn owes,
 * after the payload; returns the WR's SGEs. A resend that an earlier WR
 * still reads keeps what it carried: bytes under the NIC do not change. */
static unsigned uct_uccl_chunk_piggy_ack(uct_uccl_conn_t *conn,
                                         uct_uccl_chunk_t *chunk, unsigned n)
{
    uct_uccl_am_hdr_t *am = &chunk->hdr.am;
    size_t end            = chunk->length + sizeof(uct_uccl_ack_t);

    if (chunk->posted == 0) {
        am->flags = 0;
        if (ucs_list_is_empty(&conn->iface->ack_list) ||
            (chunk->laddr != (uintptr_t)chunk->data) ||
            (end > conn->iface->config.seg_size) ||
            (sizeof(*am) + end > conn->remote_rx_buf_size) ||
            !uct_uccl_rx_ack_piggyback(conn, chunk->data + chunk->length,
                                        0)) {
            return n;
        }
        am->flags = UCT_UCCL_AM_F_ACK;
    } else if (!(am->flags & UCT_UCCL_AM_F_ACK)) {
        return n;
    }

    if (chunk->length > 0) {
        chunk->sge[n - 1].length += sizeof(uct_uccl_ack_t);
        return n;
    }
    chunk->sge[n].addr   = (uintptr_t)chunk->data;
    chunk->sge[n].length = sizeof(uct_uccl_ack_t);
    chunk->sge[n].lkey   = chunk->lkey;
    return n + 1;
}

/* A small WR goes inline: the device copies it at post, reads no buffer
 * later and needs no key (a small message's latency) */
static void uct_uccl_chunk_inline(const uct_uccl_conn_t *conn,
                                  uct_uccl_chunk_t *chunk)
{
    struct ibv_send_wr *wr = &chunk->wr;
    uint32_t total         = 0;
    int i;

    for (i = 0; i < wr->num_sge; ++i) {
        total += chunk->sge[i].length;
    }
    if (total <= conn->max_inline) {
        wr->send_flags |= IBV_SEND_INLINE;
    }
}

void uct_uccl_chunk_build_wr(uct_uccl_conn_t *conn, uct_uccl_chunk_t *chunk)
{
    struct ibv_send_wr *wr = &chunk->wr;
    unsigned n             = 0;

    wr->send_flags = 0;     /* post_chains signals the end of a chain */
    if (chunk->flags & UCT_UCCL_CHUNK_F_READ) {
        wr->opcode              = IBV_WR_RDMA_READ;
        wr->wr.rdma.remote_addr = chunk->raddr;
        wr->wr.rdma.rkey        = chunk->rkey;
        chunk->sge[0].addr      = chunk->laddr;
        chunk->sge[0].length    = chunk->length;
        chunk->sge[0].lkey      = chunk->payload_lkey;
        wr->num_sge             = 1;
        return;
    }

    if (uct_uccl_chunk_is_write(chunk)) {
        uct_uccl_chunk_build_write(conn, chunk);
        return;
    }

    wr->imm_data = uct_uccl_imm_to_wire(uct_uccl_imm_pack(chunk->csn,
                                                          chunk->kind,
                                                          chunk->last));
    wr->opcode           = IBV_WR_SEND_WITH_IMM;
    chunk->sge[n].addr   = (uintptr_t)&chunk->hdr;
    chunk->sge[n].length = chunk->hdr_len;
    chunk->sge[n].lkey   = chunk->lkey;
    ++n;
    if (chunk->extra_len > 0) {
        chunk->sge[n].addr   = (uintptr_t)chunk->data;
        chunk->sge[n].length = chunk->extra_len;
        chunk->sge[n].lkey   = chunk->lkey;
        ++n;
    }
    if (chunk->length > 0) {
        chunk->sge[n].addr   = chunk->laddr;
        chunk->sge[n].length = chunk->length;
        chunk->sge[n].lkey   = chunk->payload_lkey;
        ++n;
    }
    if ((chunk->kind == UCT_UCCL_KIND_AM) && !conn->rc) {
        n = uct_uccl_chunk_piggy_ack(conn, chunk, n);
    }
    wr->num_sge = n;
    uct_uccl_chunk_inline(conn, chunk);
}

/* PUT chunks sent after this one wrote all its target: their data wins, a
 * resend of this one must not overwrite it */
int uct_uccl_put_is_obsolete(uct_uccl_conn_t *conn,
                             const uct_uccl_chunk_t *chunk)
{
    return (chunk->kind == UCT_UCCL_KIND_PUT) &&
           uct_uccl_put_runs_cover(&conn->put_runs, chunk->raddr, chunk->rkey,
                                   chunk->length, chunk->csn,
                                   conn->tracker.una, conn->tracker.nxt);
}

/* A lost WRITE chunk whose earlier transmission may still be on its way
 * goes again as a SEND into a bounce buffer: header with the target, then
 * the original payload (still in the user's registered buffer); the
 * receiver copies it only if it is still missing, so a spurious resend
 * never writes memory the user may own again. An obsolete chunk goes
 * without payload: it only marks its CSN as arrived. */
void uct_uccl_chunk_build_retx(uct_uccl_chunk_t *chunk, int obsolete)
{
    struct ibv_send_wr *wr    = &chunk->wr;
    uct_uccl_retx_hdr_t *retx = &chunk->hdr.retx;

    memset(retx, 0, sizeof(*retx));
    retx->type        = UCT_UCCL_KIND_RETX;
    retx->imm         = uct_uccl_imm_pack(chunk->csn, chunk->kind,
                                          chunk->last);
    retx->remote_addr = chunk->raddr;
    retx->rkey        = chunk->rkey;
    retx->length      = obsolete ? 0 : chunk->length;

    wr->opcode         = IBV_WR_SEND_WITH_IMM;
    wr->send_flags     = 0;
    wr->imm_data       = uct_uccl_imm_to_wire(
                            uct_uccl_imm_pack(chunk->csn, UCT_UCCL_KIND_RETX,
                                              chunk->last));
    chunk->sge[0].addr   = (uintptr_t)retx;
    chunk->sge[0].length = sizeof(*retx);
    chunk->sge[0].lkey   = chunk->lkey;
    wr->num_sge          = 1;
    if (retx->length > 0) {
        chunk->sge[1].addr   = chunk->laddr;
        chunk->sge[1].length = chunk->length;
        chunk->sge[1].lkey   = chunk->payload_lkey;
        wr->num_sge          = 2;
    }
}


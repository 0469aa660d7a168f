/*
 * Point-to-point: blocking Send/Recv between partners (rank ^ 1), a
 * Sendrecv ring, and nonblocking Isend/Irecv from every rank to every other
 * rank, with byte data, odd sizes and status checks.
 */
#include "mpi_check.h"

#include <stdio.h>
#include <stdlib.h>

enum { MC_OP_PAIR = 1, MC_OP_RING, MC_OP_ALL };

static const size_t mc_p2p_sizes[] = {
    0, 1, 8, 100, 4096, 8200, 65536, 262148, MC_MIB, 4 * MC_MIB + 3,
    16 * MC_MIB, 64 * MC_MIB
};

/* per peer, with every peer at once: at most 4 MiB each */
static const size_t mc_all_sizes[] = {
    0, 8, 4096, 65536, MC_MIB, 4 * MC_MIB
};

#define MC_NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void mc_check_status(mc_t *mc, MPI_Status *st, int src, int tag,
                            size_t len, const char *what)
{
    int count;

    MPI_Get_count(st, MPI_BYTE, &count);
    if ((st->MPI_SOURCE != src) || (st->MPI_TAG != tag) ||
        ((size_t)count != len)) {
        mc_fail(mc, "%s: status source %d tag %d count %d, expected %d %d "
                "%zu", what, st->MPI_SOURCE, st->MPI_TAG, count, src, tag,
                len);
    }
}

static void mc_pair(mc_t *mc, size_t len, uint8_t *sbuf, uint8_t *rbuf)
{
    int peer = mc->rank ^ 1, tag = (int)(len & 0x7fff);
    MPI_Status st;

    if (peer >= mc->size) {
        return;    /* odd rank count: the last rank sits this one out */
    }
    mc_fill_byte(mc, sbuf, len, MC_OP_PAIR, mc->rank);
    if (mc->rank < peer) {
        MPI_Send(sbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        MPI_Recv(rbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
    } else {
        MPI_Recv(rbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
        MPI_Send(sbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
    }
    mc_check_status(mc, &st, peer, tag, len, "MPI_Recv");
    mc_check_byte(mc, rbuf, len, MC_OP_PAIR, peer, "MPI_Send/MPI_Recv");
}

static void mc_ring(mc_t *mc, size_t len, uint8_t *sbuf, uint8_t *rbuf)
{
    int next = (mc->rank + 1) % mc->size;
    int prev = (mc->rank + mc->size - 1) % mc->size;
    MPI_Status st;

    mc_fill_byte(mc, sbuf, len, MC_OP_RING, mc->rank);
    MPI_Sendrecv(sbuf, (int)len, MPI_BYTE, next, 7, rbuf, (int)len, MPI_BYTE,
                 prev, 7, MPI_COMM_WORLD, &st);
    mc_check_status(mc, &st, prev, 7, len, "MPI_Sendrecv");
    mc_check_byte(mc, rbuf, len, MC_OP_RING, prev, "MPI_Sendrecv ring");
}

static void mc_all(mc_t *mc, size_t len)
{
    int n = mc->size, peer, nreq = 0;
    uint8_t *sbuf = mc_alloc(mc, len);
    uint8_t *rbuf = mc_alloc(mc, len * n);
    MPI_Request *req = mc_alloc(mc, 2 * n * sizeof(*req));
    MPI_Status *st = mc_alloc(mc, 2 * n * sizeof(*st));

    mc_fill_byte(mc, sbuf, len, MC_OP_ALL, mc->rank);
    for (peer = 0; peer < n; ++peer) {
        if (peer != mc->rank) {
            MPI_Irecv(rbuf + peer * len, (int)len, MPI_BYTE, peer, peer,
                      MPI_COMM_WORLD, &req[nreq++]);
        }
    }
    for (peer = 0; peer < n; ++peer) {
        if (peer != mc->rank) {
            MPI_Isend(sbuf, (int)len, MPI_BYTE, peer, mc->rank,
                      MPI_COMM_WORLD, &req[nreq++]);
        }
    }
    MPI_Waitall(nreq, req, st);
    for (peer = 0, nreq = 0; peer < n; ++peer) {
        if (peer != mc->rank) {
            mc_check_status(mc, &st[nreq++], peer, peer, len, "MPI_Irecv");
            mc_check_byte(mc, rbuf + peer * len, len, MC_OP_ALL, peer,
                          "MPI_Isend/MPI_Irecv");
        }
    }
    free(sbuf);
    free(rbuf);
    free(req);
    free(st);
}

void mc_p2p(mc_t *mc)
{
    size_t sizes[MC_NELEM(mc_p2p_sizes)], n, i;
    uint8_t *sbuf = mc_alloc(mc, mc->max_bytes);
    uint8_t *rbuf = mc_alloc(mc, mc->max_bytes);

    n = mc_cap(mc, mc_p2p_sizes, MC_NELEM(mc_p2p_sizes), sizes);
    for (i = 0; i < n; ++i) {
        mc_pair(mc, sizes[i], sbuf, rbuf);
    }
    mc_report(mc, "MPI_Send/MPI_Recv (rank^1 pairs)", sizes, n, "bytes");
    for (i = 0; i < n; ++i) {
        mc_ring(mc, sizes[i], sbuf, rbuf);
    }
    mc_report(mc, "MPI_Sendrecv (ring)", sizes, n, "bytes");
    free(sbuf);
    free(rbuf);

    n = mc_cap(mc, mc_all_sizes, MC_NELEM(mc_all_sizes), sizes);
    for (i = 0; i < n; ++i) {
        mc_all(mc, sizes[i]);
    }
    mc_report(mc, "MPI_Isend/MPI_Irecv (all pairs)", sizes, n,
              "bytes per pair");
}

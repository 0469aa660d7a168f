/*
 * Collectives: Allreduce (sum of ints, max of doubles), Bcast from rotating
 * roots, Allgather, Alltoall, Alltoallv with uneven and zero counts,
 * Reduce_scatter with uneven counts, and Barrier (a late rank must hold
 * everyone). Integer values below 2^20 keep every sum exact.
 */
#include "mpi_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    MC_OP_ALLREDUCE = 10, MC_OP_ALLREDUCE_MAX, MC_OP_BCAST, MC_OP_ALLGATHER,
    MC_OP_ALLTOALL, MC_OP_ALLTOALLV, MC_OP_REDSCAT
};

#define MC_NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* bytes of the whole vector */
static const size_t mc_reduce_sizes[] = {
    0, 4, 1024, 65536, MC_MIB, 16 * MC_MIB, 64 * MC_MIB
};
static const size_t mc_bcast_sizes[] = {
    0, 1, 1000, 65536, MC_MIB + 1, 16 * MC_MIB, 64 * MC_MIB
};
/* bytes per rank (block); the whole buffer, N blocks, is capped */
static const size_t mc_block_sizes[] = {
    0, 4, 1024, 65536, MC_MIB, 8 * MC_MIB, 32 * MC_MIB
};

static size_t mc_cap_blocks(const mc_t *mc, size_t *out)
{
    size_t i, k = 0;

    for (i = 0; i < MC_NELEM(mc_block_sizes); ++i) {
        if (mc_block_sizes[i] * mc->size <= mc->max_bytes) {
            out[k++] = mc_block_sizes[i];
        }
    }
    return k;
}

static void mc_allreduce(mc_t *mc, size_t bytes, int in_place)
{
    size_t count = bytes / sizeof(int), i;
    int *sbuf = mc_alloc(mc, bytes), *rbuf = mc_alloc(mc, bytes);
    int r, exp, *tmp = mc_alloc(mc, bytes);

    mc_fill_int(mc, in_place ? rbuf : sbuf, count, MC_OP_ALLREDUCE, mc->rank,
                0);
    MPI_Allreduce(in_place ? MPI_IN_PLACE : sbuf, rbuf, (int)count, MPI_INT,
                  MPI_SUM, MPI_COMM_WORLD);
    /* expectation: the sum of every rank's vector, computed here */
    memset(sbuf, 0, bytes);
    for (r = 0; r < mc->size; ++r) {
        mc_fill_int(mc, tmp, count, MC_OP_ALLREDUCE, r, 0);
        for (i = 0; i < count; ++i) {
            sbuf[i] += tmp[i];
        }
    }
    for (i = 0; i < count; ++i) {
        exp = sbuf[i];
        if (rbuf[i] != exp) {
            mc_fail(mc, "MPI_Allreduce(SUM)%s of %zu ints: element %zu is %d, "
                    "expected %d", in_place ? " in place" : "", count, i,
                    rbuf[i], exp);
        }
    }
    mc->compared += count;
    free(sbuf);
    free(rbuf);
    free(tmp);
}

static void mc_allreduce_max(mc_t *mc, size_t bytes)
{
    size_t count = bytes / sizeof(double), i;
    double *sbuf = mc_alloc(mc, bytes), *rbuf = mc_alloc(mc, bytes), exp;
    int r, v;

    for (i = 0; i < count; ++i) {
        sbuf[i] = mc_val(mc, MC_OP_ALLREDUCE_MAX, mc->rank, i) * 0.5;
    }
    MPI_Allreduce(sbuf, rbuf, (int)count, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    for (i = 0; i < count; ++i) {
        for (r = 0, v = 0; r < mc->size; ++r) {
            int x = mc_val(mc, MC_OP_ALLREDUCE_MAX, r, i);
            v = (x > v) ? x : v;
        }
        exp = v * 0.5;
        if (rbuf[i] != exp) {
            mc_fail(mc, "MPI_Allreduce(MAX) of %zu doubles: element %zu is %g,"
                    " expected %g", count, i, rbuf[i], exp);
        }
    }
    mc->compared += count;
    free(sbuf);
    free(rbuf);
}

static void mc_bcast(mc_t *mc, size_t bytes, int root)
{
    uint8_t *buf = mc_alloc(mc, bytes);

    if (mc->rank == root) {
        mc_fill_byte(mc, buf, bytes, MC_OP_BCAST, root);
    } else {
        memset(buf, 0, bytes);
    }
    MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
    mc_check_byte(mc, buf, bytes, MC_OP_BCAST, root, "MPI_Bcast");
    free(buf);
}

static void mc_allgather(mc_t *mc, size_t block)
{
    size_t count = block / sizeof(int);
    int *sbuf = mc_alloc(mc, block), *rbuf = mc_alloc(mc, block * mc->size);
    int r;

    mc_fill_int(mc, sbuf, count, MC_OP_ALLGATHER, mc->rank, 0);
    MPI_Allgather(sbuf, (int)count, MPI_INT, rbuf, (int)count, MPI_INT,
                  MPI_COMM_WORLD);
    for (r = 0; r < mc->size; ++r) {
        mc_check_int(mc, rbuf + r * count, count, MC_OP_ALLGATHER, r, 0,
                     "MPI_Allgather");
    }
    free(sbuf);
    free(rbuf);
}

static void mc_alltoall(mc_t *mc, size_t block)
{
    size_t count = block / sizeof(int);
    int *sbuf = mc_alloc(mc, block * mc->size);
    int *rbuf = mc_alloc(mc, block * mc->size);
    int r;

    /* block for peer p is elements p*count.. of this rank's sequence */
    mc_fill_int(mc, sbuf, count * mc->size, MC_OP_ALLTOALL, mc->rank, 0);
    MPI_Alltoall(sbuf, (int)count, MPI_INT, rbuf, (int)count, MPI_INT,
                 MPI_COMM_WORLD);
    for (r = 0; r < mc->size; ++r) {
        mc_check_int(mc, rbuf + r * count, count, MC_OP_ALLTOALL, r,
                     mc->rank * count, "MPI_Alltoall");
    }
    free(sbuf);
    free(rbuf);
}

/* Elements rank `from` sends to rank `to`: some pairs send nothing. */
static int mc_v_count(size_t base, int from, int to)
{
    return (int)(base * ((from + 2 * to) % 3));
}

static void mc_alltoallv(mc_t *mc, size_t base)
{
    int n = mc->size, p;
    int *sc = mc_alloc(mc, 4 * n * sizeof(int)), *sd = sc + n;
    int *rc = sc + 2 * n, *rd = sc + 3 * n;
    size_t stotal = 0, rtotal = 0;
    int *sbuf, *rbuf;

    for (p = 0; p < n; ++p) {
        sc[p] = mc_v_count(base, mc->rank, p);
        rc[p] = mc_v_count(base, p, mc->rank);
        sd[p] = (int)stotal;
        rd[p] = (int)rtotal;
        stotal += sc[p];
        rtotal += rc[p];
    }
    sbuf = mc_alloc(mc, stotal * sizeof(int));
    rbuf = mc_alloc(mc, rtotal * sizeof(int));
    for (p = 0; p < n; ++p) {
        /* stream of (rank, peer): offset peer << 32 of the rank's sequence */
        mc_fill_int(mc, sbuf + sd[p], sc[p], MC_OP_ALLTOALLV, mc->rank,
                    (size_t)p << 32);
    }
    MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT,
                  MPI_COMM_WORLD);
    for (p = 0; p < n; ++p) {
        mc_check_int(mc, rbuf + rd[p], rc[p], MC_OP_ALLTOALLV, p,
                     (size_t)mc->rank << 32, "MPI_Alltoallv");
    }
    free(sbuf);
    free(rbuf);
    free(sc);
}

static void mc_reduce_scatter(mc_t *mc, size_t block)
{
    int n = mc->size, p, r, *counts = mc_alloc(mc, n * sizeof(int));
    size_t total = 0, first = 0, i, mine;
    int *sbuf, *rbuf, exp;

    for (p = 0; p < n; ++p) {
        /* uneven: odd ranks get one element more */
        counts[p] = (int)(block / sizeof(int)) + ((block > 0) ? (p & 1) : 0);
        first    += (p < mc->rank) ? counts[p] : 0;
        total    += counts[p];
    }
    mine = counts[mc->rank];
    sbuf = mc_alloc(mc, total * sizeof(int));
    rbuf = mc_alloc(mc, mine * sizeof(int));
    mc_fill_int(mc, sbuf, total, MC_OP_REDSCAT, mc->rank, 0);
    MPI_Reduce_scatter(sbuf, rbuf, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < mine; ++i) {
        for (r = 0, exp = 0; r < n; ++r) {
            exp += mc_val(mc, MC_OP_REDSCAT, r, first + i);
        }
        if (rbuf[i] != exp) {
            mc_fail(mc, "MPI_Reduce_scatter: element %zu of my %zu is %d, "
                    "expected %d", i, mine, rbuf[i], exp);
        }
    }
    mc->compared += mine;
    free(sbuf);
    free(rbuf);
    free(counts);
}

/* The last rank arrives 200 ms late: nobody may leave the barrier early. */
static void mc_barrier(mc_t *mc)
{
    double t0, waited;
    int i;

    for (i = 0; i < 100; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    t0 = MPI_Wtime();
    if (mc->rank == mc->size - 1) {
        usleep(200000);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    waited = MPI_Wtime() - t0;
    if ((mc->size > 1) && (waited < 0.15)) {
        mc_fail(mc, "MPI_Barrier returned after %.3f s though rank %d "
                "entered it 0.2 s late", waited, mc->size - 1);
    }
    if (mc->rank == 0) {
        printf("ok %-34s 100 barriers, then one with rank %d 0.2 s late: "
               "rank 0 waited %.3f s\n", "MPI_Barrier", mc->size - 1, waited);
        fflush(stdout);
    }
}

void mc_coll(mc_t *mc)
{
    size_t sizes[16], n, i;
    size_t bases[] = { 0, 1, 256, 16384, 262144 }, vb[5], nv = 0;

    n = mc_cap(mc, mc_reduce_sizes, MC_NELEM(mc_reduce_sizes), sizes);
    for (i = 0; i < n; ++i) {
        mc_allreduce(mc, sizes[i], 0);
    }
    mc_report(mc, "MPI_Allreduce (SUM, int)", sizes, n, "bytes");
    for (i = 0; i < n; ++i) {
        mc_allreduce(mc, sizes[i], 1);
    }
    mc_report(mc, "MPI_Allreduce (SUM, int, in place)", sizes, n, "bytes");
    n = mc_cap(mc, mc_reduce_sizes, 5, sizes);
    for (i = 0; i < n; ++i) {
        mc_allreduce_max(mc, sizes[i]);
    }
    mc_report(mc, "MPI_Allreduce (MAX, double)", sizes, n, "bytes");

    n = mc_cap(mc, mc_bcast_sizes, MC_NELEM(mc_bcast_sizes), sizes);
    for (i = 0; i < n; ++i) {
        mc_bcast(mc, sizes[i], (int)(i % mc->size));
    }
    mc_report(mc, "MPI_Bcast (root rotates)", sizes, n, "bytes");

    n = mc_cap_blocks(mc, sizes);
    for (i = 0; i < n; ++i) {
        mc_allgather(mc, sizes[i]);
    }
    mc_report(mc, "MPI_Allgather", sizes, n, "bytes per rank");
    for (i = 0; i < n; ++i) {
        mc_alltoall(mc, sizes[i]);
    }
    mc_report(mc, "MPI_Alltoall", sizes, n, "bytes per pair");
    for (i = 0; i < n; ++i) {
        mc_reduce_scatter(mc, sizes[i]);
    }
    mc_report(mc, "MPI_Reduce_scatter (uneven)", sizes, n,
              "bytes per rank (+4 on odd ranks)");

    for (i = 0; i < MC_NELEM(bases); ++i) {
        /* at most 2*base ints per pair, N pairs */
        if (bases[i] * 2 * sizeof(int) * mc->size <= mc->max_bytes) {
            vb[nv++] = bases[i] * sizeof(int);
            mc_alltoallv(mc, bases[i]);
        }
    }
    mc_report(mc, "MPI_Alltoallv (counts 0,1,2 x base)", vb, nv,
              "base bytes");

    mc_barrier(mc);
}

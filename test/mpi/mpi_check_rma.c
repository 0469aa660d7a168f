/*
 * One-sided: MPI_Put, MPI_Get and MPI_Accumulate (SUM) in fence epochs and
 * in lock/unlock epochs, at odd displacements, on a window of MAX_BYTES plus
 * slack per rank. Put goes to the next rank, get reads the previous one,
 * accumulate sums every rank's vector into every window (fence) or into
 * rank 0's (shared lock).
 */
#include "mpi_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    MC_OP_PUT = 30, MC_OP_GET, MC_OP_ACC, MC_OP_LPUT, MC_OP_LGET, MC_OP_LACC
};

#define MC_NELEM(a)  (sizeof(a) / sizeof((a)[0]))
#define MC_SLACK     4096

static const size_t mc_rma_sizes[] = {
    0, 1, 8, 1000, 65536, MC_MIB + 5, 16 * MC_MIB, 64 * MC_MIB
};
/* bytes, multiples of 4 (ints) */
static const size_t mc_acc_sizes[] = {
    0, 4, 1024, 65536, MC_MIB, 4 * MC_MIB
};

typedef struct {
    MPI_Win win;
    uint8_t *base;
    uint8_t *local;
    int     next, prev;
} mc_win_t;

static size_t mc_disp(size_t i)
{
    return (i * 1031) % MC_SLACK;
}

/* Write our own window outside any fence epoch. */
static void mc_win_write(mc_t *mc, mc_win_t *w, size_t off, const void *src,
                         size_t len)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mc->rank, 0, w->win);
    if (src != NULL) {
        memcpy(w->base + off, src, len);
    } else {
        memset(w->base + off, 0, len);
    }
    MPI_Win_unlock(mc->rank, w->win);
}

static void mc_acc_expect(mc_t *mc, const int *got, size_t count, int op,
                          const char *what)
{
    size_t i;
    int r, exp;

    for (i = 0; i < count; ++i) {
        for (r = 0, exp = 0; r < mc->size; ++r) {
            exp += mc_val(mc, op, r, i);
        }
        if (got[i] != exp) {
            mc_fail(mc, "%s of %zu ints: element %zu is %d, expected %d",
                    what, count, i, got[i], exp);
        }
    }
    mc->compared += count;
}

static void mc_fence_ops(mc_t *mc, mc_win_t *w)
{
    size_t sizes[16], n, i, off, count;
    int r;

    n = mc_cap(mc, mc_rma_sizes, MC_NELEM(mc_rma_sizes), sizes);
    MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win);
    for (i = 0; i < n; ++i) {
        off = mc_disp(i);
        mc_fill_byte(mc, w->local, sizes[i], MC_OP_PUT, mc->rank);
        MPI_Put(w->local, (int)sizes[i], MPI_BYTE, w->next, off,
                (int)sizes[i], MPI_BYTE, w->win);
        MPI_Win_fence(0, w->win);
        mc_check_byte(mc, w->base + off, sizes[i], MC_OP_PUT, w->prev,
                      "window after MPI_Put + fence");
        MPI_Win_fence(0, w->win);
    }
    mc_report(mc, "MPI_Put (fence)", sizes, n, "bytes");

    for (i = 0; i < n; ++i) {
        off = mc_disp(i + 1);
        mc_fill_byte(mc, w->base + off, sizes[i], MC_OP_GET, mc->rank);
        MPI_Win_fence(0, w->win);
        MPI_Get(w->local, (int)sizes[i], MPI_BYTE, w->prev, off,
                (int)sizes[i], MPI_BYTE, w->win);
        MPI_Win_fence(0, w->win);
        mc_check_byte(mc, w->local, sizes[i], MC_OP_GET, w->prev,
                      "buffer after MPI_Get + fence");
    }
    mc_report(mc, "MPI_Get (fence)", sizes, n, "bytes");

    n = mc_cap(mc, mc_acc_sizes, MC_NELEM(mc_acc_sizes), sizes);
    for (i = 0; i < n; ++i) {
        count = sizes[i] / sizeof(int);
        memset(w->base, 0, sizes[i]);
        mc_fill_int(mc, (int*)w->local, count, MC_OP_ACC, mc->rank, 0);
        MPI_Win_fence(0, w->win);
        for (r = 0; r < mc->size; ++r) {
            MPI_Accumulate(w->local, (int)count, MPI_INT,
                           (mc->rank + r) % mc->size, 0, (int)count, MPI_INT,
                           MPI_SUM, w->win);
        }
        MPI_Win_fence(0, w->win);
        mc_acc_expect(mc, (int*)w->base, count, MC_OP_ACC,
                      "window after MPI_Accumulate(SUM) from all + fence");
    }
    mc_report(mc, "MPI_Accumulate (SUM, fence, all->all)", sizes, n,
              "bytes");
    /* lock/unlock epochs follow */
    MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win);
}

static void mc_lock_ops(mc_t *mc, mc_win_t *w)
{
    size_t sizes[16], n, i, off, count;

    n = mc_cap(mc, mc_rma_sizes, MC_NELEM(mc_rma_sizes), sizes);
    for (i = 0; i < n; ++i) {
        off = mc_disp(i + 2);
        mc_fill_byte(mc, w->local, sizes[i], MC_OP_LPUT, mc->rank);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, w->next, 0, w->win);
        MPI_Put(w->local, (int)sizes[i], MPI_BYTE, w->next, off,
                (int)sizes[i], MPI_BYTE, w->win);
        MPI_Win_unlock(w->next, w->win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock(MPI_LOCK_SHARED, mc->rank, 0, w->win);
        mc_check_byte(mc, w->base + off, sizes[i], MC_OP_LPUT, w->prev,
                      "window after MPI_Put in lock/unlock");
        MPI_Win_unlock(mc->rank, w->win);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    mc_report(mc, "MPI_Put (exclusive lock/unlock)", sizes, n, "bytes");

    for (i = 0; i < n; ++i) {
        off = mc_disp(i + 3);
        mc_fill_byte(mc, w->local, sizes[i], MC_OP_LGET, mc->rank);
        mc_win_write(mc, w, off, w->local, sizes[i]);
        MPI_Barrier(MPI_COMM_WORLD);
        memset(w->local, 0, sizes[i]);
        MPI_Win_lock(MPI_LOCK_SHARED, w->prev, 0, w->win);
        MPI_Get(w->local, (int)sizes[i], MPI_BYTE, w->prev, off,
                (int)sizes[i], MPI_BYTE, w->win);
        MPI_Win_unlock(w->prev, w->win);
        mc_check_byte(mc, w->local, sizes[i], MC_OP_LGET, w->prev,
                      "buffer after MPI_Get in lock/unlock");
        MPI_Barrier(MPI_COMM_WORLD);
    }
    mc_report(mc, "MPI_Get (shared lock/unlock)", sizes, n, "bytes");

    n = mc_cap(mc, mc_acc_sizes, MC_NELEM(mc_acc_sizes), sizes);
    for (i = 0; i < n; ++i) {
        count = sizes[i] / sizeof(int);
        if (mc->rank == 0) {
            mc_win_write(mc, w, 0, NULL, sizes[i]);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        mc_fill_int(mc, (int*)w->local, count, MC_OP_LACC, mc->rank, 0);
        /* shared lock: accumulates from all ranks are atomic per element */
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win);
        MPI_Accumulate(w->local, (int)count, MPI_INT, 0, 0, (int)count,
                       MPI_INT, MPI_SUM, w->win);
        MPI_Win_unlock(0, w->win);
        MPI_Barrier(MPI_COMM_WORLD);
        if (mc->rank == 0) {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win);
            mc_acc_expect(mc, (int*)w->base, count, MC_OP_LACC,
                          "rank 0's window after MPI_Accumulate(SUM) from "
                          "all in shared lock/unlock");
            MPI_Win_unlock(0, w->win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    mc_report(mc, "MPI_Accumulate (SUM, shared lock, all->0)", sizes, n,
              "bytes");
}

void mc_rma(mc_t *mc)
{
    MPI_Aint win_bytes = (MPI_Aint)(mc->max_bytes + MC_SLACK);
    mc_win_t w = {
        .next = (mc->rank + 1) % mc->size,
        .prev = (mc->rank + mc->size - 1) % mc->size
    };

    MPI_Win_allocate(win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w.base,
                     &w.win);
    w.local = mc_alloc(mc, win_bytes);
    mc_fence_ops(mc, &w);
    mc_lock_ops(mc, &w);
    MPI_Win_free(&w.win);
    free(w.local);
}

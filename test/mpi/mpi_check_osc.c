/*
 * One-sided ordering and atomicity: the patterns Open MPI's osc ucx builds
 * from UCP's RMA and (over uccl, emulated) atomics, each repeated with the
 * result checked every time.
 *
 *  - token rings: one rank at a time does Get_accumulate(REPLACE),
 *    Fetch_and_op, Compare_and_swap or Rget_accumulate on rank 0's cell and
 *    must fetch what the previous rank left there;
 *  - Get_accumulate(SUM) + flush, then Get of a cell nobody writes;
 *  - Put + flush on one rank, Rget + Testall on another;
 *  - Raccumulate, Rput, Rget with MPI_Wait; flush_local; lock_all with
 *    flush_all; accumulate ordering (the last of several REPLACEs wins);
 *  - a dynamic window (attach, address exchange, put and get).
 */
#include "mpi_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MC_OSC_ITERS   60
#define MC_OSC_CELLS   64      /* ints per rank in the shared window */

enum {
    MC_OSC_RING,       /* token ring cell on rank 0 */
    MC_OSC_ZERO,       /* never written: reads must give 0 */
    MC_OSC_COUNT,      /* Get_accumulate(SUM) counter */
    MC_OSC_PAIR,       /* two values put together, read together */
    MC_OSC_ACC  = 8,   /* Raccumulate target (8 ints) */
    MC_OSC_RPUT = 16,  /* Rput target: one int per origin rank */
    MC_OSC_ORD  = 48   /* accumulate ordering: one int per origin rank */
};

typedef struct {
    MPI_Win win;
    int     *base;
} mc_osc_t;

static void mc_osc_open(mc_t *mc, mc_osc_t *w)
{
    MPI_Win_allocate(MC_OSC_CELLS * sizeof(int), sizeof(int), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &w->base, &w->win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mc->rank, 0, w->win);
    memset(w->base, 0, MC_OSC_CELLS * sizeof(int));
    w->base[MC_OSC_RING] = -1;
    MPI_Win_unlock(mc->rank, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* rank 0's own view of one of its cells */
static int mc_osc_read_own(mc_t *mc, mc_osc_t *w, int cell)
{
    int v;

    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mc->rank, 0, w->win);
    v = w->base[cell];
    MPI_Win_unlock(mc->rank, w->win);
    return v;
}

static void mc_osc_expect(mc_t *mc, const char *what, int iter, int got,
                          int exp)
{
    if (got != exp) {
        mc_fail(mc, "%s: iteration %d fetched %d, expected %d", what, iter,
                got, exp);
    }
    ++mc->compared;
}

typedef enum {
    MC_RING_GETACC,    /* Get_accumulate(REPLACE) + flush */
    MC_RING_RGETACC,   /* Rget_accumulate(REPLACE) + Wait */
    MC_RING_FOP,       /* Fetch_and_op(REPLACE) + flush */
    MC_RING_CAS        /* Compare_and_swap(previous -> new) + flush */
} mc_ring_op_t;

/* One rank at a time swaps its value into rank 0's ring cell inside a
 * shared-lock epoch and must get the previous rank's value back. */
static void mc_osc_ring(mc_t *mc, mc_osc_t *w, mc_ring_op_t kind,
                        const char *what)
{
    int i, val, res, prev;
    MPI_Request req;

    for (i = 0; i < MC_OSC_ITERS; ++i) {
        if (mc->rank == i % mc->size) {
            val  = i * 1000 + mc->rank;
            prev = (i == 0) ? -1 : (i - 1) * 1000 + (i - 1) % mc->size;
            res  = -7;
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win);
            switch (kind) {
            case MC_RING_GETACC:
                MPI_Get_accumulate(&val, 1, MPI_INT, &res, 1, MPI_INT, 0,
                                   MC_OSC_RING, 1, MPI_INT, MPI_REPLACE,
                                   w->win);
                MPI_Win_flush(0, w->win);
                break;
            case MC_RING_RGETACC:
                MPI_Rget_accumulate(&val, 1, MPI_INT, &res, 1, MPI_INT, 0,
                                    MC_OSC_RING, 1, MPI_INT, MPI_REPLACE,
                                    w->win, &req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                break;
            case MC_RING_FOP:
                MPI_Fetch_and_op(&val, &res, MPI_INT, 0, MC_OSC_RING,
                                 MPI_REPLACE, w->win);
                MPI_Win_flush(0, w->win);
                break;
            case MC_RING_CAS:
                MPI_Compare_and_swap(&val, &prev, &res, MPI_INT, 0,
                                     MC_OSC_RING, w->win);
                MPI_Win_flush(0, w->win);
                break;
            }
            MPI_Win_unlock(0, w->win);
            mc_osc_expect(mc, what, i, res, prev);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (mc->rank == 0) {
        mc_osc_expect(mc, what, MC_OSC_ITERS,
                      mc_osc_read_own(mc, w, MC_OSC_RING),
                      (MC_OSC_ITERS - 1) * 1000 + (MC_OSC_ITERS - 1) %
                      mc->size);
        w->base[MC_OSC_RING] = -1;   /* outside any epoch: no one reads */
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Get_accumulate(SUM, 1) on a counter, flush, then Get of a cell that
 * stays 0 into the same result buffer */
static void mc_osc_getacc_get(mc_t *mc, mc_osc_t *w)
{
    int i, one = 1, res;

    for (i = 0; i < MC_OSC_ITERS; ++i) {
        if (mc->rank == i % mc->size) {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win);
            MPI_Get_accumulate(&one, 1, MPI_INT, &res, 1, MPI_INT, 0,
                               MC_OSC_COUNT, 1, MPI_INT, MPI_SUM, w->win);
            MPI_Win_flush(0, w->win);
            mc_osc_expect(mc, "get_accumulate(sum) count", i, res, i);
            MPI_Get(&res, 1, MPI_INT, 0, MC_OSC_ZERO, 1, MPI_INT, w->win);
            MPI_Win_flush(0, w->win);
            mc_osc_expect(mc, "get after get_accumulate + flush", i, res, 0);
            MPI_Win_unlock(0, w->win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* The last rank puts two values into rank 0's pair and flushes; after a
 * barrier rank 1 (or 0) reads them with Rget + Testall */
static void mc_osc_put_rget(mc_t *mc, mc_osc_t *w)
{
    int writer = mc->size - 1, reader = (mc->size > 2) ? 1 : 0;
    int i, vals[2], got[2], done;
    MPI_Request reqs[2];

    MPI_Win_lock_all(0, w->win);
    for (i = 0; i < MC_OSC_ITERS; ++i) {
        if (mc->rank == writer) {
            vals[0] = 2 * i + 1;
            vals[1] = 2 * i + 2;
            MPI_Put(&vals[0], 1, MPI_INT, 0, MC_OSC_PAIR, 1, MPI_INT, w->win);
            MPI_Put(&vals[1], 1, MPI_INT, 0, MC_OSC_PAIR + 1, 1, MPI_INT,
                    w->win);
            MPI_Win_flush(0, w->win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (mc->rank == reader) {
            got[0] = got[1] = -1;
            MPI_Rget(&got[0], 1, MPI_INT, 0, MC_OSC_PAIR, 1, MPI_INT, w->win,
                     &reqs[0]);
            MPI_Rget(&got[1], 1, MPI_INT, 0, MC_OSC_PAIR + 1, 1, MPI_INT,
                     w->win, &reqs[1]);
            do {
                MPI_Testall(2, reqs, &done, MPI_STATUSES_IGNORE);
            } while (!done);
            mc_osc_expect(mc, "rget after put + flush [0]", i, got[0],
                          2 * i + 1);
            mc_osc_expect(mc, "rget after put + flush [1]", i, got[1],
                          2 * i + 2);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(w->win);
}

/* Request-based: every rank Raccumulates (SUM) into the last rank, Rputs
 * its own cell there, then Rgets both back after a barrier */
static void mc_osc_requests(mc_t *mc, mc_osc_t *w)
{
    int target = mc->size - 1, i, k, acc[8], got[8], mine, back;
    MPI_Request req;

    MPI_Win_lock_all(0, w->win);
    for (i = 0; i < MC_OSC_ITERS / 4; ++i) {
        for (k = 0; k < 8; ++k) {
            acc[k] = mc->rank + k + 1;
        }
        MPI_Raccumulate(acc, 8, MPI_INT, target, MC_OSC_ACC, 8, MPI_INT,
                        MPI_SUM, w->win, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        mine = i * 100 + mc->rank;
        MPI_Rput(&mine, 1, MPI_INT, target, MC_OSC_RPUT + mc->rank, 1,
                 MPI_INT, w->win, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Win_flush(target, w->win);
        MPI_Barrier(MPI_COMM_WORLD);

        MPI_Rget(got, 8, MPI_INT, target, MC_OSC_ACC, 8, MPI_INT, w->win,
                 &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (k = 0; k < 8; ++k) {
            /* sum over ranks r of (r + k + 1), i + 1 times */
            mc_osc_expect(mc, "raccumulate + rget", i, got[k],
                          (i + 1) * (mc->size * (mc->size - 1) / 2 +
                                     mc->size * (k + 1)));
        }
        MPI_Rget(&back, 1, MPI_INT, target,
                 MC_OSC_RPUT + (mc->rank + 1) % mc->size, 1, MPI_INT, w->win,
                 &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        mc_osc_expect(mc, "rput + rget", i, back,
                      i * 100 + (mc->rank + 1) % mc->size);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(w->win);
}

/* Several Accumulate(REPLACE) to one cell from one origin in one epoch:
 * MPI orders accumulates of one origin, so the last one wins. Then
 * flush_local: the origin buffer may change at once, the target still gets
 * the value it had. */
static void mc_osc_acc_order(mc_t *mc, mc_osc_t *w)
{
    int target = (mc->rank + 1) % mc->size, i, k, vals[8], got, src;

    for (i = 0; i < MC_OSC_ITERS / 4; ++i) {
        MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w->win);
        for (k = 0; k < 8; ++k) {
            vals[k] = i * 10 + k;
            MPI_Accumulate(&vals[k], 1, MPI_INT, target,
                           MC_OSC_ORD + mc->rank, 1, MPI_INT, MPI_REPLACE,
                           w->win);
        }
        MPI_Get_accumulate(NULL, 0, MPI_INT, &got, 1, MPI_INT, target,
                           MC_OSC_ORD + mc->rank, 1, MPI_INT, MPI_NO_OP,
                           w->win);
        MPI_Win_flush(target, w->win);
        mc_osc_expect(mc, "accumulate ordering (last replace wins)", i, got,
                      i * 10 + 7);

        src = -(i + 1);
        MPI_Put(&src, 1, MPI_INT, target, MC_OSC_ORD + mc->rank, 1, MPI_INT,
                w->win);
        MPI_Win_flush_local(target, w->win);
        src = 12345;          /* the origin buffer is ours again */
        MPI_Win_flush(target, w->win);
        MPI_Get(&got, 1, MPI_INT, target, MC_OSC_ORD + mc->rank, 1, MPI_INT,
                w->win);
        MPI_Win_flush(target, w->win);
        mc_osc_expect(mc, "put + flush_local, then get", i, got, -(i + 1));
        MPI_Win_unlock(target, w->win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A dynamic window: each rank attaches a buffer, the addresses go round,
 * every rank puts to the next and gets from the previous */
static void mc_osc_dynamic(mc_t *mc)
{
    enum { N = 1024 };
    int next = (mc->rank + 1) % mc->size;
    int prev = (mc->rank + mc->size - 1) % mc->size;
    MPI_Aint mine, *addrs;
    int *buf, *src, *got, i;
    MPI_Win win;

    buf   = mc_alloc(mc, N * sizeof(int));
    src   = mc_alloc(mc, N * sizeof(int));
    got   = mc_alloc(mc, N * sizeof(int));
    addrs = mc_alloc(mc, mc->size * sizeof(*addrs));
    memset(buf, 0, N * sizeof(int));
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_attach(win, buf, N * sizeof(int));
    MPI_Get_address(buf, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);

    for (i = 0; i < 4; ++i) {
        mc_fill_int(mc, src, N, 70 + i, mc->rank, 0);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win);
        MPI_Put(src, N, MPI_INT, next, addrs[next], N, MPI_INT, win);
        MPI_Win_unlock(next, win);
        MPI_Barrier(MPI_COMM_WORLD);
        mc_check_int(mc, buf, N, 70 + i, prev, 0, "dynamic window put");
        MPI_Win_lock(MPI_LOCK_SHARED, prev, 0, win);
        MPI_Get(got, N, MPI_INT, prev, addrs[prev], N, MPI_INT, win);
        MPI_Win_unlock(prev, win);
        mc_check_int(mc, got, N, 70 + i, (prev + mc->size - 1) % mc->size, 0,
                     "dynamic window get");
        MPI_Barrier(MPI_COMM_WORLD);
    }

    MPI_Win_detach(win, buf);
    MPI_Win_free(&win);
    free(addrs);
    free(got);
    free(src);
    free(buf);
}

void mc_osc(mc_t *mc)
{
    static const size_t one[] = { sizeof(int) };
    mc_osc_t w;

    mc_osc_open(mc, &w);
    mc_osc_ring(mc, &w, MC_RING_GETACC, "get_accumulate(replace) ring");
    mc_report(mc, "get_accumulate(replace) ring", one, 1, "bytes");
    mc_osc_ring(mc, &w, MC_RING_RGETACC, "rget_accumulate(replace) ring");
    mc_report(mc, "rget_accumulate(replace) ring", one, 1, "bytes");
    mc_osc_ring(mc, &w, MC_RING_FOP, "fetch_and_op(replace) ring");
    mc_report(mc, "fetch_and_op(replace) ring", one, 1, "bytes");
    mc_osc_ring(mc, &w, MC_RING_CAS, "compare_and_swap ring");
    mc_report(mc, "compare_and_swap ring", one, 1, "bytes");
    mc_osc_getacc_get(mc, &w);
    mc_report(mc, "get_accumulate(sum) + flush + get", one, 1, "bytes");
    mc_osc_put_rget(mc, &w);
    mc_report(mc, "put + flush, rget + testall", one, 1, "bytes");
    mc_osc_requests(mc, &w);
    mc_report(mc, "raccumulate, rput, rget + wait", one, 1, "bytes");
    mc_osc_acc_order(mc, &w);
    mc_report(mc, "accumulate order, flush_local", one, 1, "bytes");
    MPI_Win_free(&w.win);
    mc_osc_dynamic(mc);
    mc_report(mc, "dynamic window put/get", one, 1, "bytes");
}

/* Rank 0 reads rank 1's window (GETs of 4 KiB and 1 MiB, each flushed and
 * checked) while rank 1 computes for pause_s seconds: a passive target must
 * serve them without an MPI call. The lock is taken while rank 1 still
 * listens (Open MPI's lock needs the target). Prints the time per GET. */
void mc_osc_compute_gets(mc_t *mc)
{
    static const size_t sizes[] = { 4096, MC_MIB };
    enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]), NGETS = 40 };
    size_t wsize = (mc->max_bytes < MC_MIB) ? mc->max_bytes : MC_MIB;
    uint8_t *base, *buf;
    MPI_Win win;
    double t0;
    size_t i;
    int k;

    MPI_Win_allocate(wsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    mc_fill_byte(mc, base, wsize, 90, mc->rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (mc->rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        MPI_Get(base, 1, MPI_BYTE, 1, 0, 1, MPI_BYTE, win);
        MPI_Win_flush(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (mc->rank == 1) {
        printf("mpi_check: rank 1 computes for %u s, rank 0 reads its "
               "window\n", mc->pause_s);
        fflush(stdout);
        sleep(mc->pause_s);
    } else if (mc->rank == 0) {
        buf = mc_alloc(mc, wsize);
        for (i = 0; (i < NSIZES) && (sizes[i] <= wsize); ++i) {
            t0 = MPI_Wtime();
            for (k = 0; k < NGETS; ++k) {
                memset(buf, 0, sizes[i]);
                MPI_Get(buf, sizes[i], MPI_BYTE, 1, 0, sizes[i], MPI_BYTE,
                        win);
                MPI_Win_flush(1, win);
                mc_check_byte(mc, buf, sizes[i], 90, 1,
                              "get from a computing rank");
            }
            printf("ok %-34s bytes: %zu (%.1f us per get + flush)\n",
                   "get + flush, target computing", sizes[i],
                   (MPI_Wtime() - t0) / NGETS * 1e6);
            fflush(stdout);
        }
        MPI_Win_unlock(1, win);
        free(buf);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
}

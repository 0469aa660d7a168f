/*
 * mpi_check: point-to-point, collectives and one-sided MPI operations with
 * every result compared against a value computed independently on each
 * rank. Built with mpicc; run under mpirun through uccl-run (pml ucx, osc
 * ucx).
 */
#ifndef MPI_CHECK_H_
#define MPI_CHECK_H_

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define MC_MIB             (1ul << 20)
#define MC_PEER_FAILURE_S  30   /* -k: a dead peer is reported by then */

typedef struct mc {
    int      rank;
    int      size;
    uint64_t seed;
    size_t   max_bytes;   /* largest buffer any operation uses */
    int      kill_rank;   /* -k: this rank SIGKILLs itself (-1: none) */
    unsigned pause_s;     /* rank 1 computes this long with sends to it
                             outstanding (0: no such phase) */
    long     compared;    /* elements/bytes checked on this rank */
} mc_t;

/* mpi_check.c */
void mc_fail(mc_t *mc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
void mc_report(mc_t *mc, const char *op, const size_t *sizes, size_t n,
               const char *unit);
void *mc_alloc(mc_t *mc, size_t bytes);
size_t mc_cap(const mc_t *mc, const size_t *sizes, size_t n,
              size_t *out);

/* Value of element i of a buffer that `rank` owns in `op`: an int below
 * 2^20, so sums over thousands of ranks stay exact. */
int mc_val(const mc_t *mc, int op, int rank, size_t i);
uint8_t mc_byte(const mc_t *mc, int op, int rank, size_t i);
void mc_fill_int(const mc_t *mc, int *buf, size_t count, int op, int rank,
                 size_t first);
void mc_fill_byte(const mc_t *mc, uint8_t *buf, size_t len, int op, int rank);
void mc_check_int(mc_t *mc, const int *buf, size_t count, int op, int rank,
                  size_t first, const char *what);
void mc_check_byte(mc_t *mc, const uint8_t *buf, size_t len, int op,
                   int rank, const char *what);

/* one file per family */
void mc_p2p(mc_t *mc);
void mc_coll(mc_t *mc);
void mc_rma(mc_t *mc);
void mc_osc(mc_t *mc);
void mc_osc_compute_gets(mc_t *mc);

#endif

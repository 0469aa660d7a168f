/*
 * mpi_allreduce_bw [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS]
 *
 * MPI_Allreduce (float sum) over a range of sizes, printed the way
 * nccl-tests prints it: time per call, algorithm bandwidth (bytes / time)
 * and bus bandwidth (algbw * 2(n-1)/n, what each link carries in a ring),
 * and the number of wrong elements (inputs are small integers, so the sums
 * are exact). Exit status 1 if any result is wrong.
 *
 *   UCX_TLS=uccl,self uccl-run mpirun -np 4 --oversubscribe \
 *       ./examples/mpi_allreduce_bw
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static size_t ar_parse(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);

    switch (*end) {
    case 'k': case 'K': v <<= 10; ++end; break;
    case 'm': case 'M': v <<= 20; ++end; break;
    case 'g': case 'G': v <<= 30; ++end; break;
    }
    if (*end != '\0') {
        fprintf(stderr, "mpi_allreduce_bw: bad size '%s'\n", s);
        exit(2);
    }
    return v;
}

/* element i of rank r's input: small integers keep the float sum exact */
static float ar_input(int rank, size_t i)
{
    return (float)((rank + 1) * (int)(i % 7 + 1));
}

int main(int argc, char **argv)
{
    size_t min = 4, max = 64 << 20, factor = 4, bytes, count, i;
    long iters = 20, wrong, total_wrong = 0, n, it;
    int rank, nranks, c;
    float *sbuf, *rbuf, expect;
    double t0, t, algbw;

    while ((c = getopt(argc, argv, "b:e:f:n:h")) != -1) {
        switch (c) {
        case 'b': min = ar_parse(optarg); break;
        case 'e': max = ar_parse(optarg); break;
        case 'f': factor = ar_parse(optarg); break;
        case 'n': iters = atol(optarg); break;
        default:
            fprintf(stderr, "usage: mpi_allreduce_bw [-b MIN_BYTES] "
                    "[-e MAX_BYTES] [-f FACTOR] [-n ITERS]\n");
            return 2;
        }
    }
    if ((min < sizeof(float)) || (max < min) || (factor < 2) ||
        (iters < 1)) {
        fprintf(stderr, "mpi_allreduce_bw: need 4 <= MIN <= MAX, FACTOR >= "
                "2, ITERS >= 1\n");
        return 2;
    }

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    sbuf = malloc(max);
    rbuf = malloc(max);
    if ((sbuf == NULL) || (rbuf == NULL)) {
        fprintf(stderr, "mpi_allreduce_bw: out of memory for %zu bytes\n",
                max);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (i = 0; i < max / sizeof(float); ++i) {
        sbuf[i] = ar_input(rank, i);
    }
    if (rank == 0) {
        printf("# mpi_allreduce_bw: %d ranks, MPI_FLOAT sum, UCX_TLS=%s\n"
               "# busbw = algbw * 2(n-1)/n\n"
               "# %10s %10s %6s %10s %12s %12s %7s\n", nranks,
               getenv("UCX_TLS") ? getenv("UCX_TLS") : "(default)",
               "size(B)", "count", "iters", "time(us)", "algbw(GB/s)",
               "busbw(GB/s)", "#wrong");
    }

    for (bytes = min; bytes <= max; bytes *= factor) {
        count = bytes / sizeof(float);
        /* fewer calls for large messages, at least 3 */
        n = iters;
        if (bytes * n > (512ul << 20)) {
            n = ((512ul << 20) / bytes > 3) ? (512ul << 20) / bytes : 3;
        }
        MPI_Allreduce(sbuf, rbuf, (int)count, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);   /* warm-up */
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (it = 0; it < n; ++it) {
            MPI_Allreduce(sbuf, rbuf, (int)count, MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
        }
        t = (MPI_Wtime() - t0) / n;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX,
                      MPI_COMM_WORLD);

        /* sum over ranks of (r + 1) * k = k * n(n+1)/2 */
        wrong = 0;
        for (i = 0; i < count; ++i) {
            expect = (float)((int)(i % 7 + 1) * nranks * (nranks + 1) / 2);
            wrong += (rbuf[i] != expect);
        }
        MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM,
                      MPI_COMM_WORLD);
        total_wrong += wrong;
        algbw = count * sizeof(float) / t / 1e9;
        if (rank == 0) {
            printf("  %10zu %10zu %6ld %10.1f %12.3f %12.3f %7ld\n",
                   count * sizeof(float), count, n, t * 1e6, algbw,
                   algbw * 2 * (nranks - 1) / nranks, wrong);
            fflush(stdout);
        }
    }
    if (rank == 0) {
        printf("# %s: %ld wrong elements in all\n",
               total_wrong ? "FAIL" : "ok", total_wrong);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}

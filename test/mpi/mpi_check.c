/*
 * mpi_check [-m MAX_BYTES] [-s SEED] [-k RANK] [-c PAUSE_S] [-f FAMILIES]
 *
 * Runs point-to-point, every collective the project promises and one-sided
 * operations over sizes up to MAX_BYTES (default 64M), checking each result
 * against a value computed independently. A mismatch prints what differed
 * and aborts the job (non-zero exit). -k RANK makes that rank SIGKILL itself
 * after a barrier; every other rank then sends to it until an error comes
 * back, which must come from the transport's peer failure handling within
 * MC_PEER_FAILURE_S (run it with orte_enable_recovery so mpirun lets the
 * others go on), prints it and exits. -c PAUSE_S makes rank 1 compute (no
 * MPI call) twice for that long: first with sends to it outstanding, then
 * while rank 0 reads its window. -f picks the
 * families to run, a comma-separated list of p2p, coll, rma and osc
 * (default: all).
 */
#include "mpi_check.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/types.h>

void mc_fail(mc_t *mc, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "mpi_check rank %d/%d FAIL: ", mc->rank, mc->size);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (seed %llu)\n", (unsigned long long)mc->seed);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

void mc_report(mc_t *mc, const char *op, const size_t *sizes, size_t n,
               const char *unit)
{
    char list[512] = "";
    size_t i, len = 0;

    if (mc->rank != 0) {
        return;
    }
    for (i = 0; (i < n) && (len + 32 < sizeof(list)); ++i) {
        if (sizes[i] >= MC_MIB && !(sizes[i] % MC_MIB)) {
            len += snprintf(list + len, sizeof(list) - len, " %zuM",
                            sizes[i] / MC_MIB);
        } else {
            len += snprintf(list + len, sizeof(list) - len, " %zu", sizes[i]);
        }
    }
    printf("ok %-34s %s:%s\n", op, unit, list);
    fflush(stdout);
}

void *mc_alloc(mc_t *mc, size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);

    if (p == NULL) {
        mc_fail(mc, "out of memory allocating %zu bytes", bytes);
    }
    return p;
}

size_t mc_cap(const mc_t *mc, const size_t *sizes, size_t n, size_t *out)
{
    size_t i, k = 0;

    for (i = 0; i < n; ++i) {
        if (sizes[i] <= mc->max_bytes) {
            out[k++] = sizes[i];
        }
    }
    return k;
}

static double mc_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Is the process pid gone (or a zombie)? All ranks share one host. */
static int mc_pid_dead(pid_t pid)
{
    char path[64], state = 'R';
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return 1;
    }
    /* "pid (comm) state ...": the state follows the last ')' */
    if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1) {
        state = 'R';
    }
    fclose(f);
    return (state == 'Z') || (state == 'X');
}

/* -k: the rank dies; the others must hear of it from MPI, as errors of
 * their sends to it, not hang. They send once it is dead: a rendezvous
 * request the rank received before it died waits for its reply, and Open
 * MPI's UCX endpoints (no error handling) never cancel it, whatever the
 * transport. */
static void mc_peer_failure(mc_t *mc)
{
    const size_t size = 4 * MC_MIB;  /* rendezvous: it needs the peer */
    uint8_t *buf      = mc_alloc(mc, size);
    int rc            = MPI_SUCCESS;
    unsigned sends    = 0;
    pid_t victim      = getpid();
    MPI_Request req;
    double start;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Bcast(&victim, sizeof(victim), MPI_BYTE, mc->kill_rank,
              MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (mc->rank == mc->kill_rank) {
        printf("mpi_check rank %d: killing myself with SIGKILL\n", mc->rank);
        fflush(stdout);
        raise(SIGKILL);
    }
    start = mc_now();
    while (!mc_pid_dead(victim)) {
        if (mc_now() - start > MC_PEER_FAILURE_S) {
            mc_fail(mc, "rank %d (pid %d) still alive after %d s",
                    mc->kill_rank, (int)victim, MC_PEER_FAILURE_S);
        }
        usleep(1000);
    }
    memset(buf, 0, size);
    start = mc_now();
    while ((rc == MPI_SUCCESS) && (mc_now() - start < MC_PEER_FAILURE_S)) {
        rc = MPI_Isend(buf, size, MPI_BYTE, mc->kill_rank, 0, MPI_COMM_WORLD,
                       &req);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        ++sends;
    }
    if (rc == MPI_SUCCESS) {
        mc_fail(mc, "sends to the dead rank %d still succeed after %d s",
                mc->kill_rank, MC_PEER_FAILURE_S);
    }
    printf("mpi_check rank %d: peer failure of rank %d reported after "
           "%.2f s (error %d, %u sends)\n", mc->rank, mc->kill_rank,
           mc_now() - start, rc, sends);
    fflush(stdout);
    _exit(0);  /* MPI_Finalize would wait for the dead rank */
}

static inline uint64_t mc_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x  = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t mc_key(const mc_t *mc, int op, int rank)
{
    return mc_mix(mc->seed ^ ((uint64_t)op << 40) ^ ((uint64_t)rank << 20));
}

int mc_val(const mc_t *mc, int op, int rank, size_t i)
{
    return (int)(mc_mix(mc_key(mc, op, rank) + i) & 0xfffff);
}

uint8_t mc_byte(const mc_t *mc, int op, int rank, size_t i)
{
    return (uint8_t)(mc_mix(mc_key(mc, op, rank) + i) >> 13);
}

void mc_fill_int(const mc_t *mc, int *buf, size_t count, int op, int rank,
                 size_t first)
{
    uint64_t key = mc_key(mc, op, rank);
    size_t i;

    for (i = 0; i < count; ++i) {
        buf[i] = (int)(mc_mix(key + first + i) & 0xfffff);
    }
}

void mc_fill_byte(const mc_t *mc, uint8_t *buf, size_t len, int op, int rank)
{
    uint64_t key = mc_key(mc, op, rank);
    size_t i;

    for (i = 0; i < len; ++i) {
        buf[i] = (uint8_t)(mc_mix(key + i) >> 13);
    }
}

void mc_check_int(mc_t *mc, const int *buf, size_t count, int op, int rank,
                  size_t first, const char *what)
{
    uint64_t key = mc_key(mc, op, rank);
    size_t i;
    int exp;

    for (i = 0; i < count; ++i) {
        exp = (int)(mc_mix(key + first + i) & 0xfffff);
        if (buf[i] != exp) {
            mc_fail(mc, "%s: element %zu of %zu is %d, expected %d (data of "
                    "rank %d)", what, i, count, buf[i], exp, rank);
        }
    }
    mc->compared += count;
}

void mc_check_byte(mc_t *mc, const uint8_t *buf, size_t len, int op,
                   int rank, const char *what)
{
    uint64_t key = mc_key(mc, op, rank);
    size_t i;
    uint8_t exp;

    for (i = 0; i < len; ++i) {
        exp = (uint8_t)(mc_mix(key + i) >> 13);
        if (buf[i] != exp) {
            mc_fail(mc, "%s: byte %zu of %zu is 0x%02x, expected 0x%02x "
                    "(data of rank %d)", what, i, len, buf[i], exp, rank);
        }
    }
    mc->compared += len;
}

static size_t mc_parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);

    switch (*end) {
    case 'k': case 'K': v <<= 10; ++end; break;
    case 'm': case 'M': v <<= 20; ++end; break;
    }
    if ((*end != '\0') || (v < 4096) || (v > 1024 * MC_MIB)) {
        fprintf(stderr, "mpi_check: bad size '%s' (4k..1024M)\n", s);
        exit(2);
    }
    return v;
}

/* Rank 0 has eager and rendezvous sends to rank 1 outstanding while rank 1
 * computes (no MPI call) for pause_s seconds: longer than the transport's
 * peer timeout, rank 1 must still look alive. */
static void mc_compute_pause(mc_t *mc)
{
    static const size_t sizes[] = { 8, 65536, 4 * MC_MIB };
    enum { N = sizeof(sizes) / sizeof(sizes[0]) };
    MPI_Request reqs[N];
    uint8_t *bufs[N];
    size_t i;

    if ((mc->size < 2) || (mc->rank > 1)) {
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    for (i = 0; i < N; ++i) {
        bufs[i] = mc_alloc(mc, sizes[i]);
        if (mc->rank == 0) {
            mc_fill_byte(mc, bufs[i], sizes[i], 100 + i, 0);
            MPI_Isend(bufs[i], sizes[i], MPI_BYTE, 1, (int)i, MPI_COMM_WORLD,
                      &reqs[i]);
        }
    }
    if (mc->rank == 1) {
        printf("mpi_check: rank 1 computes for %u s\n", mc->pause_s);
        fflush(stdout);
        sleep(mc->pause_s);
        for (i = 0; i < N; ++i) {
            MPI_Irecv(bufs[i], sizes[i], MPI_BYTE, 0, (int)i, MPI_COMM_WORLD,
                      &reqs[i]);
        }
    }
    MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE);
    for (i = 0; (mc->rank == 1) && (i < N); ++i) {
        mc_check_byte(mc, bufs[i], sizes[i], 100 + i, 0, "compute pause");
    }
    for (i = 0; i < N; ++i) {
        free(bufs[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static const struct {
    const char *name;
    void       (*run)(mc_t *mc);
} mc_families[] = {
    { "p2p", mc_p2p }, { "coll", mc_coll }, { "rma", mc_rma },
    { "osc", mc_osc }
};

#define MC_NFAMILIES (sizeof(mc_families) / sizeof(mc_families[0]))

/* is `name` in the comma-separated `list` (NULL: every family)? */
static int mc_family_on(const char *list, const char *name)
{
    size_t len = strlen(name);
    const char *p;

    if (list == NULL) {
        return 1;
    }
    for (p = list; (p = strstr(p, name)) != NULL; p += len) {
        if (((p == list) || (p[-1] == ',')) &&
            ((p[len] == ',') || (p[len] == '\0'))) {
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    mc_t mc = { .seed = 1, .max_bytes = 64 * MC_MIB, .kill_rank = -1 };
    const char *families = NULL;
    double t0;
    long total;
    int c, i;

    while ((c = getopt(argc, argv, "m:s:k:c:f:h")) != -1) {
        switch (c) {
        case 'm': mc.max_bytes = mc_parse_size(optarg); break;
        case 's': mc.seed      = strtoull(optarg, NULL, 0); break;
        case 'k': mc.kill_rank = atoi(optarg); break;
        case 'c': mc.pause_s   = atoi(optarg); break;
        case 'f': families     = optarg; break;
        default:
            fprintf(stderr, "usage: mpi_check [-m MAX_BYTES] [-s SEED] "
                    "[-k RANK] [-c PAUSE_S] [-f p2p,coll,rma,osc]\n");
            return 2;
        }
    }

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mc.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mc.size);
    if (mc.rank == 0) {
        printf("mpi_check: %d ranks, sizes up to %zu bytes, seed %llu, "
               "UCX_TLS=%s, pml=%s, osc=%s\n", mc.size, mc.max_bytes,
               (unsigned long long)mc.seed,
               getenv("UCX_TLS") ? getenv("UCX_TLS") : "(all)",
               getenv("OMPI_MCA_pml") ? getenv("OMPI_MCA_pml") : "(default)",
               getenv("OMPI_MCA_osc") ? getenv("OMPI_MCA_osc") : "(default)");
        fflush(stdout);
    }
    t0 = MPI_Wtime();

    if (mc.kill_rank >= 0) {
        mc_peer_failure(&mc);
    }
    if (mc.pause_s > 0) {
        mc_compute_pause(&mc);
        if (mc.size > 1) {
            mc_osc_compute_gets(&mc);
        }
    }
    for (i = 0; i < MC_NFAMILIES; ++i) {
        if (mc_family_on(families, mc_families[i].name)) {
            mc_families[i].run(&mc);
        }
    }

    MPI_Reduce(&mc.compared, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (mc.rank == 0) {
        printf("mpi_check: PASS, %d ranks compared %ld values in %.1f s\n",
               mc.size, total, MPI_Wtime() - t0);
    }
    MPI_Finalize();
    return 0;
}

/*
 * softverbs-stat [FABRIC]: print the counters of a live softverbs fabric
 * (every port in use and every core path), in the SOFTVERBS_STATS format.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_fabric.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void sv_stats_dump(FILE *f, int all_ports);

int main(int argc, char **argv)
{
    const char *name = (argc > 1) ? argv[1] : getenv("SOFTVERBS_FABRIC");
    char shm[128], path[160];
    struct stat st;
    void *p;
    int fd;

    if ((argc > 2) || ((argc == 2) && (argv[1][0] == '-'))) {
        fprintf(stderr, "usage: softverbs-stat [FABRIC] (default: "
                "$SOFTVERBS_FABRIC or '%s')\n", SV_DEF_FABRIC);
        return 2;
    }
    if ((name == NULL) || (*name == '\0')) {
        name = SV_DEF_FABRIC;
    }
    if ((strlen(name) > 48) || strchr(name, '/')) {
        fprintf(stderr, "softverbs-stat: bad fabric name '%s'\n", name);
        return 2;
    }
    snprintf(sv_fabric_name, sizeof(sv_fabric_name), "%s", name);
    snprintf(shm, sizeof(shm), "/softverbs.%s", name);
    fd = shm_open(shm, O_RDWR, 0);
    if (fd < 0) {
        fprintf(stderr, "softverbs-stat: no fabric '%s' (/dev/shm%s): %s\n",
                name, shm, strerror(errno));
        return 1;
    }
    snprintf(path, sizeof(path), "/dev/shm%s", shm);
    if ((sv_access_init() != 0) || (sv_access_check(fd, path, SV_ACCESS_FABRIC, NULL) != 0)) {
        return 1;
    }
    if ((fstat(fd, &st) != 0) || (st.st_size != sizeof(sv_fabric_hdr_t))) {
        fprintf(stderr, "softverbs-stat: /dev/shm%s has another layout "
                "(a different softverbs version?)\n", shm);
        return 1;
    }
    p = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        perror("softverbs-stat: mmap");
        return 1;
    }
    sv_fabric = p;
    if ((sv_fabric->magic != SV_FABRIC_MAGIC) ||
        (sv_fabric->abi != SV_ABI_VERSION) ||
        (sv_model_attach(sv_fabric->model, 0) != 0)) {
        fprintf(stderr, "softverbs-stat: fabric '%s' is not ready or has "
                "another version\n", name);
        return 1;
    }
    sv_stats_dump(stdout, 1);
    return 0;
}

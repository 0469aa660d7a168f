/*
 * sv_fabric_tool: helper of the fabric life-cycle tests (sv_fabric_*.sh).
 *
 *   sv_fabric_tool hold      open sv0 (libsoftverbs preloaded), print
 *                            "ready", then sleep until killed
 *   sv_fabric_tool lockdie   take the lock of fabric $SOFTVERBS_FABRIC
 *                            directly in its shared memory and exit holding
 *                            it, as a process that crashes inside softverbs
 *   sv_fabric_tool size      print the size of a fabric file
 */
#include "sv_fabric.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int svt_hold(void)
{
    struct ibv_device **list;
    struct ibv_context *ctx;
    int num;

    list = ibv_get_device_list(&num);
    if ((list == NULL) || (num < 1)) {
        fprintf(stderr, "sv_fabric_tool: no verbs device\n");
        return 1;
    }
    ctx = ibv_open_device(list[0]);
    if (ctx == NULL) {
        perror("sv_fabric_tool: ibv_open_device");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        pause();
    }
}

static int svt_lockdie(void)
{
    const char *name = getenv("SOFTVERBS_FABRIC");
    sv_fabric_hdr_t *f;
    char shm[128];
    int fd, ret;

    snprintf(shm, sizeof(shm), "/softverbs.%s", name ? name : "default");
    fd = shm_open(shm, O_RDWR, 0);
    if (fd < 0) {
        perror("sv_fabric_tool: shm_open");
        return 1;
    }
    f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (f == MAP_FAILED) {
        perror("sv_fabric_tool: mmap");
        return 1;
    }
    ret = pthread_mutex_lock(&f->lock);
    if ((ret != 0) && (ret != EOWNERDEAD)) {
        fprintf(stderr, "sv_fabric_tool: lock: %s\n", strerror(ret));
        return 1;
    }
    printf("dying with the lock of %s held (lock returned %d)\n", shm, ret);
    fflush(stdout);
    _exit(0);
}

int main(int argc, char **argv)
{
    if ((argc == 2) && !strcmp(argv[1], "hold")) {
        return svt_hold();
    }
    if ((argc == 2) && !strcmp(argv[1], "lockdie")) {
        return svt_lockdie();
    }
    if ((argc == 2) && !strcmp(argv[1], "size")) {
        printf("%zu\n", sizeof(sv_fabric_hdr_t));
        return 0;
    }
    fprintf(stderr, "usage: sv_fabric_tool hold|lockdie|size\n");
    return 2;
}

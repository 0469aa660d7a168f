/*
 * sv_fabric_tool: helper of the fabric tests (sv_fabric_*.sh,
 * sv_hostile_perm.sh). With libsoftverbs preloaded:
 *
 *   sv_fabric_tool hold      open sv0, print "ready", sleep until killed
 *   sv_fabric_tool udsink    open sv0, post receives on a UD QP, print
 *                            "ready LID QPN", then the first completion
 *                            ("wc STATUS LEN DATA-OK") or "wc none" after
 *                            10 s
 *   sv_fabric_tool udsend LID QPN
 *                            send one 64-byte datagram there, print the
 *                            send completion's status
 *
 * Without it (reaching into the fabric file of $SOFTVERBS_FABRIC, as a
 * process that crashes inside softverbs, or a hostile one, would):
 *
 *   sv_fabric_tool lockdie   take the fabric lock (flock on the file) and
 *                            exit holding it
 *   sv_fabric_tool lockhold  take it and keep it until killed
 *   sv_fabric_tool setpid PORT PID
 *                            write PID into port PORT's entry
 *   sv_fabric_tool corrupt_model
 *                            overwrite the model configuration
 *   sv_fabric_tool size      print the size of a fabric file
 */
#include "sv_fabric.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SVT_TOOL_QKEY   0x11111111u
#define SVT_TOOL_MSG    64
#define SVT_TOOL_WAIT_S 10

static struct ibv_context *svt_open_sv0(void)
{
    struct ibv_device **list;
    struct ibv_context *ctx;
    int num;

    list = ibv_get_device_list(&num);
    if ((list == NULL) || (num < 1)) {
        fprintf(stderr, "sv_fabric_tool: no verbs device\n");
        exit(1);
    }
    ctx = ibv_open_device(list[0]);
    if (ctx == NULL) {
        perror("sv_fabric_tool: ibv_open_device");
        exit(1);
    }
    return ctx;
}

static int svt_hold(void)
{
    svt_open_sv0();
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        pause();
    }
    return 0;
}

/* A UD QP in RTS with its CQ, and a registered buffer. */
typedef struct svt_ud {
    struct ibv_context *ctx;
    struct ibv_pd      *pd;
    struct ibv_cq      *cq;
    struct ibv_qp      *qp;
    struct ibv_mr      *mr;
    char                buf[4096];
} svt_ud_t;

static void svt_ud_open(svt_ud_t *u)
{
    struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD,
                                   .cap = { .max_send_wr = 4,
                                            .max_recv_wr = 4,
                                            .max_send_sge = 1,
                                            .max_recv_sge = 1 } };
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
                             .qkey = SVT_TOOL_QKEY };

    u->ctx = svt_open_sv0();
    u->pd  = ibv_alloc_pd(u->ctx);
    u->cq  = ibv_create_cq(u->ctx, 16, NULL, NULL, 0);
    ia.send_cq = ia.recv_cq = u->cq;
    u->qp  = (u->pd && u->cq) ? ibv_create_qp(u->pd, &ia) : NULL;
    u->mr  = u->pd ? ibv_reg_mr(u->pd, u->buf, sizeof(u->buf),
                                IBV_ACCESS_LOCAL_WRITE) : NULL;
    if ((u->qp == NULL) || (u->mr == NULL) ||
        ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_QKEY)) {
        perror("sv_fabric_tool: UD QP");
        exit(1);
    }
    a.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE)) {
        perror("sv_fabric_tool: UD QP to RTR");
        exit(1);
    }
    a.qp_state = IBV_QPS_RTS;
    if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
        perror("sv_fabric_tool: UD QP to RTS");
        exit(1);
    }
}

/* The first completion within SVT_TOOL_WAIT_S, or none. */
static int svt_ud_poll(svt_ud_t *u, struct ibv_wc *wc)
{
    time_t end = time(NULL) + SVT_TOOL_WAIT_S;
    int n;

    while ((n = ibv_poll_cq(u->cq, 1, wc)) == 0) {
        if (time(NULL) > end) {
            return 0;
        }
        usleep(1000);
    }
    return n;
}

static int svt_udsink(void)
{
    struct ibv_recv_wr wr = { .num_sge = 1 }, *bad;
    struct ibv_port_attr pa;
    struct ibv_sge sge;
    struct ibv_wc wc;
    svt_ud_t u;
    int i, ok;

    svt_ud_open(&u);
    memset(u.buf, 0, sizeof(u.buf));
    sge = (struct ibv_sge){ .addr = (uintptr_t)u.buf, .length = 1024,
                            .lkey = u.mr->lkey };
    wr.sg_list = &sge;
    if (ibv_post_recv(u.qp, &wr, &bad) || ibv_query_port(u.ctx, 1, &pa)) {
        perror("sv_fabric_tool: udsink");
        return 1;
    }
    printf("ready %u %u\n", pa.lid, u.qp->qp_num);
    fflush(stdout);
    if (svt_ud_poll(&u, &wc) == 0) {
        printf("wc none\n");
        return 0;
    }
    for (i = 0, ok = 1; i < SVT_TOOL_MSG; ++i) {
        ok &= (u.buf[40 + i] == (char)i);
    }
    printf("wc %s %u %s\n", ibv_wc_status_str(wc.status), wc.byte_len,
           ok ? "data-ok" : "no-data");
    return 0;
}

static int svt_udsend(unsigned lid, unsigned qpn)
{
    struct ibv_send_wr wr = { .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;
    struct ibv_ah_attr aa = { .dlid = lid, .port_num = 1 };
    struct ibv_sge sge;
    struct ibv_wc wc;
    svt_ud_t u;
    int i;

    svt_ud_open(&u);
    for (i = 0; i < SVT_TOOL_MSG; ++i) {
        u.buf[i] = (char)i;
    }
    sge = (struct ibv_sge){ .addr = (uintptr_t)u.buf, .length = SVT_TOOL_MSG,
                            .lkey = u.mr->lkey };
    wr.sg_list           = &sge;
    wr.wr.ud.ah          = ibv_create_ah(u.pd, &aa);
    wr.wr.ud.remote_qpn  = qpn;
    wr.wr.ud.remote_qkey = SVT_TOOL_QKEY;
    if ((wr.wr.ud.ah == NULL) || ibv_post_send(u.qp, &wr, &bad)) {
        perror("sv_fabric_tool: udsend");
        return 1;
    }
    if (svt_ud_poll(&u, &wc) == 0) {
        printf("send none\n");
        return 1;
    }
    printf("send %s\n", ibv_wc_status_str(wc.status));
    return 0;
}

static sv_fabric_hdr_t *svt_map_fabric(int *fd_p)
{
    const char *name = getenv("SOFTVERBS_FABRIC");
    sv_fabric_hdr_t *f;
    char shm[128];
    int fd;

    snprintf(shm, sizeof(shm), "/softverbs.%s", name ? name : "default");
    fd = shm_open(shm, O_RDWR, 0);
    if (fd < 0) {
        perror("sv_fabric_tool: shm_open");
        exit(1);
    }
    f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (f == MAP_FAILED) {
        perror("sv_fabric_tool: mmap");
        exit(1);
    }
    if (fd_p != NULL) {
        *fd_p = fd;
    } else {
        close(fd);
    }
    return f;
}

/* The fabric lock is flock() on the fabric file: take it and either exit
 * holding it (`die`, as a process that crashes inside softverbs) or keep it
 * until killed (a process that hangs there). */
static int svt_lock(int die)
{
    int fd;

    svt_map_fabric(&fd);
    if (flock(fd, LOCK_EX) != 0) {
        perror("sv_fabric_tool: flock");
        return 1;
    }
    printf("%s the fabric lock held\n", die ? "dying with" : "holding");
    fflush(stdout);
    if (die) {
        _exit(0);
    }
    for (;;) {
        pause();
    }
    return 0;
}

static int svt_setpid(unsigned port, int pid)
{
    sv_fabric_hdr_t *f = svt_map_fabric(NULL);

    if (port >= SV_MODEL_MAX_PORTS) {
        fprintf(stderr, "sv_fabric_tool: port %u\n", port);
        return 1;
    }
    f->port[port].pid       = pid;
    f->port[port].starttime = 0;
    return 0;
}

/* npaths and mtu 0 and garbage after them: the configuration a joiner
 * must refuse rather than divide by. */
static int svt_corrupt_model(void)
{
    sv_fabric_hdr_t *f = svt_map_fabric(NULL);
    uint32_t *w = (uint32_t*)(f->model + 16);
    unsigned i;

    for (i = 0; i < 4096; ++i) {
        w[i] = (i < 64) ? 0 : 0xdeadbeef * (i + 1);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *cmd = (argc > 1) ? argv[1] : "";

    if ((argc == 2) && !strcmp(cmd, "hold")) {
        return svt_hold();
    }
    if ((argc == 2) && !strcmp(cmd, "udsink")) {
        return svt_udsink();
    }
    if ((argc == 4) && !strcmp(cmd, "udsend")) {
        return svt_udsend(atoi(argv[2]), atoi(argv[3]));
    }
    if ((argc == 2) && !strcmp(cmd, "lockdie")) {
        return svt_lock(1);
    }
    if ((argc == 2) && !strcmp(cmd, "lockhold")) {
        return svt_lock(0);
    }
    if ((argc == 4) && !strcmp(cmd, "setpid")) {
        return svt_setpid(atoi(argv[2]), atoi(argv[3]));
    }
    if ((argc == 2) && !strcmp(cmd, "corrupt_model")) {
        return svt_corrupt_model();
    }
    if ((argc == 2) && !strcmp(cmd, "size")) {
        printf("%zu\n", sizeof(sv_fabric_hdr_t));
        return 0;
    }
    fprintf(stderr, "usage: sv_fabric_tool hold|udsink|udsend LID QPN|"
            "lockdie|lockhold|setpid PORT PID|corrupt_model|size\n");
    return 2;
}

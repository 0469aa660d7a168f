/*
 * sv_verbs_test SUBTEST: run one two-process verbs test.
 *
 * Environment: SVT_SEED (data patterns, default derived from the name),
 * SVT_TIMEOUT (seconds, default 60). Exit 0 only if both processes passed.
 */
#include "sv_test.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const svt_case_t svt_cases[] = {
    { "rc_write",     svt_rc_write,
      "RC RDMA WRITE: multi-SGE, chain, unaligned, zero-length" },
    { "rc_write_imm", svt_rc_write_imm,
      "RC WRITE_WITH_IMM: receive completion with imm, byte_len, qp_num" },
    { "rc_send",      svt_rc_send,
      "RC SEND / SEND_WITH_IMM into multi-SGE receive buffers" },
    { "rc_read",      svt_rc_read,     "RC RDMA READ into a multi-SGE list" },
    { "uc",           svt_uc,          "UC WRITE, WRITE_WITH_IMM and SEND" },
    { "ud",           svt_ud,          "UD SEND with AH and 40-byte GRH" },
    { "srq",          svt_srq,
      "SRQ and one CQ shared by several RC and UC QPs" },
    { "inline_unsig", svt_inline_unsig,
      "inline sends and unsignaled completions" },
    { "order",        svt_order,       "ordering on one QP" },
    { "loss",         svt_loss,
      "UC message loss rate within 3 sigma of SOFTVERBS_LOSS" },
    { "rc_loss",      svt_rc_loss,     "RC delivers everything under loss" },
    { "rate",         svt_rate,
      "bulk RC WRITE achieves SOFTVERBS_LINK_GBPS within 5%" },
    { "reorder",      svt_reorder,
      "many QPs over several paths: completions reordered across QPs" },
    { "bad_keys",     svt_bad_keys,
      "wrong rkey/lkey/bounds/access: error completions and QP in ERR" },
    { "killed_peer",  svt_killed_peer,
      "kill -9 the target mid-transfer: RETRY_EXC_ERR, no hang" },
    { "qp_state",     svt_qp_state_field,
      "internal moves to ERR leave ibv_qp.state to modify/query" },
    { "unmapped_src", svt_unmapped_src,
      "sending from an unmapped registered buffer: the sender's error" },
    { "batch",        svt_batch,
      "a chain's WRITEs copied as one batch: order, data, errors" },
    { "batch_loss",   svt_batch_loss,
      "UC losses inside a batched chain: whole or a packet prefix" },
    { "doorbell",     svt_doorbell,
      "a chain of 16 WRs is one doorbell in the SOFTVERBS_STATS dump" },
};

#define SVT_NCASES (sizeof(svt_cases) / sizeof(svt_cases[0]))

static svt_t *svt_self;

static void svt_alarm(int sig)
{
    static const char msg[] = "sv_verbs_test: TIMEOUT (SVT_TIMEOUT seconds)"
                              " - a verb or a completion never came\n";
    ssize_t r;

    (void)sig;
    r = write(2, msg, sizeof(msg) - 1);
    (void)r;
    if (svt_self && (svt_self->role == 0) && (svt_self->child > 0)) {
        kill(svt_self->child, SIGKILL);
    }
    _exit(3);
}

static void usage(void)
{
    unsigned i;

    fprintf(stderr, "usage: sv_verbs_test SUBTEST\n");
    for (i = 0; i < SVT_NCASES; ++i) {
        fprintf(stderr, "  %-13s %s\n", svt_cases[i].name, svt_cases[i].doc);
    }
}

int main(int argc, char **argv)
{
    const svt_case_t *c = NULL;
    svt_t t             = { 0 };
    int sv[2], status;
    uint64_t h;
    const char *p;
    pid_t pid;
    unsigned i;

    if (argc != 2) {
        usage();
        return 2;
    }
    for (i = 0; i < SVT_NCASES; ++i) {
        if (!strcmp(argv[1], svt_cases[i].name)) {
            c = &svt_cases[i];
        }
    }
    if (c == NULL) {
        fprintf(stderr, "sv_verbs_test: unknown sub-test \"%s\"\n", argv[1]);
        usage();
        return 2;
    }

    setvbuf(stdout, NULL, _IOLBF, 0);
    t.test = c->name;
    for (h = 1469598103934665603ull, p = c->name; *p; ++p) {
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    }
    t.seed = svt_env_long("SVT_SEED", (long)(h & 0x7fffffff));
    printf("[%s] %s; seed %llu, fabric %s\n", c->name, c->doc,
           (unsigned long long)t.seed,
           getenv("SOFTVERBS_FABRIC") ? getenv("SOFTVERBS_FABRIC") :
                                        "(default)");

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        perror("socketpair");
        return 1;
    }
    /* fork before any verbs call: nothing of the NIC is shared */
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    t.role = (pid == 0);
    t.sock = sv[t.role];
    close(sv[!t.role]);
    if (t.role) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
    } else {
        t.child = pid;
    }
    svt_self = &t;
    signal(SIGALRM, svt_alarm);
    signal(SIGPIPE, SIG_IGN);
    alarm(svt_env_long("SVT_TIMEOUT", 60));

    c->fn(&t);

    if (t.role) {
        SVT_LOG(&t, "passed");
        return 0;
    }
    if (!t.child_gone) {
        while (waitpid(t.child, &status, 0) < 0) {
        }
        if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
            fprintf(stderr, "[%s] FAIL: child %s %d\n", c->name,
                    WIFEXITED(status) ? "exited with" : "killed by signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) :
                                        WTERMSIG(status));
            return 1;
        }
    }
    SVT_LOG(&t, "passed");
    printf("[%s] PASS\n", c->name);
    return 0;
}

/*
 * The driver of the two-process verbs test programs (sv_verbs_test,
 * sv_hostile_test): picks the sub-test, forks the child, times it out.
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

static void usage(const char *prog, const svt_case_t *cases, unsigned n)
{
    unsigned i;

    fprintf(stderr, "usage: %s SUBTEST\n", prog);
    for (i = 0; i < n; ++i) {
        fprintf(stderr, "  %-13s %s\n", cases[i].name, cases[i].doc);
    }
}

int svt_main(int argc, char **argv, const svt_case_t *cases, unsigned ncases)
{
    const svt_case_t *c = NULL;
    svt_t t             = { 0 };
    int sv[2], status;
    uint64_t h;
    const char *p;
    pid_t pid;
    unsigned i;

    if (argc != 2) {
        usage(argv[0], cases, ncases);
        return 2;
    }
    for (i = 0; i < ncases; ++i) {
        if (!strcmp(argv[1], cases[i].name)) {
            c = &cases[i];
        }
    }
    if (c == NULL) {
        fprintf(stderr, "%s: unknown sub-test \"%s\"\n", argv[0], argv[1]);
        usage(argv[0], cases, ncases);
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

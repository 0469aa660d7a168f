/*
 * ucp_check -r server|client -p PORT_FILE -t TEST [options]
 *
 * Runs one UCP test between two processes (see run2.sh, which starts both
 * through uccl-run). Exit 0 on success, 1 with a message on any mismatch,
 * error or timeout. Transports come from UCX_TLS as for any UCP program.
 */
#include "ucp_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
    const char   *name;
    uc_test_fn_t fn;
    uint64_t     features;
    const char   *what;
    int          alone;    /* the peer is gone at the end: no final barrier */
} uc_tests[] = {
    { "tag",          uc_test_tag,          UCP_FEATURE_TAG,
      "tag send/recv (normal, fast-completion and sync sends)" },
    { "stream",       uc_test_stream,       UCP_FEATURE_STREAM,
      "stream send/recv, received in different pieces than sent" },
    { "am",           uc_test_am,           UCP_FEATURE_AM,
      "active messages (ucp_am_send_nbx; default, eager and rndv)" },
    { "rma",          uc_test_rma,          UCP_FEATURE_RMA,
      "RMA put/get with ep and worker flush" },
    { "flush_close",  uc_test_flush_close,  UCP_FEATURE_TAG,
      "ep/worker flush and ep close, then reconnect" },
    { "peer_failure", uc_test_peer_failure, UCP_FEATURE_TAG,
      "peer killed with SIGKILL mid-transfer (error handling mode peer)",
      1 }
};

#define UC_NUM_TESTS (sizeof(uc_tests) / sizeof(uc_tests[0]))

static void uc_usage(void)
{
    size_t i;

    fprintf(stderr,
            "usage: ucp_check -r server|client -p PORT_FILE -t TEST [-s SEED]\n"
            "                 [-T TIMEOUT_S] [-n MIN_SIZE] [-m MAX_SIZE]"
            " [-e none|peer]\n"
            "tests:\n");
    for (i = 0; i < UC_NUM_TESTS; ++i) {
        fprintf(stderr, "  %-13s %s\n", uc_tests[i].name, uc_tests[i].what);
    }
    exit(2);
}

static size_t uc_parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);

    switch (*end) {
    case 'k': case 'K': v <<= 10; ++end; break;
    case 'm': case 'M': v <<= 20; ++end; break;
    }
    if ((*end != '\0') || (v > UC_MAX_SIZE)) {
        fprintf(stderr, "ucp_check: bad size '%s' (at most 64M)\n", s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    uc_t uc = {
        .sock     = -1,
        .seed     = 1,
        .timeout  = 60,
        .max_size = UC_MAX_SIZE,
        .err_mode = UCP_ERR_HANDLING_MODE_NONE,
        .name     = "?"
    };
    const char *role = NULL, *port_file = NULL, *test = NULL;
    size_t i;
    int c, ret;

    while ((c = getopt(argc, argv, "r:p:t:s:T:n:m:e:h")) != -1) {
        switch (c) {
        case 'r': role      = optarg; break;
        case 'p': port_file = optarg; break;
        case 't': test      = optarg; break;
        case 's': uc.seed   = strtoull(optarg, NULL, 0); break;
        case 'T': uc.timeout = atof(optarg); break;
        case 'n': uc.min_size = uc_parse_size(optarg); break;
        case 'm': uc.max_size = uc_parse_size(optarg); break;
        case 'e':
            if (!strcmp(optarg, "peer")) {
                uc.err_mode = UCP_ERR_HANDLING_MODE_PEER;
            } else if (strcmp(optarg, "none")) {
                uc_usage();
            }
            break;
        default:
            uc_usage();
        }
    }
    if ((role == NULL) || (port_file == NULL) || (test == NULL) ||
        (strcmp(role, "server") && strcmp(role, "client")) ||
        (uc.timeout <= 0) || (optind != argc)) {
        uc_usage();
    }
    uc.server = !strcmp(role, "server");
    uc.name   = role;

    for (i = 0; (i < UC_NUM_TESTS) && strcmp(uc_tests[i].name, test); ++i) {
    }
    if (i == UC_NUM_TESTS) {
        fprintf(stderr, "ucp_check: unknown test '%s'\n", test);
        uc_usage();
    }

    uc_log(&uc, "test %s: %s; UCX_TLS=%s seed %llu sizes %zu..%zu", test,
           uc_tests[i].what, getenv("UCX_TLS") ? getenv("UCX_TLS") : "(all)",
           (unsigned long long)uc.seed, uc.min_size, uc.max_size);
    uc_oob_connect(&uc, port_file);
    uc_init(&uc, uc_tests[i].features);
    uc_ep_create(&uc);

    ret = uc_tests[i].fn(&uc);

    if ((ret == 0) && !uc_tests[i].alone) {
        /* both sides done before anything is torn down */
        if (uc.ep != NULL) {
            uc_check_status(&uc, uc_ep_close(&uc, 0), "closing the endpoint");
        }
        uc_oob_barrier(&uc);
    }
    uc_cleanup(&uc);
    uc_log(&uc, "%s: %s", test, ret ? "FAILED" : "passed");
    return ret ? 1 : 0;
}

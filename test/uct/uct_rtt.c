/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * uct_rtt: RTT samples when a CPU is slow to poll. The client PUTs 8 bytes
 * N times, one at a time: after each PUT it sleeps -w ms without progress
 * (the ACK waits in its CQ meanwhile), then flushes. The server calls
 * progress and sleeps -r ms after each call (the PUT waits in its CQ).
 * rtt_pair.sh then reads the client's RTT samples (UCX_UCCL_STATS_DUMP:
 * cc_rtt_ns / cc_samples): with completion timestamps the fabric's, the
 * sleeps left out; without, the client's sleep counted in and the
 * server's more than taken out.
 *
 *   uct_rtt [-s] [-h host] [-p port] [-d dev] [-n puts] [-w ms] [-r ms]
 */
#include "uct_harness.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RTT_PUT_LEN 8

static struct {
    unsigned puts;
    unsigned client_sleep_ms;
    unsigned server_sleep_ms;
} g = { .puts = 40 };

/* has the client said it is done (uh_finish's byte on the socket)? */
static int client_done(void)
{
    struct pollfd pfd = { .fd = uh.sock, .events = POLLIN };

    return poll(&pfd, 1, 0) > 0;
}

static void server(void)
{
    double deadline = uh_now() + 60;

    while (!client_done()) {
        uh_progress();
        if (g.server_sleep_ms > 0) {
            usleep(g.server_sleep_ms * 1000);
        }
        if (uh_now() > deadline) {
            uh_die("the client did not finish within 60 s");
        }
    }
    printf("uct_rtt[server]: slept %u ms after each progress call\n",
           g.server_sleep_ms);
}

static void client(void)
{
    uint64_t value;
    unsigned i;

    for (i = 0; i < g.puts; ++i) {
        value = i;
        uh_check(UH_RETRY("put_short",
                          uct_ep_put_short(uh.ep, &value, RTT_PUT_LEN,
                                           uh.peer.buf_addr, uh.rkey.rkey)),
                 "put_short");
        if (g.client_sleep_ms > 0) {
            usleep(g.client_sleep_ms * 1000);
        }
        uh_flush();
    }
    printf("uct_rtt[client]: %u PUTs, slept %u ms after each\n", g.puts,
           g.client_sleep_ms);
}

int main(int argc, char **argv)
{
    int c;

    uh.name     = "uct_rtt";
    uh.buf_size = 4096;
    while ((c = getopt(argc, argv, "sh:p:d:n:w:r:")) != -1) {
        switch (c) {
        case 's': uh.server = 1; break;
        case 'h': uh.host = optarg; break;
        case 'p': uh.port = atoi(optarg); break;
        case 'd': uh.dev = optarg; break;
        case 'n': g.puts = atoi(optarg); break;
        case 'w': g.client_sleep_ms = atoi(optarg); break;
        case 'r': g.server_sleep_ms = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-s] [-h host] [-p port] [-d dev] "
                    "[-n puts] [-w client_sleep_ms] [-r server_sleep_ms]\n",
                    argv[0]);
            return 2;
        }
    }

    uh_setup();
    uh_exchange();
    uh.server ? server() : client();
    uh_finish();
    uh_teardown();
    printf("uct_rtt[%s]: OK\n", uh.server ? "server" : "client");
    return 0;
}

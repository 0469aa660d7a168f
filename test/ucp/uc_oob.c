/*
 * Out-of-band channel: a loopback TCP socket. The server binds an ephemeral
 * port and publishes it in a file (written then renamed, so the client never
 * reads half a number); the client waits for the file and connects.
 */
#include "ucp_check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void uc_oob_listen(uc_t *uc, const char *port_file)
{
    struct sockaddr_in sa = { .sin_family      = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    char tmp[4096];
    struct pollfd pfd;
    FILE *f;
    int lfd;

    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if ((lfd < 0) || bind(lfd, (struct sockaddr*)&sa, sizeof(sa)) ||
        listen(lfd, 1) || getsockname(lfd, (struct sockaddr*)&sa, &len)) {
        uc_fail(uc, "oob listen: %s", strerror(errno));
    }

    snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
    f = fopen(tmp, "w");
    if ((f == NULL) || (fprintf(f, "%u\n", ntohs(sa.sin_port)) < 0) ||
        fclose(f) || rename(tmp, port_file)) {
        uc_fail(uc, "cannot write port file %s: %s", port_file,
                strerror(errno));
    }

    pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
    if (poll(&pfd, 1, (int)(uc->timeout * 1000)) != 1) {
        uc_fail(uc, "no client connected within %.0f s", uc->timeout);
    }
    uc->sock = accept(lfd, NULL, NULL);
    if (uc->sock < 0) {
        uc_fail(uc, "oob accept: %s", strerror(errno));
    }
    close(lfd);
}

static void uc_oob_dial(uc_t *uc, const char *port_file)
{
    struct sockaddr_in sa = { .sin_family      = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    double deadline = uc_now() + uc->timeout;
    unsigned port = 0;
    FILE *f;

    while ((f = fopen(port_file, "r")) == NULL) {
        if (uc_now() > deadline) {
            uc_fail(uc, "port file %s did not appear within %.0f s",
                    port_file, uc->timeout);
        }
        usleep(10000);
    }
    if ((fscanf(f, "%u", &port) != 1) || (port == 0) || (port > 65535)) {
        uc_fail(uc, "bad port file %s", port_file);
    }
    fclose(f);

    sa.sin_port = htons(port);
    uc->sock    = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if ((uc->sock < 0) ||
        connect(uc->sock, (struct sockaddr*)&sa, sizeof(sa))) {
        uc_fail(uc, "oob connect to port %u: %s", port, strerror(errno));
    }
}

void uc_oob_connect(uc_t *uc, const char *port_file)
{
    int one = 1;

    if (uc->server) {
        uc_oob_listen(uc, port_file);
    } else {
        uc_oob_dial(uc, port_file);
    }
    setsockopt(uc->sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void uc_oob_send(uc_t *uc, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t ret;

    while (len > 0) {
        ret = send(uc->sock, p, len, MSG_NOSIGNAL);
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            uc_fail(uc, "oob send: %s", strerror(errno));
        }
        p   += ret;
        len -= ret;
    }
}

void uc_oob_recv(uc_t *uc, void *buf, size_t len)
{
    double deadline = uc_now() + uc->timeout;
    struct pollfd pfd = { .fd = uc->sock, .events = POLLIN };
    char *p = buf;
    ssize_t ret;

    while (len > 0) {
        /* keep our side of UCX moving while we wait: the peer may need it
         * to finish what it does before it answers */
        ret = poll(&pfd, 1, (uc->worker != NULL) ? 0 : 10);
        if (ret == 0) {
            if (uc_now() > deadline) {
                uc_fail(uc, "peer silent for %.0f s on the oob socket",
                        uc->timeout);
            }
            if (uc->worker != NULL) {
                ucp_worker_progress(uc->worker);
            }
            continue;
        }
        ret = recv(uc->sock, p, len, 0);
        if (ret == 0) {
            uc_fail(uc, "peer closed the oob socket (did it fail?)");
        } else if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            uc_fail(uc, "oob recv: %s", strerror(errno));
        }
        p   += ret;
        len -= ret;
    }
}

void uc_oob_barrier(uc_t *uc)
{
    char c = 'b';

    uc_oob_send(uc, &c, 1);
    uc_oob_recv(uc, &c, 1);
    if (c != 'b') {
        uc_fail(uc, "oob barrier: unexpected byte 0x%02x", c);
    }
}

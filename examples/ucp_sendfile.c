/*
 * ucp_sendfile: send a file with UCP tag messages and check it arrived
 * intact (64-bit FNV-1a of the bytes, computed on both sides).
 *
 *   ucp_sendfile FILE                       both ends in one command (fork)
 *   ucp_sendfile -l [-p PORT] [-o OUT]      receiver: wait for one file
 *   ucp_sendfile -c HOST [-p PORT] FILE     sender
 *
 * Run it through uccl-run with UCX_TLS=uccl,self to move the file over uccl.
 * The file goes in chunks (-s, default 16 MiB) straight from its mapping,
 * so large chunks use UCX's zero-copy rendezvous. Worker addresses are
 * exchanged over a plain TCP connection, which works with any transport
 * list. Exit status 0 only if both hashes match.
 */
#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SF_TAG_HDR    1
#define SF_TAG_DATA   2
#define SF_TAG_HASH   3
#define SF_TAG_REPLY  4
#define SF_WINDOW     4        /* chunks in flight */
#define SF_IDLE_S     60       /* no progress for this long: give up */

typedef struct {
    uint64_t size;
    uint64_t chunk;
} sf_hdr_t;

typedef struct {
    ucp_context_h ctx;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    int           sock;
    const char    *who;
} sf_t;

static void sf_die(const sf_t *sf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

static void sf_die(const sf_t *sf, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "ucp_sendfile %s: ", sf->who);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(1);
}

static double sf_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* 64-bit FNV-1a, continued from `h` */
static uint64_t sf_fnv1a(uint64_t h, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    size_t i;

    for (i = 0; i < len; ++i) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}

#define SF_FNV_INIT 0xcbf29ce484222325ull

static void sf_sock_io(sf_t *sf, void *buf, size_t len, int send_it)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = send_it ? send(sf->sock, p, len, MSG_NOSIGNAL) :
                      recv(sf->sock, p, len, 0);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        } else if (n <= 0) {
            sf_die(sf, "address exchange: %s", (n == 0) ? "peer closed" :
                   strerror(errno));
        }
        p   += n;
        len -= n;
    }
}

static ucs_status_t sf_wait(sf_t *sf, void *req, const char *what)
{
    double deadline = sf_now() + SF_IDLE_S;
    ucs_status_t status;

    if (req == NULL) {
        return UCS_OK;
    } else if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        if ((ucp_worker_progress(sf->worker) == 0) && (sf_now() > deadline)) {
            sf_die(sf, "%s: no progress for %d s", what, SF_IDLE_S);
        }
    }
    ucp_request_free(req);
    return status;
}

static void sf_check(sf_t *sf, ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        sf_die(sf, "%s: %s", what, ucs_status_string(status));
    }
}

/* UCP context, worker, and an endpoint to the peer whose worker address
 * comes over the socket (and ours goes the other way). */
static void sf_connect(sf_t *sf)
{
    ucp_params_t params = { .field_mask = UCP_PARAM_FIELD_FEATURES,
                            .features   = UCP_FEATURE_TAG };
    ucp_worker_params_t wparams = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE
    };
    ucp_ep_params_t eparams = { .field_mask =
                                UCP_EP_PARAM_FIELD_REMOTE_ADDRESS };
    ucp_address_t *addr;
    size_t addr_len;
    uint32_t len;
    void *peer;

    sf_check(sf, ucp_init(&params, NULL, &sf->ctx), "ucp_init");
    sf_check(sf, ucp_worker_create(sf->ctx, &wparams, &sf->worker),
             "ucp_worker_create");
    sf_check(sf, ucp_worker_get_address(sf->worker, &addr, &addr_len),
             "ucp_worker_get_address");
    len = htonl((uint32_t)addr_len);
    sf_sock_io(sf, &len, sizeof(len), 1);
    sf_sock_io(sf, addr, addr_len, 1);
    ucp_worker_release_address(sf->worker, addr);

    sf_sock_io(sf, &len, sizeof(len), 0);
    len = ntohl(len);
    if ((len == 0) || (len > 65536)) {
        sf_die(sf, "peer sent a %u-byte worker address", len);
    }
    peer = malloc(len);
    if (peer == NULL) {
        sf_die(sf, "out of memory");
    }
    sf_sock_io(sf, peer, len, 0);
    eparams.address = peer;
    sf_check(sf, ucp_ep_create(sf->worker, &eparams, &sf->ep),
             "ucp_ep_create");
    free(peer);
}

static void sf_close(sf_t *sf)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };
    char c = 0;

    /* a flushing close fails if the peer never acknowledged our last
     * messages: report it rather than claim a clean end */
    sf_check(sf, sf_wait(sf, ucp_ep_close_nbx(sf->ep, &param), "ep close"),
             "ep close");
    /* the peer is done with us too before the worker goes */
    sf_sock_io(sf, &c, 1, 1);
    sf_sock_io(sf, &c, 1, 0);
    ucp_worker_destroy(sf->worker);
    ucp_cleanup(sf->ctx);
    close(sf->sock);
}

static void *sf_recv(sf_t *sf, void *buf, size_t len, ucp_tag_t tag)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };

    return ucp_tag_recv_nbx(sf->worker, buf, len, tag, (ucp_tag_t)-1, &param);
}

static void *sf_send(sf_t *sf, const void *buf, size_t len, ucp_tag_t tag)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };

    return ucp_tag_send_nbx(sf->ep, buf, len, tag, &param);
}

static int sf_receiver(sf_t *sf, const char *out)
{
    uint64_t h = SF_FNV_INIT, theirs = 0, off, n;
    sf_hdr_t hdr;
    uint8_t *buf;
    double t0;
    int fd = -1;

    sf_check(sf, sf_wait(sf, sf_recv(sf, &hdr, sizeof(hdr), SF_TAG_HDR),
                         "header"), "receiving the header");
    if ((hdr.chunk == 0) || (hdr.chunk > (1ull << 30))) {
        sf_die(sf, "bad chunk size %llu", (unsigned long long)hdr.chunk);
    }
    buf = malloc(hdr.chunk);
    if (buf == NULL) {
        sf_die(sf, "out of memory for a %llu-byte chunk",
               (unsigned long long)hdr.chunk);
    }
    if ((out != NULL) &&
        ((fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)) {
        sf_die(sf, "%s: %s", out, strerror(errno));
    }

    t0 = sf_now();
    for (off = 0; off < hdr.size; off += n) {
        n = (hdr.size - off < hdr.chunk) ? hdr.size - off : hdr.chunk;
        sf_check(sf, sf_wait(sf, sf_recv(sf, buf, n, SF_TAG_DATA), "data"),
                 "receiving data");
        h = sf_fnv1a(h, buf, n);
        if ((fd >= 0) && (write(fd, buf, n) != (ssize_t)n)) {
            sf_die(sf, "writing %s: %s", out, strerror(errno));
        }
    }
    t0 = sf_now() - t0;
    if ((fd >= 0) && close(fd)) {
        sf_die(sf, "closing %s: %s", out, strerror(errno));
    }

    sf_check(sf, sf_wait(sf, sf_recv(sf, &theirs, sizeof(theirs),
                                     SF_TAG_HASH), "hash"), "receiving hash");
    sf_check(sf, sf_wait(sf, sf_send(sf, &h, sizeof(h), SF_TAG_REPLY),
                         "reply"), "sending hash");
    printf("receiver: %llu bytes in %.3f s (%.1f MB/s)%s%s\n"
           "receiver: fnv1a64 sender 0x%016llx receiver 0x%016llx: %s\n",
           (unsigned long long)hdr.size, t0, hdr.size / 1e6 / (t0 + 1e-9),
           out ? ", written to " : "", out ? out : "",
           (unsigned long long)theirs, (unsigned long long)h,
           (theirs == h) ? "match" : "MISMATCH");
    free(buf);
    return theirs == h ? 0 : 1;
}

static int sf_sender(sf_t *sf, const char *path, uint64_t chunk)
{
    sf_hdr_t hdr = { .chunk = chunk };
    void *reqs[SF_WINDOW] = { NULL };
    uint64_t h, theirs = 0, off, n;
    const uint8_t *map = NULL;
    struct stat st;
    unsigned k = 0;
    double t0;
    int fd;

    fd = open(path, O_RDONLY);
    if ((fd < 0) || fstat(fd, &st)) {
        sf_die(sf, "%s: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        sf_die(sf, "%s: not a regular file", path);
    }
    hdr.size = st.st_size;
    if (hdr.size > 0) {
        map = mmap(NULL, hdr.size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            sf_die(sf, "mmap %s: %s", path, strerror(errno));
        }
    }
    h = sf_fnv1a(SF_FNV_INIT, map, hdr.size);

    t0 = sf_now();
    sf_check(sf, sf_wait(sf, sf_send(sf, &hdr, sizeof(hdr), SF_TAG_HDR),
                         "header"), "sending the header");
    for (off = 0; off < hdr.size; off += n, k = (k + 1) % SF_WINDOW) {
        n = (hdr.size - off < chunk) ? hdr.size - off : chunk;
        /* reuse a window slot once its previous chunk has left */
        sf_check(sf, sf_wait(sf, reqs[k], "data"), "sending data");
        reqs[k] = sf_send(sf, map + off, n, SF_TAG_DATA);
    }
    for (k = 0; k < SF_WINDOW; ++k) {
        sf_check(sf, sf_wait(sf, reqs[k], "data"), "sending data");
    }
    sf_check(sf, sf_wait(sf, sf_send(sf, &h, sizeof(h), SF_TAG_HASH),
                         "hash"), "sending the hash");
    sf_check(sf, sf_wait(sf, sf_recv(sf, &theirs, sizeof(theirs),
                                     SF_TAG_REPLY), "reply"),
             "receiving the receiver's hash");
    t0 = sf_now() - t0;

    printf("sender: %s, %llu bytes in chunks of %llu, %.3f s (%.1f MB/s)\n"
           "sender: fnv1a64 sender 0x%016llx receiver 0x%016llx: %s\n",
           path, (unsigned long long)hdr.size, (unsigned long long)chunk, t0,
           hdr.size / 1e6 / (t0 + 1e-9), (unsigned long long)h,
           (unsigned long long)theirs, (theirs == h) ? "match" : "MISMATCH");
    if (map != NULL) {
        munmap((void*)map, hdr.size);
    }
    close(fd);
    return theirs == h ? 0 : 1;
}

/* Listen on PORT (0: any; the port goes to port_fd if >= 0, and then the
 * sender must come within SF_IDLE_S), accept one. */
static void sf_listen(sf_t *sf, int port, int port_fd)
{
    struct pollfd pfd;
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_port   = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_ANY) };
    socklen_t len = sizeof(sa);
    int lfd, one = 1;
    uint16_t p;

    lfd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if ((lfd < 0) || bind(lfd, (struct sockaddr*)&sa, sizeof(sa)) ||
        listen(lfd, 1) || getsockname(lfd, (struct sockaddr*)&sa, &len)) {
        sf_die(sf, "listen on port %d: %s", port, strerror(errno));
    }
    p = ntohs(sa.sin_port);
    if (port_fd >= 0) {
        if (write(port_fd, &p, sizeof(p)) != sizeof(p)) {
            sf_die(sf, "cannot pass the port on");
        }
        close(port_fd);
    } else {
        printf("receiver: waiting on port %u\n", p);
        fflush(stdout);
    }
    pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
    if ((port_fd >= 0) && (poll(&pfd, 1, SF_IDLE_S * 1000) != 1)) {
        sf_die(sf, "no sender within %d s", SF_IDLE_S);
    }
    sf->sock = accept(lfd, NULL, NULL);
    if (sf->sock < 0) {
        sf_die(sf, "accept: %s", strerror(errno));
    }
    close(lfd);
}

static void sf_dial(sf_t *sf, const char *host, int port)
{
    struct addrinfo hints = { .ai_family = AF_INET,
                              .ai_socktype = SOCK_STREAM }, *ai;
    char service[16];
    int ret;

    snprintf(service, sizeof(service), "%d", port);
    ret = getaddrinfo(host, service, &hints, &ai);
    if (ret != 0) {
        sf_die(sf, "%s: %s", host, gai_strerror(ret));
    }
    sf->sock = socket(AF_INET, SOCK_STREAM, 0);
    if ((sf->sock < 0) || connect(sf->sock, ai->ai_addr, ai->ai_addrlen)) {
        sf_die(sf, "connect to %s:%d: %s", host, port, strerror(errno));
    }
    freeaddrinfo(ai);
}

/* A byte count with an optional k/M/G suffix; 0 on anything else. */
static unsigned long long sf_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);

    switch (*end) {
    case 'k': case 'K': v <<= 10; ++end; break;
    case 'm': case 'M': v <<= 20; ++end; break;
    case 'g': case 'G': v <<= 30; ++end; break;
    }
    return (*end == '\0') ? v : 0;
}

static void sf_usage(void)
{
    fprintf(stderr,
            "usage: ucp_sendfile [-s CHUNK] [-o OUT] FILE (both ends here)\n"
            "       ucp_sendfile -l [-p PORT] [-o OUT]   (receiver)\n"
            "       ucp_sendfile -c HOST [-p PORT] [-s CHUNK] FILE"
            " (sender)\n"
            "CHUNK: bytes per message, k/M/G suffixes, at most 1G"
            " (default 16M)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    sf_t sf = { .sock = -1, .who = "sender" };
    const char *host = NULL, *out = NULL, *path = NULL;
    int c, listen_mode = 0, port = 13370, pfd[2], status, ret;
    unsigned long long chunk = 16ull << 20;
    uint16_t p;
    pid_t pid;

    while ((c = getopt(argc, argv, "lc:p:o:s:h")) != -1) {
        switch (c) {
        case 'l': listen_mode = 1; break;
        case 'c': host = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 'o': out = optarg; break;
        case 's': chunk = sf_size(optarg); break;
        default:  sf_usage();
        }
    }
    if ((listen_mode && (host != NULL)) || (port < 0) || (port > 65535) ||
        (chunk == 0) || (chunk > (1ull << 30))) {
        sf_usage();
    }
    if (listen_mode) {
        if (optind != argc) {
            sf_usage();
        }
        sf.who = "receiver";
        sf_listen(&sf, port, -1);
        sf_connect(&sf);
        ret = sf_receiver(&sf, out);
        sf_close(&sf);
        return ret;
    }
    if (optind != argc - 1) {
        sf_usage();
    }
    path = argv[optind];
    if (access(path, R_OK)) {
        sf_die(&sf, "%s: %s", path, strerror(errno));
    }
    if (host != NULL) {
        sf_dial(&sf, host, port);
        sf_connect(&sf);
        ret = sf_sender(&sf, path, chunk);
        sf_close(&sf);
        return ret;
    }

    /* both ends: fork before UCX is touched; the child receives */
    if (pipe(pfd)) {
        sf_die(&sf, "pipe: %s", strerror(errno));
    }
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        sf_die(&sf, "fork: %s", strerror(errno));
    } else if (pid == 0) {
        close(pfd[0]);
        sf.who = "receiver";
        sf_listen(&sf, 0, pfd[1]);
        sf_connect(&sf);
        ret = sf_receiver(&sf, out);
        sf_close(&sf);
        fflush(stdout);
        _exit(ret);
    }
    close(pfd[1]);
    if (read(pfd[0], &p, sizeof(p)) != sizeof(p)) {
        sf_die(&sf, "the receiver did not start");
    }
    close(pfd[0]);
    sf_dial(&sf, "127.0.0.1", p);
    sf_connect(&sf);
    ret = sf_sender(&sf, path, chunk);
    sf_close(&sf);
    if ((waitpid(pid, &status, 0) != pid) || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0)) {
        ret = 1;
    }
    return ret;
}

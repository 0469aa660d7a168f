/*
 * Counters: per port (in the fabric port table, next to the model's wire
 * counters) and per core path.  SOFTVERBS_STATS=FILE writes this process's
 * ports and all paths at exit; softverbs-stat prints a live fabric.
 * Format: one "key value" per line, '#' starts a comment.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_fabric.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SV_STATS_CLOSED_MAX 64

typedef struct sv_stats_snap {
    unsigned            port, dev;
    sv_port_stats_t     st;
    sv_model_counters_t tx, rx;
} sv_stats_snap_t;

static pthread_mutex_t sv_stats_lock = PTHREAD_MUTEX_INITIALIZER;
static sv_stats_snap_t sv_stats_closed[SV_STATS_CLOSED_MAX];
static unsigned        sv_stats_nclosed;

/* A port about to be freed: keep its counters for the exit dump. */
void sv_stats_port_closed(unsigned port, unsigned dev)
{
    sv_stats_snap_t *s;

    pthread_mutex_lock(&sv_stats_lock);
    if (sv_stats_nclosed < SV_STATS_CLOSED_MAX) {
        s       = &sv_stats_closed[sv_stats_nclosed++];
        s->port = port;
        s->dev  = dev;
        s->st   = sv_fabric->port[port].stats;
        sv_model_port_counters(port, &s->tx, &s->rx);
    }
    pthread_mutex_unlock(&sv_stats_lock);
}

/* The model's counters of one link: "<obj>.<i>.<dir>pkts" ...; a sender's
 * link never tail-drops, so `queue_drops` only where it can. */
static void sv_stats_print_link(FILE *f, const char *obj, unsigned i,
                                const char *dir, const sv_model_counters_t *c,
                                int can_drop)
{
#define SV_STATS_LINK(_key, _val) \
    fprintf(f, "%s.%u.%s%s %llu\n", obj, i, dir, _key, \
            (unsigned long long)(_val));

    SV_STATS_LINK("pkts", c->pkts)
    SV_STATS_LINK("bytes", c->bytes)
    SV_STATS_LINK("drops", c->drops)
    SV_STATS_LINK("queue_bytes", c->q_bytes)
    SV_STATS_LINK("queue_max", c->q_max)
    if (can_drop) {
        SV_STATS_LINK("queue_drops", c->q_drops)
    }
#undef SV_STATS_LINK
}

static void sv_stats_print_port(FILE *f, const sv_stats_snap_t *s,
                                const char *state, int pid)
{
#define SV_STATS_PRINT(_name) \
    fprintf(f, "port.%u.%s %llu\n", s->port, #_name, \
            (unsigned long long)s->st._name);

    fprintf(f, "port.%u.dev sv%u\n", s->port, s->dev);
    fprintf(f, "port.%u.lid %u\n", s->port, s->port + 1);
    fprintf(f, "port.%u.pid %d\n", s->port, pid);
    fprintf(f, "port.%u.state %s\n", s->port, state);
    SV_PORT_STATS_FIELDS(SV_STATS_PRINT)
    sv_stats_print_link(f, "port", s->port, "tx_", &s->tx, 0);
    sv_stats_print_link(f, "port", s->port, "rx_", &s->rx, 1);
#undef SV_STATS_PRINT
}

/* all_ports: every port in use (softverbs-stat); else this process's. */
void sv_stats_dump(FILE *f, int all_ports)
{
    sv_port_entry_t *e;
    sv_model_counters_t c;
    sv_stats_snap_t s;
    unsigned i, n;

    fprintf(f, "# softverbs counters (src/softverbs/README.md)\n");
    fprintf(f, "fabric %s\n", sv_fabric_name);
    if (!all_ports) {
        fprintf(f, "pid %d\n", getpid());
    }
    fprintf(f, "model.active %d\n", sv_model_active());
    fprintf(f, "model.mtu %u\n", sv_model_mtu());
    fprintf(f, "model.paths %u\n", sv_model_num_paths());
    /* CLOCK_MONOTONIC ns: what SOFTVERBS_PATH_DOWN's windows count from */
    fprintf(f, "model.epoch_ns %llu\n",
            (unsigned long long)sv_model_epoch_ns());

    pthread_mutex_lock(&sv_stats_lock);
    for (i = 0; !all_ports && (i < sv_stats_nclosed); ++i) {
        sv_stats_print_port(f, &sv_stats_closed[i], "closed", getpid());
    }
    pthread_mutex_unlock(&sv_stats_lock);
    for (i = 0; i < SV_MODEL_MAX_PORTS; ++i) {
        e = &sv_fabric->port[i];
        if (SV_LOAD(&e->state) != SV_PORT_USED) {
            continue;
        }
        if (!all_ports && (e->pid != getpid())) {
            continue;
        }
        s.port = i;
        s.dev  = e->dev;
        s.st   = e->stats;
        sv_model_port_counters(i, &s.tx, &s.rx);
        sv_stats_print_port(f, &s,
                            sv_fabric_pid_alive(e->pid, e->starttime) ?
                            "open" : "dead", e->pid);
        if (all_ports) {
            fprintf(f, "port.%u.comm %.*s\n", i, (int)sizeof(e->comm),
                    e->comm);
        }
    }
    n = sv_model_num_paths();
    for (i = 0; i < n; ++i) {
        sv_model_path_counters(i, &c);
        sv_stats_print_link(f, "path", i, "", &c, 1);
    }
}

/* SOFTVERBS_STATS=FILE ("%p" in FILE becomes the pid; "-" is stderr). */
/* Called by the fabric's exit handler, before it releases our ports. */
void sv_stats_exit_dump(void)
{
    const char *spec = getenv("SOFTVERBS_STATS");
    char path[4096], *p;
    size_t len = 0;
    FILE *f;

    if ((spec == NULL) || (*spec == '\0') || (sv_fabric == NULL)) {
        return;
    }
    for (; *spec && (len + 16 < sizeof(path)); ++spec) {
        if ((spec[0] == '%') && (spec[1] == 'p')) {
            len += snprintf(path + len, sizeof(path) - len, "%d", getpid());
            ++spec;
        } else {
            path[len++] = *spec;
        }
    }
    path[len] = '\0';
    p = path;
    if (strcmp(p, "-") == 0) {
        sv_stats_dump(stderr, 0);
        return;
    }
    f = fopen(p, "w");
    if (f == NULL) {
        sv_log("SOFTVERBS_STATS: cannot write %s", p);
        return;
    }
    sv_stats_dump(f, 0);
    fclose(f);
}

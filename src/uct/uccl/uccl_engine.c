/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The engine: one progress pass polls the receive, control and send CQs,
 * runs the timers, sends the ACKs owed and has the scheduler transmit
 * (uccl_sched.c); counters dumped on request.
 */
#include "uccl_tx.h"

#include <ucs/debug/log.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


/* ------------------------------------------------------------------------ */
/* Progress                                                                 */
/* ------------------------------------------------------------------------ */

double uct_uccl_ns_per_tick;

static uint64_t uct_uccl_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UCS_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* UCS's time and CLOCK_MONOTONIC's at once (within CLOCK_PAIR_NS); 0 if
 * no try managed it */
static int uct_uccl_clock_pair(ucs_time_t *ticks, uint64_t *mono_ns)
{
    uint64_t before, after;
    unsigned i;

    for (i = 0; i < UCT_UCCL_CLOCK_PAIR_TRIES; ++i) {
        before = uct_uccl_mono_ns();
        *ticks = ucs_get_time();
        after  = uct_uccl_mono_ns();
        if (after - before <= UCT_UCCL_CLOCK_PAIR_NS) {
            *mono_ns = before + (after - before) / 2;
            return 1;
        }
    }
    return 0;
}

/* UCS calibrates the TSC once, over at most 1 ms against gettimeofday: a
 * process descheduled meanwhile (a loaded host) gets a rate that is off by
 * percents, and every rate and timeout of ours would be off as much (a
 * pacer whose clock runs 8% fast grants 8% more than its share). So the
 * rate is measured over CLOCK_CAL_NS against CLOCK_MONOTONIC; UCS's stays
 * when the clocks cannot be read together. */
static void uct_uccl_clock_calibrate(void)
{
    const struct timespec gap = {
        .tv_sec  = UCT_UCCL_CLOCK_CAL_NS / UCS_NSEC_PER_SEC,
        .tv_nsec = UCT_UCCL_CLOCK_CAL_NS % UCS_NSEC_PER_SEC
    };
    double rate = UCS_NSEC_PER_SEC / ucs_time_sec_value();
    ucs_time_t ticks0, ticks1;
    uint64_t mono0, mono1;

    if (uct_uccl_clock_pair(&ticks0, &mono0)) {
        (void)nanosleep(&gap, NULL);
        if (uct_uccl_clock_pair(&ticks1, &mono1) && (ticks1 > ticks0) &&
            (mono1 - mono0 >= UCT_UCCL_CLOCK_CAL_NS)) {
            rate = (double)(mono1 - mono0) / (double)(ticks1 - ticks0);
        }
    }
    ucs_debug("uccl: %.6f ns per UCS time unit (UCS: %.6f)", rate,
              UCS_NSEC_PER_SEC / ucs_time_sec_value());
    uct_uccl_ns_per_tick = rate;
}

/* Once per process: threads that race here wait for the first, so that
 * no timestamp is taken at another rate */
void uct_uccl_clock_rate_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    (void)pthread_once(&once, uct_uccl_clock_calibrate);
}

static unsigned uct_uccl_iface_poll_send(uct_uccl_iface_t *iface)
{
    struct ibv_wc wcs[UCT_UCCL_CQ_BATCH];
    int i, n;

    n = ibv_poll_cq(iface->send_cq, UCT_UCCL_CQ_BATCH, wcs);
    if (n < 0) {
        ucs_error("uccl: send CQ poll failed: %d", n);
        return 0;
    }
    iface->stats.send_cqes += n;
    iface->tx_drained       = (n < UCT_UCCL_CQ_BATCH);
    for (i = 0; i < n; ++i) {
        uct_uccl_tx_completion(iface, &wcs[i]);
    }
    return n;
}

/* Drain the receive CQ in batches, at most one SRQ's worth per call: so a
 * receive queue that ran dry is seen as such (srq_posted reaches 0). With
 * completion timestamps each completion arrived when its timestamp says;
 * without, after the poll before and no later than this poll. */
static unsigned uct_uccl_iface_poll_recv(uct_uccl_iface_t *iface)
{
    struct ibv_wc wcs[UCT_UCCL_CQ_BATCH];
    uint64_t ts[UCT_UCCL_CQ_BATCH];
    int stamped    = (iface->recv_cq_ex != NULL);
    unsigned total = 0;
    uint64_t now;
    int n;

    if (!stamped) {
        now                = uct_uccl_now_ns();
        iface->rx_since_ns = (iface->rx_poll_ns != 0) ? iface->rx_poll_ns :
                                                        now;
        iface->rx_poll_ns  = now;
        iface->rx_cqe_ns   = now;
    }
    do {
        n = stamped ? uct_uccl_iface_recv_read_ts(iface, wcs, ts,
                                                  UCT_UCCL_CQ_BATCH) :
                      ibv_poll_cq(iface->recv_cq, UCT_UCCL_CQ_BATCH, wcs);
        if (n < 0) {
            ucs_error("uccl: receive CQ poll failed: %d", n);
            break;
        }
        if (n > 0) {
            uct_uccl_rx_completions(iface, wcs, stamped ? ts : NULL, n);
        }
        /* control buffers go back per batch: a flood of requests must not
         * hold them all while the replies to our own requests arrive */
        if (iface->ctl.nrepost > 0) {
            uct_uccl_iface_ctl_repost(iface);
        }
        total += n;
    } while ((n == UCT_UCCL_CQ_BATCH) && (total < iface->config.srq_size));

    return total;
}

/* SIGUSR2 asks every iface for a counter dump (UCX_UCCL_STATS_DUMP=y) */
static volatile sig_atomic_t uct_uccl_dump_requests;

static void uct_uccl_sigusr2(int signo)
{
    ++uct_uccl_dump_requests;
}


/* One run of the engine, from the user's progress call or a background
 * pass (uccl_async.c), with the async context blocked. The ACKs the last
 * pass's AMs carried come first; the receive CQ (data and control) is
 * polled always, the send CQs only while WRs are out, the pacing wheel
 * swept only while a conn waits on it. */
unsigned uct_uccl_iface_engine_progress(uct_uccl_iface_t *iface)
{
    unsigned count;
    uint64_t now;

    count = 0;
    ++iface->pass;
    if (!ucs_list_is_empty(&iface->acks_in)) {
        count = uct_uccl_rx_acks_in(iface);
    }
    count += uct_uccl_iface_poll_recv(iface);
    if (iface->ctl.tx_nfree < UCT_UCCL_CTL_TX_DEPTH) {
        count += uct_uccl_iface_poll_ctl_tx(iface);
    }
    if (iface->tx_outstanding > 0) {
        count += uct_uccl_iface_poll_send(iface);
    }

    /* read after the polls: what they did stamped conns with later times */
    now = uct_uccl_now_ns();
    if (iface->tx_drained) {
        iface->tx_drained    = 0;
        iface->tx_drained_ns = now;
    }
    if (!iface->async.active) {
        iface->async.last_user = now;
    }
    if (now >= iface->next_timer) {
        iface->next_timer = now + UCT_UCCL_TIMER_NS;
        uct_uccl_conn_timers(iface, now);
        uct_uccl_stats_iface_sync(iface);
        if (ucs_unlikely(iface->dump_seen != uct_uccl_dump_requests)) {
            iface->dump_seen = uct_uccl_dump_requests;
            uct_uccl_iface_dump_all(iface);
        }
    }

    /* ACKs first: a transmit may copy megabytes (on softverbs the post
     * itself moves the data), and the peer would take the wait for loss */
    if (uct_uccl_rx_acks_owed(iface)) {
        count += uct_uccl_rx_flush_acks(iface, now);
    }
    if (iface->paced > 0) {
        ucs_twheel_sweep(&iface->pace_wheel, ucs_get_time());
    }
    count += uct_uccl_sched_transmit(iface);
    if (uct_uccl_rx_refill_due(iface)) {
        uct_uccl_rx_refill(iface);
    }
    return count;
}


static const char *const uct_uccl_iface_counter_names[] = {
    UCT_UCCL_IFACE_COUNTERS(UCT_UCCL_COUNTER_NAME)
};

static const char *const uct_uccl_conn_counter_names[] = {
    UCT_UCCL_CONN_COUNTERS(UCT_UCCL_COUNTER_NAME)
};

/* A counters struct is its uint64_t fields in the order of its list */
_Static_assert(sizeof(uct_uccl_iface_stats_t) ==
               sizeof(uint64_t) * ucs_static_array_size(
                                      uct_uccl_iface_counter_names),
               "iface counters are an array");
_Static_assert(sizeof(uct_uccl_conn_stats_t) ==
               sizeof(uint64_t) * ucs_static_array_size(
                                      uct_uccl_conn_counter_names),
               "conn counters are an array");

static void uct_uccl_counters_dump(FILE *stream, const char *const *names,
                                   const void *counters, size_t size)
{
    const uint64_t *value = counters;
    size_t i;

    for (i = 0; i < size / sizeof(*value); ++i) {
        fprintf(stream, " %s %lu", names[i], value[i]);
    }
}

void uct_uccl_conn_dump_counters(const uct_uccl_conn_t *conn, FILE *stream)
{
    uct_uccl_counters_dump(stream, uct_uccl_conn_counter_names, &conn->stats,
                           sizeof(conn->stats));
}

/* How far our clock (the TSC at the rate uct_uccl_clock_calibrate
 * measured) ran from the kernel's since the iface opened, in parts per
 * million: the pacer grants its rate in our clock's time, so a clock that
 * runs fast grants too much */
static double uct_uccl_iface_clock_ppm(const uct_uccl_iface_t *iface)
{
    uint64_t mono = uct_uccl_mono_ns() - iface->dump_mono0;

    return (mono == 0) ? 0 :
           ((double)(uct_uccl_now_ns() - iface->dump_clock0) / mono - 1) * 1e6;
}

void uct_uccl_iface_dump_stats(uct_uccl_iface_t *iface)
{
    fprintf(stderr, "uccl[%d] iface %s:%d mode %s cq_ts %s:", getpid(),
            iface->md->name, iface->port_num, iface->rc_mode ? "rc" : "uc",
            (iface->cq_ts == UCT_UCCL_CQ_TS_RAW)       ? "raw" :
            (iface->cq_ts == UCT_UCCL_CQ_TS_WALLCLOCK) ? "wallclock" :
                                                         "none");
    uct_uccl_counters_dump(stderr, uct_uccl_iface_counter_names,
                           &iface->stats, sizeof(iface->stats));
    if (iface->credit.on) {
        fprintf(stderr, " pacer_granted %lu pacer_pulled %lu pacer_charged %lu"
                " pacer_out %lu pacer_out_peak %lu pacer_held %lu"
                " pacer_forgot %lu", iface->credit.pacer.granted_bytes,
                iface->credit.pacer.pulled_bytes,
                iface->credit.pacer.charged_bytes, iface->credit.pacer.out,
                iface->credit.pacer.out_peak, iface->credit.pacer.held,
                iface->credit.pacer.forgot);
    }
    fprintf(stderr, " clock_ppm %.0f", uct_uccl_iface_clock_ppm(iface));
    fputc('\n', stderr);
}

void uct_uccl_iface_dump_all(uct_uccl_iface_t *iface)
{
    uct_uccl_conn_t *conn;

    uct_uccl_iface_dump_stats(iface);
    ucs_list_for_each(conn, &iface->conns, list) {
        uct_uccl_conn_dump_stats(conn, stderr);
    }
}

static void uct_uccl_iface_signal_init(void)
{
    struct sigaction sa, old;

    if ((sigaction(SIGUSR2, NULL, &old) != 0) ||
        (old.sa_handler != SIG_DFL)) {
        return; /* the application's signal */
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = uct_uccl_sigusr2;
    sa.sa_flags   = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGUSR2, &sa, NULL);
}


/* Counters on SIGUSR2 and at close when UCX_UCCL_STATS_DUMP=y */
void uct_uccl_iface_dump_init(uct_uccl_iface_t *iface)
{
    if (iface->config.stats_dump) {
        uct_uccl_iface_signal_init();
    }
    iface->dump_seen   = uct_uccl_dump_requests;
    iface->dump_clock0 = uct_uccl_now_ns();
    iface->dump_mono0  = uct_uccl_mono_ns();
}

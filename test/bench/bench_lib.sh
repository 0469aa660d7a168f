# Sourced by the benchmark scripts: server/client pairs on fresh fabrics
# and fresh ports, medians.
#
# Callers set run (the uccl-run launcher), tmp (a scratch directory) and
# tmo (seconds per process), by bench_setup or themselves. bench_port_init
# picks a first port; every pair takes the next one (bump it in the
# calling shell, not in a $(...) subshell, or every pair reuses one port
# and one fabric).

. "$(dirname "$0")/../uct/listen.sh"

bench_port_init() {
    port=${BENCH_PORT:-$((30000 + $$ % 10000))}
    fab=${BENCH_FABRIC:-bench$$}
}

# bench_setup BUILDDIR TIMEOUT: run is BUILDDIR's launcher, tmo TIMEOUT,
# tmp a scratch directory removed at exit; the first port
bench_setup() {
    run=$1/contrib/uccl-run
    touch_lib=$1/.libs/libbench_touch.so
    tmo=$2
    tmp=$(mktemp -d) || exit 1
    trap 'rm -rf "$tmp"' EXIT
    bench_port_init
}

# bench_next_port: the port (and fabric) of the next pair
bench_next_port() {
    port=$((port + 1))
}

# bench_rt: the prefix that runs a pair's process under SCHED_FIFO at
# priority BENCH_RT (unset: none). Two spinning processes then keep the
# machine's two cores against other load, so one pair's figures are
# those of a quiet machine; everything else gets the kernel's RT
# throttling slack (5%) meanwhile, which a hung pair keeps for its whole
# timeout. Pairs only: NetPIPE's ranks wait for mpirun's threads, which a
# spinning rank at the same priority never lets run.
bench_rt() {
    if [ -n "${BENCH_RT:-}" ]; then
        echo "chrt -f $BENCH_RT"
    fi
}

# bench_touch: with BENCH_TOUCH=1, the assignment that preloads
# bench_touch.c's library into a pair: the memory ucp_mem_map allocates
# is written before the program sees it (ucx_perftest never writes its UCP
# buffers, and an RDMA READ of unwritten memory costs softverbs less than
# one of an application's data)
bench_touch() {
    if [ "${BENCH_TOUCH:-0}" = 1 ]; then
        echo "LD_PRELOAD=$touch_lib${LD_PRELOAD:+:$LD_PRELOAD}"
    fi
}

# bench_pair SERVER_CMD... -- CLIENT_CMD...: both under $run on the fabric
# of $port, server on core 0, client on core 1 once the server listens on
# $port; prints the client's output (the server's is in $tmp/srv.log).
# Environment assignments for both may be given in BENCH_ENV; BENCH_RT
# runs both under SCHED_FIFO (bench_rt); BENCH_TOUCH=1 writes their UCP
# buffers first (bench_touch).
bench_pair() {
    _srv=""
    while [ "$1" != "--" ]; do _srv="$_srv $1"; shift; done
    shift
    # shellcheck disable=SC2046,SC2086
    env SOFTVERBS_FABRIC="${fab}_$port" $(bench_touch) ${BENCH_ENV:-} \
        timeout -k 5 "$tmo" taskset -c 0 $(bench_rt) "$run" $_srv \
        >"$tmp/srv.log" 2>&1 &
    _pid=$!
    if uccl_wait_listen "$port" $_pid; then
        # shellcheck disable=SC2046,SC2086
        env SOFTVERBS_FABRIC="${fab}_$port" $(bench_touch) ${BENCH_ENV:-} \
            timeout -k 5 "$tmo" taskset -c 1 $(bench_rt) "$run" "$@" 2>&1
    fi
    wait $_pid 2>/dev/null
    rm -f "/dev/shm/softverbs.${fab}_$port" \
          "/dev/shm/softverbs.${fab}_$port".*
}

# bench_netpipe ENV LOW HIGH ITERS: NetPIPE (Open MPI, two ranks on two
# cores) from LOW to HIGH bytes, ITERS round trips a trial, under $run with
# ENV's VAR=VALUE words on the fabric of $port; its output in $tmp/np.out
# (removed first: a failed run leaves none)
bench_netpipe() {
    rm -f "$tmp/np.out"
    # shellcheck disable=SC2086
    env $1 SOFTVERBS_FABRIC="${fab}_np$port" timeout "$tmo" "$run" \
        mpirun -np 2 --bind-to core NPopenmpi -l "$2" -u "$3" -p 0 \
        -n "$4" -o "$tmp/np.out" >/dev/null 2>&1
    rm -f "/dev/shm/softverbs.${fab}_np$port" \
          "/dev/shm/softverbs.${fab}_np$port".*
}

# bench_median FILE: the median of the numbers in FILE (one per line)
bench_median() {
    grep -v '^$' "$1" 2>/dev/null | sort -g |
        awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'
}

# bench_ratio A B: A / B with two decimals, or n/a
bench_ratio() {
    awk -v a="$1" -v b="$2" \
        'BEGIN {if (a > 0 && b > 0) printf "%.2f", a / b; else print "n/a"}'
}

# bench_rotate N ITEMS...: the items rotated left by N (round N starts
# with a different one, so no item always runs first)
bench_rotate() {
    _n=$(($1 % ($# - 1)))
    shift
    _i=0
    for _x in "$@"; do
        [ $_i -ge $_n ] && printf '%s\n' "$_x"
        _i=$((_i + 1))
    done
    _i=0
    for _x in "$@"; do
        [ $_i -lt $_n ] && printf '%s\n' "$_x"
        _i=$((_i + 1))
    done
}

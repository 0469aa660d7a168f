#!/bin/sh
#
# Benchmark: one ucx_perftest measurement under several configurations
# (builds or settings), side by side in one run: every round runs each
# configuration once, in an order that rotates, on a fresh fabric; the
# summary gives each configuration's median and its ratio to the first.
#
#   uccl_ab.sh BUILDDIR "NAME|ENV" ... -- PERFTEST_ARGS...
#
# ENV is a set of assignments for both processes, e.g.
#   "main|UCX_TLS=uccl,self"
#   "base|UCX_TLS=uccl,self UCCL_LIBDIR=/other/build/.libs"
#   "vb|UCX_TLS=rc_verbs,ud_verbs,self"
# PERFTEST_ARGS are the client's (UCT tests need -x TL -d sv0:1; an
# argument @TL stands for the config's AB_TL, e.g. "vb|AB_TL=rc_verbs
# UCX_TLS=rc_verbs,ud_verbs,self" beside "uc|AB_TL=uccl ...", so one run
# compares UCT transports; AB_TL itself is not passed on). A latency
# test is read by ucx_perftest's typical (50th percentile) latency in us
# (the average weighs the few iterations a descheduled process waits), a
# bandwidth test by its overall MB/s.
#
#   uccl_ab.sh BUILDDIR "NAME|ENV" ... -- np [SIZE]
#
# runs NetPIPE instead (Open MPI, pml ucx, two ranks; ENV as above): its
# latency at SIZE bytes (8) in the typical and average columns (NetPIPE's
# own figure: the best of its trials, each the mean of AB_NP_ITERS round
# trips) and its bandwidth there in MB/s.
#
# AB_ROUNDS (5), AB_TIMEOUT (120 s per process), AB_NP_ITERS (200);
# AB_EACH=1 prints every run's figures (or its failure) on stderr;
# BENCH_RT=PRIO runs each ucx_perftest pair under SCHED_FIFO (bench_lib.sh's
# bench_rt: a quiet machine's figures on a loaded one; not NetPIPE);
# BENCH_TOUCH=1 writes ucx_perftest's UCP buffers before the test, as an
# application's data is written (bench_lib.sh's bench_touch).
set -u
build=${1:?usage: $0 BUILDDIR "NAME|ENV" ... -- PERFTEST_ARGS...}
shift
rounds=${AB_ROUNDS:-5}
. "$(dirname "$0")/bench_lib.sh"
bench_setup "$build" "${AB_TIMEOUT:-120}"

cfgs=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    cfgs="$cfgs $(printf '%s' "$1" | tr ' ' '\001')"
    shift
done
[ $# -gt 0 ] && shift
if [ -z "$cfgs" ] || [ $# -eq 0 ]; then
    echo "usage: $0 BUILDDIR \"NAME|ENV\" ... -- PERFTEST_ARGS..." >&2
    exit 2
fi

# np_one ENV [SIZE]: NetPIPE at SIZE under ENV on the fabric of $port:
# "LAT LAT MB/s" (us, us, MB/s)
np_one() {
    _sz=${2:-8}
    bench_netpipe "$1" "$_sz" "$_sz" "${AB_NP_ITERS:-200}"
    awk -v s="$_sz" '$1 == s {printf "%.3f %.3f %.2f\n", $3 * 1e6, $3 * 1e6,
                                       $2 / 8}' "$tmp/np.out" 2>/dev/null
}

# ab_one CFG ARGS...: one pair under CFG; its Final line's typical and
# average latency and overall bandwidth go to NAME's files
ab_one() {
    _name=${1%%|*}
    _env=$(printf '%s' "${1#*|}" | tr '\001' ' ')
    shift
    _tl=$(printf '%s\n' $_env | sed -n 's/^AB_TL=//p')
    _env=$(printf '%s\n' $_env | grep -v '^AB_TL=' | tr '\n' ' ')
    for _a in "$@"; do
        [ "$_a" = @TL ] && _a=$_tl
        set -- "$@" "$_a"
        shift
    done
    bench_next_port
    if [ "$1" = np ]; then
        shift
        np_one "$_env" "$@" > "$tmp/one"
    else
        BENCH_ENV="$_env" bench_pair ucx_perftest -p "$port" -- \
            ucx_perftest localhost -p "$port" "$@" |
            awk '/^Final:/ {print $3, $4, $7}' > "$tmp/one"
    fi
    if ! read -r _p50 _avg _bw < "$tmp/one"; then
        [ -n "${AB_EACH:-}" ] && echo "# $_name: failed" >&2
        return 0
    fi
    [ -n "${AB_EACH:-}" ] && echo "# $_name: $_p50 $_avg $_bw" >&2
    echo "$_p50" >> "$tmp/$_name.p50"
    echo "$_avg" >> "$tmp/$_name.avg"
    echo "$_bw" >> "$tmp/$_name.bw"
}

r=0
while [ $r -lt "$rounds" ]; do
    # shellcheck disable=SC2086
    for c in $(bench_rotate $r $cfgs); do
        ab_one "$c" "$@"
    done
    r=$((r + 1))
done

echo "| config | typical lat us | avg lat us | MB/s | typical / first |" \
     "MB/s / first |"
echo "|---|---|---|---|---|---|"
first_p50="" first_bw=""
for c in $cfgs; do
    n=${c%%|*}
    p50=$(bench_median "$tmp/$n.p50")
    avg=$(bench_median "$tmp/$n.avg")
    bw=$(bench_median "$tmp/$n.bw")
    [ -z "$first_p50" ] && first_p50=$p50 first_bw=$bw
    echo "| $n | $p50 | $avg | $bw | $(bench_ratio "$p50" "$first_p50") |" \
         "$(bench_ratio "$bw" "$first_bw") |"
done
echo
if [ "$1" = np ]; then
    echo "Medians of $rounds interleaved rounds (NetPIPE, $*)."
else
    echo "Medians of $rounds interleaved rounds (ucx_perftest $*)."
fi

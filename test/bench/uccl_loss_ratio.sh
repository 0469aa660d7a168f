#!/bin/sh
#
# Benchmark (label bench): what 1% packet loss costs uccl, clean and lossy
# runs interleaved so that the machine's drift hits both alike:
#   - ucx_perftest -t tag_bw 1 MiB (UCX_TLS=uccl,self): lossy / clean;
#   - ucx_perftest -t tag_lat 1 MiB (one message in flight): lossy / clean.
# Each extra argument is a set of environment assignments compared side by
# side (e.g. UCCL_LIBDIR=/other/build/.libs, or UCX_UCCL_CHUNK_SIZE=32k);
# "-" is the build as it is. Every round draws a new loss sequence (its own
# SOFTVERBS_SEED, printed) and alternates whether the clean or the lossy
# run goes first; the summary gives the median of the per-round ratios.
#
#   uccl_loss_ratio.sh BUILDDIR [ENV|-]...
#
# LOSS_ROUNDS (3), LOSS_BW_ITERS (3000), LOSS_LAT_ITERS (1000),
# LOSS_SEED (first round's seed, default from the clock).
set -u
build=${1:?usage: $0 BUILDDIR [ENV|-]...}
shift
[ $# -gt 0 ] || set -- -
rounds=${LOSS_ROUNDS:-3}
seed=${LOSS_SEED:-$(date +%s)}
. "$(dirname "$0")/bench_lib.sh"
bench_setup "$build" "${BENCH_TIMEOUT:-180}"

# perftest LOSS TEST CFG: the Final line's bandwidth (MB/s) or latency (us)
perftest() {
    _loss=$1 _test=$2 _cfg=$3
    [ "$_cfg" = - ] && _cfg=""
    case $_test in
        tag_bw) _n=${LOSS_BW_ITERS:-3000} ;;
        *)      _n=${LOSS_LAT_ITERS:-1000} ;;
    esac
    BENCH_ENV="UCX_TLS=uccl,self SOFTVERBS_LOSS=$_loss SOFTVERBS_SEED=$seed \
$_cfg" bench_pair ucx_perftest -p $port -- \
        ucx_perftest localhost -p $port -t "$_test" -s 1048576 -n "$_n" \
        >"$tmp/cli.log"
    case $_test in
        tag_bw) awk '/^Final:/ {printf "%.0f", $7}' "$tmp/cli.log" ;;
        *)      awk '/^Final:/ {printf "%.1f", $4}' "$tmp/cli.log" ;;
    esac
}

# one clean/lossy pair of TEST for CFG, the order given by the round
# (run in this shell: it moves the port); appends the ratio to the
# config's file and sets clean and lossy
measure() {
    _test=$1 _cfg=$2 _k=$3
    if [ $((i % 2)) = 0 ]; then
        bench_next_port; clean=$(perftest 0 "$_test" "$_cfg")
        bench_next_port; lossy=$(perftest 0.01 "$_test" "$_cfg")
    else
        bench_next_port; lossy=$(perftest 0.01 "$_test" "$_cfg")
        bench_next_port; clean=$(perftest 0 "$_test" "$_cfg")
    fi
    [ -n "$clean" ] && [ -n "$lossy" ] || return 1
    bench_ratio "$lossy" "$clean" >> "$tmp/$_test.$_k"
    echo >> "$tmp/$_test.$_k"
}

echo "uccl at 1% loss vs clean, 1 MiB, $rounds interleaved rounds"
echo
echo "| round | seed | config | tag_bw clean MB/s | tag_bw 1% MB/s | ratio |" \
     "tag_lat clean us | tag_lat 1% us | ratio |"
echo "|---|---|---|---|---|---|---|---|---|"
fails=0
i=0
while [ $i -lt "$rounds" ]; do
    bench_rotate $i "$@" > "$tmp/order"
    while IFS= read -r cfg; do
        k=$(printf '%s' "$cfg" | cksum | awk '{print $1}')
        if ! measure tag_bw "$cfg" "$k"; then
            fails=$((fails + 1))
            echo "| $i | $seed | $cfg | run failed:" \
                 "$(tail -n 3 "$tmp/cli.log" | tr '\n' ' ') |"
            continue
        fi
        bw0=$clean bw1=$lossy
        if ! measure tag_lat "$cfg" "$k"; then
            fails=$((fails + 1))
            echo "| $i | $seed | $cfg | run failed:" \
                 "$(tail -n 3 "$tmp/cli.log" | tr '\n' ' ') |"
            continue
        fi
        echo "| $i | $seed | $cfg | $bw0 | $bw1 | $(bench_ratio "$bw1" "$bw0")" \
             "| $clean | $lossy | $(bench_ratio "$lossy" "$clean") |"
    done < "$tmp/order"
    seed=$((seed + 1))
    i=$((i + 1))
done

echo
echo "| config | tag_bw lossy/clean (median) | tag_lat lossy/clean (median) |"
echo "|---|---|---|"
for cfg in "$@"; do
    k=$(printf '%s' "$cfg" | cksum | awk '{print $1}')
    echo "| $cfg | $(bench_median "$tmp/tag_bw.$k") |" \
         "$(bench_median "$tmp/tag_lat.$k") |"
done
[ $fails -eq 0 ]

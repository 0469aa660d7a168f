#!/bin/sh
#
# Benchmark (label bench): what 1% packet loss costs uccl, clean and lossy
# runs interleaved so that the machine's drift hits both alike:
#   - ucx_perftest -t tag_bw 1 MiB (UCX_TLS=uccl,self): lossy / clean;
#   - ucx_perftest -t tag_lat 1 MiB (one message in flight): lossy / clean.
# Each extra argument is a set of environment assignments compared side by
# side (e.g. UCCL_LIBDIR=/other/build/.libs, or UCX_UCCL_CHUNK_SIZE=32k);
# "-" is the build as it is.
#
#   uccl_loss_ratio.sh BUILDDIR [ENV|-]...
#
# LOSS_ROUNDS (3), LOSS_BW_ITERS (3000), LOSS_LAT_ITERS (1000).
set -u
build=${1:?usage: $0 BUILDDIR [ENV|-]...}
shift
[ $# -gt 0 ] || set -- -
run=$build/contrib/uccl-run
rounds=${LOSS_ROUNDS:-3}
tmo=${BENCH_TIMEOUT:-180}
port=$((30000 + $$ % 10000))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# perftest LOSS TEST ENV: the Final line's bandwidth (MB/s) or latency (us)
perftest() {
    loss=$1 test=$2 cfg=$3
    [ "$cfg" = - ] && cfg=""
    port=$((port + 1))
    # shellcheck disable=SC2086
    env UCX_TLS=uccl,self SOFTVERBS_FABRIC="loss$$_$port" \
        SOFTVERBS_LOSS="$loss" $cfg timeout "$tmo" taskset -c 0 "$run" \
        ucx_perftest -p $port >"$tmp/srv.log" 2>&1 &
    srv=$!
    sleep 0.5
    case $test in
        tag_bw) n=${LOSS_BW_ITERS:-3000} ;;
        *)      n=${LOSS_LAT_ITERS:-1000} ;;
    esac
    # shellcheck disable=SC2086
    env UCX_TLS=uccl,self SOFTVERBS_FABRIC="loss$$_$port" \
        SOFTVERBS_LOSS="$loss" $cfg timeout "$tmo" taskset -c 1 "$run" \
        ucx_perftest localhost -p $port -t "$test" -s 1048576 -n "$n" \
        >"$tmp/cli.log" 2>&1
    wait $srv 2>/dev/null
    case $test in
        tag_bw) awk '/^Final:/ {printf "%.0f", $7}' "$tmp/cli.log" ;;
        *)      awk '/^Final:/ {printf "%.1f", $4}' "$tmp/cli.log" ;;
    esac
}

echo "uccl at 1% loss vs clean, 1 MiB, $rounds interleaved rounds"
echo
echo "| config | tag_bw clean MB/s | tag_bw 1% MB/s | ratio |" \
     "tag_lat clean us | tag_lat 1% us | ratio |"
echo "|---|---|---|---|---|---|---|"
fails=0
i=0
while [ $i -lt "$rounds" ]; do
    i=$((i + 1))
    for cfg in "$@"; do
        bw0=$(perftest 0 tag_bw "$cfg")
        bw1=$(perftest 0.01 tag_bw "$cfg")
        lat0=$(perftest 0 tag_lat "$cfg")
        lat1=$(perftest 0.01 tag_lat "$cfg")
        if [ -z "$bw0" ] || [ -z "$bw1" ] || [ -z "$lat0" ] || \
           [ -z "$lat1" ]; then
            fails=$((fails + 1))
            why=$(tail -n 3 "$tmp/cli.log" | tr '\n' ' ')
            echo "| $cfg | run failed: $why |"
            continue
        fi
        echo "| $cfg | $bw0 | $bw1 | $(echo "scale=2; $bw1 / $bw0" | bc) |" \
             "$lat0 | $lat1 | $(echo "scale=2; $lat1 / $lat0" | bc) |"
    done
done
[ $fails -eq 0 ]

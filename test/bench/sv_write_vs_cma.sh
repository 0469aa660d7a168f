#!/bin/bash
#
# Benchmark (label bench): a 1 MiB RDMA WRITE stream between two processes on
# softverbs with the fabric model off, beside UCX's cma transport, in one
# run. Both copy with process_vm_writev; the issue's target is softverbs at
# >= 80% of cma. Measured three times each, interleaved; the best counts.
#
#   - cma:             ucx_perftest -t put_bw -x cma -d memory -D zcopy
#   - softverbs (UCX): ucx_perftest -t put_bw -x rc_verbs -d sv0:1 -D zcopy
#   - softverbs (raw): ib_write_bw -s 1048576 (one RC QP)
#
# Environment: SOFTVERBS_LIB (required), BENCH_ITERS (default 2000),
# BENCH_TIMEOUT (seconds per run, default 120).
# Exit 0 when every measurement ran (whether or not the target is met).
#
set -u
lib=${SOFTVERBS_LIB:?set SOFTVERBS_LIB to libsoftverbs.so}
iters=${BENCH_ITERS:-2000}
tmo=${BENCH_TIMEOUT:-120}
size=1048576
port=$((31000 + ($$ % 300) * 100))
tmp=$(mktemp -d /tmp/sv_vs_cma.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

[ -f "$lib" ] || { echo "sv_write_vs_cma.sh: $lib not built" >&2; exit 1; }
san=$(ldd "$lib" 2>/dev/null | awk '/lib(a|ub)san\.so/ { printf "%s:", $3 }')
[ -n "$san" ] && echo "note: sanitizer build of softverbs; numbers are not" \
                      "representative"
preload="$san$lib"
# model off: no rate, delay or loss from the caller's environment
unset SOFTVERBS_LINK_GBPS SOFTVERBS_PATH_GBPS SOFTVERBS_DELAY_US \
      SOFTVERBS_PATH_SKEW_US SOFTVERBS_LOSS SOFTVERBS_PATH_LOSS \
      SOFTVERBS_PATH_DOWN
export ASAN_OPTIONS=detect_leaks=0

have_uct_sv=1
[ -c /dev/infiniband/uverbs_sv0 ] || have_uct_sv=0

# pair PRELOAD SERVER_CMD -- CLIENT_CMD: server on core 0, client on core 1,
# fabric named after $fab; prints the client's output. The loop bumps
# $port and $fab before each pair: a bump inside $(...) would be lost.
pair() {
    local pre=$1; shift
    local srv=()
    while [ "$1" != "--" ]; do srv+=("$1"); shift; done
    shift
    export SOFTVERBS_FABRIC=bench_cma_$fab
    LD_PRELOAD=$pre timeout -s KILL "$tmo" taskset -c 0 "${srv[@]}" \
        >"$tmp/srv" 2>&1 &
    local pid=$!
    sleep 1
    LD_PRELOAD=$pre timeout -s KILL "$tmo" taskset -c 1 "$@" 2>&1
    wait $pid || echo "server exited with $?" >&2
}

# MB/s from ucx_perftest -f (overall bandwidth) or ib_write_bw (BW average)
ucx_mbs() { awk 'NF == 8 && $1 ~ /^[0-9]+$/ { b = $6 } END { print b }'; }
ib_mbs()  { awk -v s=$size '$1 == s { print $4 }'; }

best() {   # best OLD NEW
    awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { print (b > a) ? b : a }'
}

cma=0; sv_uct=0; sv_ib=0; fab=0
for round in 1 2 3; do
    port=$((port + 1)); fab=$((fab + 1))
    v=$(pair "" ucx_perftest -p $((port + 1)) -- \
        ucx_perftest localhost -p $((port + 1)) -t put_bw -x cma -d memory \
            -D zcopy -s $size -n "$iters" -w 100 -f | ucx_mbs)
    echo "round $round: cma put_bw                 ${v:-FAILED} MB/s"
    cma=$(best "$cma" "$v")
    if [ $have_uct_sv = 1 ]; then
        port=$((port + 1)); fab=$((fab + 1))
        v=$(pair "$preload" ucx_perftest -p $((port + 1)) -- \
            ucx_perftest localhost -p $((port + 1)) -t put_bw -x rc_verbs \
                -d sv0:1 -D zcopy -s $size -n "$iters" -w 100 -f | ucx_mbs)
        echo "round $round: softverbs rc_verbs put_bw  ${v:-FAILED} MB/s"
        sv_uct=$(best "$sv_uct" "$v")
    fi
    port=$((port + 1)); fab=$((fab + 1))
    v=$(pair "$preload" ib_write_bw -d sv0 -F -s $size -n "$iters" \
            -p $((port + 1)) -- \
        ib_write_bw -d sv0 -F -s $size -n "$iters" -p $((port + 1)) \
            localhost | ib_mbs)
    echo "round $round: softverbs ib_write_bw      ${v:-FAILED} MB/s"
    sv_ib=$(best "$sv_ib" "$v")
done

echo
echo "| 1 MiB WRITE stream, best of 3 | MB/s | vs cma |"
echo "|---|---|---|"
awk -v c="$cma" 'BEGIN { printf "| UCX cma put_bw (zcopy) | %.0f | 1.00 |\n", c }'
ratio() { awk -v a="$1" -v c="$cma" 'BEGIN { printf "%.2f", (c > 0) ? a / c : 0 }'; }
if [ $have_uct_sv = 1 ]; then
    echo "| softverbs, UCX rc_verbs put_bw (zcopy) | $sv_uct | $(ratio "$sv_uct") |"
else
    echo "| softverbs, UCX rc_verbs put_bw | skipped: no /dev/infiniband/uverbs_sv0 | |"
fi
echo "| softverbs, perftest ib_write_bw | $sv_ib | $(ratio "$sv_ib") |"
echo
r=$(ratio "$( [ $have_uct_sv = 1 ] && echo "$sv_uct" || echo "$sv_ib")")
met=$(awk -v r="$r" 'BEGIN { print (r >= 0.8) ? "MET" : "NOT MET" }')
echo "softverbs / cma = $r (target >= 0.80: $met)"

ok=1
awk -v c="$cma" 'BEGIN { exit !(c > 0) }' || ok=0
awk -v s="$sv_ib" 'BEGIN { exit !(s > 0) }' || ok=0
[ $have_uct_sv = 1 ] && { awk -v s="$sv_uct" 'BEGIN { exit !(s > 0) }' || ok=0; }
[ $ok = 1 ] || { echo "a measurement failed" >&2; exit 1; }

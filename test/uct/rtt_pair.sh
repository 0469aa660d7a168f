#!/bin/sh
#
# rtt_pair.sh PORT CQ_TS LO_US HI_US [client args...]: run uct_rtt (server
# with UCCL_SERVER_ARGS, client with the arguments given) and check the
# mean RTT sample the client's congestion control got (its conns' cc_rtt_ns
# / cc_samples in the UCX_UCCL_STATS_DUMP lines) is within [LO_US, HI_US]
# (no sample at all counts as 0), and that the client's iface used
# completion timestamps of CQ_TS (raw, wallclock or none), and that both
# sides' clocks kept CLOCK_MONOTONIC's rate within 1% (clock_ppm).
# Environment: UCCL_RUN, UCCL_BUILDDIR, SOFTVERBS_FABRIC, UCX_UCCL_*,
# SOFTVERBS_DELAY_US, UCCL_DEV (default sv0:1).
#
set -u
. "$(dirname "$0")/listen.sh"

port=$1 cq_ts=$2 lo=$3 hi=$4
shift 4
run=${UCCL_RUN:?UCCL_RUN must name the uccl-run launcher}
bin=${UCCL_BUILDDIR:?UCCL_BUILDDIR must be set}/test/uct/uct_rtt
dev=${UCCL_DEV:-sv0:1}
limit=${UCCL_TEST_TIMEOUT:-120}
tmp=$(mktemp -d /tmp/uccl-rtt.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export UCX_UCCL_STATS_DUMP=y

timeout "$limit" "$run" "$bin" -s -p "$port" -d "$dev" \
    ${UCCL_SERVER_ARGS:-} >"$tmp/server" 2>&1 &
server=$!
timeout "$limit" "$run" "$bin" -p "$port" -d "$dev" "$@" >"$tmp/client" 2>&1
client_rc=$?
wait $server
server_rc=$?

uccl_pair_report client $client_rc "$tmp/client" \
                 server $server_rc "$tmp/server" || exit 1
grep -q "^uccl\[[0-9]*\] iface .* cq_ts $cq_ts:" "$tmp/client" ||
    { echo "FAIL: the client's iface did not use cq_ts $cq_ts"; exit 1; }
# our clock (the times above) ran with CLOCK_MONOTONIC within 1% on both
# sides: its rate is measured against it, not taken from UCS's 1 ms guess
for side in client server; do
    ppm=$(grep -h '^uccl\[.* iface ' "$tmp/$side" |
          grep -o ' clock_ppm [-0-9]*' |
          awk '{ v = ($2 < 0) ? -$2 : $2; if (v > m) m = v }
               END { print (NR > 0) ? m + 0 : "none" }')
    echo "$side: our clock within $ppm ppm of CLOCK_MONOTONIC"
    [ "$ppm" != none ] && [ "$ppm" -le 10000 ] ||
        { echo "FAIL: the $side's clock ran $ppm ppm off"; exit 1; }
done
sum() {
    grep -h '^uccl\[.* conn ' "$tmp/client" | grep -o " $1 [0-9]*" |
        awk '{ s += $2 } END { print s + 0 }'
}
samples=$(sum cc_samples)
rtt_ns=$(sum cc_rtt_ns)
mean=$(awk -v s="$samples" -v r="$rtt_ns" \
       'BEGIN { printf "%.1f", (s > 0) ? r / s / 1e3 : 0 }')
echo "client: $samples RTT samples, mean $mean us (expected $lo..$hi us)"
if awk -v m="$mean" -v lo="$lo" -v hi="$hi" \
       'BEGIN { exit !((m >= lo) && (m <= hi)) }'; then
    echo PASS
    exit 0
fi
echo "FAIL: mean RTT sample $mean us outside $lo..$hi us"
exit 1

#!/bin/sh
#
# Run one ucx_perftest UCT test over uccl between two processes:
#   perftest_pair.sh PORT TEST LAYOUT SIZE ITERS [extra ucx_perftest args]
# Environment: UCCL_RUN (the launcher), SOFTVERBS_FABRIC (distinct per test),
# UCX_UCCL_* for the transport, UCCL_DEV (default sv0:1).
# The server is started first, the client connects once it listens; both
# are pinned to different cores and bounded by `timeout`. Fails unless the
# client prints its final result line and both exit 0, and, on a lossy
# fabric (SOFTVERBS_LOSS), unless the fabric dropped messages and the
# sender repaired them (UC: uccl resent chunks; RC: go-back-N resends),
# and unless the uccl counters UCCL_EXPECT_COUNTERS names are non-zero
# and those UCCL_EXPECT_ZERO_COUNTERS names are zero (summed over both
# processes' UCX_UCCL_STATS_DUMP lines).
# ucx_perftest does not check data: uct_verify and uct_order do.
#
set -u

port=$1 test=$2 layout=$3 size=$4 iters=$5
shift 5
run=${UCCL_RUN:?UCCL_RUN must name the uccl-run launcher}
dev=${UCCL_DEV:-sv0:1}
limit=${UCCL_TEST_TIMEOUT:-90}
tmp=$(mktemp -d /tmp/uccl-perftest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/listen.sh"

lossy=0
case ${SOFTVERBS_LOSS:-0} in 0|0.0|"") ;; *) lossy=1 ;; esac
if [ $lossy = 1 ]; then
    export UCX_UCCL_STATS_DUMP=y
    export SOFTVERBS_STATS="$tmp/sv_%p"
fi
nompi=$(uccl_perftest_nompi "$run")

# the server names the transport and device too: UCX 1.18's checks its own
# parameters before it takes the client's
timeout "$limit" "$run" ucx_perftest $nompi -p "$port" -c 0 -x uccl -d "$dev" \
    >"$tmp/server" 2>&1 &
server=$!
uccl_wait_listen "$port" $server ||
    { echo "FAIL: the server did not listen"; cat "$tmp/server"; exit 1; }

timeout "$limit" "$run" ucx_perftest $nompi localhost -p "$port" -c 1 \
    -t "$test" \
    -x uccl -d "$dev" -D "$layout" -s "$size" -n "$iters" "$@" \
    >"$tmp/client" 2>&1
client_rc=$?
wait $server
server_rc=$?

final=$(grep '^Final:' "$tmp/client")
echo "uccl $test $layout size=$size iters=$iters mode=${UCX_UCCL_MODE:-auto}" \
     "loss=${SOFTVERBS_LOSS:-0}: client rc=$client_rc server rc=$server_rc"
if [ $client_rc -ne 0 ] || [ $server_rc -ne 0 ] || [ -z "$final" ] ||
   grep -q 'UCX  ERROR' "$tmp/client" "$tmp/server"; then
    echo "FAIL: client output:"; cat "$tmp/client"
    echo "FAIL: server output:"; cat "$tmp/server"
    exit 1
fi
echo "$final"
[ $lossy = 1 ] || exit 0

# counters over both processes
cat "$tmp"/sv_* >"$tmp/sv_both"
cat "$tmp/client" "$tmp/server" >"$tmp/both"
drops=$(sv_sum "$tmp/sv_both" msg_drops)
gbn=$(sv_sum "$tmp/sv_both" rc_resends)
retx=$(uccl_sum "$tmp/both" retx)
echo "loss: fabric dropped $drops UC messages, go-back-N resent $gbn" \
     "packets, uccl resent $retx chunks"
if [ "${UCX_UCCL_MODE:-uc}" = rc ]; then
    [ "$gbn" -gt 0 ] || { echo "FAIL: no packet lost and resent"; exit 1; }
else
    [ "$drops" -gt 0 ] || { echo "FAIL: the fabric dropped nothing"; exit 1; }
    [ "$retx" -gt 0 ] || { echo "FAIL: losses but no resend"; exit 1; }
fi
for c in ${UCCL_EXPECT_COUNTERS:-}; do
    n=$(uccl_sum "$tmp/both" "$c")
    echo "counter $c: $n"
    [ "$n" -gt 0 ] || { echo "FAIL: counter $c is 0"; exit 1; }
done
for c in ${UCCL_EXPECT_ZERO_COUNTERS:-}; do
    # a counter nobody reported would sum to 0 as well
    grep '^uccl\[' "$tmp/both" | grep -q " $c [0-9]" ||
        { echo "FAIL: counter $c is not in the stats dump"; exit 1; }
    n=$(uccl_sum "$tmp/both" "$c")
    echo "counter $c: $n"
    [ "$n" -eq 0 ] || { echo "FAIL: counter $c is $n, not 0"; exit 1; }
done
exit 0

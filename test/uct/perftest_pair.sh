#!/bin/sh
#
# Run one ucx_perftest UCT test over uccl between two processes:
#   perftest_pair.sh PORT TEST LAYOUT SIZE ITERS [extra ucx_perftest args]
# Environment: UCCL_RUN (the launcher), SOFTVERBS_FABRIC (distinct per test),
# UCX_UCCL_* for the transport, UCCL_DEV (default sv0:1).
# The server is started first, the client connects to it; both are pinned to
# different cores and bounded by `timeout`. Fails unless the client prints
# its final result line and both exit 0.
#
set -u

port=$1 test=$2 layout=$3 size=$4 iters=$5
shift 5
run=${UCCL_RUN:?UCCL_RUN must name the uccl-run launcher}
dev=${UCCL_DEV:-sv0:1}
limit=${UCCL_TEST_TIMEOUT:-90}
tmp=$(mktemp -d /tmp/uccl-perftest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

timeout "$limit" "$run" ucx_perftest -p "$port" -c 0 >"$tmp/server" 2>&1 &
server=$!
sleep 0.5

timeout "$limit" "$run" ucx_perftest localhost -p "$port" -c 1 -t "$test" \
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
exit 0

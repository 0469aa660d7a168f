#!/bin/sh
#
# Run a data-checking UCT test between two processes:
#   verify_pair.sh PORT MODE [client args...]
# MODE data|kill|idle|reset|fuzz runs uct_verify -m MODE; order runs
# uct_order.
# Environment: UCCL_RUN (launcher), UCCL_BUILDDIR, SOFTVERBS_FABRIC, UCX_UCCL_*,
# UCCL_DEV (default sv0:1), UCCL_SERVER_ARGS (extra server arguments),
# UCCL_EXPECT_COUNTERS (iface counters the server must report non-zero),
# UCCL_EXPECT_CLIENT_COUNTERS (the same for the client).
#
set -u

port=$1 mode=$2
shift 2
run=${UCCL_RUN:?UCCL_RUN must name the uccl-run launcher}
bin=${UCCL_BUILDDIR:?UCCL_BUILDDIR must be set}/test/uct/uct_verify
mode_arg="-m $mode"
if [ "$mode" = order ]; then
    bin=$UCCL_BUILDDIR/test/uct/uct_order
    mode_arg=""
fi
dev=${UCCL_DEV:-sv0:1}
limit=${UCCL_TEST_TIMEOUT:-120}
tmp=$(mktemp -d /tmp/uccl-verify.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

timeout "$limit" "$run" "$bin" -s -p "$port" -d "$dev" $mode_arg \
    ${UCCL_SERVER_ARGS:-} >"$tmp/server" 2>&1 &
server=$!

timeout "$limit" "$run" "$bin" -p "$port" -d "$dev" $mode_arg "$@" \
    >"$tmp/client" 2>&1
client_rc=$?
wait $server
server_rc=$?

echo "--- client (rc=$client_rc):"; cat "$tmp/client"
echo "--- server (rc=$server_rc):"; cat "$tmp/server"
if [ $client_rc -ne 0 ]; then
    echo "FAIL: client exited with $client_rc"
    exit 1
fi
if [ "$mode" = kill ] || [ "$mode" = idle ]; then
    # the server killed itself: SIGKILL (137 through timeout/sh)
    [ $server_rc -ne 0 ] || { echo "FAIL: server did not die"; exit 1; }
elif [ $server_rc -ne 0 ]; then
    echo "FAIL: server exited with $server_rc"
    exit 1
fi
# iface counters the server must have seen non-zero (UCX_UCCL_STATS_DUMP=y)
expect=${UCCL_EXPECT_COUNTERS:-}
[ "$mode" = fuzz ] && expect="$expect bad_ctl unknown_conn"
for c in $expect; do
    grep -q "mode [ru]c: .* $c [1-9]" "$tmp/server" ||
        { echo "FAIL: server did not count $c"; exit 1; }
    echo "server counted $c: $(grep -o " $c [0-9]*" "$tmp/server" | head -1)"
done
# and the client (in kill/idle modes the server dies and dumps nothing)
for c in ${UCCL_EXPECT_CLIENT_COUNTERS:-}; do
    grep -q "mode [ru]c: .* $c [1-9]" "$tmp/client" ||
        { echo "FAIL: client did not count $c"; exit 1; }
    echo "client counted $c: $(grep -o " $c [0-9]*" "$tmp/client" | head -1)"
done
echo PASS
exit 0

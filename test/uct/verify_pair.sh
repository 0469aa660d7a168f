#!/bin/sh
#
# Run a data-checking UCT test between two processes:
#   verify_pair.sh PORT MODE [client args...]
# MODE data|kill|idle|reset runs uct_verify -m MODE; order and
# hostile run uct_order and uct_hostile.
# Environment: UCCL_RUN (launcher), UCCL_BUILDDIR, SOFTVERBS_FABRIC, UCX_UCCL_*,
# UCCL_DEV (default sv0:1), UCCL_SERVER_ARGS (extra server arguments),
# UCCL_EXPECT_COUNTERS (uccl counters the server must report non-zero in its
# UCX_UCCL_STATS_DUMP lines), UCCL_EXPECT_CLIENT_COUNTERS (the same for the
# client), UCCL_EXPECT_SV_COUNTERS (softverbs counters, summed over both
# processes, that must be non-zero), UCCL_EXPECT_CHUNKS=y (RC, with the
# client's -C BYTES: the client sent exactly the chunks it counted at that
# chunk size).
#
set -u

port=$1 mode=$2
shift 2
run=${UCCL_RUN:?UCCL_RUN must name the uccl-run launcher}
bin=${UCCL_BUILDDIR:?UCCL_BUILDDIR must be set}/test/uct/uct_verify
mode_arg="-m $mode"
case $mode in
    order|hostile) bin=$UCCL_BUILDDIR/test/uct/uct_$mode; mode_arg="" ;;
esac
dev=${UCCL_DEV:-sv0:1}
limit=${UCCL_TEST_TIMEOUT:-120}
tmp=$(mktemp -d /tmp/uccl-verify.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/listen.sh"
[ -n "${UCCL_EXPECT_SV_COUNTERS:-}" ] && export SOFTVERBS_STATS="$tmp/sv_%p"

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
# counters the server must have seen non-zero (UCX_UCCL_STATS_DUMP=y)
expect=${UCCL_EXPECT_COUNTERS:-}
for c in $expect; do
    n=$(uccl_sum "$tmp/server" "$c")
    [ "$n" -gt 0 ] || { echo "FAIL: server did not count $c"; exit 1; }
    echo "server counted $c: $n"
done
# and the client (in kill/idle modes the server dies and dumps nothing)
for c in ${UCCL_EXPECT_CLIENT_COUNTERS:-}; do
    n=$(uccl_sum "$tmp/client" "$c")
    [ "$n" -gt 0 ] || { echo "FAIL: client did not count $c"; exit 1; }
    echo "client counted $c: $n"
done
# the chunks the client counted at its -C size are those it sent: its
# zero-copy operations were cut at that size (RC: no resends by software)
if [ "${UCCL_EXPECT_CHUNKS:-n}" = y ]; then
    want=$(sed -n 's/^chunks expected \([0-9]*\) at .*/\1/p' "$tmp/client")
    n=$(uccl_sum "$tmp/client" chunks_tx)
    [ -n "$want" ] ||
        { echo "FAIL: the client counted no chunks (-C)"; exit 1; }
    [ "$n" -eq "$want" ] ||
        { echo "FAIL: client sent $n chunks, $want expected"; exit 1; }
    echo "client sent the $n chunks expected"
fi
# softverbs' counters of both processes
for c in ${UCCL_EXPECT_SV_COUNTERS:-}; do
    n=$(cat "$tmp"/sv_* 2>/dev/null | awk -v k="$c" \
        '$1 ~ "^port\\.[0-9]+\\." k "$" { s += $2 } END { print s + 0 }')
    [ "$n" -gt 0 ] || { echo "FAIL: softverbs did not count $c"; exit 1; }
    echo "softverbs counted $c: $n"
done
echo PASS
exit 0

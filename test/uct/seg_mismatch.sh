#!/bin/sh
#
# Peers whose receive buffers cannot hold our largest AM: in RC mode the
# receive buffers hold a segment, so a server with UCX_UCCL_SEG_SIZE=8k
# would have its QP broken by an AM of the client's 64 KiB segment, which
# UCP sends as it reads the client's own limits. The client must refuse
# the connection with one clear error and its operation fail with
# UCS_ERR_UNREACHABLE (the test's AMs are small enough for both sides'
# perftest checks; ucx_perftest itself may then wait for its server until
# its timeout), no process may crash, and with equal settings the same
# pair must work.
#   seg_mismatch.sh PORT
# Environment: UCCL_RUN, SOFTVERBS_FABRIC.
#
set -u
port=${1:?usage: seg_mismatch.sh PORT}
run=${UCCL_RUN:?UCCL_RUN must name the uccl-run launcher}
limit=${UCCL_TEST_TIMEOUT:-60}
tmp=$(mktemp -d /tmp/uccl-seg.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/listen.sh"
nompi=$(uccl_perftest_nompi "$run")
export UCX_UCCL_MODE=rc UCX_UCCL_CONN_TIMEOUT=3s

# pair SERVER_SEG: client (default SEG_SIZE) sends 4 KiB AMs to a server
# with SERVER_SEG; sets client_rc and leaves the logs in $tmp
pair() {
    UCX_UCCL_SEG_SIZE=$1 timeout "$limit" "$run" ucx_perftest $nompi \
        -p "$port" -x uccl -d sv0:1 >"$tmp/server" 2>&1 &
    server=$!
    uccl_wait_listen "$port" $server ||
        { echo "FAIL: the server did not listen"; cat "$tmp/server"; exit 1; }
    timeout "$limit" "$run" ucx_perftest $nompi localhost -p "$port" \
        -x uccl -d sv0:1 -t am_bw -D bcopy -s 4096 -n 200 \
        >"$tmp/client" 2>&1
    client_rc=$?
    wait $server
    port=$((port + 1))
    if grep -q -i 'segmentation\|backtrace\|assert' "$tmp/client" \
            "$tmp/server"; then
        echo "FAIL: a process crashed (server SEG_SIZE $1):"
        cat "$tmp/client" "$tmp/server"
        exit 1
    fi
}

limit=20 pair 8k
if [ $client_rc -eq 0 ] ||
   ! grep -q "refused: receive buffers smaller than our segment" \
        "$tmp/client" ||
   ! grep -q "Destination is unreachable" "$tmp/client"; then
    echo "FAIL: server SEG_SIZE 8k: client exit $client_rc, expected the" \
         "refusal:"
    cat "$tmp/client"
    exit 1
fi
echo "ok: $(grep -m1 -o 'connection [0-9]* refused: .*' "$tmp/client")"

pair 64k
if [ $client_rc -ne 0 ] || ! grep -q '^Final:' "$tmp/client"; then
    echo "FAIL: equal SEG_SIZE: client exit $client_rc:"
    cat "$tmp/client"
    exit 1
fi
echo "ok: equal SEG_SIZE: $(grep '^Final:' "$tmp/client")"
echo PASS

#!/bin/sh
#
# run2.sh LAUNCHER PROG ARGS...
#
# Runs PROG twice through LAUNCHER (uccl-run), as "-r server" and "-r client",
# with UCX_TLS=$UCCL_TEST_TLS (default uccl,self), on a fabric of their own,
# and fails unless both exit 0 within UCCL_TEST_TIMEOUT seconds (default
# 300). With UCCL_TEST_VICTIM=client the client is expected to die of
# SIGKILL (the peer-failure test) and only the server's status counts.
#
set -u

victim=0
[ "${UCCL_TEST_VICTIM:-}" = client ] && victim=1
if [ $# -lt 2 ]; then
    echo "usage: run2.sh LAUNCHER PROG ARGS..." >&2
    exit 2
fi
launcher=$1
shift

UCX_TLS=${UCCL_TEST_TLS:-uccl,self}
export UCX_TLS
limit=${UCCL_TEST_TIMEOUT:-300}
. "$(dirname "$0")/fabric.sh"
uccl_fabric_setup ucp

dir=$(mktemp -d /tmp/uccl-ucp.XXXXXX) || exit 1
spid=""
cpid=""
cleanup() {
    for p in $spid $cpid; do
        kill -9 "$p" 2>/dev/null
    done
    rm -rf "$dir"
    uccl_fabric_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "run2: UCX_TLS=$UCX_TLS SOFTVERBS_FABRIC=$SOFTVERBS_FABRIC" \
     "UCX_RNDV_SCHEME=${UCX_RNDV_SCHEME:-auto} timeout ${limit}s"
echo "run2: $launcher $*"

timeout -k 5 "$limit" "$launcher" "$@" -r server -p "$dir/port" &
spid=$!
timeout -k 5 "$limit" "$launcher" "$@" -r client -p "$dir/port" &
cpid=$!

wait $spid
src=$?
wait $cpid
crc=$?
spid=""
cpid=""

# timeout(1) returns 124 on expiry; a SIGKILLed child shows as 137.
echo "run2: server exit $src, client exit $crc"
[ $src = 124 ] && echo "run2: FAIL: server timed out after ${limit}s"
[ $crc = 124 ] && echo "run2: FAIL: client timed out after ${limit}s"
if [ $victim = 1 ]; then
    if [ $crc != 137 ]; then
        echo "run2: FAIL: the client should have died of SIGKILL (exit 137)"
        exit 1
    fi
    [ $src = 0 ] || exit 1
    exit 0
fi
[ $src = 0 ] && [ $crc = 0 ] || exit 1
exit 0

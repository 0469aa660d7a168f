#!/bin/sh
#
# UC chunks that grow (UCX_UCCL_UC_CHUNK_MAX) stay within the peer's
# receive buffers: a lost chunk may be resent there as a SEND, and one
# larger than the buffer would break the peer's QP. The server keeps
# 64 KiB buffers (UC_CHUNK_MAX=64k), the client may grow its chunks to
# 256 KiB; a zero-copy PUT stream on a lossy fabric must then complete on
# both sides with resends of at most 64 KiB each, no error completion and
# no malformed data at the server.
#   uccl_chunk_peer.sh PORT SIZE ITERS
# Environment: UCCL_RUN, SOFTVERBS_FABRIC, and loss: SOFTVERBS_LOSS,
# SOFTVERBS_PATH_LOSS or SOFTVERBS_PATH_DOWN.
#
set -u

port=$1 size=$2 iters=$3
run=${UCCL_RUN:?UCCL_RUN must name the uccl-run launcher}
limit=${UCCL_TEST_TIMEOUT:-150}
small=65536
tmp=$(mktemp -d /tmp/uccl-chunk-peer.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../uct/listen.sh"
export UCX_UCCL_STATS_DUMP=y UCX_UCCL_MODE=uc
nompi=$(uccl_perftest_nompi "$run")

fail() {
    echo "FAIL: $*"
    for f in client server; do
        echo "--- $f:"; cat "$tmp/$f" 2>/dev/null
    done
    exit 1
}

uccl_perftest_pair "$port" UCX_UCCL_UC_CHUNK_MAX=64k \
    UCX_UCCL_UC_CHUNK_MAX=256k -t put_bw -D zcopy -s "$size" -n "$iters" ||
    fail "the ucx_perftest pair failed"

retx=$(uccl_sum "$tmp/client" retx)
retx_bytes=$(uccl_sum "$tmp/client" retx_bytes)
grows=$(uccl_sum "$tmp/client" chunk_grows)
bad=$(($(uccl_sum "$tmp/server" bad_data) + $(uccl_sum "$tmp/server" err_cqe)))
echo "client: $retx resends of $retx_bytes bytes, chunk size doubled" \
     "$grows times; server: $bad malformed or failed receives"
[ "$retx" -gt 0 ] || fail "nothing was resent: is the fabric lossy?"
[ "$grows" -gt 0 ] || fail "the client's chunks never grew"
[ "$bad" -eq 0 ] || fail "the server dropped $bad receives"
[ "$retx_bytes" -le $((retx * small)) ] ||
    fail "resends larger than the server's $small byte chunks"
echo PASS

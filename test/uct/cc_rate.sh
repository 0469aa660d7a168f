#!/bin/sh
#
# Pacing is enforced: an AM stream (ucx_perftest am_bw bcopy) with the
# rate-based timely limited to UCX_UCCL_CC_LINK_RATE=RATE_MBPS stays below
# that rate (plus a tenth), and the held-back sends waited on the pacing
# timer (cc_paced counts them); the same stream with the fixed window
# must go clearly faster, or this machine cannot tell the two apart (a
# loaded machine can hold a process back for seconds: the best of up to
# FIXED_TRIES runs counts).
#   cc_rate.sh PORT RATE_MBPS SIZE ITERS
# Environment: UCCL_RUN, SOFTVERBS_FABRIC.
#
set -u

port=$1 rate=$2 size=$3 iters=$4
run=${UCCL_RUN:?UCCL_RUN must name the uccl-run launcher}
limit=${UCCL_TEST_TIMEOUT:-150}
tmp=$(mktemp -d /tmp/uccl-cc-rate.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/listen.sh"
export UCX_UCCL_STATS_DUMP=y UCX_UCCL_MODE=uc
nompi=$(uccl_perftest_nompi "$run")

fail() {
    echo "FAIL: $*"
    for f in "$tmp"/*; do echo "--- $f:"; cat "$f"; done
    exit 1
}

# stream CC [VAR=VALUE...]: run the pair, print the overall MB/s
stream() {
    name=$1
    shift
    env "$@" timeout "$limit" "$run" ucx_perftest $nompi -p "$port" -c 0 \
        -x uccl -d sv0:1 >"$tmp/${name}_server" 2>&1 &
    server=$!
    uccl_wait_listen "$port" $server || fail "the $name server did not listen"
    env "$@" timeout "$limit" "$run" ucx_perftest $nompi localhost \
        -p "$port" -c 1 -t am_bw -x uccl -d sv0:1 -D bcopy -s "$size" \
        -n "$iters" >"$tmp/${name}_client" 2>&1 ||
        fail "the $name client failed"
    wait $server || fail "the $name server failed"
    grep '^Final:' "$tmp/${name}_client" | awk '{ printf "%d\n", $7 }'
}

FIXED_TRIES=3
cap=$((rate / 8))
paced=$(stream timely UCX_UCCL_CC=timely UCX_UCCL_CC_LINK_RATE=${rate}Mbps)
[ -n "$paced" ] || fail "no result line"
free=0
try=0
while [ "$free" -le $((2 * cap)) ] && [ $try -lt $FIXED_TRIES ]; do
    try=$((try + 1))
    got=$(stream fixed UCX_UCCL_CC=fixed)
    [ -n "$got" ] || fail "no result line"
    echo "fixed window, run $try: $got MB/s"
    [ "$got" -gt "$free" ] && free=$got
done
held=$(grep -h '^uccl\[' "$tmp/timely_client" | grep -o " cc_paced [0-9]*" |
       awk '{ s += $2 } END { print s + 0 }')
echo "am_bw $size B: timely at $rate Mbit/s ($cap MB/s): $paced MB/s," \
     "$held sends held by the pacing; fixed window: $free MB/s"
[ "$held" -gt 0 ] || fail "timely never waited for its pacing time"
[ "$paced" -le $((cap + cap / 10)) ] ||
    fail "timely sent $paced MB/s, above its $cap MB/s"
[ "$free" -gt $((2 * cap)) ] ||
    fail "the fixed window reached only $free MB/s: rate too high to tell"
echo PASS

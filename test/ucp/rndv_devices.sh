#!/bin/sh
#
# rndv_devices.sh LAUNCHER PORT: how UCP spreads a rendezvous message over
# uccl's devices (sv0, sv1). One uccl device already spreads a GET over
# all its paths, and each device's GET costs its own request and
# completion, so a message of one chunk (64 KiB) must be read over one
# device only; a large one (1 MiB) still over both. Measured from
# softverbs' per-port counters of the sending process (whose device
# serves the receiver's GETs): the bytes each of its ports sent, in UCX's
# own benchmark (ucx_perftest -t tag_bw, UCX_TLS=uccl,self).
#
set -u
run=${1:?usage: rndv_devices.sh LAUNCHER PORT}
port=${2:?usage: rndv_devices.sh LAUNCHER PORT}
limit=${UCCL_TEST_TIMEOUT:-120}
export UCX_TLS=uccl,self
. "$(dirname "$0")/fabric.sh"
. "$(dirname "$0")/../uct/listen.sh"
uccl_fabric_setup rndv_dev
tmp=$(mktemp -d /tmp/uccl-rndv.XXXXXX) || exit 1
trap 'rm -rf "$tmp"; uccl_fabric_cleanup' EXIT
nompi=$(uccl_perftest_nompi "$run")
fail=0

# port_bytes STATS DEV: bytes the process's port on DEV sent
port_bytes() {
    p=$(awk -v d="$2" '$1 ~ /^port\.[0-9]+\.dev$/ && $2 == d {
                           split($1, f, "."); print f[2] }' "$1")
    awk -v k="port.$p.tx_bytes" '$1 == k { print $2 }' "$1"
}

# measure SIZE ITERS: the sender's bytes on sv0 and sv1, as "A B"
measure() {
    SOFTVERBS_STATS=$tmp/server timeout "$limit" "$run" ucx_perftest \
        $nompi -p "$port" >"$tmp/server.log" 2>&1 &
    server=$!
    if ! uccl_wait_listen "$port" $server; then
        cat "$tmp/server.log"
        echo "FAIL: the server did not listen" >&2
        exit 1
    fi
    SOFTVERBS_STATS=$tmp/client timeout "$limit" "$run" ucx_perftest \
        $nompi localhost -p "$port" -t tag_bw -s "$1" -n "$2" \
        >"$tmp/client.log" 2>&1
    client_rc=$?
    wait $server
    uccl_pair_report server $? "$tmp/server.log" client $client_rc \
        "$tmp/client.log" >&2 || exit 1
    echo "$(port_bytes "$tmp/client" sv0) $(port_bytes "$tmp/client" sv1)"
    port=$((port + 1))
}

# check SIZE ITERS WANT: WANT "one" (>= 95% on one device) or "both"
# (>= 25% on each)
check() {
    set -- "$1" "$2" "$3" $(measure "$1" "$2")
    total=$(($4 + $5))
    if [ -z "$4" ] || [ -z "$5" ] || [ $total -lt $(($1 * $2)) ]; then
        echo "FAIL: $1 B: sv0 $4 sv1 $5 bytes sent, expected at least" \
             "$(($1 * $2))"
        fail=1
        return
    fi
    small=$4
    [ "$5" -lt "$small" ] && small=$5
    echo "$1 B x $2: sv0 sent $4 bytes, sv1 $5"
    if [ "$3" = one ] && [ $((small * 20)) -gt $total ]; then
        echo "FAIL: a $1 B message was split over both devices"
        fail=1
    elif [ "$3" = both ] && [ $((small * 4)) -lt $total ]; then
        echo "FAIL: $1 B messages did not use both devices"
        fail=1
    fi
}

check 65536 2000 one
check 1048576 300 both
[ $fail = 0 ] && echo PASS
exit $fail

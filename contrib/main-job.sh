#!/bin/sh
#
# The main job: real UCX traffic (ucx_perftest UCP tag tests and NetPIPE over
# Open MPI) over uccl,
# beside UCX's own rc_verbs/ud_verbs on the same (soft)verbs fabric and tcp,
# on a clean fabric and with 1% packet loss. Prints a table.
#
#   contrib/main-job.sh        (uses `uccl-run` from PATH, or UCCL_RUN)
#
# Environment: MAIN_ITERS (latency iterations, default 20000),
# MAIN_BW_ITERS (bandwidth iterations, default 2000), MAIN_NP_ITERS (NetPIPE
# repeats per size, default 30), MAIN_TIMEOUT (s per run, default 180).
#
set -u
run=${UCCL_RUN:-$(command -v uccl-run)}
[ -x "$run" ] ||
    { echo "main-job: uccl-run not found (run contrib/setup.sh)" >&2; exit 1; }
iters=${MAIN_ITERS:-20000}
bw_iters=${MAIN_BW_ITERS:-2000}
tmo=${MAIN_TIMEOUT:-180}
np_iters=${MAIN_NP_ITERS:-30}
port=$((20000 + $$ % 20000))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nic="a real RDMA NIC"
if "$run" --print-env | grep -q 'NIC: softverbs'; then
    nic="softverbs, the user-space RDMA NIC (this machine has no RDMA device)"
fi

# ucx_perftest built with MPI (UCX 1.18 in Debian 13) defaults to MPI mode
# (-P 1) and then wants mpirun: client/server runs switch it off.
nompi=""
"$run" ucx_perftest -h 2>&1 | grep -q -- '-P <0|1>' && nompi="-P 0"

# the client starts once its server listens (uccl_wait_listen)
. "$(dirname "$0")/../test/uct/listen.sh"

# perftest TLS LOSS TEST SIZE ITERS: prints the Final line's latency (us) for
# *_lat tests or bandwidth (MB/s) for *_bw tests, or FAIL. It runs in a
# $(...) subshell: the caller moves the port (next_port) before each run.
next_port() {
    port=$((port + 1))
}
perftest() {
    tls=$1 loss=$2 test=$3 size=$4 n=$5
    fabric="main$$_$port"
    env="UCX_TLS=$tls SOFTVERBS_FABRIC=$fabric SOFTVERBS_LOSS=$loss"
    env $env timeout "$tmo" "$run" ucx_perftest $nompi -p $port -c 0 \
        >"$tmp/srv.log" 2>&1 &
    srv=$!
    rc=1
    if uccl_wait_listen $port $srv; then
        env $env timeout "$tmo" "$run" ucx_perftest $nompi localhost \
            -p $port -c 1 -t "$test" -s "$size" -n "$n" >"$tmp/cli.log" 2>&1
        rc=$?
    fi
    wait $srv 2>/dev/null
    line=$(grep '^Final:' "$tmp/cli.log")
    if [ $rc -ne 0 ] || [ -z "$line" ]; then
        echo FAIL
        cp "$tmp/cli.log" "$tmp/fail-$tls-$test-$size.log" 2>/dev/null
        return
    fi
    case $test in
        *_lat) echo "$line" | awk '{printf "%.2f", $4}' ;;
        *)     echo "$line" | awk '{printf "%.0f", $7}' ;;
    esac
}

# netpipe TLS LOSS: NetPIPE (Open MPI, pml ucx) 8 B latency (us) and 1 MiB
# bandwidth (MB/s), as "LAT BW", or "FAIL FAIL".
netpipe() {
    tls=$1 loss=$2
    out=$tmp/np.out
    rm -f "$out"
    UCX_TLS=$tls SOFTVERBS_FABRIC="main$$_np$port" SOFTVERBS_LOSS=$loss \
        timeout "$tmo" "$run" mpirun -np 2 --bind-to core \
        NPopenmpi -l 8 -u 1048576 -p 0 -n "$np_iters" -o "$out" \
        >"$tmp/np.log" 2>&1
    if [ $? -ne 0 ] || [ ! -s "$out" ]; then
        cp "$tmp/np.log" "$tmp/fail-$tls-netpipe.log"
        echo "FAIL FAIL"
        return
    fi
    awk '$1 == 8 {lat = $3 * 1e6} $1 == 1048576 {bw = $2 / 8}
         END {printf "%.2f %.0f", lat, bw}' "$out"
}

echo "uccl main job: UCX traffic over uccl"
echo "NIC: $nic"
echo "ucx_perftest UCP tag tests (server and client on cores 0 and 1) and"
echo "NetPIPE over Open MPI pml ucx, two ranks"
echo
printf '| %-8s | %-22s | %12s | %12s | %12s | %12s | %12s |\n' fabric \
    transports "tag_lat 8 B" "tag_bw 64K" "tag_bw 1M" "NetPIPE 8 B" \
    "NetPIPE 1M"
printf '| %-8s | %-22s | %12s | %12s | %12s | %12s | %12s |\n' "" "" \
    "us" "MB/s" "MB/s" "us" "MB/s"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' ---------- ------------------------ \
    -------------- -------------- -------------- -------------- \
    --------------
for loss in 0 0.01; do
    [ "$loss" = 0 ] && fabric=clean || fabric="1% loss"
    for tls in uccl,self rc_verbs,ud_verbs,self tcp,self; do
        if [ "$tls" = tcp,self ] && [ "$loss" != 0 ]; then
            continue    # loopback TCP does not cross the lossy fabric
        fi
        next_port; lat=$(perftest $tls $loss tag_lat 8 "$iters")
        next_port; bw64=$(perftest $tls $loss tag_bw 65536 "$bw_iters")
        next_port; bw1m=$(perftest $tls $loss tag_bw 1048576 "$bw_iters")
        next_port; np=$(netpipe $tls $loss)
        printf '| %-8s | %-22s | %12s | %12s | %12s | %12s | %12s |\n' \
            "$fabric" "$tls" "$lat" "$bw64" "$bw1m" ${np% *} ${np#* }
    done
done
echo
echo "latency: one-way (half a round trip); bandwidth: overall average."
fails=$(ls "$tmp"/fail-* 2>/dev/null | wc -l)
if [ "$fails" -gt 0 ]; then
    echo "$fails run(s) failed; first failure log:"
    tail -n 15 "$(ls "$tmp"/fail-* | head -n1)"
    exit 1
fi

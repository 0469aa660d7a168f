#!/bin/sh
#
# Benchmark (label bench): uccl on a clean fabric beside UCX's own verbs
# transports, in one run, rounds interleaved, medians and ratios:
#   UCP (ucx_perftest, UCX_TLS):  tag_lat 8 B and 4 KiB, tag_bw 64 KiB
#                                 and 1 MiB; ucp_get 4 KiB from a passive
#                                 target (perftest's server calls progress
#                                 only about once a millisecond);
#   NetPIPE (Open MPI pml ucx):   8 B latency, 1 MiB bandwidth;
#   UCT (ucx_perftest -x):        am_lat 8 B, put_bw 64 KiB and 1 MiB;
# for uccl in UC mode, uccl in RC mode and rc_verbs,ud_verbs, each on a
# fabric without delay and with SOFTVERBS_DELAY_US=2 (a hardware ACK and a
# software ACK then both pay the wire).
#
# The ucx_perftest latency rows are its 50th percentile (the "Final:"
# line's third field), not its average: on a small shared machine a few
# iterations that wait out a descheduled process weigh more in the average
# than all the others.
#
#   uccl_clean.sh BUILDDIR
#
# BENCH_ROUNDS (3), BENCH_TIMEOUT (180 s), BENCH_DELAYS ("0 2"),
# BENCH_LAT_ITERS (20000), BENCH_BW_ITERS (2000), BENCH_NP_ITERS (20);
# BENCH_RT=PRIO runs the ucx_perftest pairs under SCHED_FIFO (bench_lib.sh's
# bench_rt; the NetPIPE rows stay at normal priority); BENCH_TOUCH=1 writes
# ucx_perftest's UCP buffers before each test (bench_lib.sh's bench_touch:
# unwritten, an RDMA READ of them costs softverbs less than an
# application's data would).
set -u
build=${1:?usage: $0 BUILDDIR}
rounds=${BENCH_ROUNDS:-3}
lat_n=${BENCH_LAT_ITERS:-20000}
bw_n=${BENCH_BW_ITERS:-2000}
np_n=${BENCH_NP_ITERS:-20}
. "$(dirname "$0")/bench_lib.sh"
bench_setup "$build" "${BENCH_TIMEOUT:-180}"

# the three transports: UCX_TLS for UCP and NetPIPE, -x and mode for UCT
configs="uccl_uc uccl_rc rc_verbs"
tls_of() {
    case $1 in
        uccl_uc)  echo "UCX_TLS=uccl,self UCX_UCCL_MODE=uc" ;;
        uccl_rc)  echo "UCX_TLS=uccl,self UCX_UCCL_MODE=rc" ;;
        rc_verbs) echo "UCX_TLS=rc_verbs,ud_verbs,self" ;;
    esac
}
uct_of() {
    case $1 in
        rc_verbs) echo "rc_verbs" ;;
        *)        echo "uccl" ;;
    esac
}

# ucp CFG DELAY TEST SIZE ITERS: latency (us) or bandwidth (MB/s); the
# caller moves the port (this runs in a $(...) subshell)
ucp() {
    BENCH_ENV="$(tls_of "$1") SOFTVERBS_DELAY_US=$2" bench_pair \
        ucx_perftest -p $port -- \
        ucx_perftest localhost -p $port -t "$3" -s "$4" -n "$5" |
        awk -v t="$3" '/^Final:/ {
            if (t ~ /_lat$|_get$/) printf "%.2f", $3
            else printf "%.0f", $7 }'
}
uct() {
    BENCH_ENV="$(tls_of "$1") SOFTVERBS_DELAY_US=$2" bench_pair \
        ucx_perftest -p $port -- \
        ucx_perftest localhost -p $port -x "$(uct_of "$1")" -d sv0:1 \
        -t "$3" -D "$4" -s "$5" -n "$6" |
        awk -v t="$3" '/^Final:/ {
            if (t ~ /_lat$/) printf "%.2f", $3; else printf "%.0f", $7 }'
}
# netpipe CFG DELAY: "LAT BW" (us, MB/s)
netpipe() {
    bench_netpipe "$(tls_of "$1") SOFTVERBS_DELAY_US=$2" 8 1048576 "$np_n"
    awk '$1 == 8 {lat = $3 * 1e6} $1 == 1048576 {bw = $2 / 8}
         END {if (lat > 0) printf "%.2f %.0f", lat, bw}' "$tmp/np.out" \
        2>/dev/null
}

# rec NAME CMD...: CMD's number appended to NAME's file of this config
# and delay (an empty line when it failed)
rec() {
    _f=$tmp/$1.$_c.$_d
    shift
    "$@" >> "$_f"
    echo >> "$_f"
}

# one round of everything for config $1 and delay $2 (in this shell: it
# moves the port before each pair)
measure() {
    _c=$1 _d=$2
    bench_next_port; rec ucp_lat8 ucp "$_c" "$_d" tag_lat 8 "$lat_n"
    bench_next_port; rec ucp_lat4k ucp "$_c" "$_d" tag_lat 4096 "$lat_n"
    bench_next_port; rec ucp_bw64k ucp "$_c" "$_d" tag_bw 65536 "$bw_n"
    bench_next_port; rec ucp_bw1m ucp "$_c" "$_d" tag_bw 1048576 "$bw_n"
    bench_next_port; rec ucp_get4k ucp "$_c" "$_d" ucp_get 4096 "$bw_n"
    bench_next_port; _np=$(netpipe "$_c" "$_d")
    echo "${_np% *}" >> "$tmp/np_lat8.$_c.$_d"
    echo "${_np#* }" >> "$tmp/np_bw1m.$_c.$_d"
    bench_next_port; rec uct_am_lat uct "$_c" "$_d" am_lat short 8 "$lat_n"
    bench_next_port; rec uct_put64k uct "$_c" "$_d" put_bw zcopy 65536 "$bw_n"
    bench_next_port
    rec uct_put1m uct "$_c" "$_d" put_bw zcopy 1048576 "$bw_n"
}

delays=${BENCH_DELAYS:-0 2}
r=0
while [ $r -lt "$rounds" ]; do
    for d in $delays; do
        for c in $(bench_rotate $r $configs); do
            measure "$c" "$d"
        done
    done
    r=$((r + 1))
done

echo "uccl on a clean fabric (softverbs), medians of $rounds interleaved rounds"
for d in $delays; do
    echo
    echo "fabric delay ${d} us"
    echo
    echo "| measurement | uccl UC | uccl RC | rc_verbs | UC/rc_verbs |" \
         "RC/rc_verbs |"
    echo "|---|---|---|---|---|---|"
    for m in "ucp_lat8:UCP tag_lat 8 B (us)" \
             "ucp_lat4k:UCP tag_lat 4 KiB (us)" \
             "ucp_bw64k:UCP tag_bw 64 KiB (MB/s)" \
             "ucp_bw1m:UCP tag_bw 1 MiB (MB/s)" \
             "ucp_get4k:UCP get 4 KiB, passive target (us)" \
             "np_lat8:NetPIPE 8 B (us)" \
             "np_bw1m:NetPIPE 1 MiB (MB/s)" "uct_am_lat:UCT am_lat 8 B (us)" \
             "uct_put64k:UCT put_bw 64 KiB (MB/s)" \
             "uct_put1m:UCT put_bw 1 MiB (MB/s)"; do
        key=${m%%:*}
        uc=$(bench_median "$tmp/$key.uccl_uc.$d")
        rc=$(bench_median "$tmp/$key.uccl_rc.$d")
        vb=$(bench_median "$tmp/$key.rc_verbs.$d")
        echo "| ${m#*:} | ${uc:-FAIL} | ${rc:-FAIL} | ${vb:-FAIL} |" \
             "$(bench_ratio "$uc" "$vb") | $(bench_ratio "$rc" "$vb") |"
    done
done
echo
echo "Latencies: one way (half a round trip), lower is better; ratios above"
echo "1 mean uccl is slower. UCP and UCT latencies are ucx_perftest's 50th"
echo "percentile. Bandwidths: higher is better. UCT rows use -x uccl or -x"
echo "rc_verbs on sv0:1; UCP and NetPIPE rows UCX_TLS."

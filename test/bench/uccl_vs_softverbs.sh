#!/bin/sh
#
# Benchmark (label bench): uccl beside the raw softverbs NIC it runs on, with
# the link model off, in one run:
#   - 1 MiB bandwidth: ucx_perftest -x uccl put_bw (UC and RC mode; one
#     PUT outstanding, its default, and 8) vs perftest ib_write_bw (one RC
#     QP, RDMA WRITE stream) of 1 MiB and of 64 KiB WRITEs (uccl's chunk);
#   - 8 B latency:     ucx_perftest -x uccl am_lat vs ib_send_lat.
# Each extra argument is a set of environment assignments for the uccl runs,
# compared side by side (e.g. UCCL_LIBDIR=/old/build/.libs for the build
# before a change); "-" is the build as it is. Rounds interleave everything
# (the order of the configurations rotates); medians are reported, with
# each configuration's ratio to the raw NIC and to the first configuration.
#
#   uccl_vs_softverbs.sh BUILDDIR [ENV|-]...
#
# BENCH_ROUNDS (3), BENCH_TIMEOUT (180 s per process).
set -u
build=${1:?usage: $0 BUILDDIR [ENV|-]...}
shift
[ $# -gt 0 ] || set -- -
rounds=${BENCH_ROUNDS:-3}
. "$(dirname "$0")/bench_lib.sh"
bench_setup "$build" "${BENCH_TIMEOUT:-180}"

# raw softverbs: perftest, after a short warm-up run of the same kind
# (ucx_perftest warms up by itself)
sv_bw() {
    bench_next_port
    bench_pair ib_write_bw -d sv0 -s "$1" -n 200 -F -p $port -- \
        ib_write_bw -d sv0 -s "$1" -n 200 -F -p $port localhost >/dev/null
    bench_next_port
    bench_pair ib_write_bw -d sv0 -s "$1" -n "$2" -F --perform_warm_up \
        -p $port -- ib_write_bw -d sv0 -s "$1" -n "$2" -F --perform_warm_up \
        -p $port localhost | awk -v s="$1" '$1 == s {print $4}'  # MB/s
}
sv_lat() {
    bench_next_port
    bench_pair ib_send_lat -d sv0 -s 8 -n 2000 -F -p $port -- \
        ib_send_lat -d sv0 -s 8 -n 2000 -F -p $port localhost >/dev/null
    bench_next_port
    bench_pair ib_send_lat -d sv0 -s 8 -n 20000 -F -p $port -- \
        ib_send_lat -d sv0 -s 8 -n 20000 -F -p $port localhost |
        awk '$1 == 8 {print $6}'               # t_avg, us (one way)
}

# uccl CFG MODE ARGS...: the Final line of ucx_perftest -x uccl (the
# caller moves the port: this runs in a pipeline's subshell)
uccl() {
    _cfg=$1 _mode=$2
    shift 2
    [ "$_cfg" = - ] && _cfg=""
    BENCH_ENV="UCX_UCCL_MODE=$_mode $_cfg" bench_pair \
        ucx_perftest -p $port -- \
        ucx_perftest localhost -p $port -x uccl -d sv0:1 "$@" |
        grep '^Final:'
}
uccl_bw() {
    _cfg=$1 _mode=$2
    shift 2
    bench_next_port
    uccl "$_cfg" "$_mode" -t put_bw -D zcopy -s 1048576 -n 2000 "$@" |
        awk '{print $7}'
}
uccl_lat() {
    bench_next_port
    uccl "$1" "$2" -t am_lat -D short -s 8 -n 20000 | awk '{print $4}'
}

# a file name for a configuration's results
cfg_key() {
    printf '%s' "$1" | cksum | awk '{print $1}'
}

# every measurement runs in this shell (not in a $(...) subshell), so the
# port moves on between pairs; results are appended to files
r=0
while [ $r -lt "$rounds" ]; do
    sv_bw 1048576 2000 >> "$tmp/sv_bw"
    sv_bw 65536 20000  >> "$tmp/sv_bw64"
    sv_lat             >> "$tmp/sv_lat"
    bench_rotate $r "$@" > "$tmp/order"
    while IFS= read -r cfg; do
        k=$(cfg_key "$cfg")
        uccl_bw "$cfg" uc      >> "$tmp/uc_bw.$k"
        uccl_bw "$cfg" rc      >> "$tmp/rc_bw.$k"
        uccl_bw "$cfg" uc -O 8 >> "$tmp/uc_bw8.$k"
        uccl_bw "$cfg" rc -O 8 >> "$tmp/rc_bw8.$k"
        uccl_lat "$cfg" uc     >> "$tmp/uc_lat.$k"
        uccl_lat "$cfg" rc     >> "$tmp/rc_lat.$k"
    done < "$tmp/order"
    r=$((r + 1))
done

sv_bw=$(bench_median "$tmp/sv_bw")
sv_bw64=$(bench_median "$tmp/sv_bw64")
sv_lat=$(bench_median "$tmp/sv_lat")
echo "raw softverbs: 1 MiB WRITE ${sv_bw:-FAIL} MB/s, 64 KiB WRITE" \
     "${sv_bw64:-FAIL} MB/s, 8 B SEND ${sv_lat:-FAIL} us"
echo
echo "| config | mode | 1 MiB MB/s | /raw | -O 8 MB/s | /raw | 8 B us |" \
     "/raw | 1 MiB /first | 8 B /first |"
echo "|---|---|---|---|---|---|---|---|---|---|"
first=$(cfg_key "$1")
ok=1
for cfg in "$@"; do
    k=$(cfg_key "$cfg")
    for mode in uc rc; do
        bw=$(bench_median "$tmp/${mode}_bw.$k")
        bw8=$(bench_median "$tmp/${mode}_bw8.$k")
        lat=$(bench_median "$tmp/${mode}_lat.$k")
        bw0=$(bench_median "$tmp/${mode}_bw.$first")
        lat0=$(bench_median "$tmp/${mode}_lat.$first")
        [ -n "$bw" ] && [ -n "$lat" ] || ok=0
        echo "| $cfg | $mode | ${bw:-FAIL} | $(bench_ratio "$bw" "$sv_bw") |" \
             "${bw8:-FAIL} | $(bench_ratio "$bw8" "$sv_bw") |" \
             "${lat:-FAIL} | $(bench_ratio "$lat" "$sv_lat") |" \
             "$(bench_ratio "$bw" "$bw0") | $(bench_ratio "$lat" "$lat0") |"
    done
done
echo
echo "raw: perftest ib_write_bw -s 1048576 (and -s 65536, uccl's chunk size) /"
echo "ib_send_lat -s 8 on softverbs, each after a short warm-up run; uccl:"
echo "ucx_perftest -x uccl put_bw zcopy 1 MiB / am_lat short 8 B. Medians of"
echo "$rounds interleaved rounds. ucx_perftest's put_bw waits for each PUT to"
echo "complete before the next (one outstanding: a UC PUT completes when the"
echo "peer's ACK is back); ib_write_bw keeps 128 WRITEs in flight. The -O 8"
echo "column keeps 8 PUTs outstanding. Goal: uccl put_bw at 1 MiB >= 0.80 x"
echo "raw."
[ -n "$sv_bw" ] && [ $ok = 1 ]

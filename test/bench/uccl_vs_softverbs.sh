#!/bin/sh
#
# Benchmark (label bench): uccl beside the raw softverbs NIC it runs on, with
# the link model off, in one run:
#   - 1 MiB bandwidth: ucx_perftest -x uccl put_bw (UC and RC mode; one
#     PUT outstanding, its default, and 8) vs perftest ib_write_bw (one RC
#     QP, RDMA WRITE stream) of 1 MiB and of 64 KiB WRITEs (uccl's chunk);
#   - 8 B latency:     ucx_perftest -x uccl am_lat vs ib_send_lat.
# Prints a markdown table and the ratios.
#
#   uccl_vs_softverbs.sh BUILDDIR
#
set -u
build=${1:?usage: $0 BUILDDIR}
run=$build/contrib/uccl-run
tmo=${BENCH_TIMEOUT:-180}
port=$((30000 + $$ % 10000))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# pair SERVER_CMD -- CLIENT_CMD: runs both on a fresh fabric named after
# $port, prints the client's output. The loop below bumps $port before each
# measurement: a bump inside $(...) would be lost with the subshell.
pair() {
    export SOFTVERBS_FABRIC="bench$$_$port"
    srv=""
    while [ "$1" != "--" ]; do srv="$srv $1"; shift; done
    shift
    # shellcheck disable=SC2086
    timeout "$tmo" taskset -c 0 "$run" $srv >"$tmp/srv.log" 2>&1 &
    pid=$!
    sleep 1
    timeout "$tmo" taskset -c 1 "$run" "$@" 2>&1
    wait $pid
}

sv_bw_run() {
    pair ib_write_bw -d sv0 -s "$1" -n "$2" -F -p $port -- \
         ib_write_bw -d sv0 -s "$1" -n "$2" -F -p $port localhost |
         awk -v s="$1" '$1 == s {print $4}'     # BW average, MB/s
}
sv_lat_run() {
    pair ib_send_lat -d sv0 -s 8 -n 20000 -F -p $port -- \
         ib_send_lat -d sv0 -s 8 -n 20000 -F -p $port localhost |
         awk '$1 == 8 {print $6}'               # t_avg, us (one way)
}
uccl() {
    mode=$1; shift
    export UCX_UCCL_MODE=$mode
    pair ucx_perftest -p $port -- \
        ucx_perftest localhost -p $port -x uccl -d sv0:1 "$@" |
        grep '^Final:'
}
uccl_bw()  {
    mode=$1; shift
    uccl "$mode" -t put_bw -D zcopy -s 1048576 -n 2000 "$@" | awk '{print $7}'
}
uccl_lat() { uccl "$1" -t am_lat -D short -s 8 -n 20000 | awk '{print $4}'; }

# The machine is shared and noisy: every measurement runs ROUNDS times,
# interleaved, and the median is reported.
rounds=${BENCH_ROUNDS:-3}
for r in $(seq "$rounds"); do
    port=$((port + 1)); echo "$(sv_bw_run 1048576 2000)" >> "$tmp/sv_bw"
    port=$((port + 1)); echo "$(sv_bw_run 65536 20000)"  >> "$tmp/sv_bw64"
    port=$((port + 1)); echo "$(uccl_bw uc)"             >> "$tmp/uc_bw"
    port=$((port + 1)); echo "$(uccl_bw rc)"             >> "$tmp/rc_bw"
    port=$((port + 1)); echo "$(uccl_bw uc -O 8)"        >> "$tmp/uc_bw8"
    port=$((port + 1)); echo "$(uccl_bw rc -O 8)"        >> "$tmp/rc_bw8"
    port=$((port + 1)); echo "$(sv_lat_run)"             >> "$tmp/sv_lat"
    port=$((port + 1)); echo "$(uccl_lat uc)"            >> "$tmp/uc_lat"
    port=$((port + 1)); echo "$(uccl_lat rc)"            >> "$tmp/rc_lat"
done
median() {
    grep -v '^$' "$tmp/$1" | sort -g |
        awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'
}
sv_bw=$(median sv_bw);   sv_bw64=$(median sv_bw64)
uc_bw=$(median uc_bw);   rc_bw=$(median rc_bw)
uc_bw8=$(median uc_bw8); rc_bw8=$(median rc_bw8)
sv_lat=$(median sv_lat); uc_lat=$(median uc_lat); rc_lat=$(median rc_lat)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a > 0 && b > 0) printf "%.2f", a / b; else print "n/a"}'; }

echo "| measurement | raw softverbs | uccl UC | uccl RC | UC/raw | RC/raw |"
echo "|---|---|---|---|---|---|"
echo "| 1 MiB bandwidth (MB/s) | ${sv_bw:-FAIL} | ${uc_bw:-FAIL} | ${rc_bw:-FAIL} | $(ratio "$uc_bw" "$sv_bw") | $(ratio "$rc_bw" "$sv_bw") |"
echo "| same, raw in 64 KiB WRITEs | ${sv_bw64:-FAIL} | | | $(ratio "$uc_bw" "$sv_bw64") | $(ratio "$rc_bw" "$sv_bw64") |"
echo "| 1 MiB, 8 PUTs outstanding (MB/s) | ${sv_bw:-FAIL} | ${uc_bw8:-FAIL} | ${rc_bw8:-FAIL} | $(ratio "$uc_bw8" "$sv_bw") | $(ratio "$rc_bw8" "$sv_bw") |"
echo "| 8 B latency (us) | ${sv_lat:-FAIL} | ${uc_lat:-FAIL} | ${rc_lat:-FAIL} | $(ratio "$uc_lat" "$sv_lat") | $(ratio "$rc_lat" "$sv_lat") |"
echo
echo "raw: perftest ib_write_bw -s 1048576 (and -s 65536, uccl's chunk size) /"
echo "ib_send_lat -s 8 on softverbs; uccl: ucx_perftest -x uccl put_bw zcopy"
echo "1 MiB / am_lat short 8 B. Medians of $rounds interleaved rounds."
echo "ucx_perftest's put_bw waits for each PUT to complete before the next"
echo "(one outstanding: a UC PUT completes when the peer's ACK is back);"
echo "ib_write_bw keeps 128 WRITEs in flight. The '8 PUTs' row is -O 8."
echo "Goal: uccl put_bw at 1 MiB >= 0.80 x raw."
[ -n "$sv_bw" ] && [ -n "$uc_bw" ]

#!/bin/sh
#
# Benchmark (label bench): instructions uccl spends per 64 KiB chunk, on
# the sender and on the receiver, counted by valgrind's callgrind (the
# same count for the same binary and input, whatever the machine does):
# ucx_perftest -t put_bw -x uccl -D zcopy -s 1 MiB, run with N1 and N2
# iterations; (count(N2) - count(N1)) / chunks between them, for the
# instructions inside libuct_uccl (UCS code inlined there included) and
# inside libsoftverbs. Polling while waiting (for an ACK, for the next
# PUT) counts too: it is CPU the transport burns, but it grows with the
# time a run takes, so compare builds in the same run, not with a goal.
#
#   uccl_callgrind.sh BUILDDIR [ENV...]      (e.g. UCX_UCCL_MODE=rc)
#
# CG_N1 (200), CG_N2 (1000), CG_SIZE (1048576), CG_TIMEOUT (900 s).
set -u
build=${1:?usage: $0 BUILDDIR [ENV...]}
shift
run=$build/contrib/uccl-run
n1=${CG_N1:-200}
n2=${CG_N2:-1000}
size=${CG_SIZE:-1048576}
tmo=${CG_TIMEOUT:-900}
chunk=65536
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/bench_lib.sh"
bench_port_init
command -v valgrind >/dev/null || { echo "valgrind not installed" >&2; exit 1; }

# run N: both sides under callgrind; outputs in $tmp/cg.{server,client}.N
cg_run() {
    bench_next_port
    # shellcheck disable=SC2086
    env "$@" SOFTVERBS_FABRIC="cg$$_$port" timeout "$tmo" "$run" \
        valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.server.$n" \
        ucx_perftest -p $port >"$tmp/srv.$n.log" 2>&1 &
    _srv=$!
    uccl_wait_listen $port $_srv 120 || { echo "server did not start" >&2;
                                          return 1; }
    # shellcheck disable=SC2086
    env "$@" SOFTVERBS_FABRIC="cg$$_$port" timeout "$tmo" "$run" \
        valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.client.$n" \
        ucx_perftest localhost -p $port -x uccl -d sv0:1 -t put_bw \
        -D zcopy -s "$size" -n "$n" >"$tmp/cli.$n.log" 2>&1
    wait $_srv
    rm -f "/dev/shm/softverbs.cg$$_$port" "/dev/shm/softverbs.cg$$_$port".*
}

# instructions of the functions of object OBJ in a callgrind output
cg_sum() {
    callgrind_annotate --threshold=100 --inclusive=no "$1" 2>/dev/null |
        awk -v obj="$2" 'index($0, obj) {
            gsub(",", "", $1); if ($1 ~ /^[0-9]+$/) s += $1 }
            END { print s + 0 }'
}

for n in $n1 $n2; do
    cg_run "$@" || exit 1
done
chunks=$(( (n2 - n1) * (size / chunk) ))
echo "callgrind: put_bw zcopy $size B, $n1 vs $n2 iterations" \
     "($chunks chunks of 64 KiB between them)${*:+, $*}"
echo
echo "| side | libuct_uccl instr. / chunk | libsoftverbs instr. / chunk |"
echo "|---|---|---|"
for side in client server; do
    u1=$(cg_sum "$tmp/cg.$side.$n1" libuct_uccl)
    u2=$(cg_sum "$tmp/cg.$side.$n2" libuct_uccl)
    s1=$(cg_sum "$tmp/cg.$side.$n1" libsoftverbs)
    s2=$(cg_sum "$tmp/cg.$side.$n2" libsoftverbs)
    name=sender; [ $side = server ] && name=receiver
    echo "| $name | $(( (u2 - u1) / chunks )) | $(( (s2 - s1) / chunks )) |"
done

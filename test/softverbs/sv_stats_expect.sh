#!/bin/sh
#
# sv_stats_expect.sh SV_VERBS_TEST SUBTEST N: a sub-test's counters, seen
# from outside. Runs SUBTEST with SOFTVERBS_STATS=<dir>/stats.%p, then
# matches each line it printed of the form
#   STATS_EXPECT <what> pid=<pid> lid=<lid> <key>=<value>...
# to that process's exit dump ("port.N.key value" lines,
# src/softverbs/sv_stats.c): the port with that LID must show each value.
# N: how many STATS_EXPECT lines the sub-test must print.
#
bin=${1:?usage: sv_stats_expect.sh PATH/sv_verbs_test SUBTEST N}
sub=${2:?usage: sv_stats_expect.sh PATH/sv_verbs_test SUBTEST N}
want=${3:?usage: sv_stats_expect.sh PATH/sv_verbs_test SUBTEST N}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/sv_stats_expect.XXXXXX)
trap 'rm -rf "$dir"' EXIT

SOFTVERBS_STATS="$dir/stats.%p" "$here/sv_run.sh" "$bin" "$sub" \
    >"$dir/out" 2>&1
rc=$?
cat "$dir/out"
[ $rc = 0 ] || { echo "FAIL: sv_verbs_test $sub exited with $rc"; exit 1; }

fail=0
found=0
while read -r tag what pid lid keys; do
    [ "$tag" = STATS_EXPECT ] || continue
    found=$((found + 1))
    pid=${pid#pid=}; lid=${lid#lid=}
    f="$dir/stats.$pid"
    if [ ! -f "$f" ]; then
        echo "FAIL: no SOFTVERBS_STATS dump $f for pid $pid"; fail=1; continue
    fi
    # the port of this process whose LID the program printed
    port=$(awk -v l="$lid" '$1 ~ /^port\.[0-9]+\.lid$/ && $2 == l {
               split($1, a, "."); print a[2]; exit }' "$f")
    if [ -z "$port" ]; then
        echo "FAIL: $what: no port with lid $lid in $f:"; cat "$f"; fail=1
        continue
    fi
    for kv in $keys; do
        key=${kv%%=*}; val=${kv#*=}
        got=$(awk -v k="port.$port.$key" '$1 == k { print $2 }' "$f")
        echo "$what (lid $lid, port $port): $key $got (expected $val)"
        if [ "$got" != "$val" ]; then
            echo "FAIL: $what: $key miscounted; dump:"; cat "$f"; fail=1
        fi
    done
done <"$dir/out"
[ $found = "$want" ] ||
    { echo "FAIL: expected $want STATS_EXPECT lines, got $found"; exit 1; }
[ $fail = 0 ] && echo "PASS: $sub's counters as expected"
exit $fail

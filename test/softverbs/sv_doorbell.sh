#!/bin/sh
#
# sv_doorbell.sh SV_VERBS_TEST: chained posting seen from outside. Runs the
# `doorbell` sub-test with SOFTVERBS_STATS=<dir>/stats.%p, then reads the
# initiator's exit dump ("port.N.key value" lines, src/softverbs/sv_stats.c)
# and checks the two ports it used: the chain of 16 WRs must count as
# doorbells 1 / wrs 16, the 16 single posts as doorbells 16 / wrs 16.
#
bin=${1:?usage: sv_doorbell.sh PATH/sv_verbs_test}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/sv_doorbell.XXXXXX)
trap 'rm -rf "$dir"' EXIT

SOFTVERBS_STATS="$dir/stats.%p" "$here/sv_run.sh" "$bin" doorbell \
    >"$dir/out" 2>&1
rc=$?
cat "$dir/out"
[ $rc = 0 ] || { echo "FAIL: sv_verbs_test doorbell exited with $rc"; exit 1; }

fail=0
found=0
while read -r tag kind pid dev lid db wrs; do
    [ "$tag" = DOORBELL_PORT ] || continue
    found=$((found + 1))
    pid=${pid#pid=}; dev=${dev#dev=}; lid=${lid#lid=}
    db=${db#doorbells=}; wrs=${wrs#wrs=}
    f="$dir/stats.$pid"
    if [ ! -f "$f" ]; then
        echo "FAIL: no SOFTVERBS_STATS dump $f for pid $pid"; fail=1; continue
    fi
    # the port of this process whose LID the program printed
    port=$(awk -v l="$lid" '$1 ~ /^port\.[0-9]+\.lid$/ && $2 == l {
               split($1, a, "."); print a[2]; exit }' "$f")
    if [ -z "$port" ]; then
        echo "FAIL: $kind: no port with lid $lid in $f:"; cat "$f"; fail=1
        continue
    fi
    got_db=$(awk -v k="port.$port.doorbells" '$1 == k { print $2 }' "$f")
    got_wrs=$(awk -v k="port.$port.wrs" '$1 == k { print $2 }' "$f")
    echo "$kind ($dev, lid $lid, port $port): doorbells $got_db (expected" \
         "$db), wrs $got_wrs (expected $wrs)"
    if [ "$got_db" != "$db" ] || [ "$got_wrs" != "$wrs" ]; then
        echo "FAIL: $kind posting miscounted; dump:"; cat "$f"; fail=1
    fi
done <"$dir/out"
[ $found = 2 ] || { echo "FAIL: expected 2 DOORBELL_PORT lines, got $found"; exit 1; }
[ $fail = 0 ] && echo "PASS: a chain of 16 WRs is one doorbell, 16 posts are 16"
exit $fail

#!/bin/sh
#
# sv_fabric_life.sh SV_VERBS_TEST SV_FABRIC_TOOL: a fabric's life cycle.
#
# 1. A run whose processes are killed (-9) leaves its fabric behind; the next
#    run on the same name must not inherit its model: SOFTVERBS_LOSS=0.5 then
#    0 must lose nothing, 0 then 0.5 must lose about half (the loss sub-test
#    checks both: exactly 0, or within 3 sigma).
# 2. After every clean run, nothing of the fabric is left in /dev/shm, also
#    not the segments of the killed processes.
#
# Needs SOFTVERBS_LIB; SOFTVERBS_FABRIC names the fabric (default t_life).
#
vt=$1
tool=$2
here=$(dirname "$0")
fab=${SOFTVERBS_FABRIC:-t_life}
export SOFTVERBS_FABRIC=$fab SVT_TIMEOUT=${SVT_TIMEOUT:-100}
fail() { echo "sv_fabric_life.sh: FAILED: $*" >&2; exit 1; }
files() { ls -d /dev/shm/softverbs."$fab" /dev/shm/softverbs."$fab".* \
          2>/dev/null; }

rm -f $(files)

# a process holding a port on the fabric, created with loss $1, then killed
# with -9 along with everything else: the fabric file stays
leave_stale() {
    out=$(mktemp)
    SOFTVERBS_LOSS=$1 "$here/sv_run.sh" "$tool" hold >"$out" 2>&1 &
    pid=$!
    i=0
    while ! grep -q ready "$out" && [ $i -lt 100 ]; do
        sleep 0.1; i=$((i + 1))
    done
    grep -q ready "$out" || { cat "$out"; fail "holder never opened sv0"; }
    kill -9 $pid
    wait $pid 2>/dev/null
    rm -f "$out"
    [ -e /dev/shm/softverbs."$fab" ] || fail "no stale fabric after kill -9"
    echo "stale fabric left by a kill -9 (SOFTVERBS_LOSS=$1):" $(files)
}

run() {
    echo "== sv_verbs_test loss with SOFTVERBS_LOSS=$1 on fabric $fab"
    SOFTVERBS_LOSS=$1 SVT_LOSS_MSGS=2048 "$here/sv_run.sh" "$vt" loss ||
        fail "loss sub-test with SOFTVERBS_LOSS=$1 on a fabric created" \
             "with SOFTVERBS_LOSS=$2 by a dead process"
    left=$(files)
    [ -z "$left" ] || fail "after a clean run, left in /dev/shm: $left"
    echo "after the clean run nothing of $fab is left in /dev/shm"
}

leave_stale 0.5
run 0 0.5
leave_stale 0
run 0.5 0
# two clean runs in a row: the second creates the fabric afresh
run 0.5 0.5
echo "sv_fabric_life.sh: passed"

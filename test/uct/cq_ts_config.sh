#!/bin/sh
#
# UCX_UCCL_CQ_TIMESTAMP against devices with both, one or no kind of
# completion timestamps (SOFTVERBS_CQ_TS): the iface (ucx_info -d) uses the
# kind asked for, try and yes take the raw clock before the wall clock,
# try falls back to plain completions, and asking for what the device
# lacks is one clear error and no iface, never a crash.
#   cq_ts_config.sh
# Environment: UCCL_RUN, SOFTVERBS_FABRIC.
#
set -u
run=${UCCL_RUN:?UCCL_RUN must name the uccl-run launcher}
out=$(mktemp /tmp/uccl-cq-ts.XXXXXX)
err=$(mktemp /tmp/uccl-cq-ts.XXXXXX)
trap 'rm -f "$out" "$err"' EXIT
rc=0

# what ucx_info said of uccl
show() {
    grep -h "uccl\|ERROR" "$out" "$err" | cut -c1-200
}

# check DEVICE_TS CONFIG EXPECT: EXPECT is raw, wallclock, none or "error"
check() {
    SOFTVERBS_CQ_TS=$1 UCX_UCCL_CQ_TIMESTAMP=$2 UCX_UCCL_STATS_DUMP=y \
        timeout 60 "$run" ucx_info -d >"$out" 2>"$err"
    status=$?
    used=$(sed -n 's/^uccl\[[0-9]*\] iface sv0:1 .* cq_ts \([a-z]*\):.*/\1/p' \
           "$err" | sort -u | tr '\n' ' ' | sed 's/ $//')
    what="device $1, UCX_UCCL_CQ_TIMESTAMP=$2"
    if cat "$out" "$err" | grep -q -i 'segmentation\|backtrace\|assert' ||
       [ $status -gt 1 ]; then
        echo "FAIL: $what: ucx_info exited with $status:"; show
        rc=1
    elif [ "$3" = error ]; then
        if [ -n "$used" ] ||
           ! grep -q "UCX_UCCL_CQ_TIMESTAMP=$2 but sv0 has no such" \
                "$out" "$err"; then
            echo "FAIL: $what: expected an error and no iface, got '$used':"
            show
            rc=1
        else
            echo "ok: $what: refused"
        fi
    elif [ "$used" != "$3" ]; then
        echo "FAIL: $what: expected cq_ts $3, got '$used':"; show
        rc=1
    else
        echo "ok: $what: $used"
    fi
}

check both try raw
check both yes raw
check both raw raw
check both wallclock wallclock
check both no none
check wallclock try wallclock
check wallclock yes wallclock
check wallclock raw error
check raw try raw
check raw wallclock error
check none try none
check none no none
check none yes error
check none wallclock error
[ $rc -eq 0 ] && echo PASS
exit $rc

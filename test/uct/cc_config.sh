#!/bin/sh
#
# UCX_UCCL_CC from the user: every algorithm the transport runs opens the
# uccl iface (ucx_info -d lists it); an unknown name and values the
# algorithm (or eqds's receiver pacer) refuses each give one clear error
# and no iface, never a crash. The link rate the algorithms use is the
# port's (softverbs reports its modelled link as speed x width) unless
# UCX_UCCL_CC_LINK_RATE names one.
#   cc_config.sh
# Environment: UCCL_RUN, SOFTVERBS_FABRIC.
#
set -u
run=${UCCL_RUN:?UCCL_RUN must name the uccl-run launcher}
out=$(mktemp /tmp/uccl-cc-config.XXXXXX)
trap 'rm -f "$out"' EXIT
rc=0

# info EXPECT VAR=VALUE...: EXPECT is "iface" or the error text
info() {
    expect=$1
    shift
    env "$@" timeout 60 "$run" ucx_info -d >"$out" 2>&1
    status=$?
    # what ucx_info says of the uccl ifaces
    uccl=$(grep -A6 'Transport: uccl' "$out")
    if grep -q -i 'segmentation\|backtrace\|assert' "$out" ||
       [ $status -gt 1 ] || [ -z "$uccl" ]; then
        echo "FAIL: $*: ucx_info exited with $status:"; cat "$out"
        rc=1
    elif [ "$expect" = iface ]; then
        if echo "$uccl" | grep -q 'failed to open\|ERROR'; then
            echo "FAIL: $*: no uccl iface:"; echo "$uccl"; rc=1
        else
            echo "ok: $*: uccl iface"
        fi
    elif ! echo "$uccl" | grep -q 'failed to open interface' ||
         ! echo "$uccl" | grep -q "$expect"; then
        echo "FAIL: $*: expected '$expect' and no iface:"; echo "$uccl"
        rc=1
    else
        echo "ok: $*: $(echo "$uccl" | grep -m1 "$expect" |
                        sed 's/.*UCX  ERROR //')"
    fi
}

# rate EXPECT VAR=VALUE...: every uccl iface's congestion control logs
# EXPECT ("link rate R Gbit/s (SOURCE)")
rate() {
    expect=$1
    shift
    env "$@" UCX_LOG_LEVEL=debug timeout 60 "$run" ucx_info -d >"$out" 2>&1
    got=$(grep -o 'link rate [0-9.]* Gbit/s ([^)]*)' "$out" | sort -u)
    if [ "$got" != "$expect" ]; then
        echo "FAIL: $*: expected '$expect', got '$got'"; rc=1
    else
        echo "ok: $*: $got"
    fi
}

rate "link rate 100.0 Gbit/s (the port's)" UCX_UCCL_CC=eqds
rate "link rate 25.0 Gbit/s (the port's)" UCX_UCCL_CC=eqds \
    SOFTVERBS_LINK_GBPS=25
rate "link rate 54.5 Gbit/s (the port's)" UCX_UCCL_CC=timely \
    SOFTVERBS_LINK_GBPS=60
rate "link rate 2.1 Gbit/s (UCX_UCCL_CC_LINK_RATE)" UCX_UCCL_CC=eqds \
    SOFTVERBS_LINK_GBPS=25 UCX_UCCL_CC_LINK_RATE=250MBs

for cc in fixed swift timely eqds; do
    info iface UCX_UCCL_CC=$cc
done
info iface UCX_UCCL_CC=eqds UCX_UCCL_CC_EQDS_SPEC=16k \
    UCX_UCCL_CC_EQDS_QUANTUM=16k UCX_UCCL_CC_EQDS_RATE=0.5
info "unknown congestion control 'bogus'" UCX_UCCL_CC=bogus
info "refuses its UCX_UCCL_CC_" UCX_UCCL_CC=eqds UCX_UCCL_CC_EQDS_CREDIT_CAP=4g
info "refuses its pacer" UCX_UCCL_CC=eqds UCX_UCCL_CC_EQDS_QUANTUM=2m
info "refuses its pacer" UCX_UCCL_CC=eqds UCX_UCCL_CC_EQDS_RATE=1.5
info "refuses its UCX_UCCL_CC_" UCX_UCCL_CC=swift UCX_UCCL_CC_SWIFT_MAX_MDF=2
info "refuses its UCX_UCCL_CC_" UCX_UCCL_CC=timely \
    UCX_UCCL_CC_TIMELY_T_LOW=1ms UCX_UCCL_CC_TIMELY_T_HIGH=100us
[ $rc -eq 0 ] && echo PASS
exit $rc

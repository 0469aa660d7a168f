#!/bin/sh
#
# ucx_info_lanes.sh LAUNCHER: with UCX_TLS=uccl,self, the endpoint UCP builds
# to a remote peer (`ucx_info -e -P inter`) must put active messages, RMA
# and rendezvous on uccl lanes. Skipped (exit 77) unless the transports
# under test (UCCL_TEST_TLS, default uccl,self) include uccl.
#
set -u

launcher=${1:?usage: ucx_info_lanes.sh LAUNCHER}
tls=${UCCL_TEST_TLS:-uccl,self}
case ",$tls," in
    *,uccl,*) ;;
    *) echo "SKIP: UCCL_TEST_TLS=$tls does not include uccl"; exit 77 ;;
esac

export UCX_TLS=uccl,self
. "$(dirname "$0")/fabric.sh"
uccl_fabric_setup lanes
fail=0

# run_info FEATURES: print and return ucx_info's endpoint configuration.
run_info() {
    echo "== UCX_TLS=$UCX_TLS ucx_info -e -u $1 -P inter" >&2
    timeout -k 5 60 "$launcher" ucx_info -e -u "$1" -P inter > "$out" 2>&1
    rc=$?
    cat "$out" >&2
    if [ $rc != 0 ]; then
        echo "FAIL: ucx_info -e -u $1 exited with $rc" >&2
        fail=1
    fi
}

# expect WHAT REGEX: a lane line that names uccl must match REGEX.
expect() {
    if grep 'lane\[' "$out" | grep 'uccl/' | grep -Eq "$2"; then
        echo "ok: $1 on a uccl lane"
    else
        echo "FAIL: no uccl lane for $1 (looked for '$2' in the lane lines)"
        fail=1
    fi
}

out=$(mktemp) || exit 1
trap 'rm -f "$out"; uccl_fabric_cleanup' EXIT

run_info t
expect "am (tag eager)" ' am( |$)'
expect "rndv (rma_bw lane)" ' rma_bw#'
if grep -q '<rndv>' "$out"; then
    echo "ok: tag_send switches to <rndv>"
else
    echo "FAIL: no <rndv> protocol in the tag_send lines"
    fail=1
fi
if grep 'lane\[' "$out" | grep -v 'uccl/' | grep -q .; then
    echo "FAIL: a lane on something other than uccl"
    fail=1
fi

run_info r
# UCX 1.13 prints RMA as put/get protocols of a lane (no rma# token), as it
# does for rc_verbs: every lane must be uccl and put and get must be served.
expect "rma" ' (am|rma(_bw)?#)'
for op in put get; do
    if grep -Eq "^# +$op\[[0-9]+\]: .*<zcopy>" "$out"; then
        echo "ok: $op goes over a lane with a zcopy protocol"
    else
        echo "FAIL: no $op protocol on the uccl lanes"
        fail=1
    fi
done
if grep 'lane\[' "$out" | grep -v 'uccl/' | grep -q .; then
    echo "FAIL: an rma lane on something other than uccl"
    fail=1
fi

[ $fail = 0 ] && echo "PASS: am, rma and rndv lanes are uccl"
exit $fail

#!/bin/sh
#
# The transport registers only with the UCX release it was built for:
#  1. as built, `ucx_info -c -f` lists UCX_UCCL_ variables;
#  2. with another release pretending to be loaded, exactly one error line
#     names both versions, and uccl is not registered (no UCX_UCCL_ variables,
#     no crash).
#
set -u
builddir=$1
run=$builddir/contrib/uccl-run
fake=$builddir/.libs/libfake_ucx_version.so
built=$(sed -n 's/^#define UCCL_UCX_VERSION_STR "\(.*\)"$/\1/p' "$builddir/config.h")
fail() { echo "FAIL: $*"; exit 1; }

n=$("$run" ucx_info -c -f 2>/dev/null | grep -c '^UCX_UCCL_')
echo "registered: $n UCX_UCCL_ variables (expected > 0)"
[ "$n" -gt 0 ] || fail "uccl did not register with the UCX it was built for"

out=$(LD_PRELOAD="$fake" UCCL_SOFTVERBS=0 "$run" ucx_info -c -f 2>&1)
rc=$?
errs=$(echo "$out" | grep -c '^uccl: transport built for UCX')
line=$(echo "$out" | grep '^uccl: transport built for UCX')
echo "exit code $rc (expected 0); error lines: $errs (expected 1): $line"
[ $rc -eq 0 ] || fail "ucx_info failed with a mismatched version"
[ "$errs" -eq 1 ] || fail "expected exactly one error line"
echo "$line" | grep -q "UCX $built but UCX 1.99.0 is loaded" ||
    fail "error line does not name both versions ($built, 1.99.0)"
n=$(echo "$out" | grep -c '^UCX_UCCL_')
echo "with mismatch: $n UCX_UCCL_ variables (expected 0)"
[ "$n" -eq 0 ] || fail "uccl registered with a mismatched UCX"
echo "PASS"

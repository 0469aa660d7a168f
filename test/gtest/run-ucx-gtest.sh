#!/bin/sh
#
# UCX's own UCT test suite (googletest, test/gtest in UCX's source) run on
# uccl over softverbs:
#
#   test/gtest/run-ucx-gtest.sh [BUILDDIR] [GTEST_ARGS...]
#
# BUILDDIR is a configured uccl build tree (default ./build) whose
# contrib/uccl-run preloads the transport and softverbs.
#
# 1. takes the source of exactly the installed UCX version (fetched by
#    contrib/setup.sh into $UCCL_CACHE, fetched here if missing);
# 2. copies its test/gtest and adds `uccl` to the transport list of the
#    generic UCT tests (uct/uct_test.h, next to tcp) and to the memory
#    domain components (uct/test_md.cc);
# 3. builds only googletest, the common harness and the generic UCT tests
#    (gtest.mk), against the installed UCX libraries and the installed
#    UCX's config.h (`ucx_info -b`); cached in
#    $UCCL_CACHE/ucx-gtest-VERSION-HASH (HASH: this script, gtest.mk and
#    the compiler version);
# 4. runs the uccl instances (filter uccl/*) on one softverbs device of a
#    fabric of their own, prints the passed/failed/skipped counts and fails
#    on any failed test or crash.
#
# Environment: UCCL_CACHE (default /var/cache/uccl), UCCL_GTEST_TIMEOUT
# (seconds for the whole run, default 1800), UCCL_GTEST_FILTER (default
# uccl/*), UCCL_GTEST_JOBS (parallel compiles, default nproc).
#
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
[ $# -gt 0 ] && shift
cache=${UCCL_CACHE:-/var/cache/uccl}
timeout_s=${UCCL_GTEST_TIMEOUT:-1800}
filter=${UCCL_GTEST_FILTER:-uccl/*}
jobs=${UCCL_GTEST_JOBS:-$(nproc)}

log() { echo "run-ucx-gtest: $*"; }
die() { echo "run-ucx-gtest: FAIL: $*" >&2; exit 1; }

run=$build/contrib/uccl-run
[ -x "$run" ] || die "$run not found: configure and build uccl first"

# --- UCX source of exactly the installed version ---------------------------
ucx_ver=$(pkg-config --modversion ucx-uct)
ucx_src=$cache/ucx-$ucx_ver
if [ ! -f "$ucx_src/test/gtest/uct/uct_test.h" ]; then
    ucx_deb=$(dpkg-query -W -f='${Version}' libucx-dev)
    log "fetching UCX $ucx_deb source into $cache"
    mkdir -p "$cache"
    (cd "$cache" && apt-get source -q "ucx=$ucx_deb" >/dev/null 2>&1) ||
        (cd "$cache" && apt-get source -q "ucx=$ucx_deb")
fi
[ -f "$ucx_src/test/gtest/uct/uct_test.h" ] ||
    die "UCX $ucx_ver gtest source not found in $ucx_src"

# --- cached build -----------------------------------------------------------
key=$( (cat "$0" "$here/gtest.mk"; ${CXX:-g++} --version | head -n1) |
       sha256sum | cut -c1-16)
out=$cache/ucx-gtest-$ucx_ver-$key
gtest=$out/gtest

# patch_gtest DIR: `uccl` next to tcp in the transport list of the generic
# UCT tests, and in the memory domain components of test_md.cc
patch_gtest() {
    sed -i 's/^\(    tcp, *\\\)$/\1\n    uccl,                    \\/' \
        "$1/uct/uct_test.h"
    sed -i 's/^\( *\)rdmacm \\$/\1rdmacm, \\\n\1uccl \\/' "$1/uct/test_md.cc"
    grep -q '^    uccl, ' "$1/uct/uct_test.h" &&
        grep -q '^ *uccl \\$' "$1/uct/test_md.cc" ||
        die "cannot add uccl to UCX $ucx_ver's test lists"
}

if [ ! -x "$gtest" ]; then
    log "building UCX $ucx_ver UCT gtest in $out (cold: a few minutes)"
    start=$(date +%s)
    tmp=$out.tmp.$$
    rm -rf "$tmp"
    mkdir -p "$tmp/src/test"
    trap 'rm -rf "$tmp"' EXIT
    cp -a "$ucx_src/test/gtest" "$tmp/src/test/gtest"
    patch_gtest "$tmp/src/test/gtest"
    (cd "$tmp" && nice make -f "$here/gtest.mk" -j"$jobs" \
         UCX_SRC="$ucx_src" GTEST_DIR="$tmp/src/test/gtest" gtest \
         >make.log 2>&1) ||
        { tail -n 40 "$tmp/make.log"; die "gtest build failed"; }
    rm -rf "$out"
    mv "$tmp" "$out"
    trap - EXIT
    log "built in $(( $(date +%s) - start )) s"
else
    log "using cached $gtest"
fi

# --- run ---------------------------------------------------------------------
# One softverbs device: the tests pair each device with itself only, a
# second one would run every test twice.
SOFTVERBS_FABRIC=ucx_gtest_$$
SOFTVERBS_DEVICES=1
export SOFTVERBS_FABRIC SOFTVERBS_DEVICES
cleanup() {
    rm -f "/dev/shm/softverbs.$SOFTVERBS_FABRIC" \
          "/dev/shm/softverbs.$SOFTVERBS_FABRIC".*
}
trap cleanup EXIT

# as UCX's `make -C test/gtest test`, but a crash prints a backtrace and
# ends the run instead of waiting for a debugger
export UCX_HANDLE_ERRORS=bt UCX_LOG_LEVEL=warn UCX_LOG_PRINT_ENABLE=y

results=$(mktemp)
rcfile=$(mktemp)
log "running $gtest --gtest_filter='$filter' $*"
start=$(date +%s)
{ timeout -k 10 "$timeout_s" "$run" "$gtest" --gtest_filter="$filter" "$@"
  echo $? >"$rcfile"; } 2>&1 | tee "$results"
rc=$(cat "$rcfile")
elapsed=$(( $(date +%s) - start ))

# A test UCX skips prints "[     SKIP ]" and then passes
counts=$(awk '
    /^\[ RUN      \]/          { skip = 0 }
    /^\[     SKIP \]/          { skip = 1 }
    /^\[       OK \]/          { if (skip) s++; else p++ }
    /^\[  FAILED  \].*\([0-9]+ ms\)$/ { f++ }
    END { printf "%d %d %d", p, f, s }' "$results")
set -- $counts
passed=$1 failed=$2 skipped=$3
grep -q '^\[==========\] .* ran\.' "$results" || {
    failed=$((failed + 1))
    log "the run did not finish (exit $rc): a crash or the ${timeout_s} s timeout"
}
rm -f "$results" "$rcfile"
log "UCX $ucx_ver UCT gtest on uccl: $passed passed, $failed failed," \
    "$skipped skipped in $elapsed s"
[ "$failed" -eq 0 ] && [ "$rc" -eq 0 ] || die "UCX gtest (exit $rc)"

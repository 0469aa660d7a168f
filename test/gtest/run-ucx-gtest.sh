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
#    domain components (uct/test_md.cc): patch-ucx-gtest.sh;
# 3. builds only googletest, the common harness and the generic UCT tests
#    (gtest.mk), against the installed UCX libraries and the installed
#    UCX's config.h (`ucx_info -b`); cached in
#    $UCCL_CACHE/ucx-gtest-VERSION-HASH (HASH: gtest.mk,
#    patch-ucx-gtest.sh and the compiler version);
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
key=$( (cat "$here/gtest.mk" "$here/patch-ucx-gtest.sh"
        ${CXX:-g++} --version | head -n1) | sha256sum | cut -c1-16)
out=$cache/ucx-gtest-$ucx_ver-$key
gtest=$out/gtest

# One build at a time (other worktrees may run this too); a build that
# did not finish is started over
mkdir -p "$cache"
exec 9>"$out.lock"
flock 9
if [ ! -f "$out/complete" ]; then
    log "building UCX $ucx_ver UCT gtest in $out (cold: a few minutes)"
    start=$(date +%s)
    rm -rf "$out"
    mkdir -p "$out/src/test"
    cp -a "$ucx_src/test/gtest" "$out/src/test/gtest"
    "$here/patch-ucx-gtest.sh" "$out/src/test/gtest"
    (cd "$out" && nice make -f "$here/gtest.mk" -j"$jobs" \
         UCX_SRC="$ucx_src" GTEST_DIR="$out/src/test/gtest" gtest \
         >make.log 2>&1) ||
        { tail -n 40 "$out/make.log"; die "gtest build failed"; }
    touch "$out/complete"
    log "built in $(( $(date +%s) - start )) s"
else
    log "using cached $gtest"
fi
exec 9>&-

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
{ rc=0
  timeout -k 10 "$timeout_s" "$run" "$gtest" --gtest_filter="$filter" "$@" ||
      rc=$?
  echo $rc >"$rcfile"; } 2>&1 | tee "$results"
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

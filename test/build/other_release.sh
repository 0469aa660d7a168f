#!/bin/sh
#
# A transport built for one UCX release, loaded into another real release
# (not a pretended version): exactly one error line names both, the program
# runs on, and uccl does not register (no UCX_UCCL_ variables).
#
# The other release is the machine's own UCX when uccl was built against a
# UCX of its own (contrib/setup.sh --ucx-src-version), or the ucx_info given
# in UCCL_OTHER_UCX_INFO. Skips (77) when the machine has only one release.
#
set -u
builddir=$1
transport=$builddir/.libs/libuct_uccl.so.0
info=${UCCL_OTHER_UCX_INFO:-/usr/bin/ucx_info}
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

built=$(sed -n 's/^#define UCCL_UCX_VERSION_STR "\(.*\)"$/\1/p' \
            "$builddir/config.h")
built_libdir=$(realpath "$(sed -n 's/^UCX_LIBDIR = //p' "$builddir/Makefile")")
[ -x "$info" ] || skip "no other ucx_info ($info)"
other_libdir=$(env -u LD_LIBRARY_PATH ldd "$info" |
               sed -n 's/.*libuct\.so\.0 => \(.*\)\/libuct\.so\.0 .*/\1/p')
[ -n "$other_libdir" ] || fail "cannot tell which libuct $info uses"
other_libdir=$(realpath "$other_libdir")
# "# Version 1.13.1" or "# Library version: 1.18.1"
other=$(LD_LIBRARY_PATH=$other_libdir "$info" -v | head -n1 |
        sed -n 's/^# [A-Za-z ]*[vV]ersion:\{0,1\} *\([0-9][0-9.]*\).*/\1/p')
echo "transport built for UCX $built ($built_libdir)"
echo "other release: UCX $other ($other_libdir, $info)"
[ "$other_libdir" != "$built_libdir" ] && [ "$other" != "$built" ] ||
    skip "only one UCX release on this machine"

# LD_LIBRARY_PATH comes before the transport's run path: the other
# release's libuct is the one loaded.
out=$(LD_LIBRARY_PATH=$other_libdir LD_PRELOAD=$transport "$info" -c -f 2>&1)
rc=$?
line=$(echo "$out" | grep '^uccl:')
errs=$(echo "$out" | grep -c '^uccl:')
echo "exit code $rc (expected 0); uccl lines: $errs (expected 1): $line"
[ $rc -eq 0 ] || fail "ucx_info failed with a transport of another release"
[ "$errs" -eq 1 ] || fail "expected exactly one line from uccl"
echo "$line" | grep -q "built for UCX $built but UCX $other is loaded" ||
    fail "the line does not name both releases ($built, $other)"
n=$(echo "$out" | grep -c '^UCX_UCCL_')
echo "UCX_UCCL_ variables: $n (expected 0)"
[ "$n" -eq 0 ] || fail "uccl registered with another release"
echo "PASS"

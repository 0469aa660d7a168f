#!/bin/sh
#
# configure refuses UCX internal headers of another version than the
# installed UCX, with one clear message.
#
set -u
srcdir=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/ucx/src/uct/base" "$tmp/build"
: > "$tmp/ucx/src/uct/base/uct_md.h"
printf 'define([ucx_ver_major], 1)\ndefine([ucx_ver_minor], 14)\ndefine([ucx_ver_patch], 0)\n' \
    > "$tmp/ucx/configure.ac"
cd "$tmp/build"
"$srcdir/configure" --with-ucx-src="$tmp/ucx" > out.log 2>&1
rc=$?
msg=$(grep 'configure: error:' out.log)
echo "configure exit code $rc (expected non-zero): $msg"
[ $rc -ne 0 ] || { echo "FAIL: configure accepted UCX 1.14.0 headers"; exit 1; }
echo "$msg" | grep -q "version '1.14.0' but the installed UCX is $(pkg-config --modversion ucx-uct)" ||
    { echo "FAIL: message does not name both versions"; exit 1; }
echo "PASS"

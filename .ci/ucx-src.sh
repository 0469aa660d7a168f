#!/bin/bash
#
# CI stage: uccl against a UCX release built from its Debian source package
# (contrib/setup.sh --ucx-src-version; the UCX build is cached under
# /var/cache/uccl/ucx-VER), then the uct and ucp labels. From UCX 1.22 on,
# uccl-run loads the transport through UCX_PLUGIN_PATH, not LD_PRELOAD.
#
#   .ci/ucx-src.sh [DEBIAN_SOURCE_VERSION]      default 1.23.0~rc1-1
#
# When the Debian archive does not give that source package the stage says
# so in a NOT RUN line and ends without failing: nothing was tested.
#
set -euo pipefail
cd "$(dirname "$0")/.."
ver=${1:-1.23.0~rc1-1}
t0=$(date +%s)
export UCCL_BUILD=$PWD/build-ucx-$ver

set +e
contrib/setup.sh --no-install --ucx-src-version "$ver"
rc=$?
set -e
if [ $rc -eq 3 ]; then
    echo "NOT RUN: UCX $ver from source: the Debian archive does not give its source package"
    exit 0
fi
[ $rc -eq 0 ] || exit $rc
echo "--- ucx-src: UCX $ver and uccl built after $(( $(date +%s) - t0 )) s"
"$UCCL_BUILD/contrib/uccl-run" --print-env
(cd "$UCCL_BUILD/test" && ctest --output-on-failure --timeout 600 -L 'uct|ucp')
echo "--- ucx-src: tests done after $(( $(date +%s) - t0 )) s"

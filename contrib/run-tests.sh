#!/bin/sh
#
# The README's test command: set up the machine, build, install, then run the
# whole test suite (all labels but `bench`) with CTest.
#
#   contrib/run-tests.sh [CTEST_ARGS...]     e.g. contrib/run-tests.sh -L unit
#
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/setup.sh"
build=${UCCL_BUILD:-$top/build}
cd "$build/test"
exec ctest --output-on-failure --timeout 600 -LE bench "$@"

#!/bin/bash
#
# CI stage: the README's test command in a Debian 13 (trixie) root made with
# debootstrap (contrib/debian-root.sh; the root, its packages and any UCX it
# builds are cached under /var/cache/uccl/roots).
#
#   .ci/debian13.sh [CTEST_ARGS...]     default: -L 'unit|softverbs|uct|ucp|mpi'
#
# uccl is built against trixie's own UCX (1.18.1) when the Debian archive
# gives its source package. When it does not (setup.sh exits 3), the stage
# says so and builds UCX 1.13.1 from bookworm's source package inside the
# root instead (contrib/setup.sh --ucx-src-version): everything else is
# still trixie's (compiler, rdma-core's libibverbs under softverbs, Open MPI
# 5), and test build_other_release then loads that transport into trixie's
# UCX 1.18.1 and expects its one refusal line.
#
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
root_sh=$top/contrib/debian-root.sh
fallback_ucx=${UCCL_CI_FALLBACK_UCX:-1.13.1-1}
[ $# -gt 0 ] || set -- -L 'unit|softverbs|uct|ucp|mpi'
stamp() { echo "--- debian13: $1 after $(( $(date +%s) - t0 )) s"; }
t0=$(date +%s)

"$root_sh" create
stamp "root ready"

# Inside the root the checkout is at the same path; its build trees are
# build-debian13*, the host's stay untouched.
export_env="UCCL_BUILD=$top/build-debian13"
set +e
"$root_sh" --net run env $export_env "$top/contrib/setup.sh"
rc=$?
set -e
if [ $rc -eq 3 ]; then
    echo "NOTE: the Debian archive does not give the source of trixie's UCX;"
    echo "NOTE: building UCX $fallback_ucx from its Debian source in the root instead"
    export_env="UCCL_BUILD=$top/build-debian13-src UCCL_UCX_SRC_VERSION=$fallback_ucx"
    "$root_sh" --net run env $export_env "$top/contrib/setup.sh"
elif [ $rc -ne 0 ]; then
    exit $rc
fi
stamp "set-up, build and install"

# The README's test command, in the root's own network namespace and
# /dev/shm: its ports and fabrics never meet the host's.
"$root_sh" run env $export_env "$top/contrib/run-tests.sh" "$@"
stamp "tests"

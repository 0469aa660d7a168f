#!/bin/sh
#
# run.sh HAVE_PYTHON LAUNCHER PYTHON SCRIPT [ARGS...]
#
# Runs a Python test of the dask label through LAUNCHER (uccl-run) with
# PYTHON (the interpreter the ucp binding was built for, Debian's
# /usr/bin/python3), UCX_TLS=$UCCL_TEST_TLS (default uccl,self,tcp: UCX 1.13
# sets client-server endpoints up through a transport on the network device
# of the address, tcp where there is no rdmacm; every data lane is uccl, which
# the tests check), on a softverbs fabric of its own, bounded by
# UCCL_TEST_TIMEOUT seconds (timeout(1) kills the Dask processes with it).
# Exit 77 (skip) when the binding was not built.
#
set -u

if [ $# -lt 4 ]; then
    echo "usage: run.sh HAVE_PYTHON LAUNCHER PYTHON SCRIPT [ARGS...]" >&2
    exit 2
fi
have=$1 launcher=$2 python=$3
shift 3
if [ "$have" != yes ]; then
    echo "SKIP: the ucp binding was not built (configure found no Python" \
         "headers: install python3-dev, as contrib/setup.sh does)"
    exit 77
fi

UCX_TLS=${UCCL_TEST_TLS:-uccl,self,tcp}
export UCX_TLS
. "$(dirname "$0")/../ucp/fabric.sh"
uccl_fabric_setup dask

echo "run.sh: UCX_TLS=$UCX_TLS SOFTVERBS_FABRIC=$SOFTVERBS_FABRIC" \
     "SOFTVERBS_LOSS=${SOFTVERBS_LOSS:-0} timeout ${UCCL_TEST_TIMEOUT:-280}s"
timeout -k 10 "${UCCL_TEST_TIMEOUT:-280}" "$launcher" "$python" "$@"
rc=$?
[ $rc = 124 ] && echo "run.sh: FAIL: timed out"
uccl_fabric_cleanup
exit $rc

#!/bin/sh
#
# run_mpi.sh LAUNCHER NP PROG ARGS...
#
# Runs `LAUNCHER mpirun -np NP --oversubscribe -x UCX_TLS ... PROG ARGS`
# under timeout(1), with UCX_TLS=$UCCL_TEST_TLS (default uccl,self) and every
# SOFTVERBS_* variable passed to the ranks with -x. The launcher (uccl-run)
# sets the OMPI_MCA_* variables that select pml ucx and osc ucx.
#
#   UCCL_TEST_TIMEOUT   seconds before the job counts as hung (default 300)
#   UCCL_TEST_EXPECT    "peer-failure": a rank killed itself (mpi_check -k)
#                       and every other one reported the failure as an MPI
#                       error, within the timeout
#
set -u

if [ $# -lt 3 ]; then
    echo "usage: run_mpi.sh LAUNCHER NP PROG ARGS..." >&2
    exit 2
fi
launcher=$1
np=$2
shift 2

UCX_TLS=${UCCL_TEST_TLS:-uccl,self}
export UCX_TLS
limit=${UCCL_TEST_TIMEOUT:-300}
expect=${UCCL_TEST_EXPECT:-pass}
. "$(dirname "$0")/../ucp/fabric.sh"
uccl_fabric_setup mpi
log=""
cleanup() {
    [ -n "$log" ] && rm -f "$log" "$log.rc"
    uccl_fabric_cleanup
}
trap cleanup EXIT

# -x for every variable the ranks need (local ranks inherit them anyway;
# -x makes the job self-describing and works for remote ranks too).
xargs="-x UCX_TLS"
vars=$(env | sed -n 's/^\(SOFTVERBS_[A-Z_]*\)=.*/\1/p
                    s/^\(UCX_[A-Z_]*\)=.*/\1/p' | sort -u)
for v in $vars; do
    [ "$v" = UCX_TLS ] || xargs="$xargs -x $v"
done

echo "run_mpi: UCX_TLS=$UCX_TLS SOFTVERBS_FABRIC=$SOFTVERBS_FABRIC" \
     "SOFTVERBS_LOSS=${SOFTVERBS_LOSS:-0} expect=$expect timeout ${limit}s"
set -- mpirun -np "$np" --oversubscribe $xargs "$@"
echo "run_mpi: $launcher $*"
log=$(mktemp /tmp/uccl-mpi.XXXXXX) || exit 1
start=$(date +%s)
# the job's output goes to the log as well, for the killed-rank checks
{ timeout -k 10 "$limit" "$launcher" "$@" 2>&1; echo $? > "$log.rc"; } |
    tee "$log"
rc=$(cat "$log.rc")
took=$(( $(date +%s) - start ))
echo "run_mpi: mpirun exit status $rc after ${took}s"

# timeout(1) says 124, or 137 if it had to SIGKILL; a job whose rank died of
# SIGKILL also ends with 137, but by itself and before the limit.
if [ $rc = 124 ] || { [ $rc = 137 ] && [ $took -ge "$limit" ]; }; then
    echo "run_mpi: FAIL: the job did not end within ${limit}s (hung)"
    exit 1
fi
if [ "$expect" = peer-failure ]; then
    grep -q "killing myself with SIGKILL" "$log" ||
        { echo "run_mpi: FAIL: no rank killed itself"; exit 1; }
    n=$(grep -c "peer failure of rank .* reported" "$log")
    if [ "$n" -ne $((np - 1)) ]; then
        echo "run_mpi: FAIL: $n of $((np - 1)) surviving ranks saw the" \
             "peer failure as an MPI error"
        exit 1
    fi
    echo "run_mpi: PASS: every surviving rank saw the killed rank fail" \
         "in ${took}s"
    exit 0
fi
[ $rc = 0 ] || { echo "run_mpi: FAIL: mpirun exit status $rc"; exit 1; }
exit 0

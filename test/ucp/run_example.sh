#!/bin/sh
#
# run_example.sh LAUNCHER BUILDDIR uct_pingpong|ucp_sendfile|mpi_allreduce_bw
#
# Runs one of examples/ the way examples/README.md says, with the transports
# under test (UCCL_TEST_TLS, default uccl,self), under timeout(1). The
# examples check their own data and exit non-zero on any difference.
#
set -u

if [ $# != 3 ]; then
    echo "usage: run_example.sh LAUNCHER BUILDDIR EXAMPLE" >&2
    exit 2
fi
launcher=$1
ex=$2/examples
UCX_TLS=${UCCL_TEST_TLS:-uccl,self}
export UCX_TLS
limit=${UCCL_TEST_TIMEOUT:-240}
. "$(dirname "$0")/fabric.sh"
uccl_fabric_setup ex
tmp=$(mktemp -d /tmp/uccl-ex.XXXXXX) || exit 1
cleanup() {
    rm -rf "$tmp"
    uccl_fabric_cleanup
}
trap cleanup EXIT

run() {
    echo "run_example: UCX_TLS=$UCX_TLS $launcher $*"
    timeout -k 10 "$limit" "$launcher" "$@"
    rc=$?
    [ $rc = 124 ] && echo "run_example: FAIL: no end within ${limit}s"
    return $rc
}

case $3 in
uct_pingpong)
    # the UCT example takes one transport and device, not a list
    case ",$UCX_TLS," in
        *,uccl,*) set -- -t uccl -d sv0:1 ;;
        *,tcp,*)  set -- -t tcp -d lo ;;
        *) echo "SKIP: no transport of '$UCX_TLS' connects to an iface"
           exit 77 ;;
    esac
    run "$ex/uct_pingpong" "$@"
    ;;
ucp_sendfile)
    # 40 MiB + 3 of seeded data: several rendezvous chunks and a short tail
    head -c 41943043 /dev/zero | openssl enc -aes-128-ctr -nosalt \
        -pass pass:uccl-sendfile -pbkdf2 2>/dev/null > "$tmp/in" ||
        perl -e 'srand(7); print pack("L*", map { int(rand(2**32)) }
                 1 .. 10485761)' | head -c 41943043 > "$tmp/in"
    run "$ex/ucp_sendfile" -s 8M -o "$tmp/out" "$tmp/in" || exit 1
    if ! cmp "$tmp/in" "$tmp/out"; then
        echo "run_example: FAIL: the written file differs from the sent one"
        exit 1
    fi
    echo "run_example: written file identical to the sent one" \
         "($(wc -c < "$tmp/in") bytes)"
    ;;
mpi_allreduce_bw)
    run mpirun -np 4 --oversubscribe -x UCX_TLS -x SOFTVERBS_FABRIC \
        "$ex/mpi_allreduce_bw" -e 16M
    ;;
*)
    echo "run_example: unknown example '$3'" >&2
    exit 2
    ;;
esac

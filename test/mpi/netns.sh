#!/bin/sh
#
# netns.sh LAUNCHER PROG ARGS...: a 2-rank job across two "hosts", network
# namespaces joined by a veth pair (10.77.0.1/24 and 10.77.0.2/24, used only
# between the namespaces made here and removed on exit). mpirun runs in the
# first namespace and starts the remote daemon in the second through
# netns_agent.sh, so Open MPI's out-of-band traffic and the UCX wire-up
# cross the veth link. Skips (exit 77) when namespaces cannot be made.
#
# softverbs' fabric lives in /dev/shm, which namespaces share: uccl and the
# verbs transports still reach each other; tcp goes over the veth.
#
set -u

if [ $# -lt 2 ]; then
    echo "usage: netns.sh LAUNCHER PROG ARGS..." >&2
    exit 2
fi
launcher=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../ucp/fabric.sh"
limit=${UCCL_TEST_TIMEOUT:-300}

skip() {
    echo "SKIP: $*"
    exit 77
}
[ "$(id -u)" = 0 ] || skip "network namespaces need root"
command -v ip > /dev/null || skip "no ip(8)"

tag=$$
ns_a=uccl_a$tag
ns_b=uccl_b$tag
addr_a=10.77.0.1
addr_b=10.77.0.2

cleanup() {
    for ns in $ns_a $ns_b; do
        # nothing of the test may outlive it
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -9 "$pid" 2>/dev/null
        done
        ip netns del "$ns" 2>/dev/null
    done
    uccl_fabric_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add $ns_a 2>/dev/null || skip "cannot create a network namespace"
ip netns add $ns_b || skip "cannot create a second network namespace"
# Both ends get the same name inside their namespace, so one
# UCX_NET_DEVICES value fits both hosts.
ip link add ucv${tag}a type veth peer name ucv${tag}b ||
    skip "cannot create a veth pair"
set -e
ip link set ucv${tag}a netns $ns_a
ip link set ucv${tag}b netns $ns_b
ip -n $ns_a link set ucv${tag}a name uccl0
ip -n $ns_b link set ucv${tag}b name uccl0
ip -n $ns_a addr add $addr_a/24 dev uccl0
ip -n $ns_b addr add $addr_b/24 dev uccl0
for ns in $ns_a $ns_b; do
    ip -n $ns link set lo up
    ip -n $ns link set uccl0 up
done
set +e
echo "netns: $ns_a ($addr_a) <-> $ns_b ($addr_b) over veth uccl0"

UCX_TLS=${UCCL_TEST_TLS:-uccl,self}
export UCX_TLS
uccl_fabric_setup netns
# Network devices: the veth for tcp (never lo, which is per namespace), the
# softverbs ports for the verbs transports and uccl.
if [ -z "${UCX_NET_DEVICES:-}" ]; then
    UCX_NET_DEVICES=uccl0
    case ",$UCX_TLS," in
        *,tcp,*) ;;
        *) UCX_NET_DEVICES=all ;;
    esac
    export UCX_NET_DEVICES
fi
export UCCL_NETNS_MAP="$addr_a=$ns_a $addr_b=$ns_b"

xargs="-x UCX_TLS -x UCX_NET_DEVICES"
vars=$(env | sed -n 's/^\(SOFTVERBS_[A-Z_]*\)=.*/\1/p
                    s/^\(UCX_[A-Z_]*\)=.*/\1/p' | sort -u)
for v in $vars; do
    case $v in UCX_TLS|UCX_NET_DEVICES) ;; *) xargs="$xargs -x $v" ;; esac
done

# one slot on each host (Open MPI 5 counts none for a bare --host name)
set -- mpirun -np 2 --host $addr_a:1,$addr_b:1 \
    --mca plm_rsh_agent "$here/netns_agent.sh" \
    --mca oob_tcp_if_include 10.77.0.0/24 \
    --mca btl_tcp_if_include 10.77.0.0/24 \
    $xargs "$@"
echo "netns: UCX_TLS=$UCX_TLS UCX_NET_DEVICES=$UCX_NET_DEVICES" \
     "SOFTVERBS_FABRIC=$SOFTVERBS_FABRIC timeout ${limit}s"
echo "netns: ip netns exec $ns_a $launcher $*"
start=$(date +%s)
# Each "host" has its own host name (a UTS namespace named by its address):
# Open MPI 5 (PRRTE) takes two daemons with one host name for one node.
ip netns exec $ns_a unshare --uts sh -c 'hostname "$0"; exec "$@"' $addr_a \
    timeout -k 10 "$limit" "$launcher" "$@"
rc=$?
took=$(( $(date +%s) - start ))
echo "netns: mpirun exit status $rc after ${took}s"
tx=$(ip netns exec $ns_a cat /sys/class/net/uccl0/statistics/tx_bytes)
rx=$(ip netns exec $ns_a cat /sys/class/net/uccl0/statistics/rx_bytes)
echo "netns: veth of $ns_a sent $tx and received $rx bytes"
if [ $rc != 0 ]; then
    [ $rc = 124 ] && echo "netns: FAIL: the job did not end within ${limit}s"
    exit 1
fi
# Open MPI's daemons and the UCX wire-up always cross the link; with tcp
# the data does too (the job moves well over 1 MiB each way).
min=1
case ",$UCX_TLS," in *,tcp,*) min=1048576 ;; esac
if [ "$tx" -lt $min ] || [ "$rx" -lt $min ]; then
    echo "netns: FAIL: expected at least $min bytes each way over the veth"
    exit 1
fi
exit 0

#!/bin/sh
#
# netns_agent.sh HOST CMD...: Open MPI's "ssh" for the two-host test
# (mpirun --mca plm_rsh_agent netns_agent.sh). HOST is an address of one of
# the test's network namespaces; UCCL_NETNS_MAP ("ADDR=NS ADDR=NS") says
# which. Like ssh, the remaining arguments form one shell command, run here
# inside that namespace with mpirun's environment.
#
set -u

host=${1:?usage: netns_agent.sh HOST CMD...}
shift
ns=""
for pair in ${UCCL_NETNS_MAP:-}; do
    [ "${pair%%=*}" = "$host" ] && ns=${pair#*=}
done
if [ -z "$ns" ]; then
    echo "netns_agent: no namespace for host '$host' in" \
         "UCCL_NETNS_MAP='${UCCL_NETNS_MAP:-}'" >&2
    exit 255
fi
echo "netns_agent: starting the daemon for $host in namespace $ns" >&2
# the host's own host name, as netns.sh gives mpirun's (Open MPI 5 tells
# nodes apart by it)
exec ip netns exec "$ns" unshare --uts sh -c "hostname $host; $*"

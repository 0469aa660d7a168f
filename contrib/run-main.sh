#!/bin/sh
#
# The README's first command: set up the machine (packages, UCX source,
# build, install), then run the main job: UCX traffic over uccl (on softverbs
# when the machine has no RDMA NIC), with a table of results.
#
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/setup.sh"
exec "$top/contrib/main-job.sh"

#!/bin/sh
#
# A conn's control records (ACKs, credit, keepalives) survive a core path
# that goes down: a control QP pair takes one core path (a hash of the two
# QPNs), so each side sends its conns' records from several control QPs in
# turn. For every core path P of 8 in turn, a data-checking UC transfer
# (uct_verify) runs at 1 Gbit/s and P goes down 1 s after the fabric came
# up, for good: one of the runs takes down the path of the control QP pair
# the conns were set up on, and every run must still complete with every
# byte checked (a conn whose records all took P would stall until its peer
# timeout).
#   uccl_ctl_paths.sh PORT [client args...]
# Environment: as verify_pair.sh.
#
set -u

port=$1
shift
paths=8
fail=0

for p in $(seq 0 $((paths - 1))); do
    echo "=== core path $p of $paths down from 1 s on"
    SOFTVERBS_FABRIC=${SOFTVERBS_FABRIC:-ctlp}_$p SOFTVERBS_PATHS=$paths \
    SOFTVERBS_PATH_DOWN="$p:1000-100000000" \
        "$(dirname "$0")/../uct/verify_pair.sh" $((port + p)) data "$@" ||
        { echo "FAIL: path $p down"; fail=1; }
done
[ $fail -eq 0 ] || exit 1
echo PASS

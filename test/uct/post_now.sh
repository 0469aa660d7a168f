#!/bin/sh
#
# post_now.sh: run uct_post_now (receiver and sender) over uccl. Environment:
# UCCL_RUN (launcher), UCCL_BUILDDIR, SOFTVERBS_FABRIC, UCCL_DEV.
#
set -u
. "$(dirname "$0")/listen.sh"

run=${UCCL_RUN:?UCCL_RUN must name the uccl-run launcher}
dev=${UCCL_DEV:-sv0:1}
limit=${UCCL_TEST_TIMEOUT:-60}
tmp=$(mktemp -d /tmp/uccl-post-now.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

bin=${UCCL_BUILDDIR:?UCCL_BUILDDIR must be set}/test/uct/uct_post_now
mkdir "$tmp/addr"

timeout "$limit" "$run" "$bin" "$tmp/addr" receiver "$dev" \
    >"$tmp/receiver" 2>&1 &
receiver=$!
timeout "$limit" "$run" "$bin" "$tmp/addr" sender "$dev" >"$tmp/sender" 2>&1
sender_rc=$?
wait $receiver
receiver_rc=$?

uccl_pair_report sender $sender_rc "$tmp/sender" \
                 receiver $receiver_rc "$tmp/receiver" || exit 1

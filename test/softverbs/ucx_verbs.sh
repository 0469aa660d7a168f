#!/bin/bash
#
# ucx_verbs.sh: programs nobody on this team wrote, run unchanged on
# softverbs - UCX's own rc_verbs and ud_verbs transports (ucx_perftest at UCT
# level and a UCP tag_bw) and perftest's ib_write_bw / ib_send_lat /
# ib_read_bw, with and without fabric loss. Each pair of processes gets its
# own fabric; server and client are pinned to different cores.
#
# Environment: SOFTVERBS_LIB (libsoftverbs.so, required), UCX_VERBS_DEV
# (default sv0:1), UCX_VERBS_TIMEOUT (seconds per run, default 60),
# UCX_VERBS_ONLY (a regular expression: run only matching cases),
# UCX_VERBS_ALLOW_SKIP=1 (a machine set up without contrib/setup.sh: skip
# instead of failing when tools or /dev nodes are missing).
# Exit: 0 all passed, 1 a failure (also: tools or /dev nodes missing, which
# contrib/setup.sh provides), 77 skipped (only with UCX_VERBS_ALLOW_SKIP=1).
#
set -u

lib=${SOFTVERBS_LIB:-}
dev=${UCX_VERBS_DEV:-sv0:1}
ibdev=${dev%%:*}
limit=${UCX_VERBS_TIMEOUT:-60}
only=${UCX_VERBS_ONLY:-.}
# the /dev/infiniband node UCX's ib md opens for sv<N> (configure:
# SOFTVERBS_DEVNAME, softverbs: SV_DEVNAME_PREFIX)
node=/dev/infiniband/${SOFTVERBS_DEVNODE_PREFIX:-uverbs_sv}${ibdev#sv}

# what this test stands for (UCX's verbs transports unmodified on
# softverbs) must not pass as a skip: missing pieces fail it
skip() {
    if [ "${UCX_VERBS_ALLOW_SKIP:-0}" = 1 ]; then
        echo "SKIP (UCX_VERBS_ALLOW_SKIP=1): $*"
        exit 77
    fi
    echo "ucx_verbs.sh: FAILED: $* (contrib/setup.sh installs the tools and" \
         "creates the nodes; UCX_VERBS_ALLOW_SKIP=1 skips instead)" >&2
    exit 1
}

[ -n "$lib" ] && [ -f "$lib" ] ||
    { echo "ucx_verbs.sh: SOFTVERBS_LIB=\"$lib\" not built" >&2; exit 1; }
for tool in ucx_perftest ib_write_bw ib_send_lat ib_read_bw taskset timeout \
            stdbuf; do
    command -v $tool >/dev/null || skip "$tool not installed"
done
[ -c "$node" ] && [ -r "$node" ] && [ -w "$node" ] ||
    skip "$node is not a character device this user can open read-write;" \
         "UCX's ib md lists a verbs device only if it is (the launcher," \
         "contrib/uccl-run as root, creates it)"

. "$(dirname "$0")/../uct/listen.sh"
nompi=$(uccl_perftest_nompi)

san=$(ldd "$lib" 2>/dev/null | awk '/lib(a|ub)san\.so/ { printf "%s:", $3 }')
export LD_PRELOAD="$san$lib"
# UCX and perftest are not ours: do not fail them on their own leaks
[ -n "$san" ] && export ASAN_OPTIONS=detect_leaks=0

work=$(mktemp -d /tmp/ucx_verbs.XXXXXX)
pids=""
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT

base_port=$((20000 + ($$ % 400) * 100))
n=0
pass=0
fail=0
failed=""

# run_pair NAME SERVER_CMD -- CLIENT_CMD: server on core 0, then the client
# on core 1 once the server listens; both bounded by $limit seconds.
run_pair() {
    local name=$1; shift
    local srv=() cli=() in_cli=0 a prev="" port=""
    for a in "$@"; do
        if [ "$a" = "--" ]; then in_cli=1; continue; fi
        if [ $in_cli = 1 ]; then cli+=("$a"); else srv+=("$a"); fi
        [ $in_cli = 0 ] && [ "$prev" = "-p" ] && port=$a
        prev=$a
    done
    echo "$name" | grep -Eq "$only" || return 0
    n=$((n + 1))
    # fixed names: a fabric is reused by the next run, not left behind
    export SOFTVERBS_FABRIC=ucxv_$name
    echo "=== $name (fabric $SOFTVERBS_FABRIC${SOFTVERBS_LOSS:+, SOFTVERBS_LOSS=$SOFTVERBS_LOSS})"
    timeout -s KILL "$limit" stdbuf -oL -eL "${srv[@]}" >"$work/srv.$n" 2>&1 &
    local spid=$!
    pids="$pids $spid"
    if [ -n "$port" ]; then
        uccl_wait_listen "$port" $spid "$limit" || true
    else
        sleep 1
    fi
    timeout -s KILL "$limit" stdbuf -oL -eL "${cli[@]}" >"$work/cli.$n" 2>&1
    local crc=$?
    wait $spid
    local src=$?
    if [ $crc = 0 ] && [ $src = 0 ] && result "$name" "$work/cli.$n"; then
        pass=$((pass + 1))
        echo "--- PASS $name: $(cat "$work/res")"
    else
        fail=$((fail + 1))
        failed="$failed $name"
        echo "--- FAIL $name: client exit $crc, server exit $src" \
             "(137 = killed after ${limit}s)"
        echo "    server: ${srv[*]}"
        sed 's/^/    | /' "$work/srv.$n" | tail -n 15
        echo "    client: ${cli[*]}"
        sed 's/^/    | /' "$work/cli.$n" | tail -n 25
    fi
}

# result NAME FILE: pull a plausible (non-zero) number out of the client's
# report into $work/res; fail when there is none.
result() {
    local v
    case $1 in
    ucx_*)
        # ucx_perftest -f: iterations, latency 50%/avg/overall (us),
        # bandwidth avg/overall (MB/s), rate avg/overall (msg/s); the
        # rate tells a result (8 B at a loaded machine's few hundred
        # messages a second show 0.00 MB/s)
        v=$(awk 'NF == 8 && $1 ~ /^[0-9]+$/ { l = $3; b = $6; r = $8 }
                 END { if (r + 0 > 0) printf "lat %s us, bw %s MB/s, %s msg/s", l, b, r }' "$2")
        ;;
    ib_send_lat*)
        v=$(awk '$1 ~ /^[0-9]+$/ && NF >= 6 { printf "%s B: t_typical %s us", $1, $5 }' "$2")
        ;;
    ib_*)
        v=$(awk '$1 ~ /^[0-9]+$/ && NF >= 4 { printf "%s B: bw avg %s Gb/s", $1, $4 }' "$2")
        ;;
    esac
    echo "${v:-no result}" >"$work/res"
    [ -n "$v" ] && ! echo "$v" | grep -Eq 'bw avg 0(\.0+)? |t_typical 0(\.0+)? '
}

uct() {   # uct NAME TL TEST ARGS...
    local name=$1 tl=$2 test=$3; shift 3
    local port=$((base_port + n + 1))
    # the server names the transport and device too: UCX 1.18's checks
    # its own parameters before it takes the client's
    run_pair "ucx_${tl}_$name" \
        ucx_perftest $nompi -p $port -c 0 -x "$tl" -d "$dev" -- \
        ucx_perftest $nompi localhost -p $port -c 1 -t "$test" -x "$tl" -d "$dev" \
                     -f "$@"
}

# --- UCX UCT level: rc_verbs and ud_verbs --------------------------------
# (ud_verbs has no PUT/GET in UCX: `ucx_info -d` lists only am_* for it)
# (UD drops datagrams when the receiver has no WQE posted, as UD does, and
# UCX's UD reliability resends slowly: keep its runs short)
for tl in rc_verbs ud_verbs; do
    uct am_lat       $tl am_lat -n 10000 -w 1000
    uct am_bw_short  $tl am_bw  -n 20000 -w 1000 -s 32
    uct am_bw_bcopy  $tl am_bw  -n 5000 -w 500 -s 2048 -D bcopy
    uct am_bw_zcopy  $tl am_bw  -n 5000 -w 500 -s 2048 -D zcopy
done
uct put_lat      rc_verbs put_lat -n 20000 -w 1000 -s 8
uct put_bw_short rc_verbs put_bw -n 50000 -w 1000 -s 32
uct put_bw_zcopy rc_verbs put_bw -n 5000 -w 100 -s 65536 -D zcopy
uct put_bw_bcopy rc_verbs put_bw -n 10000 -w 100 -s 4096 -D bcopy
uct get_zcopy    rc_verbs get    -n 5000 -w 100 -s 65536 -D zcopy
uct get_bcopy    rc_verbs get    -n 10000 -w 100 -s 4096 -D bcopy

# with fabric loss: UCX's UD reliability and the NIC's RC go-back-N recover
export SOFTVERBS_LOSS=0.001
uct am_bw_bcopy_loss  ud_verbs am_bw  -n 5000 -w 500 -s 2048 -D bcopy
uct put_bw_zcopy_loss rc_verbs put_bw -n 5000 -w 100 -s 65536 -D zcopy
unset SOFTVERBS_LOSS

# --- UCX UCP level: tag matching over rc_verbs + ud_verbs ----------------
ucp() {   # ucp NAME ARGS...
    local name=$1; shift
    local port=$((base_port + n + 1))
    local tls="UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=$dev"
    run_pair "ucx_ucp_$name" \
        env $tls ucx_perftest $nompi -p $port -c 0 -- \
        env $tls ucx_perftest $nompi localhost -p $port -c 1 -f "$@"
}
ucp tag_bw_1m  -t tag_bw -s 1048576 -n 2000 -w 100
ucp tag_bw_256 -t tag_bw -s 256 -n 50000 -w 1000

# --- perftest, without and with loss -------------------------------------
perftest() {   # perftest NAME TOOL ARGS...
    local name=$1 tool=$2; shift 2
    local port=$((base_port + n + 1))
    run_pair "$name" \
        taskset -c 0 $tool -d "$ibdev" -p $port -F "$@" -- \
        taskset -c 1 $tool -d "$ibdev" -p $port -F "$@" localhost
}
for loss in 0 0.001; do
    if [ "$loss" = 0 ]; then unset SOFTVERBS_LOSS; sfx=""
    else export SOFTVERBS_LOSS=$loss; sfx="_loss"; fi
    perftest ib_write_bw$sfx ib_write_bw -s 65536 -n 5000 --report_gbits
    perftest ib_send_lat$sfx ib_send_lat -s 64 -n 5000
    perftest ib_read_bw$sfx  ib_read_bw  -s 65536 -n 5000 --report_gbits
done
unset SOFTVERBS_LOSS

echo "ucx_verbs.sh: $pass passed, $fail failed${failed:+:$failed}"
[ $fail = 0 ] && [ $pass -gt 0 ]

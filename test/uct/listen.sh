# Sourced by the scripts that start a server and then its client, and read
# their counters. Wait until the server listens on its TCP port rather than
# for a fixed time (a loaded machine starts it late; ucx_perftest's client
# does not retry):
#   uccl_wait_listen PORT SERVER_PID [SECONDS]
# Returns 0 once something listens on PORT, 1 if SERVER_PID exited or
# SECONDS (default 30) passed.
uccl_wait_listen() {
    _port=$1 _pid=$2 _left=$(( ${3:-30} * 20 ))
    while [ $_left -gt 0 ]; do
        if ss -Hltn "sport = :$_port" 2>/dev/null | grep -q .; then
            return 0
        fi
        kill -0 "$_pid" 2>/dev/null || return 1
        sleep 0.05
        _left=$((_left - 1))
    done
    return 1
}

# uccl_pair_report NAME_A RC_A LOG_A NAME_B RC_B LOG_B: prints both
# processes' output; returns 1, saying so, unless both exited with 0.
uccl_pair_report() {
    echo "--- $1 (rc=$2):"; cat "$3"
    echo "--- $4 (rc=$5):"; cat "$6"
    if [ "$2" -ne 0 ] || [ "$5" -ne 0 ]; then
        echo "FAIL: $1 exited with $2, $4 with $5"
        return 1
    fi
}

# uccl_perftest_nompi [LAUNCHER]: prints "-P 0" when ucx_perftest was built
# with MPI (UCX 1.18 in Debian 13): it then defaults to MPI mode and wants
# mpirun, which client/server runs switch off. Prints nothing otherwise.
uccl_perftest_nompi() {
    if "$@" ucx_perftest -h 2>&1 | grep -q -- '-P <0|1>'; then
        echo "-P 0"
    fi
}

# uccl_perftest_pair PORT SERVER_ENV CLIENT_ENV ARGS...: ucx_perftest over
# uccl on sv0:1, the server first, each run by $run within $limit seconds
# with its VAR=VALUE words (env), the client with ARGS (the test's), and
# output in $tmp/server and $tmp/client; prints the client's result line.
# Returns 1, saying why, unless both exited with 0 and the client printed
# its result. ($nompi: uccl_perftest_nompi's.)
uccl_perftest_pair() {
    _port=$1 _senv=$2 _cenv=$3
    shift 3
    env $_senv timeout "$limit" "$run" ucx_perftest $nompi -p "$_port" -c 0 \
        -x uccl -d sv0:1 >"$tmp/server" 2>&1 &
    _server=$!
    if ! uccl_wait_listen "$_port" $_server; then
        echo "the server did not listen"
        return 1
    fi
    env $_cenv timeout "$limit" "$run" ucx_perftest $nompi localhost \
        -p "$_port" -c 1 -x uccl -d sv0:1 "$@" >"$tmp/client" 2>&1
    _crc=$?
    wait $_server
    _src=$?
    if [ $_crc -ne 0 ] || [ $_src -ne 0 ]; then
        echo "ucx_perftest exited with client $_crc server $_src"
        return 1
    fi
    grep '^Final:' "$tmp/client" || { echo "no result line"; return 1; }
}

# uccl_sum FILE NAME: a uccl counter (the iface and conn lines of
# UCX_UCCL_STATS_DUMP) summed over FILE
uccl_sum() {
    grep -h '^uccl\[' "$1" | grep -o " $2 [0-9]*" |
        awk '{ s += $2 } END { print s + 0 }'
}

# sv_sum FILE KEY: a softverbs port counter (SOFTVERBS_STATS) summed over
# the ports in FILE
sv_sum() {
    awk -v k="$2" '$1 ~ "^port\\.[0-9]+\\." k "$" { s += $2 } END { print s + 0 }' \
        "$1"
}

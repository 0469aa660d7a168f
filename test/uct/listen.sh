# Sourced by the scripts that start a server and then its client: wait
# until the server listens on its TCP port rather than for a fixed time (a
# loaded machine starts it late; ucx_perftest's client does not retry).
#
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

#!/bin/sh
#
# Benchmark (label bench): the instructions the transport spends on each
# side, counted by valgrind's callgrind and split into work and polling,
# so that the work figures come out the same however loaded the machine:
#
#   UCT put_bw zcopy 1 MiB, uccl UC and RC:     per 64 KiB (a UC chunk;
#                                                RC's are 256 KiB);
#   UCT am_lat 8 B and UCP tag_lat 8 B, uccl UC, uccl RC and rc_verbs
#   (UCP: rc_verbs,ud_verbs):                    per round trip (one send
#                                                and one receive a side).
#
# Each configuration runs with N1 and N2 iterations, both sides under
# callgrind, without warm-up (-w 0: ucx_perftest's warm-up stops after a
# time, so it would not cancel between the two runs). The figures are
# (count(N2) - count(N1)) / units between them, of the instructions inside
# the transport (libuct_uccl, or libuct_ib for rc_verbs) and inside
# libsoftverbs, split three ways:
#
#   polling  a waiting side spins in progress for as long as its peer
#            takes: each function's calls x its cost per call in an empty
#            pass (empty_pass: the same ifaces, nothing to do);
#   timers   what functions driven by wall time cost with all they call
#            (cg_funcs.awk), and the branches in the progress functions
#            that lead to them: empty_pass runs with passes back to back
#            and with a pause after each tell a function's cost per call
#            from its cost per timer call;
#   work     the rest: the table's figures.
#
# Polling share: polling / all instructions but timers, of the N2 run.
# Resends and ACKs sent per unit come from uccl's counters
# (UCX_UCCL_STATS_DUMP): a peer descheduled for longer than two RTTs draws
# a tail probe and its duplicate an ACK of its own, so on a loaded machine
# UC's work grows with these two columns; the other figures do not move.
#
#   uccl_callgrind.sh BUILDDIR [ENV...]   (ENV for every run, e.g.
#                                          UCX_UCCL_ACK_EVERY=8)
#
# CG_CONFIGS (all: put_uc put_rc am_uc am_rc am_vb tag_uc tag_rc tag_vb;
# also get_uc get_rc: UCT get zcopy, per 64 KiB; np_uc np_rc np_vb:
# NetPIPE under Open MPI's pml ucx, rank 0 as client, CG_LAT_N1 and
# CG_LAT_N2 round trips a trial),
# CG_N1 (50), CG_N2 (250): put_bw iterations; CG_LAT_N1 (1000), CG_LAT_N2
# (6000): latency iterations; CG_LAT_SIZE (8): latency message size;
# CG_PASSES1 (5000), CG_PASSES2 (55000), CG_PAUSE_US (100): empty passes;
# CG_SIZE (1048576), CG_TIMEOUT (900 s);
# CG_OUT: a directory that keeps the callgrind outputs and, per side, a
# table of every function's work, self cost, polling, timers and calls.
set -u
build=${1:?usage: $0 BUILDDIR [ENV...]}
shift
empty=$build/test/bench/empty_pass
n1=${CG_N1:-50}
n2=${CG_N2:-250}
lat_n1=${CG_LAT_N1:-1000}
lat_n2=${CG_LAT_N2:-6000}
lat_size=${CG_LAT_SIZE:-8}
p1=${CG_PASSES1:-5000}
p2=${CG_PASSES2:-55000}
pause=${CG_PAUSE_US:-100}
size=${CG_SIZE:-1048576}
configs=${CG_CONFIGS:-put_uc put_rc am_uc am_rc am_vb tag_uc tag_rc tag_vb}
np_trials=3   # NetPIPE 3.7's timed loops per message size
unit=65536    # bytes per row of the put and get tables
here=$(cd "$(dirname "$0")" && pwd)
. "$here/bench_lib.sh"
bench_setup "$build" "${CG_TIMEOUT:-900}"
out=${CG_OUT:-$tmp}
mkdir -p "$out" || exit 1
command -v valgrind >/dev/null || { echo "valgrind not installed" >&2; exit 1; }
[ -x "$empty" ] || { echo "$empty not built" >&2; exit 1; }
nompi=$(uccl_perftest_nompi "$run")

# valgrind slows both sides some 50 times: the RTO's 1 ms floor would fire
# on every peer descheduled for a few ms (tail probes still do, after 2
# RTTs; their count is in the table)
slow_rto="UCX_UCCL_RTO_MIN=1s UCX_UCCL_RTO_INIT=1s UCX_UCCL_RTO_MAX=2s"

# Functions that run per unit of wall time, whatever the traffic: uccl's
# timer pass (RTO, tail probes, keepalive) and async tick, its samples of
# the completion timestamps' clock (at most one a millisecond while
# completions arrive), softverbs' upkeep pass (heal, reap) and its check
# that a peer process lives (its callers look at most every so often). The engine pass an async tick runs
# when the user has not called progress for a while is work and polling
# like any other.
timer_roots="uct_uccl_conn_timers uct_uccl_async_tick uct_uccl_async_timer
uct_uccl_iface_clock_sync sv_port_tend_pass sv_fabric_pid_alive"
timer_barriers="uct_uccl_iface_engine_progress"
objs='^(libuct_uccl|libuct_ib|libsoftverbs)'

# config NAME: sets desc, cfg_env, args (ucx_perftest's), per (units per
# iteration), lat (1 for a latency test), base (the empty pass's ifaces
# and environment)
config() {
    _uccl="uccl:sv0:1 uccl:sv1:1"
    _vb="rc_verbs:sv0:1 rc_verbs:sv1:1 ud_verbs:sv0:1 ud_verbs:sv1:1"
    _put="-t put_bw -D zcopy -s $size"
    per=1 lat=1
    case $1 in
        put_uc|put_rc)
            per=$((size / unit)) lat=0
            args="-x uccl -d sv0:1 $_put" ;;
        get_uc|get_rc)
            per=$((size / unit)) lat=0
            args="-x uccl -d sv0:1 -t get -D zcopy -s $size" ;;
        am_uc|am_rc) args="-x uccl -d sv0:1 -t am_lat -s $lat_size" ;;
        am_vb)       args="-x rc_verbs -d sv0:1 -t am_lat -s $lat_size" ;;
        tag_*)       args="-t tag_lat -s $lat_size" ;;
        # NetPIPE: np_trials timed loops of N round trips per run
        np_*)        args="np" per=$np_trials ;;
        *)           echo "unknown config $1" >&2; return 1 ;;
    esac
    case $1 in
        *_uc) cfg_env="UCX_UCCL_MODE=uc" base="$_uccl" mode="uccl UC" ;;
        *_rc) cfg_env="UCX_UCCL_MODE=rc" base="$_uccl" mode="uccl RC" ;;
        *_vb) cfg_env="" base="$_vb" mode="rc_verbs" ;;
    esac
    case $1 in
        # the UD iface (wireup) grows its receive queue from 128 by a
        # batch per pass while UCP progresses it, for a time that varies
        tag_vb|np_vb) cfg_env="UCX_TLS=rc_verbs,ud_verbs,self"
                cfg_env="$cfg_env UCX_UD_VERBS_RX_QUEUE_LEN=128" ;;
        tag_*|np_*)   cfg_env="$cfg_env UCX_TLS=uccl,self" ;;
    esac
    case $1 in
        put_*) desc="UCT put_bw zcopy $size B, $mode, per 64 KiB" ;;
        get_*) desc="UCT get zcopy $size B, $mode, per 64 KiB" ;;
        am_*)  desc="UCT am_lat $lat_size B, $mode, per round trip" ;;
        tag_*) desc="UCP tag_lat $lat_size B, $mode, per round trip" ;;
        np_*)  desc="NetPIPE $lat_size B, $mode, per round trip" ;;
    esac
}

# cg_np NAME N EXTRA_ENV...: NetPIPE (Open MPI, pml ucx) with N round
# trips a trial, both ranks under callgrind; rank 0 is the client, rank 1
# the server
cg_np() {
    _name=$1 _n=$2
    shift 2
    bench_next_port
    _fab="${fab}_cg$port"
    # shellcheck disable=SC2086
    env $cfg_env "$@" SOFTVERBS_FABRIC="$_fab" timeout "$tmo" "$run" \
        mpirun -np 2 --bind-to core valgrind --tool=callgrind \
        --callgrind-out-file="$out/$_name.rank%q{OMPI_COMM_WORLD_RANK}.$_n" \
        NPopenmpi -l "$lat_size" -u "$lat_size" -p 0 -n "$_n" \
        -o "$out/$_name.np.$_n" >"$out/$_name.client.$_n.log" 2>&1
    rm -f "/dev/shm/softverbs.$_fab" "/dev/shm/softverbs.$_fab".*
    mv "$out/$_name.rank0.$_n" "$out/$_name.client.$_n" 2>/dev/null &&
        mv "$out/$_name.rank1.$_n" "$out/$_name.server.$_n" &&
        cp "$out/$_name.client.$_n.log" "$out/$_name.server.$_n.log" &&
        [ -s "$out/$_name.np.$_n" ] || {
        echo "$_name, $_n round trips failed: $out/$_name.client.$_n.log" >&2
        return 1
    }
}

# cg_pair NAME N EXTRA_ENV...: both sides under callgrind, server on core
# 0 and client on core 1; outputs $out/NAME.{server,client}.N
cg_pair() {
    _name=$1 _n=$2
    shift 2
    [ "$args" = np ] && { cg_np "$_name" "$_n" "$@"; return; }
    bench_next_port
    _fab="${fab}_cg$port"
    # shellcheck disable=SC2086
    env $cfg_env "$@" SOFTVERBS_FABRIC="$_fab" timeout "$tmo" taskset -c 0 \
        "$run" valgrind --tool=callgrind \
        --callgrind-out-file="$out/$_name.server.$_n" \
        ucx_perftest $nompi -p $port >"$out/$_name.server.$_n.log" 2>&1 &
    _srv=$!
    if uccl_wait_listen "$port" $_srv 120; then
        # shellcheck disable=SC2086
        env $cfg_env "$@" SOFTVERBS_FABRIC="$_fab" timeout "$tmo" taskset -c 1 \
            "$run" valgrind --tool=callgrind \
            --callgrind-out-file="$out/$_name.client.$_n" \
            ucx_perftest $nompi localhost -p $port $args -w 0 -n "$_n" \
            >"$out/$_name.client.$_n.log" 2>&1
    fi
    wait $_srv
    rm -f "/dev/shm/softverbs.$_fab" "/dev/shm/softverbs.$_fab".*
    grep -q '^Final:' "$out/$_name.client.$_n.log" || {
        echo "$_name, $_n iterations failed: $out/$_name.client.$_n.log" >&2
        return 1
    }
}

# cg_empty NAME PASSES [-p PAUSE_US] EXTRA_ENV...: the empty pass of
# $base under $cfg_env; output $out/NAME
cg_empty() {
    _name=$1 _n=$2 _pause=""
    shift 2
    [ "${1:-}" = -p ] && { _pause="-p $2"; shift 2; }
    bench_next_port
    _fab="${fab}_cg$port"
    # shellcheck disable=SC2086
    env $cfg_env "$@" SOFTVERBS_FABRIC="$_fab" timeout "$tmo" "$run" \
        valgrind --tool=callgrind --callgrind-out-file="$out/$_name" \
        "$empty" $_pause "$_n" $base >"$out/$_name.log" 2>&1
    _rc=$?
    rm -f "/dev/shm/softverbs.$_fab" "/dev/shm/softverbs.$_fab".*
    [ $_rc -eq 0 ] || { echo "$_name failed: $out/$_name.log" >&2; }
    return $_rc
}

funcs() {
    awk -v objs="$objs" -v roots="$timer_roots" \
        -v barriers="$timer_barriers" -f "$here/cg_funcs.awk" "$1"
}

# split_work A1 A2 B RUN1 RUN2 UNITS: prints "WORK_TL WORK_SV SHARE": work
# per unit (TL: the transport, SV: softverbs) and the polling share of all
# the instructions of RUN2 but timers; with $table set,
# writes the per-function table there. A1 and A2 are $p1 and $p2 empty
# passes, B is $p1 passes with a pause after each: as many calls as A1,
# more timer calls. Per function, A2 - A1 and B - A1 give its cost per
# call (e) and per timer call (k: the branch that leads to the timer).
split_work() {
    awk -F'\t' -v units="$6" -v passes=$((p2 - p1)) -v table="$table" '
        function rnd(x) { return (x < 0) ? -int(-x + 0.5) : int(x + 0.5) }
        { k = $1 FS $2 }
        FILENAME == ARGV[1] { as1[k] = $3; ac1[k] = $4; next }
        FILENAME == ARGV[2] { as2[k] = $3; ac2[k] = $4; next }
        FILENAME == ARGV[3] { bs[k] = $3; bc[k] = $4; next }
        FILENAME == ARGV[4] { s1[k] = $3; c1[k] = $4; t1[k] = $5; key[k] = 1
                              next }
                            { s2[k] = $3; c2[k] = $4; t2[k] = $5; key[k] = 1 }
        END {
            tk = "*" FS "timer_calls"
            fa = ac2[tk] - ac1[tk]
            fb = bc[tk] - ac1[tk]
            ticks = (c2[tk] - c1[tk]) / units
            for (k in key) {
                if (k == tk) {
                    continue
                }
                split(k, p, FS)
                cls = (p[1] ~ /^libsoftverbs/) ? "sv" : "tl"
                # for a function 1 in 100 empty passes call at least
                # (some are called every 64th), solve
                # e * calls + k * timer calls = self for A2 - A1, B - A1
                ca = ac2[k] - ac1[k]
                sa = as2[k] - as1[k]
                cb = bc[k] - ac1[k]
                sb = bs[k] - as1[k]
                e = 0
                kt = 0
                if (ca >= passes / 100) {
                    det = ca * fb - cb * fa
                    if (fb >= passes / 10 && det != 0) {
                        e  = (sa * fb - sb * fa) / det
                        kt = (ca * sb - cb * sa) / det
                    } else {
                        e = sa / ca
                    }
                }
                self  = (s2[k] - s1[k]) / units
                calls = (c2[k] - c1[k]) / units
                timed = (t2[k] - t1[k]) / units + kt * ticks
                work  = self - calls * e - kt * ticks
                poll[cls] += calls * e
                wsum[cls] += work
                # the share over all of the longer run (a difference of
                # polling between runs is as noisy as the load)
                all2  += s2[k] - kt * c2[tk]
                poll2 += c2[k] * e
                if (table != "" && (self != 0 || timed != 0)) {
                    printf "%10.1f %10.1f %10.1f %10.1f %8.2f  %s [%s]\n",
                           work, self, calls * e, timed, calls, p[2],
                           p[1] > table
                }
            }
            printf "%d %d %.0f%%\n", rnd(wsum["tl"]), rnd(wsum["sv"]),
                   (all2 > 0) ? 100 * poll2 / all2 : 0
        }' "$1" "$2" "$3" "$4" "$5"
}

# counters SIDE_LOG1 SIDE_LOG2 UNITS: "RESENDS ACKS" per unit from uccl's
# counters (UCX_UCCL_STATS_DUMP): chunks the side sent again, ACKs it sent
# on their own (not carried by data); "- -" for another transport
counters() {
    for _f in "$1" "$2"; do
        awk '/ conn [0-9]+ .*retx / {
                for (i = 1; i < NF; ++i) {
                    if ($i == "retx") r += $(i + 1)
                    if ($i == "acks_tx") a += $(i + 1)
                }
                n++
             }
             END { if (n) print r + 0, a + 0; else print "- -" }' "$_f"
    done | awk -v u="$3" 'NR == 1 { r = $1; a = $2; next }
        { if ($1 == "-" || r == "-") print "- -"
          else printf "%.3f %.3f\n", ($1 - r) / u, ($2 - a) / u }'
}

echo "callgrind: transport and softverbs instructions per unit, work and" \
     "polling${*:+ ($*)}"
echo
echo "| config | side | work in uccl / libuct_ib | work in softverbs |" \
     "polling share | resends | ACKs sent |"
echo "|---|---|---|---|---|---|---|"
fails=0
for c in $configs; do
    config "$c" || exit 1
    b="empty.$(echo "$cfg_env $base" | tr -c 'A-Za-z0-9\n' _)"
    if [ ! -s "$tmp/$b.pause.f" ]; then
        cg_empty "$b.$p1" "$p1" "$@" && cg_empty "$b.$p2" "$p2" "$@" &&
            cg_empty "$b.pause" "$p1" -p "$pause" "$@" &&
            for e in $p1 $p2 pause; do
                funcs "$out/$b.$e" >"$tmp/$b.$e.f"
            done
    fi
    if [ $lat = 1 ]; then
        i1=$lat_n1 i2=$lat_n2
    else
        i1=$n1 i2=$n2
    fi
    ok=1
    for i in $i1 $i2; do
        # shellcheck disable=SC2086
        cg_pair "$c" "$i" UCX_UCCL_STATS_DUMP=y $slow_rto "$@" || ok=0
    done
    if [ $ok = 0 ] || [ ! -s "$tmp/$b.pause.f" ]; then
        echo "| $desc | | FAIL | | | | |"
        fails=$((fails + 1))
        continue
    fi
    units=$(( (i2 - i1) * per ))
    for side in client server; do
        for i in $i1 $i2; do
            funcs "$out/$c.$side.$i" >"$tmp/$c.$side.$i.f"
        done
        table=""
        [ -n "${CG_OUT:-}" ] && table="$out/$c.$side.work"
        read -r w_tl w_sv share <<EOF
$(split_work "$tmp/$b.$p1.f" "$tmp/$b.$p2.f" "$tmp/$b.pause.f" \
  "$tmp/$c.$side.$i1.f" "$tmp/$c.$side.$i2.f" $units)
EOF
        read -r resends acks <<EOF
$(counters "$out/$c.$side.$i1.log" "$out/$c.$side.$i2.log" $units)
EOF
        if [ -n "$table" ]; then
            sort -rn -o "$table" "$table"
            sed -i "1i $(printf '%10s %10s %10s %10s %8s  %s' work self \
                polling timers calls function)" "$table"
        fi
        name=$side
        case $c in
            put_*) name=sender; [ $side = server ] && name=receiver ;;
            get_*) name=requester; [ $side = server ] && name=target ;;
        esac
        echo "| $desc | $name | $w_tl | $w_sv | $share | $resends |" \
             "$acks |"
    done
done
echo
echo "Work: instructions on that side per unit, less polling (each"
echo "function's calls x its cost per call in an empty pass) and timers"
echo "(wall-time driven functions and the branches to them). Polling share:"
echo "polling / all but timers, over the longer run. Resends, ACKs sent: per"
echo "unit, uccl's counters; they follow the timing (tail probes for a"
echo "descheduled peer) and UC's work with them. UCP tag_lat polls every"
echo "lane's iface (uccl: sv0:1 and sv1:1)."
[ $fails -eq 0 ]

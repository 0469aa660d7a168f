#!/bin/sh
#
# Benchmark (label bench): the congestion control scenarios of issue 14,
# side by side on the same softverbs fabric, for UCX_TLS=uccl,self with
# each UCX_UCCL_CC algorithm and for UCX's rc_verbs,ud_verbs,self:
#
#   incast      N bulk senders stream to one receiver while a probe
#               ping-pongs 64 B with it: the probe's round-trip p50/p99/p999
#               and the aggregate goodput, on a lossless fabric (queues
#               grow, like PFC) ...
#   incast_buf  ... and with finite buffers (tail drops counted);
#   ecmp        N flows over CC_ECMP_PATHS (4) core paths that share the
#               capacity equally: flows of one QP collide, sprayed ones
#               should not (CC_ECMP_PATHS=1: the same capacity on one core
#               path, the reference without ECMP); each core path's share
#               of the bytes (both directions) is printed, and with
#               CC_SAMPLE how often each was empty while the receiver
#               took data (below);
#   outage      one of 8 paths drops everything for a second mid-transfer:
#               a goodput timeline;
#   slow        one of 8 paths at a tenth of the others' rate;
#   loss        random loss 0, 0.1, 1, 5%: goodput and probe latency.
#
#   cc_scenarios.sh BUILDDIR [OUTDIR]
#
# Writes OUTDIR/cc_scenarios.md (the tables, also printed), timelines,
# PNG plots when gnuplot is installed (Debian: gnuplot-nox), and every
# process's output and softverbs stats in OUTDIR/raw.
# Every process gets one device (SOFTVERBS_DEVICES=1), so all traffic to
# the receiver crosses its one modelled link. Rates are low (default: 1
# Gbit/s links, 0.25 Gbit/s core paths in ecmp) so that the modelled fabric,
# not the two shared cores, is the bottleneck: the receiver takes 125 MB/s.
#
# eqds grants at the receiving link's rate: it is told the modelled one
# (UCX_UCCL_CC_LINK_RATE), and in incast_buf its port's buffer
# (UCX_UCCL_CC_EQDS_INFLIGHT=CC_BUF: grants not arrived stay within it);
# the other algorithms run with their defaults.
# eqds_small is eqds sized for these buffers (128 KiB: 2 default chunks)
# and for the scheduling delays of processes sharing the cores (a grant
# used late lands on top of the next ones): 8 KiB chunks and quanta,
# 4 KiB speculative, at most 32 KiB of credit held, 90% of the link.
#
# A config NAME@base is NAME run with the transport (and softverbs) in
# CC_BASE_LIBDIR (UCCL_LIBDIR of uccl-run; e.g. a copy of another build's
# .libs): a before/after comparison in one interleaved run; NAME@base2 ..
# NAME@base9 take CC_BASE2_LIBDIR .. CC_BASE9_LIBDIR. NAME:bN is NAME
# with UCX_UCCL_PATH_BURST=N (chunks per path choice), NAME:rc NAME in RC
# mode (UCX_UCCL_MODE=rc), NAME:cSIZE NAME with UCX_UCCL_CHUNK_SIZE=SIZE
# (e.g. fixed:rc:c64k against fixed:rc); NAME+VAR=VALUE is NAME with
# VAR=VALUE in its environment (e.g. swift+UCX_MAX_RNDV_RAILS=1).
# Suffixes are read from the right: fixed+UCX_RNDV_THRESH=inf:b1@base.
#
# Outage: the goodput before, while and after the path is down; the time
# from the path going down (and from it coming back) to the first 20 ms
# window whose goodput is at least 0.9 of before; the longest run of 5 ms
# bins with no goodput at all while the clients ran; the senders' largest
# RTO at the end (uccl; UCX_UCCL_STATS_DUMP). The path's times count from
# the fabric's creation (the receiver's first verbs call), which the table
# gives on the timeline's axis ("fabric epoch"), and the recovery times
# count from there.
#
# CC_SAMPLE=SECONDS (off by default): softverbs-stat reads the fabric's
# counters every SECONDS while the receiver runs (OUTDIR/raw/*.samples;
# each read costs a process start on the shared cores). The ECMP section
# then gives, over the samples while the receiver's link took data (the
# first and last 5 left out), each core path's fraction of samples with
# less than one MTU queued (idle or about to be), the fraction with some
# path that empty, the mean bytes queued over all paths, and each path's
# utilization (bytes of both directions over its rate); n/a when fewer
# than 10 samples are left (a loaded host starves softverbs-stat).
#
# CC_CONFIGS ("fixed swift timely eqds rc_verbs"; eqds_small on request),
# CC_SCENARIOS (all),
# CC_SENDERS (4), CC_SECONDS (3), CC_ECMP_PATHS (4), CC_SIZE (262144),
# CC_WINDOW (4 messages in flight per sender; the server posts as many
# receives per client), CC_LINK_GBPS (1), CC_BUF (128k), BENCH_TIMEOUT
# (120 s per process), BENCH_PORT (the first port), BENCH_FABRIC (the
# fabrics' name prefix).
set -u
build=${1:?usage: $0 BUILDDIR [OUTDIR]}
out=${2:-$build/cc_scenarios}
run=$build/contrib/uccl-run
prog=$build/test/bench/cc_incast
tmo=${BENCH_TIMEOUT:-120}
configs=${CC_CONFIGS:-fixed swift timely eqds rc_verbs}
scenarios=${CC_SCENARIOS:-incast incast_buf ecmp outage slow loss}
nbulk=${CC_SENDERS:-4}
secs=${CC_SECONDS:-3}
size=${CC_SIZE:-262144}
win=${CC_WINDOW:-4}
link=${CC_LINK_GBPS:-1}
# the link's rate for UCX_UCCL_CC_LINK_RATE in bit/s: UCX's "Gbps" is 2^30
link_bps=$(awk -v g="$link" 'BEGIN { printf "%.0fbps", g * 1e9 }')
buf=${CC_BUF:-128k}
sample=${CC_SAMPLE:-}
# every process's output and stats stay in OUTDIR/raw
tmp=$out/raw
rm -rf "$tmp"
mkdir -p "$tmp" || exit 1
. "$(dirname "$0")/bench_lib.sh"
bench_port_init
# fabrics are named PREFIX_PORT (BENCH_FABRIC: the prefix)
ccfab=${BENCH_FABRIC:-cc$$}
[ -x "$prog" ] || { echo "cc_scenarios: $prog not built" >&2; exit 1; }

tls_of() {
    case $1 in
        *@base) echo "UCCL_LIBDIR=${CC_BASE_LIBDIR:?CC_BASE_LIBDIR unset}" \
                     "$(tls_of "${1%@base}")"
                return ;;
        *@base[2-9])
                eval "_d=\${CC_BASE${1##*@base}_LIBDIR:-}"
                [ -n "$_d" ] || {
                    echo "cc_scenarios: CC_BASE${1##*@base}_LIBDIR unset" >&2
                    exit 1
                }
                echo "UCCL_LIBDIR=$_d $(tls_of "${1%@base*}")"
                return ;;
        *:b[0-9]*)
                echo "UCX_UCCL_PATH_BURST=${1##*:b} $(tls_of "${1%:b*}")"
                return ;;
        *:c[0-9]*)
                echo "UCX_UCCL_CHUNK_SIZE=${1##*:c} $(tls_of "${1%:c*}")"
                return ;;
        *:rc)   echo "UCX_UCCL_MODE=rc $(tls_of "${1%:rc}")"
                return ;;
        *+*=*)  echo "${1##*+} $(tls_of "${1%+*}")"
                return ;;
    esac
    case $1 in
        rc_verbs) echo "UCX_TLS=rc_verbs,ud_verbs,self" ;;
        eqds)     echo "UCX_TLS=uccl,self UCX_UCCL_CC=eqds" \
                       "UCX_UCCL_CC_LINK_RATE=${link_bps}" ;;
        eqds_small)
                  echo "UCX_TLS=uccl,self UCX_UCCL_CC=eqds" \
                       "UCX_UCCL_CC_LINK_RATE=${link_bps}" \
                       "UCX_UCCL_CHUNK_SIZE=8k UCX_UCCL_CC_EQDS_SPEC=4k" \
                       "UCX_UCCL_CC_EQDS_CREDIT_CAP=32k UCX_UCCL_CC_EQDS_RATE=0.9" ;;
        *)        echo "UCX_TLS=uccl,self UCX_UCCL_CC=$1" ;;
    esac
}

# key FILE KEY: the value of "KEY value" in FILE (empty if none)
key() {
    awk -v k="$2" '$1 == k {print $2; exit}' "$1" 2>/dev/null
}

# drops FILE: tail drops in a softverbs stats file, each counted where
# its queue dropped it (core paths and receiving links)
drops() {
    awk '$1 ~ /^path\.[0-9]+\.queue_drops$/ ||
         $1 ~ /^port\.[0-9]+\.rx_queue_drops$/ \
         {s += $2} END {print s + 0}' "$1" 2>/dev/null
}

# shares FILE: each core path's share of the bytes in a softverbs stats
# file (both directions)
shares() {
    awk '$1 ~ /^path\.[0-9]+\.bytes$/ {split($1, k, "."); b[k[2]] = $2;
             s += $2; if (k[2] + 1 > n) n = k[2] + 1}
         END {for (i = 0; i < n; i++)
                  printf "%s%.2f", (i ? " " : ""), s ? b[i] / s : 0}' \
        "$1" 2>/dev/null
}

# maxq FILE: the deepest queue a receiving link had (bytes)
maxq() {
    awk '$1 ~ /^port\.[0-9]+\.rx_queue_max$/ && $2 > m {m = $2}
         END {print m + 0}' "$1" 2>/dev/null
}

# sample_fabric FABRIC PID FILE: the fabric's path and port counters,
# each read after a "T <ns>" line, every $sample s while PID runs
sample_fabric() {
    while kill -0 "$2" 2>/dev/null; do
        echo "T $(date +%s%N)"
        "$build/softverbs-stat" "$1" 2>/dev/null | grep -E \
            '^(path\.[0-9]+\.(bytes|queue_bytes)|port\.[0-9]+\.rx_bytes) '
        sleep "$sample"
    done >"$3"
}

# path_idle FILE PATH_GBPS: from sample_fabric's FILE, over the samples
# while port 0 (the receiver, the fabric's first port) took data, less
# the first and last 5: per core path "empty E util U" (E: fraction of
# samples below one MTU queued), then "any empty A, queued Q kB"
path_idle() {
    awk -v rate="$2" -v mtu="$(key "${1%.samples}.stats" model.mtu)" '
        $1 == "T" {n++; t[n] = $2; next}
        {v[n, $1] = $2}
        $1 ~ /^path\.[0-9]+\.bytes$/ {split($1, k, "."); if (k[2] + 1 > np)
                                        np = k[2] + 1}
        END {
            if (mtu == "") mtu = 4096
            for (i = 2; i <= n; i++)
                if (v[i, "port.0.rx_bytes"] > v[i - 1, "port.0.rx_bytes"]) {
                    if (!a) a = i; z = i
                }
            a += 5; z -= 5
            if (z - a < 10 || np == 0) {print "n/a"; exit}
            dt = (t[z] - t[a]) / 1e9
            for (i = a; i <= z; i++) {
                any = 0; q = 0
                for (p = 0; p < np; p++) {
                    b = v[i, "path." p ".queue_bytes"] + 0; q += b
                    if (b < mtu) {e[p]++; any = 1}
                }
                anyn += any; qsum += q
            }
            m = z - a + 1
            for (p = 0; p < np; p++) {
                u = v[z, "path." p ".bytes"] - v[a, "path." p ".bytes"]
                printf "p%d empty %.2f util %.2f, ", p, e[p] / m,
                    u * 8 / dt / (rate * 1e9)
            }
            printf "any empty %.2f, queued %.0f kB", anyn / m, qsum / m / 1e3
        }' "$1" 2>/dev/null
}

# incast NAME CFG BULK FABRIC_ENV...: one receiver, BULK senders and a
# probe on a fresh fabric (run in this shell: it moves the port). Leaves
# $tmp/NAME.CFG.{srv,probe,bulkI,stats} and $out/NAME.CFG.timeline.
incast() {
    _n=$1 _c=$2 _b=$3
    shift 3
    bench_next_port
    _f=$tmp/$_n.$_c
    _env="$(tls_of "$_c") SOFTVERBS_DEVICES=1 SOFTVERBS_FABRIC=${ccfab}_$port $*"
    # shellcheck disable=SC2086
    env $_env SOFTVERBS_STATS="$_f.stats" timeout "$tmo" "$run" "$prog" \
        server -p $port -n $((_b + 1)) -s "$size" -w "$win" -i 5 -T "$tmo" \
        -o "$out/$_n.$_c.timeline" >"$_f.srv" 2>&1 &
    _pid=$!
    if uccl_wait_listen "$port" $_pid; then
        [ -n "$sample" ] &&
            sample_fabric "${ccfab}_$port" $_pid "$_f.samples" &
        _i=0
        while [ $_i -lt "$_b" ]; do
            # shellcheck disable=SC2086
            env $_env SOFTVERBS_STATS="$_f.stats$_i" timeout "$tmo" "$run" \
                "$prog" bulk -p $port \
                -s "$size" -w "$win" -t "$secs" -T "$tmo" \
                >"$_f.bulk$_i" 2>&1 &
            _i=$((_i + 1))
        done
        # shellcheck disable=SC2086
        env $_env timeout "$tmo" "$run" "$prog" probe -p $port -t "$secs" \
            -T "$tmo" >"$_f.probe" 2>&1
    fi
    wait
    rm -f "/dev/shm/softverbs.${ccfab}_$port" \
        "/dev/shm/softverbs.${ccfab}_$port".*
    [ -n "$(key "$_f.srv" goodput_gbps)" ] ||
        echo "cc_scenarios: $_n $_c failed: $(tail -n 2 "$_f.srv" \
              "$_f.probe" 2>/dev/null | tr '\n' ' ')" >&2
}

# row NAME CFG CAPACITY: probe percentiles, goodput, share, drops, the
# deepest receiving queue
row() {
    _f=$tmp/$1.$2
    _g=$(key "$_f.srv" goodput_gbps)
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$2" \
        "$(key "$_f.probe" rtt_p50_us)" "$(key "$_f.probe" rtt_p99_us)" \
        "$(key "$_f.probe" rtt_p999_us)" "${_g:-FAIL}" \
        "$(bench_ratio "$_g" "$3")" "$(drops "$_f.stats")" \
        "$(maxq "$_f.stats")"
}

header() {
    echo
    echo "$1"
    echo
    echo "| config | probe p50 (us) | p99 (us) | p999 (us) | goodput" \
         "(Gbit/s) | of capacity | drops | max rx queue (B) |"
    echo "|---|---|---|---|---|---|---|---|"
}

# per-flow spread: slowest / fastest sender
spread() {
    awk '$1 ~ /^client[0-9]+_gbps$/ {v = $2 + 0;
             if (n++ == 0 || v < lo) lo = v; if (v > hi) hi = v}
         END {if (hi > 0) printf "%.2f", lo / hi; else print "n/a"}' \
        "$tmp/$1.$2.srv"
}

# mean goodput of a timeline between two times (ms)
tl_mean() {
    awk -v a="$2" -v b="$3" '!/^#/ && $1 >= a && $1 < b {s += $2; n++}
         END {if (n) printf "%.3f", s / n; else print "n/a"}' "$1" 2>/dev/null
}

# tl_recover FILE EVENT_MS BEFORE: ms from EVENT_MS to the start of the
# first 20 ms window (4 bins of 5 ms, the first the one EVENT_MS falls in)
# whose mean is at least 0.9 x BEFORE, ">1000" if none within a second
tl_recover() {
    awk -v e="$2" -v b="$3" '!/^#/ {t[n] = $1; g[n] = $2; n++}
        END {
            for (i = 0; i + 3 < n; i++) {
                if (t[i] + 2.5 <= e) continue
                if (t[i] - 2.5 >= e + 1000) break
                if ((g[i] + g[i+1] + g[i+2] + g[i+3]) / 4 >= 0.9 * b) {
                    printf "%g", (t[i] - 2.5 > e) ? t[i] - 2.5 - e : 0
                    exit
                }
            }
            print ">1000"
        }' "$1" 2>/dev/null
}

# tl_epoch TIMELINE STATS: the fabric's epoch (softverbs' model.epoch_ns
# in the receiver's STATS, what SOFTVERBS_PATH_DOWN counts from) on the
# TIMELINE's axis, in ms (0 when either does not say)
tl_epoch() {
    awk '$1 == "#" && $2 == "start_ns" {s = $3}
         $1 == "model.epoch_ns" {e = $2}
         END {printf "%.1f", (s > 0 && e > 0) ? (e - s) / 1e6 : 0}' \
        "$1" "$2" 2>/dev/null
}

# tl_rebin FILE N: the timeline in bins N times as long (mean of N)
tl_rebin() {
    awk -v n="$2" '!/^#/ {s += $2; t += $1; if (++k == n) {
            printf "%.1f %.4f\n", t / n, s / n; s = t = k = 0}}' "$1" \
        2>/dev/null
}

# tl_stall FILE FROM_MS TO_MS: the longest run of empty 5 ms bins (ms)
tl_stall() {
    awk -v a="$2" -v z="$3" '!/^#/ && $1 >= a && $1 < z {
            if ($2 == 0) {r += 5; if (r > m) m = r} else r = 0}
        END {print m + 0}' "$1" 2>/dev/null
}

# max_rto NAME CFG: the largest rto_us of the bulk senders' conns (uccl)
max_rto() {
    cat "$tmp/$1.$2".bulk* 2>/dev/null | awk '{for (i = 1; i < NF; i++)
            if ($i == "rto_us" && $(i + 1) + 0 > m) m = $(i + 1) + 0}
        END {if (m > 0) printf "%.1f", m / 1000; else print "n/a"}'
}

plot() {
    command -v gnuplot >/dev/null 2>&1 || return 0
    gnuplot 2>/dev/null
}

md=$tmp/md
: >"$md"
say() { echo "$*" | tee -a "$md"; }

say "# Congestion control scenarios (softverbs, $(date -u +%Y-%m-%dT%H:%MZ))"
say
say "Configs: $configs. $nbulk bulk senders of ${size}-byte tagged messages," \
    "$win in flight each, and one 64 B ping-pong probe, for $secs s, into" \
    "one receiver; links $link Gbit/s (every process one device)."
say "uccl: UCX_TLS=uccl,self UCX_UCCL_CC=<config>; rc_verbs:" \
    "UCX_TLS=rc_verbs,ud_verbs,self."

for s in $scenarios; do
    case $s in
    incast|incast_buf)
        e="SOFTVERBS_LINK_GBPS=$link"
        # eqds is told its port's buffer, as it is told the link rate
        [ "$s" = incast_buf ] &&
            e="$e SOFTVERBS_BUF_BYTES=$buf UCX_UCCL_CC_EQDS_INFLIGHT=$buf"
        for c in $configs; do incast "$s" "$c" "$nbulk" $e; done
        if [ "$s" = incast ]; then
            header "## Incast, lossless ($e)" | tee -a "$md"
        else
            header "## Incast, finite buffers ($e)" | tee -a "$md"
        fi
        for c in $configs; do row "$s" "$c" "$link" | tee -a "$md"; done
        ;;
    ecmp)
        # the core paths share the edge rate equally
        np=${CC_ECMP_PATHS:-4}
        core=$(awk -v l="$link" -v n="$np" 'BEGIN {printf "%g", l / n}')
        e="SOFTVERBS_LINK_GBPS=$link SOFTVERBS_PATHS=$np"
        e="$e SOFTVERBS_PATH_GBPS=$core"
        for c in $configs; do incast ecmp "$c" "$nbulk" $e; done
        header "## ECMP collisions ($e: capacity $link Gbit/s over $np paths)" |
            tee -a "$md"
        for c in $configs; do row ecmp "$c" "$link" | tee -a "$md"; done
        say
        say "Slowest/fastest flow: $(for c in $configs; do
            printf '%s %s; ' "$c" "$(spread ecmp "$c")"; done)"
        say "Core path shares of the bytes: $(for c in $configs; do
            printf '%s %s; ' "$c" "$(shares "$tmp/ecmp.$c.stats")"; done)"
        if [ -n "$sample" ]; then
            for c in $configs; do
                say "Core paths sampled, $c: $(path_idle \
                    "$tmp/ecmp.$c.samples" "$core")"
            done
        fi
        ;;
    outage)
        # path 3 of 8 down from 2.5 s to 3.5 s after the fabric starts
        # (the receiver's start; its clients go ~1 s later)
        e="SOFTVERBS_LINK_GBPS=$link SOFTVERBS_PATHS=8 SOFTVERBS_PATH_DOWN=3:2500-3500"
        osecs=$((secs + 3))
        for c in $configs; do
            secs_save=$secs; secs=$osecs
            incast outage "$c" "$nbulk" $e UCX_UCCL_STATS_DUMP=y
            secs=$secs_save
        done
        header "## A path down for 1 s ($e), $osecs s run" | tee -a "$md"
        for c in $configs; do row outage "$c" "$link" | tee -a "$md"; done
        say
        say "| config | Gbit/s 1.5-2.5 s | 2.5-3.5 s (down) | 3.5-4.5 s |" \
            "lowest 5 ms bin 3.5-4.5 s | to 0.9 after down (ms) |" \
            "to 0.9 after up (ms) | longest stall 1.5-4.5 s (ms) |" \
            "largest RTO (ms) | fabric epoch (ms) |"
        say "|---|---|---|---|---|---|---|---|---|---|"
        # the path's times on the timeline's axis (the fabric starts with
        # the receiver's first verbs call, a millisecond or so after it)
        for c in $configs; do
            t=$out/outage.$c.timeline
            o=$(tl_epoch "$t" "$tmp/outage.$c.stats")
            dn=$(awk -v o="$o" 'BEGIN {printf "%g", 2500 + o}')
            up=$(awk -v o="$o" 'BEGIN {printf "%g", 3500 + o}')
            b=$(tl_mean "$t" 1500 2500)
            say "| $c | $b | $(tl_mean "$t" 2500 3500)" \
                "| $(tl_mean "$t" 3500 4500) | $(awk '!/^#/ && $1 >= 3500 &&
                $1 < 4500 && (n++ == 0 || $2 < m) {m = $2} END {print m}' \
                "$t" 2>/dev/null) | $(tl_recover "$t" "$dn" "$b") |" \
                "$(tl_recover "$t" "$up" "$b") | $(tl_stall "$t" 1500 4500) |" \
                "$(max_rto outage "$c") | $o |"
        done
        # plotted in 50 ms bins: a 5 ms bin holds 2 or 3 whole messages
        for c in $configs; do tl_rebin "$out/outage.$c.timeline" 10 \
            >"$tmp/outage.$c.tl50"; done
        {
            echo "set terminal png size 1000,500 noenhanced"
            echo "set output '$out/outage.png'"
            echo "set title 'Goodput at the receiver, path 3 of 8 down 2.5-3.5 s'"
            echo "set xlabel 'ms since the receiver started'"
            echo "set ylabel 'Gbit/s (50 ms bins)'"
            echo "set object 1 rect from 2500, graph 0 to 3500, graph 1" \
                 "fc rgb '#eeeeee' behind"
            printf "plot"
            _sep=""
            for c in $configs; do
                printf "%s '%s' using 1:2 with lines title '%s'" "$_sep" \
                    "$tmp/outage.$c.tl50" "$c"
                _sep=","
            done
            echo
        } | plot
        ;;
    slow)
        e="SOFTVERBS_LINK_GBPS=$link SOFTVERBS_PATHS=8 SOFTVERBS_PATH_GBPS=$link,3:$(awk -v l="$link" 'BEGIN {printf "%g", l / 10}')"
        for c in $configs; do incast slow "$c" "$nbulk" $e; done
        header "## A path at a tenth of the rate ($e)" | tee -a "$md"
        for c in $configs; do row slow "$c" "$link" | tee -a "$md"; done
        ;;
    loss)
        for l in 0 0.001 0.01 0.05; do
            for c in $configs; do
                incast "loss$l" "$c" 2 "SOFTVERBS_LINK_GBPS=$link" \
                    "SOFTVERBS_LOSS=$l"
            done
        done
        say
        say "## Loss sweep (2 bulk senders and the probe; SOFTVERBS_LOSS" \
            "per packet)"
        say
        say "| config | 0 | 0.1% | 1% | 5% | 1% / 0 | probe p99 at 0 / 1% (us) |"
        say "|---|---|---|---|---|---|---|"
        for c in $configs; do
            g0=$(key "$tmp/loss0.$c.srv" goodput_gbps)
            g1=$(key "$tmp/loss0.01.$c.srv" goodput_gbps)
            say "| $c | ${g0:-FAIL} | $(key "$tmp/loss0.001.$c.srv" \
                goodput_gbps) | ${g1:-FAIL} | $(key "$tmp/loss0.05.$c.srv" \
                goodput_gbps) | $(bench_ratio "$g1" "$g0") |" \
                "$(key "$tmp/loss0.$c.probe" rtt_p99_us) /" \
                "$(key "$tmp/loss0.01.$c.probe" rtt_p99_us) |"
        done
        {
            echo "set terminal png size 800,500 noenhanced"
            echo "set output '$out/loss.png'"
            echo "set title 'Goodput under random loss'"
            echo "set xlabel 'loss (%)'"
            echo "set ylabel 'Gbit/s'"
            echo "set logscale x"
            printf "plot"
            _sep=""
            for c in $configs; do
                printf "%s '-' using 1:2 with linespoints title '%s'" \
                    "$_sep" "$c"
                _sep=","
            done
            echo
            for c in $configs; do
                for l in 0.001 0.01 0.05; do
                    echo "$(awk -v l="$l" 'BEGIN {print l * 100}')" \
                         "$(key "$tmp/loss$l.$c.srv" goodput_gbps)"
                done
                echo e
            done
        } | plot
        ;;
    *)
        echo "cc_scenarios: unknown scenario $s" >&2
        ;;
    esac
done

# the incast tails, one bar per config
if [ -s "$tmp/incast.$(echo "$configs" | awk '{print $1}').probe" ]; then
    {
        echo "set terminal png size 800,500 noenhanced"
        echo "set output '$out/incast.png'"
        echo "set title 'Incast: probe round trip (lossless fabric)'"
        echo "set ylabel 'us'"
        echo "set logscale y"
        echo "set style data histograms"
        echo "set style fill solid 0.6"
        echo "plot '-' using 2:xtic(1) title 'p50', '-' using 2 title 'p99'," \
             "'-' using 2 title 'p999'"
        for k in rtt_p50_us rtt_p99_us rtt_p999_us; do
            for c in $configs; do
                echo "$c $(key "$tmp/incast.$c.probe" $k)"
            done
            echo e
        done
    } | plot
fi

say
say "Goodput: bytes the receiver got while all clients ran, over that time" \
    "(\"of capacity\": over the bottleneck's rate). Drops: packets the" \
    "fabric tail-dropped (paths and receiving links). Probe: 64 B" \
    "round trips, whole distribution over the run."
command -v gnuplot >/dev/null 2>&1 && say "Plots: $out/*.png." ||
    say "Plots: not drawn (no gnuplot; Debian package gnuplot-nox)."
cp "$md" "$out/cc_scenarios.md"

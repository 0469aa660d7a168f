#!/bin/sh
#
# sv_fabric_robust.sh SV_FABRIC_TOOL: nothing blocks on a lock of a dead
# process (a hung one costs 10 s and an error), a corrupt fabric file is
# replaced with a one-line warning, a corrupt model configuration is
# refused.
#
# Each case ends with a short verbs program (ibv_devinfo) that must succeed
# within 30 s; afterwards nothing of the fabric may be left in /dev/shm.
# Needs SOFTVERBS_LIB; SOFTVERBS_FABRIC names the fabric (default t_robust).
#
tool=$1
here=$(dirname "$0")
fab=${SOFTVERBS_FABRIC:-t_robust}
export SOFTVERBS_FABRIC=$fab
shm=/dev/shm/softverbs.$fab
fail() { echo "sv_fabric_robust.sh: FAILED: $*" >&2; exit 1; }
files() { ls -d "$shm" "$shm".* 2>/dev/null; }
command -v ibv_devinfo >/dev/null ||
    fail "no ibv_devinfo (ibverbs-utils, which contrib/setup.sh installs)"

rm -f $(files)
err=$(mktemp)
holder=
trap 'rm -f "$err"; [ -z "$holder" ] || kill -9 $holder 2>/dev/null' EXIT
locker=

devinfo() {    # devinfo WHAT EXPECTED_WARNING
    timeout -s KILL 30 "$here/sv_run.sh" ibv_devinfo -d sv0 >/dev/null 2>"$err"
    rc=$?
    cat "$err" >&2
    [ $rc -eq 0 ] || fail "$1: ibv_devinfo exited $rc (137: hung, killed)"
    if [ -n "$2" ]; then
        [ "$(grep -c "$2" "$err")" -eq 1 ] ||
            fail "$1: expected one warning matching '$2'"
    fi
    echo "ok: $1"
}

start_holder() {
    out=$(mktemp)
    "$here/sv_run.sh" "$tool" hold >"$out" 2>&1 &
    holder=$!
    i=0
    while ! grep -q ready "$out" && [ $i -lt 100 ]; do
        sleep 0.1; i=$((i + 1))
    done
    grep -q ready "$out" || { cat "$out"; fail "holder never opened sv0"; }
    rm -f "$out"
}

# 1. the lock held by a dead process while a live one uses the fabric
start_holder
"$tool" lockdie || fail "lockdie"
devinfo "join while the lock's holder is dead (fabric in use)"
# 2. the same in an abandoned fabric (its only user killed -9 too)
"$tool" lockdie || fail "lockdie"
kill -9 $holder; wait $holder 2>/dev/null; holder=
"$tool" lockdie || fail "lockdie"
devinfo "join an abandoned fabric whose lock's holder is dead"
left=$(files); [ -z "$left" ] || fail "left in /dev/shm: $left"

# 3. a live process that holds the lock and hangs: a joiner gives up after
#    10 s with an error, it does not wait forever
start_holder
"$tool" lockhold >/dev/null &
locker=$!
sleep 0.5
t0=$(date +%s)
timeout -s KILL 60 "$here/sv_run.sh" ibv_devinfo -d sv0 >/dev/null 2>"$err"
rc=$?
t1=$(date +%s)
kill -9 $locker; wait $locker 2>/dev/null
cat "$err" >&2
[ $rc = 1 ] && grep -q "cannot take its lock" "$err" &&
    [ $((t1 - t0)) -lt 30 ] ||
    fail "join while a live process holds the lock: exit $rc after" \
         "$((t1 - t0)) s"
echo "ok: a lock held by a hung process costs a joiner 10 s and an error"
kill -9 $holder; wait $holder 2>/dev/null; holder=
rm -f $(files)

# 4. a live fabric whose model configuration was overwritten (by a member
#    gone wrong): a joiner says so and fails, it does not divide by zero
start_holder
"$tool" corrupt_model || fail "corrupt_model"
timeout -s KILL 30 "$here/sv_run.sh" ibv_devinfo -d sv0 >/dev/null 2>"$err"
rc=$?
cat "$err" >&2
[ $rc = 1 ] && grep -q "model configuration is corrupt" "$err" ||
    fail "join a fabric with a corrupt model: exit $rc"
echo "ok: a fabric with a corrupt model configuration is refused"
kill -9 $holder; wait $holder 2>/dev/null; holder=
rm -f $(files)

# 5. corrupt files at the fabric's name
size=$("$tool" size)
printf 'not a fabric\n' >"$shm"
devinfo "truncated fabric file" "not a usable fabric (truncated)"
head -c "$size" /dev/zero | tr '\0' 'x' >"$shm"
devinfo "fabric file with a wrong magic" "not a usable fabric (bad magic)"
: >"$shm"
devinfo "empty fabric file" "not a usable fabric (truncated)"
left=$(files); [ -z "$left" ] || fail "left in /dev/shm: $left"
echo "sv_fabric_robust.sh: passed"

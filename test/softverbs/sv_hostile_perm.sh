#!/bin/sh
#
# sv_hostile_perm.sh SV_FABRIC_TOOL: other users are kept out of a fabric.
#
#  1. a fabric and its port segments are mode 0600, owned by their creator;
#  2. another user cannot join it;
#  3. a file at the fabric's name owned by another user is refused (with a
#     line saying why), not replaced;
#  4. a live fabric whose mode lets others in is refused;
#  5. a port segment owned by another user, or with 'other' bits, is not
#     mapped (a peer's traffic to it goes nowhere);
#  6. a port entry naming a process of another user: nothing is copied into
#     that process;
#  7. SOFTVERBS_SHARE=group: files 0660 in the creator's group; members of
#     the group join, others do not, nor does a process without the
#     variable; data moves where the kernel lets process_vm_writev write
#     (root into a user's process), and fails cleanly where it does not (a
#     user into root's or another user's process).
#
# Other users are nobody (65534) and daemon (1), the shared group is users
# (100), all in Debian's base system; setpriv (util-linux) switches to them.
# That needs root: as another user only the mode cases (4, 5) run, then the
# test exits 77 (skipped).
# Needs SOFTVERBS_LIB; SOFTVERBS_FABRIC names the fabric (default t_perm).
#
tool=$1
fab=${SOFTVERBS_FABRIC:-t_perm}
export SOFTVERBS_FABRIC=$fab
shm=/dev/shm/softverbs.$fab
lib=${SOFTVERBS_LIB:-}
G=100
fail() { echo "sv_hostile_perm.sh: FAILED: $*" >&2; exit 1; }
files() { ls -d "$shm" "$shm".* 2>/dev/null; }
[ -f "$lib" ] || fail "SOFTVERBS_LIB=\"$lib\" is not a built library"

# library and tool where every user can load them
tmp=$(mktemp -d /tmp/sv_perm.XXXXXX)
chmod 755 "$tmp"
cp "$lib" "$tmp/libsoftverbs.so"
cp "$tool" "$tmp/sv_fabric_tool"
chmod 755 "$tmp"/*
san=$(ldd "$lib" 2>/dev/null | awk '/lib(a|ub)san\.so/ { printf "%s:", $3 }')
pre="$san$tmp/libsoftverbs.so"
pids=
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$tmp"
    rm -f $(files)
}
trap cleanup EXIT

# $VT CMD: CMD with softverbs preloaded (the tool's leaks are not the point)
VT="env LD_PRELOAD=$pre ASAN_OPTIONS=detect_leaks=0"
T=$tmp/sv_fabric_tool
root=0
[ "$(id -u)" = 0 ] && root=1
if [ $root = 1 ]; then
    command -v setpriv >/dev/null || fail "setpriv (util-linux) missing"
    getent passwd nobody >/dev/null && getent passwd daemon >/dev/null &&
        getent group users >/dev/null || fail "no nobody/daemon/users"
fi
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
# a member of the sharing group runs with it as its effective group (as
# `sg users -c ...` would): the files it creates are the group's
NOBODY_G="setpriv --reuid=65534 --regid=$G --groups=$G"
DAEMON_G="setpriv --reuid=1 --regid=$G --groups=$G"
ROOT_G="setpriv --regid=$G --clear-groups"

# refused LOG CMD...: CMD must give up by itself (a refused process exits;
# one let in would hold the fabric until `timeout` kills it)
refused() {
    log=$1; shift
    timeout -s KILL 30 "$@" >"$log" 2>&1 && fail "$* was let in"
    return 0
}

# bg_start OUT CMD...: run in the background until it prints "ready"
bg_start() {
    out=$1; shift
    : >"$out"       # not the last one's "ready"
    "$@" >>"$out" 2>&1 &
    bg=$!
    pids="$pids $bg"
    i=0
    while ! grep -q ready "$out" && [ $i -lt 100 ]; do
        sleep 0.1; i=$((i + 1))
    done
    grep -q ready "$out" || { cat "$out"; fail "$* never got ready"; }
}
bg_stop() { kill -9 "$bg" 2>/dev/null; wait "$bg" 2>/dev/null; rm -f $(files); }
mode() { stat -c %a "$1"; }
owner() { stat -c %u:%g "$1"; }
# expect_refused WHAT LOGFILE PATTERN
expect_log() {
    grep -q "$3" "$2" || { cat "$2"; fail "$1: no line matching '$3'"; }
    echo "ok: $1"
}

rm -f $(files)
out=$tmp/out
log=$tmp/log

# --- modes (any user) ----------------------------------------------------
bg_start "$out" $VT "$T" hold
[ "$(mode "$shm")" = 600 ] || fail "fabric file is mode $(mode "$shm")"
for s in "$shm".*; do
    [ "$(mode "$s")" = 600 ] || fail "segment $s is mode $(mode "$s")"
    [ "$(owner "$s")" = "$(id -u):$(id -g)" ] || fail "segment $s owner"
done
echo "ok: the fabric and its segment are mode 0600, the creator's"

chmod 0666 "$shm"
refused "$log" $VT "$T" hold
expect_log "a live fabric with mode 0666 is refused" "$log" \
    "refusing $shm .*mode 0666.*other"
bg_stop

bg_start "$out" $VT "$T" udsink
set -- $(grep ready "$out")
lid=$2 qpn=$3
seg=$(ls "$shm".$((lid - 1)).*)
chmod 0606 "$seg"
$VT "$T" udsend "$lid" "$qpn" >"$log" 2>&1
expect_log "a segment with 'other' bits is not mapped" "$log" \
    "refusing $seg .*mode 0606"
bg_stop

if [ $root = 0 ]; then
    echo "sv_hostile_perm.sh: not root: the other-user cases (chown," \
         "setpriv) did not run"
    exit 77
fi

# --- other users ------------------------------------------------------------
bg_start "$out" $VT "$T" hold
refused "$log" $NOBODY $VT "$T" hold
expect_log "another user cannot join" "$log" \
    "cannot join fabric '$fab': Permission denied"
bg_stop

echo garbage >"$shm"
chown 65534:65534 "$shm"
chmod 0600 "$shm"
refused "$log" $VT "$T" hold
expect_log "a file of another user at the fabric's name is refused" "$log" \
    "refusing $shm (owner uid 65534.*belongs to another user"
[ "$(owner "$shm")" = 65534:65534 ] && [ "$(cat "$shm")" = garbage ] ||
    fail "the other user's file was replaced"
echo "ok: ... and left alone"
rm -f "$shm"

bg_start "$out" $VT "$T" udsink
set -- $(grep ready "$out")
lid=$2 qpn=$3
seg=$(ls "$shm".$((lid - 1)).*)
chown 65534 "$seg"
$VT "$T" udsend "$lid" "$qpn" >"$log" 2>&1
expect_log "a segment owned by another user is not mapped" "$log" \
    "refusing $seg (owner uid 65534.*belongs to another user"
bg_stop

# a process of another user named in the port table: root could write into
# it, so the sender must not
$NOBODY sleep 60 &
victim=$!
pids="$pids $victim"
bg_start "$out" $VT "$T" udsink
set -- $(grep ready "$out")
lid=$2 qpn=$3
"$T" setpid $((lid - 1)) $victim
$VT "$T" udsend "$lid" "$qpn" >"$log" 2>&1
expect_log "no copy into a process of another user" "$log" \
    "pid $victim is not a process of uid 0"
bg_stop
kill -9 $victim 2>/dev/null

# --- SOFTVERBS_SHARE=group ----------------------------------------------------
export SOFTVERBS_SHARE=group
# WHAT=... SENDER=AS EXPECT=WC pair SINK_AS: a datagram between two users
pair() {
    bg_start "$out" $1 $VT "$T" udsink
    [ "$(mode "$shm")" = 660 ] && [ "$(stat -c %g "$shm")" = $G ] ||
        fail "group fabric: mode $(mode "$shm") group $(stat -c %g "$shm")"
    for s in "$shm".*; do
        [ "$(mode "$s")" = 660 ] && [ "$(stat -c %g "$s")" = $G ] ||
            fail "group segment $s: mode $(mode "$s") group $(stat -c %g "$s")"
    done
    set -- $(grep ready "$out")
    lid=$2 qpn=$3
    $SENDER $VT "$T" udsend "$lid" "$qpn" >"$log" 2>&1 ||
        { cat "$log"; fail "$WHAT: the sender failed"; }
    wait "$bg"
    grep -q "^wc $EXPECT" "$out" ||
        { cat "$out" "$log"; fail "$WHAT: sink got '$(grep '^wc' "$out")'," \
                                  "expected 'wc $EXPECT'"; }
    echo "ok: $WHAT: $(grep '^wc' "$out")"
    rm -f $(files)
}
WHAT="group: root into a user's process" SENDER=$ROOT_G \
    EXPECT="success 104 data-ok" pair "$NOBODY_G"
WHAT="group: a user into root's process (EPERM)" SENDER=$NOBODY_G \
    EXPECT="local protection error" pair "$ROOT_G"
WHAT="group: a user into another user's process (EPERM)" SENDER=$NOBODY_G \
    EXPECT="local protection error" pair "$DAEMON_G"

bg_start "$out" $ROOT_G $VT "$T" hold
refused "$log" $NOBODY $VT "$T" hold
expect_log "group: a user outside the group cannot join" "$log" \
    "cannot join fabric '$fab': Permission denied"
refused "$log" $NOBODY_G env -u SOFTVERBS_SHARE $VT "$T" hold
expect_log "group: joining needs SOFTVERBS_SHARE=group" "$log" \
    "refusing $shm .*belongs to another user"
bg_stop
echo "sv_hostile_perm.sh: passed"

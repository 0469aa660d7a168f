#!/bin/sh
#
# A Debian root (debootstrap) for building and testing uccl on another
# Debian release than the machine's, cached under $UCCL_CACHE/roots.
#
#   contrib/debian-root.sh [--suite S] [--net] [--bind DIR] create
#   contrib/debian-root.sh [--suite S] [--net] [--bind DIR] run CMD [ARGS...]
#
# create makes $UCCL_CACHE/roots/debian-S (default suite trixie) once and
# reuses it afterwards (it is complete when .uccl-root-complete exists).
#
# run executes CMD as root inside it, in a private mount namespace that ends
# with CMD: its own /proc, /sys, /run and /tmp, the machine's /dev with a
# private /dev/shm (softverbs fabrics inside cannot meet those outside), and
# DIR (default: this checkout) at the same path as outside. Without --net
# it also gets its own network namespace (loopback only), so its TCP ports
# and network namespaces never collide with the machine's; --net keeps the
# machine's network, for apt-get.
#
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${UCCL_CACHE:-/var/cache/uccl}
mirror=${UCCL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=trixie
net=0
bind=$top

while [ $# -gt 0 ]; do
    case $1 in
        --suite) suite=$2; shift 2 ;;
        --net)   net=1; shift ;;
        --bind)  bind=$(cd "$2" && pwd); shift 2 ;;
        *)       break ;;
    esac
done
[ $# -ge 1 ] || { sed -n '3,20s/^# \{0,1\}//p' "$0" >&2; exit 2; }
action=$1
shift

[ "$(id -u)" = 0 ] || { echo "debian-root.sh: run as root" >&2; exit 1; }
root=$cache/roots/debian-$suite
log() { echo "debian-root.sh: $*"; }

create() {
    [ -f "$root/.uccl-root-complete" ] && return 0
    command -v debootstrap >/dev/null || {
        log "installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap \
            >/dev/null
    }
    log "debootstrap $suite into $root (once; cached)"
    rm -rf "$root.tmp"
    mkdir -p "$cache/roots"
    debootstrap --variant=minbase --include=ca-certificates,sudo \
        "$suite" "$root.tmp" "$mirror" >"$cache/roots/debian-$suite.log" 2>&1 ||
        { tail -n 20 "$cache/roots/debian-$suite.log"; exit 1; }
    # sources of the suite itself: setup.sh adds deb-src beside them
    cat >"$root.tmp/etc/apt/sources.list.d/debian.sources" <<EOS
Types: deb
URIs: $mirror
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
    rm -f "$root.tmp/etc/apt/sources.list"
    touch "$root.tmp/.uccl-root-complete"
    mv "$root.tmp" "$root"
}

# What a program inside expects of the system it runs on (checked at every
# run, so an older cached root gets it too): localhost resolves.
fixup() {
    grep -qs '^127\.0\.0\.1[[:space:]].*localhost' "$root/etc/hosts" ||
        printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
            >>"$root/etc/hosts"
}

# Runs in the new mount (and network) namespace: mount, then chroot.
enter() {
    mount --make-rprivate /
    # the root is a mount point of its own, as / is for a real system (ip
    # netns exec remounts / as a slave)
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount -t sysfs sysfs "$root/sys"
    mount --bind /dev "$root/dev"
    mount -t tmpfs -o mode=1777,size=50% shm "$root/dev/shm"
    mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" \
        2>/dev/null || true
    mount -t tmpfs -o mode=755 run "$root/run"
    mount -t tmpfs -o mode=1777 tmp "$root/tmp"
    mkdir -p "$root$bind"
    mount --bind "$bind" "$root$bind"
    cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    [ "$net" = 1 ] || ip link set lo up 2>/dev/null ||
        chroot "$root" ip link set lo up 2>/dev/null || true
    exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        TERM="${TERM:-dumb}" CI="${CI:-}" "$@"
}

case $action in
    create)
        create
        ;;
    run)
        [ $# -ge 1 ] || { echo "debian-root.sh: run needs a command" >&2; exit 2; }
        create
        fixup
        if [ "${UCCL_ROOT_ENTER:-}" = 1 ]; then
            enter "$@"
        fi
        flags=--mount
        [ "$net" = 1 ] || flags="$flags --net"
        exec env UCCL_ROOT_ENTER=1 unshare $flags --fork \
            "$0" --suite "$suite" $( [ "$net" = 1 ] && echo --net ) \
            --bind "$bind" run "$@"
        ;;
    *)
        echo "debian-root.sh: unknown action '$action'" >&2
        exit 2
        ;;
esac

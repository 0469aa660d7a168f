#!/bin/sh
#
# Set up a fresh Debian 12 machine for uccl, then build and install it.
# Idempotent; run as root or with sudo.
#
#   contrib/setup.sh [--no-install] [CONFIGURE_ARGS...]
#
# 1. installs every Debian package the project needs (python3-dev and
#    Debian's Dask for the ucp binding and its tests);
# 2. adds a deb-src line and fetches the source of exactly the installed UCX
#    version into $UCCL_CACHE (default /var/cache/uccl), for UCX's internal
#    headers;
# 3. configures, builds (in $UCCL_BUILD, default ./build) and installs
#    (default prefix /usr/local), so that `uccl-run` is on PATH.
#
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${UCCL_CACHE:-/var/cache/uccl}
build=${UCCL_BUILD:-$top/build}
install=1
if [ "${1:-}" = "--no-install" ]; then install=0; shift; fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "setup.sh: run as root or install sudo" >&2; exit 1; }
    SUDO=sudo
fi

packages="build-essential autoconf automake libtool pkg-config dpkg-dev
          xz-utils libucx-dev ucx-utils libibverbs-dev ibverbs-utils rdma-core
          perftest libopenmpi-dev openmpi-bin netpipe-openmpi cmake valgrind
          clang libclang-rt-dev
          iproute2 procps psmisc
          python3 python3-dev python3-numpy python3-dask python3-distributed"

log() { echo "setup.sh: $*"; }

missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $p"
done

# deb-src for the distribution's main archive (same mirror and suite as the
# binary packages), needed by `apt-get source ucx`.
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
srclist=/etc/apt/sources.list.d/uccl-src.sources
need_update=0
if [ ! -f "$srclist" ]; then
    mirror=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)\/\{0,1\}$/\1/p' \
                 /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
    [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ {print $2; exit}' \
                                   /etc/apt/sources.list 2>/dev/null)
    [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
    log "adding deb-src $mirror $codename"
    $SUDO sh -c "cat > $srclist" <<EOS
Types: deb-src
URIs: $mirror
Suites: $codename $codename-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
    need_update=1
fi

if [ -n "$missing" ] || [ "$need_update" = 1 ]; then
    log "apt-get update"
    $SUDO apt-get update -q >/dev/null
fi
if [ -n "$missing" ]; then
    log "installing$missing"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends $missing >/dev/null
fi

# UCX source of exactly the installed version.
ucx_deb=$(dpkg-query -W -f='${Version}' libucx-dev)
ucx_ver=$(pkg-config --modversion ucx-uct)
if [ ! -f "$cache/ucx-$ucx_ver/src/uct/base/uct_md.h" ]; then
    log "fetching UCX $ucx_deb source into $cache"
    $SUDO mkdir -p "$cache"
    (cd "$cache" && $SUDO apt-get source -q "ucx=$ucx_deb" >/dev/null 2>&1) || {
        # apt may refuse to run as _apt in a root-owned directory: retry quietly
        (cd "$cache" && $SUDO apt-get source -q "ucx=$ucx_deb")
    }
fi
[ -f "$cache/ucx-$ucx_ver/src/uct/base/uct_md.h" ] || {
    echo "setup.sh: UCX $ucx_ver source not found in $cache" >&2; exit 1; }

# UCX's ib md (rc_verbs/ud_verbs, not uccl) lists a device only if
# /dev/infiniband/<dev> opens: give softverbs devices a node to open
# (uccl-run does the same at every run; /dev does not survive a reboot).
if ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
    $SUDO mkdir -p /dev/infiniband
    i=0
    while [ $i -lt 16 ]; do
        [ -c /dev/infiniband/uverbs_sv$i ] ||
            $SUDO mknod -m 666 /dev/infiniband/uverbs_sv$i c 1 3
        i=$((i + 1))
    done
fi

# Build and install.
if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ]; then
    log "autogen"
    (cd "$top" && ./autogen.sh >/dev/null 2>&1) || (cd "$top" && ./autogen.sh)
fi
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ "$top/configure" -nt config.status ]; then
    log "configure $*"
    "$top/configure" --with-ucx-src="$cache/ucx-$ucx_ver" "$@" >configure.log 2>&1 ||
        { tail -n 30 configure.log; exit 1; }
fi
log "make -j$(nproc)"
make -j"$(nproc)" >make.log 2>&1 || { tail -n 40 make.log; exit 1; }
if [ "$install" = 1 ]; then
    log "make install"
    $SUDO make install >install.log 2>&1 || { tail -n 20 install.log; exit 1; }
    $SUDO ldconfig
    log "done: $(command -v uccl-run || echo 'uccl-run installed in /usr/local/bin')"
else
    log "done (not installed): $build"
fi

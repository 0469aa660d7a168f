#!/bin/sh
#
# Set up a fresh Debian 12 or 13 machine for uccl, then build and install it.
# Idempotent; run as root or with sudo.
#
#   contrib/setup.sh [--no-install] [--ucx-src-version VER] [CONFIGURE_ARGS...]
#
# 1. installs every Debian package the project needs (python3-dev and
#    Debian's Dask for the ucp binding and its tests);
# 2. adds a deb-src line and fetches the source of exactly the installed UCX
#    version into $UCCL_CACHE (default /var/cache/uccl), for UCX's internal
#    headers;
#    with --ucx-src-version VER (a Debian source version of ucx, e.g.
#    1.23.0~rc1-1, from any suite: deb-src lines for trixie and sid are
#    added) it instead builds that UCX from its Debian source package into
#    $UCCL_CACHE/ucx-VER/prefix (once; cached) and builds uccl against it
#    (UCCL_UCX_SRC_VERSION=VER does the same, e.g. through run-tests.sh);
# 3. configures, builds (in $UCCL_BUILD, default ./build) and installs
#    (default prefix /usr/local), so that `uccl-run` is on PATH.
#
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${UCCL_CACHE:-/var/cache/uccl}
build=${UCCL_BUILD:-$top/build}
install=1
ucx_src_version=${UCCL_UCX_SRC_VERSION:-}
while [ $# -gt 0 ]; do
    case $1 in
        --no-install)      install=0; shift ;;
        --ucx-src-version) ucx_src_version=$2; shift 2 ;;
        *)                 break ;;
    esac
done

SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "setup.sh: run as root or install sudo" >&2; exit 1; }
    SUDO=sudo
fi

packages="build-essential autoconf automake libtool pkg-config dpkg-dev
          xz-utils libucx-dev ucx-utils libibverbs-dev ibverbs-utils rdma-core
          perftest libopenmpi-dev openmpi-bin netpipe-openmpi cmake valgrind
          clang libclang-rt-dev
          iproute2 procps psmisc gnuplot-nox
          python3 python3-dev python3-numpy python3-dask python3-distributed"
# building UCX itself from its source package
[ -z "$ucx_src_version" ] || packages="$packages libnuma-dev librdmacm-dev"

log() { echo "setup.sh: $*"; }
# the exit code when the archive does not give the UCX source (CI tells it
# from other failures)
exit_no_source=3

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
mirror=""
if [ ! -f "$srclist" ] || [ -n "$ucx_src_version" ]; then
    mirror=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)\/\{0,1\}$/\1/p' \
                 /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
    [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ {print $2; exit}' \
                                   /etc/apt/sources.list 2>/dev/null)
    [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
fi
if [ ! -f "$srclist" ]; then
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

# deb-src for the suites that carry other UCX releases, only to build one of
# them (deb-src lines change no installed package). Signatures are checked;
# an archive mirror may serve a Release file past its Valid-Until date.
extra_srclist=/etc/apt/sources.list.d/uccl-src-ucx.sources
if [ -n "$ucx_src_version" ] && [ ! -f "$extra_srclist" ]; then
    suites=$(echo bookworm trixie sid | tr ' ' '\n' | grep -vx "$codename" |
             tr '\n' ' ')
    log "adding deb-src $mirror $suites(UCX releases to build)"
    $SUDO sh -c "cat > $extra_srclist" <<EOS
Types: deb-src
URIs: $mirror
Suites: $suites
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
Check-Valid-Until: no
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

# fetch_ucx_source DEBVER DIR: the Debian source package ucx=DEBVER,
# unpacked (Debian patches applied) into DIR.
fetch_ucx_source() {
    fetch=$cache/fetch.$$
    $SUDO rm -rf "$fetch"
    $SUDO mkdir -p "$fetch"
    log "fetching UCX $1 source (apt-get source ucx=$1) into $2"
    # apt may refuse to download as _apt into a root-owned directory and
    # then do it as root: only its errors matter
    if ! (cd "$fetch" && $SUDO apt-get source -q "ucx=$1" >fetch.log 2>&1); then
        grep -E '^(E|Err):' "$fetch/fetch.log" >&2 || tail -n 5 "$fetch/fetch.log" >&2
        $SUDO rm -rf "$fetch"
        echo "setup.sh: cannot fetch the source of UCX $1 from the Debian archive (see above); uccl needs UCX's internal headers of exactly that release" >&2
        exit $exit_no_source
    fi
    unpacked=$(find "$fetch" -mindepth 1 -maxdepth 1 -type d -name 'ucx-*' | head -n1)
    [ -n "$unpacked" ] && [ -f "$unpacked/src/uct/base/uct_md.h" ] || {
        echo "setup.sh: UCX $1 source did not unpack in $fetch" >&2; exit 1; }
    $SUDO rm -rf "$2"
    $SUDO mkdir -p "$(dirname "$2")"
    $SUDO mv "$unpacked" "$2"
    $SUDO rm -rf "$fetch"
}

# build_ucx DEBVER: UCX from its Debian source package into
# $cache/ucx-DEBVER/prefix, configured as Debian configures it, less what
# neither uccl nor its tests use (mlx5 direct verbs and the transports built
# on them, language bindings, GPU and kernel-module transports): the verbs
# transports rc_verbs/ud_verbs stay for comparison runs.
ucx_build_dirs="src/ucm src/ucs src/uct src/ucp src/tools/info src/tools/perf"
build_ucx() {
    base=$cache/ucx-$1
    [ -f "$base/prefix/.uccl-complete" ] && return 0
    [ -f "$base/source/src/uct/base/uct_md.h" ] ||
        fetch_ucx_source "$1" "$base/source"
    log "building UCX $1 into $base/prefix (once; cached)"
    $SUDO rm -rf "$base/prefix" "$base"/*.log
    $SUDO mkdir -p "$base/build"
    (
        cd "$base/source"
        [ -x configure ] || $SUDO ./autogen.sh >"$base/autogen.log" 2>&1
        cd "$base/build"
        # an older release meets a newer compiler's warnings: UCX builds
        # with -Werror, which its own CFLAGS override
        $SUDO "$base/source/configure" --prefix="$base/prefix" \
            CFLAGS="-g -O3 -Wno-error" CXXFLAGS="-g -O3 -Wno-error" \
            --enable-mt --with-verbs --disable-logging \
            --disable-backtrace-detail --enable-cma --without-java \
            --without-go --disable-doxygen-doc --without-cuda --without-rocm \
            --without-mlx5-dv --without-dc --without-devx --without-dm \
            --without-ib-hw-tm --without-fuse3 --without-ugni --without-knem \
            --without-xpmem --without-gdrcopy --without-mpi \
            >"$base/configure.log" 2>&1 || exit 1
        # the libraries, their modules, ucx_info and ucx_perftest: not the
        # test apps, examples or bindings
        for d in $ucx_build_dirs; do
            $SUDO nice make -C "$d" -j"$(nproc)" >>"$base/make.log" 2>&1 &&
            $SUDO make -C "$d" install >>"$base/install.log" 2>&1 || exit 1
        done
        $SUDO make install-pkgconfigDATA >>"$base/install.log" 2>&1
    ) || { tail -n 30 "$base/configure.log" "$base/make.log" 2>/dev/null
           echo "setup.sh: building UCX $1 failed (logs in $base)" >&2
           exit 1; }
    $SUDO touch "$base/prefix/.uccl-complete"
}

if [ -n "$ucx_src_version" ]; then
    build_ucx "$ucx_src_version"
    ucx_prefix=$cache/ucx-$ucx_src_version/prefix
    ucx_src=$cache/ucx-$ucx_src_version/source
    PATH=$ucx_prefix/bin:$PATH
    PKG_CONFIG_PATH=$ucx_prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    export PATH PKG_CONFIG_PATH
    ucx_ver=$(pkg-config --modversion ucx-uct)
else
    # UCX source of exactly the installed version: the source package's
    # version, which a binNMU (+bN) of the binary package does not change.
    ucx_deb=$(dpkg-query -W -f='${source:Version}' libucx-dev)
    ucx_ver=$(pkg-config --modversion ucx-uct)
    ucx_src=$cache/ucx-$ucx_ver
    [ -f "$ucx_src/src/uct/base/uct_md.h" ] ||
        fetch_ucx_source "$ucx_deb" "$ucx_src"
fi

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
if [ ! -f Makefile ] || [ "$top/configure" -nt config.status ] ||
   [ "$(sed -n 's/^UCX_SRC_DIR = //p' Makefile)" != "$ucx_src" ]; then
    log "configure $*"
    "$top/configure" --with-ucx-src="$ucx_src" "$@" >configure.log 2>&1 ||
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

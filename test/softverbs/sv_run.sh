#!/bin/sh
#
# sv_run.sh PROGRAM [ARGS...]: run a verbs program on softverbs the way a user
# does, with libsoftverbs.so preloaded in front of the real libibverbs.
# SOFTVERBS_LIB names the library (tests.cmake sets it). In a sanitizer build
# the library needs the ASan/UBSan runtimes loaded first: they are preloaded
# ahead of it. With SVT_SHM_CHECK=1 it then fails if the program left any
# file of fabric $SOFTVERBS_FABRIC in /dev/shm.
#
lib=${SOFTVERBS_LIB:-}
if [ -z "$lib" ] || [ ! -f "$lib" ]; then
    echo "sv_run.sh: SOFTVERBS_LIB=\"$lib\" is not a built libsoftverbs.so" >&2
    exit 1
fi
san=$(ldd "$lib" 2>/dev/null | awk '/lib(a|ub)san\.so/ { printf "%s:", $3 }')
LD_PRELOAD="$san$lib${LD_PRELOAD:+:$LD_PRELOAD}"
export LD_PRELOAD
if [ "${SVT_SHM_CHECK:-0}" != 1 ] || [ -z "${SOFTVERBS_FABRIC:-}" ]; then
    exec "$@"
fi
"$@"
rc=$?
unset LD_PRELOAD
left=$(ls -d /dev/shm/softverbs."$SOFTVERBS_FABRIC" \
       /dev/shm/softverbs."$SOFTVERBS_FABRIC".* 2>/dev/null)
if [ -n "$left" ]; then
    echo "sv_run.sh: FAILED: fabric $SOFTVERBS_FABRIC left files behind:" \
         $left >&2
    rm -f $left
    [ $rc -ne 0 ] || rc=1
else
    echo "sv_run.sh: no file of fabric $SOFTVERBS_FABRIC left in /dev/shm"
fi
exit $rc

#!/bin/sh
#
# sv_run.sh PROGRAM [ARGS...]: run a verbs program on softverbs the way a user
# does, with libsoftverbs.so preloaded in front of the real libibverbs.
# SOFTVERBS_LIB names the library (tests.cmake sets it). In a sanitizer build
# the library needs the ASan/UBSan runtimes loaded first: they are preloaded
# ahead of it.
#
lib=${SOFTVERBS_LIB:-}
if [ -z "$lib" ] || [ ! -f "$lib" ]; then
    echo "sv_run.sh: SOFTVERBS_LIB=\"$lib\" is not a built libsoftverbs.so" >&2
    exit 1
fi
san=$(ldd "$lib" 2>/dev/null | awk '/lib(a|ub)san\.so/ { printf "%s:", $3 }')
LD_PRELOAD="$san$lib${LD_PRELOAD:+:$LD_PRELOAD}"
export LD_PRELOAD
exec "$@"

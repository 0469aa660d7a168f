#!/bin/sh
#
# run_fuzz.sh TARGET SECONDS: run a libFuzzer target for a bounded time on a
# corpus that starts from a few hand-made inputs (then grows in the build
# tree, so later runs start from what earlier ones found). Prints the
# executions; a crash, a leak or a sanitizer report fails, and leaves the
# input that caused it next to the corpus.
#
set -u
bin=${1:?usage: run_fuzz.sh TARGET SECONDS}
secs=${2:-60}
name=$(basename "$bin")
corpus=$(dirname "$bin")/corpus.$name
seed=${FUZZ_SEED:-$(date +%s)}
mkdir -p "$corpus"

# fuzz_proto's programs: send, receive in and out of order (ordered ones
# too), ACK, resend; a valid ACK batch; an AM SEND
seed_input() {
    printf "$2" > "$corpus/seed_$1"
}
seed_input send_ack   'SS\020\001R\000\000R\002\001A'
seed_input holes      'SS\040\002R\003\001R\001\000R\000\001AT\005A'
seed_input ordered    'SS\010\000R\001\001R\002\001R\000\000AT\001'
seed_input batch      'SS\004\000C\050\000\004\002\050\000\001\000\000\000\003\002\040\000'
seed_input am_send    'D\000\000\000\002\010\000\002\007\000\000\000\000\000\000'

echo "run_fuzz: $name for ${secs}s, seed $seed, corpus $corpus"
cd "$(dirname "$bin")" || exit 1
log=$(mktemp /tmp/uccl-fuzz.XXXXXX)
"./$name" -max_total_time="$secs" -seed="$seed" -print_final_stats=1 \
    -artifact_prefix="$(pwd)/crash.$name." -rss_limit_mb=2048 \
    "$corpus" >"$log" 2>&1
rc=$?
tail -n 40 "$log"
rm -f "$log"
[ $rc = 0 ] || echo "run_fuzz: FAIL: $name exited with $rc (seed $seed)"
exit $rc

#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 (coverage + AddressSanitizer + UBSan) in build-fuzz/
# and runs each over its committed seed corpus plus a bounded number of generated inputs.
# New corpus entries go to a scratch copy, never into the repository; a finding (crash, sanitizer
# report, an exception other than ath::FormatError) is saved under build-fuzz/ and fails the run.
#
#   scripts/fuzz.sh            # 200000 runs (~5000/s on 2 cores), capped at 60 s
#   scripts/fuzz.sh 5000000 0  # a longer session: runs, then seconds (0: no cap)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200000}
max_time=${2:-60}
jobs=$(nproc)

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j"$jobs"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp fuzz/corpus/safetensors/* "$work/"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
build-fuzz/fuzz/fuzz_safetensors -runs="$runs" -max_total_time="$max_time" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -dict=fuzz/safetensors.dict -artifact_prefix=build-fuzz/ -print_final_stats=1 "$work"
echo "fuzz: fuzz_safetensors found nothing (up to $runs runs)"

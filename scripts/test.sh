#!/usr/bin/env bash
# Builds athanor and runs the whole test suite, installing what it needs first:
#   1. release build: every test (op table, golden values, autograd, determinism, the install +
#      find_package round trip, the docs' examples);
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build of the library and the test binary,
#      running every test except the few marked slow (the op table test included);
#   3. a bounded libFuzzer run of the safetensors parser (scripts/fuzz.sh, clang-14).
# Usage: scripts/test.sh            (from anywhere; about the time README states)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

echo "== release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DATH_BUILD_BENCH=ON
cmake --build build -j"$jobs"
ctest --test-dir build -j"$jobs" --output-on-failure --timeout 600

echo "== AddressSanitizer + UBSan build"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DATH_SANITIZE=ON \
  -DATH_BUILD_BENCH=OFF -DATH_BUILD_EXAMPLES=OFF
cmake --build build-asan -j"$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
ctest --test-dir build-asan -j"$jobs" --output-on-failure --timeout 900 -LE slow

echo "== libFuzzer (clang-14 + ASan + UBSan): safetensors parser, bounded run"
scripts/fuzz.sh 200000 60

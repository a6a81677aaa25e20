#!/usr/bin/env bash
# Builds athanor and runs the whole test suite, installing what it needs first:
#   1. release build: every test (op table, golden values, autograd, determinism, the install +
#      find_package round trip, the docs' examples);
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build (clang-14, -O1, with libFuzzer's
#      coverage) of the library, the test binary and the fuzz targets, running every test (the op
#      table test included), the gtest cases in 8 shards;
#   3. the six fuzz targets (safetensors, checkpoint, config, IDX, CSV, ONNX), 30 s each at most
#      (scripts/fuzz.sh).
# Usage: scripts/test.sh            (from anywhere; about the time README states)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

# The stages use CMakePresets.json's presets, so a developer's `cmake --preset asan` builds
# exactly what CI builds.
echo "== release build"
cmake --preset release
cmake --build --preset release -j"$jobs"
ctest --preset release -j"$jobs"

echo "== AddressSanitizer + UBSan build"
# The gtest cases run as 8 CTest shards here (one process each): an instrumented process takes
# ~0.3 s to start and exit, which per case was most of this stage's time.
cmake --preset asan
cmake --build --preset asan -j"$jobs"
ctest --preset asan -j"$jobs"

echo "== libFuzzer (clang-14 + ASan + UBSan): every fuzz target, bounded runs"
scripts/fuzz.sh 200000 30

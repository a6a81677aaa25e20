#!/usr/bin/env bash
# Builds the libFuzzer targets (the sanitizer preset: clang-14, coverage + AddressSanitizer +
# UBSan, build-asan/) and runs each over its committed seed corpus plus a bounded number of
# generated inputs: safetensors, checkpoint, config (YAML + overrides), idx, csv, npy (numpy
# arrays), onnx (model files: the loader and InferenceSession).
# New corpus entries go to a scratch copy, never into the repository; a finding (crash, sanitizer
# report, a broken property, an exception the reader must not throw) is saved under build-asan/
# and fails the run.
#
#   scripts/fuzz.sh                   # every target: 200000 runs or 30 s, whichever comes first
#   scripts/fuzz.sh 10000000 0 idx    # a campaign: runs, seconds (0: no cap), targets
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200000}
max_time=${2:-30}
shift $(($# < 2 ? $# : 2))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors checkpoint config idx csv npy onnx)

cmake --preset asan >/dev/null
cmake --build --preset asan --target fuzz_targets -j"$(nproc)"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for target in "${targets[@]}"; do
  work=$(mktemp -d)
  if [ "$target" = onnx ]; then
    # Seeds: small node-test models from Debian's libonnx-testdata (installed by
    # install-deps.sh; read from the package, not copied into the repository).
    testdata=/usr/share/libonnx-testdata/data/node
    for t in concat_3d_axis_0 conv_with_strides_padding gather_0 gemm_default_single_elem_vector_bias \
      lstm_defaults maxpool_2d_pads relu reshape_extended_dims resize_upsample_scales_linear slice \
      softmax_axis_1; do
      cp "$testdata/test_$t/model.onnx" "$work/test_$t.onnx"
    done
  else
    cp fuzz/corpus/"$target"/* "$work/"
  fi
  max_len=4096
  [ "$target" = checkpoint ] && max_len=16384  # a real checkpoint of the small module is ~3 KB
  dict=()
  [ -f fuzz/"$target".dict ] && dict=(-dict=fuzz/"$target".dict)
  echo "== fuzz_$target"
  build-asan/fuzz/fuzz_"$target" -runs="$runs" -max_total_time="$max_time" -max_len=$max_len \
    -timeout=10 -rss_limit_mb=2048 "${dict[@]}" -artifact_prefix=build-asan/fuzz_"$target"- \
    -print_funcs=0 -print_final_stats=1 "$work" 2>&1 | grep -v "^#[0-9]" || { rm -rf "$work"; exit 1; }
  rm -rf "$work"
  echo "fuzz: fuzz_$target found nothing (up to $runs runs, $max_time s)"
done

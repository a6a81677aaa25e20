#!/usr/bin/env bash
# Inference benchmark (issue 17): athanor's InferenceSession (`athanor bench --json`) against
# ONNX Runtime 1.31 and OpenVINO 2026.4 from PyPI, side by side in one run, 2 threads each, on
# the models of WORKLOADS.md's Inference section exported by PyTorch 2.15 (make_models.py): W2's
# CNN, ResNet-18 and W4's char-Transformer, opset 17, dynamic batch.
#
#   bench/inference/run.sh                      (every model and batch below, 3 repeats)
#   REPEATS=5 ITERATIONS=500 bench/inference/run.sh cnn
#   ATHANOR=build/apps/athanor bench/inference/run.sh   (a built CLI: no cmake; by default
#                                               build-bench/ is configured and built)
#
# Cases: cnn at batch 1 and 64, resnet18 at 1 and 16, transformer at 1 and 16 (seq 128). Each
# repeat runs every case on all three runtimes one after the other (interleaved), each in its
# own process: warm-up WARMUP calls (default 20), then ITERATIONS timed calls (default 200; 50
# for the large batches). first_run_ms is load + optimize + first call. Writes one JSON line per
# run to bench/inference/results.jsonl and prints the table of medians over repeats with the
# ratios the issue's acceptance uses (summarize.py), then checks athanor's outputs against ONNX
# Runtime's on one input per model (`athanor run` with .npy files; max relative difference).
#
# The peers: PyPI's onnxruntime==1.31.0 and openvino==2026.4.0 (plus torch==2.15.0 and onnx to
# export the models) in the virtual environment INFER_VENV (default /work/venv), installed there
# when missing. ONNX Runtime: graph optimization 'all', 2 intra-op threads, sequential;
# OpenVINO: CPU, latency hint, 2 threads, f32 inference precision (peers.py).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${INFER_VENV:-/work/venv}"
python="$venv/bin/python"
repeats="${REPEATS:-3}"
warmup="${WARMUP:-20}"
iterations="${ITERATIONS:-200}"
threads=2
models=("$@")
[[ ${#models[@]} -eq 0 ]] && models=(cnn resnet18 transformer)

if ! "$python" -c "import torch, onnx, onnxruntime, openvino, numpy" 2>/dev/null; then
  echo "installing the peers into $venv ..."
  [[ -x "$python" ]] || /usr/bin/python3 -m venv "$venv"
  "$python" -m pip install --quiet "torch==2.15.0" "onnxruntime==1.31.0" "openvino==2026.4.0" \
    onnx numpy
fi

athanor="${ATHANOR:-}"
if [[ -z "$athanor" ]]; then
  cmake -S "$root" -B "$root/build-bench" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DATH_BUILD_TESTS=OFF >/dev/null
  cmake --build "$root/build-bench" --target athanor_app -j2 >/dev/null
  athanor="$root/build-bench/apps/athanor"
fi

out="${MODEL_DIR:-$root/build-bench/inference-models}"
mkdir -p "$out"
for m in "${models[@]}"; do
  [[ -f "$out/$m.onnx" ]] || { "$python" "$here/make_models.py" "$out" >/dev/null; break; }
done

results="$here/results.jsonl"
run_id="$(date -u +%Y%m%dT%H%M%SZ)"
isa="$("$python" -c "
import re
f = open('/proc/cpuinfo').read()
print('AVX-512' + ('+BF16' if 'avx512_bf16' in f else '') if 'avx512f' in f else 'AVX2')")"
batches() {
  case "$1" in
    cnn) echo "1 64" ;;
    resnet18) echo "1 16" ;;
    transformer) echo "1 16" ;;
  esac
}
tag() { "$python" -c "
import json, sys
for line in sys.stdin:
    line = line.strip()
    if not line.startswith('{'): continue
    d = json.loads(line)
    d.update(run=sys.argv[1], model=sys.argv[2], batch=int(sys.argv[3]), repeat=int(sys.argv[4]),
             runtime=sys.argv[5] if sys.argv[5] != '-' else d.get('runtime'), isa=sys.argv[6])
    print(json.dumps(d))" "$run_id" "$@" "$isa"; }

for ((r = 1; r <= repeats; r++)); do
  for m in "${models[@]}"; do
    for b in $(batches "$m"); do
      n=$iterations
      ((b > 1 && n > 50)) && n=50
      echo "repeat $r: $m batch $b" >&2
      OMP_NUM_THREADS=$threads "$athanor" bench "$out/$m.onnx" --batch "$b" --threads $threads \
        --warmup "$warmup" --iterations "$n" --json | tag "$m" "$b" "$r" athanor >>"$results"
      "$python" "$here/peers.py" "$out/$m.onnx" --batch "$b" --threads $threads \
        --warmup "$warmup" --iterations "$n" | tag "$m" "$b" "$r" - >>"$results"
    done
  done
done

"$python" "$here/summarize.py" "$results" "$run_id"

# Same outputs: one input per model through ONNX Runtime and `athanor run`.
for m in "${models[@]}"; do
  io="$out/io-$m"
  "$python" "$here/peers.py" "$out/$m.onnx" --batch 2 --runtime ort --warmup 0 --iterations 1 \
    --save-io "$io" >/dev/null
  "$athanor" run "$out/$m.onnx" --threads $threads --input "input=$io/input_0.npy" \
    --output "$io/athanor_output_0.npy" >/dev/null
  "$python" -c "
import numpy as np, sys
a = np.load(sys.argv[1]); o = np.load(sys.argv[2])
rel = float(np.max(np.abs(a - o)) / max(np.max(np.abs(o)), 1e-30))
print(f'{sys.argv[3]:12s} outputs vs ONNX Runtime: max |diff| {np.max(np.abs(a - o)):.3g}, '
      f'relative to max |output| {rel:.3g}', '(ok)' if rel <= 1e-4 else '(OVER 1e-4)')
" "$io/athanor_output_0.npy" "$io/ort_output_0.npy" "$m"
done

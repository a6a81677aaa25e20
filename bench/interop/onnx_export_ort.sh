#!/usr/bin/env bash
# athanor's ONNX export checked by ONNX Runtime 1.31 (PyPI): W2's CNN, W3's LSTM and W4's
# transformer at the workload sizes (random weights, fixed seed), and smaller models covering
# other layers (x_bilstm: a bidirectional LSTM; x_bn_cnn: batch norm and pools; x_gru: a
# batch-first GRU and a time-major bidirectional one without bias; x_deconv_gn:
# ConvTranspose2d + GroupNorm), are exported by build/bench/export_models together with fixed
# inputs and athanor's eager outputs (.npy), at the workload's batch size and at another one
# (the batch dim is symbolic); onnx_export_ort.py runs them in ONNX Runtime and prints the max
# absolute and relative differences per model. Exits nonzero when a relative difference
# exceeds 1e-4.
#
#   bench/interop/onnx_export_ort.sh
#   EXPORT_MODELS=build/bench/export_models bench/interop/onnx_export_ort.sh   (already built: no
#                                            cmake/ninja; by default it is built in build-bench/)
#   ORT_VENV=/tmp/ort bench/interop/onnx_export_ort.sh   (the virtual environment with
#                                            onnxruntime==1.31.0 and numpy; default /work/venv,
#                                            created or completed when it lacks them)
#   OUT=/tmp/exported bench/interop/onnx_export_ort.sh   (keep the exported files there; default
#                                            a temporary directory, removed afterwards)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${ORT_VENV:-/work/venv}"
python="$venv/bin/python"

sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
# ONNX Runtime 1.31 from PyPI in a virtual environment, as bench/e2e/run.sh makes its PyTorch one.
if ! "$python" -c "import onnxruntime, numpy, sys; sys.exit(onnxruntime.__version__ != '1.31.0')" \
    2>/dev/null; then
  echo "installing onnxruntime 1.31.0 from PyPI into $venv ..."
  if [[ ! -x "$python" ]]; then
    if ! /usr/bin/python3 -c "import ensurepip" 2>/dev/null; then
      $sudo_cmd apt-get install -y --no-install-recommends python3-venv
    fi
    /usr/bin/python3 -m venv "$venv"
  fi
  "$python" -m pip install --quiet "onnxruntime==1.31.0" numpy
fi

if [[ -n "${EXPORT_MODELS:-}" ]]; then
  exporter="$EXPORT_MODELS"
  [[ -x "$exporter" ]] || { echo "EXPORT_MODELS=$exporter is not an executable" >&2; exit 1; }
else
  "$root/scripts/install-deps.sh" >/dev/null
  build="$root/build-bench"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATH_BUILD_TESTS=OFF \
    -DATH_BUILD_BENCH=ON -DATH_BUILD_EXAMPLES=OFF >/dev/null
  ninja -C "$build" export_models >/dev/null
  exporter="$build/bench/export_models"
fi

if [[ -n "${OUT:-}" ]]; then
  out="$OUT"
  mkdir -p "$out"
else
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi
OMP_NUM_THREADS=2 "$exporter" "$out"
"$python" "$here/onnx_export_ort.py" "$out"

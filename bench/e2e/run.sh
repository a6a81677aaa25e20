#!/usr/bin/env bash
# End-to-end training benchmark: athanor vs PyTorch on the workloads of WORKLOADS.md, run one
# after the other in the same run, interleaved per repeat and workload: athanor eager, athanor
# compiled (athanor_e2e --compile), then each PyTorch setting (eager, fused=True optimizers,
# torch.compile(model) with a fused optimizer; see torch_ref.py).
#
#   bench/e2e/run.sh [W1 W2 W3 W4]          (all four by default)
#   REPEATS=5 bench/e2e/run.sh W1           (default 3 repeats each)
#   STEPS=50 bench/e2e/run.sh               (shortened runs, for a quick look only)
#   PRECISIONS="32-true bf16-mixed" bench/e2e/run.sh W2   (each precision on both sides; the
#                                            table adds athanor's ratio to its own float32)
#   MODES="eager" bench/e2e/run.sh          (athanor modes: "eager compiled" by default)
#   SETTINGS="eager fused" bench/e2e/run.sh (PyTorch settings: all of "eager fused compile" that
#                                            the python's torch has, by default)
#   PYTHON=/usr/bin/python3 bench/e2e/run.sh   (Debian's python3-torch 1.13, installed if
#                                            missing; it has only the eager setting, the others
#                                            are skipped with a message)
#   ATHANOR_E2E=build/bench/athanor_e2e bench/e2e/run.sh   (an athanor_e2e already built: no
#                                            cmake/ninja; by default it is built in build-bench/)
#
# PyTorch: by default PyTorch 2.15 from PyPI in the virtual environment TORCH_VENV (default
# /work/venv), created if it lacks torch (python3 -m venv, pip install torch==2.15.0 numpy).
# torch.compile compiles cold in every run (TORCHINDUCTOR_FORCE_DISABLE_CACHES=1: a user's first
# run, and the same warm-up time in each repeat); TORCH_COMPILE_CACHE=1 lets it reuse Inductor's
# on-disk caches instead. Either way compilation happens before the timed region.
#
# Writes one JSON object per run to bench/e2e/results.jsonl (keys: workload, framework,
# samples_per_s, final_loss, test_acc, peak_rss_mb, ...) and prints the table of medians, the
# ratios of athanor compiled and eager to the best PyTorch setting, compiled/eager, and
# athanor's achieved GFLOP/s against the SGEMM rate measured in the same run (summarize.py).
# Both sides use 2 threads; PyTorch runs with OMP_WAIT_POLICY=PASSIVE (its faster setting on
# this machine).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${TORCH_VENV:-/work/venv}"
python="${PYTHON:-$venv/bin/python}"
repeats="${REPEATS:-3}"
read -r -a precisions <<<"${PRECISIONS:-32-true}"
read -r -a modes <<<"${MODES:-eager compiled}"
steps="${STEPS:-0}"
threads=2
workloads=("$@")
[[ ${#workloads[@]} -eq 0 ]] && workloads=(W1 W2 W3 W4)

sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
# PyTorch 2.15 from PyPI in a virtual environment (the default peer).
if [[ -z "${PYTHON:-}" ]] && ! "$python" -c "import torch, numpy" 2>/dev/null; then
  echo "creating $venv with PyTorch 2.15 from PyPI ..."
  if ! /usr/bin/python3 -c "import ensurepip" 2>/dev/null; then
    $sudo_cmd apt-get install -y --no-install-recommends python3-venv
  fi
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet "torch==2.15.0" numpy
fi
# Debian's python3-torch does its matmuls through whichever libblas.so.3 is selected; with only
# the netlib reference BLAS it runs ~25x slower. Give PyTorch its fastest setting: OpenBLAS.
if [[ "$python" == /usr/bin/python3 ]] && ! "$python" -c "import torch, numpy" 2>/dev/null; then
  echo "installing Debian's python3-torch (the PyTorch peer) ..."
  $sudo_cmd apt-get install -y --no-install-recommends python3-torch python3-numpy
fi
if [[ "$python" == /usr/bin/python3 ]] && ! dpkg -s libopenblas0-pthread >/dev/null 2>&1; then
  echo "installing OpenBLAS for Debian's PyTorch ..."
  $sudo_cmd apt-get install -y --no-install-recommends libopenblas0-pthread
fi

if [[ -n "${ATHANOR_E2E:-}" ]]; then
  athanor="$ATHANOR_E2E"
  [[ -x "$athanor" ]] || { echo "ATHANOR_E2E=$athanor is not an executable" >&2; exit 1; }
else
  "$root/scripts/install-deps.sh" >/dev/null
  build="$root/build-bench"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATH_BUILD_TESTS=OFF \
    -DATH_BUILD_BENCH=ON -DATH_BUILD_EXAMPLES=OFF >/dev/null
  ninja -C "$build" athanor_e2e >/dev/null
  athanor="$build/bench/athanor_e2e"
fi

# PyTorch settings: those asked for (default all three) that this torch has, per workload (the
# fused check constructs that workload's optimizer); the others are skipped with the reason.
read -r -a settings <<<"${SETTINGS:-eager fused compile}"
declare -A runs_setting
for w in "${workloads[@]}"; do
  for s in "${settings[@]}"; do
    if "$python" "$here/torch_ref.py" "$w" --setting "$s" --probe; then
      runs_setting[$w/$s]=1
    fi
  done
done

disable_caches=1
[[ ${TORCH_COMPILE_CACHE:-0} == 1 ]] && disable_caches=0

results="$here/results.jsonl"
run_started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
for ((r = 1; r <= repeats; r++)); do
  for w in "${workloads[@]}"; do
    for p in "${precisions[@]}"; do
      for m in "${modes[@]}"; do
        flags=()
        [[ $m == compiled ]] && flags=(--compile)
        echo "repeat $r/$repeats $w $p: athanor $m" >&2
        OMP_NUM_THREADS=$threads "$athanor" "$w" --threads $threads --steps "$steps" \
          --precision "$p" "${flags[@]}" >>"$tmp"
      done
      for s in "${settings[@]}"; do
        [[ -n "${runs_setting[$w/$s]:-}" ]] || continue
        echo "repeat $r/$repeats $w $p: pytorch $s" >&2
        # A PyTorch setting that fails (e.g. torch.compile without a working C++ toolchain)
        # is reported and left out of the table; the run goes on.
        OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE \
          TORCHINDUCTOR_FORCE_DISABLE_CACHES=$disable_caches \
          "$python" "$here/torch_ref.py" "$w" --threads $threads --steps "$steps" \
          --precision "$p" --setting "$s" >>"$tmp" ||
          echo "repeat $r/$repeats $w $p: pytorch $s FAILED (exit $?), left out" >&2
      done
    done
  done
done
# Tag this run's lines so the summary only reads them; keep earlier runs in the file.
python3 - "$tmp" "$run_started" >>"$results" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    d["run"] = sys.argv[2]
    print(json.dumps(d))
PY
python3 "$here/summarize.py" "$results" "$run_started"

#!/usr/bin/env bash
# End-to-end training benchmark: athanor vs PyTorch on the workloads of WORKLOADS.md, run one
# after the other in the same run, interleaved (athanor, PyTorch, athanor, PyTorch, ...).
#
#   bench/e2e/run.sh [W1 W2 W3 W4]          (all four by default)
#   REPEATS=5 bench/e2e/run.sh W1           (default 3 repeats each)
#   PYTHON=/path/to/venv/bin/python bench/e2e/run.sh W2    (a newer PyTorch from a venv)
#   STEPS=50 bench/e2e/run.sh               (shortened runs, for a quick look only)
#   PRECISIONS="32-true bf16-mixed" bench/e2e/run.sh W2   (each precision on both sides; the
#                                            table adds athanor's ratio to its own float32)
#
# Writes one JSON object per run to bench/e2e/results.jsonl (keys: workload, framework,
# samples_per_s, final_loss, test_acc, peak_rss_mb, ...) and prints the table of medians and
# the athanor/PyTorch ratios. Both sides use 2 threads; PyTorch runs with OMP_WAIT_POLICY=PASSIVE
# (its faster setting on this machine).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-/usr/bin/python3}"
repeats="${REPEATS:-3}"
read -r -a precisions <<<"${PRECISIONS:-32-true}"
steps="${STEPS:-0}"
threads=2
workloads=("$@")
[[ ${#workloads[@]} -eq 0 ]] && workloads=(W1 W2 W3 W4)

# Debian's python3-torch does its matmuls through whichever libblas.so.3 is selected; with only
# the netlib reference BLAS it runs ~25x slower. Give PyTorch its fastest setting: OpenBLAS.
sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
if [[ "$python" == /usr/bin/python3 ]] && ! "$python" -c "import torch, numpy" 2>/dev/null; then
  echo "installing Debian's python3-torch (the PyTorch peer) ..."
  $sudo_cmd apt-get install -y --no-install-recommends python3-torch python3-numpy
fi
if [[ "$python" == /usr/bin/python3 ]] && ! dpkg -s libopenblas0-pthread >/dev/null 2>&1; then
  echo "installing OpenBLAS for Debian's PyTorch ..."
  $sudo_cmd apt-get install -y --no-install-recommends libopenblas0-pthread
fi
"$root/scripts/install-deps.sh" >/dev/null

build="$root/build-bench"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATH_BUILD_TESTS=OFF \
  -DATH_BUILD_BENCH=ON -DATH_BUILD_EXAMPLES=OFF >/dev/null
ninja -C "$build" athanor_e2e >/dev/null
athanor="$build/bench/athanor_e2e"

results="$here/results.jsonl"
run_started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
for ((r = 1; r <= repeats; r++)); do
  for w in "${workloads[@]}"; do
    for p in "${precisions[@]}"; do
      echo "repeat $r/$repeats $w $p: athanor" >&2
      OMP_NUM_THREADS=$threads "$athanor" "$w" --threads $threads --steps "$steps" \
        --precision "$p" >>"$tmp"
      echo "repeat $r/$repeats $w $p: pytorch" >&2
      OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE \
        "$python" "$here/torch_ref.py" "$w" --threads $threads --steps "$steps" \
        --precision "$p" >>"$tmp"
    done
  done
done
# Tag this run's lines so the summary only reads them; keep earlier runs in the file.
"$python" - "$tmp" "$run_started" >>"$results" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    d["run"] = sys.argv[2]
    print(json.dumps(d))
PY
"$python" "$here/summarize.py" "$results" "$run_started"

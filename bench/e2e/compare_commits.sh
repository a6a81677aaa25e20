#!/usr/bin/env bash
# athanor against an earlier athanor: the four workloads with this tree's athanor_e2e and with
# REV's, interleaved (REV, this, REV, this, ...), 2 threads — the check that a change made
# nothing slower, side by side in one run.
#
#   bench/e2e/compare_commits.sh REV [ROUNDS] [W1 W2 W3 W4]
#
# REV is built once in a git worktree under ${TMPDIR:-/tmp} (library and athanor_e2e only);
# this tree's build/ must be built (cmake --preset release && cmake --build --preset release).
# Prints each run's JSON and, per workload, the median samples/s of both sides, their ratio and
# the median of the per-round ratios (each round runs the two back to back).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rev="${1:?usage: compare_commits.sh REV [ROUNDS] [WORKLOADS...]}"
rounds="${2:-3}"
shift $(($# >= 2 ? 2 : 1))
workloads=("$@")
[[ ${#workloads[@]} -eq 0 ]] && workloads=(W1 W2 W3 W4)
sha="$(git -C "$root" rev-parse --short "$rev")"
old_tree="${TMPDIR:-/tmp}/athanor_compare_$sha"
if [[ ! -d "$old_tree" ]]; then
  git -C "$root" worktree add --detach "$old_tree" "$sha" >/dev/null
fi
cmake -S "$old_tree" -B "$old_tree/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATH_BUILD_TESTS=OFF \
  -DATH_BUILD_BENCH=ON -DATH_BUILD_EXAMPLES=OFF >/dev/null
ninja -C "$old_tree/build" athanor_e2e >/dev/null
old="$old_tree/build/bench/athanor_e2e"
new="$root/build/bench/athanor_e2e"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for w in "${workloads[@]}"; do
    for side in old new; do
      bin=$old
      [[ $side == new ]] && bin=$new
      echo "{\"round\": $r, \"side\": \"$side\", \"result\": $(OMP_NUM_THREADS=2 "$bin" "$w" --threads 2)}" |
        tee -a "$out"
    done
  done
done
python3 - "$out" "$sha" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"\nthis tree vs {sys.argv[2]}, samples/s (medians), 2 threads, host ISA: "
      f"{next((r['result'].get('isa') for r in rows if r['side'] == 'new'), '?')}")
for w in sorted({r['result']['workload'] for r in rows}):
    old = [r['result']['samples_per_s'] for r in rows if r['side'] == 'old' and r['result']['workload'] == w]
    new = [r['result']['samples_per_s'] for r in rows if r['side'] == 'new' and r['result']['workload'] == w]
    pairs = [b / a for a, b in zip(old, new)]
    print(f"{w}: {st.median(old):.1f} -> {st.median(new):.1f} = {st.median(new) / st.median(old):.3f}x,"
          f" median pair ratio {st.median(pairs):.3f}")
PY

#!/usr/bin/env bash
# Exact resume through the command line, on the real workloads: for each model (W1's MLP, W2's
# CNN) and loader worker count (0, 2), train STEPS steps straight; then train again, SIGKILL
# the process at a random moment, resume from the last checkpoint and go on to STEPS. The final
# checkpoints (weights, optimizer state, loop position, RNG) must be byte-identical.
#
#   bench/resume/check_resume.sh [STEPS=300] [athanor binary]
set -euo pipefail
steps="${1:-300}"
athanor="${2:-build/apps/athanor}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0
for model in fashion_mlp fashion_cnn; do
  for workers in 0 2; do
    args() {  # args DIR: the fit command line, checkpointing every step into $work/ckpt
      echo fit --model.name="$model" --data.num_workers="$workers" \
        --trainer.max_steps="$steps" --trainer.max_epochs=-1 --trainer.num_sanity_val_steps=0 \
        --trainer.limit_val_batches=0 --trainer.enable_progress_bar=false \
        --trainer.enable_model_summary=false --trainer.default_root_dir="$1/logs" \
        --trainer.limit_test_batches=1
    }
    callbacks="--trainer.callbacks=[{class_path: ModelCheckpoint, init_args: {dirpath: $work/ckpt, save_top_k: 0, save_last: true, every_n_train_steps: 1}}]"
    # shellcheck disable=SC2046  # word splitting of args is intended (no spaces inside)
    run() { local dir="$1"; shift; "$athanor" $(args "$dir") "$callbacks" "$@" >/dev/null; }
    rm -rf "$work/ckpt"
    run "$work/straight"
    mv "$work/ckpt" "$work/straight_ckpt"
    # The athanor process itself in the background (not a subshell), so SIGKILL reaches it.
    # shellcheck disable=SC2046
    "$athanor" $(args "$work/killed") "$callbacks" >/dev/null &
    pid=$!
    while [[ ! -f "$work/ckpt/last.ckpt" ]]; do sleep 0.05; done
    sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.5 + r / 32768 * 2 }')"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    killed_at=$("$athanor" inspect "$work/ckpt/last.ckpt" | awk '/global_step/ { print $2; exit }')
    run "$work/resumed" --ckpt_path="$work/ckpt/last.ckpt"
    if cmp -s "$work/straight_ckpt/last.ckpt" "$work/ckpt/last.ckpt"; then
      echo "$model workers=$workers: killed at step $killed_at, resumed to $steps: identical"
    else
      echo "$model workers=$workers: killed at step $killed_at, resumed to $steps: DIFFERENT"
      status=1
    fi
    rm -rf "$work/straight_ckpt" "$work/ckpt" "$work/straight" "$work/killed" "$work/resumed"
  done
done
exit $status

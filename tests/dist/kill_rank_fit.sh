#!/usr/bin/env bash
# A rank that dies mid-fit (SIGKILL: the OOM killer, a lost machine) must stop the whole job
# quickly and loudly, leave only complete checkpoints, and the fit must resume exactly.
#
#   tests/dist/kill_rank_fit.sh ATHANOR CKPT_CHECK RANKS TRIALS [SEED]
#
# ATHANOR is build/apps/athanor, CKPT_CHECK build/tests/dist/athanor_ckpt_check. First one
# uninterrupted reference fit (`mpirun -n RANKS athanor fit --trainer.strategy=ddp`, the W1 MLP on
# Fashion-MNIST, a checkpoint every 2 steps and last.ckpt); then TRIALS times the same fit, with
# one random rank SIGKILLed after a random delay (uniform over the reference's duration, start-up
# included). Each trial checks that
#   - every other rank and mpirun exit within 30 s of the kill, none with status 0 (each rank's
#     end is recorded by tests/dist/kill_rank/rank_wrapper.sh, which mpirun starts in its place);
#   - the output names the lost rank: OpenMPI's "process rank R ... exited on signal 9", or
#     athanor's own error naming rank R (the table says which);
#   - every file in the checkpoint directory is a complete checkpoint (CKPT_CHECK: athanor's
#     loader, CRCs included; a leftover temporary fails);
# and the first RESUME_TRIALS trials (default 3) resume with all ranks (`--ckpt_path=last`, or from
# the start if the kill came before the first checkpoint) and must end with a last.ckpt whose
# tensors, epoch and global step equal the reference's, bit for bit.
#
# Environment: KILL_RANK_STEPS (max_steps, default 40), RESUME_TRIALS, KILL_RANK_WORK (a
# directory for the runs; default a new one under TMPDIR, removed when everything passed).
# Prints a summary table; exits 0 only if every check of every trial passed (77: no mpirun).
set -uo pipefail

if [[ $# -lt 4 || $# -gt 5 ]]; then
  echo "usage: $0 ATHANOR CKPT_CHECK RANKS TRIALS [SEED]" >&2
  exit 2
fi
athanor=$(realpath "$1")
check=$(realpath "$2")
ranks=$3 trials=$4 seed=${5:-1}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
wrapper=$here/kill_rank/rank_wrapper.sh
steps=${KILL_RANK_STEPS:-40}
resume_trials=${RESUME_TRIALS:-3}
exit_limit_s=30

command -v mpirun > /dev/null || { echo "SKIP: no mpirun"; exit 77; }
[[ -x $athanor && -x $check ]] || { echo "FAIL: $athanor or $check is not executable" >&2; exit 2; }
if [[ -n ${KILL_RANK_WORK:-} ]]; then
  work=$KILL_RANK_WORK
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/athanor_kill_rank.XXXXXX")
fi
RANDOM=$seed

export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Processes this script started, for the EXIT trap (a failed trial can leave a job behind).
job_pid=
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  [[ -n $job_pid ]] && kill -KILL "$job_pid" 2> /dev/null
  for f in "$work"/*/rank*.pid; do
    [[ -f $f ]] && kill -KILL "$(cat "$f")" 2> /dev/null
  done
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

shopt -s nullglob
count() { echo $#; } # count GLOB: how many files match

now_us() { echo "${EPOCHREALTIME/./}"; }
seconds() { printf '%d.%02d' $(($1 / 1000000)) $(($1 % 1000000 / 10000)); }

# The fit's arguments, in the array `args`: a checkpoint every 2 steps (the latest one and
# last.ckpt), no validation, one test batch.
fit_args() { # fit_args RUN_DIR
  args=(fit --model.name=fashion_mlp --trainer.strategy=ddp --trainer.max_steps="$steps"
    --trainer.limit_val_batches=0 --trainer.num_sanity_val_steps=0
    --trainer.limit_test_batches=1 --trainer.enable_progress_bar=false
    --trainer.enable_model_summary=false
    --trainer.default_root_dir="$1"
    "--trainer.callbacks=[{class_path: ModelCheckpoint, init_args: {dirpath: $1/ckpt,
      every_n_train_steps: 2, save_top_k: 1, save_last: true}}]")
}

# Starts the job in the background (job_pid: mpirun's PID); each rank under the wrapper.
start_job() { # start_job RUN_DIR LOG [EXTRA ARGS...]
  local dir=$1 log=$2 args
  shift 2
  mkdir -p "$dir"
  fit_args "$dir"
  mpirun --oversubscribe -n "$ranks" "$wrapper" "$dir" "$athanor" "${args[@]}" "$@" \
    > "$log" 2>&1 &
  job_pid=$!
}

# Runs a whole fit; fails the script if it fails.
run_fit() { # run_fit RUN_DIR LOG [EXTRA ARGS...]
  start_job "$@"
  if ! wait "$job_pid"; then
    job_pid=
    cat "$2" >&2
    echo "FAIL: the fit in $1 failed" >&2
    exit 1
  fi
  job_pid=
}

ref=$work/reference
t0=$(now_us)
run_fit "$ref" "$ref.log"
ref_us=$(($(now_us) - t0))
[[ -f $ref/ckpt/last.ckpt ]] || { echo "FAIL: the reference fit wrote no last.ckpt" >&2; exit 1; }
echo "reference: $ranks ranks, $steps steps in $(seconds "$ref_us") s"

late=0 failures=0 within=0 named=0 intact=0 resumed=0 resume_ok=0 max_latency_us=0
named_by_mpirun=0 named_by_athanor=0 with_ckpt=0
printf '%-5s %-6s %-8s %-11s %-10s %-8s %-9s %-7s %s\n' trial victim delay_s latency_s \
  "others" named ckpts resume "ckpt at kill"
for ((trial = 1; trial <= trials; ++trial)); do
  dir=$work/trial$trial log=$work/trial$trial.log
  victim=$((RANDOM % ranks))
  # Uniform over the reference's wall time, start-up included (20 ms steps).
  delay_us=$(((RANDOM * 32768 + RANDOM) % (ref_us * 9 / 10 / 20000 + 1) * 20000))
  start=$(now_us)
  start_job "$dir" "$log"
  # Every rank has started (its PID file), then the delay since the job's start.
  while (($(count "$dir"/rank*.pid) < ranks)) && kill -0 "$job_pid" 2> /dev/null; do
    sleep 0.01
  done
  while (($(now_us) - start < delay_us)); do sleep 0.005; done
  victim_pid=$(cat "$dir/rank$victim.pid" 2> /dev/null)
  ckpt_at_kill=$(count "$dir"/ckpt/*.ckpt)
  # A rank that has already ended (rank*.end) finished the fit: too late for this trial.
  if [[ -z $victim_pid ]] || (($(count "$dir"/rank*.end) > 0)) ||
    ! kill -KILL "$victim_pid" 2> /dev/null; then
    # The job had ended already (or never started): not a kill; try this trial again.
    wait "$job_pid"
    job_pid=
    echo "trial $trial: the job ended before the kill at $(seconds "$delay_us") s; again" >&2
    rm -rf "$dir" "$log"
    ((++late > 3 * trials)) && { echo "FAIL: too many jobs ended before their kill" >&2; exit 1; }
    ((--trial))
    continue
  fi
  killed=$(now_us)
  # Every other rank's PID and mpirun's, until all are gone or the limit passes.
  others=()
  for ((r = 0; r < ranks; ++r)); do
    ((r == victim)) || others+=("$(cat "$dir/rank$r.pid")")
  done
  latency_us=-1
  while (($(now_us) - killed < 2 * exit_limit_s * 1000000)); do
    alive=0
    for pid in "${others[@]}" "$job_pid"; do kill -0 "$pid" 2> /dev/null && alive=1; done
    if ((alive == 0)); then
      latency_us=$(($(now_us) - killed))
      break
    fi
    sleep 0.02
  done
  if ((latency_us < 0)); then
    for pid in "${others[@]}" "$job_pid"; do kill -KILL "$pid" 2> /dev/null; done
  fi
  wait "$job_pid"
  mpirun_rc=$?
  job_pid=
  ok=1
  # How the others ended: a non-zero exit or a signal (no .end file: mpirun SIGKILLed the
  # wrapper); and mpirun must fail too.
  ends=
  for ((r = 0; r < ranks; ++r)); do
    ((r == victim)) && continue
    end=$(cat "$dir/rank$r.end" 2> /dev/null || echo "signal KILL(wrapper)")
    [[ $end == "exit 0" ]] && ok=0
    ends+="${ends:+,}${end#signal }"
  done
  ((mpirun_rc == 0)) && ok=0
  if ((latency_us >= 0 && latency_us <= exit_limit_s * 1000000)); then
    latency=$(seconds "$latency_us")
    ((latency_us > max_latency_us)) && max_latency_us=$latency_us
  else
    latency=">$((2 * exit_limit_s))" ok=0
  fi
  ((ok)) && ((++within))
  # Who named the lost rank.
  if grep -Eq "process rank $victim with PID [0-9]+ on node .* (exited on signal|exited)" "$log"
  then
    how=mpirun
    ((++named, ++named_by_mpirun))
  elif grep -Eiq "athanor.*rank $victim\b" "$log"; then
    how=athanor
    ((++named, ++named_by_athanor))
  else
    how=NO ok=0
  fi
  # The checkpoints left behind.
  if "$check" "$dir/ckpt" > "$dir/check.log" 2>&1 || [[ ! -e $dir/ckpt ]]; then
    ckpts="intact($(grep -c "^ok" "$dir/check.log" || true))"
    ((++intact))
  else
    ckpts=BROKEN ok=0
  fi
  resume=-
  if ((trial <= resume_trials)); then
    ((++resumed))
    from=()
    [[ -f $dir/ckpt/last.ckpt ]] && from=(--ckpt_path=last)
    rm -f "$dir"/rank*.pid "$dir"/rank*.end
    run_fit "$dir" "$dir/resume.log" "${from[@]}"
    if "$check" "$ref/ckpt/last.ckpt" "$dir/ckpt/last.ckpt" > "$dir/compare.log" 2>&1; then
      resume="exact${from:+(last)}"
      ((++resume_ok))
    else
      resume=DIFFERS ok=0
      cat "$dir/compare.log" >&2
    fi
  fi
  ((ckpt_at_kill > 0)) && ((++with_ckpt))
  printf '%-5s %-6s %-8s %-11s %-10s %-8s %-9s %-7s %s\n' "$trial" "$victim" \
    "$(seconds "$delay_us")" "$latency" "$ends" "$how" "$ckpts" "$resume" "$ckpt_at_kill"
  if ((!ok)); then
    ((++failures))
    echo "  trial $trial failed (mpirun status $mpirun_rc); its output ($log):" >&2
    tail -n 30 "$log" | sed 's/^/    /' >&2
  else
    rm -rf "$dir" "$log"
  fi
done

echo
echo "summary: $ranks ranks, $trials trials, seed $seed, $steps steps (reference fit" \
  "$(seconds "$ref_us") s)"
printf '  %-34s %s\n' \
  "others exited non-zero within ${exit_limit_s} s" "$within/$trials" \
  "max exit latency after the kill" "$(seconds "$max_latency_us") s" \
  "lost rank named" "$named/$trials (by mpirun $named_by_mpirun, by athanor $named_by_athanor)" \
  "checkpoints intact" "$intact/$trials" \
  "killed with a checkpoint on disk" "$with_ckpt/$trials" \
  "resumed exactly" "$resume_ok/$resumed"
if ((failures > 0)); then
  echo "FAIL: $failures of $trials trials failed (runs kept in $work)"
  exit 1
fi
echo "PASS"
[[ -n ${KILL_RANK_WORK:-} ]] || rm -rf "$work"
exit 0

#!/usr/bin/env bash
# A rank that dies mid-fit (SIGKILL: the OOM killer, a lost machine) must stop the whole job
# quickly and loudly, leave only complete checkpoints, and the fit must resume exactly.
#
#   tests/dist/kill_rank_fit.sh ATHANOR CKPT_CHECK RANKS TRIALS [SEED]
#
# ATHANOR is build/apps/athanor, CKPT_CHECK build/tests/dist/athanor_ckpt_check. First one
# uninterrupted reference fit (`mpirun -n RANKS athanor fit --trainer.strategy=ddp`, the W1 MLP on
# Fashion-MNIST, a checkpoint every 2 steps and last.ckpt), which also gives the time of a step;
# then TRIALS times the same fit, with one random rank SIGKILLed while the fit trains: once the
# checkpoint of a random step K (even, 2 <= K <= max_steps - 4) is on disk, after a further random
# delay of up to two steps. Start-up (MPI's, the data's) is never in the window: a checkpoint
# exists only after every rank has taken part in K steps of DDP's gradient all-reduce, and every
# trial is killed with one on disk. (A kill that would come once the fit has written its final
# checkpoint or a rank has ended is not made; the trial is run again.) Each trial checks that
#   - every other rank and mpirun exit within 30 s of the kill, none with status 0 (each rank's
#     end is recorded by tests/dist/kill_rank/rank_wrapper.sh, which mpirun starts in its place);
#   - the output names the lost rank: OpenMPI's "process rank R ... exited on signal 9", or
#     athanor's own error naming rank R (the table says which);
#   - every file in the checkpoint directory is a complete checkpoint (CKPT_CHECK: athanor's
#     loader, CRCs included; a leftover temporary fails);
#   - no process of the job is left (each job runs in a session of its own, `setsid mpirun`;
#     OpenMPI puts each rank in a process group of its own, but not out of the session; what is
#     left once mpirun has ended is SIGKILLed and must be gone within 10 s, else the script fails);
# and the first RESUME_TRIALS trials (default: all) resume with all ranks (`--ckpt_path=last`) and
# must end with a last.ckpt whose tensors, epoch and global step equal the reference's, bit for
# bit. When the script returns (a failure, INT or TERM included), no process it started is left;
# a SIGKILL of the script itself leaves mpirun to whoever sent it (CTest's TIMEOUT kills the
# whole process tree).
#
# Environment: KILL_RANK_STEPS (max_steps, default 40, at least 6), RESUME_TRIALS, KILL_RANK_WORK
# (a directory for the runs; default a new one under TMPDIR, removed when everything passed).
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
resume_trials=${RESUME_TRIALS:-$trials}
exit_limit_s=30

command -v mpirun > /dev/null || { echo "SKIP: no mpirun"; exit 77; }
command -v setsid > /dev/null || { echo "FAIL: no setsid (util-linux)" >&2; exit 2; }
((steps >= 6)) || { echo "FAIL: KILL_RANK_STEPS must be at least 6" >&2; exit 2; }
[[ -x $athanor && -x $check ]] || { echo "FAIL: $athanor or $check is not executable" >&2; exit 2; }
if [[ -n ${KILL_RANK_WORK:-} ]]; then
  work=$KILL_RANK_WORK
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/athanor_kill_rank.XXXXXX")
fi
RANDOM=$seed

export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The job running now (job_pid: mpirun's PID, which is also its session's ID), for the EXIT trap.
job_pid=
# Every process of session SID (the job's mpirun, ranks, wrappers) that is still alive, zombies
# aside (init reaps those), as PIDs in `alive_in_session`.
session_alive() { # session_alive SID
  alive_in_session=()
  local pid stat
  while read -r pid stat; do
    [[ $stat == Z* ]] || alive_in_session+=("$pid")
  done < <(ps -s "$1" -o pid=,stat= 2> /dev/null)
}
# Ends whatever is left of the job in session SID (SIGKILL) and waits until it is gone; fails
# (status 1) if something is still there after 10 s.
# session_left: how many were alive at the first look.
end_session() { # end_session SID
  local sid=$1 deadline=$((${EPOCHREALTIME/./} + 10000000))
  session_left=-1
  while :; do
    session_alive "$sid"
    ((session_left < 0)) && session_left=${#alive_in_session[@]}
    ((${#alive_in_session[@]} == 0)) && return 0
    kill -KILL "${alive_in_session[@]}" 2> /dev/null
    ((${EPOCHREALTIME/./} > deadline)) && break
    sleep 0.05
  done
  echo "FAIL: processes of the job in session $sid are still alive after SIGKILL:" >&2
  ps -s "$sid" -o pid,stat,args >&2
  return 1
}
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  if [[ -n $job_pid ]]; then
    kill -KILL "$job_pid" 2> /dev/null
    end_session "$job_pid"
  fi
  # Interrupted: a work directory of its own is removed too.
  [[ -n ${interrupted:-} && -z ${KILL_RANK_WORK:-} ]] && rm -rf "$work"
  return 0
}
trap cleanup EXIT
trap 'interrupted=1; exit 130' INT TERM

shopt -s nullglob
count() { echo $#; } # count GLOB: how many files match

# A random number in [0, N), in rnd (from 30 bits: the low bits of one $RANDOM repeat soon).
rand() { rnd=$(((RANDOM * 32768 + RANDOM) % $1)); }
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

# Starts the job in the background, in a session of its own (job_pid: mpirun's PID and the
# session's ID: a background job of a script is not a process group leader, so setsid need not
# fork); each rank under the wrapper.
start_job() { # start_job RUN_DIR LOG [EXTRA ARGS...]
  local dir=$1 log=$2 args
  shift 2
  mkdir -p "$dir"
  fit_args "$dir"
  setsid mpirun --oversubscribe -n "$ranks" "$wrapper" "$dir" "$athanor" "${args[@]}" "$@" \
    < /dev/null > "$log" 2>&1 &
  job_pid=$!
}

# Waits for the job to end (its status in job_rc) and clears its session; fails the script if a
# process of it cannot be ended.
finish_job() {
  wait "$job_pid"
  job_rc=$?
  end_session "$job_pid" || exit 1
  job_pid=
}

# The step of the newest checkpoint in DIR/ckpt (from the names, epoch=E-step=S.ckpt; 0: none),
# in ckpt_step; no subprocess, so that it can be polled every few milliseconds.
newest_ckpt() { # newest_ckpt RUN_DIR
  local f n
  ckpt_step=0
  for f in "$1"/ckpt/epoch=*-step=*.ckpt; do
    n=${f##*-step=}
    n=${n%.ckpt}
    [[ $n =~ ^[0-9]+$ ]] && ((n > ckpt_step)) && ckpt_step=$n
  done
}

# Runs a whole fit; fails the script if it fails.
run_fit() { # run_fit RUN_DIR LOG [EXTRA ARGS...]
  start_job "$@"
  finish_job
  if ((job_rc != 0)); then
    cat "$2" >&2
    echo "FAIL: the fit in $1 failed" >&2
    exit 1
  fi
}

# The reference, watched: when its first checkpoint (step 2) and its final one (step `steps`)
# appeared give the time of a step under the load of the moment.
ref=$work/reference
t0=$(now_us)
start_job "$ref" "$ref.log"
first_us=0 final_us=0
while kill -0 "$job_pid" 2> /dev/null; do
  newest_ckpt "$ref"
  ((first_us == 0 && ckpt_step >= 2)) && first_us=$(now_us)
  ((final_us == 0 && ckpt_step >= steps)) && final_us=$(now_us)
  sleep 0.002
done
finish_job
ref_us=$(($(now_us) - t0))
if ((job_rc != 0)); then
  cat "$ref.log" >&2
  echo "FAIL: the reference fit failed" >&2
  exit 1
fi
[[ -f $ref/ckpt/last.ckpt ]] || { echo "FAIL: the reference fit wrote no last.ckpt" >&2; exit 1; }
step_us=20000
((first_us > 0 && final_us > first_us)) && step_us=$(((final_us - first_us) / (steps - 2)))
((step_us < 2000)) && step_us=2000
echo "reference: $ranks ranks, $steps steps in $(seconds "$ref_us") s, first checkpoint after" \
  "$(seconds $((first_us - t0))) s, then $((step_us / 1000)) ms a step"

late=0 failures=0 within=0 named=0 intact=0 resumed=0 resume_ok=0 max_latency_us=0
named_by_mpirun=0 named_by_athanor=0 with_ckpt=0 left_total=0
printf '%-5s %-6s %-7s %-9s %-10s %-10s %-8s %-9s %-11s %s\n' trial victim after_K "+delay_ms" \
  latency_s others named ckpts resume "ckpt at kill"
for ((trial = 1; trial <= trials; ++trial)); do
  dir=$work/trial$trial log=$work/trial$trial.log
  rand "$ranks"
  victim=$rnd
  # The kill comes once the checkpoint of step K (even, 2..steps-4) is on disk, after a further
  # delay uniform over [0, 2 steps) (in steps of 1/10 of a step).
  rand $(((steps - 4) / 2))
  kill_after=$((2 + 2 * rnd))
  rand 20
  delay_us=$((rnd * step_us / 10))
  start_job "$dir" "$log"
  ckpt_step=0
  while kill -0 "$job_pid" 2> /dev/null; do
    newest_ckpt "$dir"
    ((ckpt_step >= kill_after)) && (($(count "$dir"/rank*.pid) == ranks)) && break
    sleep 0.002
  done
  seen=$(now_us)
  while (($(now_us) - seen < delay_us)); do sleep 0.002; done
  victim_pid=$(cat "$dir/rank$victim.pid" 2> /dev/null)
  newest_ckpt "$dir"
  ckpt_at_kill=$ckpt_step
  # Not once training is over (the final checkpoint is written) or a rank has ended (rank*.end):
  # the others could have finished the fit. The job runs to its end and the trial is run again.
  if [[ -z $victim_pid ]] || ((ckpt_step >= steps || ckpt_step < kill_after)) ||
    (($(count "$dir"/rank*.end) > 0)) || ! kill -KILL "$victim_pid" 2> /dev/null; then
    finish_job
    if ((job_rc != 0)); then
      cat "$log" >&2
      echo "FAIL: trial $trial: the fit failed before any kill" >&2
      exit 1
    fi
    echo "trial $trial: not killed (newest checkpoint: step $ckpt_step); again" >&2
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
  # mpirun has ended: what is left of the job (none expected) is ended, and must be gone.
  finish_job
  mpirun_rc=$job_rc
  ((left_total += session_left))
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
    ((left_total += session_left))
    if "$check" "$ref/ckpt/last.ckpt" "$dir/ckpt/last.ckpt" > "$dir/compare.log" 2>&1; then
      resume="exact${from:+(last)}"
      ((++resume_ok))
    else
      resume=DIFFERS ok=0
      cat "$dir/compare.log" >&2
    fi
  fi
  ((ckpt_at_kill > 0)) && ((++with_ckpt))
  printf '%-5s %-6s %-7s %-9s %-10s %-10s %-8s %-9s %-11s %s\n' "$trial" "$victim" \
    "$kill_after" "+$((delay_us / 1000))" "$latency" "$ends" "$how" "$ckpts" "$resume" \
    "step $ckpt_at_kill"
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
  "processes left once mpirun ended" "$left_total (SIGKILLed by the script; none is left)" \
  "resumed exactly" "$resume_ok/$resumed"
if ((failures > 0)); then
  echo "FAIL: $failures of $trials trials failed (runs kept in $work)"
  exit 1
fi
echo "PASS"
[[ -n ${KILL_RANK_WORK:-} ]] || rm -rf "$work"
exit 0

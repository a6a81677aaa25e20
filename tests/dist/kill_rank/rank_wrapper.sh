#!/usr/bin/env bash
# One rank of kill_rank_fit.sh's job: mpirun starts this, which runs the rank (COMMAND...) as its
# child so that the test can see how the rank ended (mpirun reaps its children itself):
#
#   rank_wrapper.sh DIR COMMAND...
#
# writes DIR/rank<R>.pid (the rank's PID, the one to SIGKILL) at start and DIR/rank<R>.end at
# the end ("exit N" or "signal NAME"); R is OMPI_COMM_WORLD_RANK. Signals mpirun sends to stop
# the job (TERM, INT, HUP) are passed on to the rank. The wrapper then ends as the rank did (a
# rank killed by signal S kills the wrapper with S), so mpirun sees and reports what it would
# without the wrapper: "process rank 1 ... exited on signal 9 (Killed)". If mpirun SIGKILLs the
# wrapper itself, no .end file is written (and the rank, orphaned, is left to kill_rank_fit.sh,
# which ends every process of the job's session).
dir=$1
shift
rank=${OMPI_COMM_WORLD_RANK:?not started by OpenMPI\'s mpirun}
"$@" &
child=$!
echo "$child" > "$dir/rank$rank.pid.tmp" && mv "$dir/rank$rank.pid.tmp" "$dir/rank$rank.pid"
trap 'kill -TERM "$child" 2> /dev/null' TERM
trap 'kill -INT "$child" 2> /dev/null' INT
trap 'kill -HUP "$child" 2> /dev/null' HUP
# A trapped signal interrupts wait (status > 128 though the child still runs): wait again.
while :; do
  wait "$child"
  rc=$?
  kill -0 "$child" 2> /dev/null || break
done
trap - TERM INT HUP
if ((rc > 128)); then
  sig=$(kill -l $((rc - 128)) 2> /dev/null || echo $((rc - 128)))
  echo "signal $sig" > "$dir/rank$rank.end"
  kill -s "$sig" $$
fi
echo "exit $rc" > "$dir/rank$rank.end"
exit "$rc"

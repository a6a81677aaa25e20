#!/usr/bin/env bash
# Multi-machine data-parallel training, for real, on one host: two network namespaces joined by
# a veth pair play two machines, and `athanor fit --trainer.num_nodes=2 --trainer.hostfile=...`
# (the user-facing path: the CLI starts mpirun itself) trains one rank in each, OpenMPI talking
# TCP over the veth only. The same fit as 2 ranks on one machine (`--trainer.devices=2`, shared
# memory) must leave a final checkpoint whose tensors are bit-identical.
#
#   tests/dist/two_nodes_netns.sh ATHANOR_BINARY WORK_ROOT
#
# Logs, hostfile and checkpoints go to WORK_ROOT/<PID>, removed when the test passes.
#
# Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2's `ip`; without them it exits 77,
# which CTest reports as skipped. Namespaces, veth and any process left in them are removed on
# every exit path. Docs: docs/distributed.md, "Several machines".
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 ATHANOR_BINARY WORK_ROOT" >&2
  exit 2
fi
athanor=$(realpath "$1")
work=$2/$$
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
agent=$here/netns_rsh_agent.sh
skip() {
  echo "SKIP: $*: network namespaces cannot be made here, so the two-node run is not tested"
  exit 77
}

# Unique per run, so parallel CTest runs never share a namespace or a device name (an interface
# name holds at most 15 characters: "athA" + a PID of up to 7 digits fits).
ns_a=athanor-a-$$ ns_b=athanor-b-$$ veth_a=athA$$ veth_b=athB$$
addr_a=10.231.0.1 addr_b=10.231.0.2 subnet=10.231.0.0/24 # private to the two namespaces

[[ $(id -u) -eq 0 ]] || skip "not root"
command -v ip > /dev/null || skip "no 'ip' command (Debian's iproute2)"

cleanup() {
  local ns pid
  for ns in "$ns_a" "$ns_b"; do
    [[ -e /run/netns/$ns ]] || continue
    # Whatever a failed run left in the namespace was started by this script (mpirun's daemon,
    # a rank): end it by its PID before the namespace goes.
    for pid in $(ip netns pids "$ns" 2> /dev/null); do kill -KILL "$pid" 2> /dev/null || true; done
    ip netns del "$ns" 2> /dev/null || true # deleting a namespace also deletes its veth end
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM # exit through the EXIT trap

# A run killed by SIGKILL (a CTest timeout) could not clean up: remove this test's namespaces
# whose script is gone (or whose PID is now ours).
while read -r ns _; do
  [[ $ns =~ ^athanor-[ab]-([0-9]+)$ ]] || continue
  pid=${BASH_REMATCH[1]}
  if [[ $pid == "$$" ]] || ! kill -0 "$pid" 2> /dev/null; then ip netns del "$ns" || true; fi
done < <(ip netns list 2> /dev/null)

ip netns add "$ns_a" 2> /dev/null || skip "'ip netns add' failed (no CAP_NET_ADMIN/CAP_SYS_ADMIN?)"
ip netns add "$ns_b" 2> /dev/null || skip "'ip netns add' failed"
ip netns exec "$ns_a" true 2> /dev/null || skip "'ip netns exec' failed (cannot remount /sys?)"
ip link add "$veth_a" netns "$ns_a" type veth peer name "$veth_b" netns "$ns_b" 2> /dev/null ||
  skip "cannot create a veth pair (no veth driver?)"
ip -n "$ns_a" addr add "$addr_a/24" dev "$veth_a"
ip -n "$ns_b" addr add "$addr_b/24" dev "$veth_b"
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set "$veth_a" up
ip -n "$ns_b" link set "$veth_b" up

mkdir -p "$work"
printf '%s slots=1\n%s slots=1\n' "$addr_a" "$addr_b" > "$work/hosts"

# A small fast fit: the W1 MLP on Fashion-MNIST, a few steps. One OpenMP thread per rank: both
# runs put 2 ranks on this host's cores.
fit=(fit --model.name=fashion_mlp --trainer.max_steps=10 --trainer.limit_val_batches=2
  --trainer.limit_test_batches=2 --trainer.enable_progress_bar=false)
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Each run well inside CTest's TIMEOUT, so a hang still ends through the EXIT trap.
limit=(timeout -k 5 60)

# One node: 2 ranks under mpirun on this host (shared memory between them).
t0=${EPOCHREALTIME/./}
"${limit[@]}" "$athanor" "${fit[@]}" --trainer.devices=2 \
  --trainer.default_root_dir="$work/one_node" > "$work/one_node.log" 2>&1 ||
  { cat "$work/one_node.log"; echo "FAIL: the one-node run failed" >&2; exit 1; }
t1=${EPOCHREALTIME/./}

# Two nodes: mpirun runs in namespace A (its host is A's address), reaches B through the agent,
# and OpenMPI may use only TCP (ob1 + tcp: not UCX, not shared memory) on the veth's subnet,
# for its own daemons (oob) as for the ranks' messages (btl). Set in OMPI_MCA_* variables,
# which mpirun reads and hands on to the daemon and the ranks.
counter() { ip netns exec "$ns_a" cat "/sys/class/net/$veth_a/statistics/$1"; }
before_tx=$(counter tx_bytes) before_rx=$(counter rx_bytes)
ip netns exec "$ns_a" env \
  ATH_NETNS_HOSTS="$addr_a=$ns_a $addr_b=$ns_b" \
  OMPI_MCA_plm_rsh_agent="$agent" \
  OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self \
  OMPI_MCA_btl_tcp_if_include="$subnet" OMPI_MCA_oob_tcp_if_include="$subnet" \
  "${limit[@]}" "$athanor" "${fit[@]}" --trainer.num_nodes=2 --trainer.devices=1 \
  --trainer.hostfile="$work/hosts" --trainer.default_root_dir="$work/two_nodes" \
  > "$work/two_nodes.log" 2>&1 ||
  { cat "$work/two_nodes.log"; echo "FAIL: the two-node run failed" >&2; exit 1; }
t2=${EPOCHREALTIME/./}
sent=$(($(counter tx_bytes) - before_tx)) received=$(($(counter rx_bytes) - before_rx))
seconds() { printf '%d.%02d' $(($1 / 1000000)) $(($1 % 1000000 / 10000)); }
echo "one node: $(seconds $((t1 - t0))) s; two nodes: $(seconds $((t2 - t1))) s;" \
  "A's end of the veth sent $sent bytes and received $received"
grep -m1 "starting 2 processes" "$work/two_nodes.log"

reported() { # reported LOG WHAT: the path the run printed as "WHAT: path"
  sed -n "s/^$2: //p" "$1" | tail -n 1
}
ck1=$(reported "$work/one_node.log" "last checkpoint")
ck2=$(reported "$work/two_nodes.log" "last checkpoint")
[[ -f $ck1 && -f $ck2 ]] ||
  { echo "FAIL: no last checkpoint reported ('$ck1', '$ck2')" >&2; exit 1; }

# The tensors, bit for bit: the safetensors data section (after the 8-byte header length and
# the JSON header), and the table of names, dtypes and shapes. The JSON metadata differs
# (paths), so it is not compared; epoch and global step are.
tensor_data() {
  local n
  n=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
  tail -c +$((9 + n)) "$1"
}
tensor_table() {
  "$athanor" inspect "$1" | awk 'NR == 1 { sub(/^.*: /, ""); print; next }
    /^[^ ]/ { section = $0 } section == "" || /^  (epoch|global_step):/ { print }'
}
if ! diff <(tensor_table "$ck1") <(tensor_table "$ck2"); then
  echo "FAIL: the checkpoints hold different tensors ($ck1, $ck2)" >&2
  exit 1
fi
if ! cmp <(tensor_data "$ck1") <(tensor_data "$ck2"); then
  echo "FAIL: the two-node checkpoint's tensors differ from the one-node run's ($ck1, $ck2)" >&2
  exit 1
fi
# And the logged losses and accuracies (validation, training, test), value for value.
if ! diff "$(reported "$work/one_node.log" metrics)" "$(reported "$work/two_nodes.log" metrics)"
then
  echo "FAIL: the two runs logged different metrics" >&2
  exit 1
fi

# The ranks must have talked over the veth. A 2-rank all-reduce of N bytes sends at least N from
# each rank, so 10 steps send 10 x the parameters' float32 bytes (21 MB for this MLP); demand
# half of that (room for a compressed all-reduce), far above mpirun's own start-up traffic.
param_bytes=$(tensor_table "$ck1" | awk '$1 ~ /^state_dict\./ && $2 == "F32" {
    n = 4; gsub(/[][,]/, " "); for (i = 3; i <= NF; ++i) n *= $i; total += n }
  END { print total + 0 }')
if ((param_bytes == 0 || sent < 10 * param_bytes / 2)); then
  echo "FAIL: only $sent bytes crossed $veth_a for $param_bytes bytes of parameters:" \
    "the ranks did not all-reduce over it" >&2
  exit 1
fi
echo "tensors: $(tensor_table "$ck1" | head -n 1), data sha256" \
  "$(tensor_data "$ck1" | sha256sum | cut -c1-16)... in both; parameters: $param_bytes bytes"
grep -h "^test_" "$work/one_node.log" "$work/two_nodes.log" | paste -d' ' - - |
  sed '1s/^/  one node:  /; 2s/^/  two nodes: /'
echo "PASS: the two-node fit equals the one-node fit, bit for bit"
rm -rf "$work"

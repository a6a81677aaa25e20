#!/usr/bin/env bash
# An OpenMPI launch agent (plm_rsh_agent) for "machines" that are network namespaces on this
# host: mpirun calls it as it would call ssh, `agent [options] HOST COMMAND...`, to start its
# daemon (orted) on HOST. Instead of logging in over ssh it runs COMMAND inside the namespace
# that owns HOST's address, so the daemon and its ranks see only that namespace's network.
#
#   ATH_NETNS_HOSTS="10.231.0.1=ns-a 10.231.0.2=ns-b"   # HOST=namespace pairs
#   OMPI_MCA_plm_rsh_agent=/path/to/netns_rsh_agent.sh mpirun --hostfile hosts ...
#
# tests/dist/two_nodes_netns.sh builds the namespaces and uses it; docs/distributed.md explains.
set -euo pipefail

# ssh-style options before the host (mpirun passes none to an agent it does not know as ssh,
# but an agent should not mistake one for the host).
while [[ $# -gt 0 && $1 == -* ]]; do shift; done
if [[ $# -lt 2 ]]; then
  echo "netns_rsh_agent: usage: netns_rsh_agent.sh HOST COMMAND..." >&2
  exit 255
fi
host=$1
shift

for pair in ${ATH_NETNS_HOSTS:-}; do
  if [[ ${pair%%=*} == "$host" ]]; then
    # As ssh does, the words are joined and run by a shell: mpirun quotes the daemon's
    # arguments for a remote shell (its contact URI holds ';').
    exec ip netns exec "${pair#*=}" /bin/sh -c "$*"
  fi
done
echo "netns_rsh_agent: no network namespace for host '$host'" \
  "(ATH_NETNS_HOSTS='${ATH_NETNS_HOSTS:-}')" >&2
exit 255

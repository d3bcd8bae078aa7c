#!/bin/sh
# The Slurm exports in a real Slurm (Debian's slurmctld and slurmd 22.05):
# sn design export --format slurm-conf (nodes, partitions), slurm-gres
# (gres.conf) and slurm-tree (topology.conf) of examples/demo-cluster.yaml are
# loaded by a slurmctld started here (munged, state and spool in a temporary
# directory, ports on loopback); one slurmd, for sn00-t00 with fake
# /dev/nvidia* files, registers its GPUs. Then scontrol and sinfo must show
# what the spec says: every switch of the tree with its nodes, each node's
# CPUs, memory, GRES and features, each partition's node count, and the
# registered node idle with 8 GPUs. Skips (exit 0) without Slurm or munge,
# or when not root (slurmd needs it).
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SPEC=examples/demo-cluster.yaml
. tests/cli/slurm.inc
slurm_check_or_skip slurm_conf
slurm_init
trap slurm_cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$SN" design export --format slurm-conf "$SPEC" >"$D/nodes.conf" || fail "export slurm-conf"
"$SN" design export --format slurm-gres "$SPEC" >"$D/gres.conf" || fail "export slurm-gres"
"$SN" design export --format slurm-tree "$SPEC" >"$D/topology.conf" || fail "export slurm-tree"
# The spec's names do not resolve here: every node answers on loopback (only
# sn00-t00 runs a slurmd); the GPUs are the character devices of slurm.inc.
slurm_nodes "$D/nodes.conf"
sed -i "s|File=/dev/nvidia|File=$D/dev/nvidia|" "$D/gres.conf"
slurm_start "" || { fail "munged or slurmctld did not start"; exit 1; }
slurm_slurmd sn00-t00 || fail "slurmd did not start"

# topology.conf: one switch per supernode with its 4 servers, and the top.
topo=$(scontrol show topology)
for s in 0 1 2 3; do
    printf '%s\n' "$topo" | grep -q "^SwitchName=sn0$s .*Nodes=sn0$s-t\[00-03\]" ||
        fail "topology lacks switch sn0$s with its nodes: $topo"
done
n_switch=$(printf '%s\n' "$topo" | grep -c '^SwitchName=')
want_switch=$(grep -c '^SwitchName=' "$D/topology.conf")
[ "$n_switch" = "$want_switch" ] || fail "scontrol shows $n_switch switches, topology.conf has $want_switch"

# slurm.conf: every node with its CPUs, memory, GRES and features.
node=$(scontrol show node sn02-t01)
for want in "CPUTot=112" "RealMemory=1992294" "Gres=gpu:h100_sxm5_80gb:8" "Sockets=2" \
    "CoresPerSocket=56" "AvailableFeatures=sn02,pd-sn02-pdB,sn02-leaf0,sn02-rack0,pool-training"; do
    printf '%s\n' "$node" | grep -q -- "$want" || fail "sn02-t01 lacks $want: $node"
done
nodes=$(sinfo -h -N -o '%N' | sort -u | wc -l)
[ "$nodes" = 16 ] || fail "sinfo lists $nodes nodes, want 16"
parts=$(sinfo -h -o '%R %D')
printf '%s\n' "$parts" | grep -q '^training 16$' || fail "partition training should hold 16 nodes: $parts"
feat=$(sinfo -h -N -o '%N %f' | grep -c 'pd-sn0[0-3]-pd[AB]')
[ "$feat" -ge 16 ] || fail "every node names its power domain in Features: $feat"

# gres.conf through a real slurmd: sn00-t00 registers idle with its 8 GPUs.
slurm_wait_idle sn00-t00 || fail "sn00-t00 did not register"
scontrol show node sn00-t00 | grep -q "Gres=gpu:h100_sxm5_80gb:8" || fail "slurmd's GRES: $(scontrol show node sn00-t00 | grep Gres)"
grep -qi "error.*gres" "$D/log/slurmd-sn00-t00.log" && fail "slurmd complained of gres.conf: $(grep -i 'error.*gres' "$D/log/slurmd-sn00-t00.log")"
grep -qi "error.*topology\|error.*switch" "$D/log/slurmctld.log" && fail "slurmctld complained of topology.conf"

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "slurm_conf: slurmctld and slurmd 22.05 accept the exports; scontrol and sinfo agree with the spec"

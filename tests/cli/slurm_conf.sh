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
for b in slurmctld slurmd munged mungekey scontrol sinfo; do
    if ! command -v "$b" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$b" ]; then
        echo "slurm_conf: skipped (no $b; scripts/deps.sh installs slurmctld, slurmd, slurm-client and munge)"
        exit 0
    fi
done
if [ "$(id -u)" != 0 ]; then
    echo "slurm_conf: skipped (slurmd runs as root)"
    exit 0
fi
PATH=$PATH:/usr/sbin
D=$(mktemp -d "${TMPDIR:-/tmp}/sn-slurm-XXXXXX")
chmod 755 "$D"
cleanup() {
    for p in slurmd.pid slurmctld.pid munged.pid; do
        [ -s "$D/$p" ] && kill "$(cat "$D/$p")" 2>/dev/null
    done
    sleep 0.5
    rm -rf "$D"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Two free loopback ports for slurmctld and slurmd.
ports=$(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))' 2>/dev/null)
[ -n "$ports" ] || ports="$((20000 + $$ % 20000)) $((20001 + $$ % 20000))"
set -- $ports
CTLD_PORT=$1 SLURMD_PORT=$2

"$SN" design export --format slurm-conf "$SPEC" >"$D/nodes.conf" || fail "export slurm-conf"
"$SN" design export --format slurm-gres "$SPEC" >"$D/gres.conf" || fail "export slurm-gres"
"$SN" design export --format slurm-tree "$SPEC" >"$D/topology.conf" || fail "export slurm-tree"
# The one node with a slurmd answers on loopback; its GPUs are files here.
mkdir -p "$D/dev" "$D/state" "$D/spool" "$D/log"
# slurmd wants character devices: the major and minor of /dev/null.
for i in 0 1 2 3 4 5 6 7; do mknod "$D/dev/nvidia$i" c 1 3 || fail "mknod"; done
# The spec's names do not resolve here: every node's address is loopback
# (only sn00-t00 runs a slurmd).
sed -i "s|^NodeName=\([^ ]*\) |NodeName=\1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$SLURMD_PORT |" "$D/nodes.conf"
sed -i "s|File=/dev/nvidia|File=$D/dev/nvidia|" "$D/gres.conf"
cat >"$D/slurm.conf" <<CONF
ClusterName=sntest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$D/munge.sock
CredType=cred/munge
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
TopologyPlugin=topology/tree
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
Include $D/nodes.conf
CONF
export SLURM_CONF="$D/slurm.conf"

mungekey -c -k "$D/munge.key" -b 1024 >/dev/null 2>&1 ||
    dd if=/dev/urandom of="$D/munge.key" bs=1024 count=1 2>/dev/null
chmod 600 "$D/munge.key"
munged -f --key-file="$D/munge.key" --socket="$D/munge.sock" --pid-file="$D/munged.pid" \
    --log-file="$D/munged.log" --seed-file="$D/munged.seed" || { fail "munged did not start"; exit 1; }
slurmctld -f "$D/slurm.conf" -i >"$D/log/slurmctld.out" 2>&1 || true
i=0
until scontrol ping 2>/dev/null | grep -q "UP"; do
    i=$((i + 1))
    if [ $i -gt 300 ]; then
        cat "$D/log/slurmctld.log" "$D/log/slurmctld.out" 2>/dev/null | tail -20
        fail "slurmctld did not come up"
        exit 1
    fi
    sleep 0.1
done
mkdir -p "$D/spool/sn00-t00"
slurmd -N sn00-t00 -f "$D/slurm.conf" >"$D/log/slurmd.out" 2>&1 || fail "slurmd did not start"

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
i=0
until scontrol show node sn00-t00 | grep -q "State=IDLE"; do
    i=$((i + 1))
    if [ $i -gt 300 ]; then
        tail -20 "$D/log/slurmd.log" 2>/dev/null
        fail "sn00-t00 did not register: $(scontrol show node sn00-t00 | grep State)"
        break
    fi
    sleep 0.1
done
scontrol show node sn00-t00 | grep -q "Gres=gpu:h100_sxm5_80gb:8" || fail "slurmd's GRES: $(scontrol show node sn00-t00 | grep Gres)"
grep -qi "error.*gres" "$D/log/slurmd.log" && fail "slurmd complained of gres.conf: $(grep -i 'error.*gres' "$D/log/slurmd.log")"
grep -qi "error.*topology\|error.*switch" "$D/log/slurmctld.log" && fail "slurmctld complained of topology.conf"

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "slurm_conf: slurmctld and slurmd 22.05 accept the exports; scontrol and sinfo agree with the spec"

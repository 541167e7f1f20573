#!/bin/sh
# Runs COMMAND against a Slurm cluster on this machine: a controller
# (slurmctld) in this namespace and one slurmd per simulated host, the hosts
# being the network namespaces of scripts/netns_cluster.sh (each with its
# own address and host name). COMMAND runs here with SLURM_CONF exported,
# so srun, salloc, sbatch and sinfo talk to this cluster. Everything is
# stopped and removed when COMMAND ends.
#
#   scripts/slurm_cluster.sh [--hosts 2] [--cpus-per-host 2] -- COMMAND [ARGS...]
#   scripts/slurm_cluster.sh --check    exit 0 when it can run here, 77 when not
#
# Needs root, what netns_cluster.sh needs, and Debian's slurmctld, slurmd
# and slurm-client (scripts/install_deps.sh --with-slurm). Authentication
# is auth/none with cred/none: the whole cluster is this machine's root,
# so munge would add a daemon and a key and protect nothing. Each host
# claims --cpus-per-host CPUs whatever this machine has
# (SlurmdParameters=config_overrides). Processes are tracked by process
# group (proctrack/pgid) and not confined (task/none), as no cgroup
# hierarchy can be assumed in a container (slurmd still insists on a cgroup
# file system at /sys/fs/cgroup to start). Exit status: COMMAND's; 77 when
# this cannot run here (ctest's skip code), slurmd failing its cgroup start
# included; 2 for usage errors; 1 when the cluster did not come up (its
# logs are printed).
set -eu

hosts=2
cpus_per_host=2
check_only=0
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

usage() {
  sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

skip() {
  echo "slurm_cluster.sh: SKIP: $*" >&2
  exit 77
}

if [ "${1:-}" != "--inside" ]; then
  while [ $# -gt 0 ]; do
    case "$1" in
      --hosts) hosts="$2"; shift 2 ;;
      --cpus-per-host) cpus_per_host="$2"; shift 2 ;;
      --check) check_only=1; shift ;;
      --help|-h) usage ;;
      --) shift; break ;;
      *) echo "slurm_cluster.sh: unknown option $1" >&2; usage ;;
    esac
  done
  case "$hosts$cpus_per_host" in ''|*[!0-9]*) echo "slurm_cluster.sh: --hosts and --cpus-per-host take numbers" >&2; exit 2 ;; esac
  if [ "$hosts" -lt 1 ] || [ "$hosts" -gt 64 ] || [ "$cpus_per_host" -lt 1 ]; then
    echo "slurm_cluster.sh: need 1..64 hosts and at least one CPU per host" >&2
    exit 2
  fi
  if [ "$check_only" -eq 0 ] && [ $# -eq 0 ]; then
    echo "slurm_cluster.sh: no command given (put it after --)" >&2
    usage
  fi
  [ "$(id -u)" -eq 0 ] || skip "slurmd and network namespaces need root"
  for tool in slurmctld slurmd srun sinfo; do
    command -v "$tool" >/dev/null 2>&1 ||
      skip "$tool is not installed (scripts/install_deps.sh --with-slurm)"
  done
  if [ "$check_only" -eq 1 ]; then
    "$here/netns_cluster.sh" --check >/dev/null || exit $?
    echo "slurm_cluster.sh: Slurm and network namespaces are here"
    exit 0
  fi
  exec "$here/netns_cluster.sh" --exec --hosts "$hosts" -- "$0" --inside "$cpus_per_host" "$@"
fi

# Inside netns_cluster.sh --exec: the namespaces exist.
shift
cpus_per_host=$1
shift
# Not under /tmp, which each host replaces with its own (below).
dir=$(mktemp -d /var/tmp/slurm_cluster.XXXXXX)
mkdir -p "$dir/state"
pids=""

stop_daemons() {
  status=$?
  set +e
  for pid in $pids; do kill "$pid" 2>/dev/null; done
  for pid in $pids; do
    # Bounded: a daemon that ignores SIGTERM for 10 s gets SIGKILL.
    n=0
    while kill -0 "$pid" 2>/dev/null && [ "$n" -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
    kill -9 "$pid" 2>/dev/null
  done
  rm -rf "$dir"
  exit "$status"
}
trap stop_daemons EXIT
trap 'exit 130' INT TERM

# The controller's port differs per run, so concurrent runs do not collide
# (each slurmd has its namespace's ports to itself).
ctld_port=$((20000 + $$ % 20000))
controller=$(hostname -s)
cat > "$dir/slurm.conf" <<CONF
ClusterName=collective
SlurmctldHost=$controller($NETNS_CLUSTER_SUBNET.254)
SlurmctldPort=$ctld_port
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
CONF
i=1
for host in $NETNS_CLUSTER_HOSTS; do
  echo "NodeName=$host NodeAddr=$NETNS_CLUSTER_SUBNET.$i CPUs=$cpus_per_host State=UNKNOWN" >> "$dir/slurm.conf"
  i=$((i + 1))
done
echo "PartitionName=sim Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >> "$dir/slurm.conf"
# slurmd 22.05 initializes its cgroup plugin at start even when nothing
# uses it. Under cgroup v2 it would ask systemd (over D-Bus) for a scope;
# IgnoreSystemd makes it create its cgroup itself, as no systemd is assumed.
cat > "$dir/cgroup.conf" <<CONF
CgroupPlugin=autodetect
IgnoreSystemd=yes
CONF
export SLURM_CONF="$dir/slurm.conf"

slurmctld -D -i -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 &
pids="$pids $!"
for host in $NETNS_CLUSTER_HOSTS; do
  mkdir -p "$dir/spool-$host"
  # Its own host name, so that the job's processes (its children) see it.
  # nsenter rather than `ip netns exec`, which remounts /sys and so hides
  # the cgroup file systems slurmd insists on finding at start.
  # A /tmp of its own as well, as a real host has: Slurm's PMIx plugin
  # and Open MPI name their files there by job, not by host. What the job
  # needs from the real /tmp (this checkout, the working directory, when
  # they lie there, as a CI clone may) is bound back into it.
  mkdir -p "$dir/real-tmp-$host"
  nsenter --net="/run/netns/$host" unshare --uts --mount sh -c '
    hostname "$0" || exit 1
    mount --bind /tmp "$2" && mount -t tmpfs -o mode=1777 tmpfs /tmp || exit 1
    for path in "$3" "$4"; do
      case "$path" in
        /tmp/?*)
          top=${path#/tmp/}; top=${top%%/*}
          mkdir -p "/tmp/$top" && mount --bind "$2/$top" "/tmp/$top" || exit 1 ;;
      esac
    done
    exec slurmd -D -N "$0" -f "$1"' \
    "$host" "$SLURM_CONF" "$dir/real-tmp-$host" "$root" "$PWD" >"$dir/slurmd-$host.out" 2>&1 &
  pids="$pids $!"
done

# Up when every node is idle; bounded.
up=0
n=0
while [ "$n" -lt 300 ]; do
  idle=$(sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l)
  if [ "$idle" -eq "$(echo $NETNS_CLUSTER_HOSTS | wc -w)" ]; then up=1; break; fi
  sleep 0.1
  n=$((n + 1))
done
if [ "$up" -ne 1 ]; then
  echo "slurm_cluster.sh: the cluster did not come up within 30 s; sinfo says:" >&2
  sinfo -N >&2 || true
  for log in "$dir"/*.log "$dir"/*.out; do
    [ -f "$log" ] && { echo "--- $log" >&2; tail -20 "$log" >&2; }
  done
  # A machine whose cgroup file system slurmd cannot use (none mounted,
  # or v2 without the delegation it needs) cannot run it: skipped, not failed.
  if grep -q "Unable to initialize cgroup plugin" "$dir"/slurmd-*.out "$dir"/slurmd-*.log 2>/dev/null; then
    echo "slurm_cluster.sh: SKIP: slurmd cannot initialize its cgroup plugin on this machine (above)" >&2
    exit 77
  fi
  exit 1
fi
echo "slurm_cluster.sh: Slurm up: controller $controller:$ctld_port, nodes $NETNS_CLUSTER_HOSTS" >&2
set +e
"$@"
status=$?
set -e
exit "$status"

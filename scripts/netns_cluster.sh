#!/bin/sh
# Runs an MPI program across N simulated hosts on this machine: N network
# namespaces joined by a bridge through veth pairs, each namespace a node to
# Open MPI (shared memory inside, TCP between), optionally with a tc rate
# limit and delay to model a network.
#
#   scripts/netns_cluster.sh [--hosts 2] [--ranks-per-host 2] [--rate 1gbit]
#                            [--delay 100us] [--mpirun-arg ARG]... -- PROGRAM [ARGS...]
#   scripts/netns_cluster.sh --exec [--hosts 2] -- COMMAND [ARGS...]
#       makes the same hosts but runs COMMAND itself in this namespace
#       instead of mpirun, with NETNS_CLUSTER_HOSTS (the namespace names,
#       space-separated, each also its host name), NETNS_CLUSTER_SUBNET
#       (A.B.C: host i is A.B.C.i, this namespace A.B.C.254) and
#       NETNS_CLUSTER_DIR (a scratch directory removed on exit) exported;
#       everything left running in the namespaces is stopped on exit
#       (scripts/slurm_cluster.sh starts Slurm daemons in them)
#   scripts/netns_cluster.sh --check    exit 0 when namespaces work here, 77 when not
#
# How: mpirun runs in this (the root) namespace, which reaches the bridge at
# SUBNET.254; a hostfile names the namespaces; Open MPI's rsh launcher starts
# each host's daemon through an agent script that runs it with
# `ip netns exec HOST unshare --uts` after setting the host name to HOST, so
# MPI_Get_processor_name and MPI_COMM_TYPE_SHARED see separate hosts;
# oob_tcp_if_include and btl_tcp_if_include keep Open MPI on the bridge's
# subnet. The daemons stay in this session (--leave-session-attached): a
# daemon that detaches starts a session of its own, which the kernel's
# autogroup makes a scheduling group of its own, and ranks of one job in
# separate groups on shared cores, polling and yielding, starved each
# other for seconds to minutes (docs/ci.md, "Simulated hosts share one
# scheduling group"); real hosts never share their cores. Needs root
# (CAP_NET_ADMIN, CAP_SYS_ADMIN), iproute2, util-linux unshare, and tc for
# --rate/--delay. Everything is removed on exit.
# Exit status: the program's (mpirun's); 77 when namespaces are not
# permitted here (ctest's skip code); 2 for usage errors.
set -eu

hosts=2
ranks_per_host=2
rate=""
delay=""
check_only=0
exec_only=0
mpirun_args=""

usage() {
  sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) hosts="$2"; shift 2 ;;
    --ranks-per-host) ranks_per_host="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --delay) delay="$2"; shift 2 ;;
    --mpirun-arg) mpirun_args="$mpirun_args $2"; shift 2 ;;
    --check) check_only=1; shift ;;
    --exec) exec_only=1; shift ;;
    --help|-h) usage ;;
    --) shift; break ;;
    *) echo "netns_cluster.sh: unknown option $1" >&2; usage ;;
  esac
done
case "$hosts" in ''|*[!0-9]*) echo "netns_cluster.sh: --hosts must be a number" >&2; exit 2 ;; esac
case "$ranks_per_host" in ''|*[!0-9]*) echo "netns_cluster.sh: --ranks-per-host must be a number" >&2; exit 2 ;; esac
if [ "$hosts" -lt 1 ] || [ "$hosts" -gt 200 ] || [ "$ranks_per_host" -lt 1 ]; then
  echo "netns_cluster.sh: need 1..200 hosts and at least one rank per host" >&2
  exit 2
fi
if [ "$check_only" -eq 0 ] && [ $# -eq 0 ]; then
  echo "netns_cluster.sh: no program given (put it after --)" >&2
  usage
fi

# Unique names and subnet per invocation, so concurrent runs do not collide.
id=$(( $$ % 100000 ))
prefix="cl${id}"
bridge="${prefix}br"
subnet_a=$(( (id / 250) % 200 + 20 ))
subnet_b=$(( id % 250 ))
subnet="10.${subnet_a}.${subnet_b}"
workdir=""

skip() {
  echo "netns_cluster.sh: SKIP: $*" >&2
  exit 77
}

# Can this sandbox make namespaces and veth pairs at all?
probe="${prefix}probe"
if [ "$(id -u)" -ne 0 ]; then
  skip "network namespaces need root"
fi
for tool in ip unshare; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed"
done
if ! ip netns add "$probe" 2>/dev/null; then
  skip "'ip netns add' is not permitted in this sandbox"
fi
if ! ip link add "${prefix}pa" type veth peer name "${prefix}pb" 2>/dev/null; then
  ip netns del "$probe" 2>/dev/null || true
  skip "veth pairs cannot be created in this sandbox"
fi
ip link del "${prefix}pa" 2>/dev/null || true
if ! ip netns exec "$probe" unshare --uts true 2>/dev/null; then
  ip netns del "$probe" 2>/dev/null || true
  skip "'unshare --uts' is not permitted in this sandbox"
fi
ip netns del "$probe"
if [ -n "$rate$delay" ]; then
  command -v tc >/dev/null 2>&1 || skip "tc is not installed (needed for --rate/--delay)"
fi
if [ "$check_only" -eq 1 ]; then
  echo "netns_cluster.sh: network namespaces work here"
  exit 0
fi

cleanup() {
  status=$?
  set +e
  i=1
  while [ "$i" -le "$hosts" ]; do
    ns="${prefix}h${i}"
    # Processes this run left in its namespace (a daemon that outlived
    # mpirun): ours, stopped by id.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
    ip link del "${prefix}v${i}" 2>/dev/null
    i=$((i + 1))
  done
  ip link del "$bridge" 2>/dev/null
  [ -n "$workdir" ] && rm -rf "$workdir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

workdir=$(mktemp -d /tmp/netns_cluster.XXXXXX)

ip link add "$bridge" type bridge
ip addr add "${subnet}.254/24" dev "$bridge"
ip link set "$bridge" up

: > "$workdir/hostfile"
i=1
while [ "$i" -le "$hosts" ]; do
  ns="${prefix}h${i}"
  outside="${prefix}v${i}"
  inside="${prefix}e${i}"
  ip netns add "$ns"
  ip link add "$outside" type veth peer name "$inside"
  ip link set "$inside" netns "$ns"
  ip link set "$outside" master "$bridge"
  ip link set "$outside" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "${subnet}.${i}/24" dev "$inside"
  ip -n "$ns" link set "$inside" up
  if [ -n "$delay" ] && [ -n "$rate" ]; then
    ip netns exec "$ns" tc qdisc add dev "$inside" root netem delay "$delay" rate "$rate"
  elif [ -n "$delay" ]; then
    ip netns exec "$ns" tc qdisc add dev "$inside" root netem delay "$delay"
  elif [ -n "$rate" ]; then
    ip netns exec "$ns" tc qdisc add dev "$inside" root tbf rate "$rate" burst 256kb latency 50ms
  fi
  echo "$ns slots=$ranks_per_host" >> "$workdir/hostfile"
  i=$((i + 1))
done

# Open MPI calls the agent as `agent [options] HOST COMMAND...`, the command
# meant for a remote shell.
cat > "$workdir/agent" <<'AGENT'
#!/bin/sh
while [ $# -gt 0 ]; do
  case "$1" in -*) shift ;; *) break ;; esac
done
host="$1"
shift
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
AGENT
chmod +x "$workdir/agent"

if [ "$exec_only" -eq 1 ]; then
  NETNS_CLUSTER_HOSTS=""
  i=1
  while [ "$i" -le "$hosts" ]; do
    NETNS_CLUSTER_HOSTS="$NETNS_CLUSTER_HOSTS${NETNS_CLUSTER_HOSTS:+ }${prefix}h${i}"
    i=$((i + 1))
  done
  export NETNS_CLUSTER_HOSTS NETNS_CLUSTER_SUBNET="$subnet" NETNS_CLUSTER_DIR="$workdir"
  echo "netns_cluster.sh: $hosts hosts ($NETNS_CLUSTER_HOSTS) on ${subnet}.0/24" >&2
  set +e
  "$@"
  status=$?
  set -e
  exit "$status"
fi

echo "netns_cluster.sh: $hosts hosts x $ranks_per_host ranks on ${subnet}.0/24${rate:+, rate $rate}${delay:+, delay $delay}" >&2
set +e
# shellcheck disable=SC2086
mpirun --hostfile "$workdir/hostfile" -np $((hosts * ranks_per_host)) \
  --mca plm_rsh_agent "$workdir/agent" \
  --mca plm_rsh_no_tree_spawn 1 \
  --mca oob_tcp_if_include "${subnet}.0/24" \
  --mca btl_tcp_if_include "${subnet}.0/24" \
  --mca btl self,vader,tcp \
  --bind-to none --oversubscribe --leave-session-attached $mpirun_args \
  "$@"
status=$?
set -e
exit "$status"

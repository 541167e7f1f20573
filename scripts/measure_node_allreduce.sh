#!/usr/bin/env bash
# The one-node all_reduce measurements of docs/performance.md (history: docs/performance_history.md): AUTO against
# Open MPI's MPI_Allreduce (alternating in the same run) and against the
# machine's copy bound (measured in the same run), float32 SUM, at 2 ranks
# (one per core, bound) and 4 ranks (oversubscribed, unbound, as Open MPI
# leaves them by default), RUNS runs of each, alternating 2 and 4, and the
# median of every cell over the runs, as markdown tables.
#
#   scripts/measure_node_allreduce.sh [build dir]
#   RUNS=3 REPS=7 SECONDS_PER_VARIANT=0.03 MAX_BYTES=256M RANKS="2 4"
#   RAW_DIR=dir keeps every run's raw allreduce_timing output there
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
binary=$build/bench/allreduce_timing
[[ -x $binary ]] || { echo "missing $binary: build the benchmarks first (COLLECTIVE_BUILD_BENCH, on by default)" >&2; exit 1; }
source "$root/scripts/mpirun_env.sh"
runs=${RUNS:-3}
reps=${REPS:-7}
seconds=${SECONDS_PER_VARIANT:-0.03}
max_bytes=${MAX_BYTES:-256M}
ranks_list=${RANKS:-2 4}
if [[ -n ${RAW_DIR:-} ]]; then
  work=$RAW_DIR
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

launch() {  # ranks
  echo "mpirun -np $1 $(binding_for "$1")"
}

for ((run = 1; run <= runs; ++run)); do
  for ranks in $ranks_list; do
    # shellcheck disable=SC2046
    timeout 1200 $(launch "$ranks") "$binary" --reps "$reps" --seconds "$seconds" \
      --min-bytes 8 --max-bytes "$max_bytes" --algorithms auto --also-allocated \
      >"$work/np${ranks}_run${run}.txt"
  done
done

for ranks in $ranks_list; do
  echo
  echo "### $ranks ranks: \`$(launch "$ranks") $binary --reps $reps --seconds $seconds --min-bytes 8 --max-bytes $max_bytes --algorithms auto --also-allocated\`, median of $runs runs"
  echo
  python3 "$root/scripts/median_of_runs.py" "$work"/np"${ranks}"_run*.txt |
    python3 -c '
import sys
def size(b):
    b = int(b)
    for unit, name in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= unit: return "%d %s" % (b // unit, name)
    return "%d B" % b
header = []
for line in sys.stdin:
    if line.startswith("#"):
        header.append(line.strip("# \n")); continue
    f = line.split()
    if f[0] == "bytes":
        cols = f
        print("\n".join("> " + h for h in header) + "\n")
        print("| size | MPI_Allreduce µs | AUTO µs | AUTO busbw GB/s | AUTO × MPI | allocated µs | allocated × MPI | copy µs | AUTO / copy | allocated / copy |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        continue
    v = dict(zip(cols, f))
    auto, alloc, copy, mpi = (float(v[k]) for k in ("auto_us", "allocated_us", "copy_us", "mpi_us"))
    ratio = lambda a, b: "%.2f" % (a / b) if b > 0 else "-"
    print("| %s | %.2f | %.2f | %.3f | **%s** | %.2f | %s | %.2f | %s | %s |" % (
        size(v["bytes"]), mpi, auto, float(v["busbw"]), ratio(mpi, auto), alloc, ratio(mpi, alloc),
        copy, ratio(auto, copy), ratio(alloc, copy)))
'
done

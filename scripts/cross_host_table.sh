#!/bin/sh
# The cross-host tables of docs/performance_history.md: AUTO all-reduce against Open
# MPI's MPI_Allreduce, alternating in one run (collective_bench --baseline
# mpi), on 2 simulated hosts (scripts/netns_cluster.sh) with 1 and with 2
# ranks each, cross-rank check on; each layout run ROUNDS times (default 3)
# and reported as medians over the runs, per size, out of place and in place.
#
#   scripts/cross_host_table.sh [BUILD_DIR] [ROUNDS]
#
# Needs root (namespaces); set ITERS (default 100), MIN (8), MAX (64M) and
# PER_HOST ("1 2") to change the runs. Prints a Markdown table per layout.
set -eu
build=${1:-build}
rounds=${2:-3}
iters=${ITERS:-100}
min=${MIN:-8}
max=${MAX:-64M}
layouts=${PER_HOST:-1 2}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/mpirun_env.sh"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for per_host in $layouts; do
  round=1
  while [ "$round" -le "$rounds" ]; do
    "$here/netns_cluster.sh" --hosts 2 --ranks-per-host "$per_host" -- \
      "$build/bench/collective_bench" -b "$min" -e "$max" -f 2 --baseline mpi -n "$iters" -w 10 \
      --format csv --output "$out/x$per_host.$round.csv" >/dev/null
    round=$((round + 1))
  done
done
python3 - "$out" "$rounds" <<'PY'
import csv, glob, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def size(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n: return f"{b // n} {unit}"
    return f"{b} B"
for per_host in (1, 2):
    if not glob.glob(f"{out}/x{per_host}.*.csv"): continue
    rows = {}
    for path in sorted(glob.glob(f"{out}/x{per_host}.*.csv")):
        for row in csv.DictReader(open(path)):
            key = (int(row["bytes"]), row["inplace"])
            rows.setdefault(key, []).append(row)
    print(f"\n2 hosts x {per_host} rank(s), medians of {rounds} runs (p50 per run, us)\n")
    print("| size | AUTO ran | ours, out of place | MPI | speed-up | ours, in place | MPI | speed-up | worst run |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    worst_overall = None
    for b in sorted({k[0] for k in rows}):
        cells = []
        algorithms = set()
        worst = None
        for inplace in ("false", "true"):
            runs = rows.get((b, inplace), [])
            algorithms |= {r["algorithm"] for r in runs}
            ours = statistics.median(float(r["p50_us"]) for r in runs)
            mpi = statistics.median(float(r["baseline_p50_us"]) for r in runs)
            speedups = [float(r["speedup"]) for r in runs]
            worst = min(speedups + ([worst] if worst is not None else []))
            cells += [f"{ours:.2f}", f"{mpi:.2f}", f"{statistics.median(speedups):.2f}"]
        print(f"| {size(b)} | {', '.join(sorted(algorithms))} | " + " | ".join(cells) + f" | {worst:.2f} |")
PY

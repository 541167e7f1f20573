#!/usr/bin/env bash
# Measures what the cross-rank check costs: small all_reduce latency with
# COLLECTIVE_VALIDATE=1 and =0, in alternating runs, medians of medians.
#   scripts/measure_validation_cost.sh [build dir] [ranks...]
# Prints one table row per (ranks, bytes, algorithm).
set -euo pipefail
build=${1:-build}
shift || true
ranks_list=${*:-"2 4"}
rounds=${ROUNDS:-5}
binary="$build/bench/collective_validation_cost"
[[ -x $binary ]] || { echo "missing $binary: build first" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
for ranks in $ranks_list; do
  for ((round = 0; round < rounds; ++round)); do
    for validate in 1 0; do
      COLLECTIVE_VALIDATE=$validate timeout 300 mpirun -np "$ranks" --oversubscribe --bind-to none \
        "$binary" 2000 7 >>"$raw"
    done
  done
done
python3 - "$raw" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split())
    key = (int(f["ranks"]), int(f["bytes"]), f["algorithm"])
    rows.setdefault(key, {"1": [], "0": [], "mpi": []})
    rows[key][f["validate"]].append(float(f["us_per_call"]))
    rows[key]["mpi"].append(float(f["mpi_allreduce_us"]))
print("| ranks | bytes | algorithm | validate=1 (us) | validate=0 (us) | cost (us) | ratio | MPI_Allreduce (us) |")
print("|---|---|---|---|---|---|---|---|")
for (ranks, size, algorithm), v in sorted(rows.items()):
    on, off, mpi = (statistics.median(v[k]) for k in ("1", "0", "mpi"))
    print("| %d | %d | %s | %.2f | %.2f | %+.2f | %.2f | %.2f |" % (ranks, size, algorithm, on, off, on - off, on / off, mpi))
PY

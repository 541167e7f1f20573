#!/usr/bin/env bash
# Before/after in one run: times AUTO all_reduce with two builds of
# collective_bench, alternating run by run, and prints the median over the
# runs of each run's p50 per build, and their ratio (after / before; below
# 1 is faster). Usage:
#   scripts/compare_revisions.sh BEFORE_BENCH AFTER_BENCH [ROUNDS=5]
# with sizes and ranks from SIZES (default "8 67108864") and RANKS
# (default "2 4"); METRIC=mean compares each run's mean time per call
# instead of its p50 (the p50 is kept to 10 ns, too coarse at 8 B). Build
# the older revision in a worktree of its own, e.g.
#   git worktree add /tmp/before <rev> && cmake -S /tmp/before -B /tmp/before/build \
#     -DCMAKE_BUILD_TYPE=Release -DCOLLECTIVE_BUILD_TESTS=OFF && cmake --build /tmp/before/build --target collective_bench
set -euo pipefail
before=$1 after=$2 rounds=${3:-5}
source "$(dirname "$0")/mpirun_env.sh"
sizes=${SIZES:-"8 67108864"}
ranks_list=${RANKS:-"2 4"}
results=$(mktemp)
trap 'rm -f "$results"' EXIT

column=12  # p50_us
[[ ${METRIC:-p50} == mean ]] && column=11  # time_us
iterations_for() { if (($1 <= 65536)); then echo "-n 2000 -w 200"; else echo "-n 10 -w 2"; fi; }

for round in $(seq 1 "$rounds"); do
  # Alternate which build goes first, so that a drift favours neither.
  order=("before:$before" "after:$after")
  ((round % 2 == 0)) && order=("after:$after" "before:$before")
  for ranks in $ranks_list; do
    for size in $sizes; do
      for entry in "${order[@]}"; do
        label=${entry%%:*} bench=${entry#*:}
        # shellcheck disable=SC2046
        p50=$(mpirun -np "$ranks" $(binding_for "$ranks") "$bench" -b "$size" -e "$size" \
                $(iterations_for "$size") --format csv 2>/dev/null |
              awk -F, -v column="$column" '$1 == "collective" && $10 == "false" { print $column }')
        echo "$label $ranks $size $p50" >> "$results"
      done
    done
  done
done

python3 - "$results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    label, ranks, size, p50 = line.split()
    runs.setdefault((int(ranks), int(size)), {}).setdefault(label, []).append(float(p50))
print("| ranks | bytes | before (us) | after (us) | after / before | runs |")
print("|---|---|---|---|---|---|")
for (ranks, size), by in sorted(runs.items()):
    b, a = statistics.median(by["before"]), statistics.median(by["after"])
    print("| %d | %d | %.3f | %.3f | %.3f | %d |" % (ranks, size, b, a, a / b, len(by["before"])))
PY

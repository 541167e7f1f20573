#!/usr/bin/env bash
# The shared-memory handoff ways of docs/performance_history.md: AUTO all_reduce
# (float32 SUM, one node) with its slots handed over through the cache,
# through memory, and measured (COLLECTIVE_SHM_HANDOFF=cache|memory|auto),
# each beside Open MPI's MPI_Allreduce and the copy bound in the same run.
# The three ways alternate run by run, ROUNDS times, and each way's runs
# are printed one row per run with the machine's state during it
# (scripts/handoff_table.py).
#
#   scripts/measure_handoff.sh [ranks] [build dir]
#   ROUNDS=3 MIN_BYTES=64K MAX_BYTES=128M REPS=3 RAW_DIR=dir
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ranks=${1:-2}
build=${2:-$root/build}
binary=$build/bench/allreduce_timing
[[ -x $binary ]] || { echo "missing $binary: build the benchmarks first (COLLECTIVE_BUILD_BENCH, on by default)" >&2; exit 1; }
source "$root/scripts/mpirun_env.sh"
rounds=${ROUNDS:-3}
if [[ -n ${RAW_DIR:-} ]]; then
  work=$RAW_DIR
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
read -ra binding <<<"$(binding_for "$ranks")"
launch=(mpirun -np "$ranks" "${binding[@]}")
arguments=(--reps "${REPS:-3}" --seconds 0.02 --min-bytes "${MIN_BYTES:-64K}"
           --max-bytes "${MAX_BYTES:-128M}" --algorithms shared_memory)
for ((round = 1; round <= rounds; ++round)); do
  for way in cache memory auto; do
    COLLECTIVE_SHM_HANDOFF=$way timeout 900 "${launch[@]}" -x COLLECTIVE_SHM_HANDOFF \
      "$binary" "${arguments[@]}" >"$work/np${ranks}_${way}_run${round}.txt"
  done
done
echo "### $ranks ranks: \`COLLECTIVE_SHM_HANDOFF=<way> ${launch[*]} $binary ${arguments[*]}\`"
echo
python3 "$root/scripts/handoff_table.py" "$work" "$ranks"

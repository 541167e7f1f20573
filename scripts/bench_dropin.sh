#!/usr/bin/env bash
# An unmodified MPI program's MPI_Allreduce loop (float32 sum, 8 B to
# 256 MiB, bench/dropin/allreduce_loop.c) with and without the drop-in
# (LD_PRELOAD=libcollective_mpi.so), at 2 and 4 ranks, in one run. Whole
# runs alternate (without, with; then with, without; ...) ROUNDS times per
# rank count; the table gives each side's median over the rounds and the
# speed-up = median without / median with (> 1: the drop-in is faster).
#
#   scripts/bench_dropin.sh [BUILD_DIR]      ROUNDS=3 RANKS="2 4" MAX_BYTES=268435456
# A build against MPICH (build-mpich, -DCOLLECTIVE_MPI=mpich) runs under
# mpiexec.mpich (Hydra's flags); the table then compares with MPICH's own
# MPI_Allreduce.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$(cd "${1:-$root/build}" && pwd)
source "$root/scripts/mpirun_env.sh"
program=$build_dir/bench/dropin/dropin_allreduce_loop
dropin=$build_dir/libcollective/pmpi/libcollective_mpi.so
rounds=${ROUNDS:-3}
max_bytes=${MAX_BYTES:-268435456}
[[ -x $program && -f $dropin ]] || { echo "bench_dropin: build dropin_allreduce_loop and collective_mpi first" >&2; exit 1; }
mpiexec=mpirun mpich=0
if grep -q "COLLECTIVE_MPI_FLAVOR:INTERNAL=mpich\|COLLECTIVE_MPI:STRING=mpich" "$build_dir/CMakeCache.txt"; then
  mpiexec=mpiexec.mpich mpich=1
fi
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

for ranks in ${RANKS:-2 4}; do
  read -ra binding <<<"$(binding_for "$ranks")"
  ((mpich)) && binding=() && ((ranks <= $(nproc))) && binding=(-bind-to core)
  for ((round = 0; round < rounds; ++round)); do
    sides=(without with)
    ((round % 2)) && sides=(with without)
    for side in "${sides[@]}"; do
      preload=()
      [[ $side == with ]] && preload=(-x "LD_PRELOAD=$dropin")
      [[ $side == with ]] && ((mpich)) && preload=(-genv LD_PRELOAD "$dropin")
      "$mpiexec" -n "$ranks" "${binding[@]}" "${preload[@]}" "$program" "$max_bytes" </dev/null \
        >"$results/$ranks.$side.$round"
    done
  done
done

python3 - "$results" "$rounds" ${RANKS:-2 4} <<'PY'
import statistics, sys, os
results, rounds, ranks_list = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(path):
    return {int(b): float(t) for b, t in (line.split() for line in open(path) if line.strip())}
def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024: return f"{n:g} {unit}"
        n /= 1024
print("| ranks | bytes | MPI_Allreduce (us) | with the drop-in (us) | speed-up |")
print("|---|---|---|---|---|")
for ranks in ranks_list:
    runs = {side: [load(os.path.join(results, f"{ranks}.{side}.{r}")) for r in range(rounds)]
            for side in ("without", "with")}
    for size in sorted(runs["without"][0]):
        without = statistics.median(run[size] for run in runs["without"])
        with_ = statistics.median(run[size] for run in runs["with"])
        print(f"| {ranks} | {human(size)} | {without:.2f} | {with_:.2f} | {without / with_:.2f} |")
PY

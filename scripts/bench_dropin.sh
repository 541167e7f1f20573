#!/usr/bin/env bash
# An unmodified MPI program's loops of MPI_Allreduce (float32 sum),
# MPI_Alltoall and MPI_Allgatherv (float32), 8 B to 256 MiB
# (bench/dropin/collective_loop.c), with and without the drop-in
# (LD_PRELOAD=libcollective_mpi.so), at 2 and 4 ranks, in one run. Whole
# runs alternate (without, with; then with, without; ...) ROUNDS times per
# rank count and collective; the table gives each side's median over the
# rounds and the speed-up = median without / median with (> 1: the drop-in
# is faster).
#
#   scripts/bench_dropin.sh [BUILD_DIR]      ROUNDS=3 RANKS="2 4" MAX_BYTES=268435456
#                                            COLLECTIVES="allreduce alltoall allgatherv"
#                                            (also allreduce_band: MPI_INT with MPI_BAND)
# A build against MPICH (build-mpich, -DCOLLECTIVE_MPI=mpich) runs under
# mpiexec.mpich (Hydra's flags); the table then compares with MPICH's own
# MPI_Allreduce.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$(cd "${1:-$root/build}" && pwd)
source "$root/scripts/mpirun_env.sh"
program=$build_dir/bench/dropin/dropin_collective_loop
dropin=$build_dir/libcollective/pmpi/libcollective_mpi.so
rounds=${ROUNDS:-3}
max_bytes=${MAX_BYTES:-268435456}
[[ -x $program && -f $dropin ]] || { echo "bench_dropin: build dropin_collective_loop and collective_mpi first" >&2; exit 1; }
mpiexec=mpirun mpich=0
if grep -q "COLLECTIVE_MPI_FLAVOR:INTERNAL=mpich\|COLLECTIVE_MPI:STRING=mpich" "$build_dir/CMakeCache.txt"; then
  mpiexec=mpiexec.mpich mpich=1
fi
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

collectives=${COLLECTIVES:-allreduce alltoall allgatherv}
for collective in $collectives; do
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
      "$mpiexec" -n "$ranks" "${binding[@]}" "${preload[@]}" "$program" "$max_bytes" "$collective" \
        </dev/null >"$results/$collective.$ranks.$side.$round"
    done
  done
done
done

python3 - "$results" "$rounds" "$collectives" ${RANKS:-2 4} <<'PY'
import statistics, sys, os
results, rounds, collectives, ranks_list = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
names = {"allreduce": "MPI_Allreduce", "allreduce_band": "MPI_Allreduce (MPI_INT, MPI_BAND)",
         "alltoall": "MPI_Alltoall", "allgatherv": "MPI_Allgatherv"}
def load(path):
    return {int(b): float(t) for b, t in (line.split() for line in open(path) if line.strip())}
def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024: return f"{n:g} {unit}"
        n /= 1024
print("| call | ranks | bytes | without the drop-in (us) | with it (us) | speed-up |")
print("|---|---|---|---|---|---|")
for collective in collectives:
    for ranks in ranks_list:
        runs = {side: [load(os.path.join(results, f"{collective}.{ranks}.{side}.{r}"))
                       for r in range(rounds)] for side in ("without", "with")}
        for size in sorted(runs["without"][0]):
            without = statistics.median(run[size] for run in runs["without"])
            with_ = statistics.median(run[size] for run in runs["with"])
            print(f"| {names[collective]} | {ranks} | {human(size)} | {without:.2f} | {with_:.2f} "
                  f"| {without / with_:.2f} |")
PY

#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the all-reduce
# benchmark under mpirun on this machine (2 ranks by default; NP=4 for
# four), every algorithm plus AUTO, with Open MPI's MPI_Allreduce timed
# beside it in the same run. Extra arguments go to collective_bench.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install_deps.sh
source scripts/mpirun_env.sh
bash scripts/build.sh -DCOLLECTIVE_BUILD_TESTS=OFF
np=${NP:-2}
args=("$@")
[[ ${#args[@]} -eq 0 ]] && args=(-b 8 -e 128M -f 8 -a all --baseline mpi -c 1)
read -ra binding <<<"$(binding_for "$np")"
exec mpirun -np "$np" "${binding[@]}" build/bench/collective_bench "${args[@]}"

#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the all-reduce
# benchmark under mpirun on this machine (2 ranks by default; NP=4 for
# four): AUTO, what a program gets, with Open MPI's MPI_Allreduce timed
# beside it in the same run, 8 B to 128 MiB. The footer gives AUTO's
# speed-up over MPI (median, and the worst with its size). Extra arguments
# replace those and go to collective_bench; `-a all,auto` adds a row for
# every algorithm forced, and the forced rows' speed-up apart.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install_deps.sh
source scripts/mpirun_env.sh
build_dir=${BUILD_DIR:-$root/build}
bash scripts/build.sh -DCOLLECTIVE_BUILD_TESTS=OFF
np=${NP:-2}
args=("$@")
[[ ${#args[@]} -eq 0 ]] && args=(-b 8 -e 128M -f 8 -a auto --baseline mpi -c 1)
read -ra binding <<<"$(binding_for "$np")"
exec mpirun -np "$np" "${binding[@]}" "$build_dir/bench/collective_bench" "${args[@]}"

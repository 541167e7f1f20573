#!/usr/bin/env bash
# The library built against Debian's MPICH (-DCOLLECTIVE_MPI=mpich) into
# build-mpich/, and the tests that run under MPICH's launcher: the C API
# and Fortran module (tests/capi) and the MPI drop-in under an unmodified
# MPI program (tests/pmpi), 1-4 ranks. The rest of the MPI suites pass
# Open MPI's mpirun flags (--oversubscribe) and run against Open MPI only.
# Installs MPICH beside Open MPI first (install_deps.sh --with-mpich keeps
# Open MPI the default mpicc/mpirun).
#
#   scripts/test_mpich.sh [BUILD_DIR]        default: build-mpich
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build-mpich}
bash "$root/scripts/install_deps.sh" --with-mpich
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCOLLECTIVE_MPI=mpich \
      -DCOLLECTIVE_BUILD_TESTS=ON >/dev/null
targets=(c_api_test dropin_program dropin_program_linked collective_mpi)
# (not `| grep -q`: with pipefail, grep's early exit fails the pipe)
[[ $(cmake --build "$build_dir" --target help) == *fortran_api_test* ]] && targets+=(fortran_api_test)
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"
ctest --test-dir "$build_dir" --output-on-failure -L "capi|pmpi" --timeout 300

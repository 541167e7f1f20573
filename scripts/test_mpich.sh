#!/usr/bin/env bash
# The library built against Debian's MPICH (-DCOLLECTIVE_MPI=mpich) into
# build-mpich/, and a stated subset of its tests under MPICH's launcher:
# the C API and Fortran module (tests/capi) and the MPI drop-in under an
# unmodified MPI program (tests/pmpi), 1-4 ranks; then the library's own
# MPI suites that are quick: collective_mpi_tests (every collective,
# algorithm, dtype, op, count and root, in place, bad input, determinism,
# split) at 1-4 ranks, topology_mpi_test at 1-4 ranks and
# launcher_variables_test plainly and under misleading launcher variables
# at 1-4 ranks. Every MPI test registers with the launcher's own flags
# (cmake/CollectiveMpiLauncher.cmake), so `ctest --test-dir build-mpich`
# can run the rest by hand; CI leaves it out for time.
# Installs MPICH beside Open MPI first (install_deps.sh --with-mpich keeps
# Open MPI the default mpicc/mpirun).
#
#   scripts/test_mpich.sh [BUILD_DIR]        default: build-mpich
#     COLLECTIVE_CI_STEP=build only installs and builds, =test only runs the
#     tests of an earlier build step (scripts/test.sh builds while other
#     tests run); unset, both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build-mpich}
step=${COLLECTIVE_CI_STEP:-build test}
if [[ " $step " == *" build "* ]]; then
  bash "$root/scripts/install_deps.sh" --with-mpich
  # A unity build (COLLECTIVE_UNITY_BUILD=OFF: file by file): these sources
  # are compiled file by file in build-tsan (scripts/sanitizers.sh),
  # and batching them costs a third less compiler time.
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCOLLECTIVE_MPI=mpich \
        -DCOLLECTIVE_BUILD_TESTS=ON -DCMAKE_UNITY_BUILD="${COLLECTIVE_UNITY_BUILD:-ON}" >/dev/null
  targets=(c_api_test c_api_misuse_test c_api_async_test c_api_plan_test dropin_program dropin_program_linked
           dropin_fast_path_program dropin_nonblocking_program
           collective_mpi collective_mpi_tests topology_mpi_test launcher_variables_test)
  # (not `| grep -q`: with pipefail, grep's early exit fails the pipe)
  help=$(cmake --build "$build_dir" --target help)
  [[ $help == *fortran_api_test* ]] && targets+=(fortran_api_test)
  [[ $help == *fortran_async_test* ]] && targets+=(fortran_async_test)
  [[ $help == *fortran_plan_test* ]] && targets+=(fortran_plan_test)
  cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"
fi
[[ " $step " == *" test "* ]] || exit 0
# preload_shim NAME [LIBS...]: builds scripts/NAME.c into build_dir and
# puts it first in LD_PRELOAD, which mpiexec hands on to proxies and ranks.
preload_shim() {
  local name=$1
  shift
  shim=$build_dir/$name.so
  cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$shim" "$root/scripts/$name.c" "$@"
  export LD_PRELOAD=$shim${LD_PRELOAD:+:$LD_PRELOAD}
}
# MPICH 4.0's progress loop never yields: with 3 or 4 ranks on 2 cores each
# message waits for a time slice to end (collective_mpi_tests at 3 ranks:
# 28.7 s, 2.4 s with the shim). Its ranks run with a preloaded shim that
# yields when UCX moved nothing (scripts/mpich_yield_when_idle.c);
# COLLECTIVE_MPICH_YIELD=0 runs MPICH as it is.
if [[ ${COLLECTIVE_MPICH_YIELD:-1} == 1 ]]; then
  preload_shim mpich_yield_when_idle -ldl
  echo "-- test_mpich: MPICH's ranks yield when idle ($shim preloaded)"
fi
# Hydra starts every proxy and rank in a session of its own, which the
# kernel's autogroup makes a scheduling group of its own: MPICH's ranks then
# competed as groups with the whole of CI's session and, yielding, starved
# it and each other for a minute once. A preloaded setsid() keeps them in
# this session with a process group of their own
# (scripts/mpich_same_session.c); COLLECTIVE_MPICH_SAME_SESSION=0 runs
# without it. Checked here: a rank's session is this script's.
if [[ ${COLLECTIVE_MPICH_SAME_SESSION:-1} == 1 ]]; then
  preload_shim mpich_same_session
  # The launcher the tests run with (build_dir's CMake found it).
  mpiexec=$(sed -n 's/^MPIEXEC_EXECUTABLE:FILEPATH=//p' "$build_dir/CMakeCache.txt")
  own_session=$(cut -d' ' -f6 /proc/$$/stat)
  rank_sessions=$("$mpiexec" -n 2 sh -c "cut -d' ' -f6 /proc/\$\$/stat" | sort -u)
  if [[ $rank_sessions != "$own_session" ]]; then
    echo "test_mpich: MPICH's ranks run in session(s) $(echo $rank_sessions), not this script's ($own_session)" >&2
    exit 1
  fi
  echo "-- test_mpich: MPICH's processes stay in this session ($shim preloaded)"
fi
# The drop-in's semantics tests (dropin_semantics_program: in-place blocks,
# attribute callbacks, signals, communicators in a small /dev/shm) are
# written against Open MPI and run in the Open MPI phase only: under
# MPICH 4.0 the in-place program crashes inside UCX even without the
# drop-in, its runtime takes SIGUSR1 itself, and the tests' served-call
# accounting does not yet know MPICH's call paths.
ctest --test-dir "$build_dir" --output-on-failure -L "capi|pmpi" --timeout 300 -j "$(nproc)" \
      -E '^pmpi_(in_place|attributes|signals|stall_warning|communicators)'
# The sweep (every collective, algorithm, dtype, op, count and root) runs
# here at its boundary counts 0, 1, 7 and 1023 only: its two large counts
# (2^20 + 3, and 2^18 + 3 per rank) run the same code paths with more
# elements, cost 60% of the suite's CPU under MPICH (np4: 173 CPU-s against
# 73), and run in full under Open MPI in build/. MPICH_SWEEP_FILTER=
# (empty) runs them here too.
sweep_filter=${MPICH_SWEEP_FILTER--Sweep/*_count1048579*:Sweep/*_count262147*}
GTEST_FILTER=${sweep_filter:-*} ctest --test-dir "$build_dir" --output-on-failure --timeout 300 -j "$(nproc)" \
      -R '^(collective_mpi_tests|topology_mpi_test|launcher_variables_test|launcher_variables_misleading)_np[1-4]$'

#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# (unit tests, MPI tests at 1-4 ranks, and, where present, the sanitizer
# and fuzzing jobs). Exits non-zero on any failure. CI runs exactly this.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Each phase's start and the seconds since the script began, so a CI log
# shows where the time goes.
phase() { echo "== $1 ($(date +%T), ${SECONDS} s in)"; }
# --with-slurm: the Slurm test (tests/slurm, scripts/slurm_cluster.sh).
extra_install=(--with-plot --with-slurm)
[[ -x scripts/fuzz.sh ]] && extra_install+=(--with-fuzz)
bash scripts/install_deps.sh "${extra_install[@]}"
source scripts/mpirun_env.sh
# Every build below (build, build-mpich, build-asan, build-tsan, the
# fuzzers) compiles through ccache when it is installed, with this clone's
# root as ccache's base_dir so that objects are shared with every other
# clone or worktree of the same sources (a fresh clone's build/: 32 CPU-s
# from a warm cache against 535 with CCACHE_DISABLE=1); a cold cache costs
# what no cache costs. COLLECTIVE_CI_CCACHE=0 (or CCACHE_DISABLE=1) builds
# without it.
if [[ ${COLLECTIVE_CI_CCACHE:-1} == 1 ]] && command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=${CMAKE_C_COMPILER_LAUNCHER:-ccache}
  export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
  phase "ccache ($(command -v ccache), base_dir $CCACHE_BASEDIR)"
fi

# The code's format first: a seconds-long check that names each file
# .clang-format would change (fix: clang-format-14 -i FILE).
phase format
bash scripts/check_format.sh

phase build
bash scripts/build.sh -DCOLLECTIVE_BUILD_TESTS=ON
phase tests
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900

if [[ -x scripts/mpich_coll_tests.sh ]]; then
  # MPICH's collective tests with and without the MPI drop-in; CI runs the
  # 30 testlist entries of at most 4 ranks, for time (all 73, up to 16
  # ranks: docs/mpich_coll_tests.md).
  phase "MPICH collective tests"
  MPICH_TESTS=ci MPICH_TESTS_MAX_RANKS=${MPICH_TESTS_MAX_RANKS:-4} bash scripts/mpich_coll_tests.sh build
fi
if [[ -x scripts/test_mpich.sh && ${COLLECTIVE_CI_MPICH:-1} == 1 ]]; then
  # The library against Debian's MPICH too (build-mpich/): the C API, the
  # Fortran module and the MPI drop-in tests, and the library's quick MPI
  # suites (collective_mpi_tests, topology, launcher variables; 1-4 ranks)
  # under MPICH's launcher.
  # COLLECTIVE_CI_MPICH=0 skips it.
  phase "MPICH build and tests"
  bash scripts/test_mpich.sh
fi
if [[ -x scripts/sanitizers.sh ]]; then
  phase sanitizers
  bash scripts/sanitizers.sh
fi
if [[ -x scripts/fuzz.sh ]]; then
  phase fuzzing
  # 6 s per target in CI (fuzz.sh's own default is 20): every seed runs, and
  # the corpus grows across runs of the same checkout.
  FUZZ_SECONDS=${FUZZ_SECONDS:-6} bash scripts/fuzz.sh
fi
echo "== all tests passed (${SECONDS} s)"

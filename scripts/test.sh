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
# --with-torch: the Python binding and its tests (tests/python), the
# torch.distributed backend's too (python3-torch).
# Everything is installed here, MPICH too, so that no later step runs apt
# while the background builds below run.
extra_install=(--with-plot --with-slurm --with-torch)
[[ -x scripts/fuzz.sh ]] && extra_install+=(--with-fuzz)
with_mpich=0
[[ -x scripts/test_mpich.sh && ${COLLECTIVE_CI_MPICH:-1} == 1 ]] && with_mpich=1
((with_mpich)) && extra_install+=(--with-mpich)
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
# Under CI=true build/ is a unity build (files batched into one compile per
# 8; COLLECTIVE_UNITY_BUILD=OFF: file by file): 336 CPU-s against 480, and
# this build is the one every test waits for. build-tsan compiles every
# file of the library and the strategies on its own (scripts/sanitizers.sh).
# Elsewhere build/ stays as the developer configured it.
unity_build=()
[[ ${CI:-} == true ]] && unity_build=(-DCMAKE_UNITY_BUILD="${COLLECTIVE_UNITY_BUILD:-ON}")
bash scripts/build.sh -DCOLLECTIVE_BUILD_TESTS=ON "${unity_build[@]}"

# The other builds (MPICH's test programs, build-mpich, build-asan,
# build-tsan, build-fuzz) run in one chain in the background at nice 19
# while the tests of build/ run: some of those leave a core idle (the fault
# scenarios sleep on their timeouts, 25 CPU-s in 90 s; mpirun's start and
# end of each MPI test; MPICH's runs), and a nice 19 compiler only gets
# what the tests leave. Each step's tests then run in the foreground once
# the step is built, in the order below. A step's output goes to
# build/ci-background/STEP.log and is printed when the step is awaited; a
# failed build fails CI there. COLLECTIVE_CI_BACKGROUND=0 builds each in
# turn instead, in the foreground (the order before).
background=$root/build/ci-background
rm -rf "$background"
mkdir -p "$background"
steps=()
# `pip install .`'s test (tests/python) builds the library once more in its
# own folder: minutes of compiling that run here in the background, the test
# itself, and then once more in the foreground, incremental (seconds).
pip_test='^python_pip_install'
if ctest --test-dir build -N -R "$pip_test" | grep -q "Total Tests: [1-9]"; then
  steps+=(pip_install)
  main_exclusions=(-E "$pip_test")
else
  main_exclusions=()
fi
[[ -x scripts/mpich_coll_tests.sh ]] && steps+=(mpich_coll_tests)
((with_mpich)) && steps+=(mpich)
[[ -x scripts/sanitizers.sh ]] && steps+=(sanitizers)
[[ -x scripts/fuzz.sh ]] && steps+=(fuzzing)
# The background chain builds the sanitizers' trees right after pip's: the
# sanitizers' tests are the only foreground phase left once build/'s are
# done, and with their build last but one they waited 131 s for it (the
# other steps' tests run beside them and await their own builds).
build_order=()
for step in pip_install sanitizers mpich_coll_tests mpich fuzzing; do
  [[ " ${steps[*]} " == *" $step "* ]] && build_order+=("$step")
done
# STEP build|test: one step's build or its tests.
run_step() {
  local step=$1
  case $step in
    # A unity build in its own folder, CI or not, as the other second builds
    # (COLLECTIVE_UNITY_BUILD=OFF: file by file); setup.py passes CMAKE_ARGS
    # to CMake.
    pip_install)
      CMAKE_ARGS="-DCMAKE_UNITY_BUILD=${COLLECTIVE_UNITY_BUILD:-ON} ${CMAKE_ARGS:-}" \
        ctest --test-dir build --output-on-failure -R "$pip_test" ;;
    # MPICH's collective tests with and without the MPI drop-in; CI runs
    # the 30 testlist entries of at most 4 ranks, for time (all 73, up to 16
    # ranks: docs/mpich_coll_tests.md).
    mpich_coll_tests)
      COLLECTIVE_CI_STEP=$2 MPICH_TESTS=ci MPICH_TESTS_MAX_RANKS=${MPICH_TESTS_MAX_RANKS:-4} \
        bash scripts/mpich_coll_tests.sh build ;;
    # The library against Debian's MPICH too (build-mpich/): the C API, the
    # Fortran module and the MPI drop-in tests, and the library's quick MPI
    # suites (collective_mpi_tests, topology, launcher variables; 1-4 ranks)
    # under MPICH's launcher. COLLECTIVE_CI_MPICH=0 skips it.
    mpich) COLLECTIVE_CI_STEP=$2 bash scripts/test_mpich.sh ;;
    sanitizers) COLLECTIVE_CI_STEP=$2 bash scripts/sanitizers.sh ;;
    # 6 s per target in CI (fuzz.sh's own default is 20): every seed runs,
    # and the corpus grows across runs of the same checkout.
    fuzzing) COLLECTIVE_CI_STEP=$2 FUZZ_SECONDS=${FUZZ_SECONDS:-6} bash scripts/fuzz.sh ;;
  esac
}
background_pid=
beside_pid=
stop_background() {
  [[ -n $background_pid ]] && kill -- "-$background_pid" 2>/dev/null || true
  [[ -n $beside_pid ]] && kill -- "-$beside_pid" 2>/dev/null || true
}
trap stop_background EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [[ ${COLLECTIVE_CI_BACKGROUND:-1} == 1 ]]; then
  # Its own process group (set -m), so that an early exit stops all of it.
  set -m
  (
    renice -n 19 -p "$BASHPID" >/dev/null
    for step in "${build_order[@]}"; do
      echo "== $step: build started at $(date +%T), ${SECONDS} s in" >"$background/$step.log"
      if run_step "$step" build >>"$background/$step.log" 2>&1; then
        echo "== $step: built at $(date +%T), ${SECONDS} s in" >>"$background/$step.log"
        touch "$background/$step.built"
      else
        touch "$background/$step.failed"
        exit 1
      fi
    done
  ) &
  background_pid=$!
  set +m
  phase "tests (${build_order[*]} building in the background)"
else
  phase tests
fi
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900 "${main_exclusions[@]}"

# Waits for STEP's background build, prints its output; fails when it did.
await_build() {
  local step=$1 since=$SECONDS
  until [[ -e $background/$step.built || -e $background/$step.failed ]]; do
    if ! kill -0 "$background_pid" 2>/dev/null; then
      [[ -e $background/$step.built || -e $background/$step.failed ]] && break
      echo "test.sh: the background builds stopped before $step was built" >&2
      exit 1
    fi
    sleep 1
  done
  cat "$background/$step.log"
  if [[ -e $background/$step.failed ]]; then
    echo "test.sh: $step's build failed (above; $background/$step.log)" >&2
    exit 1
  fi
  echo "== $step: waited $((SECONDS - since)) s for its build"
}
declare -A phase_names=([pip_install]="pip install" [mpich_coll_tests]="MPICH collective tests"
                         [mpich]="MPICH build and tests"
                         [sanitizers]=sanitizers [fuzzing]=fuzzing)
# The MPICH phases' tests and the fuzzers run beside the sanitizers' tests,
# one after the other: each leaves cores idle (MPICH's ranks wait and
# yield, 325 of 1,234 core-seconds idle when each phase ran alone; the
# sanitized ranks wait on each other; a fuzzer is one process). Each
# beside step first awaits its own build, within the chain, so that the
# sanitizers' tests need not wait for the last build. Their output is
# printed and their result checked once the sanitizers' tests are done.
# With COLLECTIVE_CI_BACKGROUND=0 every phase runs alone, in turn.
beside_steps=()
for step in "${steps[@]}"; do
  [[ $step == mpich_coll_tests || $step == mpich || $step == fuzzing ]] && beside_steps+=("$step")
done
start_beside() {
  ((${#beside_steps[@]})) || return 0
  local step
  echo "== ${beside_steps[*]}: tests running beside the next phase ($background/STEP.test.log)"
  set -m
  (
    for step in "${beside_steps[@]}"; do
      if (await_build "$step" && run_step "$step" test) >"$background/$step.test.log" 2>&1; then
        touch "$background/$step.tested"
      else
        exit 1
      fi
    done
  ) &
  beside_pid=$!
  set +m
}
for step in "${steps[@]}"; do
  if [[ -n $background_pid ]]; then
    [[ " ${beside_steps[*]} " == *" $step "* ]] && continue
    phase "${phase_names[$step]}"
    await_build "$step"
    [[ $step == sanitizers && -z $beside_pid ]] && start_beside
    run_step "$step" test
  else
    phase "${phase_names[$step]}"
    run_step "$step" "build test"
  fi
done
[[ -n $background_pid && -z $beside_pid ]] && start_beside
if [[ -n $beside_pid ]]; then
  beside_status=0
  wait "$beside_pid" || beside_status=$?
  beside_pid=
  for step in "${beside_steps[@]}"; do
    phase "${phase_names[$step]}: its build and tests, beside the sanitizers'"
    [[ -e $background/$step.test.log ]] && cat "$background/$step.test.log"
    if [[ ! -e $background/$step.tested ]]; then
      echo "test.sh: $step's tests failed (above; $background/$step.test.log, exit $beside_status)" >&2
      exit 1
    fi
  done
fi
echo "== all tests passed (${SECONDS} s)"

#!/usr/bin/env bash
# Sanitizer jobs of CI (scripts/test.sh calls this when it exists):
#  1. AddressSanitizer + UndefinedBehaviorSanitizer: builds into build-asan
#     (COLLECTIVE_SANITIZE="address;undefined") and runs the reliability
#     tests (but the fault scenarios) and the unit, mpi and strategies tests, except
#     the multi-gigabyte and long-running ones (labels `large`, `load`),
#     the sweep's two large counts and the determinism sweeps (GTEST_FILTER).
#  2. ThreadSanitizer for the threaded strategies code: builds into
#     build-tsan and runs the strategies unit tests, when tests/strategies
#     exists.
# Self-contained and idempotent (reuses the build folders); exits non-zero
# on the first failure. SANITIZER_JOBS=asan or =tsan runs one job only.
# COLLECTIVE_CI_STEP=build only builds, =test only runs the tests of what
# an earlier build step built (scripts/test.sh builds while other tests
# run); unset, both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/mpirun_env.sh
jobs=$(nproc)
selected=${SANITIZER_JOBS:-asan tsan}
step=${COLLECTIVE_CI_STEP:-build test}
building() { [[ " $step " == *" build "* ]]; }
testing() { [[ " $step " == *" test "* ]]; }

# Open MPI is not built with ASan: its allocations that live until exit are
# reported as leaks, so leak checking is off (the load test checks memory
# growth instead). Everything else aborts with a report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Instrumented builds use -Og -g1: half the compile time of -O2 -g (363 s
# against 178 s for build-asan on 2 cores) for tests that run within 5% as
# fast, and line tables are all a sanitizer report needs. Sanitizers lose
# nothing at -Og; they see more than at -O2, which optimizes accesses away.
# build-asan is a unity build (COLLECTIVE_UNITY_BUILD=OFF: file by file):
# its 51 test targets took 498 CPU-s against 619 file by file. build-tsan
# compiles file by file, the one CI build that does (build/ and the other
# second builds batch files under CI=true, for time): each source of the
# library and the strategies is compiled on its own there, so a file that
# misses an include fails CI.
sanitizer_build_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo
                       "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-Og -g1 -DNDEBUG"
                       "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-Og -g1 -DNDEBUG")

configure() {  # folder, sanitizers, extra cmake args...
  local folder=$1 sanitizers=$2
  shift 2
  echo "-- sanitizers: configuring $folder (COLLECTIVE_SANITIZE=$sanitizers)"
  cmake -S "$root" -B "$root/$folder" "${sanitizer_build_flags[@]}" \
    -DCOLLECTIVE_SANITIZE="$sanitizers" -DCOLLECTIVE_BUILD_TESTS=ON -DCOLLECTIVE_BUILD_BENCH=OFF \
    "$@" >/dev/null
}

# The targets whose executables the tests that `ctest <selection>` picks
# run, so that an instrumented build compiles those and not the benchmarks
# and multi-gigabyte tests beside them.
targets_of_tests() {  # folder, ctest selection...
  local folder=$root/$1
  shift
  comm -12 <(ctest --test-dir "$folder" -N -V "$@" | grep -o "$folder/[^\"' ]*" | sed 's#.*/##' | sort -u) \
           <(cmake --build "$folder" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p' | sort -u)
}

if [[ " $selected " == *" asan "* ]]; then
  asan_reliability=(-L reliability -LE "large|load|fault|netns")
  asan_others=(-L "unit|mpi|strategies" -LE "large|load|reliability|fault")
fi
if [[ " $selected " == *" asan "* ]] && building; then
  configure build-asan "address;undefined" -DCMAKE_UNITY_BUILD="${COLLECTIVE_UNITY_BUILD:-ON}"
  mapfile -t asan_targets < <(targets_of_tests build-asan "${asan_reliability[@]}"
                              targets_of_tests build-asan "${asan_others[@]}")
  if ((${#asan_targets[@]} == 0)); then
    echo "sanitizers.sh: no test executables found in build-asan" >&2
    exit 1
  fi
  echo "-- sanitizers: building ${#asan_targets[@]} test targets in build-asan"
  cmake --build "$root/build-asan" -j "$jobs" --target "${asan_targets[@]}"
fi
if [[ " $selected " == *" asan "* ]] && testing; then
  # The fault scenarios (label `fault`: real processes killed, stopped or
  # starved, serial and seconds long each) run in the normal build; the
  # same waits, aborts and timeouts run instrumented in the reliability
  # tests here. Leaving them out keeps CI well under 15 minutes.
  echo "-- sanitizers: address;undefined: reliability tests (without the fault scenarios)"
  ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" --timeout 600 \
    "${asan_reliability[@]}"
  # The exhaustive sweep (Sweep/CollectiveSweep: every collective,
  # algorithm, dtype, op and root) runs instrumented at its boundary counts
  # 0, 1, 7 and 1023; its two large counts (2^20 + 3, and 2^18 + 3 per
  # rank) take 65% of its time under ASan and run the same code with more
  # elements, in full in build/. The determinism sweeps are left out: every
  # algorithm and collective runs instrumented in the reliability tests
  # above (boundary counts, numerics). Of the deterministic-reduction
  # sweeps the reduce_scatter/reduce one stays (it runs the ordered
  # reduce-scatter instrumented) and so do the refusals.
  echo "-- sanitizers: address;undefined: unit, mpi and strategies tests (the sweep at its boundary counts)"
  default_filter="-Sweep/*_count1048579*:Sweep/*_count262147*:DeterminismTest.*:LargeCountTest.*"
  default_filter+=":DeterministicReductionTest.AllReduce*:DeterministicReductionTest.VirtualNode*"
  GTEST_FILTER=${SANITIZER_GTEST_FILTER:-$default_filter} \
    ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" --timeout 600 \
    "${asan_others[@]}"
fi

if [[ " $selected " == *" tsan "* ]]; then
  if [[ -d $root/tests/strategies ]]; then
    # TSan needs the whole process instrumented; MPI is not, so only the
    # strategies tests that run without MPI are meaningful here.
    # Only the targets those tests need are built.
    tsan_selection=(-L unit -R '^strategies_')
    if building; then
      configure build-tsan thread -DCOLLECTIVE_BUILD_STRATEGIES=ON -DCMAKE_UNITY_BUILD=OFF
      mapfile -t tsan_targets < <(targets_of_tests build-tsan "${tsan_selection[@]}")
      if ((${#tsan_targets[@]} == 0)); then
        echo "sanitizers.sh: no strategies unit tests found in build-tsan" >&2
        exit 1
      fi
      cmake --build "$root/build-tsan" -j "$jobs" --target "${tsan_targets[@]}"
      echo "-- sanitizers: thread: built ${tsan_targets[*]}"
    fi
    if testing; then
      echo "-- sanitizers: thread: strategies unit tests"
      export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
      ctest --test-dir "$root/build-tsan" --output-on-failure -j "$jobs" --timeout 600 \
        "${tsan_selection[@]}"
    fi
  else
    echo "-- sanitizers: thread: skipped (no tests/strategies in this tree)"
  fi
fi
echo "-- sanitizers: passed ($step)"

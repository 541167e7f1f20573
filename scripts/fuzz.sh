#!/usr/bin/env bash
# Fuzzing job of CI (scripts/test.sh calls this when it exists): builds the
# libFuzzer targets of tests/fuzz with clang into build-fuzz and runs each
# for FUZZ_SECONDS (20 by default), one per core at a time, starting from
# the seeds in tests/fuzz/corpus/<target>/ plus what earlier runs found
# (kept in build-fuzz/corpus/). A crash, a sanitizer report or a broken invariant
# fails the job, naming the target and the input saved under
# build-fuzz/artifacts/. Needs clang and libclang-rt-14-dev
# (scripts/install_deps.sh --with-fuzz). COLLECTIVE_CI_STEP=build only
# builds, =test only runs what an earlier build step built (scripts/test.sh
# builds while other tests run); unset, both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${FUZZ_SECONDS:-20}
build=$root/build-fuzz
step=${COLLECTIVE_CI_STEP:-build test}
compiler=${FUZZ_CXX:-clang++}
if [[ " $step " == *" build "* ]]; then
  if ! command -v "$compiler" >/dev/null; then
    echo "fuzz.sh: $compiler not found; install clang and libclang-rt-14-dev (scripts/install_deps.sh --with-fuzz)" >&2
    exit 1
  fi
  echo "-- fuzz: building tests/fuzz with $compiler"
  # A unity build (COLLECTIVE_UNITY_BUILD=OFF: file by file): these sources
  # are compiled file by file in build-tsan (scripts/sanitizers.sh).
  cmake -S "$root/tests/fuzz" -B "$build" -DCMAKE_CXX_COMPILER="$compiler" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD="${COLLECTIVE_UNITY_BUILD:-ON}" >/dev/null
  cmake --build "$build" -j "$(nproc)"
fi
[[ " $step " == *" test "* ]] || exit 0
mkdir -p "$build/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
# hwloc parses XML with libxml2 when its plugin is installed, and libxml2
# leaks about 100 bytes on some malformed documents (reported from the
# unloaded plugin, so no suppression can name it). The fuzzers use hwloc's
# own XML parser instead, keeping leak detection on for the library's code.
export HWLOC_LIBXML=0
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# One target, its log in build-fuzz/<target>.log; a failure leaves
# build-fuzz/<target>.failed behind.
run_target() {
  local target=$1
  local corpus=$build/corpus/$target
  mkdir -p "$corpus"
  local seeds=()
  [[ -d $root/tests/fuzz/corpus/$target ]] && seeds=("$root/tests/fuzz/corpus/$target")
  # tests/fuzz/<target>.options: extra libFuzzer flags for one target (a
  # later flag overrides an earlier one), with a comment saying why.
  local extra=()
  if [[ -f $root/tests/fuzz/$target.options ]]; then
    mapfile -t extra < <(grep -v '^#' "$root/tests/fuzz/$target.options" | grep -v '^$')
  fi
  echo "-- fuzz: $target for ${seconds} s ${extra[*]}"
  if ! "$build/$target" "$corpus" "${seeds[@]}" -max_total_time="$seconds" -timeout=5 "${extra[@]}" \
       -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/artifacts/$target-" \
       >"$build/$target.log" 2>&1; then
    touch "$build/$target.failed"
  fi
}

# A fuzzer uses one core: run as many at once as there are cores.
parallel=$(nproc)
mapfile -t targets <"$build/fuzzers.txt"
rm -f "$build"/*.failed
for target in "${targets[@]}"; do
  [[ -n $target ]] || continue
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  run_target "$target" &
done
wait
failed=()
for target in "${targets[@]}"; do
  [[ -n $target ]] || continue
  if [[ -f $build/$target.failed ]]; then
    tail -40 "$build/$target.log" >&2
    failed+=("$target")
  else
    echo "-- fuzz: $target: $(grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$build/$target.log" | tail -1 || true)"
  fi
done
if ((${#failed[@]})); then
  echo "fuzz.sh: FAILED: ${failed[*]} (inputs in $build/artifacts/)" >&2
  exit 1
fi
echo "-- fuzz: passed"

#!/usr/bin/env bash
# MPICH's collective tests (test/mpi/coll of Debian's mpich source package),
# built against the MPI under test (mpicc) and run twice each: without and
# with the drop-in (LD_PRELOAD=libcollective_mpi.so). Every test that passes
# without it must pass with it. Prints a markdown table: per test, the two
# verdicts and how many calls the drop-in served / passed to PMPI_ (summed
# over ranks, from COLLECTIVE_PMPI_LOG=1). MPICH's code is fetched at run
# time (apt-get source) and never committed.
#
#   scripts/mpich_coll_tests.sh BUILD_DIR [WORK_DIR]
#     MPICH_TESTS=all     every testlist entry of the tests below (default)
#     MPICH_TESTS=ci      entries with at most MPICH_TESTS_MAX_RANKS (5) ranks: CI's subset
#     MPICH_TESTS_TIMEOUT seconds per run (default 180)
#     COLLECTIVE_CI_STEP=build: only fetch, configure and build MPICH's tests
#       (needs neither BUILD_DIR's drop-in nor a free machine: scripts/test.sh
#       does it while other tests run); =test: only run them; unset, both.
#     MPICH_TESTS_ONLY="NAME ..."  only these tests (of the list below)
#
# Needs root (or sudo) the first time: it adds a deb-src entry for Debian's
# main archive when apt has none, and runs apt-get update.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$(cd "${1:?usage: mpich_coll_tests.sh BUILD_DIR [WORK_DIR]}" && pwd)
work=${2:-$build_dir/mpich-coll}
selection=${MPICH_TESTS:-all}
run_timeout=${MPICH_TESTS_TIMEOUT:-180}
dropin=$build_dir/libcollective/pmpi/libcollective_mpi.so
step=${COLLECTIVE_CI_STEP:-build test}
source "$root/scripts/mpirun_env.sh"
if [[ " $step " == *" test "* && ! -f $dropin ]]; then
  echo "mpich_coll_tests: $dropin not built" >&2
  exit 1
fi
as_root=()
[[ $(id -u) -eq 0 ]] || as_root=(sudo)

# The tests that call MPI_Allreduce, MPI_Reduce_scatter_block,
# MPI_Reduce_scatter, MPI_Allgather, MPI_Allgatherv, MPI_Alltoall,
# MPI_Alltoallv, MPI_Bcast, MPI_Reduce or MPI_Barrier (what the drop-in
# serves), the gather and scatter ones (served where every rank can:
# docs/embedding.md), and the intercommunicator ones (what it must pass
# through), and the nonblocking ones (the MPI_I* forms of those, served by
# the _async calls; the others they call, MPI_Iscan & co., pass to MPI).
# Persistent and neighbourhood collectives and MPI_Alltoallw are not served
# and not run. (Every MPICH test also ends with an MPI_Allreduce in
# MTest_Finalize.)
tests=(allred allredmany allred2 allred3 allred4 allred5 allred6 reduce red3 red4 op_coll
       allgather2 allgather3 allgather_struct bcasttest bcastzerotype coll7 coll8 coll9 coll10
       coll12 longuser red_scat_block red_scat_block2 redscatblk3 redscatbkinter
       alltoall1 alltoallv alltoallv0 allgatherv2 allgatherv3 allgatherv4
       redscat redscat2 redscat3 redscatinter gather gather2 gatherv scattern scatter2 scatter3
       scatterv
       opland oplor oplxor opband opbor opbxor opprod opsum opmin opminloc opmax opmaxloc uoplong
       icallreduce icbcast icreduce icallgather icbarrier
       nonblocking nonblocking2 nonblocking3 iallred ibarrier)
if [[ -n ${MPICH_TESTS_ONLY:-} ]]; then
  read -ra only <<<"$MPICH_TESTS_ONLY"
  for name in "${only[@]}"; do
    [[ " ${tests[*]} " == *" $name "* ]] || { echo "mpich_coll_tests: $name is not in the list" >&2; exit 2; }
  done
  tests=("${only[@]}")
fi

# 1. The source: a deb-src entry, then apt-get source (download only).
mkdir -p "$work"
cd "$work"
if ! ls mpich_*.orig.tar.* >/dev/null 2>&1; then
  if ! grep -rqsE '^(Types: *deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "mpich_coll_tests: adding a deb-src entry (/etc/apt/sources.list.d/collective-deb-src.sources)"
    "${as_root[@]}" tee /etc/apt/sources.list.d/collective-deb-src.sources >/dev/null <<'SOURCES'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  fi
  "${as_root[@]}" apt-get update -qq
  apt-get source --download-only -qq mpich 2>&1 | grep -v "unsandboxed" || true
fi
if ! ls mpich_*.orig.tar.* >/dev/null 2>&1; then
  echo "mpich_coll_tests: apt-get source mpich fetched no source tarball into $work" >&2
  exit 1
fi
tarball=$(ls mpich_*.orig.tar.* | head -1)
version=${tarball#mpich_}; version=${version%.orig.tar.*}
tests_dir=$work/mpich-$version/test/mpi
if [[ ! -f $tests_dir/util/mtest.o && ! -f $tests_dir/util/libmtest_single.la ]]; then
  echo "mpich_coll_tests: configuring MPICH $version's test suite against $(mpicc -showme:version 2>/dev/null || mpicc -v 2>&1 | head -1)"
  tar -xf "$tarball" "mpich-$version/test/mpi"
  # MPICH's datatype pool (dtpools, which the coll tests link) calls
  # MPI_Type_hindexed, which Open MPI's mpi.h turns into a compile error
  # (removed in MPI-3.0): map it to its MPI-2 name, declarations as usual.
  cflags="-O2 -DOMPI_OMIT_MPI1_COMPAT_DECLS=1 -DMPI_Type_hindexed=MPI_Type_create_hindexed"
  (cd "$tests_dir" && ./configure CC=mpicc CFLAGS="$cflags" --disable-fortran --disable-cxx \
     --disable-romio --disable-spawn --disable-dtpools --disable-ft-tests --disable-perftest \
     >configure.log 2>&1 && make -C util -j2 >make.log 2>&1 && make -C dtpools -j2 >>make.log 2>&1) \
    || { echo "mpich_coll_tests: configure/make failed: see $tests_dir/configure.log, make.log" >&2; exit 1; }
fi

# The chosen testlist entries: NAME RANKS [arg=...]...
cd "$tests_dir/coll"
chosen_entries() {
  local name ranks rest
  while read -r name ranks rest; do
    [[ -z $name || $name == \#* || $name == @* ]] && continue
    [[ " ${tests[*]} " == *" $name "* ]] || continue
    [[ $selection == ci && $ranks -gt ${MPICH_TESTS_MAX_RANKS:-5} ]] && continue
    echo "$name $ranks $rest"
  done < testlist.in
}
if [[ " $step " == *" build "* ]]; then
  # Every chosen program at once (a failure shows in its row below).
  mapfile -t programs < <(chosen_entries | awk '{print $1}' | sort -u)
  echo "mpich_coll_tests: building ${#programs[@]} of MPICH's collective tests"
  make -k -j"$(nproc)" "${programs[@]}" >/dev/null 2>&1 || true
fi
[[ " $step " == *" test "* ]] || exit 0

# 2. Each chosen testlist entry, without and with the drop-in.
run() {  # run LOG RANKS PROGRAM ARGS... -> 0 when MPICH's test passed
  local log=$1 ranks=$2; shift 2
  timeout "$run_timeout" mpirun -n "$ranks" --oversubscribe --bind-to none "$@" </dev/null >"$log" 2>&1 \
    && grep -q "No Errors" "$log"
}
regressions=0 total_served=0
echo "| test | ranks | arguments | without drop-in | with drop-in | served | passed to PMPI |"
echo "|---|---|---|---|---|---|---|"
while read -r name ranks rest; do
  args=()
  for field in $rest; do [[ $field == arg=* ]] && args+=("${field#arg=}"); done
  make "$name" >/dev/null 2>&1 || { echo "| $name | $ranks | ${args[*]} | build failed | - | - | - |"; continue; }
  without=FAIL with=FAIL
  run "$work/$name.$ranks.plain.log" "$ranks" "./$name" "${args[@]}" && without=pass
  run "$work/$name.$ranks.dropin.log" "$ranks" -x LD_PRELOAD="$dropin" -x COLLECTIVE_PMPI_LOG=1 \
      "./$name" "${args[@]}" && with=pass
  # A run that crashed has no summary: grep finds nothing, which pipefail
  # must not turn into the script's end.
  served=$( (grep -oE "summary: served [0-9]+" "$work/$name.$ranks.dropin.log" || true) |
           awk '{s+=$3} END {print s+0}')
  passed=$( (grep -oE ", passed [0-9]+" "$work/$name.$ranks.dropin.log" || true) |
           awk '{s+=$3} END {print s+0}')
  total_served=$((total_served + served))
  if [[ $without == pass && $with != pass ]]; then
    regressions=$((regressions + 1))
    with="**FAIL** ($work/$name.$ranks.dropin.log)"
  fi
  echo "| $name | $ranks | ${args[*]:-} | $without | $with | $served | $passed |"
done < <(chosen_entries)
echo
echo "mpich_coll_tests: $regressions regressions; $total_served calls served by libcollective in all"
[[ $regressions -eq 0 ]]

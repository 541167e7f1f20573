#!/usr/bin/env bash
# Real applications under the MPI drop-in (libcollective_mpi.so), each run
# without and with it (LD_PRELOAD), the results compared:
#   - mpi4py's own test suite (Debian's mpi4py source package, run with the
#     installed python3-mpi4py) at the funneled thread level, 1-3 ranks:
#     the same set of passing and failing tests with and without;
#   - LAMMPS (Debian's lammps) on its melt example, 2 and 3 ranks: the same
#     thermo output, line for line.
# With the drop-in every run has COLLECTIVE_PMPI_LOG=1, and the summary of
# served calls is printed: a run in which nothing was served fails.
# Debian's code is fetched at run time (apt-get source) and never committed.
#
#   scripts/third_party_dropin.sh BUILD_DIR [WORK_DIR]
#     THIRD_PARTY_RANKS     mpi4py rank counts (default "1 2 3")
#     THIRD_PARTY_TIMEOUT   seconds per run (default 900; mpi4py's suite takes
#                           40 s at 1 rank, 200 s at 2 on a loaded 2-core machine)
#     MPI4PY_TESTS_DIR      mpi4py's test/ directory of the installed version,
#                           where apt-get source cannot fetch it (a mirror
#                           without source packages): used instead, and said
#
# mpi4py's dynamic-process tests (test_spawn, test_dynproc) are left out:
# they need MPI_Comm_spawn, which this machine's Open MPI cannot run (they
# hang until PMIx's timeout without the drop-in too), and they call nothing
# the drop-in serves.
#
# Needs root (or sudo) the first time: it installs python3-mpi4py and lammps
# when missing and adds a deb-src entry for the configured Debian suite when
# apt has none (as scripts/mpich_coll_tests.sh does), then apt-get update.
# Exit status: 0 when every comparison agrees.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$(cd "${1:?usage: third_party_dropin.sh BUILD_DIR [WORK_DIR]}" && pwd)
work=${2:-$build_dir/third-party}
rank_counts=${THIRD_PARTY_RANKS:-1 2 3}
run_timeout=${THIRD_PARTY_TIMEOUT:-900}
dropin=$build_dir/libcollective/pmpi/libcollective_mpi.so
source "$root/scripts/mpirun_env.sh" >/dev/null
[[ -f $dropin ]] || { echo "third_party_dropin: $dropin not built" >&2; exit 1; }
as_root=()
[[ $(id -u) -eq 0 ]] || as_root=(sudo)
# Debian's interpreter, which python3-mpi4py installs into (not a pyenv one).
python=/usr/bin/python3

# 1. Packages, and mpi4py's source for its tests.
missing=()
"$python" -c 'import mpi4py' 2>/dev/null || missing+=(python3-mpi4py)
command -v lmp >/dev/null || missing+=(lammps)
if ((${#missing[@]})); then
  echo "third_party_dropin: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
mkdir -p "$work"
cd "$work"
if [[ -n ${MPI4PY_TESTS_DIR:-} ]]; then
  tests_dir=$(cd "$MPI4PY_TESTS_DIR" && pwd)
  echo "third_party_dropin: mpi4py's tests from MPI4PY_TESTS_DIR=$tests_dir (not apt-get source)"
elif ! ls mpi4py_*.orig.tar.* >/dev/null 2>&1; then
  if ! grep -rqsE '^(Types: *deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    suite=$(. /etc/os-release && echo "${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}")
    echo "third_party_dropin: adding a deb-src entry for $suite (/etc/apt/sources.list.d/collective-deb-src.sources)"
    "${as_root[@]}" tee /etc/apt/sources.list.d/collective-deb-src.sources >/dev/null <<SOURCES
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  fi
  "${as_root[@]}" apt-get update -qq
  # The source of the installed version, so its tests match its code.
  version=$(dpkg-query -W -f '${source:Version}' python3-mpi4py)
  apt-get source --download-only -qq "mpi4py=$version" 2>&1 | grep -v "unsandboxed" || true
fi
if [[ -z ${MPI4PY_TESTS_DIR:-} ]]; then
  tarball=$(ls mpi4py_*.orig.tar.* 2>/dev/null | head -1)
  if [[ -z $tarball ]]; then
    echo "third_party_dropin: apt-get source mpi4py fetched nothing into $work (does the mirror" \
         "serve source packages?); set MPI4PY_TESTS_DIR to mpi4py's test/ directory of version" \
         "$(dpkg-query -W -f '${Version}' python3-mpi4py)" >&2
    exit 1
  fi
  upstream=${tarball#mpi4py_}; upstream=${upstream%.orig.tar.*}
  tests_dir=$work/mpi4py-$upstream/test
  [[ -d $tests_dir ]] || tar -xf "$tarball" "mpi4py-$upstream/test"
fi

failures=0
note() { echo "third_party_dropin: $*"; }
disagree() { echo "third_party_dropin: DIFFERENT: $*"; failures=$((failures + 1)); }

# Runs one job; with the drop-in when $1 is "with". Output in $2.
run_job() {
  local with=$1 out=$2
  shift 2
  local env_flags=()
  if [[ $with == with ]]; then env_flags=(-x "LD_PRELOAD=$dropin" -x COLLECTIVE_PMPI_LOG=1); fi
  timeout --signal=KILL "$run_timeout" "$MPIEXEC_EXE" "${env_flags[@]}" "$@" >"$out" 2>&1
}
MPIEXEC_EXE=${MPIEXEC:-mpirun}

# The drop-in's summaries (one per rank) must show served calls.
served_total() {
  grep -o 'summary: served [0-9]*' "$1" | awk '{s += $3} END {print s + 0}'
}
summaries() { grep -c 'libcollective_mpi rank [0-9]*: summary:' "$1" || true; }

# 2. mpi4py's suite at the funneled level. Its runner prints one line per
# test with -v ("testX (test_y.TestZ.testX) ... ok|FAIL|ERROR|skipped ..."),
# on every rank; each rank's output goes to a file of its own
# (--output-filename; Open MPI also still prints it all, with the
# drop-in's summaries, to the run's log), and the verdicts of every rank
# are compared.
# $1: the output directory of one run.
verdicts() {
  local file
  for file in "$1"/1/rank.*/stderr; do
    local rank=${file%/stderr}; rank=${rank##*rank.}
    grep -aoE '^[A-Za-z_0-9]+ \([A-Za-z_0-9.]+\) \.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)' "$file" |
      sed "s/^/rank $rank: /"
  done | sort
}
result_lines() { grep -ahE '^(OK|FAILED)' "$1"/1/rank.*/stderr | sort | uniq -c | tr -s ' ' | tr '\n' ';'; }
for ranks in $rank_counts; do
  for with in without with; do
    out=$work/mpi4py.np$ranks.$with.log
    rm -rf "$out.d"
    status=0
    # --thread-level sets mpi4py.rc.thread_level before MPI starts (this
    # mpi4py, 3.1, reads no MPI4PY_RC_* variable; later ones do: set too).
    run_job "$with" "$out" -n "$ranks" -x MPI4PY_RC_THREAD_LEVEL=funneled --output-filename "$out.d" \
      "$python" "$tests_dir/runtests.py" --no-builddir -v --thread-level funneled \
      -e spawn -e dynproc || status=$?
    note "mpi4py np$ranks $with the drop-in: exit $status, $(verdicts "$out.d" | wc -l) verdicts over $ranks ranks, $(result_lines "$out.d")"
    echo "$status" >"$out.status"
  done
  base=$work/mpi4py.np$ranks
  # The drop-in raises the thread level to MPI_THREAD_MULTIPLE (the rule in
  # docs/embedding.md), so a test mpi4py skips below it runs with it: a
  # test skipped without the drop-in and passing with it agrees (noted).
  verdicts "$base.without.log.d" >"$base.without.verdicts"
  verdicts "$base.with.log.d" >"$base.with.verdicts"
  "$python" - "$base.without.verdicts" "$base.with.verdicts" <<'PY' >"$base.with.compared"
import sys
without = {line.rsplit(" ... ", 1)[0]: line.rsplit(" ... ", 1)[1] for line in open(sys.argv[1]).read().splitlines()}
for line in open(sys.argv[2]).read().splitlines():
    test, verdict = line.rsplit(" ... ", 1)
    if verdict == "ok" and without.get(test) == "skipped":
        print(f"third_party_dropin: noted: {test} skipped without the drop-in, ok with it (thread level)", file=sys.stderr)
        verdict = "skipped"
    print(f"{test} ... {verdict}")
PY
  if ! diff "$base.without.verdicts" "$base.with.compared" >"$base.diff"; then
    disagree "mpi4py np$ranks: verdicts differ ($base.diff):"
    head -20 "$base.diff"
  fi
  if [[ $(cat "$base.without.log.status") != $(cat "$base.with.log.status") ]]; then
    disagree "mpi4py np$ranks: exit $(cat "$base.without.log.status") without, $(cat "$base.with.log.status") with"
  fi
  if (( $(verdicts "$base.without.log.d" | wc -l) == 0 )); then
    disagree "mpi4py np$ranks: no test verdicts in $base.without.log.d"
  fi
  if (( $(summaries "$base.with.log") != ranks || $(served_total "$base.with.log") == 0 )); then
    disagree "mpi4py np$ranks: the drop-in served nothing or did not summarize every rank"
  fi
  note "mpi4py np$ranks: served $(served_total "$base.with.log") calls over $ranks ranks"
done

# 3. LAMMPS's melt example: thermo lines identical.
thermo() {
  awk '/^ *Step /{on = 1} on && /^Loop time/{on = 0} on' "$1" | grep -v '^libcollective_mpi'
}
melt=/usr/share/lammps/examples/melt/in.melt
for ranks in 2 3; do
  for with in without with; do
    out=$work/lammps.np$ranks.$with.log
    (cd "$work" && run_job "$with" "$out" -n "$ranks" lmp -in "$melt" -log none -echo none) ||
      disagree "lammps np$ranks $with the drop-in: exit $?"
  done
  base=$work/lammps.np$ranks
  if (( $(thermo "$base.without.log" | wc -l) < 2 )); then
    disagree "lammps np$ranks: no thermo output in $base.without.log"
  elif ! diff <(thermo "$base.without.log") <(thermo "$base.with.log") >"$base.diff"; then
    disagree "lammps np$ranks: thermo output differs ($base.diff)"
    head -20 "$base.diff"
  fi
  if (( $(summaries "$base.with.log") != ranks || $(served_total "$base.with.log") == 0 )); then
    disagree "lammps np$ranks: the drop-in served nothing or did not summarize every rank"
  fi
  note "lammps np$ranks: $(thermo "$base.without.log" | wc -l) thermo lines compared; served $(served_total "$base.with.log") calls over $ranks ranks"
  grep -a 'libcollective_mpi rank 0: summary' "$base.with.log" | head -1
done

if ((failures)); then
  note "$failures comparisons differ"
  exit 1
fi
note "every comparison agrees"

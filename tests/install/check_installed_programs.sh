#!/usr/bin/env bash
# check_installed_programs.sh BUILD_DIR WORK_DIR EXPECTED...
# Installs into a fresh prefix and runs every program in <prefix>/bin as a
# user would, without LD_LIBRARY_PATH: `--help` under `mpirun -np 1` (the
# programs that need MPI initialize it). Each must exit 0 with no loader
# error. EXPECTED names the programs this build must have installed.
set -euo pipefail
build_dir=$1 work=$2
shift 2
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
unset LD_LIBRARY_PATH

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

for name in "$@"; do
  [[ -x $prefix/bin/$name ]] || fail "$name is not installed in $prefix/bin"
done
mapfile -t programs < <(find "$prefix/bin" -type f -perm -u+x | sort)
[[ ${#programs[@]} -gt 0 ]] || fail "no programs in $prefix/bin"

loader_error='error while loading shared libraries|cannot open shared object file'
for program in "${programs[@]}"; do
  name=${program#"$prefix/bin/"}
  if missing=$(ldd "$program" 2>&1 | grep 'not found'); then
    fail "$name: the loader cannot find:"$'\n'"$missing"
  fi
  status=0
  output=$("$MPIEXEC" -n 1 env -u LD_LIBRARY_PATH "$program" --help 2>&1) || status=$?
  if ((status != 0)) || grep -qE "$loader_error" <<<"$output"; then
    fail "$name --help under mpirun -np 1 exited $status:"$'\n'"$output"
  else
    echo "$name --help: exit 0, $(wc -l <<<"$output") lines"
  fi
done
((failures == 0)) || exit 1
echo "installed programs: ${#programs[@]} run from $prefix/bin, OK"

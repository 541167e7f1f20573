#!/usr/bin/env bash
# `pip install .` as a user runs it: a fresh venv (with the system's
# site-packages, where Debian's numpy lives), the checkout built and installed
# into it offline (--no-build-isolation --no-deps --no-index), then the
# installed package imported under mpirun at 1-4 ranks, with no build-tree
# path and no LD_LIBRARY_PATH, and an all-reduce checked on every element.
# Usage: pip_install_check.sh SOURCE_DIR SCRATCH_DIR PYTHON MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
source_dir=$1 scratch=$2 python=$3 mpiexec=$4
shift 4
venv=$scratch/venv
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
# The CMake build folder persists in the scratch folder: a rerun is incremental.
COLLECTIVE_PIP_BUILD_DIR=$scratch/build \
  "$venv/bin/python" -m pip install --no-build-isolation --no-deps --no-index -q "$source_dir"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for file in __init__.py __init__.pyi py.typed torch.py; do
  test -f "$site/collective/$file" || { echo "pip install: $site/collective/$file missing" >&2; exit 1; }
done
ls "$site"/collective/_collective*.so "$site"/collective/libcollective.so.* >/dev/null
check='
import sys, numpy as np, collective
assert collective.__file__.startswith(sys.argv[1]), ("imported from", collective.__file__)
c = collective.Communicator.world()
n = 1000
x = np.arange(n, dtype=np.int64) * (c.rank + 1)
c.all_reduce(x)
expected = np.arange(n, dtype=np.int64) * (c.size * (c.size + 1) // 2)
bad = np.nonzero(x != expected)[0]
assert bad.size == 0, f"rank {c.rank}: index {bad[0]} expected {expected[bad[0]]} got {x[bad[0]]}"
'
for ranks in 1 2 3 4; do
  env -u LD_LIBRARY_PATH -u PYTHONPATH "$mpiexec" -n "$ranks" "$@" \
    "$venv/bin/python" -c "$check" "$venv"
  echo "pip-installed collective: all_reduce exact at $ranks ranks"
done

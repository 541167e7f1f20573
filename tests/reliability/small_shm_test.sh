#!/usr/bin/env bash
# Runs small_shm_test under mpirun in a private mount namespace with a small
# tmpfs on /dev/shm (Open MPI's own shared memory goes to a scratch
# directory instead). Needs root (or CAP_SYS_ADMIN) for unshare and mount;
# exits 77 (ctest: skipped) where that is not allowed.
#   small_shm_test.sh <mpiexec> <test binary> <ranks> <tmpfs size> <fitted|unavailable> [VAR=value...]
set -euo pipefail
mpiexec=$1 binary=$2 ranks=$3 size=$4 expect=$5
shift 5
if ! unshare -m true 2>/dev/null; then
  echo "SKIP: cannot make a mount namespace here (not root?)"
  exit 77
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
echo "/dev/shm: a $size tmpfs; $ranks ranks; the node segment must be: $expect"
unshare -m bash -c 'mount --make-rprivate / && mount -t tmpfs -o size="$0" tmpfs /dev/shm && exec "$@"' \
  "$size" env SMALL_SHM_EXPECT="$expect" "$@" \
  "$mpiexec" -n "$ranks" --oversubscribe --bind-to none \
  --mca btl_vader_backing_directory "$scratch" "$binary"

#!/usr/bin/env bash
# check_install.sh BUILD_DIR WORK_DIR CONSUMER_SOURCE
set -euo pipefail
build_dir=$1 work=$2 consumer=$3
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build_dir" --prefix "$prefix" >/dev/null

# The public headers must not need MPI, hwloc or CUDA.
if grep -rlE '#include <(mpi|hwloc|cuda|nccl)' "$prefix/include/collective"; then
  echo "FAIL: a public header includes MPI/hwloc/CUDA/NCCL" >&2; exit 1
fi

# 1. find_package(collective)
cmake -S "$consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$MPIEXEC" -n 2 --oversubscribe "$work/cmake-build/consumer"

# 2. pkg-config, compiled with the MPI wrapper only for MPI_Init.
export PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name collective.pc)")
mpicxx -o "$work/consumer-pc" "$consumer/consumer.cc" $(pkg-config --cflags --libs collective)
"$MPIEXEC" -n 2 --oversubscribe "$work/consumer-pc"
echo "install_consumer: OK"

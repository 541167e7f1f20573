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
# 3. The C API and the Fortran module (where there is a Fortran compiler):
# find_package(collective) with collective::collective_c and
# collective::collective_fortran, then pkg-config with the MPI wrappers.
consumer_c=$(dirname "$consumer")/consumer_c
with_fortran=OFF
if [[ -f "$prefix/include/collective/fortran/collective.mod" ]] && command -v mpifort >/dev/null; then
  with_fortran=ON
fi
cmake -S "$consumer_c" -B "$work/cmake-build-c" -DCMAKE_PREFIX_PATH="$prefix" \
      -DWITH_FORTRAN=$with_fortran >/dev/null
cmake --build "$work/cmake-build-c" >/dev/null
"$MPIEXEC" -n 2 --oversubscribe "$work/cmake-build-c/consumer_c"
mpicc -o "$work/consumer-c-pc" "$consumer_c/consumer.c" $(pkg-config --cflags --libs collective_c)
"$MPIEXEC" -n 3 --oversubscribe "$work/consumer-c-pc"
if [[ $with_fortran == ON ]]; then
  "$MPIEXEC" -n 2 --oversubscribe "$work/cmake-build-c/consumer_fortran"
  mpifort -o "$work/consumer-fortran-pc" "$consumer_c/consumer.f90" \
          $(pkg-config --cflags --libs collective_fortran)
  "$MPIEXEC" -n 3 --oversubscribe "$work/consumer-fortran-pc"
else
  echo "install_consumer: no Fortran module installed or no mpifort: Fortran consumer skipped"
fi
# The MPI drop-in is installed beside the libraries.
test -f "$(dirname "$PKG_CONFIG_PATH")/libcollective_mpi.so" || {
  echo "FAIL: libcollective_mpi.so is not installed" >&2; exit 1; }
echo "install_consumer: OK"

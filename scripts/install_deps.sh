#!/usr/bin/env bash
# Installs the Debian packages libcollective needs, only those missing.
# Idempotent and quiet when everything is there. Runs as root (or through
# sudo when available). Usage: scripts/install_deps.sh [--with-plot] [--with-fuzz] [--with-mpich] [--with-python] [--with-torch]
# [--with-slurm]. --with-slurm adds Debian's Slurm (controller, node daemon,
# srun) for scripts/slurm_cluster.sh, which runs its own daemons with its
# own config; Debian's services need /etc/slurm/slurm.conf, which nothing
# here writes, so they stay down (munge comes as a dependency, unused).
# --with-mpich adds Debian's MPICH beside Open MPI, which stays the default
# (mpicc, mpirun, mpi.h): see the end of this script. --with-python adds
# what `import collective` needs to build and test (pybind11, numpy, mpi4py,
# pytest for Debian's /usr/bin/python3; docs/python.md). --with-torch adds
# those and python3-torch (large: only the torch.distributed backend's tests
# need it).
set -euo pipefail

packages=(
  g++ make cmake pkg-config git ca-certificates   # toolchain
  openmpi-bin libopenmpi-dev                       # MPI runtime and headers
  gfortran                                         # the Fortran module and its tests
  libhwloc-dev                                     # topology discovery
  libboost-program-options-dev                     # collective_bench's command line
  libgtest-dev                                     # tests
  python3 iproute2 procps                          # test drivers, network namespaces, ps
  clang-format                                     # scripts/check_format.sh (Debian's: 14)
)
for arg in "$@"; do
  case "$arg" in
    --with-plot) packages+=(python3-matplotlib) ;;
    --with-fuzz) packages+=(clang libclang-rt-14-dev) ;;
    --with-mpich) packages+=(mpich libmpich-dev) ;;
    --with-slurm) packages+=(slurmctld slurmd slurm-client) ;;
    --with-python) packages+=(python3-dev python3-pybind11 python3-numpy python3-mpi4py python3-pytest python3-pip python3-venv python3-setuptools python3-wheel) ;;
    --with-torch) packages+=(python3-dev python3-pybind11 python3-numpy python3-mpi4py python3-pytest python3-torch) ;;
    *) echo "install_deps.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done

# Debian's MPICH registers the same alternatives as Open MPI (mpicc, mpirun,
# the mpi.h directory); Open MPI's higher priority keeps them in auto mode,
# but a machine whose alternatives were set by hand may differ. Open MPI
# stays the default here: CMake's plain `mpicc` and every script expect it
# (-DCOLLECTIVE_MPI=mpich picks MPICH explicitly).
keep_openmpi_default() {
  local multiarch name target
  multiarch=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
  for name in mpi mpirun "mpi-$multiarch"; do
    target=$(update-alternatives --query "$name" 2>/dev/null | sed -n 's/^Alternative: \(.*openmpi.*\)/\1/p' | head -1)
    [[ -n $target ]] || continue
    if ! update-alternatives --query "$name" | grep -q "^Value: .*openmpi"; then
      echo "install_deps.sh: alternative $name left Open MPI; setting it back to $target"
      "${as_root[@]}" update-alternatives --set "$name" "$target"
    fi
  done
}

[[ ${#missing[@]} -eq 0 ]] && exit 0

as_root=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install_deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  as_root=(sudo)
fi
echo "install_deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
keep_openmpi_default

#!/usr/bin/env bash
# Installs the Debian packages libcollective needs, only those missing.
# Idempotent and quiet when everything is there. Runs as root (or through
# sudo when available). Usage: scripts/install_deps.sh [--with-plot] [--with-fuzz]
set -euo pipefail

packages=(
  g++ make cmake pkg-config git ca-certificates   # toolchain
  openmpi-bin libopenmpi-dev                       # MPI runtime and headers
  gfortran                                         # the Fortran module and its tests
  libhwloc-dev                                     # topology discovery
  libboost-program-options-dev                     # collective_bench's command line
  libgtest-dev                                     # tests
  python3 iproute2 procps                          # test drivers, network namespaces, ps
)
for arg in "$@"; do
  case "$arg" in
    --with-plot) packages+=(python3-matplotlib) ;;
    --with-fuzz) packages+=(clang libclang-rt-14-dev) ;;
    *) echo "install_deps.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done
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

# Sourced by the scripts: lets Open MPI run as root and with more ranks
# than cores (both are the case on the project's machines and in CI).
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# When a rank exits non-zero mpirun signals the others, then sleeps this
# many seconds before killing them and exiting (default 1, about 2 s per
# failing job): the programs here do not handle SIGTERM, so it only waits.
export OMPI_MCA_odls_base_sigkill_timeout=0

# The binding for N ranks on this machine: one core each where there are
# enough cores, else none (more ranks than cores share them; Open MPI would
# refuse to bind two ranks to one core). Prints the mpirun flags.
binding_for() {
  if (($1 <= $(nproc))); then echo "--bind-to core"; else echo "--oversubscribe --bind-to none"; fi
}

# Open MPI opens its PSM/PSM2 and OFI transports in every process, 0.2 s
# each here (the PSM libraries search for Omni-Path hardware). Where the
# hardware they drive is absent they can never be chosen, so they are left
# out, unless the user named the transports already.
if [[ -z ${OMPI_MCA_mtl:-} ]]; then
  unusable=()
  omni_path=0  # an Omni-Path adapter serves PSM2 and OFI alike
  compgen -G '/dev/hfi1*' >/dev/null && omni_path=1
  ((omni_path)) || compgen -G '/dev/ipath*' >/dev/null || unusable+=(psm psm2)
  ((omni_path)) || compgen -G '/dev/infiniband/*' >/dev/null || compgen -G '/dev/cxi*' >/dev/null ||
    unusable+=(ofi)
  if ((${#unusable[@]})); then
    OMPI_MCA_mtl="^$(IFS=,; echo "${unusable[*]}")"
    export OMPI_MCA_mtl
  fi
  unset unusable omni_path
fi

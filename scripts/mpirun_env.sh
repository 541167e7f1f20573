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

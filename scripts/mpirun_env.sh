# Sourced by the scripts: lets Open MPI run as root and with more ranks
# than cores (both are the case on the project's machines and in CI).
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

# COLLECTIVE_MPIEXEC_LOCAL_FLAGS: what the launcher needs to start more
# ranks than cores on this machine, unbound. Open MPI's mpiexec refuses
# oversubscription unless asked (--oversubscribe) and binds by default;
# MPICH's (Hydra) does neither and rejects those flags. Decided from what
# the launcher FindMPI found says it is. Used by the tests of the embedding
# layers (tests/capi, tests/pmpi), which also run against MPICH.
execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version
                OUTPUT_VARIABLE COLLECTIVE_MPIEXEC_VERSION ERROR_VARIABLE COLLECTIVE_MPIEXEC_VERSION
                TIMEOUT 30)
if(COLLECTIVE_MPIEXEC_VERSION MATCHES "HYDRA|MPICH")
  set(COLLECTIVE_MPI_FLAVOR mpich)
  set(COLLECTIVE_MPIEXEC_LOCAL_FLAGS "")
else()
  set(COLLECTIVE_MPI_FLAVOR openmpi)
  set(COLLECTIVE_MPIEXEC_LOCAL_FLAGS --oversubscribe --bind-to none)
endif()
message(STATUS "libcollective: MPI is ${COLLECTIVE_MPI_FLAVOR} (${MPIEXEC_EXECUTABLE})")

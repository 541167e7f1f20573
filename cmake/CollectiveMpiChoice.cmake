# Which MPI to build against. COLLECTIVE_MPI=openmpi or mpich picks that
# implementation's compiler wrappers and launcher as Debian installs them
# side by side (mpicc.openmpi / mpicc.mpich, mpiexec.openmpi /
# mpiexec.mpich), whatever `mpicc` on PATH points to. Empty (the default)
# leaves FindMPI's own search: the `mpicc` on PATH, or the MPI_C_COMPILER
# and MPIEXEC_EXECUTABLE given on the command line (FindMPI's convention).
set(COLLECTIVE_MPI "" CACHE STRING "MPI implementation: openmpi, mpich, or empty for FindMPI's default")
set_property(CACHE COLLECTIVE_MPI PROPERTY STRINGS "" openmpi mpich)
if(COLLECTIVE_MPI)
  if(NOT COLLECTIVE_MPI MATCHES "^(openmpi|mpich)$")
    message(FATAL_ERROR "COLLECTIVE_MPI=${COLLECTIVE_MPI}: expected openmpi, mpich or empty")
  endif()
  find_program(COLLECTIVE_MPICC mpicc.${COLLECTIVE_MPI})
  find_program(COLLECTIVE_MPIEXEC mpiexec.${COLLECTIVE_MPI})
  if(NOT COLLECTIVE_MPICC OR NOT COLLECTIVE_MPIEXEC)
    message(FATAL_ERROR "COLLECTIVE_MPI=${COLLECTIVE_MPI}: mpicc.${COLLECTIVE_MPI} or "
                        "mpiexec.${COLLECTIVE_MPI} not found (Debian: install "
                        "${COLLECTIVE_MPI}-bin / lib${COLLECTIVE_MPI}-dev; "
                        "scripts/install_deps.sh --with-mpich)")
  endif()
  set(MPI_C_COMPILER ${COLLECTIVE_MPICC} CACHE FILEPATH "MPI C compiler wrapper" FORCE)
  set(MPIEXEC_EXECUTABLE ${COLLECTIVE_MPIEXEC} CACHE FILEPATH "MPI launcher" FORCE)
  find_program(COLLECTIVE_MPIF90 mpif90.${COLLECTIVE_MPI})
  if(COLLECTIVE_MPIF90)
    set(MPI_Fortran_COMPILER ${COLLECTIVE_MPIF90} CACHE FILEPATH "MPI Fortran compiler wrapper" FORCE)
  endif()
endif()

// MPI for a Python process: initialised on first use (at
// MPI_THREAD_MULTIPLE, through collective::Environment) unless the program
// or mpi4py already did, and finalised at interpreter exit only if it was
// initialised here (docs/python.md).
#pragma once

#include <pybind11/pybind11.h>

namespace collective::python {

// Initialises MPI when no one has; raises collective.InvalidArgumentError
// after MPI_Finalize (MPI cannot start again).
void ensure_mpi();

// Registers collective.finalize() and its atexit hook.
void bind_environment(pybind11::module_& module);

}  // namespace collective::python

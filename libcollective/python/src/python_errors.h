// The C++ error hierarchy as Python exceptions of the same names and texts
// (collective.Error, InvalidArgumentError, MismatchError, UnsupportedError,
// CommunicationError, TimeoutError, PeerFailedError), each carrying
// `operation`, `rank` and `cause` (PeerFailedError also `failed_ranks`). InvalidArgumentError is
// also a ValueError and TimeoutError also Python's TimeoutError, so generic handlers catch them.
#pragma once

#include <pybind11/pybind11.h>

namespace collective::python {

void register_errors(pybind11::module_& module);

}  // namespace collective::python

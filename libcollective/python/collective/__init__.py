"""libcollective from Python: collectives over MPI, shared memory and NCCL.

Run under mpirun; every rank makes the same calls in the same order::

    import numpy as np
    import collective

    comm = collective.Communicator.world()
    x = np.full(1024, comm.rank, dtype=np.float32)
    comm.all_reduce(x)                      # in place: x = sum over ranks
    assert (x == sum(range(comm.size))).all()

Buffers are anything with the buffer protocol (numpy arrays, memoryview,
array.array, bytearray), C-contiguous, used in place without a copy; count
and element type come from the buffer (dtype="bfloat16" for 2-byte raw
elements). Every call blocks until its result is in place and releases the
GIL meanwhile; each collective's `_async` form starts it and returns a
collective.Work (wait(), test(), is_completed()), and its `_init` form makes a
collective.Plan whose start() repeats it. Errors are collective.Error and its
subclasses, with the C++ library's texts. MPI is initialised on first use unless mpi4py or the
program already did (docs/python.md).
"""

from ._collective import (  # noqa: F401
    CommunicationError,
    Communicator,
    Error,
    InvalidArgumentError,
    MismatchError,
    PeerFailedError,
    Plan,
    TimeoutError,
    UnsupportedError,
    Work,
    __version__,
    built_with_nccl,
    finalize,
    host_name,
    init,
    initialized,
)

import atexit as _atexit

# MPI_Finalize at exit, only where this module initialised MPI.
_atexit.register(finalize)

__all__ = [
    "Communicator",
    "Work",
    "Plan",
    "Error",
    "InvalidArgumentError",
    "MismatchError",
    "UnsupportedError",
    "CommunicationError",
    "TimeoutError",
    "PeerFailedError",
    "init",
    "initialized",
    "finalize",
    "host_name",
    "built_with_nccl",
    "__version__",
]

"""All-reduce timing from Python: the Python call beside the C++ call and mpi4py's Allreduce.

    mpirun -np 2 /usr/bin/python3 libcollective/python/examples/allreduce_bench.py

(with PYTHONPATH=build/python from a build tree, or nothing once installed;
options: --iters N, --sizes 8,65536,1048576 in bytes).

Each size runs three calls on the same float32 buffers and communicator, in
a rotating order, each after a barrier:
  python  comm.all_reduce(send, recv), timed around the Python call;
  c++     the same C++ Communicator::all_reduce, timed inside C++
          (collective._collective._time_all_reduce_cxx), so python - c++
          is what the binding adds;
  mpi4py  MPI.Allreduce on the same buffers (when mpi4py is present).
It prints the median of each (the slowest rank's time of each iteration),
python/c++, python - c++ and mpi4py/python.
"""
import argparse
import sys
import time

import numpy as np

import collective
from collective._collective import _time_all_reduce_cxx

try:
    from mpi4py import MPI
except ImportError:  # mpi4py is optional
    MPI = None


def slowest(comm, seconds):
    """The slowest rank's time of one iteration, on every rank."""
    out = np.array([seconds])
    comm.all_reduce(out, op="max")
    return float(out[0])


def one_call(which, comm, theirs, send, recv):
    if which == "python":
        start = time.perf_counter()
        comm.all_reduce(send, recv)
        return time.perf_counter() - start
    if which == "c++":
        return _time_all_reduce_cxx(comm, send, recv)
    start = time.perf_counter()
    theirs.Allreduce(send, recv)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--sizes", default="8,65536,1048576")
    args = parser.parse_args()
    comm = collective.Communicator.world()
    theirs = comm.to_mpi4py() if MPI else None
    calls = ["python", "c++"] + (["mpi4py"] if theirs is not None else [])
    if comm.rank == 0:
        print(f"# {comm.size} ranks, float32 sum, median of {args.iters} iterations (us), "
              f"Python {sys.version.split()[0]}")
        print(f"{'bytes':>9} {'python':>9} {'c++':>9} {'py/c++':>7} {'py-c++':>8} "
              f"{'mpi4py':>9} {'mpi4py/py':>9}")
    warmup = 10
    for size in (int(s) for s in args.sizes.split(",")):
        send = np.ones(size // 4, np.float32)
        recv = np.empty_like(send)
        times = {which: [] for which in calls}
        for i in range(args.iters + warmup):
            order = calls[i % len(calls):] + calls[:i % len(calls)]
            for which in order:
                recv.fill(0)
                comm.barrier()
                elapsed = slowest(comm, one_call(which, comm, theirs, send, recv))
                if i >= warmup:
                    times[which].append(elapsed)
                wrong = np.nonzero(recv != comm.size)[0]
                if wrong.size:
                    raise SystemExit(f"rank {comm.rank}: {which} at {size} B: index {wrong[0]} is "
                                     f"{recv[wrong[0]]}, expected {comm.size}")
        if comm.rank == 0:
            med = {which: float(np.median(t)) * 1e6 for which, t in times.items()}
            mpi = med.get("mpi4py", float("nan"))
            print(f"{size:>9} {med['python']:>9.2f} {med['c++']:>9.2f} "
                  f"{med['python'] / med['c++']:>7.2f} {med['python'] - med['c++']:>8.2f} "
                  f"{mpi:>9.2f} {mpi / med['python']:>9.2f}")
    if theirs is not None:
        theirs.Free()


if __name__ == "__main__":
    main()

"""All-reduce timing from Python: collective's call beside mpi4py's Allreduce.

    mpirun -np 2 /usr/bin/python3 libcollective/python/examples/allreduce_bench.py

(with PYTHONPATH=build/python from a build tree, or nothing once installed).
Each size runs both calls on the same float32 buffers, alternating which goes
first, and prints the median of each and their ratio, as rank 0 sees them
(the slowest rank's time of each iteration).
"""
import sys
import time

import numpy as np

import collective

try:
    from mpi4py import MPI
except ImportError:  # mpi4py is optional: ours alone
    MPI = None


def slowest(comm, seconds):
    """The slowest rank's time of one iteration, on every rank."""
    out = np.array([seconds])
    comm.all_reduce(out, op="max")
    return float(out[0])


def main():
    comm = collective.Communicator.world()
    theirs = comm.to_mpi4py() if MPI else None
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    if comm.rank == 0:
        print(f"# {comm.size} ranks, float32 sum, median of {iters} iterations (us)")
        print(f"{'bytes':>10} {'collective':>11} {'mpi4py':>9} {'mpi4py/ours':>12}")
    size = 8
    while size <= 64 << 20:
        send = np.ones(size // 4, np.float32)
        recv = np.empty_like(send)
        ours, mpis = [], []
        for i in range(iters + 5):
            order = (0, 1) if i % 2 == 0 else (1, 0)
            for which in order:
                comm.barrier()
                start = time.perf_counter()
                if which == 0:
                    comm.all_reduce(send, recv)
                elif theirs is not None:
                    theirs.Allreduce(send, recv)
                elapsed = slowest(comm, time.perf_counter() - start)
                if i >= 5:
                    (ours if which == 0 else mpis).append(elapsed)
            if recv[0] != comm.size or recv[-1] != comm.size:
                raise SystemExit(f"rank {comm.rank}: wrong result at {size} B")
        if comm.rank == 0:
            a = np.median(ours) * 1e6
            b = np.median(mpis) * 1e6 if theirs is not None else float("nan")
            print(f"{size:>10} {a:>11.2f} {b:>9.2f} {b / a:>12.2f}")
        size *= 8
    if theirs is not None:
        theirs.Free()


if __name__ == "__main__":
    main()

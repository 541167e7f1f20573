#!/usr/bin/env python3
"""Medians of several allreduce_timing runs, split by the machine's state.

  python3 scripts/median_by_machine_state.py run1.txt run2.txt ...

This VM's cross-core communication swings between a fast state and one 2.5-4x
slower (docs/performance_history.md, "This machine's two states"), for MPI_Allreduce
as much as for libcollective, and a state lasts from seconds to minutes. Each
row (size) of each run is classed by Open MPI's own time alone, never by
ours: "fast" when MPI_Allreduce's time is within 1.5x of its best over the
runs at that size, "slow" otherwise. Prints, per size, how many runs fell in
each state and the median of every column within each state, as markdown.
"""
import statistics
import sys


def rows_of(path):
    rows = {}
    for line in open(path):
        f = line.split()
        if not f or line.startswith("#"):
            continue
        if f[0] == "bytes":
            columns = f
            continue
        if f[0].isdigit():
            rows[int(f[0])] = dict(zip(columns, f))  # duplicate names keep the last
            rows[int(f[0])]["_fields"] = f
    return rows


def size(b):
    for unit, name in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= unit:
            return "%d %s" % (b // unit, name)
    return "%d B" % b


def main(paths):
    runs = [rows_of(p) for p in paths]
    print("| size | state (runs) | MPI_Allreduce µs | AUTO µs | AUTO × MPI | allocated µs | allocated × MPI | copy µs | AUTO / copy |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for b in sorted(runs[0]):
        rows = [run[b] for run in runs if b in run]
        best = min(float(r["mpi_us"]) for r in rows)
        for state, members in (("fast", [r for r in rows if float(r["mpi_us"]) <= 1.5 * best]),
                               ("slow", [r for r in rows if float(r["mpi_us"]) > 1.5 * best])):
            if not members:
                continue
            med = lambda key: statistics.median(float(r[key]) for r in members)
            # allocated_us sits at field 6 (the x_mpi/x_copy names repeat)
            alloc = statistics.median(float(r["_fields"][6]) for r in members)
            mpi, auto, copy = med("mpi_us"), med("auto_us"), med("copy_us")
            bound = "%.2f" % (auto / copy) if copy >= 0.5 else "-"
            print("| %s | %s (%d) | %.2f | %.2f | **%.2f** | %.2f | %.2f | %.2f | %s |" % (
                size(b), state, len(members), mpi, auto, mpi / auto, alloc, mpi / alloc, copy, bound))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])

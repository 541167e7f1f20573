#!/usr/bin/env python3
"""Median, cell by cell, of several allreduce_timing outputs (same options).

  python3 scripts/median_of_runs.py run1.txt run2.txt run3.txt

Prints the header lines of the first run, the load average of every run,
and the table with each numeric cell replaced by its median over the runs.
"""
import statistics
import sys


def table(path):
    header, rows, loads = [], [], []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                header.append(line.rstrip("\n"))
                if "load average" in line:
                    loads.append(line.split("load average")[1].strip())
                continue
            fields = line.split()
            if fields and fields[0] == "bytes":
                columns = fields
            elif fields and fields[0].isdigit():
                rows.append(fields)
    return header, columns, rows, loads


def main(paths):
    runs = [table(p) for p in paths]
    header, columns, _, _ = runs[0]
    print("\n".join(h.split(", load average")[0] for h in header))
    print("# runs: %d; load average (1, 5, 15 min) at the start of each: %s"
          % (len(runs), "; ".join(run[3][0] if run[3] else "?" for run in runs)))
    print(" ".join("%14s" % c for c in columns))
    for i, row in enumerate(runs[0][2]):
        cells = []
        for j, value in enumerate(row):
            try:
                values = [float(run[2][i][j]) for run in runs]
                cells.append("%14.3f" % statistics.median(values) if j else "%14d" % int(values[0]))
            except (ValueError, IndexError):
                cells.append("%14s" % value)
        print(" ".join(cells))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])

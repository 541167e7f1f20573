#!/usr/bin/env python3
"""Per-run table of scripts/measure_handoff.sh's raw outputs.

  python3 scripts/handoff_table.py RAW_DIR RANKS

One row per run (way x round, in the order they ran): the machine's state
during the run, told by Open MPI's own time at 64 KiB and 1 MiB ("fast"
when both are within 1.5x of their best over all the runs, "slow" when both
are beyond, "mixed" otherwise; "-" when the runs measured neither), then the library's speed-up over
MPI_Allreduce at a few sizes and, from 32 MiB, its time over the copy bound.
"""
import glob
import os
import re
import sys

SIZES = [65536, 1 << 20, 8 << 20, 32 << 20, 128 << 20]


def label(b):
    return "%d MiB" % (b >> 20) if b >= 1 << 20 else "%d KiB" % (b >> 10)


def read(path):
    rows = {}
    for line in open(path):
        f = line.split()
        if f and f[0].isdigit():
            # bytes, MPI us, MPI busbw, lib us, lib busbw, x MPI, ..., copy us, lib/copy, algorithm
            rows[int(f[0])] = (float(f[1]), float(f[5]), f[-2])
    return rows


def main(raw, ranks):
    runs = []
    for path in glob.glob(os.path.join(raw, "np%s_*_run*.txt" % ranks)):
        m = re.search(r"_(cache|memory|auto)_run(\d+)\.txt$", path)
        runs.append((int(m.group(2)), ["cache", "memory", "auto"].index(m.group(1)), m.group(1), read(path)))
    runs.sort()
    # The sizes that tell the state, of those the runs measured.
    best = {s: min(r[3][s][0] for r in runs if s in r[3])
            for s in (65536, 1 << 20) if any(s in r[3] for r in runs)}
    print("| round | COLLECTIVE_SHM_HANDOFF | state | " +
          " | ".join("%s × MPI" % label(s) for s in SIZES) +
          " | 32 MiB / copy | 128 MiB / copy |")
    print("|---|---|---|" + "---:|" * (len(SIZES) + 2))
    for rnd, _, way, rows in runs:
        fast = [rows[s][0] <= 1.5 * best[s] for s in best if s in rows]
        state = ("-" if not fast else "fast" if all(fast) else "slow" if not any(fast)
                 else "mixed")
        cells = ["%.2f" % rows[s][1] if s in rows else "-" for s in SIZES]
        copies = [rows[s][2] if s in rows else "-" for s in (32 << 20, 128 << 20)]
        print("| %d | %s | %s | %s | %s |" % (rnd, way, state, " | ".join(cells), " | ".join(copies)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

#!/usr/bin/env python3
"""From a rank's death to the first all_reduce on the survivors (a benchmark,
never run as a test): runs the shrink fault scenarios of
tests/reliability/shrink_driver.py (mpirun --enable-recovery, SIGKILL during
an all_reduce loop, each survivor shrinks and checks its calls) N times each
and prints, per scenario, the medians and ranges of: the detection (kill to
the last survivor's PeerFailedError), the shrink call, and the kill to the
last survivor's first all_reduce on the shrunk communicator.

    bench/shrink_recovery.py --mpiexec mpirun --worker build/tests/reliability/collective_shrink_worker [--runs 5]

Then the same across 2 simulated hosts x 2 ranks (network namespaces,
scripts/netns_cluster.sh; rank 2 killed), where they are permitted."""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reliability"))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import shrink_driver  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mpiexec", default="mpirun")
    parser.add_argument("--worker", required=True)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print("| ranks | killed | detection (s) | shrink call (s) | kill to first all_reduce (s) |")
    print("|---|---|---|---|---|")
    for ranks, victims in ((3, [1]), (4, [2]), (4, [1, 2])):
        times = [shrink_driver.timed_kill_in_loop(args, ranks, victims) for _ in range(args.runs)]

        def cell(key):
            values = [t[key] for t in times]
            return "%.3f (%.3f–%.3f)" % (statistics.median(values), min(values), max(values))
        print("| %d | %s | %s | %s | %s |" % (ranks, ",".join(map(str, victims)), cell("detected"),
                                              cell("shrink_call"), cell("first")), flush=True)
    try:
        times = [shrink_driver.timed_kill_across_hosts(args, 2, idle=False)
                 for _ in range(args.runs)]
    except shrink_driver.Skip as skip:
        print("(2 hosts x 2 ranks: skipped, %s)" % skip)
        return
    values = {key: [t[key] for t in times] for key in ("detected", "shrink_call", "first")}
    print("| 2 hosts x 2 | 2 | %s |" % " | ".join(
        "%.3f (%.3f–%.3f)" % (statistics.median(v), min(v), max(v))
        for v in (values["detected"], values["shrink_call"], values["first"])), flush=True)


if __name__ == "__main__":
    main()

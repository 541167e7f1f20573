#!/usr/bin/env python3
"""Runs parameter_server_train (the command after --) and checks its JSON:
asynchronous training must end within TOLERANCE of the synchronous run's
loss over the data set (same steps, batch and learning rate), and the loss
must have fallen. The tolerance, 0.01 in mean logistic loss, is about 30x
the differences measured at 1-2 ps and 1-2 workers (3e-4); a lost or
doubled update stream moves the loss by more."""

import json
import subprocess
import sys

TOLERANCE = 0.01


def main():
    command = sys.argv[sys.argv.index("--") + 1:]
    print("$ " + " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    print(done.stdout + done.stderr, flush=True)
    if done.returncode != 0:
        print("FAIL example: exit code %d" % done.returncode)
        return 1
    report = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
    gap = abs(report["async_loss"] - report["sync_loss"])
    if report["async_loss"] > report["initial_loss"] - 0.3:
        print("FAIL example: the loss did not fall enough: %s" % report)
        return 1
    if gap > TOLERANCE:
        print("FAIL example: asynchronous loss %.6f is %.6f from the synchronous %.6f (tolerance %g)"
              % (report["async_loss"], gap, report["sync_loss"], TOLERANCE))
        return 1
    print("PASS example: %d ps, %d workers x %d local replicas: asynchronous loss %.6f, synchronous %.6f "
          "(|diff| %.2g <= %g)"
          % (report["num_ps"], report["num_workers"], report["local_replicas"], report["async_loss"],
             report["sync_loss"], gap, TOLERANCE))
    return 0


if __name__ == "__main__":
    sys.exit(main())

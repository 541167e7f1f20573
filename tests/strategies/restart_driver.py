#!/usr/bin/env python3
"""Kill mid-training and restart: runs restart_train under mpirun three
times: uninterrupted to the end (fresh checkpoint directory A); then
with --pause-at (directory B), killing the whole job (SIGKILL to mpirun's
process group) while it pauses between checkpoints; then again on B, which
resumes from B's latest checkpoint. The weights of the resumed run must
equal the uninterrupted run's bit for bit: MultiWorkerMirroredStrategy is
deterministic at a fixed worker count, and the parameter-server run has
one worker, so its updates arrive in schedule order.

    restart_driver.py --mpiexec mpiexec --program restart_train --ranks 2 --strategy mwms"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

STEPS, EVERY, PAUSE_AT = 40, 5, 23


def command(args, directory, pause=None):
    c = [args.mpiexec, "-n", str(args.ranks), "--oversubscribe", "--bind-to", "none", args.program,
         "--strategy", args.strategy, "--steps", str(STEPS), "--every", str(EVERY),
         "--checkpoint-dir", directory]
    if pause is not None:
        c += ["--pause-at", str(pause)]
    return c


def environment():
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "COLLECTIVE_TIMEOUT": "60", "COLLECTIVE_PS_FAILURE_TIMEOUT": "10"})
    return env


def run_to_end(args, directory):
    c = command(args, directory)
    print("$ " + " ".join(c), flush=True)
    done = subprocess.run(c, capture_output=True, text=True, timeout=120, env=environment())
    if done.returncode != 0:
        raise RuntimeError("rc %d\n%s\n%s" % (done.returncode, done.stdout, done.stderr))
    weights = re.findall(r"^WEIGHTS (.*)$", done.stdout, re.M)
    first = re.search(r"^STEP (\d+)$", done.stdout, re.M)
    if len(weights) != 1:
        raise RuntimeError("no WEIGHTS line:\n" + done.stdout + done.stderr)
    return weights[0], int(first.group(1)) if first else None


def run_and_kill(args, directory):
    c = command(args, directory, PAUSE_AT)
    print("$ " + " ".join(c) + "   # killed at PAUSED", flush=True)
    process = subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=environment(), start_new_session=True)
    deadline = time.time() + 120
    output = []
    try:
        for line in process.stdout:
            output.append(line)
            if line.strip() == "PAUSED":
                os.killpg(process.pid, signal.SIGKILL)
                break
            if time.time() > deadline:
                raise RuntimeError("no PAUSED within 120 s")
        else:
            raise RuntimeError("the run ended before pausing:\n" + "".join(output))
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpiexec", default="mpiexec")
    parser.add_argument("--program", required=True)
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--strategy", choices=["mwms", "ps"], required=True)
    args = parser.parse_args()
    name = "%s_np%d" % (args.strategy, args.ranks)
    root = tempfile.mkdtemp(prefix="collective_restart_")
    try:
        reference, _ = run_to_end(args, os.path.join(root, "a"))
        resumed_dir = os.path.join(root, "b")
        run_and_kill(args, resumed_dir)
        latest = open(os.path.join(resumed_dir, "latest")).read().strip()
        expected_latest = "ckpt-%d" % (PAUSE_AT // EVERY * EVERY)
        if latest != expected_latest:
            raise RuntimeError("latest is %s after the kill, expected %s" % (latest, expected_latest))
        resumed, first_step = run_to_end(args, resumed_dir)
        if first_step != PAUSE_AT // EVERY * EVERY + 1:
            raise RuntimeError("the restart began at step %s, expected %d"
                               % (first_step, PAUSE_AT // EVERY * EVERY + 1))
        if resumed != reference:
            raise RuntimeError("weights differ:\n  uninterrupted %s\n  resumed       %s" % (reference, resumed))
        print("PASS restart %s: killed at step %d, resumed from %s at step %d, weights equal bit for bit: %s"
              % (name, PAUSE_AT, latest, first_step, resumed), flush=True)
        return 0
    except (RuntimeError, subprocess.TimeoutExpired) as failure:
        print("FAIL restart %s: %s" % (name, failure), flush=True)
        return 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

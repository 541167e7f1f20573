#!/usr/bin/env python3
"""Elastic training with real processes (docs/strategies.md, "Elastic
training"): collective_train --elastic under `mpirun --enable-recovery`
loses a worker (it SIGKILLs itself inside a step, or the driver SIGKILLs it
at a moment of its choosing) and the survivors go on. Checked:

- every survivor logs the loss and ends with status 15 (kExitAfterPeerLoss),
  the victim with 137 (SIGKILL);
- the chief's report: one elastic event (N workers, then N - 1), every
  replica's copy of every variable identical;
- its final weights are bitwise those of a run that had those workers from
  that step on: N workers up to the step (--save-weights), then N - 1 from
  there (--initial-weights, --skip-steps), all with --deterministic. A step
  that was redone counts as the first step of the N - 1; one that stood
  (the loss landed in its commit, or between steps) as the last of the N.

    elastic_train.py --mpiexec mpiexec --train collective_train SCENARIO"""

import json
import os
import signal
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from mpirun_capture import CapturedMpirun, Failure, finish, run_scenarios  # noqa: E402

# Each rank runs under a shell that says its pid and, at the end, its exit
# status: under --enable-recovery mpirun returns 0 whatever they were.
WRAPPER = ('"$0" "$@" & pid=$!; echo "READY rank=$OMPI_COMM_WORLD_RANK pid=$pid"; '
           'status=0; wait $pid || status=$?; echo "EXITED rank=$OMPI_COMM_WORLD_RANK status=$status"')
COMMON = ["--strategy", "multi_worker_mirrored", "--deterministic", "--global-batch", "64",
          "--seed", "5", "--learning-rate", "0.5", "--format", "json"]


def start(args, ranks, train_args, recovery=True):
    command = [args.mpiexec, "-n", str(ranks), "--oversubscribe", "--bind-to", "none"]
    command += ["--enable-recovery"] if recovery else []
    command += ["sh", "-c", WRAPPER, args.train] + COMMON + [str(a) for a in train_args]
    return CapturedMpirun(command, {"COLLECTIVE_TIMEOUT": "30"}, ranks)


def report_of(run, what):
    lines = run.matching(r"^\{\"strategy\".*")
    if len(lines) != 1:
        raise Failure("%s: expected one JSON report (the chief's), got %d" % (what, len(lines)))
    return json.loads(lines[0][1].group(0))


def reference_run(args, ranks, train_args, what):
    """A run without faults; its chief's report."""
    run = start(args, ranks, train_args, recovery=False)
    try:
        run.wait_ready()
        run.wait_for(r"EXITED rank=\d+ status=", ranks, 120, what="%s: every rank's exit" % what)
        bad = [m.group(0) for _, m in run.matching(r"EXITED rank=\d+ status=(\d+)")
               if m.group(1) != "0"]
        if bad:
            raise Failure("%s: %s" % (what, bad))
        return report_of(run, what)
    finally:
        finish(run)


def expect_elastic_outcome(args, run, ranks, victim, steps, what):
    survivors = [r for r in range(ranks) if r != victim]
    run.wait_for(r"EXITED rank=\d+ status=", ranks, 120, what="every rank's exit")
    statuses = {int(m.group(1)): int(m.group(2))
                for _, m in run.matching(r"EXITED rank=(\d+) status=(\d+)")}
    if statuses.get(victim) != 128 + 9:
        raise Failure("the victim (rank %d) ended with %s, expected 137 (SIGKILL)"
                      % (victim, statuses.get(victim)))
    for rank in survivors:
        if statuses.get(rank) != 15:
            raise Failure("survivor %d ended with status %s, expected 15 (kExitAfterPeerLoss): %s"
                          % (rank, statuses.get(rank), statuses))
    logged = run.matching(r"collective.distribute WARN rank (\d+) .*lost worker\(s\) %d of %d "
                          r"\(elastic training\); %d workers go on" % (victim, ranks, ranks - 1),
                          stream="err")
    if sorted({int(m.group(1)) for _, m in logged}) != survivors:
        raise Failure("the elastic log line came from ranks %s, expected every survivor %s"
                      % (sorted({int(m.group(1)) for _, m in logged}), survivors))
    report = report_of(run, what)
    events = report["elastic_events"]
    if len(events) != 1 or events[0]["workers_before"] != ranks or events[0]["workers"] != ranks - 1:
        raise Failure("elastic events %s, expected one from %d to %d workers"
                      % (events, ranks, ranks - 1))
    if report["num_workers"] != ranks - 1 or not report["replicas_identical"]:
        raise Failure("the chief reports %d workers, replicas identical %s"
                      % (report["num_workers"], report["replicas_identical"]))
    event = events[0]
    first_of_fewer = event["step"] if event["redone"] else event["step"] + 1
    weights_file = tempfile.mktemp(prefix="elastic_weights.")
    try:
        before = [] if first_of_fewer == 0 else ["--steps", first_of_fewer,
                                                 "--save-weights", weights_file]
        if before:
            reference_run(args, ranks, before, "the reference's first %d steps on %d workers"
                          % (first_of_fewer, ranks))
        after = ["--steps", steps - first_of_fewer, "--skip-steps", first_of_fewer]
        after += ["--initial-weights", weights_file] if before else []
        expected = reference_run(args, ranks - 1, after, "the reference's steps %d-%d on %d workers"
                                 % (first_of_fewer, steps - 1, ranks - 1))
    finally:
        if os.path.exists(weights_file):
            os.unlink(weights_file)
    if report["weights"] != expected["weights"]:
        raise Failure("elastic run's weights %s differ from the reference's %s (%d workers up to "
                      "step %d, %d from there)" % (report["weights"], expected["weights"], ranks,
                                                   first_of_fewer, ranks - 1))
    how = ("redone on %d workers" % (ranks - 1) if event["redone"] else
           "completed on all %d workers before the loss (it stands)" % ranks)
    return ("step %d %s; final weights bitwise those of %d workers up to step %d and %d from "
            "there" % (event["step"], how, ranks, first_of_fewer, ranks - 1))


def fault_at_step(args, ranks, victim, step, steps):
    """The victim SIGKILLs itself inside step `step`'s replica function, while
    the others wait for it in that step's gradient reduction."""
    run = start(args, ranks, ["--elastic", "--steps", steps, "--fault-at-step", step,
                              "--fault-rank", victim])
    try:
        run.wait_ready()
        outcome = expect_elastic_outcome(args, run, ranks, victim, steps, "the elastic run")
        return "%d workers, worker %d SIGKILLs itself in step %d of %d: %s" % (
            ranks, victim, step, steps, outcome)
    finally:
        finish(run)


def kill_during_training(args, ranks, victim, steps, after_step):
    """The driver SIGKILLs the victim once the chief logged step
    `after_step`: the death lands wherever the workers are (a replica
    function, the gradient reduction, the commit, the loss reduction)."""
    run = start(args, ranks, ["--elastic", "--steps", steps, "--log-steps"])
    try:
        run.wait_ready()
        run.wait_for(r"^STEP %d workers %d" % (after_step, ranks), 1, 120, stream="err",
                     what="step %d on the chief" % after_step)
        os.kill(run.pids[victim], signal.SIGKILL)
        outcome = expect_elastic_outcome(args, run, ranks, victim, steps, "the elastic run")
        return "%d workers, worker %d SIGKILLed after step %d of %d: %s" % (
            ranks, victim, after_step, steps, outcome)
    finally:
        finish(run)


SCENARIOS = {
    "fault_at_step_np4": lambda a: fault_at_step(a, 4, 2, 7, 20),
    "fault_at_step_chief_np3": lambda a: fault_at_step(a, 3, 0, 4, 12),
    "kill_np4": lambda a: kill_during_training(a, 4, 1, 400, 40),
}


if __name__ == "__main__":
    sys.exit(run_scenarios(SCENARIOS, __doc__, "--train"))

#!/usr/bin/env python3
"""Shrinking after a death, with real processes: runs collective_shrink_worker
under `mpirun --enable-recovery`, SIGKILLs one or two ranks, and checks that
every survivor raised PeerFailedError, shrank to a communicator of exactly the
survivors (in their order) and that its calls there were exact. ctest runs one
scenario per test:

    shrink_driver.py --mpiexec mpiexec --worker collective_shrink_worker SCENARIO

Each prints the time from the kill to the last survivor's shrunk communicator,
and the shrink call's own time."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from mpirun_capture import CapturedMpirun, Failure, Skip, finish, run_scenarios  # noqa: E402


TRACE_TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "libcollective",
                          "tools", "collective_trace.py")
NETNS_CLUSTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                             "netns_cluster.sh")
# Each rank's worker runs under a shell that prints its exit status:
# under --enable-recovery Open MPI 4.1's mpirun returns 0 whatever its
# processes' statuses, so only this line shows them.
REPORT_STATUS = 'status=0; "$0" "$@" || status=$?; echo "EXITED rank=$OMPI_COMM_WORLD_RANK status=$status"'


def start_across_hosts(args, hosts, ranks_per_host, worker_args, env=None):
    """2 simulated hosts (network namespaces, scripts/netns_cluster.sh):
    ranks 0..ranks_per_host-1 on the first."""
    command = [NETNS_CLUSTER, "--hosts", str(hosts), "--ranks-per-host", str(ranks_per_host),
               "--mpirun-arg", "--enable-recovery", "--", "sh", "-c", REPORT_STATUS,
               args.worker] + [str(a) for a in worker_args]
    return CapturedMpirun(command, dict({"COLLECTIVE_TIMEOUT": "20"}, **(env or {})),
                          hosts * ranks_per_host, stop_gently=True)


def start(args, ranks, worker_args, env=None):
    command = [args.mpiexec, "-n", str(ranks), "--oversubscribe", "--bind-to", "none",
               "--enable-recovery", "sh", "-c", REPORT_STATUS, args.worker] + [str(a) for a in worker_args]
    return CapturedMpirun(command, dict({"COLLECTIVE_TIMEOUT": "20"}, **(env or {})), ranks)


def expect_trace(dump_dir, ranks, victims):
    """collective_trace on the survivors' flight records (the last written
    after shrink): it names each victim as died, seen by every survivor,
    and the shrink of the world communicator into one of the survivors."""
    survivors = [r for r in range(ranks) if r not in victims]
    result = subprocess.run([sys.executable, TRACE_TOOL, "--json", dump_dir],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        verdict = json.loads(result.stdout)
    except ValueError:
        raise Failure("collective_trace printed no JSON (status %d): %s %s"
                      % (result.returncode, result.stdout[-300:], result.stderr[-300:]))
    died = {int(r): d for r, d in verdict["died"].items()}
    if sorted(died) != sorted(victims):
        raise Failure("collective_trace says ranks %s died, expected %s" % (sorted(died), victims))
    for victim, death in died.items():
        if sorted(death["seen_by"]) != survivors:
            raise Failure("collective_trace: rank %d's death seen by %s, expected every survivor %s"
                          % (victim, death["seen_by"], survivors))
    world = "[%s]#0" % ",".join(str(r) for r in range(ranks))
    shrunk = [s for s in verdict["shrinks"] if s["from"] == world]
    into = "[%s]#0" % ",".join(str(r) for r in survivors)
    if (len(shrunk) != 1 or shrunk[0]["into"] != into or shrunk[0]["lost"] != sorted(victims)
            or shrunk[0]["ranks"] != survivors):
        raise Failure("collective_trace's shrinks are %s, expected %s losing %s into %s by %s"
                      % (verdict["shrinks"], world, sorted(victims), into, survivors))


def expect_shrunk(run, ranks, victims, since):
    """Every survivor's FAILED, SHRUNK, FIRST and CHECKED lines; returns a dict
    of seconds from `since` (the kill): detected (the last survivor's
    PeerFailedError), shrunk (its last shrink returned), first (its first
    all_reduce on the survivors returned), and shrink_call (the slowest
    shrink call itself)."""
    survivors = [r for r in range(ranks) if r not in victims]
    pattern = "|".join(str(r) for r in survivors)
    expected_failed = ",".join(str(v) for v in sorted(victims))
    shrunk = run.wait_for(r"SHRUNK rank=(%s) new_rank=(\d+) size=(\d+) failed=([\d,]*) seconds=([\d.]+)"
                          % pattern, len(survivors), 30, what="a SHRUNK line from every survivor")
    latest, slowest = 0.0, 0.0
    for at, match in shrunk:
        rank, new_rank, size = int(match.group(1)), int(match.group(2)), int(match.group(3))
        if match.group(4) != expected_failed:
            raise Failure("rank %d agreed failed ranks [%s], expected [%s]"
                          % (rank, match.group(4), expected_failed))
        if size != len(survivors) or new_rank != survivors.index(rank):
            raise Failure("rank %d is rank %d of %d after shrink, expected %d of %d"
                          % (rank, new_rank, size, survivors.index(rank), len(survivors)))
        latest = max(latest, at - since)
        slowest = max(slowest, float(match.group(5)))
    firsts = run.wait_for(r"FIRST rank=(%s)$" % pattern, len(survivors), 30,
                          what="the first all_reduce on the survivors")
    run.wait_for(r"CHECKED rank=(%s) " % pattern, len(survivors), 60,
                 what="exact calls on the shrunk communicator on every survivor")
    wrong = run.matching(r"WRONG .*")
    if wrong:
        raise Failure("a survivor saw a wrong result: %s" % wrong[0][1].group(0))
    failed = run.matching(r"FAILED rank=(%s) " % pattern)
    return {"detected": max(t for t, _ in failed) - since if failed else float("nan"),
            "shrunk": latest, "first": max(t for t, _ in firsts) - since,
            "shrink_call": slowest}


def expect_unclean_exit(run, ranks, victims):
    """The job lost a rank: every survivor logs the summary line and ends
    with kExitAfterPeerLoss (15), so mpirun does not return 0."""
    survivors = [r for r in range(ranks) if r not in victims]
    run.wait_for(r"EXITED rank=(%s) " % "|".join(str(r) for r in survivors), len(survivors), 60,
                 what="every survivor's exit")
    summary = (r"collective WARN rank (%s) .*this job lost a rank and went on without it; "
               r"(?:.*; )?ending this process with exit status 15"
               % "|".join(str(r) for r in survivors))
    lines = run.wait_for(summary, len(survivors), 20, stream="err",
                         what="every survivor's summary line")
    # Across the simulated hosts (stopped gently) mpirun under
    # --enable-recovery does not end once every process has: Open MPI's
    # daemons stay, and finish() ends them. The processes' own statuses are
    # what is checked.
    if not run.stop_gently:
        try:
            run.wait_exit(20)
        except Failure:
            pass
    seen = sorted({int(m.group(1)) for _, m in lines})
    if seen != survivors:
        raise Failure("the summary line came from ranks %s, expected %s" % (seen, survivors))
    statuses = {int(m.group(1)): int(m.group(2))
                for _, m in run.matching(r"EXITED rank=(\d+) status=(\d+)")}
    for rank in survivors:
        if statuses.get(rank) != 15:
            raise Failure("survivor %d ended with status %s, expected 15 (kExitAfterPeerLoss)"
                          % (rank, statuses.get(rank)))


def timing_text(t):
    detected = ("PeerFailedError on every survivor %.3f s after the kill, " % t["detected"]
                if t["detected"] >= 0 else "")
    return ("%sshrunk %.3f s, first all_reduce on the survivors %.3f s (shrink itself at most "
            "%.3f s)" % (detected, t["shrunk"], t["first"], t["shrink_call"]))


def timed_kill_in_loop(args, ranks, victims):
    """SIGKILL of `victims` during the all_reduce loop, every check of
    expect_shrunk and expect_unclean_exit; returns expect_shrunk's times
    (bench/shrink_recovery.py repeats it)."""
    dump_dir = tempfile.mkdtemp(prefix="shrink_records.")
    run = start(args, ranks, ["loop", -1], {"COLLECTIVE_FLIGHT_RECORDER_DIR": dump_dir})
    try:
        run.wait_ready()
        run.wait_for(r"PROGRESS rank=\d+ calls=1000", ranks, 60, what="1000 calls on every rank")
        killed = time.time()
        for victim in victims:
            os.kill(run.pids[victim], signal.SIGKILL)
        timing = expect_shrunk(run, ranks, victims, killed)
        expect_unclean_exit(run, ranks, victims)
        expect_trace(dump_dir, ranks, victims)
        return timing
    finally:
        finish(run)
        shutil.rmtree(dump_dir, ignore_errors=True)


def kill_in_loop(args, ranks, victims):
    timing = timed_kill_in_loop(args, ranks, victims)
    return ("%d ranks, SIGKILL of %s during the all_reduce loop: %s; then exact calls, every "
            "survivor ended with status 15, and collective_trace named the dead and the shrink"
            % (ranks, victims, timing_text(timing)))


def kill_across_hosts(args, victim, idle):
    timing = timed_kill_across_hosts(args, victim, idle)
    return ("2 hosts x 2 ranks, SIGKILL of rank %d %s: %s; then exact calls across the hosts, "
            "and every survivor ended with status 15"
            % (victim, "while every rank slept" if idle else "during the all_reduce loop",
               timing_text(timing)))


def timed_kill_across_hosts(args, victim, idle):
    """2 hosts x 2 ranks: the victim's host-mate learns of its death from
    /proc, the other host's ranks from its liveness listener's connection.
    Idle: the kill lands while every rank sleeps, so that each enters the
    next call with the victim gone. Its 4 KiB all_reduce is hierarchical,
    without the cross-rank check (which would meet the death first): rank 0
    waits for rank 1 on its node and gives the call up, while rank 2 (the
    other host) has passed its node's step and waits for rank 0 in the ring
    across nodes, a ring that rank 1 is no member of; rank 2 must learn of
    the death all the same, not wait for rank 0 until the timeout."""
    check = subprocess.run([NETNS_CLUSTER, "--check"])
    if check.returncode == 77:
        raise Skip("network namespaces are not permitted here")
    worker_args = ["idle", -1, "hierarchical"] if idle else ["loop", -1]
    env = {"COLLECTIVE_VALIDATE": "0"} if idle else {}
    run = start_across_hosts(args, 2, 2, worker_args, env)
    try:
        run.wait_ready()
        if idle:
            run.wait_for(r"IDLE rank=\d+", 4, 60, what="every rank idle")
        else:
            run.wait_for(r"PROGRESS rank=\d+ calls=1000", 4, 60, what="1000 calls on every rank")
        killed = time.time()
        os.kill(run.pids[victim], signal.SIGKILL)
        timing = expect_shrunk(run, 4, [victim], killed)
        expect_unclean_exit(run, 4, [victim])
        return timing
    finally:
        finish(run)


def kill_while_idle(args, ranks, victim):
    run = start(args, ranks, ["idle", -1])
    try:
        run.wait_ready()
        run.wait_for(r"IDLE rank=\d+", ranks, 60, what="every rank idle")
        killed = time.time()
        os.kill(run.pids[victim], signal.SIGKILL)
        timing = expect_shrunk(run, ranks, [victim], killed)
        expect_unclean_exit(run, ranks, [victim])
        return ("%d ranks, SIGKILL of rank %d while every rank slept 1.5 s between calls: %s"
                % (ranks, victim, timing_text(timing)))
    finally:
        finish(run)


def kill_during_shrink(args, ranks, first, second, across_hosts=False):
    """Across hosts (2 x 2): the second victim is on the other host than
    the first, so a survivor learns of its death during the agreement
    through its liveness listener only."""
    if across_hosts:
        if subprocess.run([NETNS_CLUSTER, "--check"]).returncode == 77:
            raise Skip("network namespaces are not permitted here")
        run = start_across_hosts(args, 2, ranks // 2, ["loop", second])
    else:
        run = start(args, ranks, ["loop", second])
    try:
        run.wait_ready()
        run.wait_for(r"PROGRESS rank=\d+ calls=1000", ranks, 60, what="1000 calls on every rank")
        os.kill(run.pids[first], signal.SIGKILL)
        run.wait_for(r"SHRINKING rank=%d" % second, 1, 30, what="rank %d about to shrink" % second)
        # The others are inside shrink by now, waiting for the second victim's view.
        time.sleep(0.3)
        killed = time.time()
        os.kill(run.pids[second], signal.SIGKILL)
        timing = expect_shrunk(run, ranks, [first, second], killed)
        expect_unclean_exit(run, ranks, [first, second])
        return ("%d ranks%s, rank %d killed, then rank %d while the others agreed, from the "
                "second kill: %s" % (ranks, " on 2 hosts" if across_hosts else "", first, second,
                                     timing_text(timing)))
    finally:
        finish(run)


SCENARIOS = {
    "kill_np3": lambda a: kill_in_loop(a, 3, [1]),
    "kill_np4": lambda a: kill_in_loop(a, 4, [2]),
    "kill_two_np4": lambda a: kill_in_loop(a, 4, [1, 2]),
    "kill_idle_np3": lambda a: kill_while_idle(a, 3, 1),
    "kill_during_shrink_np4": lambda a: kill_during_shrink(a, 4, 1, 2),
    "kill_netns_2hosts_x2": lambda a: kill_across_hosts(a, 2, idle=False),
    "kill_during_shrink_netns_2hosts_x2": lambda a: kill_during_shrink(a, 4, 1, 2, True),
    "kill_idle_netns_2hosts_x2": lambda a: kill_across_hosts(a, 1, idle=True),
}


if __name__ == "__main__":
    sys.exit(run_scenarios(SCENARIOS, __doc__, "--worker"))

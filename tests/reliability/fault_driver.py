#!/usr/bin/env python3
"""Fault tests with real processes: runs collective_fault_worker under
mpirun, harms one rank (SIGKILL, SIGSTOP, never calling, leaving early) and
checks that every other rank ends within a bound with the expected message,
and that no process is left behind. ctest runs one scenario per test:

    fault_driver.py --mpiexec mpiexec --worker collective_fault_worker SCENARIO

Open MPI (4.1) tears the whole job down when a rank dies or exits without
MPI_Finalize; with --enable-recovery it lets the survivors run on, and then
the library itself must notice. Scenarios cover both. Each prints how long
the failure took to surface (from the harm to the survivors' last error, or
to mpirun's exit when mpirun tears the job down)."""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from mpirun_capture import CapturedMpirun, Failure, alive  # noqa: E402

RANKS = 3
VICTIM = 1


class MpiRun(CapturedMpirun):
    """RANKS ranks of the fault worker, with the call timeout and validation set."""

    def __init__(self, args, worker_args, timeout_s, recovery=False, validate=True, extra_env=None):
        env = dict(extra_env or {})
        env.update({
            "COLLECTIVE_TIMEOUT": str(timeout_s),
            "COLLECTIVE_VALIDATE": "1" if validate else "0",
        })
        command = [args.mpiexec, "-n", str(RANKS), "--oversubscribe", "--bind-to", "none"]
        if recovery:
            command.append("--enable-recovery")
        command += [args.worker] + [str(a) for a in worker_args]
        super().__init__(command, env, RANKS)


def signal_if_alive(pid, signum):
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def survivors():
    return [r for r in range(RANKS) if r != VICTIM]


def failed_list(text):
    return [int(r) for r in text.split(",")] if text else []


def expect_errors(run, error_class, needles, within_s, since):
    """Every survivor prints ERROR of `error_class` containing every needle,
    within `within_s` of `since`; returns the seconds to the last one. A
    PeerFailedError must name exactly the victim as failed, and the
    survivor's next call must raise it again, naming it, buffer untouched."""
    survivor_ranks = "|".join(str(r) for r in survivors())
    pattern = (r"ERROR rank=(%s) class=(\w+) at=([\d.]+) calls=\d+ (?:failed=([\d,]+) )?what=(.*)"
               % survivor_ranks)
    found = run.wait_for(pattern, len(survivors()), within_s + 5, what="an ERROR from every survivor")
    latest = 0.0
    peer_failures = 0
    for _, match in found:
        rank, klass, at, what = int(match.group(1)), match.group(2), float(match.group(3)), match.group(5)
        failed = failed_list(match.group(4))
        if rank == VICTIM:
            continue
        if klass not in error_class:
            raise Failure("rank %d raised %s, expected %s: %s" % (rank, klass, error_class, what))
        if klass == "PeerFailedError":
            peer_failures += 1
            if failed != [VICTIM]:
                raise Failure("rank %d: PeerFailedError names failed ranks %s, expected [%d]: %s"
                              % (rank, failed, VICTIM, what))
        for needle in needles:
            if needle not in what:
                raise Failure("rank %d: '%s' missing from: %s" % (rank, needle, what))
        latest = max(latest, at - since)
    if latest > within_s:
        raise Failure("the last survivor failed %.2f s after the fault, bound %.1f s" % (latest, within_s))
    if peer_failures:
        again = run.wait_for(r"AGAIN rank=(%s) class=(\w+)(?: seconds=([\d.]+) untouched=(\d) "
                             r"(?:failed=([\d,]+) )?what=(.*))?" % survivor_ranks, peer_failures, 5,
                             what="the next call's outcome from every survivor")
        for _, match in again:
            rank, klass = int(match.group(1)), match.group(2)
            if klass != "PeerFailedError" or match.group(4) != "1" or failed_list(match.group(5)) != [VICTIM]:
                raise Failure("rank %d: the call after PeerFailedError gave %s (untouched=%s, failed=%s), "
                              "expected PeerFailedError naming rank %d with its buffer untouched"
                              % (rank, klass, match.group(4), match.group(5), VICTIM))
            if "earlier failure" not in (match.group(6) or ""):
                raise Failure("rank %d: the call after PeerFailedError did not name the earlier failure: %s"
                              % (rank, match.group(6)))
    return latest


def victim_needle(run):
    return "rank %d (pid %d" % (VICTIM, run.pids[VICTIM])


# Each scenario returns a one-line summary with the time to surface.

def kill_mid_loop(args, recovery, algorithm="auto", worker_scenario="loop", validate=True):
    run = MpiRun(args, [worker_scenario, VICTIM, 60, algorithm], timeout_s=20, recovery=recovery,
                 validate=validate)
    try:
        run.wait_ready()
        run.wait_for(r"PROGRESS rank=\d+ calls=2000", RANKS, 60, what="2000 calls on every rank")
        killed = time.time()
        os.kill(run.pids[VICTIM], signal.SIGKILL)
        if recovery:
            seconds = expect_errors(run, ("PeerFailedError",), [victim_needle(run), "died"], 5, killed)
            run.wait_exit(30)
            return ("survivors raised PeerFailedError naming the dead rank %.2f s after SIGKILL, "
                    "and again at their next call" % seconds)
        run.wait_exit(20)
        text = "\n".join(line for (_, _, line) in run.lines)
        if not re.search(r"rank %d .*(signal 9|Killed)" % VICTIM, text, re.S):
            raise Failure("mpirun did not report rank %d killed" % VICTIM)
        return "mpirun tore the job down %.2f s after SIGKILL, naming rank %d" % (run.exit_time - killed, VICTIM)
    finally:
        finish(run)


def kill_in_blocking_mpi(args):
    # The mpi algorithm at MPI_THREAD_MULTIPLE (what Environment asks for)
    # waits inside MPI's blocking collective, which Open MPI never returns
    # from after a rank's death under --enable-recovery: the library's
    # watcher ends every survivor with exit status 14 and a line naming the
    # dead rank, instead of leaving it stuck forever. Validation off and the
    # algorithm forced for every call: each survivor waits inside MPI.
    run = MpiRun(args, ["loop", VICTIM, 60, "mpi"], timeout_s=60, recovery=True, validate=False,
                 extra_env={"COLLECTIVE_ALGORITHM": "mpi"})
    try:
        run.wait_ready()
        run.wait_for(r"PROGRESS rank=\d+ calls=1000", RANKS, 60, what="1000 calls on every rank")
        killed = time.time()
        os.kill(run.pids[VICTIM], signal.SIGKILL)
        # A survivor that looks after another already ended names that one
        # too ("rank 1 (...) and rank 2 (...) died during ...").
        lines = run.wait_for(r"\(rank (\d+)\): (?:.* )?rank %d \(pid %d on [^)]*\).* died during MPI's "
                             r"blocking MPI_\w+.*exit status 14" % (VICTIM, run.pids[VICTIM]),
                             len(survivors()), 10, stream="err",
                             what="every survivor's line naming the dead rank and its exit")
        ranks = sorted(int(match.group(1)) for _, match in lines)
        if ranks != survivors():
            raise Failure("the lines came from ranks %s, expected %s" % (ranks, survivors()))
        latest = max(t for t, _ in lines) - killed
        run.wait_exit(30)
        if run.matching(r"^(ERROR|WRONG|DONE)"):
            raise Failure("a survivor went on after the death: %s" % run.matching(r"^(ERROR|WRONG|DONE)"))
        return ("every survivor inside MPI's blocking collective ended with exit status 14, naming "
                "the dead rank, %.2f s after SIGKILL" % latest)
    finally:
        finish(run)


def stop_then_resume(args):
    # Stopped longer than the stall warning (half of 8 s), shorter than the
    # timeout: every rank warns, naming the stopped rank, then all finish.
    run = MpiRun(args, ["loop", VICTIM, 7], timeout_s=8)
    try:
        run.wait_ready()
        run.wait_for(r"PROGRESS rank=\d+ calls=1000", RANKS, 60, what="1000 calls on every rank")
        stopped = time.time()
        os.kill(run.pids[VICTIM], signal.SIGSTOP)
        warnings = run.wait_for(r"stalled for .* waiting for .*rank %d \(pid %d .*stopped" %
                                (VICTIM, run.pids[VICTIM]), len(survivors()), 8, stream="err",
                                what="a stall warning naming the stopped rank from every survivor")
        warned = max(t for t, _ in warnings) - stopped
        time.sleep(max(0.0, 5.5 - (time.time() - stopped)))
        os.kill(run.pids[VICTIM], signal.SIGCONT)
        resumed = time.time() - stopped
        run.wait_for(r"DONE rank=\d+", RANKS, 30, what="DONE from every rank")
        rc = run.wait_exit(20)
        if rc != 0:
            raise Failure("mpirun exited %d after the resumed run" % rc)
        if run.matching(r"ERROR"):
            raise Failure("an error after resuming")
        return ("stall warning naming the stopped rank %.2f s after SIGSTOP (timeout 8 s); "
                "SIGCONT at %.1f s; every rank finished" % (warned, resumed))
    finally:
        finish(run)


def stop_past_timeout(args, worker_args=("loop",), validate=True):
    # --enable-recovery: the first survivor's non-zero exit must not tear the
    # job down (that resumes the stopped rank and kills the others) before
    # every survivor has raised, each naming a rank that is still stopped.
    run = MpiRun(args, [worker_args[0], VICTIM, 60] + list(worker_args[1:]), timeout_s=3,
                 recovery=True, validate=validate)
    try:
        run.wait_ready()
        run.wait_for(r"PROGRESS rank=\d+ calls=1000", RANKS, 60, what="1000 calls on every rank")
        stopped = time.time()
        os.kill(run.pids[VICTIM], signal.SIGSTOP)
        seconds = expect_errors(run, ("TimeoutError",),
                                ["timed out after 3 s", victim_needle(run), "stopped"], 6, stopped)
        # mpirun may already have killed the stopped rank (survivors exited
        # non-zero); otherwise let it run again so that it can be torn down.
        signal_if_alive(run.pids[VICTIM], signal.SIGCONT)
        run.wait_exit(20)
        return "survivors raised TimeoutError naming the stopped rank %.2f s after SIGSTOP (timeout 3 s)" % seconds
    finally:
        finish(run)


def stop_past_timeout_all_to_all(args, algorithm):
    # The all_to_all algorithms wait through the same PeerExchange as the
    # ring: a stopped peer is a TimeoutError naming it and the algorithm, on
    # every survivor. Without validation, so that the wait is the
    # algorithm's own and not the cross-rank check's.
    run = MpiRun(args, ["loop_all_to_all", VICTIM, 60, algorithm], timeout_s=3, recovery=True,
                 validate=False)
    try:
        run.wait_ready()
        run.wait_for(r"PROGRESS rank=\d+ calls=1000", RANKS, 60, what="1000 calls on every rank")
        stopped = time.time()
        os.kill(run.pids[VICTIM], signal.SIGSTOP)
        seconds = expect_errors(run, ("TimeoutError",),
                                ["all_to_all #", "timed out after 3 s (%s)" % algorithm,
                                 victim_needle(run), "stopped"], 6, stopped)
        signal_if_alive(run.pids[VICTIM], signal.SIGCONT)
        run.wait_exit(20)
        return ("survivors of %s all_to_all raised TimeoutError naming the stopped rank %.2f s "
                "after SIGSTOP (timeout 3 s)" % (algorithm, seconds))
    finally:
        finish(run)


def stop_past_timeout_return(args):
    # The survivors time out on a stopped rank and return from main:
    # Environment's destructor must not wait in MPI_Finalize for the stopped
    # rank beyond the timeout, but end the process naming the failure.
    run = MpiRun(args, ["loop_return", VICTIM, 60], timeout_s=3)
    try:
        run.wait_ready()
        run.wait_for(r"PROGRESS rank=\d+ calls=1000", RANKS, 60, what="1000 calls on every rank")
        stopped = time.time()
        os.kill(run.pids[VICTIM], signal.SIGSTOP)
        expect_errors(run, ("TimeoutError",), ["timed out after 3 s", victim_needle(run)], 6, stopped)
        returned = run.wait_for(r"RETURNING rank=\d+", len(survivors()), 10,
                                what="every survivor returning from main")
        last_return = max(t for t, _ in returned)
        run.wait_for(r"MPI_Finalize did not return within 3 s after a communication failure.*"
                     r"exit status 14.*timed out after 3 s",
                     1, 10, stream="err", what="the log line of the abandoned MPI_Finalize")
        # The survivors' processes end by themselves, the stopped rank still
        # stopped. Tearing a stopped process down is mpirun's part, which
        # Open MPI 4.1 does not always finish (CI saw mpirun still running
        # 15 s later): the rank is let run again once the survivors are gone.
        deadline = time.time() + 10
        while any(alive(run.pids[r]) for r in survivors()) and time.time() < deadline:
            time.sleep(0.05)
        left = [r for r in survivors() if alive(run.pids[r])]
        if left:
            raise Failure("survivor(s) %s still running 10 s after returning from main" % left)
        survivors_gone = time.time()
        signal_if_alive(run.pids[VICTIM], signal.SIGCONT)
        teardown = "mpirun ended by itself"
        try:
            rc = run.wait_exit(15)
        except Failure:
            # Seen twice in CI under load: mpirun still running 15 s after the
            # SIGCONT. What this scenario checks, the survivors ending by
            # themselves, held above; the resumed rank is ended here, and the
            # output says whether it was still alive, for the next diagnosis.
            state = "still alive" if alive(run.pids[VICTIM]) else "already gone"
            signal_if_alive(run.pids[VICTIM], signal.SIGKILL)
            try:
                rc = run.wait_exit(15)
                teardown = ("mpirun ended only once the resumed rank, %s 15 s after SIGCONT, "
                            "was killed" % state)
            except Failure:
                # Seen once in CI (2026-12-07): mpirun still running 15 s after
                # that too, with every rank gone: Open MPI's own teardown,
                # past what this scenario checks. mpirun is ended here.
                ranks_alive = [r for r in range(RANKS) if alive(run.pids[r])]
                os.killpg(run.process.pid, signal.SIGTERM)
                ended_by = "SIGTERM"
                try:
                    rc = run.wait_exit(15)
                except Failure:
                    # Seen once in CI (2026-12-07, again): mpirun ignoring its
                    # SIGTERM too, with the ranks gone. The scenario's checks
                    # held above; its process group is killed.
                    os.killpg(run.process.pid, signal.SIGKILL)
                    rc = run.wait_exit(15)
                    ended_by = "SIGKILL (SIGTERM left it running 15 s)"
                teardown = ("mpirun still running 15 s after the resumed rank (%s 15 s after "
                            "SIGCONT) was killed, ranks alive: %s; ended by %s" %
                            (state, ranks_alive or "none", ended_by))
        if rc == 0:
            raise Failure("mpirun exited 0 after a communication failure")
        return ("survivors returned from main after TimeoutError; MPI_Finalize was abandoned at its "
                "3 s bound and their processes ended %.2f s after the return, the stopped rank still "
                "stopped (mpirun rc %d; %s)" % (survivors_gone - last_return, rc, teardown))
    finally:
        finish(run)


def shm_entries():
    try:
        return set(name for name in os.listdir("/dev/shm") if name.startswith("collective-"))
    except FileNotFoundError:
        return set()


def start_time(pid):
    with open("/proc/%d/stat" % pid) as stat:
        return stat.read().rsplit(")", 1)[1].split()[19]


def objects_of(pids):
    """/dev/shm objects named after any of `pids` (collective-{mem,seg}-<pid>-...)."""
    return sorted(e for e in shm_entries()
                  if any(e.startswith("collective-%s-%d-" % (kind, pid))
                         for pid in pids for kind in ("mem", "seg")))


def allocated_then_signalled(args, harm):
    # Communicator::allocate buffers (an input buffer and 8 MiB per rank)
    # must not outlive the job however it ends: their names are unlinked as
    # soon as they are made (peers open them through the owner's /proc fd),
    # so neither mpirun's teardown after SIGTERM/SIGINT (it forwards SIGTERM
    # and then SIGKILLs) nor a rank's SIGKILL leaves one in /dev/shm. The
    # node segment's name lives only while it is set up.
    run = MpiRun(args, ["loop_allocated", VICTIM, 60], timeout_s=20)
    try:
        run.wait_ready()
        run.wait_for(r"PROGRESS rank=\d+ calls=1000", RANKS, 60, what="1000 calls on every rank")
        during = objects_of(run.pids.values())
        harmed = time.time()
        if harm == "sigkill_rank":
            signal_if_alive(run.pids[VICTIM], signal.SIGKILL)
        else:
            run.process.send_signal(signal.SIGTERM if harm == "sigterm_mpirun" else signal.SIGINT)
        rc = run.wait_exit(30)
        if rc == 0:
            raise Failure("mpirun exited 0 after %s" % harm)
        deadline = time.time() + 10
        while any(alive(pid) for pid in run.pids.values()) and time.time() < deadline:
            time.sleep(0.05)
        ended = time.time() - harmed
    finally:
        finish(run)
    left = objects_of(run.pids.values())
    if left:
        raise Failure("the job's objects outlived it in /dev/shm after %s: %s" % (harm, left))
    if during:
        raise Failure("named objects in /dev/shm while the job ran: %s" % during)
    return "after %s the job ended in %.1f s (mpirun rc %d) and left nothing of its %d ranks in /dev/shm" % (
        harm, ended, rc, RANKS)


def kill9_then_reclaim(args):
    # A rank killed with SIGKILL while setting up a node segment (or an
    # older version's allocation) leaves a name in /dev/shm; the next node
    # segment made on the node removes every one whose owner is gone, and
    # nothing of a live process. Allocations themselves leave nothing
    # (allocated_then_signalled): names of the killed ranks are planted.
    run = MpiRun(args, ["loop_allocated", VICTIM, 60], timeout_s=20)
    try:
        run.wait_ready()
        run.wait_for(r"PROGRESS rank=\d+ calls=1000", RANKS, 60, what="1000 calls on every rank")
        starts = {pid: start_time(pid) for pid in run.pids.values()}
        for pid in run.pids.values():
            signal_if_alive(pid, signal.SIGKILL)
        run.wait_exit(20)
    finally:
        finish(run)
    left = objects_of(run.pids.values())
    if left:
        raise Failure("SIGKILLed ranks left objects in /dev/shm: %s" % left)
    # As if every rank had been killed while setting up a segment or with an
    # older version's allocation, and a live process (this driver) had one
    # of its own.
    planted_dead = ["collective-%s-%d-%s-7" % (kind, pid, start)
                    for pid, start in starts.items() for kind in ("seg", "mem")]
    planted_live = "collective-seg-%d-%s-7" % (os.getpid(), start_time(os.getpid()))
    for name in planted_dead + [planted_live]:
        with open("/dev/shm/" + name, "wb") as planted:
            planted.write(b"x" * 4096)
    try:
        again = MpiRun(args, ["loop", VICTIM, 0.5], timeout_s=20)
        try:
            again.wait_ready()
            again.wait_for(r"DONE rank=\d+", RANKS, 60, what="DONE from every rank")
            if again.wait_exit(20) != 0:
                raise Failure("the second job failed")
        finally:
            finish(again)
        remaining = shm_entries()
        stale = [e for e in planted_dead if e in remaining]
        if stale:
            raise Failure("not reclaimed by the next job: %s" % stale)
        if planted_live not in remaining:
            raise Failure("the next job removed %s of a live process" % planted_live)
    finally:
        for name in planted_dead + [planted_live]:
            try:
                os.unlink("/dev/shm/" + name)
            except FileNotFoundError:
                pass
    return "SIGKILLed ranks left nothing; %d planted names of them were reclaimed by the next job; a live process's was kept" % len(planted_dead)


def never_call(args):
    run = MpiRun(args, ["never_call", VICTIM], timeout_s=3)
    try:
        ready = run.wait_ready()
        seconds = expect_errors(run, ("TimeoutError",),
                                ["all_reduce #0", "timed out after 3 s", victim_needle(run),
                                 "cross-rank check"], 6, ready)
        run.wait_exit(20)
        return "survivors raised TimeoutError at all_reduce #0 naming the absent rank %.2f s after start (timeout 3 s)" % seconds
    finally:
        finish(run)


def never_world(args):
    run = MpiRun(args, ["never_world", VICTIM], timeout_s=3)
    try:
        ready = run.wait_ready()
        seconds = expect_errors(run, ("TimeoutError",),
                                ["Communicator::world", "timed out after 3 s", "MPI_Comm_idup"], 6, ready)
        run.wait_exit(20)
        return "survivors raised TimeoutError in Communicator::world %.2f s after start (timeout 3 s)" % seconds
    finally:
        finish(run)


def exit_abrupt(args, recovery):
    run = MpiRun(args, ["exit_abrupt", VICTIM, 60], timeout_s=20, recovery=recovery)
    try:
        run.wait_ready()
        left = run.wait_for(r"LEAVING rank=%d" % VICTIM, 1, 60, what="the victim leaving")[0][0]
        if recovery:
            seconds = expect_errors(run, ("PeerFailedError",), [victim_needle(run), "died"], 5, left)
            run.wait_exit(30)
            return "survivors raised PeerFailedError naming the departed rank %.2f s after it left" % seconds
        run.wait_exit(20)
        text = "\n".join(line for (_, _, line) in run.lines)
        if "rank %d" % VICTIM not in text:
            raise Failure("mpirun did not name rank %d" % VICTIM)
        return "mpirun tore the job down %.2f s after rank %d left, naming it" % (run.exit_time - left, VICTIM)
    finally:
        finish(run)


def exit_clean(args):
    # The victim finalizes MPI and returns while the others go on: whether it
    # lingers in MPI_Finalize (a timeout) or is gone (dead-peer detection),
    # the survivors fail naming it.
    run = MpiRun(args, ["exit_clean", VICTIM, 60], timeout_s=3)
    try:
        run.wait_ready()
        left = run.wait_for(r"LEAVING rank=%d" % VICTIM, 1, 60, what="the victim leaving")[0][0]
        seconds = expect_errors(run, ("TimeoutError", "CommunicationError", "PeerFailedError"), [victim_needle(run)], 6, left)
        # Open MPI 4.1's mpirun can hang once the job is over when one rank
        # had entered MPI_Finalize and the others then exited non-zero
        # (every worker gone, mpirun ignoring SIGTERM). That is mpirun's
        # own bug, outside the library: it is noted and mpirun is killed.
        note = ""
        try:
            run.wait_exit(10)
        except Failure:
            if any(alive(pid) for pid in run.pids.values()):
                raise
            note = "; mpirun itself hung after every worker had exited (Open MPI 4.1) and was killed"
        return "survivors failed naming the finalized rank %.2f s after it left (timeout 3 s)%s" % (seconds, note)
    finally:
        finish(run)


# Flight recorder (issue 18): real dumps from real hangs and mismatches,
# read back by collective_trace, whose verdict is asserted.

def trace_verdict(args, directory, expect_files):
    files = sorted(f for f in os.listdir(directory) if f.startswith("collective_flight_record."))
    if len(files) != expect_files:
        raise Failure("expected %d dumps in %s, found %s" % (expect_files, directory, files))
    for name in files:
        with open(os.path.join(directory, name)) as text:
            dump = json.load(text)
        if dump["format"] != "collective-flight-record" or dump["version"] != 1:
            raise Failure("%s: unexpected format %r %r" % (name, dump["format"], dump["version"]))
    tool = [sys.executable, args.trace_tool, directory]
    text = subprocess.run(tool, capture_output=True, text=True, timeout=30)
    print("$ collective_trace %s (exit %d)" % (directory, text.returncode))
    for line in text.stdout.splitlines():
        print("  | " + line)
    verdict = subprocess.run(tool + ["--json"], capture_output=True, text=True, timeout=30)
    if verdict.returncode != 1:
        raise Failure("collective_trace exited %d, expected 1 (a divergence): %s" %
                      (verdict.returncode, verdict.stderr))
    return json.loads(verdict.stdout), text.stdout


def expect_in(needle, text, what):
    if needle not in text:
        raise Failure("%s: '%s' missing from:\n%s" % (what, needle, text))


def every_rank_error(run, error_class, within_s):
    found = run.wait_for(r"ERROR rank=(\d+) class=(\w+) ", RANKS, within_s, what="an ERROR from every rank")
    for _, match in found:
        if match.group(2) != error_class:
            raise Failure("rank %s raised %s, expected %s" % (match.group(1), match.group(2), error_class))


def dumps_of_failing_run(args, directory, scenario, timeout_s, error_class):
    """Runs the worker's `scenario` (dumping into `directory`) until every
    rank raised `error_class` and the job ended; collective_trace's verdict
    on the dumps of every rank."""
    run = MpiRun(args, [scenario, VICTIM], timeout_s=timeout_s,
                 extra_env={"COLLECTIVE_FLIGHT_RECORDER_DIR": directory})
    try:
        run.wait_ready()
        every_rank_error(run, error_class, 30)
        run.wait_exit(20)
    finally:
        finish(run)
    return trace_verdict(args, directory, RANKS)


def flight_skip_call(args, directory):
    # Rank 1 skips call #20 (an all_reduce): its #20 is the others' #21, a
    # broadcast; every rank raises MismatchError and dumps.
    verdict, text = dumps_of_failing_run(args, directory, "skip_call", 20, "MismatchError")
    first = verdict["verdicts"][0]
    if (first["kind"], first["sequence"]) != ("mismatch", 20):
        raise Failure("verdict %s #%s, expected mismatch at #20" % (first["kind"], first["sequence"]))
    groups = {tuple(g["ranks"]): g["call"] for g in first["groups"]}
    if groups != {(0, 2): "all_reduce count=1024 float32 op=sum", (1,): "broadcast count=16 int32 root=0"}:
        raise Failure("unexpected groups %s" % groups)
    expect_in("DIVERGED at [0,1,2]#0 #20 (mismatch)", text, "collective_trace")
    expect_in("ranks 0 and 2 called all_reduce count=1024 float32 op=sum; rank 1 called broadcast",
              text, "collective_trace")
    return "every rank dumped on MismatchError; collective_trace: diverged at #20, rank 1 called broadcast"


def flight_abort_in_flight(args, directory):
    # Ranks 0 and 2 have 4 all_reduce_async in flight (rank 1 makes none)
    # and abort: the dump written when #0 ends aborted names #1-#3 as
    # queued, and collective_trace lists each with where it stopped.
    run = MpiRun(args, ["abort_in_flight", VICTIM], timeout_s=20,
                 extra_env={"COLLECTIVE_FLIGHT_RECORDER_DIR": directory})
    try:
        run.wait_ready()
        for _, match in run.wait_for(r"ERROR rank=(\d+) class=(\w+) ", len(survivors()), 30,
                                     what="an ERROR from every rank that aborted"):
            if match.group(2) != "CommunicationError":
                raise Failure("rank %s raised %s, expected CommunicationError" %
                              (match.group(1), match.group(2)))
        # Every rank prints before a barrier, then leaves without
        # MPI_Finalize (the communicator failed): mpirun's exit status is not
        # the verdict.
        run.wait_exit(20)
        if run.matching(r"WRONG"):
            raise Failure("a wait() did not raise after the abort")
    finally:
        finish(run)
    verdict, text = trace_verdict(args, directory, len(survivors()))
    flying = {item["rank"]: item["calls"] for item in verdict["in_flight"]}
    for rank in survivors():
        with open(os.path.join(directory, "collective_flight_record.%d.json" % rank)) as file:
            dump = json.load(file)
        if "abort_in_flight" not in dump["reason"]:
            raise Failure("rank %d dumped on %r, not on the abort" % (rank, dump["reason"]))
        comm = [c for c in dump["communicators"] if c["calls"]][-1]
        calls = {call["seq"]: call for call in comm["calls"]}
        if sorted(calls) != [0, 1, 2, 3] or calls[0]["state"] != "failed":
            raise Failure("rank %d's dump: %s; expected #0 failed and #1-#3" % (rank, comm["calls"]))
        for seq in (1, 2, 3):
            call = calls[seq]
            if call["state"] != "queued" or call.get("queued") is None or call["start"] is not None:
                raise Failure("rank %d #%d: state %r queued %r start %r; expected queued, not started" %
                              (rank, seq, call["state"], call.get("queued"), call["start"]))
        listed = [(c["seq"], c["state"]) for c in flying.get(rank, [])]
        if listed != [(1, "queued"), (2, "queued"), (3, "queued")]:
            raise Failure("collective_trace lists rank %d's calls in flight as %s" % (rank, listed))
    expect_in("in flight on rank 0, communicator [0,1,2]#0:", text, "collective_trace")
    expect_in("#1 all_reduce count=1024 float32 op=sum: queued for ", text, "collective_trace")
    expect_in("behind all_reduce #0 (failed)", text, "collective_trace")
    return ("the dumps written at the abort show #0 failed and #1-#3 queued; collective_trace "
            "lists each call in flight with where it stopped")


def mismatch_async(args):
    # Calls in flight disagree: rank 1 skips call #20 (an all_reduce_async)
    # of batches of 4 all_reduce_async/broadcast_async, so its #20 is the
    # others' #21, a broadcast. Every rank's Work::wait raises MismatchError
    # at #20 with the blocking call's text, naming both calls; no rank hangs.
    run = MpiRun(args, ["skip_call_async", VICTIM], timeout_s=20)
    try:
        run.wait_ready()
        started = time.time()
        pattern = r"ERROR rank=(\d+) class=(\w+) at=([\d.]+) calls=(\d+) what=(.*)"
        found = run.wait_for(pattern, RANKS, 30, what="an ERROR from every rank")
        ranks = set()
        for _, match in found:
            rank, klass, calls, what = (int(match.group(1)), match.group(2), int(match.group(4)),
                                        match.group(5))
            ranks.add(rank)
            if klass != "MismatchError":
                raise Failure("rank %d raised %s, expected MismatchError: %s" % (rank, klass, what))
            own = "broadcast #20 (rank 1)" if rank == VICTIM else "all_reduce #20 (rank %d)" % rank
            for needle in (own, "all_reduce", "broadcast"):
                if needle not in what:
                    raise Failure("rank %d: '%s' missing from: %s" % (rank, needle, what))
            if calls != 20:
                raise Failure("rank %d completed %d calls before the error, expected 20" % (rank, calls))
        if ranks != set(range(RANKS)):
            raise Failure("errors from ranks %s, expected every rank" % sorted(ranks))
        if run.matching(r"WRONG|DONE"):
            raise Failure("a rank finished or computed a wrong result despite the mismatch")
        run.wait_exit(20)
        return ("every rank's Work::wait raised MismatchError at #20 naming all_reduce and broadcast, "
                "%.2f s after the start" % (time.time() - started))
    finally:
        finish(run)


def run_trace_tool(args, directory, extra=()):
    """collective_trace on `directory`: (exit status, stdout, stderr)."""
    result = subprocess.run([sys.executable, args.trace_tool, directory] + list(extra),
                            capture_output=True, text=True, timeout=30)
    return result.returncode, result.stdout, result.stderr


def flight_unusable_dumps(args, directory):
    # Real dumps (skip_call: every rank dumps on MismatchError; its second
    # communicator made no call), then copies spoiled the ways a user's
    # files are: collective_trace must name the file and what is wrong,
    # with exit 2 and no traceback; a rank without a dump is named with its
    # missing file, and never gives a verdict at #-1.
    dumps_of_failing_run(args, directory, "skip_call", 20, "MismatchError")
    names = {r: "collective_flight_record.%d.json" % r for r in range(RANKS)}
    original = {}
    for rank, name in names.items():
        with open(os.path.join(directory, name), "rb") as stream:
            original[rank] = stream.read()

    def spoiled(case, rank, content):
        """A copy of the dumps where rank's file holds `content` (None: absent)."""
        target = os.path.join(directory, case)
        os.mkdir(target)
        for r, name in names.items():
            data = content if r == rank else original[r]
            if data is not None:
                with open(os.path.join(target, name), "wb") as stream:
                    stream.write(data)
        return target

    def edited(rank, edit):
        dump = json.loads(original[rank])
        edit(dump)
        return json.dumps(dump).encode()

    def set_field(path, value):
        def edit(dump):
            record = dump
            for key in path[:-1]:
                record = record[key]
            if value is KeyError:
                del record[path[-1]]
            else:
                record[path[-1]] = value
        return edit

    unusable = [
        ("truncated", 2, original[2][:len(original[2]) // 2], ["truncated"]),
        ("empty", 0, b"", ["the file is empty"]),
        ("garbage", 1, b"\x89PNG\r\n\x1a\n\x00\xff\xfe" * 50, ["not text"]),
        ("not_json", 1, b"collective flight record, rank 1\n", ["not valid JSON"]),
        ("json_list", 0, b"[1, 2, 3]\n", ["not an object"]),
        ("wrong_version", 2, edited(2, set_field(["version"], 2)), ["version 2", "reads version 1"]),
        ("wrong_format", 2, edited(2, set_field(["format"], "chrome-trace")), ["not a flight record"]),
        ("no_seq", 0, edited(0, set_field(["communicators", 0, "calls", 0, "seq"], KeyError)),
         ["communicators[0].calls[0]", "no field 'seq'"]),
        ("rank_is_text", 1, edited(1, set_field(["world_rank"], "one")), ["'world_rank'", "not int"]),
        ("bad_state", 2, edited(2, set_field(["communicators", 0, "calls", 0, "state"], "lost")),
         ["state 'lost'"]),
        ("other_job", 2, edited(2, set_field(["world_size"], 5)), ["different jobs", "world_size 3 and 5"]),
    ]
    for case, rank, content, needles in unusable:
        target = spoiled(case, rank, content)
        for extra in ((), ("--json",)):
            status, out, err = run_trace_tool(args, target, extra)
            what = "collective_trace %s%s (%s)" % (case, " --json" if extra else "", err.strip() or out)
            if "Traceback" in out + err:
                raise Failure("%s: printed a traceback" % what)
            if status != 2:
                raise Failure("%s: exit %d, expected 2 (unusable input)" % (what, status))
            expected_file = os.path.join(target, names[rank])
            if case != "other_job":
                expect_in(expected_file, err, what)
            for needle in needles:
                expect_in(needle, err, what)

    # Rank 1's dump missing: the others still diverge; rank 1 is named
    # with its file, and no verdict is at #-1 (the second communicator made
    # no call).
    target = spoiled("missing_rank", 1, None)
    status, out, err = run_trace_tool(args, target)
    what = "collective_trace with rank 1's dump missing"
    if "Traceback" in out + err or status != 1:
        raise Failure("%s: exit %d, expected 1: %s%s" % (what, status, out, err))
    expect_in("missing: no dump from rank 1 (%s does not exist)" % os.path.join(target, names[1]),
              out, what)
    if "#-1" in out:
        raise Failure("%s: a verdict at #-1:\n%s" % (what, out))

    # Dumps of ranks 0 and 2 from before the divergence (every call they
    # recorded agrees; their second communicator made none), rank 1's
    # missing: incomplete, exit 3, not DIVERGED ... #-1.
    def before_call_20(dump):
        for entry in dump["communicators"]:
            entry["calls"] = [c for c in entry["calls"] if c["seq"] < 20]
            entry["calls_started"] = min(entry["calls_started"], 20)
            entry.pop("waiting", None)
            for call in entry["calls"]:
                if call["state"] != "finished":
                    raise Failure("call %d of rank %d is %s" % (call["seq"], dump["world_rank"], call["state"]))
    target = os.path.join(directory, "before_divergence")
    os.mkdir(target)
    for rank in (0, 2):
        with open(os.path.join(target, names[rank]), "wb") as stream:
            stream.write(edited(rank, before_call_20))
    status, out, err = run_trace_tool(args, target)
    what = "collective_trace on agreeing dumps with rank 1's missing"
    if "Traceback" in out + err or status != 3:
        raise Failure("%s: exit %d, expected 3 (incomplete): %s%s" % (what, status, out, err))
    expect_in("missing: no dump from rank 1", out, what)
    expect_in("INCOMPLETE", out, what)
    if "#-1" in out or "DIVERGED" in out:
        raise Failure("%s: a bogus verdict:\n%s" % (what, out))
    return ("%d spoiled copies of real dumps: exit 2 naming the file and the fault; a missing "
            "dump named with its file (exit 1 beside a divergence, 3 alone), never #-1" % len(unusable))


def flight_two_comms(args, directory):
    # Rank 1 calls two communicators in the other order: each side waits
    # on one communicator for the ranks that wait on the other; every rank
    # times out and dumps.
    verdict, text = dumps_of_failing_run(args, directory, "two_comms", 2, "TimeoutError")
    found = {(v["communicator"], v["sequence"]): v for v in verdict["verdicts"]}
    first, second = found.get(("[0,1,2]#0", 4)), found.get(("[0,1,2]#1", 4))
    if not first or not second:
        raise Failure("expected verdicts at #4 on both communicators, got %s" % sorted(found))
    if first["missing"] != [1] or second["missing"] != [0, 2]:
        raise Failure("missing %s and %s, expected [1] and [0, 2]" % (first["missing"], second["missing"]))
    if "all_reduce #4 on communicator [0,1,2]#1" not in first["instead"]["1"]:
        raise Failure("rank 1's activity not named: %s" % first["instead"])
    if not verdict["deadlock"]:
        raise Failure("no deadlock reported")
    expect_in("DEADLOCK: ranks 0 and 2 wait on [0,1,2]#0 for rank 1, who wait on [0,1,2]#1 for "
              "ranks 0 and 2", text, "collective_trace")
    return "every rank timed out and dumped; collective_trace: #4 on both communicators, deadlock named"


def wait_files(directory, count, within_s):
    deadline = time.time() + within_s
    while time.time() < deadline:
        names = [f for f in os.listdir(directory) if f.endswith(".json")]
        if len(names) >= count:
            return names
        time.sleep(0.02)
    raise Failure("%d dumps not written within %.0f s: %s" % (count, within_s, os.listdir(directory)))


def flight_stop_signal(args, directory):
    # SIGUSR1 dumps every rank of a healthy run without disturbing it; with
    # rank 1 stopped, the others' dumps show the call they wait in and name
    # rank 1; after SIGCONT every rank finishes with correct results.
    run = MpiRun(args, ["loop", VICTIM, 4], timeout_s=20,
                 extra_env={"COLLECTIVE_FLIGHT_RECORDER_DIR": directory})
    try:
        run.wait_ready()
        run.wait_for(r"PROGRESS rank=\d+ calls=1000", RANKS, 60, what="1000 calls on every rank")
        for pid in run.pids.values():
            os.kill(pid, signal.SIGUSR1)
        wait_files(directory, RANKS, 5)
        for name in os.listdir(directory):
            os.unlink(os.path.join(directory, name))
        os.kill(run.pids[VICTIM], signal.SIGSTOP)
        time.sleep(0.5)
        for rank in survivors():
            os.kill(run.pids[rank], signal.SIGUSR1)
        wait_files(directory, len(survivors()), 5)
        time.sleep(0.1)
        os.kill(run.pids[VICTIM], signal.SIGCONT)
        run.wait_for(r"DONE rank=\d+", RANKS, 30, what="DONE from every rank")
        if run.wait_exit(20) != 0:
            raise Failure("mpirun failed after SIGUSR1 and SIGSTOP/SIGCONT")
        if run.matching(r"ERROR|WRONG"):
            raise Failure("an error after SIGUSR1")
    finally:
        finish(run)
    verdict, text = trace_verdict(args, directory, len(survivors()))
    first = verdict["verdicts"][0]
    if first["kind"] != "missing" or first["missing"] != [VICTIM] or first["no_dump"] != [VICTIM]:
        raise Failure("unexpected verdict %s" % first)
    expect_in("no dump from rank 1", text, "collective_trace")
    expect_in("waiting for rank 1", text, "collective_trace")
    return ("SIGUSR1 dumped every rank without disturbing the run; with rank 1 stopped the others' "
            "dumps name it; collective_trace names rank 1")


def flight(scenario):
    def run(args):
        if not args.trace_tool:
            raise Failure("--trace-tool is required")
        directory = tempfile.mkdtemp(prefix="flight-")
        try:
            return scenario(args, directory)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    return run


def finish(run):
    failing = sys.exc_info()[0] is not None
    for (_, stream, text) in run.lines:
        if failing or text.startswith("ERROR") or "stalled for" in text or "noticed" in text:
            print("  [%s] %s" % (stream, text))
    left = run.cleanup()
    if left:
        run.dump()
        raise Failure("processes left behind: %s" % left)


SCENARIOS = {
    "kill_mid_loop": lambda a: kill_mid_loop(a, recovery=False),
    "kill_mid_loop_mpi_algorithm": lambda a: kill_mid_loop(a, recovery=False, algorithm="mpi"),
    "kill_mid_loop_recovery": lambda a: kill_mid_loop(a, recovery=True),
    "kill_mid_loop_recovery_ring": lambda a: kill_mid_loop(a, recovery=True, algorithm="ring"),
    "kill_in_blocking_mpi_recovery": kill_in_blocking_mpi,
    # Calls in flight (all_reduce_async): the same errors, from Work::wait.
    "kill_mid_loop_async": lambda a: kill_mid_loop(a, recovery=False, worker_scenario="loop_async"),
    "kill_mid_loop_recovery_async": lambda a: kill_mid_loop(
        a, recovery=True, worker_scenario="loop_async"),
    "stop_past_timeout_async": lambda a: stop_past_timeout(a, ("loop_async",)),
    "mismatch_async": mismatch_async,
    "stop_then_resume": stop_then_resume,
    "stop_past_timeout": stop_past_timeout,
    # The shared-memory all_to_all's own waits (the cross-rank check off, so
    # that the fault meets the exchange rather than the check before it):
    # the same errors as all_reduce's.
    "kill_mid_loop_recovery_all_to_all": lambda a: kill_mid_loop(
        a, recovery=True, algorithm="shared_memory", worker_scenario="loop_all_to_all",
        validate=False),
    "stop_past_timeout_all_to_all": lambda a: stop_past_timeout(
        a, ("loop_all_to_all", "shared_memory"), validate=False),
    "kill_mid_loop_recovery_all_to_all_large": lambda a: kill_mid_loop(
        a, recovery=True, algorithm="shared_memory", worker_scenario="loop_all_to_all_large",
        validate=False),
    "stop_past_timeout_all_to_all_large": lambda a: stop_past_timeout(
        a, ("loop_all_to_all_large", "shared_memory"), validate=False),
    "stop_past_timeout_return": stop_past_timeout_return,
    "stop_past_timeout_all_to_all_pairwise": lambda a: stop_past_timeout_all_to_all(a, "pairwise"),
    "stop_past_timeout_all_to_all_bruck": lambda a: stop_past_timeout_all_to_all(a, "bruck"),
    "kill9_then_reclaim": kill9_then_reclaim,
    "allocated_sigterm_mpirun": lambda a: allocated_then_signalled(a, "sigterm_mpirun"),
    "allocated_sigint_mpirun": lambda a: allocated_then_signalled(a, "sigint_mpirun"),
    "allocated_sigkill_rank": lambda a: allocated_then_signalled(a, "sigkill_rank"),
    "never_call": never_call,
    "never_world": never_world,
    "exit_abrupt": lambda a: exit_abrupt(a, recovery=False),
    "exit_abrupt_recovery": lambda a: exit_abrupt(a, recovery=True),
    "exit_clean": exit_clean,
    "flight_skip_call": flight(flight_skip_call),
    "flight_two_comms": flight(flight_two_comms),
    "flight_stop_signal": flight(flight_stop_signal),
    "flight_unusable_dumps": flight(flight_unusable_dumps),
    "flight_abort_in_flight": flight(flight_abort_in_flight),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--worker", required=True)
    parser.add_argument("--trace-tool", help="collective_trace (the flight_* scenarios)")
    parser.add_argument("scenario", choices=sorted(SCENARIOS) + ["all"])
    args = parser.parse_args()
    names = sorted(SCENARIOS) if args.scenario == "all" else [args.scenario]
    failed = 0
    for name in names:
        start = time.time()
        try:
            summary = SCENARIOS[name](args)
            print("PASS %s: %s [%.1f s]" % (name, summary, time.time() - start), flush=True)
        except Failure as failure:
            failed += 1
            print("FAIL %s: %s" % (name, failure), flush=True)
        except Exception:  # a bug of the driver itself: still a clear FAIL
            failed += 1
            traceback.print_exc()
            print("FAIL %s: the driver raised (traceback above)" % name, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""mpirun with its stdout and stderr collected line by line, with times: the
one harness of the fault drivers (tests/reliability/fault_driver.py,
shrink_driver.py, tests/strategies/ps_fault_driver.py, elastic_train.py),
which harm real processes and check what the others report, and when; and
their shared main (run_scenarios) and end of a run (finish)."""

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback


class Failure(Exception):
    pass


class Skip(Exception):
    """A scenario this machine cannot run: exit status 77, ctest's skip."""


def alive(pid):
    """Whether pid is a live process (a zombie counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


class CapturedMpirun:
    """Starts `command` (an mpirun line) in a session of its own, with
    `env_updates` over this environment and Open MPI allowed to run as root;
    `ranks` is how many READY lines wait_ready() expects. `stop_gently`:
    cleanup() sends SIGTERM first, so that a launcher with its own clean-up
    (scripts/netns_cluster.sh deletes its namespaces) gets to run it."""

    def __init__(self, command, env_updates, ranks, stop_gently=False):
        env = dict(os.environ)
        env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
        env.update(env_updates)
        print("$ " + " ".join(command), flush=True)
        self.ranks = ranks
        self.stop_gently = stop_gently
        self.lines = []  # (time, stream, text)
        self.lock = threading.Lock()
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env=env, text=True, start_new_session=True)
        self.readers = [threading.Thread(target=self._read, args=(self.process.stdout, "out")),
                        threading.Thread(target=self._read, args=(self.process.stderr, "err"))]
        for reader in self.readers:
            reader.start()
        self.pids = {}
        self.exit_time = None

    def _read(self, stream, name):
        for line in stream:
            with self.lock:
                self.lines.append((time.time(), name, line.rstrip("\n")))

    def matching(self, pattern, stream="out"):
        """(time, match) of every line of `stream` ("out", "err", None: both)."""
        regex = re.compile(pattern)
        with self.lock:
            return [(t, m) for (t, s, text) in self.lines if stream in (None, s)
                    for m in [regex.search(text)] if m]

    def wait_for(self, pattern, count=1, within_s=60, stream="out", what=None):
        deadline = time.time() + within_s
        while time.time() < deadline:
            found = self.matching(pattern, stream)
            if len(found) >= count:
                return found
            if self.process.poll() is not None:
                time.sleep(0.3)  # let the readers drain
                found = self.matching(pattern, stream)
                if len(found) >= count:
                    return found
                raise Failure("mpirun exited (rc %s) before %s" % (self.process.returncode,
                                                                   what or pattern))
            time.sleep(0.02)
        raise Failure("not seen within %.0f s: %s" % (within_s, what or pattern))

    def wait_ready(self):
        """Every rank's "READY rank=R pid=P" line; returns when they were all seen."""
        for _, match in self.wait_for(r"READY rank=(\d+) pid=(\d+)", self.ranks, 60,
                                      what="every READY"):
            self.pids[int(match.group(1))] = int(match.group(2))
        return time.time()

    def wait_exit(self, within_s):
        try:
            self.process.wait(timeout=within_s)
        except subprocess.TimeoutExpired:
            raise Failure("mpirun still running %.0f s later" % within_s)
        self.exit_time = time.time()
        for reader in self.readers:
            reader.join(timeout=5)
        return self.process.returncode

    def cleanup(self):
        """Kills whatever is left; returns the worker pids that were still alive."""
        left = []
        if self.process.poll() is None and self.stop_gently:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
        deadline = time.time() + 5
        for pid in self.pids.values():
            while alive(pid) and time.time() < deadline:
                time.sleep(0.05)
            if alive(pid):
                left.append(pid)
                try:
                    os.kill(pid, signal.SIGCONT)
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for reader in self.readers:
            reader.join(timeout=5)
        return left

    def dump(self):
        with self.lock:
            for (_, s, text) in self.lines:
                print("  [%s] %s" % (s, text))


def finish(run):
    """Ends what is left of `run`, in a scenario's `finally`: its output is printed when the
    scenario is failing or left processes behind, which then fails it."""
    failing = sys.exc_info()[0] is not None
    left = run.cleanup()
    if failing or left:
        run.dump()
    if left:
        raise Failure("processes left behind: %s" % left)


def run_scenarios(scenarios, description, program_flag):
    """A driver's main: `--mpiexec MPIEXEC PROGRAM_FLAG PATH SCENARIO` runs scenarios[SCENARIO]
    (given the parsed arguments) and prints one line, PASS, FAIL or SKIP with its scenario and
    why; returns the exit status (0, 1 or 77). A driver error fails with its traceback."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument(program_flag, required=True)
    parser.add_argument("scenario", choices=sorted(scenarios))
    args = parser.parse_args()
    try:
        summary = scenarios[args.scenario](args)
    except Skip as skip:
        print("SKIP %s: %s" % (args.scenario, skip), flush=True)
        return 77
    except Failure as failure:
        print("FAIL %s: %s" % (args.scenario, failure), flush=True)
        return 1
    except Exception:  # noqa: BLE001 - any driver error fails the test, with its trace
        traceback.print_exc()
        print("FAIL %s: driver error" % args.scenario, flush=True)
        return 1
    print("PASS %s: %s" % (args.scenario, summary), flush=True)
    return 0

#!/usr/bin/env python3
"""A loaded machine, made on purpose: runs one test of an MPI gtest binary
under mpiexec and, each time rank 0 prints that test's '[ RUN      ]' line,
stops one rank (SIGSTOP) after a delay for a while, then continues it
(SIGCONT): a rank that loses the processor for hundreds of milliseconds at
the moment a test's timing assumes it runs. The test passes when the binary
passes every repetition, one per (delay, pause) pair; the last pair is
best 0:0 (no pause), so that no pause falls on the job's end.

usage: paused_rank_driver.py --mpiexec M --ranks N --test BINARY
           --filter GTEST_FILTER --rank R --pauses D:P[,D:P...] [-- extra mpiexec flags]
"""
import argparse
import os
import signal
import subprocess
import sys
import threading
import time


def rank_pid(launcher_pid, binary, rank):
    """The pid of world rank `rank` among the launcher's children."""
    name = os.path.basename(binary)[:15]  # /proc/PID/comm keeps 15 characters
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % entry) as comm:
                if comm.read().strip() != name:
                    continue
            with open("/proc/%s/stat" % entry) as stat:
                if int(stat.read().rsplit(")", 1)[1].split()[1]) != launcher_pid:
                    continue
            with open("/proc/%s/environ" % entry, "rb") as environ:
                for item in environ.read().split(b"\0"):
                    if item.startswith(b"OMPI_COMM_WORLD_RANK=") or item.startswith(b"PMI_RANK="):
                        if int(item.split(b"=", 1)[1]) == rank:
                            return int(entry)
        except (OSError, ValueError, IndexError):
            continue
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--test", required=True)
    parser.add_argument("--filter", required=True)
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--pauses", required=True)
    parser.add_argument("flags", nargs="*")
    args = parser.parse_args()
    pauses = [tuple(float(x) for x in pair.split(":")) for pair in args.pauses.split(",")]
    command = [args.mpiexec, "-n", str(args.ranks)] + args.flags + [
        args.test, "--gtest_filter=" + args.filter, "--gtest_repeat=%d" % len(pauses)]
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    print("$ " + " ".join(command), flush=True)
    launcher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", env=env)
    stopped = []  # pids stopped and not yet continued

    def pause_later(delay, pause):
        if pause <= 0:
            return
        time.sleep(delay)
        pid = rank_pid(launcher.pid, args.test, args.rank)
        if pid is None:
            print("paused_rank_driver: rank %d not found" % args.rank, flush=True)
            return
        try:
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
            time.sleep(pause)
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass  # the rank ended (the launcher ends a job's ranks together)
        finally:
            if pid in stopped:
                stopped.remove(pid)
        print("paused_rank_driver: rank %d (pid %d) stopped for %.2f s, %.2f s after the "
              "test started" % (args.rank, pid, pause, delay), flush=True)

    pausers = []
    started = 0
    deadline = time.monotonic() + 240
    for line in launcher.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if "[ RUN      ]" in line and started < len(pauses):
            pauser = threading.Thread(target=pause_later, args=pauses[started], daemon=True)
            pauser.start()
            pausers.append(pauser)
            started += 1
        if time.monotonic() > deadline:
            launcher.kill()
            break
    code = launcher.wait()
    for pauser in pausers:
        pauser.join()
    for pid in list(stopped):
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    if code == 0 and started == len(pauses):
        print("PASS paused_rank %s" % args.filter)
        return 0
    print("FAIL paused_rank %s: exit %d, %d of %d repetitions started"
          % (args.filter, code, started, len(pauses)))
    return 1


if __name__ == "__main__":
    sys.exit(main())

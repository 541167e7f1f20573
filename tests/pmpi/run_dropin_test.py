#!/usr/bin/env python3
"""Runs dropin_program under mpirun and checks what the drop-in did.

run_dropin_test.py MODE RANKS PROGRAM [DROPIN] [-- program args]
  plain    no drop-in: the program's own checks pass and nothing is logged
  preload  LD_PRELOAD=DROPIN: the program's checks pass; on every rank the
           drop-in's summary accounts for exactly the program's calls
           (served + passed + failed == calls: libcollective's own MPI calls
           are not intercepted back) and every function was served at least once
  linked   PROGRAM is linked with the drop-in: as preload
  threads  LD_PRELOAD, --threads: an MPI_THREAD_MULTIPLE program whose threads
           all-reduce on separate communicators at once; the results are exact
           and the drop-in served every one of those calls
  mismatch LD_PRELOAD, --mismatch: the mismatch reaches the error handler
  nonblocking LD_PRELOAD, dropin_nonblocking_program: every MPI_I* call the
           program expects served (its "to pass" counts name the others) was
           served, none failed, the rest passed; MPI reports
           MPI_THREAD_MULTIPLE (the drop-in's MPI_Init asks for it). With
           COLLECTIVE_PMPI_THREAD_MULTIPLE=0 (from ctest) MPI keeps the
           program's level and every MPI_I* call is passed, logged with the
           thread level as the reason
  nonblocking_mismatch LD_PRELOAD, dropin_nonblocking_program --mismatch: a
           mismatched MPI_Iallreduce fails from MPI_Wait on every rank, counted
           failed once and not served, the library's message on stderr
  badtimeout LD_PRELOAD, COLLECTIVE_PMPI_TIMEOUT=soon: the first served call
           fails through MPI_ERRORS_ARE_FATAL, naming the variable and value
DROPIN_SHM_SIZE=SIZE (from ctest): the job runs in a private mount namespace
whose /dev/shm is a tmpfs of SIZE (Open MPI's own shared memory in a scratch
directory); the library may then log at most one WARN line per rank (a full
/dev/shm is reported once per process). Skipped (77) without the privilege.
Arguments after "--" go to the program (dropin_semantics_program's modes).
Every run with the drop-in: no log line may name "rank -1" (log lines name
the world rank); with the program's --stall, every rank but 0 must log the
library's stall warning, naming itself.
Extra environment (COLLECTIVE_ALGORITHM=mpi, ...) comes from ctest.
"""
import os
import re
import subprocess
import sys

STARTED_FUNCTIONS = ["MPI_Iallreduce", "MPI_Ireduce_scatter_block", "MPI_Iallgather",
                     "MPI_Ibcast", "MPI_Ireduce", "MPI_Ibarrier", "MPI_Ialltoall",
                     "MPI_Ialltoallv", "MPI_Iallgatherv", "MPI_Ireduce_scatter", "MPI_Igather",
                     "MPI_Igatherv", "MPI_Iscatter", "MPI_Iscatterv"]
FUNCTIONS = ["MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Allgather", "MPI_Bcast",
             "MPI_Reduce", "MPI_Barrier", "MPI_Alltoall", "MPI_Alltoallv", "MPI_Allgatherv",
             "MPI_Reduce_scatter", "MPI_Gather", "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv"]


def fail(message, output=""):
    sys.stderr.write(output)
    sys.stderr.write(f"run_dropin_test: FAIL: {message}\n")
    sys.exit(1)


def preload_list(dropin):
    """LD_PRELOAD's value: the drop-in, after the sanitizer runtime it links
    (a sanitizer build): ASan refuses to run unless its runtime comes first."""
    runtimes = []
    try:
        ldd = subprocess.run(["ldd", dropin], stdout=subprocess.PIPE, text=True).stdout
        runtimes = re.findall(r"=> (\S*lib[at]san\.so\S*)", ldd)
    except OSError:
        pass
    return ":".join(runtimes + [dropin])


def main():
    program_args = []
    if "--" in sys.argv:
        program_args = sys.argv[sys.argv.index("--") + 1:]
        del sys.argv[sys.argv.index("--"):]
    mode, ranks, program = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    dropin = sys.argv[4] if len(sys.argv) > 4 else ""
    mpiexec = os.environ.get("MPIEXEC", "mpiexec")
    # Open MPI: oversubscribe, unbound, environment forwarded with -x.
    # MPICH (Hydra): neither flag is needed (or accepted); -genv.
    mpich = os.environ.get("MPI_FLAVOR") == "mpich"
    command = [mpiexec, "-n", str(ranks)]
    if not mpich:
        command += ["--oversubscribe", "--bind-to", "none"]
    env = dict(os.environ)
    # A preload the caller set (the MPICH runs' yield shim,
    # scripts/test_mpich.sh) stays, after the drop-in where there is one.
    inherited_preload = env.pop("LD_PRELOAD", "")

    def forward(name, value):
        env[name] = value
        command.extend(["-genv", name, value] if mpich else ["-x", f"{name}={value}"])

    if mode != "plain":
        forward("COLLECTIVE_PMPI_LOG", "1")
    if mode == "badtimeout":
        forward("COLLECTIVE_PMPI_TIMEOUT", "soon")
    if mode == "nonblocking" and "COLLECTIVE_PMPI_THREAD_MULTIPLE" in os.environ:
        forward("COLLECTIVE_PMPI_THREAD_MULTIPLE", os.environ["COLLECTIVE_PMPI_THREAD_MULTIPLE"])
    if mode in ("preload", "threads", "mismatch", "badtimeout", "nonblocking",
                "nonblocking_mismatch"):
        forward("LD_PRELOAD", ":".join(filter(None, [preload_list(dropin), inherited_preload])))
        env.pop("LD_PRELOAD")  # for the ranks only, not for the launcher
    if inherited_preload:
        env["LD_PRELOAD"] = inherited_preload
    shm_size = os.environ.get("DROPIN_SHM_SIZE")
    scratch = None
    if shm_size:
        if subprocess.run(["unshare", "-m", "true"], stderr=subprocess.DEVNULL).returncode != 0:
            print("SKIP: cannot make a mount namespace here (not root?)")
            sys.exit(77)
        import tempfile
        scratch = tempfile.mkdtemp()
        command = (["unshare", "-m", "bash", "-c",
                    'mount --make-rprivate / && mount -t tmpfs -o size="$0" tmpfs /dev/shm '
                    '&& exec "$@"', shm_size] + command +
                   ["--mca", "btl_vader_backing_directory", scratch])
    command.append(program)
    if mode in ("threads", "mismatch"):
        command.append("--" + mode)
    if mode == "nonblocking_mismatch":
        command.append("--mismatch")
    command.extend(program_args)
    result = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, timeout=600)
    output = result.stdout
    if scratch:
        import shutil
        shutil.rmtree(scratch, ignore_errors=True)
    if mode == "badtimeout":
        expected = 'COLLECTIVE_PMPI_TIMEOUT=soon is not a number of seconds'
        if result.returncode == 0 or expected not in output:
            fail(f"expected a failing run naming the variable ({expected!r}), "
                 f"got exit {result.returncode}", output)
        print(f"run_dropin_test {mode} np{ranks}: OK")
        return
    if result.returncode != 0 or not re.search(rf"dropin_\w*program: OK on {ranks} ranks", output):
        fail(f"the program failed (exit {result.returncode})", output)
    unnamed = re.search(r"^\[\S+ \w+ rank -1 .*$", output, re.M)
    if unnamed:
        fail(f"a log line does not name its rank: {unnamed.group(0)}", output)
    if shm_size:
        warnings = re.findall(r"^\[collective WARN rank (\d+) .*$", output, re.M)
        if len(warnings) > ranks:
            fail(f"{len(warnings)} WARN lines from {ranks} ranks in a {shm_size} /dev/shm: "
                 "a full /dev/shm must be reported once per process", output)
    if "--stall" in program_args and mode != "plain":
        warned = {int(m.group(1)) for m in re.finditer(
            r"^\[collective WARN rank (\d+) \S+\] .*stalled for", output, re.M)}
        if not set(range(1, ranks)) <= warned:
            fail(f"expected a stall warning from ranks 1..{ranks - 1}, got {sorted(warned)}", output)

    # Each summary ends at the end of its line or where another rank's line
    # starts on the same one (the launcher does not keep lines apart).
    summaries = {int(m.group(1)): m.group(2) for m in re.finditer(
        r"libcollective_mpi rank (\d+): summary: (.*?)"
        r"(?=libcollective_mpi rank \d+: summary:|dropin_program rank \d+ calls:|$)",
        output, re.M)}
    if mode == "plain":
        if summaries:
            fail("a drop-in summary appeared without the drop-in", output)
        print(f"run_dropin_test {mode} np{ranks}: OK")
        return
    if sorted(summaries) != list(range(ranks)):
        fail(f"expected a summary from every rank, got ranks {sorted(summaries)}", output)

    for rank, summary in summaries.items():
        counts = {m.group(1): tuple(int(x) for x in m.group(2, 3, 4)) for m in re.finditer(
            r"(MPI_\w+) (\d+)/(\d+)/(\d+)", summary)}
        if mode == "nonblocking_mismatch":
            want = (1, 0, 1) if ranks > 1 else (2, 0, 0)
            if counts.get("MPI_Iallreduce", (0, 0, 0)) != want:
                fail(f"rank {rank}: expected MPI_Iallreduce served/passed/failed {want}: "
                     f"{summary}", output)
            if ranks > 1 and not re.search(
                    rf"libcollective_mpi: MPI_Iallreduce: all_reduce #\d+ \(rank {rank}\): "
                    r"the ranks disagree", output):
                fail(f"rank {rank}: no stderr line with the library's mismatch message", output)
            continue
        if mode == "mismatch":
            if ranks > 1 and counts.get("MPI_Allreduce", (0, 0, 0))[2] != 1:
                fail(f"rank {rank}: expected 1 failed MPI_Allreduce: {summary}", output)
            continue
        # Only this rank's "NAME count;" pairs: the launcher may print another
        # rank's line right after it, without a line break between them.
        calls_line = re.search(rf"dropin_program rank {rank} calls:((?: MPI_\w+ \d+;)*)", output)
        if not calls_line:
            fail(f"rank {rank}: the program printed no call counts", output)
        calls = {m.group(1): int(m.group(2)) for m in re.finditer(r"(MPI_\w+) (\d+);",
                                                                   calls_line.group(1))}
        if mode == "nonblocking":
            check_nonblocking(rank, counts, calls, summary, output, program_args)
            continue
        if mode == "threads":
            served, passed, failed = counts.get("MPI_Allreduce", (0, 0, 0))
            if served != calls["MPI_Allreduce"] or passed != 0 or failed != 0 or served == 0:
                fail(f"rank {rank}: an MPI_THREAD_MULTIPLE program's {calls['MPI_Allreduce']} "
                     f"MPI_Allreduce calls must all be served: served {served}, passed "
                     f"{passed}, failed {failed}: {summary}", output)
            continue
        for function in FUNCTIONS:
            if function not in calls:
                continue  # a program that does not count this function (it makes no call of it)
            served, passed, failed = counts.get(function, (0, 0, 0))
            if served + passed + failed != calls[function]:
                fail(f"rank {rank}: {function}: the drop-in saw {served}+{passed}+{failed} calls, "
                     f"the program made {calls[function]}", output)
            if (served == 0 and calls[function] > 0) or failed != 0:
                fail(f"rank {rank}: {function}: served {served}, failed {failed}", output)
    print(f"run_dropin_test {mode} np{ranks}: OK")


def check_nonblocking(rank, counts, calls, summary, output, program_args):
    to_pass_line = re.search(rf"dropin_program rank {rank} calls:.*? to pass:((?: MPI_\w+ \d+,)*)",
                             output)
    if not to_pass_line:
        fail(f"rank {rank}: the program printed no 'to pass' counts", output)
    to_pass = {m.group(1): int(m.group(2)) for m in re.finditer(r"(MPI_\w+) (\d+),",
                                                                to_pass_line.group(1))}
    below_multiple = os.environ.get("COLLECTIVE_PMPI_THREAD_MULTIPLE") == "0"
    for function in STARTED_FUNCTIONS:
        served, passed, failed = counts.get(function, (0, 0, 0))
        made = calls.get(function, 0)
        if made == 0:
            fail(f"rank {rank}: the program made no {function} call", output)
        if below_multiple:
            # Every call passed: the rooted forms by their own rule, the
            # others for the thread level.
            want_served, want_passed = 0, made
        else:
            want_served, want_passed = made - to_pass.get(function, 0), to_pass.get(function, 0)
        if (served, passed, failed) != (want_served, want_passed, 0):
            fail(f"rank {rank}: {function}: the program made {made} calls, expected "
                 f"{want_served} served and {want_passed} passed, the drop-in counted "
                 f"served {served}, passed {passed}, failed {failed}: {summary}", output)
    if below_multiple and "MPI thread level below MPI_THREAD_MULTIPLE" not in summary:
        fail(f"rank {rank}: the passed calls do not name the thread level: {summary}", output)
    level = re.search(r"thread level provided (-?\d+), query (\d+)", output)
    if not level:
        fail("the program did not print the thread level", output)
    # MPI's numbering (Open MPI and MPICH): SINGLE 0, FUNNELED 1, MULTIPLE 3.
    want_level = 3 if not below_multiple else (1 if "--init-funneled" in program_args else 0)
    if int(level.group(2)) != want_level:
        fail(f"MPI_Query_thread gave {level.group(2)}, expected {want_level}", output)


if __name__ == "__main__":
    main()

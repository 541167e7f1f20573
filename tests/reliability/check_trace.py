#!/usr/bin/env python3
"""Runs a program under mpirun with COLLECTIVE_TRACE set and checks the
trace (issue 18): every rank wrote valid JSON in Chrome's trace-event form;
its slices nest (on each thread a slice lies inside the slice it starts in);
every phase slice lies inside a collective's slice; the expected slice
names appear on every rank; and scripts/merge_traces.py merges the ranks
onto one time line with every event. Exits non-zero naming the rank and
what was wrong.

    check_trace.py --mpiexec MPIEXEC --ranks N --merge merge_traces.py
                   --expect NAME[,NAME...] [--inside-collective NAME,...] -- PROGRAM ARGS..."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

EPSILON_US = 0.01  # the files keep nanoseconds; rounding may cross an edge by one


def fail(message):
    print("check_trace: FAIL: " + message, flush=True)
    sys.exit(1)


def check_nesting(rank, events):
    by_thread = {}
    for event in events:
        if event.get("ph") == "X":
            by_thread.setdefault(event["tid"], []).append(event)
    for tid, slices in by_thread.items():
        slices.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for event in slices:
            while stack and event["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - EPSILON_US:
                stack.pop()
            if stack:
                parent = stack[-1]
                if event["ts"] + event["dur"] > parent["ts"] + parent["dur"] + EPSILON_US:
                    fail("rank %d thread %d: '%s' at %.3f (%.3f us) overlaps '%s' at %.3f (%.3f us) "
                         "without nesting in it" % (rank, tid, event["name"], event["ts"], event["dur"],
                                                    parent["name"], parent["ts"], parent["dur"]))
            event["parents"] = [p["name"] for p in stack] + [p["cat"] for p in stack]
            stack.append(event)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--merge", required=True)
    parser.add_argument("--expect", required=True, help="slice names every rank must have")
    parser.add_argument("--inside-collective", default="",
                        help="slice names that must lie inside a collective's slice")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    directory = tempfile.mkdtemp(prefix="trace-")
    try:
        env = dict(os.environ, COLLECTIVE_TRACE=directory)
        run = [args.mpiexec, "-n", str(args.ranks), "--oversubscribe", "--bind-to", "none"] + command
        print("$ COLLECTIVE_TRACE=%s %s" % (directory, " ".join(run)), flush=True)
        done = subprocess.run(run, env=env, capture_output=True, text=True, timeout=240)
        if done.returncode != 0:
            print(done.stdout + done.stderr)
            fail("the program exited %d" % done.returncode)
        expected = [n for n in args.expect.split(",") if n]
        inside = [n for n in args.inside_collective.split(",") if n]
        total = 0
        for rank in range(args.ranks):
            path = os.path.join(directory, "collective_trace.%d.json" % rank)
            try:
                with open(path) as text:
                    events = json.load(text)
            except (OSError, ValueError) as error:
                fail("rank %d: %s is not valid JSON: %s" % (rank, path, error))
            if not isinstance(events, list) or not events:
                fail("rank %d: expected a non-empty JSON array of events" % rank)
            total += len(events)
            for event in events:
                if event.get("pid") != rank:
                    fail("rank %d: event with pid %s: %s" % (rank, event.get("pid"), event))
                if event.get("ph") == "X" and (event["dur"] < 0 or "ts" not in event):
                    fail("rank %d: bad slice %s" % (rank, event))
            check_nesting(rank, events)
            names = {e["name"] for e in events if e.get("ph") == "X"}
            missing = [n for n in expected if n not in names]
            if missing:
                fail("rank %d: no slice named %s (it has %s)" % (rank, missing, sorted(names)))
            for event in events:
                if event.get("ph") == "X" and event["name"] in inside and \
                        "collective" not in event["parents"]:
                    fail("rank %d: '%s' at %.3f is not inside a collective's slice (parents %s)" %
                         (rank, event["name"], event["ts"], event["parents"]))
            counts = {}
            for event in events:
                counts[event["name"]] = counts.get(event["name"], 0) + 1
            print("rank %d: %d events, %s" % (rank, len(events),
                                             ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
        merged_path = os.path.join(directory, "merged.json")
        merge = subprocess.run([sys.executable, args.merge, directory, "-o", merged_path],
                               capture_output=True, text=True, timeout=120)
        print(merge.stdout.strip())
        if merge.returncode != 0:
            fail("merge_traces.py exited %d: %s" % (merge.returncode, merge.stderr))
        with open(merged_path) as text:
            merged = json.load(text)
        events = merged["traceEvents"]
        if len(events) != total:
            fail("merged %d events, the ranks wrote %d" % (len(events), total))
        stamps = [e["ts"] for e in events if "ts" in e]
        if min(stamps) < 0 or sorted({e["pid"] for e in events}) != list(range(args.ranks)):
            fail("merged: times must be >= 0 (%s) with one process per rank (%s)" %
                 (min(stamps), sorted({e["pid"] for e in events})))
        # One time base: the ranks' first collectives overlap (they wait
        # for each other), so their starts lie within a second.
        first = {}
        for e in events:
            if e.get("cat") == "collective":
                first[e["pid"]] = min(first.get(e["pid"], e["ts"]), e["ts"])
        if max(first.values()) - min(first.values()) > 1e6:
            fail("merged: the ranks' first collectives start %.0f us apart" %
                 (max(first.values()) - min(first.values())))
        print("check_trace: OK: %d ranks, %d events, nested, merged" % (args.ranks, total))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()

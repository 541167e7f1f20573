#!/usr/bin/env python3
"""Merges the per-rank traces that COLLECTIVE_TRACE=DIR writes
(DIR/collective_trace.<rank>.json, Chrome's trace-event JSON) into one file
that Perfetto (ui.perfetto.dev) or chrome://tracing opens: one process
track per rank, every rank on one time line.

    scripts/merge_traces.py DIR [-o merged.json]

Each rank writes its slices in microseconds of its steady clock since its
trace started, and a collective_clock metadata event with that start on the
Unix clock; the merge shifts each rank by its start's distance from the
earliest rank's, so ranks on one host share one time base to the
microsecond, and ranks on different hosts as well as their clocks agree
(NTP). The merged file's 0 is the earliest rank's trace start. A rank's file cut short (a process killed before it
closed its trace) is read up to its last complete event."""

import argparse
import glob
import json
import os
import re
import sys


def read_events(path):
    with open(path, encoding="utf-8") as text:
        body = text.read()
    try:
        return json.loads(body)
    except ValueError:
        pass
    # Cut short: keep the complete events (one per line, as written).
    events = []
    for line in body.splitlines():
        line = line.strip().lstrip("[").rstrip(",").rstrip("]")
        if not line:
            continue
        try:
            events.append(json.loads(line))
        except ValueError:
            break
    return events


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory")
    parser.add_argument("-o", "--output", help="merged file (default DIR/collective_trace.json)")
    args = parser.parse_args()
    paths = sorted(glob.glob(os.path.join(args.directory, "collective_trace.*.json")),
                   key=lambda p: int(re.search(r"\.(\d+)\.json$", p).group(1))
                   if re.search(r"\.(\d+)\.json$", p) else -1)
    paths = [p for p in paths if re.search(r"\.\d+\.json$", p)]
    if not paths:
        print("merge_traces: no collective_trace.<rank>.json in %s" % args.directory, file=sys.stderr)
        return 2
    ranks = []
    for path in paths:
        events = read_events(path)
        clock = [e for e in events if e.get("name") == "collective_clock" and e.get("ph") == "M"]
        if not clock:
            print("merge_traces: %s has no collective_clock event" % path, file=sys.stderr)
            return 2
        ranks.append((clock[0]["args"]["unix_ns_at_ts_0"], events))
    # Each rank's ts 0 is its own start: shift every rank by how much later
    # than the earliest one it started, in integer nanoseconds.
    origin_ns = min(start for start, _ in ranks)
    events = []
    for start, rank_events in ranks:
        shift_us = (start - origin_ns) / 1000.0
        for event in rank_events:
            if "ts" in event:
                event["ts"] = round(event["ts"] + shift_us, 3)
        events += rank_events
    origin = origin_ns / 1000.0
    output = args.output or os.path.join(args.directory, "collective_trace.json")
    with open(output, "w", encoding="utf-8") as out:
        json.dump({"traceEvents": events, "displayTimeUnit": "ns",
                   "otherData": {"ranks": len(paths), "time_origin_unix_us": origin}}, out)
        out.write("\n")
    print("merge_traces: %d ranks, %d events -> %s (time 0 = %.6f s Unix)" %
          (len(paths), len(events), output, origin / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())

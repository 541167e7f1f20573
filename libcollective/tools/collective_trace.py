#!/usr/bin/env python3
"""collective_trace: reads the flight-record dumps of every rank of a job
(collective_flight_record.<rank>.json, docs/errors.md, "Flight recorder") and
says which call diverged: the first sequence number, on each communicator,
at which the ranks disagree on what they called or at which some ranks
never arrived; which ranks are missing; and what each of them was doing
instead. Calls in flight (`_async` calls and plans' starts, queued in
program order, then started one at a time) are listed per rank, each with
where it stopped: queued (behind which call), or started and what it waits
for. A queued call has not arrived: the verdict compares the calls started.
A rank that died is named as such where the survivors' dumps say they lost
it (PeerFailedError or Communicator::shrink's agreement), with when; each
shrink is listed with the communicator it made.

    collective_trace [--json] DIR_OR_FILE...

Ranks are world ranks; a communicator is named by its members' world ranks
and how many communicators with those members each process made before it
([0,1,2]#1: the second of ranks 0-2). Exit status (docs/errors.md):
  0  every rank dumped and every communicator's ranks agree
  1  a divergence was found
  2  the input is unusable (no dump, a file that cannot be read, is not a
     flight record of version 1, or is malformed): the message names the
     file and what is wrong
  3  no divergence among the dumps there are, but some ranks left none
     (named, with the file that is missing): the verdict is incomplete
  4  the tool itself failed (a bug: the message says where)"""

import argparse
import glob
import json
import os
import sys
import time

FORMAT = "collective-flight-record"
VERSION = 1


class BadDump(Exception):
    pass


EXIT_AGREE, EXIT_DIVERGED, EXIT_UNUSABLE, EXIT_INCOMPLETE = 0, 1, 2, 3
STATES = ("queued", "started", "finished", "failed")
IN_FLIGHT = ("queued", "started")
DUMP_NAME = "collective_flight_record.%d.json"


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    return (is_int(value) or isinstance(value, float)) and not isinstance(value, bool)


class Shape:
    """Checks one dump's fields, naming the file and the field's path."""

    def __init__(self, name):
        self.name = name

    def fail(self, where, what):
        raise BadDump("%s: %s%s" % (self.name, where + ": " if where else "", what))

    def field(self, record, key, where, kind, optional=False):
        if key not in record:
            if optional:
                return None
            self.fail(where, "no field %r" % key)
        value = record[key]
        checks = {"int": is_int, "number": is_number, "str": lambda v: isinstance(v, str),
                  "list": lambda v: isinstance(v, list), "dict": lambda v: isinstance(v, dict),
                  "number or null": lambda v: v is None or is_number(v),
                  "dict or null": lambda v: v is None or isinstance(v, dict)}
        if not checks[kind](value):
            self.fail(where, "%r is %s, not %s" % (key, json.dumps(value)[:40], kind))
        return value

    def dump(self, dump):
        if not isinstance(dump, dict):
            self.fail("", "the top level is a JSON %s, not an object" % type(dump).__name__)
        if dump.get("format") != FORMAT:
            self.fail("", "not a flight record (format %r, expected %r)" % (dump.get("format"), FORMAT))
        if dump.get("version") != VERSION:
            self.fail("", "a flight record of version %r; this tool reads version %d" %
                      (dump.get("version"), VERSION))
        rank = self.field(dump, "world_rank", "", "int")
        size = self.field(dump, "world_size", "", "int")
        if not 0 <= rank < size:
            self.fail("", "world_rank %d is outside world_size %d" % (rank, size))
        self.field(dump, "reason", "", "str")
        self.field(dump, "dumped_at", "", "number")
        for i, entry in enumerate(self.field(dump, "communicators", "", "list")):
            self.communicator(entry, "communicators[%d]" % i, size)

    def communicator(self, entry, where, world_size):
        if not isinstance(entry, dict):
            self.fail(where, "not an object")
        self.field(entry, "id", where, "str")
        members = self.field(entry, "members", where, "list")
        if not members or not all(is_int(m) and 0 <= m < world_size for m in members):
            self.fail(where, "members %s are not world ranks below %d" % (json.dumps(members)[:60], world_size))
        rank = self.field(entry, "rank", where, "int")
        if not 0 <= rank < len(members):
            self.fail(where, "rank %d is outside its %d members" % (rank, len(members)))
        started = self.field(entry, "calls_started", where, "int")
        if started < 0:
            self.fail(where, "calls_started is negative (%d)" % started)
        if (self.field(entry, "not_recorded", where, "int", optional=True) or 0) < 0:
            self.fail(where, "not_recorded is negative")
        lost = self.field(entry, "lost", where, "dict", optional=True)
        if lost is not None:
            if not all(is_int(r) and 0 <= r < world_size
                       for r in self.field(lost, "ranks", where + ".lost", "list")):
                self.fail(where + ".lost", "ranks are not all world ranks")
            self.field(lost, "at", where + ".lost", "number")
        shrunk = self.field(entry, "shrunk_into", where, "dict", optional=True)
        if shrunk is not None:
            self.field(shrunk, "id", where + ".shrunk_into", "str")
            for key in ("at", "agreed_ms", "made_ms"):
                self.field(shrunk, key, where + ".shrunk_into", "number")
        self.field(entry, "shrunk_from", where, "str", optional=True)
        waiting = self.field(entry, "waiting", where, "dict or null", optional=True)
        if waiting is not None:
            note = where + ".waiting"
            self.field(waiting, "sequence", note, "int")
            self.field(waiting, "phase", note, "str")
            self.field(waiting, "what", note, "str")
            if not all(is_int(r) for r in self.field(waiting, "ranks", note, "list")):
                self.fail(note, "ranks are not all integers")
        for i, call in enumerate(self.field(entry, "calls", where, "list")):
            here = "%s.calls[%d]" % (where, i)
            if not isinstance(call, dict):
                self.fail(here, "not an object")
            seq = self.field(call, "seq", here, "int")
            if not 0 <= seq < started:
                self.fail(here, "seq %d is outside the %d calls started" % (seq, started))
            self.field(call, "collective", here, "str")
            if self.field(call, "count", here, "int") < 0:
                self.fail(here, "count is negative")
            self.field(call, "dtype", here, "str")
            self.field(call, "op", here, "str", optional=True)
            self.field(call, "root", here, "int", optional=True)
            if self.field(call, "state", here, "str") not in STATES:
                self.fail(here, "state %r is none of %s" % (call["state"], ", ".join(STATES)))
            self.field(call, "end", here, "number or null", optional=True)
            self.field(call, "queued", here, "number", optional=True)


def read_dump(name):
    try:
        with open(name, "rb") as stream:
            raw = stream.read()
    except OSError as error:
        raise BadDump("%s: cannot be read: %s" % (name, error.strerror or error))
    if not raw.strip():
        raise BadDump("%s: the file is empty" % name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadDump("%s: not text (byte %d is not UTF-8): not a flight record" % (name, error.start))
    try:
        dump = json.loads(text)
    except ValueError as error:
        truncated = " (the file ends early: truncated?)" if getattr(error, "pos", 0) >= len(text.rstrip()) else ""
        raise BadDump("%s: not valid JSON%s: %s" % (name, truncated, error))
    Shape(name).dump(dump)
    return dump


def load(paths):
    """{world rank: dump}, and the directories the dumps came from."""
    files, directories = [], []
    for path in paths:
        if os.path.isdir(path):
            found = sorted(glob.glob(os.path.join(path, "collective_flight_record.*.json")))
            if not found:
                raise BadDump("%s: no collective_flight_record.*.json in this directory" % path)
            files += found
            directories.append(path)
        elif os.path.exists(path):
            files.append(path)
            directories.append(os.path.dirname(path) or ".")
        else:
            raise BadDump("%s: no such file or directory" % path)
    dumps = {}
    for name in files:
        dump = read_dump(name)
        rank = dump["world_rank"]
        if rank in dumps:
            raise BadDump("%s: a second dump of world rank %d (the first is %s)" %
                          (name, rank, dumps[rank]["file"]))
        dump["file"] = name
        dumps[rank] = dump
    sizes = sorted(set(d["world_size"] for d in dumps.values()))
    if len(sizes) > 1:
        raise BadDump("the dumps are of different jobs: world_size %s (%s)" % (
            " and ".join(map(str, sizes)),
            ", ".join("%s: %d" % (d["file"], d["world_size"]) for d in dumps.values())))
    return dumps, directories


def missing_file(rank, directories):
    """Where rank's dump would be."""
    if len(set(directories)) == 1:
        return os.path.join(directories[0], DUMP_NAME % rank)
    return DUMP_NAME % rank + " in any of " + ", ".join(sorted(set(directories)))


def ranks_text(ranks):
    """'rank 1', 'ranks 0 and 2', 'ranks 0-3 and 5'."""
    ranks = sorted(ranks)
    if not ranks:
        return "no rank"
    spans, start = [], ranks[0]
    for previous, current in zip(ranks, ranks[1:] + [None]):
        if current != previous + 1:
            if previous > start + 1:
                spans.append("%d-%d" % (start, previous))
            else:
                spans += [str(r) for r in range(start, previous + 1)]
            start = current
    text = spans[0] if len(spans) == 1 else ", ".join(spans[:-1]) + " and " + spans[-1]
    return ("rank " if len(ranks) == 1 else "ranks ") + text


def signature(call):
    parts = [call["collective"], "count=%d" % call["count"], call["dtype"]]
    if "op" in call:
        parts.append("op=" + call["op"])
    if "root" in call:
        parts.append("root=%d" % call["root"])
    return " ".join(parts)


def call_name(call):
    return "%s #%d" % (call["collective"], call["seq"])


class Member:
    """One rank's view of one communicator."""

    def __init__(self, dump, entry):
        self.dump = dump
        self.entry = entry
        self.world_rank = dump["world_rank"]
        self.calls = {call["seq"]: call for call in entry["calls"]}
        # The highest sequence issued; the calls still queued after the last
        # one started have not arrived (no rank hears of them yet).
        self.last = entry["calls_started"] - 1  # highest sequence started; -1: none
        while self.calls.get(self.last, {}).get("state") == "queued":
            self.last -= 1
        self.first = min(self.calls) if self.calls else self.last + 1
        waiting = entry.get("waiting")
        current = self.calls.get(self.last)
        # The wait note belongs to the call in flight, or to the call that failed.
        self.waiting = waiting if waiting and current and waiting["sequence"] == self.last else None

    def in_flight(self):
        call = self.calls.get(self.last)
        return call if call and call["state"] == "started" else None

    def queued(self):
        return [self.calls[seq] for seq in sorted(self.calls) if self.calls[seq]["state"] == "queued"]


def where_stopped(member, call, comm_members):
    """Where one call in flight stopped, in words."""
    if call["state"] == "started":
        return "started%s" % describe_wait(member, comm_members)
    ahead = member.calls.get(member.last)
    if ahead is None:
        behind = ("behind #%d" % member.last) if member.last >= 0 else "first in the queue"
    else:
        behind = "behind %s (%s)" % (call_name(ahead), ahead["state"])
    since = ""
    if call.get("queued") is not None:
        since = " for %.3f s" % (member.dump["dumped_at"] - call["queued"])
    return "queued%s, %s" % (since, behind)


def calls_in_flight(dumps):
    """Per rank and communicator, each call queued or started and where it stopped."""
    found = []
    for rank, dump in sorted(dumps.items()):
        for entry in dump["communicators"]:
            member = Member(dump, entry)
            calls = [c for c in ([member.in_flight()] if member.in_flight() else []) + member.queued()]
            if not calls and not entry.get("not_recorded"):
                continue
            found.append({"rank": rank, "communicator": entry["id"],
                          "not_recorded": entry.get("not_recorded", 0),
                          "calls": [{"seq": c["seq"], "call": signature(c), "state": c["state"],
                                     "where": where_stopped(member, c, entry["members"])}
                                    for c in calls]})
    return found


def in_flight_text(found):
    lines = []
    for item in found:
        lines.append("in flight on rank %d, communicator %s:" % (item["rank"], item["communicator"]))
        for call in item["calls"]:
            lines.append("  #%d %s: %s" % (call["seq"], call["call"], call["where"]))
        if item["not_recorded"]:
            lines.append("  and %d call(s) in flight the ring had no room for" % item["not_recorded"])
    return lines


def describe_wait(member, comm_members):
    note = member.waiting
    if not note:
        return ""
    world = [comm_members[r] for r in note["ranks"] if 0 <= r < len(comm_members)]
    who = (" for " + ranks_text(world)) if world else ""
    return " (%s, waiting%s: %s)" % (note["phase"], who, note["what"])


def clock_text(seconds):
    """Unix seconds as UTC time of day, to the millisecond."""
    return time.strftime("%H:%M:%S", time.gmtime(seconds)) + ".%03d" % int(seconds % 1 * 1000)


def deaths(dumps):
    """{world rank: {"seen_by": [ranks], "on": [communicator ids], "at": first}}
    for every rank some dump says its communicator lost."""
    found = {}
    for rank, dump in sorted(dumps.items()):
        for entry in dump["communicators"]:
            lost = entry.get("lost")
            if not lost:
                continue
            for dead in lost["ranks"]:
                death = found.setdefault(dead, {"seen_by": [], "on": [], "at": lost["at"]})
                if rank not in death["seen_by"]:
                    death["seen_by"].append(rank)
                if entry["id"] not in death["on"]:
                    death["on"].append(entry["id"])
                death["at"] = min(death["at"], lost["at"])
    return found


def death_text(death):
    return ("%s lost it on %s (PeerFailedError or shrink's agreement), first at %s UTC" %
            (ranks_text(death["seen_by"]), " and ".join(death["on"]), clock_text(death["at"])))


def shrinks(dumps):
    """One entry per shrink: the communicator, the ranks lost, who made what."""
    made = {}
    for rank, dump in sorted(dumps.items()):
        for entry in dump["communicators"]:
            into = entry.get("shrunk_into")
            if not into:
                continue
            item = made.setdefault((entry["id"], into["id"]), {
                "from": entry["id"], "into": into["id"], "lost": [], "ranks": [],
                "agreed_ms": 0.0, "made_ms": 0.0})
            item["ranks"].append(rank)
            lost = (entry.get("lost") or {}).get("ranks", [])
            item["lost"] = sorted(set(item["lost"]) | set(lost))
            item["agreed_ms"] = max(item["agreed_ms"], into["agreed_ms"])
            item["made_ms"] = max(item["made_ms"], into["made_ms"])
    return [made[key] for key in sorted(made)]


def shrink_text(item):
    lost = ranks_text(item["lost"]) if item["lost"] else "no rank"
    return ("SHRUNK: %s lost %s; %s shrank it into %s (the slowest agreed in %.1f ms and made it "
            "in %.1f ms)" % (item["from"], lost, ranks_text(item["ranks"]), item["into"],
                             item["agreed_ms"], item["made_ms"]))


def doing_instead(rank, dumps, comm_id, last_call, comms, died=None):
    """What `rank` was doing while the others waited on comm_id."""
    dump = dumps.get(rank)
    if dump is None:
        if died and rank in died:
            return "died: " + death_text(died[rank])
        return "no dump from rank %d: its process was stopped, killed, or never dumped" % rank
    for entry in dump["communicators"]:
        if entry["id"] == comm_id:
            continue
        member = Member(dump, entry)
        call = member.in_flight() or (member.calls.get(member.last)
                                      if member.calls.get(member.last, {}).get("state") == "failed"
                                      else None)
        if call:
            state = "in" if call["state"] == "started" else "failed in"
            return "%s %s on communicator %s%s" % (state, call_name(call), entry["id"],
                                                   describe_wait(member, entry["members"]))
    if last_call is None:
        return "it made no call on this communicator, and none is in flight on another"
    if last_call["state"] == "started":
        return "still in its %s" % call_name(last_call)
    idle = ""
    if last_call.get("end") is not None:
        idle = ", %.2f s before its dump" % (dump["dumped_at"] - last_call["end"])
    return ("outside the library: its last call here, %s, %s%s, and no call is in flight on "
            "another communicator" % (call_name(last_call), last_call["state"], idle))


def analyse_communicator(comm_id, members, dumps, died=None):
    """A verdict dict for one communicator, or None when its ranks agree."""
    any_entry = next(iter(members.values())).entry
    world_members = any_entry["members"]
    undumped = [r for r in world_members if r not in members]
    present = sorted(members)
    # 1. The first sequence number at which the ranks that made it disagree.
    lowest = max(m.first for m in members.values())
    highest = max(m.last for m in members.values())
    if highest < 0:
        # No dumped rank made a call on it: nothing to disagree on (a rank
        # without a dump is named as such, not as a divergence at #-1).
        return None
    for seq in range(lowest, highest + 1):
        by_signature = {}
        for rank in present:
            call = members[rank].calls.get(seq)
            if call is not None:
                by_signature.setdefault(signature(call), []).append(rank)
        if len(by_signature) > 1:
            groups = sorted(by_signature.items(), key=lambda item: (-len(item[1]), item[1]))
            lines = ["%s called %s" % (ranks_text(ranks), sig) for sig, ranks in groups]
            # A rank whose call here is the majority's next one skipped a call.
            majority_ranks = groups[0][1]
            skipped = []
            for sig, ranks in groups[1:]:
                ahead = members[majority_ranks[0]].calls.get(seq + 1)
                if ahead is not None and signature(ahead) == sig:
                    skipped.append("%s skipped %s: its #%d is the others' #%d" %
                                   (ranks_text(ranks), call_name(members[majority_ranks[0]].calls[seq]),
                                    seq, seq + 1))
            return {"communicator": comm_id, "sequence": seq, "kind": "mismatch",
                    "groups": [{"ranks": ranks, "call": sig} for sig, ranks in groups],
                    "skipped": skipped,
                    "text": ["%s #%d: the ranks disagree: %s" % (comm_id, seq, "; ".join(lines))] +
                            skipped}
    # 2. The first call some rank never arrived at (or no dump at all).
    arrived_all = min(m.last for m in members.values())
    if arrived_all == highest:
        # Every dumped rank reached the last call: a rank without a dump is
        # missing only if the others did not finish it.
        last_states = [m.calls.get(highest, {}).get("state") for m in members.values()]
        if not undumped or all(state == "finished" for state in last_states):
            return None
    seq = arrived_all + 1 if arrived_all < highest else highest
    reached = [r for r in present if members[r].last >= seq]
    # A rank without a dump is missing when a rank that reached the call
    # waits for it, or when no such wait says whom it awaits.
    awaited = set()
    for rank in reached:
        note = members[rank].waiting if members[rank].last == seq else None
        if note is not None:
            awaited |= {world_members[r] for r in note["ranks"] if 0 <= r < len(world_members)}
    unawaited = [r for r in undumped if awaited and r not in awaited]
    undumped = [r for r in undumped if r not in unawaited]
    missing = [r for r in present if members[r].last < seq] + undumped
    reference = members[reached[0]].calls.get(seq) if reached else None
    what = (call_name(reference) + " (" + signature(reference) + ")") if reference else "call #%d" % seq
    text = ["%s %s: %s never arrived%s; %s did" % (
        comm_id, what, ranks_text(missing), " (or left no dump)" if undumped else "",
        ranks_text(reached))]
    instead = {}
    for rank in sorted(missing):
        member = members.get(rank)
        last_call = member.calls.get(member.last) if member else None
        instead[rank] = doing_instead(rank, dumps, comm_id, last_call, members, died)
        text.append("  rank %d: %s" % (rank, instead[rank]))
    if unawaited:
        text.append("  %s: no dump, but no rank that dumped waited for %s" %
                    (ranks_text(unawaited), "it" if len(unawaited) == 1 else "them"))
    waits = []
    for rank in reached:
        call = members[rank].calls.get(seq)
        state = call["state"] if call else "unknown"
        waits.append("  rank %d: %s%s" % (rank, state, describe_wait(members[rank], world_members)))
    return {"communicator": comm_id, "sequence": seq, "kind": "missing", "call": what,
            "missing": sorted(missing), "arrived": reached, "no_dump": sorted(undumped + unawaited),
            "instead": {str(r): t for r, t in instead.items()}, "text": text + waits}


def analyse(dumps):
    comms = {}
    for rank, dump in sorted(dumps.items()):
        for entry in dump["communicators"]:
            comms.setdefault(entry["id"], {})[rank] = Member(dump, entry)
    verdicts = []
    died = deaths(dumps)
    for comm_id in sorted(comms, key=lambda c: (-len(comms[c]), c)):
        verdict = analyse_communicator(comm_id, comms[comm_id], dumps, died)
        if verdict:
            verdicts.append(verdict)
    # Ranks that wait for each other on different communicators.
    cycle = []
    missing_on = {v["communicator"]: set(v.get("missing", [])) for v in verdicts}
    arrived_on = {v["communicator"]: set(v.get("arrived", [])) for v in verdicts}
    for a in missing_on:
        for b in missing_on:
            if a < b and missing_on[a] & arrived_on[b] and missing_on[b] & arrived_on[a]:
                cycle.append("%s wait on %s for %s, who wait on %s for %s: the communicators "
                             "are called in different orders" %
                             (ranks_text(arrived_on[a]), a, ranks_text(missing_on[a]), b,
                              ranks_text(missing_on[b])))
    return verdicts, cycle


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("paths", nargs="+", metavar="DIR_OR_FILE",
                        help="directories holding the dumps, or dump files")
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    args = parser.parse_args()
    try:
        dumps, directories = load(args.paths)
    except BadDump as error:
        print("collective_trace: unusable input: %s" % error, file=sys.stderr)
        return EXIT_UNUSABLE
    world_size = max(d["world_size"] for d in dumps.values())
    verdicts, cycle = analyse(dumps)
    absent = [r for r in range(world_size) if r not in dumps]
    absent_files = {r: missing_file(r, directories) for r in absent}
    status = EXIT_DIVERGED if verdicts else (EXIT_INCOMPLETE if absent else EXIT_AGREE)
    flying = calls_in_flight(dumps)
    died = deaths(dumps)
    shrunk = shrinks(dumps)
    if args.json:
        json.dump({"dumps": sorted(dumps), "world_size": world_size, "no_dump": absent,
                   "missing_files": [absent_files[r] for r in absent],
                   "verdicts": verdicts, "deadlock": cycle, "in_flight": flying,
                   "died": {str(r): d for r, d in sorted(died.items())}, "shrinks": shrunk},
                  sys.stdout, indent=1)
        print()
        return status
    first_dump = dumps[min(dumps)]
    print("%d dumps of %d ranks%s; rank %d dumped on: %s" %
          (len(dumps), world_size, ("; no dump from " + ranks_text(absent)) if absent else "",
           first_dump["world_rank"], first_dump["reason"][:200]))
    for rank in absent:
        print("missing: no dump from rank %d (%s does not exist)" % (rank, absent_files[rank]))
    for rank, death in sorted(died.items()):
        print("DIED: rank %d: %s" % (rank, death_text(death)))
    for item in shrunk:
        print(shrink_text(item))
    if not verdicts:
        if absent:
            print("INCOMPLETE: the %d dumps there are agree on every call recorded; %s left no "
                  "dump, so what %s did is unknown" %
                  (len(dumps), ranks_text(absent), "it" if len(absent) == 1 else "they"))
        else:
            print("the ranks agree on every call recorded and none is missing")
        for line in in_flight_text(flying):
            print(line)
        return status
    first = verdicts[0]
    print("DIVERGED at %s #%d (%s)" % (first["communicator"], first["sequence"], first["kind"]))
    for verdict in verdicts:
        for line in verdict["text"]:
            print(line)
    for line in cycle:
        print("DEADLOCK: " + line)
    for line in in_flight_text(flying):
        print(line)
    return status


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as error:  # a bug of the tool: never exit 1 ("diverged") on it
        print("collective_trace: internal error (%s: %s); please report it with the dumps" %
              (type(error).__name__, error), file=sys.stderr)
        sys.exit(4)

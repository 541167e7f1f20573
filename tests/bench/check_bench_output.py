#!/usr/bin/env python3
"""Checks what collective_bench wrote: its JSON report, its CSV, a rules
file from --generate-rules, or the table of --nonblocking -C all. Exits
non-zero naming the first problem.

  check_bench_output.py json FILE --ranks N [--baseline] [--fusion]
  check_bench_output.py csv FILE --ranks N
  check_bench_output.py rules FILE --ranks N
  check_bench_output.py overlap FILE --ranks N --sizes-from JSON
"""
import argparse
import csv
import json
import math
import re
import sys

ELEMENT_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8,
                 "int8": 1, "uint8": 1, "int32": 4, "int64": 8}
COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all",
               "all_to_all_v", "all_gather_v", "reduce_scatter_v", "gather", "gather_v", "scatter",
               "scatter_v", "sendrecv")
# The collectives whose size covers every rank's block (cases/: the
# v-variants at --uneven 1, which these runs use).
BLOCKED = ("reduce_scatter", "all_gather", "all_to_all", "all_to_all_v", "all_gather_v",
           "reduce_scatter_v", "gather", "gather_v", "scatter", "scatter_v")
ALGORITHMS = ("ring", "recursive_doubling", "mpi", "shared_memory", "hierarchical", "nccl",
              "pairwise", "bruck")
REQUIRED = ("collective", "bytes", "count", "dtype", "op", "algorithm", "inplace", "time_us",
            "p50_us", "p99_us", "algbw_gbs", "busbw_gbs", "wrong")
BASELINE = ("baseline_time_us", "baseline_busbw_gbs", "speedup")


def fail(message):
    sys.exit(f"check_bench_output: {message}")


def close(a, b, what, row):
    if not math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9):
        fail(f"{what}: {a} != {b} in row {row}")


def bus_factor(collective, ranks):
    if collective == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    if collective in BLOCKED:
        return (ranks - 1) / ranks
    return 1.0


def check_row(row, ranks, baseline):
    for key in REQUIRED:
        if key not in row:
            fail(f"row lacks '{key}': {row}")
    if row["collective"] not in COLLECTIVES:
        fail(f"unknown collective in {row}")
    # A fusion row at one rank ran no library call (the strategies layer
    # makes no cross-worker all-reduce with one worker): "none".
    ran_nothing = row.get("mode") == "fusion" and (ranks == 1 or row["count"] == 0)
    if row["algorithm"] not in ALGORITHMS and not (ran_nothing and row["algorithm"] == "none"):
        fail(f"'algorithm' must name what ran, not '{row['algorithm']}'")
    if row["dtype"] not in ELEMENT_BYTES:
        fail(f"unknown dtype in {row}")
    blocks = ranks if row["collective"] in BLOCKED else 1
    if row.get("mode", "collective") == "collective":
        expected_bytes = row["count"] * ELEMENT_BYTES[row["dtype"]] * blocks
        if row["bytes"] != expected_bytes:
            fail(f"bytes {row['bytes']} != count x element x blocks {expected_bytes}: {row}")
    if not row["p50_us"] <= row["p99_us"] + 1e-9:
        fail(f"p50 above p99: {row}")
    if row["time_us"] <= 0:
        fail(f"non-positive time: {row}")
    if row.get("mode", "collective") == "collective":
        close(row["algbw_gbs"], row["bytes"] / row["time_us"] / 1e3, "algbw = bytes / time", row)
        close(row["busbw_gbs"], row["algbw_gbs"] * bus_factor(row["collective"], ranks),
              "busbw = algbw x factor", row)
    if row["wrong"] != 0:
        fail(f"wrong elements: {row}")
    if baseline:
        for key in BASELINE:
            if key not in row:
                fail(f"--baseline mpi row lacks '{key}': {row}")
        close(row["speedup"], row["baseline_p50_us"] / row["p50_us"], "speedup", row)
        close(row["baseline_busbw_gbs"],
              row["bytes"] / row["baseline_time_us"] / 1e3 * bus_factor(row["collective"], ranks),
              "baseline busbw", row)


def expected_packs(row):
    """CommunicationOptions::bytes_per_pack as documented: consecutive
    tensors share a pack while it stays within the limit, and a larger
    tensor is a pack of its own; 0 means the measured default rule, tensors
    of up to 4 KiB in packs of up to 64 KiB, larger tensors alone
    (CollectiveAllReduce::kDefaultLargestPackedTensor, kDefaultBytesPerPack)."""
    tensors, size, limit = row["tensors"], row["bytes"], row["bytes_per_pack"]
    if size == 0:
        return 0  # nothing to reduce: no pack
    if limit == 0:
        if size > 4 * 1024:
            return tensors
        limit = 64 * 1024
    per_pack = max(1, limit // size)
    return -(-tensors // per_pack)


def median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 == 1 else (values[n // 2 - 1] + values[n // 2]) / 2


def check_speedups(summary, rows, fusion):
    """The summary's speed-ups over MPI, recomputed from the rows: AUTO's
    rows and the forced algorithms' apart; the worst is the first lowest in
    row order, named by where it was measured."""
    for key, auto in (("auto_speedup", True), ("forced_speedup", False)):
        if key not in summary:
            fail(f"summary lacks '{key}'")
        group = [] if fusion else [
            row for row in rows
            if (row["requested"] == "auto") == auto and row.get("speedup") is not None
            and row["speedup"] > 0]
        got = summary[key]
        if not group:
            if got is not None:
                fail(f"summary '{key}' should be null (no such rows with a baseline): {got}")
            continue
        if got is None:
            fail(f"summary '{key}' is null but {len(group)} rows have a speed-up")
        worst = min(group, key=lambda row: row["speedup"])  # the first of equals
        expected = {"measured": len(group), "median": median(r["speedup"] for r in group),
                    "worst": worst["speedup"], "worst_collective": worst["collective"],
                    "worst_bytes": worst["bytes"], "worst_dtype": worst["dtype"],
                    "worst_op": worst["op"], "worst_inplace": worst["inplace"],
                    "worst_algorithm": worst["algorithm"]}
        if got != expected:
            fail(f"summary '{key}' is {got}, the rows give {expected}")


def check_json(path, ranks, baseline, fusion):
    with open(path) as f:
        report = json.load(f)
    for key in ("header", "rows", "summary"):
        if key not in report:
            fail(f"no '{key}' object")
    header = report["header"]
    for key in ("version", "git_revision", "ranks", "nodes", "min_ranks_per_node",
                "max_ranks_per_node", "placements", "iters", "warmup_iters", "command_line"):
        if key not in header:
            fail(f"header lacks '{key}'")
    if header["ranks"] != ranks or len(header["placements"]) != ranks:
        fail(f"header says {header['ranks']} ranks, {len(header['placements'])} placements; "
             f"expected {ranks}")
    for p in header["placements"]:
        if not p["host"] or not p["cpus"]:
            fail(f"placement without host or CPUs: {p}")
    rows = report["rows"]
    if not rows:
        fail("no rows")
    placements = set()
    for row in rows:
        check_row(row, ranks, baseline)
        if fusion:
            if row.get("mode") != "fusion" or row.get("tensors", 0) < 1:
                fail(f"not a fusion row: {row}")
            close(row["speedup"], row["separate_p50_us"] / row["p50_us"], "fusion speedup", row)
            if row["packs"] != expected_packs(row):
                fail(f"batch_reduce made {row['packs']} packs, expected {expected_packs(row)}: "
                     f"{row}")
        placements.add((row["collective"], row["inplace"]))
    for collective, _ in placements:
        if collective != "broadcast" and not fusion:
            if (collective, True) not in placements or (collective, False) not in placements:
                fail(f"{collective}: expected out-of-place and in-place rows")
    summary = report["summary"]
    if summary["wrong"] != 0 or summary["ok"] is not True:
        fail(f"summary not ok: {summary}")
    check_speedups(summary, rows, fusion)
    print(f"{path}: {len(rows)} rows, {ranks} ranks, OK")


def check_csv(path, ranks):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        fail("no CSV rows")
    for raw in rows:
        row = dict(raw)
        for key in ("bytes", "count"):
            row[key] = int(row[key])
        for key in ("time_us", "p50_us", "p99_us", "algbw_gbs", "busbw_gbs"):
            row[key] = float(row[key])
        row["wrong"] = int(row["wrong"])
        row["inplace"] = row["inplace"] == "true"
        if int(row["ranks"]) != ranks:
            fail(f"ranks column {row['ranks']} != {ranks}")
        baseline = row.get("baseline_time_us", "") != ""
        if baseline:
            for key in ("baseline_time_us", "baseline_p50_us", "baseline_busbw_gbs", "speedup"):
                row[key] = float(row[key])
        check_row(row, ranks, baseline)
    print(f"{path}: {len(rows)} CSV rows, OK")


def check_rules(path, ranks):
    with open(path) as f:
        document = json.load(f)
    if document.get("version") != 1 or not isinstance(document.get("rules"), list):
        fail("expected {\"version\": 1, \"rules\": [...]}")
    previous_end = {}
    for rule in document["rules"]:
        allowed = {"collective", "nodes", "ranks_per_node", "min_bytes", "max_bytes", "algorithm"}
        if not set(rule) <= allowed or not {"collective", "min_bytes", "max_bytes",
                                             "algorithm"} <= set(rule):
            fail(f"rule with unexpected or missing keys: {rule}")
        if rule["collective"] not in COLLECTIVES or rule["algorithm"] not in ALGORITHMS:
            fail(f"unknown collective or algorithm: {rule}")
        for key in ("nodes", "ranks_per_node", "min_bytes", "max_bytes"):
            if key in rule and not isinstance(rule[key], int):
                fail(f"'{key}' must be an integer: {rule}")
        if rule.get("ranks_per_node", ranks) * rule.get("nodes", 1) != ranks:
            fail(f"nodes x ranks_per_node != {ranks}: {rule}")
        if rule["min_bytes"] > rule["max_bytes"]:
            fail(f"empty range: {rule}")
        # Ranges of one collective: from 0, contiguous, ending unbounded.
        expected_start = previous_end.get(rule["collective"], -1) + 1
        if rule["min_bytes"] != expected_start:
            fail(f"range does not continue the previous one (expected min_bytes "
                 f"{expected_start}): {rule}")
        previous_end[rule["collective"]] = rule["max_bytes"]
    for collective, end in previous_end.items():
        if end != 2**63 - 1:
            fail(f"{collective}: the last range must extend to every size, ends at {end}")
    if not previous_end:
        fail("no rules")
    print(f"{path}: {len(document['rules'])} rules for {sorted(previous_end)}, OK")

# --nonblocking: each collective's MPI counterpart, in the library's order.
NONBLOCKING = {"all_reduce": "MPI_Iallreduce", "reduce_scatter": "MPI_Ireduce_scatter_block",
               "all_gather": "MPI_Iallgather", "broadcast": "MPI_Ibcast", "reduce": "MPI_Ireduce",
               "barrier": "MPI_Ibarrier", "all_to_all": "MPI_Ialltoall",
               "all_to_all_v": "MPI_Ialltoallv", "all_gather_v": "MPI_Iallgatherv",
               "reduce_scatter_v": "MPI_Ireduce_scatter", "gather": "MPI_Igather",
               "gather_v": "MPI_Igatherv", "scatter": "MPI_Iscatter", "scatter_v": "MPI_Iscatterv"}


def check_overlap(path, ranks, sizes_from):
    """The --nonblocking -C all table: a titled section per collective, in
    the library's order, and in each exactly one row per type, op and size
    that the blocking sweep of the same sizes (its JSON report, sizes_from)
    measured, every time sane and nothing wrong; barrier one row of
    nothing."""
    with open(sizes_from) as f:
        blocking = json.load(f)
    if blocking["header"]["ranks"] != ranks:
        fail(f"{sizes_from} ran at {blocking['header']['ranks']} ranks, not {ranks}")
    expected = {name: set() for name in NONBLOCKING}
    for row in blocking["rows"]:
        # The overlap is measured out of place (broadcast: in place, its only form).
        if row["inplace"] == (row["collective"] == "broadcast"):
            expected[row["collective"]].add((row["bytes"], row["count"], row["dtype"], row["op"]))
    expected["barrier"] = {(0, 0, "none", "none")}
    title = re.compile(r"^# (\w+): (\w+) beside (\w+)(, (out of|in) place)?(, root \d+)?$")
    number = r"\s+(-?[0-9.]+)"
    row_re = re.compile(r"^#\s+(\d+)\s+(\d+)\s+(\w+)\s+(\w+)" + number * 8 + r"\s+(\d+)$")
    sections = []
    rows = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = title.match(line)
            if m and m.group(1) in NONBLOCKING:
                name = m.group(1)
                if m.group(2) != name + "_async" or m.group(3) != NONBLOCKING[name]:
                    fail(f"{name}: section compares {m.group(2)} with {m.group(3)}: {line}")
                if name in rows:
                    fail(f"{name}: a second section")
                sections.append(name)
                rows[name] = []
                continue
            m = row_re.match(line)
            if not m:
                continue
            if not sections:
                fail(f"a row before any section: {line}")
            size, count, dtype, op = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
            times = [float(m.group(i)) for i in range(5, 13)]
            wrong = int(m.group(13))
            for side, (call, compute, total, overlap) in (("ours", times[:4]),
                                                          ("mpi", times[4:])):
                if min(call, compute, total) < 0 or not 0 <= overlap <= 100:
                    fail(f"{sections[-1]} {side}: times out of range: {line}")
            if wrong != 0:
                fail(f"{sections[-1]}: {wrong} wrong elements: {line}")
            rows[sections[-1]].append((size, count, dtype, op))
    if sections != list(NONBLOCKING):
        fail(f"sections {sections}, expected every collective in order {list(NONBLOCKING)}")
    for name in NONBLOCKING:
        got = rows[name]
        if len(got) != len(set(got)):
            fail(f"{name}: a row twice: {sorted(got)}")
        if set(got) != expected[name]:
            missing = sorted(expected[name] - set(got))
            extra = sorted(set(got) - expected[name])
            fail(f"{name}: rows (size, count, type, op) missing {missing}, unexpected {extra}")
    total = sum(len(r) for r in rows.values())
    print(f"{path}: {total} rows over {len(sections)} collectives, {ranks} ranks, OK")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=("json", "csv", "rules", "overlap"))
    parser.add_argument("file")
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--baseline", action="store_true")
    parser.add_argument("--fusion", action="store_true")
    parser.add_argument("--sizes-from", help="overlap: the blocking sweep's JSON of the same sizes")
    args = parser.parse_args()
    if args.kind == "json":
        check_json(args.file, args.ranks, args.baseline, args.fusion)
    elif args.kind == "csv":
        check_csv(args.file, args.ranks)
    elif args.kind == "overlap":
        if not args.sizes_from:
            fail("overlap needs --sizes-from")
        check_overlap(args.file, args.ranks, args.sizes_from)
    else:
        check_rules(args.file, args.ranks)


if __name__ == "__main__":
    main()

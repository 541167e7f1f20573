#!/usr/bin/env python3
"""collective_bench across 2 simulated hosts x 2 ranks, once under plain
mpirun (scripts/netns_cluster.sh) and once under srun --mpi=pmix on the
Slurm cluster of scripts/slurm_cluster.sh: both runs must see 2 nodes of 2
ranks with the same placement, every result exact, and AUTO must pick the
same algorithms (16 MiB across hosts: hierarchical, which only a 2-node
topology of the library allows). Then launcher_variables_test under srun
checks the library's topology rank by rank against the host names.
Exit 77 (skipped) with the reason where the cluster cannot run here."""
import argparse
import json
import os
import subprocess
import sys

BENCH_ARGS = ["-b", "16", "-e", "16M", "-f", "1024", "-n", "3", "-w", "1", "-c", "1",
              "-a", "auto", "--progress", "off", "--format", "json"]
HOSTS, RANKS_PER_HOST = 2, 2


def run(command, what):
    print("+ " + " ".join(command), flush=True)
    result = subprocess.run(command)
    if result.returncode == 77:
        print(f"SKIP: {what}: the cluster cannot run here (see the line above)")
        sys.exit(77)
    if result.returncode != 0:
        sys.exit(f"FAIL: {what} exited {result.returncode}")


def load(path, what):
    with open(path) as f:
        report = json.load(f)
    header = report["header"]
    failures = []
    if header["ranks"] != HOSTS * RANKS_PER_HOST:
        failures.append(f"{what}: {header['ranks']} ranks, expected {HOSTS * RANKS_PER_HOST}")
    if header["nodes"] != HOSTS:
        failures.append(f"{what}: {header['nodes']} nodes, expected {HOSTS}")
    if (header["min_ranks_per_node"], header["max_ranks_per_node"]) != (RANKS_PER_HOST,) * 2:
        failures.append(f"{what}: {header['min_ranks_per_node']}..{header['max_ranks_per_node']}"
                        f" ranks per node, expected {RANKS_PER_HOST}")
    hosts = [p["host"] for p in header["placements"]]
    if len(set(hosts)) != HOSTS:
        failures.append(f"{what}: ranks on hosts {hosts}, expected {HOSTS} distinct")
    for row in report["rows"]:
        if row["wrong"] != 0 or not row["checked"]:
            failures.append(f"{what}: {row['bytes']} B {row['algorithm']}: "
                            f"{row['wrong']} wrong elements (checked: {row['checked']})")
    return header, report["rows"], failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scripts", required=True)
    parser.add_argument("--bench", required=True)
    parser.add_argument("--topology-test", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    netns = os.path.join(args.scripts, "netns_cluster.sh")
    slurm = os.path.join(args.scripts, "slurm_cluster.sh")
    run([slurm, "--check"], "slurm_cluster.sh --check")

    mpirun_json = os.path.join(args.out, "slurm_check_mpirun.json")
    srun_json = os.path.join(args.out, "slurm_check_srun.json")
    for path in (mpirun_json, srun_json):
        if os.path.exists(path):
            os.remove(path)
    run([netns, "--hosts", str(HOSTS), "--ranks-per-host", str(RANKS_PER_HOST), "--",
         args.bench, *BENCH_ARGS, "--output", mpirun_json], "collective_bench under mpirun")
    srun = ["srun", "-N", str(HOSTS), f"--ntasks-per-node={RANKS_PER_HOST}", "--mpi=pmix",
            "--time=4"]
    script = (" ".join(srun + [args.bench, *BENCH_ARGS, "--output", srun_json]) + " && " +
              " ".join(srun + [args.topology_test]))
    run([slurm, "--hosts", str(HOSTS), "--cpus-per-host", str(RANKS_PER_HOST), "--",
         "sh", "-c", script], "collective_bench and launcher_variables_test under srun")

    mpirun_header, mpirun_rows, failures = load(mpirun_json, "mpirun")
    srun_header, srun_rows, srun_failures = load(srun_json, "srun")
    failures += srun_failures
    placement = lambda header: [(p["node"], p["local_rank"]) for p in header["placements"]]
    if placement(mpirun_header) != placement(srun_header):
        failures.append(f"placement (node, local rank) differs: mpirun {placement(mpirun_header)}"
                        f", srun {placement(srun_header)}")
    chosen = lambda rows: [(r["bytes"], r["algorithm"]) for r in rows]
    if chosen(mpirun_rows) != chosen(srun_rows):
        failures.append(f"AUTO chose differently: mpirun {chosen(mpirun_rows)}, "
                        f"srun {chosen(srun_rows)}")
    for what, rows in (("mpirun", mpirun_rows), ("srun", srun_rows)):
        largest = max(rows, key=lambda r: r["bytes"])
        if largest["algorithm"] != "hierarchical":
            failures.append(f"{what}: AUTO took {largest['algorithm']} for {largest['bytes']} B "
                            "across 2 hosts, expected hierarchical (does the library see 2 nodes?)")
    for failure in failures:
        print("FAIL: " + failure)
    if failures:
        return 1
    print(f"PASS: {HOSTS} nodes x {RANKS_PER_HOST} ranks, placement {placement(srun_header)}, "
          f"AUTO {chosen(srun_rows)}, the same under mpirun and srun --mpi=pmix")
    return 0


if __name__ == "__main__":
    sys.exit(main())

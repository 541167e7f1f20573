#!/usr/bin/env bash
# AUTO before and after `collective_bench --generate-rules`, on this machine:
#   1. generate the rules file (every algorithm at every size, float32 sum);
#   2. run AUTO without the file and AUTO with COLLECTIVE_RULES_FILE pointing
#      at it, alternating, ROUNDS times each, every run with --baseline mpi
#      so that each has MPI_Allreduce timed beside it;
#   3. print a markdown table of the medians over the rounds.
#
# Usage: scripts/rules_before_after.sh [NP]        (default 2 ranks)
# One rank per core when there are enough cores (--bind-to core), else
# oversubscribed without binding. Environment (defaults in brackets):
#   BENCH      collective_bench to run [build/bench/collective_bench]
#   OUT_DIR    where the rules, JSON reports and tables go [a new /tmp dir]
#   MIN_BYTES, MAX_BYTES  the sweep, factor 2 [8, 64M]
#   ITERS, WARMUP         timed and warm-up iterations per size [20, 5]
#   GEN_ITERS  timed iterations per size and algorithm when generating [50]:
#              one generating sweep decides the rules, so it gets more
#   ROUNDS     runs without and with the rules, alternating [3]
#   FORM       out-of-place or in-place rows in the table [out-of-place]
#   MAX_LOAD, WAIT_S  before starting, wait up to WAIT_S seconds for the
#              1-minute load average to fall below MAX_LOAD [1.0, 300];
#              the load before every run is printed either way
#   RUN_TIMEOUT  seconds allowed to each mpirun [900]
#   SUMMARY_ONLY=1  run nothing: print the table of the reports in OUT_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/mpirun_env.sh"

np=${1:-2}
bench=${BENCH:-$root/build/bench/collective_bench}
out=${OUT_DIR:-$(mktemp -d /tmp/rules_before_after.XXXXXX)}
rounds=${ROUNDS:-3}
form=${FORM:-out-of-place}
run_timeout=${RUN_TIMEOUT:-900}
mkdir -p "$out"
out=$(cd "$out" && pwd)
[[ -x $bench ]] || { echo "rules_before_after: no $bench (build first: scripts/build.sh)" >&2; exit 2; }
[[ $form == out-of-place || $form == in-place ]] || { echo "rules_before_after: FORM is out-of-place or in-place" >&2; exit 2; }

read -ra binding <<<"$(binding_for "$np")"
sizes=(-C all_reduce -d float32 -o sum -b "${MIN_BYTES:-8}" -e "${MAX_BYTES:-64M}" -f 2
       -w "${WARMUP:-5}" --progress off)
sweep=("${sizes[@]}" -n "${ITERS:-20}")
rules=$out/rules_np$np.json
loads=$out/load.txt
[[ ${SUMMARY_ONLY:-0} == 1 ]] || : > "$loads"

load1() { cut -d' ' -f1 /proc/loadavg; }
# The load average, and the share of CPU time the hypervisor took (steal)
# since the previous note: on a VM, a busy host slows every rank.
cpu_times() { awk '/^cpu /{ print $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }
last_cpu=$(cpu_times)
note_load() {
  local now; now=$(cpu_times)
  local steal; steal=$(awk -v a="$last_cpu" -v b="$now" 'BEGIN { split(a, x, " "); split(b, y, " ");
    d = y[2] - x[2]; printf "%.1f%%", (d > 0 ? 100 * (y[1] - x[1]) / d : 0) }')
  echo "$1: $(uptime | sed 's/^ *//'); steal since the previous note $steal" >> "$loads"
  last_cpu=$now
}
# One bounded mpirun of collective_bench. The ranks run on this node and
# inherit mpirun's environment, so COLLECTIVE_RULES_FILE set or unset around
# a call is what its ranks see (the JSON header records it; checked below).
run_bench() { timeout "$run_timeout" mpirun -np "$np" "${binding[@]}" "$bench" "$@"; }
unset COLLECTIVE_RULES_FILE

if [[ ${SUMMARY_ONLY:-0} != 1 ]]; then
# A quiet machine if one comes within WAIT_S; the measurement goes ahead
# either way, with the load on record.
deadline=$((SECONDS + ${WAIT_S:-300}))
while awk -v l="$(load1)" -v m="${MAX_LOAD:-1.0}" 'BEGIN { exit !(l >= m) }' && ((SECONDS < deadline)); do
  sleep 10
done

note_load "generate"
run_bench --generate-rules "$rules" "${sizes[@]}" -n "${GEN_ITERS:-50}" > "$out/generate_np$np.txt"

for round in $(seq 1 "$rounds"); do
  note_load "without rules, round $round"
  run_bench "${sweep[@]}" -a auto --baseline mpi --format json \
    --output "$out/without_np${np}_$round.json" > "$out/without_np${np}_$round.txt"
  note_load "with rules, round $round"
  COLLECTIVE_RULES_FILE=$rules run_bench "${sweep[@]}" -a auto --baseline mpi --format json \
    --output "$out/with_np${np}_$round.json" > "$out/with_np${np}_$round.txt"
done
note_load "end"
fi

python3 - "$out" "$np" "$rounds" "$form" "$rules" "${binding[*]}" "${sweep[*]}" "${GEN_ITERS:-50}" "${sizes[*]}" <<'EOF'
import json, os, statistics, sys

out, np, rounds, form, rules_path, binding, sweep, gen_iters, sizes_args = sys.argv[1:]
inplace = form == "in-place"


def size_text(b):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale and b % scale == 0:
            return f"{b // scale} {unit}"
    return f"{b} B"


def load(kind):
    runs = []
    for r in range(1, int(rounds) + 1):
        with open(os.path.join(out, f"{kind}_np{np}_{r}.json")) as f:
            report = json.load(f)
        env = report["header"].get("environment", {})
        has_rules = "COLLECTIVE_RULES_FILE" in env
        if has_rules != (kind == "with"):
            sys.exit(f"rules_before_after: run '{kind}' round {r}: COLLECTIVE_RULES_FILE "
                     f"{'set' if has_rules else 'unset'} in its environment")
        if not report["summary"]["ok"]:
            sys.exit(f"rules_before_after: run '{kind}' round {r} found wrong results")
        runs.append({row["bytes"]: row for row in report["rows"]
                     if row["collective"] == "all_reduce" and row["inplace"] == inplace})
    return runs


without, with_ = load("without"), load("with")
sizes = sorted(without[0])


def column(runs, size, key):
    return statistics.median(run[size][key] for run in runs)


def algorithms(runs, size):
    names = []
    for run in runs:
        if run[size]["algorithm"] not in names:
            names.append(run[size]["algorithm"])
    return "/".join(names)


with open(rules_path) as f:
    rules = json.load(f)["rules"]
print(f"Rules written by --generate-rules ({os.path.basename(rules_path)}, every algorithm at every "
      f"size, {gen_iters} timed iterations each):\n")
print("| bytes | algorithm |")
print("|---|---|")
for rule in rules:
    top = "and above" if rule["max_bytes"] >= 2**63 - 1 else f"– {size_text(rule['max_bytes'])}"
    print(f"| {size_text(rule['min_bytes'])} {top} | {rule['algorithm']} |")

print(f"\nall_reduce float32 sum, {np} ranks ({binding}), {form}; medians over {rounds} "
      f"alternating runs of each; p50 in µs (slowest rank per iteration); 'vs MPI' = "
      f"MPI_Allreduce p50 / AUTO p50 in the same run (> 1: AUTO faster); 'with / without' = "
      f"AUTO p50 with the rules / without (< 1: the rules help); MPI p50 over all "
      f"{2 * int(rounds)} runs.\n")
print("| size | without: AUTO ran | p50 | vs MPI | with rules: AUTO ran | p50 | vs MPI "
      "| with / without | MPI_Allreduce p50 |")
print("|---:|---|---:|---:|---|---:|---:|---:|---:|")
ratios, changed, unchanged = [], [], []
for size in sizes:
    a = column(without, size, "p50_us")
    b = column(with_, size, "p50_us")
    mpi = statistics.median([run[size]["baseline_p50_us"] for run in without + with_])
    ratio = b / a
    ratios.append(ratio)
    alg_a, alg_b = algorithms(without, size), algorithms(with_, size)
    (changed if alg_a != alg_b else unchanged).append(ratio)
    mark = "" if alg_a == alg_b else " *"
    print(f"| {size_text(size)} | {alg_a} | {a:.2f} | {column(without, size, 'speedup'):.2f} "
          f"| {alg_b}{mark} | {b:.2f} | {column(with_, size, 'speedup'):.2f} | {ratio:.2f} "
          f"| {mpi:.2f} |")


def geomean(values):
    return f"{statistics.geometric_mean(values):.3f}" if values else "–"


print(f"\n`*`: the rules changed AUTO's choice ({len(changed)} of {len(sizes)} sizes). "
      f"Geometric mean of with / without: {geomean(ratios)} over all sizes, "
      f"{geomean(changed)} over the changed ones, {geomean(unchanged)} over the unchanged ones "
      f"(the same algorithm both times: how far run-to-run noise alone moves the ratio).")
print(f"\nCommand: `scripts/rules_before_after.sh {np}`, which runs `mpirun -np {np} {binding} "
      f"collective_bench --generate-rules {os.path.basename(rules_path)} {sizes_args} -n {gen_iters}`, "
      f"then alternately `collective_bench {sweep} -a auto --baseline mpi --format json` without "
      f"and with `COLLECTIVE_RULES_FILE={os.path.basename(rules_path)}`; reports in {out}. "
      f"Load average before each run:\n")
with open(os.path.join(out, "load.txt")) as f:
    for line in f:
        print(f"    {line.rstrip()}")
EOF

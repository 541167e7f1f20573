#!/usr/bin/env bash
# What the MPI drop-in's interception costs per call, in instructions, which
# other processes on the machine cannot move (wall-clock times can): one rank
# runs bench/dropin/collective_loop.c's MPI_Allreduce loop (float32 sum, 8 B
# to 2 KiB, 2,000 timed and 10 warm-up calls per size) under
# valgrind --tool=callgrind, with LD_PRELOAD=libcollective_mpi.so and
# without it, and prints per call the instructions of MPI_Allreduce (the
# drop-in's, or Open MPI's), of libcollective's Communicator::all_reduce
# inside it, and their difference: the interception path (lookup, checks,
# type and op mapping). A 1-rank call goes through the same interception
# as any other; its collective is a copy of the input.
#
#   scripts/dropin_call_cost.sh [BUILD_DIR]      MAX_BYTES=2048
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$(cd "${1:-$root/build}" && pwd)
source "$root/scripts/mpirun_env.sh"
program=$build_dir/bench/dropin/dropin_collective_loop
dropin=$build_dir/libcollective/pmpi/libcollective_mpi.so
max_bytes=${MAX_BYTES:-2048}
[[ -x $program && -f $dropin ]] || { echo "dropin_call_cost: build dropin_collective_loop and collective_mpi first" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "dropin_call_cost: needs valgrind" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Callgrind zeroes its counts on entering MPI_Barrier (the loop's barrier after
# each size's warm-up calls) and writes them on entering MPI_Reduce (right
# after the timed calls): one file per size, holding its timed calls only.
for side in without with; do
  preload=()
  [[ $side == with ]] && preload=(-x "LD_PRELOAD=$dropin")
  mpirun -n 1 "${preload[@]}" valgrind -q --tool=callgrind --zero-before='*MPI_Barrier' \
    --dump-before='*MPI_Reduce' --callgrind-out-file="$out/$side" \
    "$program" "$max_bytes" </dev/null >"$out/$side.sizes" 2>/dev/null
done

python3 - "$out" <<'PY'
import glob, re, subprocess, sys
out = sys.argv[1]
CALLS = 2000  # collective_loop's timed calls per size at these sizes
def inclusive(path, symbol):
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                          stdout=subprocess.PIPE, text=True, check=True).stdout
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s.*" + symbol, line)
        if m: return int(m.group(1).replace(",", ""))
    return 0
def per_size(side):
    sizes = [int(line.split()[0]) for line in open(f"{out}/{side}.sizes") if line.strip()]
    dumps = sorted(glob.glob(f"{out}/{side}.*[0-9]"), key=lambda p: int(p.rsplit(".", 1)[1]))
    return dict(zip(sizes, dumps))
without, with_ = per_size("without"), per_size("with")
print("| bytes | Open MPI's MPI_Allreduce | the drop-in's MPI_Allreduce | its Communicator::all_reduce | interception |")
print("|---|---|---|---|---|")
for size in sorted(without):
    plain = inclusive(without[size], r"\?\?\?:P?MPI_Allreduce ")
    dropin = inclusive(with_[size], r"\?\?\?:MPI_Allreduce ")
    library = inclusive(with_[size], r"collective::Communicator::all_reduce\(")
    print(f"| {size} | {plain / CALLS:.0f} | {dropin / CALLS:.0f} | {library / CALLS:.0f} | {(dropin - library) / CALLS:.0f} |")
PY

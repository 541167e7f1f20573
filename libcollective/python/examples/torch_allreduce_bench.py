"""torch.distributed.all_reduce on the "collective" backend against Gloo, same run, alternating.

    PYTHONPATH=build/python mpirun -np 2 /usr/bin/python3 \\
        libcollective/python/examples/torch_allreduce_bench.py [--iters 30] [--ddp-steps 20]

Each size is timed on both backends by turns, each call after a barrier of its own group; a
call's time is the slowest rank's. Prints medians (µs) and Gloo / collective. Then a DDP step
(forward, backward, all-reduce of the gradients, SGD step) of a small MLP on each backend.

With --copy-floor a third turn times every rank copying its tensor once (numpy's copyto, one
thread), all ranks at once: no all-reduce can take less, since each rank must read its input and
write its result at least once (docs/performance.md, "The bound set by memory bandwidth on one
node"). The floor column is its median; "5x needs" is Gloo's median over 5, the time the issue's
figure asks for: where it is below the floor, no implementation can meet it on this machine.
"""
import argparse
import statistics
import time

import numpy as np
import torch
import torch.distributed as dist

import collective.torch  # noqa: F401  (registers "collective")


def slowest(seconds):
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)  # on the default group (collective)
    return t.item()


def time_all_reduce(x, group):
    dist.barrier(group=group)
    start = time.perf_counter()
    dist.all_reduce(x, group=group)
    return slowest(time.perf_counter() - start)


def time_copy(x, y, group):
    """Every rank copies its tensor once, all at once: the memory-copy floor of an all-reduce."""
    dist.barrier(group=group)
    start = time.perf_counter()
    np.copyto(y.numpy(), x.numpy())
    return slowest(time.perf_counter() - start)


def ddp_step_times(group, steps):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256))
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    data, target = torch.randn(32, 256), torch.randn(32, 256)
    times = []
    for _ in range(steps + 2):
        dist.barrier(group=group)
        start = time.perf_counter()
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(ddp(data), target).backward()
        optimizer.step()
        times.append(slowest(time.perf_counter() - start))
    return times[2:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--max-bytes", type=int, default=64 << 20)
    parser.add_argument("--ddp-steps", type=int, default=20)
    parser.add_argument("--copy-floor", action="store_true",
                        help="also time each rank's copy of its tensor, all at once (the floor)")
    args = parser.parse_args()
    dist.init_process_group("collective")
    gloo = dist.new_group(backend="gloo")
    ours = dist.group.WORLD
    rank, size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"# {size} ranks, torch {torch.__version__}; medians of the slowest rank, µs")
        floor = f" {'copy floor':>12} {'5x needs':>10}" if args.copy_floor else ""
        print(f"{'bytes':>10} {'collective':>12} {'gloo':>12} {'gloo/coll':>10}{floor}")
    sizes = [8, 64, 512, 4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
    for nbytes in (n for n in sizes if n <= args.max_bytes):
        x = torch.ones(nbytes // 4, dtype=torch.float32)
        y = torch.empty_like(x) if args.copy_floor else None
        iters = args.iters if nbytes <= (1 << 20) else max(3, args.iters // 6)
        time_all_reduce(x, ours)
        time_all_reduce(x, gloo)  # warm-up of both
        mine, theirs, copies = [], [], []
        for _ in range(iters):
            mine.append(time_all_reduce(x, ours))
            theirs.append(time_all_reduce(x, gloo))
            if args.copy_floor:
                copies.append(time_copy(x, y, ours))
        if rank == 0:
            a, b = statistics.median(mine) * 1e6, statistics.median(theirs) * 1e6
            floor = f" {statistics.median(copies) * 1e6:>12.1f} {b / 5:>10.1f}" if copies else ""
            print(f"{nbytes:>10} {a:>12.1f} {b:>12.1f} {b / a:>10.1f}{floor}", flush=True)
    if args.ddp_steps:
        mine = ddp_step_times(ours, args.ddp_steps)
        theirs = ddp_step_times(gloo, args.ddp_steps)
        if rank == 0:
            a, b = statistics.median(mine) * 1e3, statistics.median(theirs) * 1e3
            print(f"DDP step (MLP 256-1024-256, batch 32): collective {a:.2f} ms, gloo {b:.2f} ms, "
                  f"gloo/collective {b / a:.1f}")
    dist.destroy_process_group(gloo)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

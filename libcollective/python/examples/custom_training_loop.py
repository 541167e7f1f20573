"""The tf.distribute guide's custom training loop, MultiWorkerMirrored style, on collective.

    mpirun -np 2 /usr/bin/python3 libcollective/python/examples/custom_training_loop.py

(with PYTHONPATH=build/python from a build tree, or nothing once installed;
options: --steps N, --global-batch B.)

As in the guide ("Using tf.distribute.Strategy with custom training loops"):
every worker holds a replica of the same model (here a two-layer perceptron
in numpy, float64), each global batch is split across the workers (worker r
takes rows r, r+size, ... of it: uneven shards are fine), each replica's loss
is scaled by the *global* batch size (tf.nn.compute_average_loss), and the
per-replica gradients are summed across workers (one all-reduce of a flat
gradient buffer with the loss beside it, like a gradient bucket) before every
replica applies the same SGD step. Rank 0 prints the loss.

At the end it checks what mirrored training promises: the weights are
bitwise identical on every rank (all-gathered and compared), and they match
a single-process run over the whole global batch within 1e-9 relative (the
sums run in another order, so not bitwise). Any failure exits with 1 on
every rank, naming the rank and the index.
"""
import argparse
import sys

import numpy as np

import collective

INPUTS, HIDDEN = 8, 16


def make_dataset(samples, seed=7):
    """The same data on every worker (the guide's dataset before sharding)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, INPUTS))
    true_w = rng.standard_normal(INPUTS)
    y = np.tanh(x @ true_w)[:, None] + 0.05 * rng.standard_normal((samples, 1))
    return x, y


def init_params(seed=11):
    """The same initial weights on every replica (created in strategy.scope())."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((INPUTS, HIDDEN)) * 0.3, np.zeros(HIDDEN),
            rng.standard_normal((HIDDEN, 1)) * 0.3, np.zeros(1)]


def loss_and_grads(params, x, y, global_batch):
    """Summed squared error over this shard / global_batch, and its gradients."""
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    err = h @ w2 + b2 - y
    loss = float(np.sum(err * err)) / global_batch
    d_out = 2.0 * err / global_batch
    d_h = (d_out @ w2.T) * (1.0 - h * h)
    return loss, [x.T @ d_h, d_h.sum(axis=0), h.T @ d_out, d_out.sum(axis=0)]


def flatten(arrays):
    return np.concatenate([a.ravel() for a in arrays])


def train(params, x, y, steps, global_batch, lr, comm=None):
    """The training loop; with comm, each worker sees only its shard of every batch."""
    samples = x.shape[0]
    losses = []
    for step in range(steps):
        start = (step * global_batch) % samples
        rows = np.arange(start, start + global_batch) % samples
        if comm is not None:
            rows = rows[comm.rank::comm.size]  # this worker's shard
        loss, grads = loss_and_grads(params, x[rows], y[rows], global_batch)
        bucket = np.append(flatten(grads), loss)
        if comm is not None:
            comm.all_reduce(bucket)  # sum over replicas, in place
        losses.append(bucket[-1])
        offset = 0
        for p in params:
            p -= lr * bucket[offset:offset + p.size].reshape(p.shape)
            offset += p.size
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--global-batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()

    comm = collective.Communicator.world()
    x, y = make_dataset(1024)
    params = init_params()
    losses = train(params, x, y, args.steps, args.global_batch, args.lr, comm)
    if comm.rank == 0:
        for step in range(0, args.steps, max(1, args.steps // 10)):
            print(f"step {step:4d}  loss {losses[step]:.6f}")
        print(f"step {args.steps - 1:4d}  loss {losses[-1]:.6f}  ({comm.size} workers)")

    failures = []
    # Mirrored: every replica's weights bitwise equal to rank 0's.
    mine = flatten(params)
    everyone = np.empty((comm.size, mine.size))
    comm.all_gather(mine, everyone)
    for rank in range(comm.size):
        differ = np.nonzero(everyone[rank].view(np.uint64) != everyone[0].view(np.uint64))[0]
        if differ.size:
            i = differ[0]
            failures.append(f"rank {rank}: weight {i} is {everyone[rank][i]!r}, "
                            f"rank 0 has {everyone[0][i]!r} ({differ.size} differ)")
    # The same training on one process over the whole batch.
    reference = init_params()
    reference_losses = train(reference, x, y, args.steps, args.global_batch, args.lr)
    expected = flatten(reference)
    tolerance = 1e-9 * np.maximum(1.0, np.abs(expected))
    off = np.nonzero(np.abs(mine - expected) > tolerance)[0]
    if off.size:
        i = off[0]
        failures.append(f"rank {comm.rank}: weight {i} is {mine[i]!r}, the single-process run "
                        f"has {expected[i]!r} ({off.size} beyond 1e-9 relative)")
    if abs(losses[-1] - reference_losses[-1]) > 1e-9 * max(1.0, abs(reference_losses[-1])):
        failures.append(f"rank {comm.rank}: last loss {losses[-1]!r}, single-process "
                        f"{reference_losses[-1]!r}")
    if args.steps > 1 and not losses[-1] < losses[0]:
        failures.append(f"rank {comm.rank}: loss did not fall ({losses[0]} -> {losses[-1]})")
    for failure in failures:
        print("custom_training_loop:", failure, file=sys.stderr, flush=True)
    if failures:
        sys.exit(1)
    if comm.rank == 0:
        print(f"weights bitwise identical on all {comm.size} ranks, "
              "equal to the single-process run within 1e-9")


if __name__ == "__main__":
    main()

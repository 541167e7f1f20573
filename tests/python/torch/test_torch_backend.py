# torch.distributed on the "collective" backend under mpirun (label torch): every served call
# checked element by element, the refusals, and DDP against Gloo in the same processes.
import functools
import os
import random
import time
from datetime import timedelta

import pytest

torch = pytest.importorskip(
    "torch", reason="python3-torch is not installed (scripts/install_deps.sh --with-torch)")
import torch.distributed as dist  # noqa: E402

import collective.torch  # noqa: E402,F401
from tensor_checks import assert_tensor_equal  # noqa: E402


def check(actual, expected, what):
    assert_tensor_equal(actual, expected, dist.get_rank(), what)


@pytest.fixture(scope="module", autouse=True)
def world():
    dist.init_process_group("collective")
    assert dist.get_backend() == "collective"
    yield
    dist.destroy_process_group()


TYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.uint8,
         torch.int32, torch.int64]


@pytest.mark.parametrize("dtype", TYPES, ids=str)
@pytest.mark.parametrize("async_op", [False, True])
def test_all_reduce_every_dtype(dtype, async_op):
    r, p = dist.get_rank(), dist.get_world_size()
    for n in (0, 1, 1000):
        x = (torch.arange(n) % 7 + r).to(dtype)
        address = x.data_ptr()
        work = dist.all_reduce(x, async_op=async_op)
        if async_op:
            work.wait()
            assert work.is_completed()
        assert x.data_ptr() == address
        expected = (p * (torch.arange(n) % 7) + sum(range(p))).to(dtype)
        check(x, expected, f"all_reduce {dtype} n={n}")
        y = (torch.arange(n) % 5 + r).to(dtype)
        dist.all_reduce(y, op=dist.ReduceOp.MAX)
        check(y, (torch.arange(n) % 5 + p - 1).to(dtype), f"all_reduce max {dtype} n={n}")


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int32, torch.int64])
@pytest.mark.parametrize("async_op", [False, True])
def test_bitwise_ops_as_gloo_serves_them(dtype, async_op):
    # BAND, BOR and BXOR of integer tensors (Gloo's; torch.bool it refuses, as Gloo does).
    r, p = dist.get_rank(), dist.get_world_size()
    bits = torch.iinfo(dtype).bits
    for n in (0, 1, 1001):
        def mine(q):
            # Every bit of the type, differing by rank and index.
            hashed = torch.arange(n, dtype=torch.int64) * 0x5851F42D4C957F2D + 0x14057B7EF767814F * (q + 1)
            return (hashed >> (64 - bits)).to(dtype)  # the top bits, wrapped into the type
        for op, combine in ((dist.ReduceOp.BAND, torch.bitwise_and), (dist.ReduceOp.BOR, torch.bitwise_or),
                            (dist.ReduceOp.BXOR, torch.bitwise_xor)):
            expected = mine(0)
            for q in range(1, p):
                expected = combine(expected, mine(q))
            x = mine(r)
            work = dist.all_reduce(x, op=op, async_op=async_op)
            if async_op:
                work.wait()
            check(x, expected, f"all_reduce {op} {dtype} n={n}")


def test_gathers_scatters_broadcast_reduce_barrier():
    r, p = dist.get_rank(), dist.get_world_size()
    n = 6
    mine = torch.arange(n, dtype=torch.float32) + 100 * r
    everyone = torch.cat([torch.arange(n, dtype=torch.float32) + 100 * q for q in range(p)])

    outs = [torch.empty(n) for _ in range(p)]
    dist.all_gather(outs, mine)
    check(torch.cat(outs), everyone, "all_gather")
    into = torch.empty(n * p)
    dist.all_gather_into_tensor(into, mine, async_op=True).wait()
    check(into, everyone, "all_gather_into_tensor")

    send = torch.arange(n * p, dtype=torch.int64) * (r + 1)
    total = sum(q + 1 for q in range(p))
    expected = torch.arange(r * n, (r + 1) * n, dtype=torch.int64) * total
    out = torch.empty(n, dtype=torch.int64)
    dist.reduce_scatter_tensor(out, send)
    check(out, expected, "reduce_scatter_tensor")
    out2 = torch.empty(n, dtype=torch.int64)
    dist.reduce_scatter(out2, list(send.chunk(p)))
    check(out2, expected, "reduce_scatter")

    b = torch.full((5,), float(r), dtype=torch.float64)
    dist.broadcast(b, src=p - 1)
    check(b, torch.full((5,), float(p - 1), dtype=torch.float64), "broadcast")

    red = torch.full((3,), r + 1, dtype=torch.int32)
    dist.reduce(red, dst=0)
    if r == 0:
        check(red, torch.full((3,), total, dtype=torch.int32), "reduce")
    dist.barrier()


def test_all_to_all_single_even_and_uneven():
    r, p = dist.get_rank(), dist.get_world_size()
    send = torch.arange(2 * p, dtype=torch.float32) + 10 * r
    recv = torch.empty(2 * p)
    dist.all_to_all_single(recv, send)
    expected = torch.cat([torch.tensor([2 * r, 2 * r + 1], dtype=torch.float32) + 10 * q for q in range(p)])
    check(recv, expected, "all_to_all_single")
    # rank r sends q+1 rows of width 2 to rank q
    in_splits = [q + 1 for q in range(p)]
    out_splits = [r + 1] * p
    send = torch.full((sum(in_splits), 2), float(r))
    recv = torch.empty(sum(out_splits), 2)
    dist.all_to_all_single(recv, send, out_splits, in_splits)
    expected = torch.cat([torch.full((r + 1, 2), float(q)) for q in range(p)])
    check(recv, expected, "all_to_all_single uneven")


@pytest.mark.parametrize("async_op", [False, True])
def test_gather_scatter_and_all_to_all_lists(async_op):
    r, p = dist.get_rank(), dist.get_world_size()
    root = p - 1
    mine = torch.arange(5, dtype=torch.int64) + 100 * r
    gathered = [torch.empty(5, dtype=torch.int64) for _ in range(p)] if r == root else None
    work = dist.gather(mine, gathered, dst=root, async_op=async_op)
    if async_op:
        work.wait()
    if r == root:
        check(torch.cat(gathered), torch.cat([torch.arange(5, dtype=torch.int64) + 100 * q for q in range(p)]),
              "gather")

    pieces = [torch.full((3, 2), float(10 * q + 1)) for q in range(p)] if r == 0 else None
    got = torch.empty(3, 2)
    work = dist.scatter(got, pieces, src=0, async_op=async_op)
    if async_op:
        work.wait()
    check(got, torch.full((3, 2), float(10 * r + 1)), "scatter")

    # rank r sends q + r + 1 elements to rank q: every tensor its own size
    sends = [torch.arange(q + r + 1, dtype=torch.float64) + 1000 * r + 100 * q for q in range(p)]
    recvs = [torch.empty(r + q + 1, dtype=torch.float64) for q in range(p)]
    work = dist.all_to_all(recvs, sends, async_op=async_op)
    if async_op:
        work.wait()
    for q in range(p):
        check(recvs[q], torch.arange(r + q + 1, dtype=torch.float64) + 1000 * q + 100 * r,
              f"all_to_all from rank {q}")


def test_send_recv():
    r, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        pytest.skip("needs a peer")
    out = torch.full((4,), float(r))
    got = torch.empty(4)
    if r % 2 == 0:
        dist.send(out, (r + 1) % p)
        dist.recv(got, (r - 1) % p)
    else:
        dist.recv(got, (r - 1) % p)
        dist.send(out, (r + 1) % p)
    check(got, torch.full((4,), float((r - 1) % p)), "recv")


def test_isend_irecv_ring_sends_first():
    # Every rank starts its send before its receive (and batch_isend_irecv does the same): the
    # started calls run beside each other, as on Gloo and NCCL, and complete.
    r, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        pytest.skip("needs a peer")
    for n in (3, 5000, 70000):
        out = torch.arange(n, dtype=torch.float32) + 1000 * r
        got = torch.full((n,), -1.0)
        sent = dist.isend(out, (r + 1) % p)
        received = dist.irecv(got, (r - 1) % p)
        received.wait()
        sent.wait()
        check(got, torch.arange(n, dtype=torch.float32) + 1000 * ((r - 1) % p), f"irecv of {n}")
        ops = [dist.P2POp(dist.isend, out, (r + 1) % p), dist.P2POp(dist.irecv, got, (r - 1) % p)]
        got.fill_(-1.0)
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        check(got, torch.arange(n, dtype=torch.float32) + 1000 * ((r - 1) % p),
              f"batch_isend_irecv of {n}")


def test_refusals_name_backend_and_operation():
    r = dist.get_rank()
    with pytest.raises(RuntimeError,
                       match=rf"backend 'collective': recv_anysource \(rank {r}\): is not served"):
        dist.recv(torch.empty(2))  # from any source
    with pytest.raises(RuntimeError, match=r"backend 'collective': all_reduce .*not contiguous"):
        dist.all_reduce(torch.ones(4, 4)[:, 1])
    with pytest.raises(RuntimeError, match=r"backend 'collective': all_reduce .*dtype torch.bool"):
        dist.all_reduce(torch.ones(4, dtype=torch.bool))
    with pytest.raises(RuntimeError, match=rf"backend 'collective': all_reduce \(rank {r}\): reduce op "
                       r"PREMUL_SUM is not served \(AVG, BAND, BOR, BXOR, MAX, MIN, PRODUCT, SUM\)"):
        dist.all_reduce(torch.ones(4), op=dist._make_nccl_premul_sum(2.0))  # NCCL's scaled sum
    with pytest.raises(RuntimeError, match=rf"all_reduce #\d+ \(rank {r}\): reduce op bor combines bits, of "
                       r"integer types only \(int8, uint8, int32, int64\), not float32"):
        dist.all_reduce(torch.ones(4), op=dist.ReduceOp.BOR)
    with pytest.raises(RuntimeError, match=r"torch says rank 7 of 9 but MPI says rank"):
        collective.torch.ProcessGroupCollective(None, 7, 9, timedelta(seconds=10))
    x = torch.ones(3)
    dist.all_reduce(x)  # still paired after the refusals
    check(x, torch.full((3,), float(dist.get_world_size())), "all_reduce after the refusals")


def _train(group, steps, seed=1234, hook=None, hook_state=None):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
    if hook is not None:
        ddp.register_comm_hook(hook_state, hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(99 + dist.get_rank())
    for _ in range(steps):
        data = torch.randn(8, 16, generator=generator)
        target = torch.randn(8, 4, generator=generator)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(ddp(data), target).backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


def test_ddp_matches_gloo():
    r, p = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    ours = _train(dist.group.WORLD, steps=10)
    theirs = _train(gloo, steps=10)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if p <= 2:
            # Two addends: the sum is the same in either order, so the results are bitwise equal.
            check(a, b, f"DDP parameter {i} against Gloo")
        else:
            # Ring orders differ: each all-reduce rounds differently; 10 steps stay within 1e-5.
            worst = (a - b).abs().max().item()
            assert worst <= 1e-5, f"rank {r}: DDP parameter {i}: |collective - gloo| = {worst} > 1e-5"
    # The ranks agree with each other exactly.
    for i, a in enumerate(ours):
        first = a.clone()
        dist.broadcast(first, src=0)
        check(a, first, f"DDP parameter {i} against rank 0")
    dist.destroy_process_group(gloo)


def test_new_group_of_some_ranks_made_by_its_members_alone():
    # torch creates a group's backend on its members only: the even ranks here, highest first
    # in the list (torch sorts it); the odd ranks never see the creation.
    r, p = dist.get_rank(), dist.get_world_size()
    members = [q for q in range(p) if q % 2 == 0][::-1]
    group = dist.new_group(ranks=members)
    ordered = sorted(members)
    if r in members:
        assert dist.get_rank(group) == ordered.index(r)
        assert dist.get_world_size(group) == len(members)
        x = torch.arange(1000, dtype=torch.float64) + 1000 * r
        dist.all_reduce(x, group=group)
        check(x, len(members) * torch.arange(1000, dtype=torch.float64) + 1000 * sum(members),
              "all_reduce on the even ranks' group")
        gathered = [torch.empty(3, dtype=torch.int64) for _ in members]
        dist.all_gather(gathered, torch.full((3,), r, dtype=torch.int64), group=group)
        check(torch.cat(gathered), torch.tensor(ordered).repeat_interleave(3), "all_gather on it")
        y = torch.full((5,), float(r))
        dist.broadcast(y, src=ordered[-1], group=group)  # a world rank, as torch takes it
        check(y, torch.full((5,), float(ordered[-1])), "broadcast from the group's last rank")
    else:
        assert dist.get_rank(group) == -1
    x = torch.ones(3)
    dist.all_reduce(x)
    check(x, torch.full((3,), float(p)), "all_reduce on the world after the group")
    if r in members:
        dist.destroy_process_group(group)


def test_groups_of_pairs_side_by_side_with_the_world():
    # Every rank calls new_group for every pair (torch's rule); each uses its own, with a call in
    # flight on it while the world's blocking all_reduce runs, then trains DDP on it against Gloo.
    r, p = dist.get_rank(), dist.get_world_size()
    pairs = [list(range(q, min(q + 2, p))) for q in range(0, p, 2)]
    ours_groups = [dist.new_group(ranks=pair) for pair in pairs]
    gloo_groups = [dist.new_group(ranks=pair, backend="gloo") for pair in pairs]
    pair, group, gloo = pairs[r // 2], ours_groups[r // 2], gloo_groups[r // 2]
    x = torch.arange(70000, dtype=torch.float32) % 13 + r
    work = dist.all_reduce(x, group=group, async_op=True)
    w = torch.full((9,), float(r))
    dist.all_reduce(w)
    work.wait()
    check(x, len(pair) * (torch.arange(70000, dtype=torch.float32) % 13) + sum(pair),
          "all_reduce in flight on the pair")
    check(w, torch.full((9,), float(sum(range(p)))), "all_reduce on the world meanwhile")
    ours = _train(group, steps=5)
    theirs = _train(gloo, steps=5)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        check(a, b, f"DDP on the pair: parameter {i} against Gloo's pair")  # two addends: exact
    dist.destroy_process_group(group)
    dist.destroy_process_group(gloo)


def test_future_callbacks_that_wait_for_other_calls():
    # A callback (then) runs on the thread that completes the future; here it waits for a call
    # started before it ran and for one it starts itself, as DDP's PowerSGD hook does. Rank 0
    # comes late, so that the others' calls are in flight when they return.
    r, p = dist.get_rank(), dist.get_world_size()
    if r == 0:
        time.sleep(0.05)
    a = torch.full((5000,), float(r))
    b = torch.full((5000,), 2.0 * r)
    first = dist.all_reduce(a, async_op=True).get_future()
    second = dist.all_reduce(b, async_op=True).get_future()

    def then(_):
        second.wait()
        c = torch.full((7,), float(r + 1))
        dist.all_reduce(c, async_op=True).get_future().wait()
        return c

    c = first.then(then).wait()
    check(a, torch.full((5000,), float(sum(range(p)))), "the first all_reduce")
    check(b, torch.full((5000,), 2.0 * sum(range(p))), "the second, waited for in the callback")
    check(c, torch.full((7,), float(sum(range(1, p + 1)))), "the one started in the callback")


# Gloo's process group joins its worker threads when destroyed, which aborts the process
# ("Resource deadlock avoided") when its last reference goes on one of them, as a PowerSGD
# state's can in a hook's callback: the test keeps them until the process ends.
_KEPT_FOR_GLOO = []


def test_ddp_powersgd_hook_matches_gloo():
    # The hook's callbacks start all_reduces and wait for them (the completer's case above).
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook
    r, p = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    results = []
    for group in (dist.group.WORLD, gloo):
        state = powerSGD_hook.PowerSGDState(process_group=group, matrix_approximation_rank=1,
                                            start_powerSGD_iter=2)
        _KEPT_FOR_GLOO.append(state)
        results.append(_train(group, steps=6, hook=powerSGD_hook.powerSGD_hook, hook_state=state))
    for i, (a, b) in enumerate(zip(*results)):
        if p <= 2:
            check(a, b, f"DDP with PowerSGD: parameter {i} against Gloo")
        else:
            worst = (a - b).abs().max().item()
            assert worst <= 1e-5, f"rank {r}: PowerSGD parameter {i}: |collective - gloo| = {worst}"
    _KEPT_FOR_GLOO.append(gloo)


def test_ddp_deterministic_is_bitwise_equal_across_algorithms():
    world = dist.group.WORLD
    world.deterministic = True
    results = {}
    try:
        for algorithm in ("ring", "recursive_doubling", "shared_memory", "auto"):
            world.all_reduce_algorithm = algorithm
            results[algorithm] = _train(world, steps=10)
    finally:
        world.deterministic = False
        world.all_reduce_algorithm = "auto"
    for algorithm, params in results.items():
        for i, (a, b) in enumerate(zip(params, results["ring"])):
            check(a, b, f"deterministic DDP parameter {i}: {algorithm} against ring")


def test_a_failed_call_raises_from_wait_on_every_rank():
    r, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        pytest.skip("a mismatch needs two ranks")
    x = torch.ones(3 if r == 0 else 4)
    work = dist.all_reduce(x, async_op=True)
    with pytest.raises(Exception, match=r"all_reduce #\d+ \(rank \d\): the ranks disagree"):
        work.wait()
    y = torch.ones(3)
    dist.all_reduce(y)  # the group still works
    check(y, torch.full((3,), float(p)), "all_reduce after the mismatch")


def test_a_failed_blocking_call_raises_from_the_call_on_every_rank():
    r, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        pytest.skip("a mismatch needs two ranks")
    x = torch.ones(3 if r == 0 else 4)
    with pytest.raises(Exception, match=r"all_reduce #\d+ \(rank \d\): the ranks disagree"):
        dist.all_reduce(x)  # async_op=False: the library's blocking call
    y = torch.ones(3)
    dist.all_reduce(y)
    check(y, torch.full((3,), float(p)), "all_reduce after the blocking mismatch")


def test_blocking_calls_between_calls_in_flight_keep_program_order():
    r, p = dist.get_rank(), dist.get_world_size()
    first = torch.full((1000,), float(r))
    second = torch.full((7,), float(r + 1), dtype=torch.float64)
    third = torch.arange(5, dtype=torch.int64) + r
    a = dist.all_reduce(first, async_op=True)
    dist.all_reduce(second)  # blocking: runs after `first`, on every rank
    c = dist.broadcast(third, src=p - 1, async_op=True)
    c.wait()
    a.wait()
    check(first, torch.full((1000,), float(sum(range(p)))), "async all_reduce before a blocking one")
    check(second, torch.full((7,), float(sum(range(1, p + 1))), dtype=torch.float64),
          "blocking all_reduce between async calls")
    check(third, torch.arange(5, dtype=torch.int64) + p - 1, "async broadcast after a blocking call")


def test_isend_irecv_are_asynchronous():
    r, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        pytest.skip("needs a peer")
    out = torch.arange(6, dtype=torch.float32) + 10 * r
    got = torch.empty(6)
    # Sends are synchronous (the library's): even ranks send first, odd ranks receive first.
    if r % 2 == 0:
        works = [dist.isend(out, (r + 1) % p), dist.irecv(got, (r - 1) % p)]
    else:
        works = [dist.irecv(got, (r - 1) % p), dist.isend(out, (r + 1) % p)]
    for work in works:
        work.wait()
        assert work.is_completed()
    check(got, torch.arange(6, dtype=torch.float32) + 10 * ((r - 1) % p), "irecv")


# Random programs through torch.distributed: every served call, on the world, the even ranks'
# group or the rank's pair, every dtype, sizes from 0 to 70,000 elements, blocking or
# async_op (up to three in flight, waited for in a drawn order), send/recv rings; every element
# checked. All ranks draw the same program from the seed (COLLECTIVE_TEST_SEED, default 1; calls:
# COLLECTIVE_TEST_CALLS / 5, default 60); a rank skips the calls of groups it is not in.
_RANDOM_KINDS = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
                 "reduce_scatter", "reduce_scatter_tensor", "all_to_all_single",
                 "all_to_all_single_uneven", "all_to_all", "gather", "scatter", "barrier", "ring"]


def _values(rank, n, salt, dtype):
    """Small integers (exact in every dtype, also summed over 4 ranks): distinct per rank, index
    and call."""
    return ((torch.arange(n) + salt) % 5 + rank).to(dtype)


def _draw_size(rng):
    choice = rng.random()
    if choice < 0.1:
        return 0
    if choice < 0.2:
        return 1
    if choice < 0.55:
        return rng.randint(2, 300)
    if choice < 0.85:
        return rng.randint(301, 5000)
    return rng.randint(5001, 70000)


def _issue_random_call(rng, index, groups):
    """Draws call `index` and issues it where this rank takes part: (work or None, check)."""
    r = dist.get_rank()
    name = rng.choice(sorted(groups))
    group, members = groups[name]
    kind = rng.choice(_RANDOM_KINDS)
    dtype = rng.choice(TYPES)
    n = _draw_size(rng)
    async_op = rng.random() < 0.4
    op_name = rng.choice(["sum", "min", "max", "band", "bor", "bxor"])
    if dtype.is_floating_point and op_name.startswith("b"):
        op_name = "max"  # the bitwise ops reduce integer tensors only
    # Drawn the same way on every rank, whatever its group's size (a rank's pair may be alone).
    root_draw, shift_draw = rng.random(), rng.random()
    salt = index + 1
    if r not in members:
        return None, None
    p, me = len(members), members.index(r)
    root = members[int(root_draw * p)]
    shift = 1 + int(shift_draw * max(1, p - 1))
    what = f"call {index} ({kind} on {name}, {dtype}, n={n}, async_op={async_op})"
    ops = {"sum": dist.ReduceOp.SUM, "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX,
           "band": dist.ReduceOp.BAND, "bor": dist.ReduceOp.BOR, "bxor": dist.ReduceOp.BXOR}
    combine = {"sum": lambda ts: sum(ts[1:], ts[0].clone()),
               "min": lambda ts: torch.stack(ts).min(0).values,
               "max": lambda ts: torch.stack(ts).max(0).values,
               "band": lambda ts: functools.reduce(torch.bitwise_and, ts),
               "bor": lambda ts: functools.reduce(torch.bitwise_or, ts),
               "bxor": lambda ts: functools.reduce(torch.bitwise_xor, ts)}

    def mine(size, extra=0):
        return _values(r, size, salt + extra, dtype)

    def theirs(q, size, extra=0):
        return _values(q, size, salt + extra, dtype)

    if kind == "all_reduce":
        x = mine(n)
        work = dist.all_reduce(x, op=ops[op_name], group=group, async_op=async_op)
        expected = combine[op_name]([theirs(q, n) for q in members])
        return work, lambda: check(x, expected, f"{what} {op_name}")
    if kind == "broadcast":
        x = mine(n)
        work = dist.broadcast(x, src=root, group=group, async_op=async_op)
        return work, lambda: check(x, theirs(root, n), f"{what} from {root}")
    if kind == "reduce":
        x = mine(n)
        work = dist.reduce(x, dst=root, group=group, async_op=async_op)
        expected = combine["sum"]([theirs(q, n) for q in members])
        return work, lambda: check(x, expected, f"{what} to {root}") if r == root else None
    if kind == "all_gather":
        outs = [torch.empty(n, dtype=dtype) for _ in members]
        work = dist.all_gather(outs, mine(n), group=group, async_op=async_op)
        return work, lambda: check(torch.cat(outs), torch.cat([theirs(q, n) for q in members]), what)
    if kind == "all_gather_into_tensor":
        out = torch.empty(p * n, dtype=dtype)
        work = dist.all_gather_into_tensor(out, mine(n), group=group, async_op=async_op)
        return work, lambda: check(out, torch.cat([theirs(q, n) for q in members]), what)
    if kind == "reduce_scatter_tensor":
        out = torch.empty(n, dtype=dtype)
        work = dist.reduce_scatter_tensor(out, mine(p * n), group=group, async_op=async_op)
        expected = combine["sum"]([theirs(q, p * n)[me * n:(me + 1) * n] for q in members])
        return work, lambda: check(out, expected, what)
    if kind == "reduce_scatter":
        out = torch.empty(n, dtype=dtype)
        ins = [mine(n, extra=b) for b in range(p)]
        work = dist.reduce_scatter(out, ins, group=group, async_op=async_op)
        expected = combine["sum"]([theirs(q, n, extra=me) for q in members])
        return work, lambda: check(out, expected, what)
    if kind == "all_to_all_single":
        out = torch.empty(p * n, dtype=dtype)
        send = torch.cat([mine(n, extra=b) for b in range(p)]) if p * n else mine(0)
        work = dist.all_to_all_single(out, send, group=group, async_op=async_op)
        expected = torch.cat([theirs(q, n, extra=me) for q in members]) if p * n else mine(0)
        return work, lambda: check(out, expected, what)
    if kind == "all_to_all_single_uneven":
        m = max(1, n // 50)
        in_splits = [(me + b) % 3 * m for b in range(p)]  # this rank sends block b its count
        out_splits = [(b + me) % 3 * m for b in range(p)]  # and receives rank b's to it
        send = torch.cat([mine(in_splits[b], extra=b) for b in range(p)])
        out = torch.empty(sum(out_splits), dtype=dtype)
        work = dist.all_to_all_single(out, send, out_splits, in_splits, group=group,
                                      async_op=async_op)
        expected = torch.cat([theirs(q, out_splits[b], extra=me) for b, q in enumerate(members)])
        return work, lambda: check(out, expected, what)
    if kind == "all_to_all":
        m = max(1, n // 50)
        sends = [mine((me + b) % 4 * m, extra=b) for b in range(p)]
        outs = [torch.empty((b + me) % 4 * m, dtype=dtype) for b in range(p)]
        work = dist.all_to_all(outs, sends, group=group, async_op=async_op)
        expected = [theirs(q, (b + me) % 4 * m, extra=me) for b, q in enumerate(members)]
        return work, lambda: [check(outs[b], expected[b], f"{what} from rank {q}")
                              for b, q in enumerate(members)]
    if kind == "gather":
        outs = [torch.empty(n, dtype=dtype) for _ in members] if r == root else None
        work = dist.gather(mine(n), outs, dst=root, group=group, async_op=async_op)
        return work, lambda: check(torch.cat(outs), torch.cat([theirs(q, n) for q in members]),
                                   f"{what} to {root}") if r == root else None
    if kind == "scatter":
        pieces = [mine(n, extra=b) for b in range(p)] if r == root else None
        out = torch.empty(n, dtype=dtype)
        work = dist.scatter(out, pieces, src=root, group=group, async_op=async_op)
        return work, lambda: check(out, theirs(root, n, extra=me), f"{what} from {root}")
    if kind == "barrier":
        return dist.barrier(group=group, async_op=async_op), lambda: None
    # A ring along the drawn shift inside the group: isend then irecv, both in flight.
    to, source = members[(me + shift) % p], members[(me - shift) % p]
    if to == r:
        return None, lambda: None
    out = torch.empty(n, dtype=dtype)
    sent = dist.isend(mine(n), to, group=group, tag=index)
    got = dist.irecv(out, source, group=group, tag=index)

    class _Both:
        def wait(self):
            sent.wait()
            got.wait()

    return _Both(), lambda: check(out, theirs(source, n), f"{what} from {source}")


def test_random_programs_of_mixed_calls_on_groups():
    r, p = dist.get_rank(), dist.get_world_size()
    seed = int(os.environ.get("COLLECTIVE_TEST_SEED", "1"))
    calls = int(os.environ.get("COLLECTIVE_TEST_CALLS", "300")) // 5
    evens = [q for q in range(p) if q % 2 == 0]
    pairs = [list(range(q, min(q + 2, p))) for q in range(0, p, 2)]
    groups = {"the world": (dist.group.WORLD, list(range(p))),
              "the even ranks": (dist.new_group(ranks=evens), evens)}
    pair_groups = [dist.new_group(ranks=pair) for pair in pairs]
    groups["its pair"] = (pair_groups[r // 2], pairs[r // 2])
    rng = random.Random(seed)  # the program: the same on every rank
    waits = random.Random(seed * 7919 + r)  # which call to wait for: local, as waiting is
    in_flight = []
    for index in range(calls):
        work, checker = _issue_random_call(rng, index, groups)
        if checker is not None and work is not None:
            in_flight.append((work, checker))
        elif checker is not None:
            checker()
        while len(in_flight) > 3 or (in_flight and waits.random() < 0.3):
            work, checker = in_flight.pop(waits.randrange(len(in_flight)))
            work.wait()
            checker()
    for work, checker in in_flight:
        work.wait()
        checker()
    for group in [groups["the even ranks"][0]] + pair_groups:
        if group != dist.GroupMember.NON_GROUP_MEMBER:
            dist.destroy_process_group(group)

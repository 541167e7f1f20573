"""Every collective of `import collective` on numpy buffers, every element checked."""
import array
import threading
import time

import numpy as np
import pytest

import collective
from conftest import assert_elements

NUMPY_TYPES = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64]
OPS = ["sum", "mean", "min", "max", "prod"]
COUNTS = [0, 1, 7, 1000]


def inputs(rank, count, dtype):
    # 1..3: every op's result is exact in every type (3**4 = 81 fits int8 for prod? no: use
    # uint8/int8 ranges below).
    return ((np.arange(count) + rank) % 3 + 1).astype(dtype)


def expected_reduction(op, size, count, dtype):
    stack = np.stack([inputs(r, count, np.float64) for r in range(size)]) if count else np.zeros((size, 0))
    if op == "sum":
        return stack.sum(axis=0).astype(dtype)
    if op == "prod":
        return stack.prod(axis=0).astype(dtype)
    if op == "min":
        return stack.min(axis=0).astype(dtype)
    if op == "max":
        return stack.max(axis=0).astype(dtype)
    total = stack.sum(axis=0)
    if np.issubdtype(dtype, np.integer):
        return np.trunc(total / size).astype(dtype)  # truncation toward zero, as the library
    return (total / size).astype(dtype)  # divided wide, rounded once


@pytest.mark.parametrize("dtype", NUMPY_TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("op", OPS)
def test_all_reduce_every_type_op_count_in_place_and_out(comm, dtype, op):
    for count in COUNTS:
        expected = expected_reduction(op, comm.size, count, dtype)
        send = inputs(comm.rank, count, dtype)
        recv = np.full(count, 99, dtype=dtype)
        assert comm.all_reduce(send, recv, op=op) is recv
        assert_elements(recv, expected, comm.rank, f"all_reduce {op} {np.dtype(dtype).name} count {count}")
        assert_elements(send, inputs(comm.rank, count, dtype), comm.rank, "send left untouched")
        buffer = inputs(comm.rank, count, dtype)
        comm.all_reduce(buffer, op=op)  # in place
        assert_elements(buffer, expected, comm.rank, f"in-place all_reduce {op} {np.dtype(dtype).name} count {count}")


INTEGER_TYPES = [np.int8, np.uint8, np.int32, np.int64]
BITWISE = {"band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}


def bit_inputs(rank, count, dtype):
    # Every bit of the type, differing by rank and index (the top bits of a 64-bit hash).
    unsigned = np.dtype(f"u{np.dtype(dtype).itemsize}")
    salt = np.uint64(0xD1B54A32D192ED03 * (rank + 1) % 2**64)
    raw = (np.arange(count, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ salt
    return (raw >> np.uint64(64 - 8 * unsigned.itemsize)).astype(unsigned).view(dtype)


@pytest.mark.parametrize("dtype", INTEGER_TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("op", sorted(BITWISE))
def test_bitwise_ops_on_integer_types(comm, dtype, op):
    for count in COUNTS:
        expected = bit_inputs(0, count, dtype)
        for r in range(1, comm.size):
            expected = BITWISE[op](expected, bit_inputs(r, count, dtype))
        buffer = bit_inputs(comm.rank, count, dtype)
        comm.all_reduce(buffer, op=op)
        assert_elements(buffer, expected, comm.rank, f"all_reduce {op} {np.dtype(dtype).name} count {count}")
        reduced = np.zeros(count, dtype=dtype)
        comm.reduce(bit_inputs(comm.rank, count, dtype), reduced, op=op, root=comm.size - 1)
        if comm.rank == comm.size - 1:
            assert_elements(reduced, expected, comm.rank, f"reduce {op} {np.dtype(dtype).name} count {count}")


@pytest.mark.parametrize("op", sorted(BITWISE))
def test_bitwise_ops_refuse_floating_types(comm, op):
    buffer = np.full(4, 1.5, dtype=np.float32)
    with pytest.raises(collective.InvalidArgumentError) as raised:
        comm.all_reduce(buffer, op=op)
    assert f"reduce op {op} combines bits, of integer types only" in str(raised.value)
    assert f"(rank {comm.rank})" in str(raised.value)
    assert_elements(buffer, np.full(4, 1.5, dtype=np.float32), comm.rank, "refused call left the buffer")


def test_bfloat16_by_dtype(comm):
    # bfloat16 as the upper half of float32's bits: small integers are exact.
    values = (np.arange(64, dtype=np.float32) % 5 + comm.rank).astype(np.float32)
    raw = (values.view(np.uint32) >> 16).astype(np.uint16)
    comm.all_reduce(raw, dtype="bfloat16")
    got = (raw.astype(np.uint32) << 16).view(np.float32)
    expected = sum((np.arange(64, dtype=np.float32) % 5 + r) for r in range(comm.size))
    assert_elements(got, expected.astype(np.float32), comm.rank, "bfloat16 all_reduce")


def test_other_buffers_memoryview_array_bytearray(comm):
    a = array.array("d", [comm.rank + 0.5] * 5)
    comm.all_reduce(a, op="max")
    assert_elements(np.array(a), np.full(5, comm.size - 0.5), comm.rank, "array.array max")
    b = bytearray([comm.rank + 1] * 9)
    comm.all_reduce(memoryview(b), op="sum")
    assert_elements(np.frombuffer(b, np.uint8), np.full(9, comm.size * (comm.size + 1) // 2), comm.rank, "bytearray")
    # A contiguous slice is a view into its parent: the result lands there.
    parent = np.zeros((3, 8), dtype=np.int32)
    parent[1, :] = comm.rank
    comm.all_reduce(parent[1])
    assert_elements(parent[1], np.full(8, sum(range(comm.size)), np.int32), comm.rank, "row view")
    assert_elements(parent[0], np.zeros(8, np.int32), comm.rank, "other rows untouched")


def test_reduce_scatter_all_gather_broadcast_reduce(comm):
    p, r = comm.size, comm.rank
    n = 5
    send = np.array([(r + 1) * 1000 + i for i in range(n * p)], dtype=np.int64)
    recv = np.zeros(n, dtype=np.int64)
    comm.reduce_scatter(send, recv)
    expected = np.array([sum((q + 1) * 1000 for q in range(p)) + p * (r * n + i) for i in range(n)], np.int64)
    assert_elements(recv, expected, r, "reduce_scatter")

    gathered = np.zeros(n * p, dtype=np.float32)
    comm.all_gather(np.full(n, r, np.float32), gathered)
    assert_elements(gathered, np.repeat(np.arange(p, dtype=np.float32), n), r, "all_gather")

    for root in {0, p - 1}:
        buffer = np.full(11, r * 7, dtype=np.int32)
        comm.broadcast(buffer, root=root)
        assert_elements(buffer, np.full(11, root * 7, np.int32), r, f"broadcast root {root}")

        out = comm.reduce(np.full(4, r + 1, np.float64), np.zeros(4), root=root, op="sum")
        if r == root:
            assert_elements(out, np.full(4, p * (p + 1) / 2), r, f"reduce root {root}")
        else:
            assert out is None
    comm.barrier()


def test_all_to_all_and_v(comm):
    p, r = comm.size, comm.rank
    n = 3
    send = np.array([r * 100 + q * 10 + i for q in range(p) for i in range(n)], dtype=np.int32)
    recv = np.zeros_like(send)
    comm.all_to_all(send, recv)
    assert_elements(recv, np.array([q * 100 + r * 10 + i for q in range(p) for i in range(n)], np.int32), r, "all_to_all")
    comm.all_to_all(send)  # in place
    assert_elements(send, recv, r, "in-place all_to_all")

    # Rank r sends q + r + 1 elements to rank q (uneven), packed.
    send_counts = [q + r + 1 for q in range(p)]
    recv_counts = [r + q + 1 for q in range(p)]
    send = np.concatenate([np.full(c, r * 10 + q, np.float64) for q, c in enumerate(send_counts)])
    recv = np.zeros(sum(recv_counts))
    comm.all_to_all_v(send, send_counts, None, recv, recv_counts, None)
    expected = np.concatenate([np.full(c, q * 10 + r, np.float64) for q, c in enumerate(recv_counts)])
    assert_elements(recv, expected, r, "all_to_all_v")


def test_v_forms_with_uneven_and_empty_counts(comm):
    p, r = comm.size, comm.rank
    # Rank 0 gives 4 times the others' 3 elements; the last rank (at p > 1) none.
    counts = [12 if q == 0 else 3 for q in range(p)]
    if p > 1:
        counts[-1] = 0
    mine = np.full(counts[r], r + 1, np.int64)
    recv = np.full(sum(counts), -1, np.int64)
    comm.all_gather_v(mine, recv, counts)
    expected = np.concatenate([np.full(c, q + 1, np.int64) for q, c in enumerate(counts)])
    assert_elements(recv, expected, r, "all_gather_v")

    send = np.arange(sum(counts), dtype=np.float64) + r
    out = np.zeros(counts[r])
    comm.reduce_scatter_v(send, out, counts)
    offset = sum(counts[:r])
    expected = np.array([p * (offset + i) + sum(range(p)) for i in range(counts[r])], np.float64)
    assert_elements(out, expected, r, "reduce_scatter_v")

    root = p - 1
    gathered = np.full(sum(counts), -1, np.int64) if r == root else None
    result = comm.gather_v(mine, gathered, counts, root=root)
    if r == root:
        assert_elements(result, np.concatenate([np.full(c, q + 1, np.int64) for q, c in enumerate(counts)]), r, "gather_v")

    scattered = np.zeros(counts[r], np.int64)
    source = np.concatenate([np.full(c, 50 + q, np.int64) for q, c in enumerate(counts)]) if r == 0 else None
    comm.scatter_v(source, counts, None, scattered, root=0)
    assert_elements(scattered, np.full(counts[r], 50 + r, np.int64), r, "scatter_v")


def test_gather_and_scatter(comm):
    p, r = comm.size, comm.rank
    for root in {0, p - 1}:
        recv = np.zeros(2 * p, np.float32) if r == root else None
        out = comm.gather(np.array([r, -r], np.float32), recv, root=root)
        if r == root:
            assert_elements(out, np.array([v for q in range(p) for v in (q, -q)], np.float32), r, f"gather root {root}")
        send = np.arange(3 * p, dtype=np.int8) if r == root else None
        got = np.zeros(3, np.int8)
        comm.scatter(send, got, root=root)
        assert_elements(got, np.arange(3 * r, 3 * r + 3, dtype=np.int8), r, f"scatter root {root}")


def test_send_recv_ring(comm):
    p, r = comm.size, comm.rank
    if p == 1:
        pytest.skip("needs a peer")
    out = np.full(6, r, np.float64)
    got = np.zeros(6)
    if r % 2 == 0:
        comm.send(out, (r + 1) % p, tag=3)
        comm.recv(got, (r - 1) % p, tag=3)
    else:
        comm.recv(got, (r - 1) % p, tag=3)
        comm.send(out, (r + 1) % p, tag=3)
    assert_elements(got, np.full(6, (r - 1) % p, np.float64), r, "recv")


def test_bad_buffers_are_refused_before_the_call(comm):
    r = comm.rank
    with pytest.raises(collective.InvalidArgumentError, match=r"all_reduce \(rank \d+\): send has elements of format"):
        comm.all_reduce(np.zeros(3, np.uint32))
    with pytest.raises(ValueError, match="not C-contiguous"):
        comm.all_reduce(np.zeros((4, 4), np.float32)[:, 1])
    frozen = np.zeros(4, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(collective.InvalidArgumentError, match="recv is read-only"):
        comm.all_reduce(np.zeros(4, np.float32), frozen)
    with pytest.raises(collective.InvalidArgumentError, match="send holds float32 but recv holds float64"):
        comm.all_reduce(np.zeros(4, np.float32), np.zeros(4, np.float64))
    with pytest.raises(collective.InvalidArgumentError, match="op 'xor'"):
        comm.all_reduce(np.zeros(4, np.float32), op="xor")
    with pytest.raises(collective.InvalidArgumentError, match="supports neither the buffer protocol nor DLPack"):
        comm.all_reduce([1.0, 2.0])
    # The communicator is still usable: nothing was started.
    x = np.ones(2, np.int32)
    comm.all_reduce(x)
    assert_elements(x, np.full(2, comm.size, np.int32), r, "after refusals")


def test_mismatch_raises_on_every_rank(comm):
    if comm.size == 1:
        pytest.skip("needs two ranks")
    op = "sum" if comm.rank == 0 else "max"
    with pytest.raises(collective.MismatchError) as error:
        comm.all_reduce(np.ones(3, np.float32), op=op, timeout=30)
    assert error.value.operation.startswith("all_reduce")
    assert error.value.rank == comm.rank
    assert isinstance(error.value, ValueError)  # InvalidArgumentError is a ValueError too
    x = np.ones(3, np.float32)
    comm.all_reduce(x)
    assert_elements(x, np.full(3, comm.size, np.float32), comm.rank, "after the mismatch")


def test_gil_is_released_during_a_call(comm):
    if comm.size == 1:
        pytest.skip("needs a rank to wait for")
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    if comm.rank == 0:
        time.sleep(0.5)  # the others wait in the barrier meanwhile
        comm.barrier()
    else:
        thread = threading.Thread(target=count)
        thread.start()
        time.sleep(0.05)
        before = ticks[0]
        comm.barrier(timeout=60)
        during = ticks[0] - before
        stop.set()
        thread.join()
        assert during > 0, f"rank {comm.rank}: the other thread never ran during the call"


def test_mpi4py_both_ways(comm):
    MPI = pytest.importorskip("mpi4py.MPI")
    wrapped = collective.Communicator.from_mpi4py(MPI.COMM_WORLD)
    assert (wrapped.rank, wrapped.size) == (MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size())
    x = np.full(4, wrapped.rank, np.int64)
    wrapped.all_reduce(x)
    assert_elements(x, np.full(4, sum(range(wrapped.size)), np.int64), wrapped.rank, "from_mpi4py")

    half = comm.split(comm.rank % 2, -comm.rank)
    theirs = half.to_mpi4py()
    try:
        assert (theirs.Get_rank(), theirs.Get_size()) == (half.rank, half.size)
        y = np.full(3, comm.rank, np.int64)
        z = np.zeros(3, np.int64)
        theirs.Allreduce(y, z)
        expected = sum(q for q in range(comm.size) if q % 2 == comm.rank % 2)
        assert_elements(z, np.full(3, expected, np.int64), comm.rank, "mpi4py Allreduce on to_mpi4py()")
    finally:
        theirs.Free()
        half.free()
        wrapped.free()


def test_subset_made_by_the_listed_ranks_alone(comm):
    # The odd ranks, highest first, make theirs while the even ranks make theirs.
    listed = [q for q in range(comm.size) if q % 2 == comm.rank % 2][::-1]
    part = comm.subset(listed)
    try:
        assert (part.rank, part.size) == (listed.index(comm.rank), len(listed))
        x = np.full(5, comm.rank, np.int64)
        part.all_reduce(x)
        assert_elements(x, np.full(5, sum(listed), np.int64), comm.rank, "all_reduce on the subset")
    finally:
        part.free()
    with pytest.raises(collective.InvalidArgumentError, match=r"Communicator::subset \(rank \d+\): "
                       r"rank -1 is outside the communicator"):
        comm.subset([comm.rank, -1])


def test_shrink_of_a_healthy_communicator_is_a_copy(comm):
    # The deaths themselves: tests/reliability/shrink_driver.py.
    assert comm.failed_ranks == []
    shrunk = comm.shrink()
    try:
        assert (shrunk.rank, shrunk.size) == (comm.rank, comm.size)
        assert shrunk.failed_ranks == []
        x = np.arange(5, dtype=np.int64) + comm.rank
        shrunk.all_reduce(x)
        expected = np.arange(5, dtype=np.int64) * comm.size + sum(range(comm.size))
        assert_elements(x, expected, comm.rank, "all_reduce on the shrunk copy")
    finally:
        shrunk.free()


def test_timeout_and_algorithm_options(comm):
    x = np.ones(8, np.float32)
    comm.all_reduce(x, algorithm="ring", timeout=30)
    assert comm.last_algorithm == "ring"
    assert_elements(x, np.full(8, comm.size, np.float32), comm.rank, "ring")
    with pytest.raises(collective.InvalidArgumentError, match="algorithm 'butterfly'"):
        comm.all_reduce(x, algorithm="butterfly")
    with pytest.raises(collective.InvalidArgumentError, match="timeout must be a positive"):
        comm.all_reduce(x, timeout=0)

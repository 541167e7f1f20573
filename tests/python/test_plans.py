# The `_init` forms: every collective made into a collective.Plan once and
# started three times, its inputs rewritten between starts, every element
# checked after each; a plan's rules (one start at a time, buffers kept alive
# by its Works); send_async and recv_async.
import gc
import time
import weakref

import numpy as np
import pytest

import collective
from conftest import assert_elements


def value(rank, start, n, dtype):
    """Rank `rank`'s input at start `start`: distinct per rank, start and index."""
    return (np.arange(n) % 11 + 3 * rank + 7 * start).astype(dtype)


# Each case: make(comm, n) -> (the plan's buffers, the plan), refill(bufs, r, k) before start k,
# check(bufs, comm, n, k) after it. Counts are per block; `n` runs 0, 7 and 1001.
def all_reduce_case(in_place):
    def make(comm, n):
        b = {"send": np.empty(n, np.float64)}
        b["recv"] = b["send"] if in_place else np.empty(n, np.float64)
        return b, comm.all_reduce_init(b["send"], None if in_place else b["recv"])

    def refill(b, r, k):
        b["send"][:] = value(r, k, b["send"].size, np.float64)

    def check(b, comm, n, k):
        return sum(value(q, k, n, np.float64) for q in range(comm.size))

    return make, refill, check, "recv"


def reduce_scatter_case():
    def make(comm, n):
        b = {"send": np.empty(n * comm.size, np.int64), "recv": np.empty(n, np.int64)}
        return b, comm.reduce_scatter_init(b["send"], b["recv"], op="max")

    def refill(b, r, k):
        b["send"][:] = value(r, k, b["send"].size, np.int64)

    def check(b, comm, n, k):
        full = value(comm.size - 1, k, n * comm.size, np.int64)
        return full[comm.rank * n:(comm.rank + 1) * n]

    return make, refill, check, "recv"


def all_gather_case():
    def make(comm, n):
        b = {"send": np.empty(n, np.int32), "recv": np.empty(n * comm.size, np.int32)}
        return b, comm.all_gather_init(b["send"], b["recv"])

    def refill(b, r, k):
        b["send"][:] = value(r, k, b["send"].size, np.int32)

    def check(b, comm, n, k):
        return np.concatenate([value(q, k, n, np.int32) for q in range(comm.size)])

    return make, refill, check, "recv"


def broadcast_case():
    def make(comm, n):
        b = {"buffer": np.empty(n, np.float32)}
        return b, comm.broadcast_init(b["buffer"], root=comm.size - 1)

    def refill(b, r, k):
        b["buffer"][:] = value(r, k, b["buffer"].size, np.float32)

    def check(b, comm, n, k):
        return value(comm.size - 1, k, n, np.float32)

    return make, refill, check, "buffer"


def reduce_case():
    def make(comm, n):
        b = {"send": np.empty(n, np.int64), "recv": np.empty(n, np.int64)}
        return b, comm.reduce_init(b["send"], b["recv"] if comm.rank == 0 else None, root=0)

    def refill(b, r, k):
        b["send"][:] = value(r, k, b["send"].size, np.int64)

    def check(b, comm, n, k):
        return sum(value(q, k, n, np.int64) for q in range(comm.size)) if comm.rank == 0 else None

    return make, refill, check, "recv"


def all_to_all_case(in_place):
    def make(comm, n):
        b = {"send": np.empty(n * comm.size, np.int64)}
        b["recv"] = b["send"] if in_place else np.empty(n * comm.size, np.int64)
        return b, comm.all_to_all_init(b["send"], None if in_place else b["recv"])

    def refill(b, r, k):
        b["send"][:] = value(r, k, b["send"].size, np.int64)

    def check(b, comm, n, k):
        r = comm.rank
        return np.concatenate([value(q, k, n * comm.size, np.int64)[r * n:(r + 1) * n]
                               for q in range(comm.size)])

    return make, refill, check, "recv"


def all_to_all_v_case():
    # rank r sends q + r + n elements to rank q (uneven; a zero block where n == 0 and q == r == 0)
    def make(comm, n):
        p, r = comm.size, comm.rank
        send_counts = [q + r + n for q in range(p)]
        recv_counts = [r + q + n for q in range(p)]
        b = {"send": np.empty(sum(send_counts), np.int32), "recv": np.empty(sum(recv_counts), np.int32),
             "send_counts": send_counts}
        return b, comm.all_to_all_v_init(b["send"], send_counts, None, b["recv"], recv_counts, None)

    def refill(b, r, k):
        b["send"][:] = value(r, k, b["send"].size, np.int32)

    def check(b, comm, n, k):
        p, r = comm.size, comm.rank
        blocks = []
        for q in range(p):
            counts = [x + q + n for x in range(p)]  # rank q's send counts
            start = sum(counts[:r])
            blocks.append(value(q, k, sum(counts), np.int32)[start:start + counts[r]])
        return np.concatenate(blocks)

    return make, refill, check, "recv"


def all_gather_v_case():
    def make(comm, n):
        counts = [q + n for q in range(comm.size)]
        b = {"send": np.empty(comm.rank + n, np.int8), "recv": np.empty(sum(counts), np.int8)}
        return b, comm.all_gather_v_init(b["send"], b["recv"], counts)

    def refill(b, r, k):
        b["send"][:] = value(r, k, b["send"].size, np.int8)

    def check(b, comm, n, k):
        return np.concatenate([value(q, k, q + n, np.int8) for q in range(comm.size)])

    return make, refill, check, "recv"


def reduce_scatter_v_case():
    def make(comm, n):
        counts = [q + n for q in range(comm.size)]
        b = {"send": np.empty(sum(counts), np.float64), "recv": np.empty(comm.rank + n, np.float64)}
        return b, comm.reduce_scatter_v_init(b["send"], b["recv"], counts)

    def refill(b, r, k):
        b["send"][:] = value(r, k, b["send"].size, np.float64)

    def check(b, comm, n, k):
        counts = [q + n for q in range(comm.size)]
        total = sum(value(q, k, sum(counts), np.float64) for q in range(comm.size))
        start = sum(counts[:comm.rank])
        return total[start:start + counts[comm.rank]]

    return make, refill, check, "recv"


def gather_case():
    def make(comm, n):
        b = {"send": np.empty(n, np.int32), "recv": np.empty(n * comm.size, np.int32)}
        return b, comm.gather_init(b["send"], b["recv"] if comm.rank == 0 else None, root=0)

    def refill(b, r, k):
        b["send"][:] = value(r, k, b["send"].size, np.int32)

    def check(b, comm, n, k):
        if comm.rank != 0:
            return None
        return np.concatenate([value(q, k, n, np.int32) for q in range(comm.size)])

    return make, refill, check, "recv"


def gather_v_case():
    def make(comm, n):
        counts = [q + n for q in range(comm.size)]
        b = {"send": np.empty(comm.rank + n, np.int64), "recv": np.empty(sum(counts), np.int64)}
        return b, comm.gather_v_init(b["send"], b["recv"] if comm.rank == comm.size - 1 else None,
                                     counts, root=comm.size - 1)

    def refill(b, r, k):
        b["send"][:] = value(r, k, b["send"].size, np.int64)

    def check(b, comm, n, k):
        if comm.rank != comm.size - 1:
            return None
        return np.concatenate([value(q, k, q + n, np.int64) for q in range(comm.size)])

    return make, refill, check, "recv"


def scatter_case():
    def make(comm, n):
        b = {"send": np.empty(n * comm.size, np.float32), "recv": np.empty(n, np.float32)}
        return b, comm.scatter_init(b["send"] if comm.rank == 0 else None, b["recv"], root=0)

    def refill(b, r, k):
        b["send"][:] = value(r, k, b["send"].size, np.float32)

    def check(b, comm, n, k):
        return value(0, k, n * comm.size, np.float32)[comm.rank * n:(comm.rank + 1) * n]

    return make, refill, check, "recv"


def scatter_v_case():
    def make(comm, n):
        counts = [q + n for q in range(comm.size)]
        b = {"send": np.empty(sum(counts), np.int32), "recv": np.empty(comm.rank + n, np.int32)}
        return b, comm.scatter_v_init(b["send"] if comm.rank == 0 else None, counts, None, b["recv"],
                                      root=0)

    def refill(b, r, k):
        b["send"][:] = value(r, k, b["send"].size, np.int32)

    def check(b, comm, n, k):
        counts = [q + n for q in range(comm.size)]
        start = sum(counts[:comm.rank])
        return value(0, k, sum(counts), np.int32)[start:start + counts[comm.rank]]

    return make, refill, check, "recv"


CASES = {
    "all_reduce": all_reduce_case(False),
    "all_reduce_in_place": all_reduce_case(True),
    "reduce_scatter": reduce_scatter_case(),
    "all_gather": all_gather_case(),
    "broadcast": broadcast_case(),
    "reduce": reduce_case(),
    "all_to_all": all_to_all_case(False),
    "all_to_all_in_place": all_to_all_case(True),
    "all_to_all_v": all_to_all_v_case(),
    "all_gather_v": all_gather_v_case(),
    "reduce_scatter_v": reduce_scatter_v_case(),
    "gather": gather_case(),
    "gather_v": gather_v_case(),
    "scatter": scatter_case(),
    "scatter_v": scatter_v_case(),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("n", [0, 7, 1001])
def test_every_plan_started_three_times(comm, name, n):
    make, refill, check, out = CASES[name]
    bufs, plan = make(comm, n)
    assert isinstance(plan, collective.Plan), f"rank {comm.rank}: {plan!r}"
    assert plan.wait() is True  # no start yet
    for k in range(3):
        refill(bufs, comm.rank, k)
        work = plan.start()
        assert isinstance(work, collective.Work)
        assert work.wait() is True and plan.test() is True, f"rank {comm.rank}: {work.operation}"
        expected = check(bufs, comm, n, k)
        if expected is not None:
            assert_elements(bufs[out], np.asarray(expected).astype(bufs[out].dtype), comm.rank,
                            f"{name} plan, n={n}, start {k}")


def test_barrier_plan_and_describe(comm):
    plan = comm.barrier_init()
    for _ in range(3):
        plan.start()
        assert plan.wait() is True
    assert "barrier" in plan.describe() and "barrier" in repr(plan)


def test_a_start_while_the_last_is_in_flight_is_refused(comm):
    if comm.size == 1:
        pytest.skip("needs a peer to keep the start in flight")
    x = np.ones(4, np.float32)
    plan = comm.all_reduce_init(x)
    if comm.rank == 0:
        first = plan.start()  # the others start 1 s later
        with pytest.raises(collective.InvalidArgumentError, match=r"previous start .* is still in flight"):
            plan.start()
        first.wait()
    else:
        time.sleep(1.0)
        plan.start().wait()
    assert_elements(x, np.full(4, comm.size, np.float32), comm.rank, "all_reduce plan")


def test_a_dropped_plan_keeps_its_buffers_while_a_start_is_in_flight(comm):
    if comm.size == 1:
        pytest.skip("needs a peer to keep the start in flight")
    n = 1 << 14
    owner = bytearray(np.ones(n, np.float64).tobytes())
    x = np.frombuffer(owner, np.float64)
    alive = weakref.ref(x)
    plan = comm.all_reduce_init(x)
    if comm.rank == 0:
        work = plan.start()  # the others start 1 s later
        del plan, x
        gc.collect()
        assert alive() is not None, "rank 0: a plan's buffer was freed while a start was in flight"
        with pytest.raises(BufferError):
            owner.extend(b"1234")  # still exported: the start may write it
        assert work.wait() is True
        del work
        gc.collect()
        assert alive() is None, "rank 0: the plan's buffer outlived its plan and its Work"
        assert_elements(np.frombuffer(owner, np.float64), np.full(n, comm.size, np.float64), 0,
                        "a dropped plan's start")
        owner.extend(b"1234")  # no longer exported
    else:
        time.sleep(1.0)
        plan.start().wait()
        assert_elements(x, np.full(n, comm.size, np.float64), comm.rank, "all_reduce plan")


def test_plan_argument_errors_are_raised_at_creation(comm):
    with pytest.raises(collective.InvalidArgumentError, match=r"all_reduce.*recv holds 2 elements but needs 3"):
        comm.all_reduce_init(np.ones(3, np.float32), np.ones(2, np.float32))
    comm.barrier()


def test_send_and_recv_async_in_a_ring(comm):
    p, r = comm.size, comm.rank
    if p == 1:
        pytest.skip("needs a peer")
    got = np.empty(1000, np.int64)
    mine = value(r, 0, 1000, np.int64)
    # Started sends run beside the receives (a thread per peer and direction): every rank may
    # start its send first, as with MPI_Isend/MPI_Irecv, on odd ranks the receive first.
    if r % 2 == 0 or p == 2:
        outgoing = comm.send_async(mine, (r + 1) % p, tag=5)
        incoming = comm.recv_async(got, (r - 1) % p, tag=5)
    else:
        incoming = comm.recv_async(got, (r - 1) % p, tag=5)
        outgoing = comm.send_async(mine, (r + 1) % p, tag=5)
    assert isinstance(incoming, collective.Work) and isinstance(outgoing, collective.Work)
    assert outgoing.wait() is True and incoming.wait() is True
    assert_elements(got, value((r - 1) % p, 0, 1000, np.int64), r, "recv_async")

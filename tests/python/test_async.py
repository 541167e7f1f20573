# The `_async` forms: every collective started, completed through Work, and
# the buffers of a call in flight kept alive by the Work (or, once it is
# dropped, by the module) until the call finished.
import gc
import threading
import time
import weakref

import numpy as np
import pytest

import collective
from conftest import assert_elements


def test_every_collective_async_matches_the_blocking_result(comm):
    r, p = comm.rank, comm.size
    n = 1000
    works = []

    ar = np.arange(n, dtype=np.float64) + r
    works.append(comm.all_reduce_async(ar))
    rs_send = np.arange(n * p, dtype=np.int64) * (r + 1)
    rs = np.empty(n, np.int64)
    works.append(comm.reduce_scatter_async(rs_send, rs))
    ag = np.empty(3 * p, np.int32)
    works.append(comm.all_gather_async(np.full(3, r, np.int32), ag))
    bc = np.full(5, r, np.float32)
    works.append(comm.broadcast_async(bc, root=p - 1))
    red = np.full(4, r + 1, np.int64)
    works.append(comm.reduce_async(red, root=0))
    works.append(comm.barrier_async())
    a2a = np.repeat(np.arange(p, dtype=np.int64) + 10 * r, 2)
    works.append(comm.all_to_all_async(a2a))
    a2av_recv = np.empty(p, np.int64)
    works.append(comm.all_to_all_v_async(np.full(p, r, np.int64), [1] * p, None, a2av_recv, [1] * p, None))
    agv = np.empty(sum(range(1, p + 1)), np.int8)
    works.append(comm.all_gather_v_async(np.full(r + 1, r, np.int8), agv, [q + 1 for q in range(p)]))
    rsv = np.empty(r, np.float32)
    works.append(comm.reduce_scatter_v_async(np.ones(sum(range(p)), np.float32), rsv, list(range(p))))
    g = np.empty(2 * p, np.int32) if r == 0 else None
    works.append(comm.gather_async(np.full(2, r, np.int32), g))
    gv = np.empty(p, np.int32) if r == 0 else None
    works.append(comm.gather_v_async(np.full(1, r, np.int32), gv, [1] * p))
    sc = np.empty(2, np.int32)
    works.append(comm.scatter_async(np.arange(2 * p, dtype=np.int32) if r == 0 else None, sc))
    scv = np.empty(1, np.int32)
    works.append(comm.scatter_v_async(np.arange(p, dtype=np.int32) if r == 0 else None, [1] * p, None, scv))

    for w in works:
        assert isinstance(w, collective.Work), f"rank {r}: {w!r}"
    for w in reversed(works):  # any order
        assert w.wait() is True, f"rank {r}: {w.operation}"
        assert w.is_completed() and w.test(), f"rank {r}: {w.operation}"

    assert_elements(ar, p * np.arange(n, dtype=np.float64) + sum(range(p)), r, "all_reduce_async")
    total = sum(q + 1 for q in range(p))
    assert_elements(rs, (np.arange(n, dtype=np.int64) + r * n) * total, r, "reduce_scatter_async")
    assert_elements(ag, np.repeat(np.arange(p, dtype=np.int32), 3), r, "all_gather_async")
    assert_elements(bc, np.full(5, p - 1, np.float32), r, "broadcast_async")
    if r == 0:
        assert_elements(red, np.full(4, total, np.int64), r, "reduce_async")
    assert_elements(a2a, np.repeat(10 * np.arange(p, dtype=np.int64) + r, 2), r, "all_to_all_async")
    assert_elements(a2av_recv, np.arange(p, dtype=np.int64), r, "all_to_all_v_async")
    assert_elements(agv, np.concatenate([np.full(q + 1, q, np.int8) for q in range(p)]), r, "all_gather_v_async")
    assert_elements(rsv, np.full(r, p, np.float32), r, "reduce_scatter_v_async")
    if r == 0:
        assert_elements(g, np.repeat(np.arange(p, dtype=np.int32), 2), r, "gather_async")
        assert_elements(gv, np.arange(p, dtype=np.int32), r, "gather_v_async")
    assert_elements(sc, np.arange(2 * r, 2 * r + 2, dtype=np.int32), r, "scatter_async")
    assert_elements(scv, np.array([r], np.int32), r, "scatter_v_async")


def test_async_argument_errors_are_raised_by_the_start(comm):
    with pytest.raises(collective.InvalidArgumentError, match=r"all_reduce.*recv holds 2 elements but needs 3"):
        comm.all_reduce_async(np.ones(3, np.float32), np.ones(2, np.float32))
    with pytest.raises(collective.InvalidArgumentError, match="not C-contiguous"):
        comm.broadcast_async(np.ones((4, 4), np.float32)[:, 1])
    w = comm.barrier_async()
    with pytest.raises(collective.InvalidArgumentError, match=r"timeout must be a number of seconds >= 0"):
        w.wait(timeout=-1)
    assert w.wait()


def test_a_dropped_work_keeps_its_buffer_until_the_call_finished(comm):
    if comm.size == 1:
        pytest.skip("needs a peer to keep the call in flight")
    n = 1 << 16
    if comm.rank == 0:
        owner = bytearray(np.full(n, 1.0, np.float32).tobytes())
        array = np.frombuffer(owner, np.float32)
        alive = weakref.ref(array)
        work = comm.all_reduce_async(array)  # the others join 1 s later
        del work, array
        gc.collect()
        assert alive() is not None, "rank 0: the array of a call in flight was freed with its Work"
        with pytest.raises(BufferError):
            owner.extend(b"1234")  # still exported: the call may write it
        comm.barrier()  # waits for the all_reduce first
        comm.barrier_async().wait()  # an _async start releases finished orphans
        gc.collect()
        assert alive() is None, "rank 0: the array was not released after the call finished"
        assert_elements(np.frombuffer(owner, np.float32), np.full(n, comm.size, np.float32), 0,
                        "dropped all_reduce_async")
        owner.extend(b"1234")  # no longer exported
    else:
        time.sleep(1.0)
        x = np.ones(n, np.float32)
        comm.all_reduce(x)
        assert_elements(x, np.full(n, comm.size, np.float32), comm.rank, "all_reduce")
        comm.barrier()
        comm.barrier_async().wait()


def test_wait_with_timeout_test_and_gil_released(comm):
    if comm.size == 1:
        pytest.skip("needs a peer to keep the call in flight")
    if comm.rank == 0:
        time.sleep(1.0)
        comm.barrier()
        return
    work = comm.barrier_async(timeout=60)
    assert work.test() is False, f"rank {comm.rank}: barrier finished without rank 0"
    assert work.wait(timeout=0.01) is False, f"rank {comm.rank}: wait(0.01) said finished"
    assert "in flight" in repr(work) and work.operation.startswith("barrier")
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    thread = threading.Thread(target=count)
    thread.start()
    before = ticks[0]
    assert work.wait() is True
    during = ticks[0] - before
    stop.set()
    thread.join()
    assert during > 0, f"rank {comm.rank}: the other thread never ran during wait()"


def test_async_failure_is_raised_by_wait_on_every_rank(comm):
    if comm.size == 1:
        pytest.skip("a mismatch needs two ranks")
    count = 3 if comm.rank == 0 else 4
    work = comm.all_reduce_async(np.ones(count, np.float32))
    with pytest.raises(collective.MismatchError, match="all_reduce"):
        work.wait()
    with pytest.raises(collective.MismatchError):
        work.test()  # the same error again
    x = np.ones(3, np.float32)
    comm.all_reduce_async(x).wait()
    assert_elements(x, np.full(3, comm.size, np.float32), comm.rank, "after the mismatch")

# torch tensors handed to `import collective` itself (no process group): read through DLPack,
# without a copy, every dtype the library reduces (bfloat16 included), every element checked; the
# tensors it refuses, refused on every rank before anything is touched.
import pytest

torch = pytest.importorskip(
    "torch", reason="python3-torch is not installed (scripts/install_deps.sh --with-torch)")

import collective  # noqa: E402
from tensor_checks import assert_tensor_equal  # noqa: E402


@pytest.fixture(scope="module")
def comm():
    return collective.Communicator.world()


check = assert_tensor_equal


TYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.uint8,
         torch.int32, torch.int64]


@pytest.mark.parametrize("dtype", TYPES, ids=str)
def test_all_reduce_in_place_every_dtype(comm, dtype):
    rank, size = comm.rank, comm.size
    # 3 x 7, values small enough to be exact in every type at 4 ranks.
    x = (torch.arange(21).reshape(3, 7) % 5 + rank).to(dtype)
    address = x.data_ptr()
    result = comm.all_reduce(x)
    expected = (torch.arange(21).reshape(3, 7) % 5 * size + size * (size - 1) // 2).to(dtype)
    check(x, expected, rank, f"all_reduce {dtype}")
    assert result is x, f"rank {rank}: all_reduce returned another object"
    assert x.data_ptr() == address, f"rank {rank}: the tensor's memory moved"


def test_all_gather_and_out_of_place_into_tensors(comm):
    rank, size = comm.rank, comm.size
    send = torch.arange(5, dtype=torch.float32) + 10 * rank
    recv = torch.full((size, 5), -1.0)
    comm.all_gather(send, recv)
    expected = torch.arange(5, dtype=torch.float32) + 10 * torch.arange(size).reshape(size, 1)
    check(recv, expected, rank, "all_gather")
    out = torch.zeros(4, dtype=torch.bfloat16)
    comm.all_reduce(torch.full((4,), rank + 1, dtype=torch.bfloat16), out, op="max")
    check(out, torch.full((4,), size, dtype=torch.bfloat16), rank, "all_reduce max into recv")


def test_a_tensor_and_a_numpy_array_in_one_call(comm):
    rank, size = comm.rank, comm.size
    send = torch.full((6,), rank + 1, dtype=torch.int32)
    recv = torch.zeros(6, dtype=torch.int32).numpy()  # numpy through the buffer protocol
    comm.all_reduce(send, recv)
    check(torch.from_numpy(recv), torch.full((6,), size * (size + 1) // 2, dtype=torch.int32),
          rank, "tensor into numpy")


def test_a_started_call_keeps_its_tensors(comm):
    rank, size = comm.rank, comm.size
    x = torch.full((1000,), float(rank + 1))
    work = comm.all_reduce_async(x)
    del x  # the Work holds the memory until the call finished
    work.wait()
    y = torch.full((1000,), float(rank + 1))
    comm.all_reduce_async(y).wait()
    check(y, torch.full((1000,), float(size * (size + 1) // 2)), rank, "all_reduce_async")


def test_a_scalar_tensor_and_an_empty_one(comm):
    rank, size = comm.rank, comm.size
    scalar = torch.tensor(float(rank))
    comm.all_reduce(scalar)
    assert scalar.item() == size * (size - 1) / 2, f"rank {rank}: scalar {scalar.item()}"
    empty = torch.zeros(0)
    comm.all_reduce(empty)
    assert empty.numel() == 0


@pytest.mark.parametrize("bad, cause", [
    (lambda: torch.ones(4, 4)[:, 1], "is not contiguous"),
    (lambda: torch.ones(3, dtype=torch.bool), "Bool type is not supported by dlpack"),
    (lambda: torch.ones(3, dtype=torch.complex64), "which the library does not reduce"),
    (lambda: torch.ones(3, requires_grad=True), "require gradient"),
], ids=["strided", "bool", "complex", "requires_grad"])
def test_refused_tensors_name_the_operation_and_the_cause(comm, bad, cause):
    rank = comm.rank
    tensor = bad()
    before = tensor.detach().clone()
    with pytest.raises(collective.InvalidArgumentError) as raised:
        comm.all_reduce(tensor)
    text = str(raised.value)
    assert f"all_reduce (rank {rank}): send (a Tensor)" in text, f"rank {rank}: {text}"
    assert cause in text, f"rank {rank}: {text}"
    check(tensor.detach(), before, rank, "a refused tensor")
    # Refused before the call on every rank: the communicator still works.
    x = torch.ones(2)
    comm.all_reduce(x)
    check(x, torch.full((2,), float(comm.size)), rank, "after a refusal")


def test_a_declared_dtype_must_match_the_element_size(comm):
    rank = comm.rank
    raw = torch.zeros(4, dtype=torch.int16)
    comm.all_reduce(raw, dtype="bfloat16")  # 2-byte elements read as bfloat16: zeros stay zeros
    check(raw, torch.zeros(4, dtype=torch.int16), rank, "declared bfloat16")
    with pytest.raises(collective.InvalidArgumentError, match="2-byte elements but dtype float32"):
        comm.all_reduce(torch.zeros(4, dtype=torch.int16), dtype="float32")

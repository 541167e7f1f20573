# torch's default group on Gloo and groups on "collective", as a program that keeps Gloo for the
# world and moves its hot groups over would have it. torch's variables are set before the import
# (from MPI through mpi4py, as a launcher sets them), so the import's rendezvous does not run: the
# backend's groups must still be made by their members alone.
import os
import socket
import sys

import pytest

torch = pytest.importorskip(
    "torch", reason="python3-torch is not installed (scripts/install_deps.sh --with-torch)")
MPI = pytest.importorskip("mpi4py.MPI", reason="python3-mpi4py is not installed")
import torch.distributed as dist  # noqa: E402


def _set_torch_variables():
    world = MPI.COMM_WORLD
    port = None
    if world.Get_rank() == 0:
        with socket.socket() as probe:
            probe.bind(("", 0))
            port = probe.getsockname()[1]
    port = world.bcast(port, root=0)
    os.environ.update(RANK=str(world.Get_rank()), WORLD_SIZE=str(world.Get_size()),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))


_set_torch_variables()
import collective.torch  # noqa: E402,F401

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "torch"))
from tensor_checks import assert_tensor_equal  # noqa: E402 (the torch tests' element check)


def check(actual, expected, what):
    assert_tensor_equal(actual, expected, dist.get_rank(), what)


@pytest.fixture(scope="module", autouse=True)
def gloo_world():
    dist.init_process_group("gloo")
    assert dist.get_backend() == "gloo"
    yield
    dist.destroy_process_group()


def test_groups_on_collective_under_a_gloo_default_group():
    r, p = dist.get_rank(), dist.get_world_size()
    firsts = list(range(min(p, 2)))  # fewer ranks than the world from 3 ranks
    group = dist.new_group(ranks=firsts, backend="collective")
    everyone = dist.new_group(backend="collective")
    assert dist.get_backend(everyone) == "collective"
    if r in firsts:
        x = torch.arange(5000, dtype=torch.int64) + r
        dist.all_reduce(x, group=group)
        check(x, len(firsts) * torch.arange(5000, dtype=torch.int64) + sum(firsts),
              "all_reduce on the first ranks' group")
    y = torch.full((3,), r, dtype=torch.int32)
    work = dist.all_reduce(y, group=everyone, async_op=True)
    z = torch.full((3,), 2 * r, dtype=torch.int32)
    dist.all_reduce(z)  # Gloo's world meanwhile
    work.wait()
    check(y, torch.full((3,), sum(range(p)), dtype=torch.int32), "all_reduce on every rank's group")
    check(z, torch.full((3,), 2 * sum(range(p)), dtype=torch.int32), "Gloo's all_reduce meanwhile")
    if r in firsts:
        dist.destroy_process_group(group)
    dist.destroy_process_group(everyone)

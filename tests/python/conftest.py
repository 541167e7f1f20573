# Runs under mpirun: every rank runs the same tests in the same order (they
# call collectives). A rank whose test fails makes its pytest exit non-zero,
# which fails the mpirun; a rank left waiting in a collective for the
# failed one ends within COLLECTIVE_TIMEOUT (ctest sets 60 s).
import numpy as np
import pytest

import collective


@pytest.fixture(scope="session")
def comm():
    return collective.Communicator.world()


def assert_elements(actual, expected, rank, what):
    """Every element, naming rank, index, expected and actual of the first wrong one."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"rank {rank}: {what}: shape {actual.shape} != {expected.shape}"
    wrong = np.nonzero(actual != expected)[0]
    if wrong.size:
        i = int(wrong[0])
        raise AssertionError(
            f"rank {rank}: {what}: {wrong.size} wrong element(s); first at index {i}: "
            f"expected {expected[i]!r}, actual {actual[i]!r}"
        )

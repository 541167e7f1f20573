# The element-by-element check of this folder's tests: a failure names the rank, the first wrong
# index, the expected and the actual value.


def assert_tensor_equal(actual, expected, rank, what):
    assert actual.shape == expected.shape, f"rank {rank}: {what}: shape {actual.shape} != {expected.shape}"
    a, e = actual.reshape(-1), expected.reshape(-1)
    wrong = (a != e).nonzero()
    if wrong.numel():
        i = int(wrong[0])
        raise AssertionError(f"rank {rank}: {what}: {wrong.numel()} wrong element(s); first at "
                             f"index {i}: expected {e[i].item()!r}, actual {a[i].item()!r}")

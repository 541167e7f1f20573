#!/usr/bin/env python3
"""The exported-symbols check must fail on a library that leaks internals.

    exported_symbols_selftest.py CHECKER HEADERS IN_TREE_HEADERS

Feeds the checker an `nm -D -C` listing with the API plus three leaks (an
internal function, an unmarked function of the namespace, a weak template of
an internal type) and asserts that it exits 1 naming each, then the API alone
and asserts that it passes. Then a function the in-tree shared headers mark
COLLECTIVE_IN_TREE_API: refused when only the public headers are given,
accepted with the in-tree ones.
"""
import pathlib
import subprocess
import sys
import tempfile

API = """\
0000000000012340 T collective::Communicator::world()
0000000000012350 T collective::to_string(collective::DataType)
0000000000012360 V typeinfo for collective::TimeoutError
0000000000012370 W std::vector<int, std::allocator<int> >::_M_default_append(unsigned long)
"""
LEAKS = [
    "0000000000012380 T collective::internal::dispatch(collective::internal::Request&)",
    "0000000000012390 T collective::reduce_float16(void const*, void*, unsigned long)",
    "00000000000123a0 W std::shared_ptr<collective::internal::CommunicatorState>::reset()",
]


IN_TREE = "0000000000012400 T collective::log_level()"


def run(checker, headers, listing_text, in_tree_headers=None):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as listing:
        listing.write(listing_text)
    command = [sys.executable, checker, "--listing", listing.name, "--headers", headers]
    if in_tree_headers:
        command += ["--in-tree-headers", in_tree_headers]
    try:
        return subprocess.run(command, capture_output=True, text=True)
    finally:
        pathlib.Path(listing.name).unlink()


def main():
    checker, headers, in_tree_headers = sys.argv[1], sys.argv[2], sys.argv[3]
    clean = run(checker, headers, API)
    if clean.returncode != 0:
        sys.exit(f"FAIL: the API alone was refused:\n{clean.stdout}{clean.stderr}")
    leaky = run(checker, headers, API + "\n".join(LEAKS) + "\n")
    if leaky.returncode != 1:
        sys.exit(f"FAIL: a leaking listing exited {leaky.returncode}, not 1:\n{leaky.stdout}{leaky.stderr}")
    missing = [leak for leak in LEAKS if leak.split(None, 2)[2] not in leaky.stdout]
    if missing:
        sys.exit("FAIL: the checker did not name:\n  " + "\n  ".join(missing) + "\n" + leaky.stdout)
    in_tree_name = IN_TREE.split(None, 2)[2]
    public_only = run(checker, headers, API + IN_TREE + "\n")
    if public_only.returncode != 1 or in_tree_name not in public_only.stdout:
        sys.exit(f"FAIL: {in_tree_name} passed as API without the in-tree headers "
                 f"(exit {public_only.returncode}):\n{public_only.stdout}{public_only.stderr}")
    with_in_tree = run(checker, headers, API + IN_TREE + "\n", in_tree_headers)
    if with_in_tree.returncode != 0:
        sys.exit(f"FAIL: {in_tree_name}, marked COLLECTIVE_IN_TREE_API, was refused with the in-tree "
                 f"headers:\n{with_in_tree.stdout}{with_in_tree.stderr}")
    print("the checker refuses every leak, accepts the API, and the in-tree names only from the "
          "in-tree headers: OK")


if __name__ == "__main__":
    main()

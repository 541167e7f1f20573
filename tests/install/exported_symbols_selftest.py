#!/usr/bin/env python3
"""The exported-symbols check must fail on a library that leaks internals.

    exported_symbols_selftest.py CHECKER HEADERS

Feeds the checker an `nm -D -C` listing with the API plus three leaks (an
internal function, an unmarked function of the namespace, a weak template of
an internal type) and asserts that it exits 1 naming each, then the API alone
and asserts that it passes.
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


def run(checker, headers, listing_text):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as listing:
        listing.write(listing_text)
    try:
        return subprocess.run([sys.executable, checker, "--listing", listing.name, "--headers", headers],
                              capture_output=True, text=True)
    finally:
        pathlib.Path(listing.name).unlink()


def main():
    checker, headers = sys.argv[1], sys.argv[2]
    clean = run(checker, headers, API)
    if clean.returncode != 0:
        sys.exit(f"FAIL: the API alone was refused:\n{clean.stdout}{clean.stderr}")
    leaky = run(checker, headers, API + "\n".join(LEAKS) + "\n")
    if leaky.returncode != 1:
        sys.exit(f"FAIL: a leaking listing exited {leaky.returncode}, not 1:\n{leaky.stdout}{leaky.stderr}")
    missing = [leak for leak in LEAKS if leak.split(None, 2)[2] not in leaky.stdout]
    if missing:
        sys.exit("FAIL: the checker did not name:\n  " + "\n  ".join(missing) + "\n" + leaky.stdout)
    print("the checker refuses every leak and accepts the API: OK")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks that an installed include tree holds exactly the API's headers.

    installed_headers.py --include DIR --expect LIST [--part NAME]...

LIST (api_headers.txt) names every file the install may put under
<prefix>/include, one path a line; a line "<part>: <path>" counts only when
--part <part> is given (the strategies layer, the Fortran module: installed
only when built). Exits 1 naming every installed file the list does not hold
(a header that is not the API was installed) and every listed file that is
missing (an API header was not installed).
"""
import argparse
import pathlib
import sys


def expected_files(list_path, parts):
    expected = set()
    for line in pathlib.Path(list_path).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        part, _, path = line.rpartition(": ")
        if part and part not in parts:
            continue
        expected.add(path)
    return expected


def installed_files(include_dir):
    root = pathlib.Path(include_dir)
    return {str(path.relative_to(root)) for path in root.rglob("*") if not path.is_dir()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--include", required=True)
    parser.add_argument("--expect", required=True)
    parser.add_argument("--part", action="append", default=[])
    args = parser.parse_args()
    expected = expected_files(args.expect, set(args.part))
    installed = installed_files(args.include)
    extra = sorted(installed - expected)
    missing = sorted(expected - installed)
    for path in extra:
        print(f"FAIL: {args.include}/{path} is installed but is not an API header ({args.expect})")
    for path in missing:
        print(f"FAIL: {args.include}/{path} is an API header ({args.expect}) but is not installed")
    if extra or missing:
        sys.exit(1)
    print(f"{args.include}: {len(installed)} files, exactly the API "
          f"(parts: {', '.join(sorted(args.part)) or 'none'})")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The installed-headers check must fail on an extra header and on a missing one.

    installed_headers_selftest.py CHECKER LIST

Builds include trees in a scratch folder from LIST itself (every part on):
exactly the list must pass; the list plus a non-API header (an in-tree one,
collective/in_tree/log.h) must fail naming it; the list less one API header must
fail naming it.
"""
import pathlib
import subprocess
import sys
import tempfile


def listed(list_path):
    paths, parts = [], set()
    for line in pathlib.Path(list_path).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        part, _, path = line.rpartition(": ")
        if part:
            parts.add(part)
        paths.append(path)
    return paths, parts


def check(checker, list_path, parts, files):
    with tempfile.TemporaryDirectory() as root:
        for path in files:
            target = pathlib.Path(root, path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("// test\n")
        command = [sys.executable, checker, "--include", root, "--expect", list_path]
        for part in sorted(parts):
            command += ["--part", part]
        return subprocess.run(command, capture_output=True, text=True)


def main():
    checker, list_path = sys.argv[1], sys.argv[2]
    paths, parts = listed(list_path)
    exact = check(checker, list_path, parts, paths)
    if exact.returncode != 0:
        sys.exit(f"FAIL: exactly the listed headers were refused:\n{exact.stdout}{exact.stderr}")
    leak = "collective/in_tree/log.h"
    if leak in paths:
        sys.exit(f"FAIL: {leak} is in the API list; the self-test needs a non-API header")
    extra = check(checker, list_path, parts, paths + [leak])
    if extra.returncode != 1 or leak not in extra.stdout:
        sys.exit(f"FAIL: an installed {leak} was not refused (exit {extra.returncode}):\n{extra.stdout}")
    dropped = "collective/communicator.h"
    missing = check(checker, list_path, parts, [p for p in paths if p != dropped])
    if missing.returncode != 1 or dropped not in missing.stdout:
        sys.exit(f"FAIL: a missing {dropped} was not reported (exit {missing.returncode}):\n{missing.stdout}")
    print("the checker refuses an extra header and a missing one, and accepts the list: OK")


if __name__ == "__main__":
    main()

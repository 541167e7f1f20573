#!/usr/bin/env python3
"""include_rules.py must fail on an upward include, on an include between
two folders of one layer, and on an unplaced folder, and pass a tree that
keeps the rule. Builds small trees in a temporary folder."""
import os
import subprocess
import sys
import tempfile

checker = sys.argv[1]


def run(files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as out:
                out.write(text)
        result = subprocess.run([sys.executable, checker, root], capture_output=True, text=True)
        return result.returncode, result.stdout


cases = [
    ("clean", {"core/a.h": '#include "util/json.h"\n', "util/json.h": "",
               "api/b.cc": '#include "core/a.h"\n#include "collective/errors.h"\n'}, 0, None),
    ("upward", {"core/a.h": '#include "selection/selector.h"\n', "selection/selector.h": ""},
     1, "core (layer 1) includes selection/selector.h (layer 7)"),
    ("same layer", {"kernels/k.cc": '#include "topology/t.h"\n', "topology/t.h": ""},
     1, "kernels (layer 2) includes topology/t.h (layer 2)"),
    ("unplaced", {"newfolder/x.cc": '#include "core/a.h"\n', "core/a.h": ""},
     1, "folder 'newfolder' has no layer"),
]
failed = 0
for name, files, want_rc, needle in cases:
    rc, out = run(files)
    if rc != want_rc or (needle and needle not in out):
        print("FAIL %s: rc %d (want %d), output:\n%s" % (name, rc, want_rc, out))
        failed += 1
    else:
        print("ok %s" % name)
sys.exit(1 if failed else 0)

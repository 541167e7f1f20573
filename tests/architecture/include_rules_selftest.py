#!/usr/bin/env python3
"""include_rules.py must fail on an upward include, on an include between
two folders of one layer, on an unplaced folder and on an include cycle
between units (a header and its .cc counting as one, a public header
counting with the source that implements it), naming the cycle's files,
in either tree; and pass trees that keep the rules. Builds small trees in
a temporary folder (<tmp>/libcollective/src, <tmp>/strategies/src)."""
import os
import subprocess
import sys
import tempfile

checker = sys.argv[1]


def run(files):
    with tempfile.TemporaryDirectory() as root:
        trees = set()
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as out:
                out.write(text)
            tree, kind = path.split("/")[:2]
            if kind == "src":
                trees.add(os.path.join(root, tree, "src"))
        result = subprocess.run([sys.executable, checker] + sorted(trees),
                                capture_output=True, text=True)
        return result.returncode, result.stdout


L = "libcollective/src/"
S = "strategies/src/"
cases = [
    ("clean", {L + "core/a.h": '#include "util/json.h"\n', L + "util/json.h": "",
               L + "api/b.cc": '#include "core/a.h"\n#include "collective/errors.h"\n',
               S + "core/v.cc": '#include "core/v.h"\n#include "values/t.h"\n',
               S + "core/v.h": "", S + "values/t.h": ""}, 0, None),
    ("upward", {L + "core/a.h": '#include "selection/selector.h"\n', L + "selection/selector.h": ""},
     1, "core (layer 1) includes selection/selector.h (layer 7)"),
    ("same layer", {L + "kernels/k.cc": '#include "topology/t.h"\n', L + "topology/t.h": ""},
     1, "kernels (layer 2) includes topology/t.h (layer 2)"),
    ("unplaced", {L + "newfolder/x.cc": '#include "core/a.h"\n', L + "core/a.h": ""},
     1, "folder 'newfolder' has no layer"),
    ("strategies upward", {S + "values/t.cc": '#include "core/strategy_impl.h"\n',
                           S + "core/strategy_impl.h": ""},
     1, "values (layer 1) includes core/strategy_impl.h (layer 3)"),
    # One folder, so the layers allow it; a.cc -> b.h and b.cc -> a.h is a
    # cycle between the units a and b although no header includes itself.
    ("file cycle", {L + "core/a.h": "", L + "core/a.cc": '#include "core/b.h"\n',
                    L + "core/b.h": "", L + "core/b.cc": '#include "core/a.h"\n'},
     1, "include cycle in libcollective between units core/a, core/b: "
        "core/a.cc includes core/b.h; core/b.cc includes core/a.h"),
    # Through a public header: strategy.h (implemented by core/strategy.cc)
    # includes variable.h, whose source includes strategy.h back.
    ("public header cycle",
     {"strategies/include/collective/distribute/strategy.h":
          '#include "collective/distribute/variable.h"\n',
      "strategies/include/collective/distribute/variable.h": "",
      S + "core/strategy.cc": '#include "collective/distribute/strategy.h"\n',
      S + "core/variable.cc": '#include "collective/distribute/variable.h"\n'
                              '#include "collective/distribute/strategy.h"\n'},
     1, "include cycle in strategies between units core/strategy, core/variable: "
        "include/collective/distribute/strategy.h includes include/collective/distribute/variable.h; "
        "core/variable.cc includes include/collective/distribute/strategy.h"),
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

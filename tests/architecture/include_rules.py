#!/usr/bin/env python3
"""The include rule of libcollective/src (docs/architecture.md, "Layers").

Every folder of libcollective/src sits on a layer; a file may include the
public headers (collective/...), its own folder, and folders on lower
layers. Same-layer folders do not include each other, except the pairs
listed in SAME_LAYER. Exits 1 naming every include that breaks the rule,
and every folder the table does not place (so a new folder must be placed).

    include_rules.py <path to libcollective/src>
"""
import os
import re
import sys

LAYERS = {
    "util": 0,
    "core": 1,
    "kernels": 2,
    "topology": 2,
    "gpu": 2,
    "transport/mpi": 3,
    "transport/shm": 3,
    "cross_rank_check": 4,
    "cost": 5,
    "algorithms": 6,
    "algorithms/nccl": 6,
    "selection": 7,
    "api": 8,
}

# (from, to): allowed although on the same layer, with the reason.
SAME_LAYER = {
    # The NCCL algorithm implements the algorithm interface.
    ("algorithms/nccl", "algorithms"): "the CollectiveAlgorithm interface and shared helpers",
    # The registry is the one list naming every algorithm, NCCL's included.
    ("algorithms", "algorithms/nccl"): "registry.cc lists the NCCL algorithm",
}
SAME_LAYER_FILES = {("algorithms", "algorithms/nccl"): {"registry.cc"}}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(relative_path):
    parts = relative_path.split("/")[:-1]
    # The deepest folder that the table places.
    for depth in range(len(parts), 0, -1):
        candidate = "/".join(parts[:depth])
        if candidate in LAYERS:
            return candidate
    return "/".join(parts)


def main():
    root = sys.argv[1]
    problems = []
    checked = 0
    for directory, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith((".h", ".cc")):
                continue
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, root)
            source = folder_of(relative)
            if source not in LAYERS:
                problems.append("%s: folder '%s' has no layer in include_rules.py" % (relative, source))
                continue
            with open(path, encoding="utf-8") as text:
                for number, line in enumerate(text, 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    target_path = match.group(1)
                    if target_path.startswith("collective/"):
                        continue  # the public API
                    if "/" not in target_path:
                        # Beside the file (generated headers, same folder).
                        continue
                    target = folder_of(target_path)
                    checked += 1
                    if target not in LAYERS:
                        problems.append("%s:%d: includes %s from unplaced folder '%s'"
                                        % (relative, number, target_path, target))
                    elif target == source or LAYERS[target] < LAYERS[source]:
                        continue
                    elif LAYERS[target] == LAYERS[source] and (source, target) in SAME_LAYER and \
                            name in SAME_LAYER_FILES.get((source, target), {name}):
                        continue
                    else:
                        problems.append("%s:%d: %s (layer %d) includes %s (layer %d)"
                                        % (relative, number, source, LAYERS[source], target_path,
                                           LAYERS[target]))
    for problem in problems:
        print("include rule broken: " + problem)
    print("%d includes checked, %d break the rule" % (checked, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

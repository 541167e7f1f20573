#!/usr/bin/env python3
"""The include rules of libcollective/src and strategies/src
(docs/architecture.md, "Layers" and "The strategies layer").

Two rules, checked on every tree given:

1. Layers. Every folder of a tree sits on a layer; a file may include the
   public headers (collective/...), its own folder, and folders on lower
   layers. Same-layer folders do not include each other, except the pairs
   listed in SAME_LAYER. A folder the table does not place is an error (so
   a new folder must be placed).

2. No include cycle between units. A unit is a header and the source of
   the same name beside it (a.h + a.cc); a public header
   (<tree>/include/collective/.../x.h) belongs to the unit of the one
   source of the tree named x.cc, which implements it. A unit A that
   reaches a unit B through includes must not be reached back from B: every
   such cycle is reported naming the files whose includes close it.

    include_rules.py <tree>/src [<tree>/src ...]

The tree's rules are chosen by the name of the folder above src
(libcollective or strategies). Exits 1 when any rule is broken.
"""
import os
import re
import sys

RULES = {
    "libcollective": {
        "layers": {
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
        },
        # (from, to): allowed although on the same layer, with the reason.
        "same_layer": {
            # The NCCL algorithm implements the algorithm interface.
            ("algorithms/nccl", "algorithms"): "the CollectiveAlgorithm interface and shared helpers",
            # The registry is the one list naming every algorithm, NCCL's included.
            ("algorithms", "algorithms/nccl"): "registry.cc lists the NCCL algorithm",
        },
        "same_layer_files": {("algorithms", "algorithms/nccl"): {"registry.cc"}},
    },
    "strategies": {
        "layers": {
            "base": 0,        # logging, call tags, devices, replica threads and rendezvous
            "values": 1,      # tensors, their storage and element arithmetic
            "reduce": 2,      # cross-device ops, calls between workers, cluster resolver
            "input": 2,       # datasets, input contexts
            "core": 3,        # Strategy, its implementation, contexts, variables, run()
            "strategies": 4,  # the strategy kinds, losses, optimizers
            "ps": 5,          # ParameterServerStrategy and its coordinator, servers, wire
            "checkpoint": 5,  # Checkpoint and its file format
        },
        "same_layer": {},
        "same_layer_files": {},
    },
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(relative_path, layers):
    parts = relative_path.split("/")[:-1]
    # The deepest folder that the table places.
    for depth in range(len(parts), 0, -1):
        candidate = "/".join(parts[:depth])
        if candidate in layers:
            return candidate
    return "/".join(parts)


def includes_of(path):
    with open(path, encoding="utf-8") as text:
        for number, line in enumerate(text, 1):
            match = INCLUDE.match(line)
            if match:
                yield number, match.group(1)


def source_files(root):
    """Relative paths of the .h and .cc files under root, sorted."""
    found = []
    for directory, _, names in os.walk(root):
        for name in names:
            if name.endswith((".h", ".cc")):
                found.append(os.path.relpath(os.path.join(directory, name), root))
    return sorted(found)


def check_layers(root, rules, problems):
    layers = rules["layers"]
    checked = 0
    for relative in source_files(root):
        name = os.path.basename(relative)
        source = folder_of(relative, layers)
        if source not in layers:
            problems.append("%s: folder '%s' has no layer in include_rules.py" % (relative, source))
            continue
        for number, target_path in includes_of(os.path.join(root, relative)):
            if target_path.startswith("collective/"):
                continue  # the public API
            if "/" not in target_path:
                # Beside the file (generated headers, same folder).
                continue
            target = folder_of(target_path, layers)
            checked += 1
            if target not in layers:
                problems.append("%s:%d: includes %s from unplaced folder '%s'"
                                % (relative, number, target_path, target))
            elif target == source or layers[target] < layers[source]:
                continue
            elif layers[target] == layers[source] and (source, target) in rules["same_layer"] and \
                    name in rules["same_layer_files"].get((source, target), {name}):
                continue
            else:
                problems.append("%s:%d: %s (layer %d) includes %s (layer %d)"
                                % (relative, number, source, layers[source], target_path,
                                   layers[target]))
    return checked


def unit_graph(root):
    """Units and the file-level includes between them.

    Returns (unit_files, edges): unit_files maps a unit to its files (as
    printed), edges maps a unit to {included unit: (including file,
    included file)}, the first include that makes the edge."""
    files = {}  # printed name -> (absolute path, unit)
    src_files = source_files(root)
    stems = {}
    for relative in src_files:
        if relative.endswith(".cc"):
            stems.setdefault(os.path.basename(relative)[:-3], []).append(relative[:-3])
    for relative in src_files:
        files[relative] = (os.path.join(root, relative), os.path.splitext(relative)[0])
    public_root = os.path.join(os.path.dirname(os.path.abspath(root)), "include")
    public = {}  # include path -> printed name
    if os.path.isdir(public_root):
        for relative in source_files(public_root):
            if not relative.endswith(".h"):
                continue
            stem = os.path.basename(relative)[:-2]
            implementing = stems.get(stem, [])
            unit = implementing[0] if len(implementing) == 1 else "include/" + relative[:-2]
            printed = "include/" + relative
            files[printed] = (os.path.join(public_root, relative), unit)
            public[relative] = printed

    unit_files = {}
    for printed, (_, unit) in files.items():
        unit_files.setdefault(unit, []).append(printed)
    edges = {unit: {} for unit in unit_files}
    for printed, (path, unit) in sorted(files.items()):
        here = os.path.dirname(printed)
        for _, target_path in includes_of(path):
            if target_path in public:
                target = public[target_path]
            elif "/" not in target_path and os.path.join(here, target_path) in files:
                target = os.path.join(here, target_path)
            elif target_path in files:
                target = target_path
            else:
                continue  # outside the tree (another library, generated)
            target_unit = files[target][1]
            if target_unit != unit and target_unit not in edges[unit]:
                edges[unit][target_unit] = (printed, target)
    return unit_files, edges


def strongly_connected(edges):
    """Tarjan's algorithm, iterative; components of more than one unit."""
    index = {}
    low = {}
    on_stack = set()
    stack = []
    components = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
    return components


def one_cycle(component, edges):
    """The shortest cycle through the component's first unit, as the
    includes that make it: [(including file, included file), ...]."""
    start = min(component)
    previous = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(edges[node]):
            if child not in component:
                continue
            if child == start:
                path = [(node, child)]
                while previous[node] is not None:
                    path.append((previous[node], node))
                    node = previous[node]
                return [edges[a][b] for a, b in reversed(path)]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return []


def check_cycles(root, tree, problems):
    unit_files, edges = unit_graph(root)
    for component in sorted(strongly_connected(edges), key=lambda c: sorted(c)):
        steps = "; ".join("%s includes %s" % step for step in one_cycle(component, edges))
        units = ", ".join(sorted(component))
        problems.append("include cycle in %s between units %s: %s" % (tree, units, steps))
    return len(unit_files)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    problems = []
    summary = []
    for root in sys.argv[1:]:
        root = os.path.normpath(root)
        tree = os.path.basename(os.path.dirname(os.path.abspath(root)))
        if tree not in RULES:
            print("include_rules.py: %s is not libcollective/src or strategies/src" % root)
            return 2
        checked = check_layers(root, RULES[tree], problems)
        units = check_cycles(root, tree, problems)
        summary.append("%s: %d includes checked, %d units" % (tree, checked, units))
    for problem in problems:
        print("include rule broken: " + problem)
    print("%s; %d break the rules" % ("; ".join(summary), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

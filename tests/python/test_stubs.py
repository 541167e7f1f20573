# The type stubs (collective/__init__.pyi) name every public method and
# property of the binding's classes, and nothing the binding lacks.
import ast
import os

import collective


def stub_members():
    path = os.path.join(os.path.dirname(collective.__file__), "__init__.pyi")
    tree = ast.parse(open(path, encoding="utf-8").read())
    members = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
            members[node.name] = {n for n in names if not n.startswith("_")}
    return members


def test_stubs_match_the_binding(comm):
    stubs = stub_members()
    for name in ("Communicator", "Work", "Plan"):
        cls = getattr(collective, name)
        bound = {m for m in dir(cls) if not m.startswith("_")}
        stubbed = stubs.get(name)
        assert stubbed is not None, f"rank {comm.rank}: __init__.pyi has no class {name}"
        assert bound - stubbed == set(), f"rank {comm.rank}: {name} members missing from __init__.pyi: {sorted(bound - stubbed)}"
        assert stubbed - bound == set(), f"rank {comm.rank}: __init__.pyi names {name} members the binding lacks: {sorted(stubbed - bound)}"

#!/usr/bin/env python3
"""Checks that a libcollective shared library exports its API and nothing else.

    exported_symbols.py --library LIB --headers DIR [--in-tree-headers DIR]
    exported_symbols.py --listing FILE --headers DIR [--in-tree-headers DIR]

The API is what the public headers mark COLLECTIVE_API: the classes
(`class COLLECTIVE_API Name`) and the free functions. Besides it the library
exports, for the layers built in this tree, what the in-tree shared headers
(libcollective/in_tree/, never installed) mark COLLECTIVE_IN_TREE_API. Every
strong dynamic symbol the library defines must belong to one of them (members, typeinfo,
vtables); weak ones are the C++ standard library's template instances the
compiler emits (namespace std, typeinfo of built-in types). No symbol, weak or
strong, may name `collective::internal` or `collective::detail`.
Exits 1 naming every symbol that breaks the rule.
"""
import argparse
import pathlib
import re
import subprocess
import sys


def mark_patterns(mark):
    """The class and function declarations that `mark` exports."""
    return (re.compile(r"\b(?:class|struct)\s+%s\s+(\w+)" % mark),
            re.compile(r"\b%s\s+[\w:<>,\s\*&]*?\b(\w+)\s*\(" % mark))


STRONG = set("TDBRG")
INTERNAL = re.compile(r"collective::(internal|detail)::")


def api_names(header_dir, mark="COLLECTIVE_API"):
    class_pattern, function_pattern = mark_patterns(mark)
    names = set()
    for header in sorted(pathlib.Path(header_dir).rglob("*.h*")):
        # Preprocessor lines (the macro's own definition) are not the API.
        text = "\n".join(line for line in header.read_text().splitlines()
                         if not line.lstrip().startswith("#"))
        names.update(class_pattern.findall(text))
        names.update(function_pattern.findall(text))
    return names


def symbols_of(library):
    out = subprocess.run(["nm", "-D", "--defined-only", "-C", library], check=True,
                         capture_output=True, text=True).stdout
    return out.splitlines()


def public_owner(name, api):
    """The API name a symbol belongs to, or None."""
    for prefix in ("typeinfo name for ", "typeinfo for ", "vtable for ",
                   "construction vtable for ", "VTT for "):
        if name.startswith(prefix):
            name = name[len(prefix):]
    match = re.match(r"collective::(\w+)", name)
    if match and match.group(1) in api:
        return match.group(1)
    return None


def violations(lines, api):
    found = []
    for line in lines:
        parts = line.split(None, 2)
        if len(parts) == 3:
            _, kind, name = parts
        elif len(parts) == 2:
            kind, name = parts
        else:
            continue
        if INTERNAL.search(name):
            found.append(f"{kind} {name}: names the library's internals")
        elif kind in STRONG:
            if public_owner(name, api) is None:
                found.append(f"{kind} {name}: not part of the API (no COLLECTIVE_API)")
        elif not (name.startswith("std::") or re.match(r"(typeinfo|typeinfo name|vtable) for ", name)
                  or name.startswith("__gnu_cxx::") or name.startswith("guard variable for std::")):
            found.append(f"{kind} {name}: weak symbol outside the standard library")
    return found


def main():
    parser = argparse.ArgumentParser()
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--library")
    source.add_argument("--listing")
    parser.add_argument("--headers", required=True)
    parser.add_argument("--in-tree-headers")
    args = parser.parse_args()
    api = api_names(args.headers)
    if not api:
        sys.exit(f"no COLLECTIVE_API declarations under {args.headers}")
    in_tree = set()
    if args.in_tree_headers:
        in_tree = api_names(args.in_tree_headers, "COLLECTIVE_IN_TREE_API")
        if not in_tree:
            sys.exit(f"no COLLECTIVE_IN_TREE_API declarations under {args.in_tree_headers}")
    lines = symbols_of(args.library) if args.library else pathlib.Path(args.listing).read_text().splitlines()
    bad = violations(lines, api | in_tree)
    origin = args.library or args.listing
    if bad:
        print(f"FAIL: {origin} exports {len(bad)} symbol(s) outside the API:")
        for item in bad:
            print("  " + item)
        sys.exit(1)
    print(f"{origin}: {len(lines)} exported symbols, all of the API "
          f"({len(api)} names: {', '.join(sorted(api))})"
          + (f" or shared in-tree ({', '.join(sorted(in_tree))})" if in_tree else ""))


if __name__ == "__main__":
    main()

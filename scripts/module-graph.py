#!/usr/bin/env python3
"""Measures the module graph from the imports: rooms (top-level modules of src/), arrows
between them (`crate::` references outside unit tests), cycles across rooms, files over 800
lines, and how often `object` names erasure or storage. Run: scripts/module-graph.py
(`--edges` also prints each arrow with its count)."""

import os
import re
import sys
from collections import defaultdict

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
REFERENCE = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")
# `use crate::{a, b::c}` names several rooms at once.
GROUP = re.compile(r"\bcrate::\{([^}]*)\}", re.S)


def rooms():
    found = {}
    for entry in sorted(os.listdir(SRC)):
        path = os.path.join(SRC, entry)
        if entry in ("lib.rs", "main.rs"):
            continue
        name = entry[:-3] if entry.endswith(".rs") else entry
        if os.path.isdir(path) or entry.endswith(".rs"):
            found.setdefault(name, []).append(path)
    return found


def files(paths):
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                for name in sorted(names):
                    if name.endswith(".rs"):
                        yield os.path.join(root, name)
        else:
            yield path


def production(text):
    """The source before its unit tests (`#[cfg(test)]`), without comments."""
    lines = []
    for line in text.splitlines():
        if line.strip() == "#[cfg(test)]":
            break
        if not line.strip().startswith("//"):
            lines.append(line)
    return "\n".join(lines)


def main():
    found = rooms()
    edges = defaultdict(int)
    long_files = []
    object_names = 0
    object_drive_ops = 0
    for room, paths in found.items():
        for path in files(paths):
            with open(path) as f:
                text = f.read()
            if text.count("\n") > 800 and not path.endswith("_tests.rs"):
                long_files.append((text.count("\n"), os.path.relpath(path, SRC)))
            # A `*_tests.rs` file is a unit-test module kept beside its file.
            code = "" if path.endswith("_tests.rs") else production(text)
            targets = REFERENCE.findall(code)
            for group in GROUP.findall(code):
                targets += [t.strip().split("::")[0] for t in group.split(",") if t.strip()]
            for target in targets:
                if target in found and target != room:
                    edges[(room, target)] += 1
            if room == "object":
                object_names += len(re.findall(r"\bcrate::(erasure|storage)\b", code))
                object_drive_ops += len(re.findall(r"\bMetaOp\b|\bMetaTable\b|\.meta_\w+\(", code))
    graph = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    # Strongly connected components (Tarjan) with more than one room are cycles across rooms.
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for room in found:
        if room not in index:
            visit(room)
    print(f"rooms: {len(found)}")
    print(f"arrows between rooms: {len(edges)}")
    print(f"cycles across rooms: {len(cycles)}")
    for cycle in cycles:
        print("  " + " <-> ".join(cycle))
    print(f"files over 800 lines: {len(long_files)}")
    for lines, path in sorted(long_files, reverse=True):
        print(f"  {lines:5} {path}")
    print(f"object naming erasure or storage: {object_names}")
    print(f"object naming drive operations on records (MetaOp, MetaTable, meta_*): {object_drive_ops}")
    if "--edges" in sys.argv:
        for (a, b), n in sorted(edges.items()):
            print(f"  {a} -> {b} ({n})")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The module graph of the C++ code: a header and its source are one module; an edge A -> B when
a file of A includes B's header. Prints each cycle (strongly connected set of two or more modules)
with the includes that close it.

usage: tools/module_graph.py [REPO] [--check] [--dot]
  --check  exit 1 when a cycle exists that tools/module_cycles.txt does not list, or a listed one
           has grown (new modules in it); a listed cycle that is gone is reported so the list
           can shrink. The list holds the cycles main still has, one per line, modules sorted.
  --dot    print the graph in Graphviz dot instead.
"""
import os
import re
import sys

LAYERS = {
    "engine": "engine", "input": "input", "report": "report", "launch": "launch", "probe": "probe"
}  # include/<x> -> src/<y>
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module_of(repo, path):
    """'engine/plan' for include/engine/shardplan/plan.hpp and src/engine/plan.cpp."""
    rel = os.path.relpath(path, repo)
    parts = rel.split(os.sep)
    stem = os.path.splitext(parts[-1])[0]
    if parts[0] == "include" and len(parts) == 4:
        return f"{LAYERS[parts[1]]}/{stem}"
    if parts[0] == "src" and len(parts) >= 3:
        return f"{'/'.join(parts[1:-1])}/{stem}"
    return None


def files(repo):
    for top in ("include", "src"):
        for root, _, names in os.walk(os.path.join(repo, top)):
            for n in sorted(names):
                if n.endswith((".hpp", ".cpp", ".h", ".cu")):
                    yield os.path.join(root, n)


def resolve(repo, including, target):
    local = os.path.join(os.path.dirname(including), target)
    if os.path.exists(local):
        return local
    for layer in LAYERS:
        p = os.path.join(repo, "include", layer, target)
        if os.path.exists(p):
            return p
    # A room's private header another room is given (the report's --json writer walks the
    # input's field tables, src/CMakeLists.txt).
    for layer in LAYERS.values():
        p = os.path.join(repo, "src", layer, target)
        if os.path.exists(p):
            return p
    return None  # a generated header or a library's


def graph(repo):
    edges = {}  # module -> {module: [(file, included)]}
    for f in files(repo):
        a = module_of(repo, f)
        if not a:
            continue
        edges.setdefault(a, {})
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            p = resolve(repo, f, inc)
            b = module_of(repo, p) if p else None
            if b and b != a:
                edges[a].setdefault(b, []).append((os.path.relpath(f, repo), inc))
                edges.setdefault(b, {})
    return edges


def cycles(edges):
    """Tarjan's strongly connected components of two or more modules, each sorted."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    repo = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    edges = graph(repo)
    if "--dot" in sys.argv:
        print("digraph modules {")
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f'  "{a}" -> "{b}";')
        print("}")
        return 0
    found = cycles(edges)
    print(f"{len(edges)} modules, {sum(len(e) for e in edges.values())} edges, "
          f"{len(found)} cycle(s)")
    for comp in found:
        print("cycle: " + " ".join(comp))
        members = set(comp)
        for a in comp:
            for b in sorted(edges[a]):
                if b in members:
                    f, inc = edges[a][b][0]
                    print(f"  {a} -> {b}   ({f} includes {inc})")
    if "--check" not in sys.argv:
        return 0
    listed_path = os.path.join(repo, "tools", "module_cycles.txt")
    listed = []
    if os.path.exists(listed_path):
        with open(listed_path, encoding="utf-8") as fh:
            listed = [set(line.split()) for line in fh
                      if line.strip() and not line.startswith("#")]
    status = 0
    for comp in found:
        if not any(set(comp) <= known for known in listed):
            print("NEW CYCLE (not in tools/module_cycles.txt): " + " ".join(comp))
            status = 1
    for known in listed:
        if not any(set(comp) & known for comp in found):
            print("gone, drop it from tools/module_cycles.txt: " + " ".join(sorted(known)))
    return status


if __name__ == "__main__":
    sys.exit(main())

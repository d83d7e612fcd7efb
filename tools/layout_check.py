#!/usr/bin/env python3
"""layout_check.py — the house rules of docs/layout.md, checked on the sources.

A module is a source file without its extension (src/train/stats.c and
src/train/stats.h are one module; x_internal.h, what x's own files share, is part of
x). Module A depends on B when

  - A's object uses a symbol that B's object defines (nm -P of build/src and
    build/kernels, after `make`): A calls B, or reads its table; or
  - a header of A includes a header of B (quoted includes, resolved as the compiler
    does: beside the file, then src/, then the tree's root): A's types need B's.

A .c file including the header it calls through is the first kind, seen from the
object; a header including a header is what no object shows. The rules:

  circles   no module reaches itself through its dependencies (a strongly connected
            component of more than one module is a circle; each is listed)
  arrows    a dependency from a lower layer to a higher one (LAYERS, low to high)
            runs back up; at most --max-arrows of them, module to module
  folders   no folder holds more than --max-files source files

  tools/layout_check.py                 the three checks; exit 1 when one fails
  tools/layout_check.py --graph         every module's dependencies, then the checks
  tools/layout_check.py --json          the findings as JSON (for the tests)
  tools/layout_check.py --root DIR      another tree laid out alike (the tests' small ones)
"""
import argparse
import json
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Low to high: a folder may include its own layer and those below it.
LAYERS = ["kernels", "src/base", "src/config", "src/system", "src/comm", "src/backend", "src/model",
          "src/result", "src/train", "src/report", "src/project", "src/cli"]
SOURCE_EXT = (".c", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def set_root(root):
    global ROOT
    ROOT = os.path.abspath(root)


def sources():
    for top in ("src", "kernels"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for name in sorted(names):
                if name.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)


def module_of(path):
    """x.c, x.h and x_internal.h (what x's own files share) are the module x."""
    stem = os.path.splitext(path)[0]
    return stem[:-len("_internal")] if stem.endswith("_internal") else stem


def layer_of(path):
    best = None
    for i, folder in enumerate(LAYERS):
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(LAYERS[best]):
                best = i
    return best


def resolve(including, name, known):
    for base in (os.path.dirname(including), "src", ""):
        candidate = os.path.normpath(os.path.join(base, name))
        if candidate in known:
            return candidate
    return None  # a generated header (git_commit.h) or a system one


def graph():
    files = list(sources())
    known = set(files)
    edges = defaultdict(set)      # module -> modules
    file_edges = []               # (file, included file)
    for f in files:
        with open(os.path.join(ROOT, f), encoding="utf-8") as fh:
            text = fh.read()
        for name in INCLUDE.findall(text):
            target = resolve(f, name, known)
            if target is None:
                continue
            file_edges.append((f, target))
            a, b = module_of(f), module_of(target)
            if a != b:
                edges[a].add(b)
        edges.setdefault(module_of(f), set())
    return files, edges, file_edges


def symbol_edges(build):
    """module -> modules whose global symbols its object uses, from `nm -P` of build/."""
    import glob
    import subprocess
    defined, used = {}, defaultdict(set)
    objects = sorted(glob.glob(os.path.join(build, "src", "**", "*.o"), recursive=True)
                     + glob.glob(os.path.join(build, "kernels", "*.o")))
    for obj in objects:
        stem = os.path.relpath(obj, build)[:-2]
        if not any(os.path.isfile(os.path.join(ROOT, stem + ext)) for ext in (".c", ".cu")):
            continue  # an object whose source was moved or removed since it was built
        module = module_of(stem)
        listing = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
        for line in listing.splitlines():
            parts = line.split()
            if len(parts) < 2:
                continue
            if parts[1] == "U":
                used[module].add(parts[0])
            elif parts[1] in "TDBR":
                defined[parts[0]] = module
    edges = defaultdict(set)
    for module, names in used.items():
        for name in names:
            owner = defined.get(name)
            if owner is not None and owner != module:
                edges[module].add(owner)
    return edges, len(objects)


def circles(edges):
    """Tarjan's strongly connected components of more than one module, each sorted."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-arrows", type=int, default=7)
    ap.add_argument("--max-files", type=int, default=30)
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--root", default=ROOT, help="the source tree (default: this tool's)")
    ap.add_argument("--build", help="the objects' folder (default ROOT/build)")
    args = ap.parse_args()
    set_root(args.root)
    if args.build is None:
        args.build = os.path.join(ROOT, "build")

    files, edges, file_edges = graph()
    calls, nobjects = symbol_edges(args.build) if os.path.isdir(args.build) else ({}, 0)
    both = defaultdict(set)
    for a, b in file_edges:
        if a.endswith((".h", ".cuh")) and module_of(a) != module_of(b):
            both[module_of(a)].add(module_of(b))
    for a, bs in calls.items():
        both[a] |= bs
    for m in edges:
        both.setdefault(m, set())
    found = {"circles": circles(both), "arrows": [], "folders": {}, "unplaced": [], "objects": nobjects}
    for f in files:
        if layer_of(f) is None:
            found["unplaced"].append(f)
    for a in sorted(both):
        for b in sorted(both[a]):
            la, lb = layer_of(a), layer_of(b)
            if la is not None and lb is not None and lb > la:
                found["arrows"].append([a, b])
    per_folder = defaultdict(int)
    for f in files:
        per_folder[os.path.dirname(f)] += 1
    found["folders"] = dict(sorted(per_folder.items()))

    if args.json:
        print(json.dumps(found, indent=1))
        return 0
    if args.graph:
        for m in sorted(edges):
            print(f"{m}: {' '.join(sorted(both[m]))}")
        print()
    ok = True
    print(f"modules: {len(edges)}, objects read: {found['objects']}")
    print(f"circles: {len(found['circles'])}")
    for c in found["circles"]:
        print("  " + " <-> ".join(c))
    ok &= not found["circles"]
    print(f"arrows up a layer (module to module): {len(found['arrows'])} (at most {args.max_arrows})")
    for a, b in found["arrows"]:
        print(f"  {a} -> {b}")
    ok &= len(found["arrows"]) <= args.max_arrows
    big = {d: n for d, n in found["folders"].items() if n > args.max_files}
    print(f"largest folder: {max(found['folders'].values())} source files (at most {args.max_files})")
    for d, n in big.items():
        print(f"  {d}: {n}")
    ok &= not big
    if not nobjects:
        print(f"no objects under {args.build}: the calls were not checked (make first)")
        ok = False
    if found["unplaced"]:
        print("in no layer: " + " ".join(found["unplaced"]))
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

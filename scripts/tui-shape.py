#!/usr/bin/env python3
"""The dashboard's shape, re-measurable: the app loop's size, the longest functions, and the
import graph between the modules of src/tui with its circles.

    scripts/tui-shape.py [--root src/tui] [--top 15] [--max 150] [--graph]

Exits 1 when a function is longer than --max lines or the modules import each other in a
circle, so it can guard the shape in CI as well as report it.
"""

import argparse
import os
import re
import sys

FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)")


def strip(text):
    """The text with comments, strings and char literals blanked (line breaks kept), so braces
    and paths are only those of code."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
            continue
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
            continue
        m = re.match(r'b?r(#*)"', text[i:i + 40])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
            continue
        if c == "'":
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'\n])'", text[i:i + 12])
            if m:
                out.append("' '")
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out)


def functions(path):
    """(name, first line, length in lines) of every fn with a body in the file."""
    code = strip(open(path, encoding="utf-8").read())
    lines = code.split("\n")
    found = []
    for start, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, opened = 0, False
        for k in range(start, len(lines)):
            for ch in lines[k]:
                if ch == "{":
                    depth, opened = depth + 1, True
                elif ch == "}":
                    depth -= 1
                elif ch == ";" and not opened and depth == 0:
                    break  # a declaration without a body
            else:
                if opened and depth == 0:
                    found.append((m.group(1), start + 1, k - start + 1))
                    break
                continue
            break
    return found


def module_of(root, path):
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(["tui"] + rel)


def expand(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = re.sub(r"\s+", "", tree)
    i = tree.find("{")
    if i < 0:
        return [tree]
    head, body = tree[:i], tree[i + 1:tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    return [p for part in parts if part for p in expand(head + part)]


def inline_modules(mod, code):
    """The file's code split by inline module: (module path, its own code), with the
    `#[cfg(test)]` modules left out (tests are not the dashboard's structure)."""
    pieces, rest, i = [], [], 0
    for m in re.finditer(r"(#\[cfg\(test\)\]\s*)?\bmod\s+(\w+)\s*\{", code):
        if m.start() < i:
            continue
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        rest.append(code[i:m.start()])
        if not m.group(1):
            pieces += inline_modules(mod + (m.group(2),), code[m.end():j - 1])
        i = j
    rest.append(code[i:])
    return [(mod, "".join(rest))] + pieces


def imports(root):
    """The module graph: module -> set of modules of src/tui it names."""
    files = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(dirpath, name)
                files[module_of(root, path)] = path
    graph = {m: set() for m in files}
    for mod, path in files.items():
        paths = []
        for base, code in inline_modules(mod, strip(open(path, encoding="utf-8").read())):
            found = []
            for stmt in re.findall(r"\buse\s+([^;]+);", code):
                found += expand(stmt)
            found += re.findall(r"\b(?:crate|super)(?:::\w+)+", code)
            paths += [(base, p) for p in found]
        for base, p in paths:
            segs = [s for s in re.split(r"::", p.split(" as ")[0]) if s]
            if not segs:
                continue
            if segs[0] == "crate":
                target = tuple(segs[1:])
            elif segs[0] in ("super", "self"):
                cur = list(base)
                while segs and segs[0] in ("super", "self"):
                    if segs[0] == "super":
                        cur = cur[:-1]
                    segs = segs[1:]
                target = tuple(cur + segs)
            else:
                # a sibling named through `mod x; use x::...` in a mod.rs
                target = tuple(list(mod) + segs)
            if not target or target[0] != "tui":
                continue
            # the longest known module that prefixes the path
            while target and target not in files:
                target = target[:-1]
            if target and target != mod:
                # a folder's module declaring its own children is not an import of them
                # unless it names them; a child naming its parent's items is one.
                graph[mod].add(target)
    return graph


def circles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

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
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def name(mod):
    return "::".join(mod)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default="src/tui")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--max", type=int, default=150)
    ap.add_argument("--graph", action="store_true", help="print every import edge")
    args = ap.parse_args()

    loop = os.path.join(args.root, "app")
    loop_lines = sum(
        sum(1 for _ in open(os.path.join(d, f), encoding="utf-8"))
        for d, _, fs in os.walk(loop)
        for f in fs
        if f.endswith(".rs")
    )
    print(f"app loop ({loop}): {loop_lines} lines")

    fns = []
    for d, _, fs in os.walk(args.root):
        for f in fs:
            if f.endswith(".rs"):
                p = os.path.join(d, f)
                fns += [(length, p, line, fname) for fname, line, length in functions(p)]
    fns.sort(reverse=True)
    over = [f for f in fns if f[0] > args.max]
    print(f"functions: {len(fns)}; over {args.max} lines: {len(over)}; longest:")
    for length, p, line, fname in fns[: args.top]:
        print(f"  {length:5d}  {fname}  {p}:{line}")

    graph = imports(args.root)
    edges = sum(len(v) for v in graph.values())
    found = circles(graph)
    print(f"import graph: {len(graph)} modules, {edges} edges; circles: {len(found)}")
    for comp in found:
        print(f"  circle of {len(comp)}: " + ", ".join(name(m) for m in comp))
        inside = set(comp)
        for m in comp:
            ins = sorted(name(t) for t in graph[m] if t in inside)
            print(f"    {name(m)} -> {', '.join(ins)}")
    if args.graph:
        for m in sorted(graph):
            print(f"  {name(m)} -> {', '.join(sorted(name(t) for t in graph[m]))}")
    return 1 if over or found else 0


if __name__ == "__main__":
    sys.exit(main())

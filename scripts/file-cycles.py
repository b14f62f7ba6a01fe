#!/usr/bin/env python3
"""Lists pairs (and longer cycles) of files of one module that import each other.

The layout rule of weir: files inside a module depend one way (lexer -> parser -> plan -> exec),
so no two files of one module import each other, directly or through a ring. This script reads
every `src/**/*.rs`, finds each file's references to other modules of the crate (`use` trees,
inline paths `crate::a::b::Item`, `super::x`, `self::x`), resolves an item re-exported by a
`mod.rs` (`pub use reader::Reader`) to the file that defines it, and reports every cycle among
the files that share a parent module.

    python3 scripts/file-cycles.py          # prints the cycles; exit 1 when there is one
    python3 scripts/file-cycles.py --all    # also prints every file's edges
    python3 scripts/file-cycles.py --root DIR/src   # reads another crate's sources

The layout guard (`tests/it/layout.rs`) runs it and fails on any cycle not in its allow-list.

It is a reading of the text, not of rustc's name resolution: a glob import (`use super::*`)
counts as importing every sibling it names nowhere else, so avoid globs outside tests.
Test modules (`#[cfg(test)] mod tests { ... }` at the end of a file) are skipped.
"""

import os
import re
import sys
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# A char literal (`'x'`, `'\\''`, `'\\u{1F600}'`), not a lifetime (`'a`).
CHAR = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]*\}|.)|[^'\\\n])'")


def module_of(path):
    rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return tuple(rel)


def strip(text):
    """Removes comments, string and char literals and the trailing test module.

    One left-to-right pass, so that `//` inside a string (`"http://..."`) is no comment, a
    quote inside a comment opens no string, and the `r` ending a word before a quote
    (`"...reader"`) opens no raw string; a lifetime (`'a`) is kept as it is.
    """
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and not (
            i and re.match(r"\w", text[i - 1])
        ):
            end = text.find('"' + m.group(1), m.end())
            i = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and (m := CHAR.match(text, i)):
            i = m.end()
            out.append("''")
        else:
            out.append(c)
            i += 1
    text = "".join(out)
    m = re.search(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text)
    if m:
        text = text[: m.start()]
    return text


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = re.sub(r"\s+", "", tree)
    out = []

    def walk(prefix, s):
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(s[start:i])
                start = i + 1
        parts.append(s[start:])
        for p in parts:
            if not p:
                continue
            if "{" in p:
                head, rest = p.split("{", 1)
                walk(prefix + head, rest[: rest.rfind("}")])
            else:
                out.append(prefix + re.sub(r"\bas\b.*", "", p))

    walk("", tree)
    return out


def main():
    global ROOT
    if "--root" in sys.argv:
        at = sys.argv.index("--root") + 1
        if at >= len(sys.argv):
            print("--root needs a directory", file=sys.stderr)
            return 2
        ROOT = sys.argv[at]
    if not os.path.isdir(ROOT):
        print(f"no source directory at {ROOT}", file=sys.stderr)
        return 2
    files = {}
    for dirpath, _, names in os.walk(ROOT):
        if "generated" in dirpath:
            continue
        for n in names:
            if n.endswith(".rs"):
                p = os.path.join(dirpath, n)
                files[module_of(p)] = p
    modules = set(files)
    texts = {m: strip(open(p, encoding="utf-8").read()) for m, p in files.items()}

    # Items a module file re-exports from one of its children: (module, item) -> child.
    reexport = {}
    for m, t in texts.items():
        for u in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", t):
            for path in expand_use(u.group(1)):
                segs = [s for s in path.split("::") if s]
                if segs and segs[0] == "self":
                    segs = segs[1:]
                if len(segs) >= 2 and m + (segs[0],) in modules:
                    reexport[(m, segs[-1])] = m + (segs[0],)

    def resolve(m, segs):
        if not segs:
            return None
        if segs[0] == "crate":
            base, segs = (), segs[1:]
        elif segs[0] == "super":
            base = m[:-1]
            segs = segs[1:]
            while segs and segs[0] == "super":
                base, segs = base[:-1], segs[1:]
        elif segs[0] == "self":
            base, segs = m, segs[1:]
        else:
            return None
        cur = base
        for s in segs:
            if cur + (s,) in modules:
                cur = cur + (s,)
                continue
            if (cur, s) in reexport:
                cur = reexport[(cur, s)]
            break
        return cur

    edges = defaultdict(set)
    for m, t in texts.items():
        paths = []
        for u in re.finditer(r"\buse\s+([^;]+);", t):
            paths += expand_use(u.group(1))
        for u in re.finditer(rf"\b(?:crate|super|self)(?:::{IDENT})+", t):
            paths.append(u.group(0))
        for path in paths:
            segs = [s for s in path.split("::") if s and s != "*"]
            target = resolve(m, segs)
            if target is None or target == m:
                continue
            # An edge between two files of one parent module (or to a child's file).
            if len(target) >= 1 and target[:-1] == m[:-1]:
                edges[m].add(target)
            elif len(target) > len(m[:-1]) + 1 and target[: len(m) - 1] == m[:-1]:
                edges[m].add(target[: len(m)])

    if "--all" in sys.argv:
        for m in sorted(edges):
            print("/".join(m), "->", ", ".join("/".join(t) for t in sorted(edges[m])))

    # Strongly connected components among siblings (Tarjan).
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
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
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(modules):
        if v not in index:
            strong(v)
    for comp in sorted(comps):
        print("cycle:", "  ".join(os.path.relpath(files[c], os.path.join(ROOT, "..")) for c in comp))
    print(f"{len(comps)} cycle(s) among {len(modules)} files", file=sys.stderr)
    return 1 if comps else 0


if __name__ == "__main__":
    sys.exit(main())

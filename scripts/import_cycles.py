#!/usr/bin/env python3
"""Fails when the files of a room import each other in a circle (docs/architecture.md).

Within `src/ROOM`, file A imports file B when A names `crate::ROOM::b…` or `super::b…` (braced
groups included). A module and the submodules it declares may name each other (the parent
re-exports, the children use its shared types); every other import must go one way, so the
files form layers. Prints each circle found; exit status 1 if any.
"""
import re
import sys
from pathlib import Path

room = sys.argv[1] if len(sys.argv) > 1 else "server"
root = Path(__file__).resolve().parent.parent / "src" / room


def module_of(path: Path) -> tuple:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    return tuple(parts)


files = {module_of(p): p for p in root.rglob("*.rs")}


def expand(text: str) -> list:
    """Paths in a `use` tree: `a::{b, c::d}` -> `a::b`, `a::c::d`."""
    out = []
    m = re.match(r"^([\w:]*?)::?\{(.*)\}$", text, re.S)
    if not m:
        return [text]
    prefix, inner = m.group(1), m.group(2)
    depth, item, items = 0, "", []
    for ch in inner:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(item)
            item = ""
        else:
            item += ch
    items.append(item)
    for i in items:
        i = i.strip()
        if i:
            out.extend(expand(f"{prefix}::{i}" if prefix else i))
    return out


def reexports(module: tuple) -> dict:
    """Names a module file re-exports from its submodules (`pub use sub::Name`): name -> sub."""
    text = files[module].read_text()
    out = {}
    for use in re.findall(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text, re.S):
        for p in expand(re.sub(r"\s+", "", use)):
            parts = p.split("::")
            if parts[0] in ("self",):
                parts = parts[1:]
            name = parts[-1].split(" as ")[-1] if " as " in parts[-1] else parts[-1]
            if "as" in p:
                name = p.split("as")[-1]
            if module + (parts[0],) in files:
                out[name] = module + (parts[0],)
    return out


def resolve(module: tuple, path: str):
    """The module tuple a path names, relative to `module` (the file's own)."""
    parts = [p.strip() for p in path.split("::") if p.strip()]
    if parts[:2] == ["crate", room]:
        base, rest = (), parts[2:]
    elif parts and parts[0] == "super":
        base = module[:-1]
        rest = parts[1:]
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    elif parts and parts[0] == "self":
        base, rest = module, parts[1:]
    else:
        return None
    target = base
    for p in rest:
        if target + (p,) in files:
            target = target + (p,)
        else:
            # A name the module re-exports names the submodule that defines it.
            target = reexports(target).get(p, target)
            break
    return target


edges = {m: set() for m in files}
for module, path in files.items():
    text = re.sub(r"//[^\n]*", "", path.read_text())
    # `#[cfg(test)]` items are the tests' own business.
    text = text.split("#[cfg(test)]\nmod tests {")[0]
    paths = []
    for use in re.findall(r"\buse\s+([^;]+);", text, re.S):
        paths.extend(expand(re.sub(r"\s+", "", use)))
    paths.extend(re.findall(r"\b((?:crate::" + room + r"|super)(?:::\w+)+)", text))
    for p in paths:
        target = resolve(module, p)
        if target is None or target == module or target not in files:
            continue
        # A parent and its own submodules (at any depth) may name each other.
        if target == module[: len(target)] or module == target[: len(module)]:
            continue
        if module[-1:] in (("tests",), ("testing",)) or target[-1:] == ("testing",):
            continue
        edges[module].add(target)

# Tarjan's strongly connected components.
index, low, on, stack, found = {}, {}, set(), [], []
sys.setrecursionlimit(10000)


def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        scc = []
        while True:
            w = stack.pop()
            on.discard(w)
            scc.append(w)
            if w == v:
                break
        if len(scc) > 1:
            found.append(scc)


for v in files:
    if v not in index:
        visit(v)

name = lambda m: "::".join((room,) + m)
for scc in found:
    members = set(scc)
    print(f"error: import circle in src/{room}: " + ", ".join(sorted(name(m) for m in scc)), file=sys.stderr)
    for m in sorted(scc):
        for t in sorted(edges[m] & members):
            print(f"  {name(m)} -> {name(t)}", file=sys.stderr)
sys.exit(1 if found else 0)

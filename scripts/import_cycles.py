#!/usr/bin/env python3
"""Fails when the files of a room import each other in a circle (docs/architecture.md).

Within `src/ROOM`, file A imports file B when A names `crate::ROOM::b…`, `super::b…` or
`self::b…` (braced groups included); a name a module re-exports (`pub use sub::Name`) stands
for the file that defines it. Every import must go one way, so the files form layers: a module
file that re-exports its submodules' names imports them, so what they share lives in a file of
its own, never in the parent. Test modules (`tests`, `testing`, `#[cfg(test)] mod tests { … }`)
are the tests' own business. Prints each circle found; exit status 1 if any.

    import_cycles.py [ROOM…]    (no room: every room under src/)
"""
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def use_paths(text: str) -> list:
    """Paths in a `use` tree, whitespace-free but for ` as `: `a::{b, c::d as e}` ->
    `a::b`, `a::c::d as e`."""
    text = re.sub(r"\s+", "", re.sub(r"\s+as\s+", "\0", text)).replace("\0", " as ")
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
    out = []
    for i in items:
        i = i.strip()
        if i:
            out.extend(use_paths(f"{prefix}::{i}" if prefix else i))
    return out


class Room:
    def __init__(self, name: str):
        self.name = name
        self.root = SRC / name
        self.files = {self.module_of(p): p for p in self.root.rglob("*.rs")}
        self._reexports = {}
        self._defined = {}

    def module_of(self, path: Path) -> tuple:
        parts = list(path.relative_to(self.root).with_suffix("").parts)
        if parts[-1] == "mod":
            parts.pop()
        return tuple(parts)

    def reexports(self, module: tuple) -> dict:
        """Names a module file re-exports from its submodules (`pub use sub::Name`): name -> the
        submodule's path within the room (followed through re-exports of re-exports)."""
        if module in self._reexports:
            return self._reexports[module]
        out = {}
        self._reexports[module] = out
        text = strip(self.files[module].read_text())
        for use in re.findall(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text, re.S):
            for p in use_paths(use):
                path, _, alias = p.partition(" as ")
                parts = path.split("::")
                if parts[0] == "self":
                    parts = parts[1:]
                if len(parts) < 2 or module + (parts[0],) not in self.files:
                    continue
                name = alias or parts[-1]
                out[name] = self.resolve(module, "self::" + "::".join(parts))
        return out

    def defines(self, module: tuple, name: str) -> bool:
        """Whether the module's own file defines `name` (not through a `use`)."""
        if module not in self._defined:
            text = strip(self.files[module].read_text())
            self._defined[module] = set(re.findall(r"\b(?:struct|enum|union|trait|type|fn|const|static|mod|macro_rules!)\s+(\w+)", text))
        return name in self._defined[module]

    def glob_target(self, module: tuple, name: str):
        """Where a name a module re-exports with a glob (`pub use bindings::*`) comes from: the
        glob's module, when the module's own file does not define it."""
        if self.defines(module, name):
            return None
        text = strip(self.files[module].read_text())
        for sub in re.findall(r"\bpub(?:\([^)]*\))?\s+use\s+(?:self::)?(\w+)::\*\s*;", text):
            if module + (sub,) in self.files:
                return module + (sub,)
        return None

    def resolve(self, module: tuple, path: str):
        """The module a path names, relative to `module` (the file's own); `None` outside the room."""
        parts = [p for p in path.partition(" as ")[0].split("::") if p]
        if parts[:2] == ["crate", self.name]:
            base, rest = (), parts[2:]
        elif parts and parts[0] == "super":
            base, rest = module[:-1], parts[1:]
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
        elif parts and parts[0] == "self":
            base, rest = module, parts[1:]
        elif parts and module + (parts[0],) in self.files:
            # A path from a submodule's name (`use store::PgStore` in `postgres/mod.rs`).
            base, rest = module, parts
        else:
            return None
        target = base
        for p in rest:
            if target + (p,) in self.files:
                target = target + (p,)
            else:
                # A name the module re-exports names the submodule that defines it.
                if target in self.files:
                    target = self.reexports(target).get(p) or self.glob_target(target, p) or target
                break
        return target

    def edges(self) -> dict:
        edges = {m: set() for m in self.files}
        for module, path in self.files.items():
            if module[-1:] in (("tests",), ("testing",)):
                continue
            text = strip(path.read_text())
            inline = set(re.findall(r"\bmod\s+(\w+)\s*\{", text))
            paths = []
            for use in re.findall(r"\buse\s+([^;]+);", text, re.S):
                paths.extend(use_paths(use))
            # Paths written inline, outside the `use`s (whose braced groups were read above:
            # `use super::m::{A, B}` names the files defining A and B, not `m` itself).
            body = re.sub(r"\buse\s+[^;]+;", "", text)
            paths.extend(re.findall(r"\b((?:crate::" + self.name + r"|super|self)(?:::\w+)+)", body))
            for p in paths:
                parts = p.split("::")
                if parts[0] == "super" and len(parts) > 1 and parts[1] in inline:
                    # Inside an inline `mod` of this file: `super::` is the file itself.
                    continue
                target = self.resolve(module, p)
                if target is None or target == module or target not in self.files:
                    continue
                if target[-1:] == ("testing",):
                    continue
                edges[module].add(target)
        return edges


def strip(text: str) -> str:
    """The text without comments and without its inline test modules (`#[cfg(test)] mod NAME { … }`, last in a file)."""
    text = re.sub(r"//[^\n]*", "", text)
    return re.split(r"#\[cfg\(test\)\]\s*mod \w+\s*\{", text)[0]


def circles(edges: dict) -> list:
    """Tarjan's strongly connected components of more than one file."""
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

    for v in edges:
        if v not in index:
            visit(v)
    return found


def check(name: str) -> bool:
    room = Room(name)
    edges = room.edges()
    show = lambda m: "::".join((name,) + m)
    found = circles(edges)
    for scc in found:
        members = set(scc)
        print(f"error: import circle in src/{name}: " + ", ".join(sorted(show(m) for m in scc)), file=sys.stderr)
        for m in sorted(scc):
            for t in sorted(edges[m] & members):
                print(f"  {show(m)} -> {show(t)}", file=sys.stderr)
    return not found


rooms = sys.argv[1:] or sorted(p.name for p in SRC.iterdir() if p.is_dir())
ok = all([check(room) for room in rooms])
sys.exit(0 if ok else 1)

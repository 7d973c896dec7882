"""Fails when a module of a crate imports a module that imports it back.

Each `.rs` file under a crate's `src/` is a module (`a/b.rs` and
`a/b/mod.rs` are `a::b`); a module depends on every module its code names
by a `crate::` or `super::` path (`use crate::store::Claim`, a
`crate::json::int::opt_u32` inside an attribute, `super::data::encode`),
resolved to the deepest module that exists. A module naming its own
ancestors is the tree, not a circle, and is not counted; comments and the
`#[cfg(test)]` part of a file are left out (tests may look anywhere).

A circle is a strongly connected set of two or more modules. Why it
matters: a room that reaches into a room that reaches back cannot be
understood, tested or moved alone — the issue that asked for one front door
counted them (issue 17), and this keeps the count at zero.

Usage: python3 scripts/import_circles.py CRATE_SRC_DIR...   (exit 1 on any)
"""

import os
import re
import sys

PATH = re.compile(r"crate::((?:\w+::)*\w+)")
GROUP = re.compile(r"crate::((?:\w+::)*)\{([^}]*)\}")
SUPER = re.compile(r"\b((?:super::)+)((?:\w+::)*\w+)")


def modules(src):
    """{module path: file} of every `.rs` file under `src`."""
    out = {}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, name), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] == "mod":
                parts = parts[:-1]
            if parts in (["lib"], ["main"]):
                parts = []
            out["::".join(parts)] = os.path.join(root, name)
    return out


def code_of(path):
    """The file's code: the test part and comment lines left out."""
    text = open(path, encoding="utf-8").read()
    cut = text.find("#[cfg(test)]")
    if cut >= 0:
        text = text[:cut]
    return "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("//"))


def edges(mods):
    def resolve(path):
        parts = [p for p in path.split("::") if p and p != "self"]
        for n in range(len(parts), 0, -1):
            key = "::".join(parts[:n])
            if key in mods:
                return key
        return None

    out = {m: set() for m in mods}
    for module, file in mods.items():
        code = code_of(file)
        named = [m.group(1) for m in PATH.finditer(code)]
        for group in GROUP.finditer(code):
            for item in group.group(2).split(","):
                item = item.strip().split(" as ")[0].strip()
                if item:
                    named.append(group.group(1) + item)
        here = module.split("::") if module else []
        # `super` in `a/b.rs` (module a::b) is `a`; in `a/b/mod.rs` too.
        for sup in SUPER.finditer(code):
            ups = sup.group(1).count("super")
            base = here[: max(len(here) - ups, 0)]
            named.append("::".join(base + [sup.group(2)]))
        for path in named:
            target = resolve(path)
            if target and target != module and not (module + "::").startswith(target + "::"):
                out[module].add(target)
    return out


def circles(graph):
    """Strongly connected sets of two or more modules (Tarjan, iterative)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    group.append(top)
                    if top == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def main(dirs):
    failed = False
    for src in dirs:
        mods = modules(src)
        graph = edges(mods)
        found = circles(graph)
        print(f"{src}: {len(mods)} modules, {len(found)} import circles")
        for group in found:
            failed = True
            inside = set(group)
            print("  circle: " + ", ".join(group))
            for module in group:
                for target in sorted(graph[module] & inside):
                    print(f"    {module} -> {target}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The house rules, read off the source: which part may import which, the translator's public
names, imports at the top of each file, module sizes, and the package list that installs it all
under ``warpboard``.

The translator's stages, lowest first (translator/README.md): ``errors``, ``abi``, ``values``
and ``spirv`` < ``isa`` < ``sass`` < ``ir`` < ``interp`` and ``emit``, side by side. A module
imports only from its own stage or a lower one; the interpreter and the emitter never import
each other, and no translation strategy (a sub-package of ``emit`` a ``STRATEGIES`` record names)
imports another.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomllib
from warpboard import translator

from support.paths import ROOT

PARTS = ("translator", "harness", "authoring", "studies", "reports", "warpboard")
TOP_FOLDERS = PARTS[:5]             # folders of their own, installed as warpboard.<part>
STAGE = {"errors": 0, "abi": 0, "target": 0, "values": 0, "spirv": 0, "isa": 1, "sass": 2, "ir": 3, "interp": 4, "emit": 4}
FORBIDDEN = {                       # part -> the parts above it, which it must never import
    "translator": {"harness", "authoring", "studies", "reports", "warpboard"},
    "harness": {"authoring", "studies", "reports", "warpboard"},     # the runner: its rooms use it
    "authoring": {"studies", "reports", "warpboard"},
    "studies": {"reports", "warpboard"},
    "reports": {"authoring", "studies", "warpboard"},
}
# Imports allowed inside functions: optional packages, and the Vulkan binding, which only the
# worker processes load (the parent never opens a device).
LATE_IMPORTS = {"cupy", "numpy", "pynvml", "nvidia", "warpboard.harness.vk"}
MAX_LINES = 500


@dataclass(frozen=True)
class Import:
    module: str          # the importing module, by its installed name (warpboard.translator.ir.order)
    target: str          # the imported module, same spelling
    names: tuple[str, ...]
    line: int
    top: bool            # at the top of the file, not inside a function


def installed_name(path: Path) -> str:
    """``translator/ir/order.py`` -> ``warpboard.translator.ir.order``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts if parts[0] == "warpboard" else ["warpboard", *parts])


def imports_of(path: Path, module: str | None = None) -> list[Import]:
    """Every import statement of a file, absolute, with the names it takes."""
    module = module or installed_name(path)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    tree = ast.parse(path.read_text(), str(path))
    inside = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              for n in ast.walk(f)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(module, a.name, (), node.lineno, id(node) not in inside) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found.append(Import(module, target, tuple(a.name for a in node.names), node.lineno,
                                id(node) not in inside))
    return found


def sources(*parts: str) -> list[Path]:
    return sorted(p for part in parts for p in (ROOT / part).rglob("*.py"))


def edges(*parts: str) -> list[Import]:
    """Imports of the project's own modules. ``from pkg import name`` is an import of
    ``pkg.name`` where that is a module (and then of nothing else), of ``pkg`` otherwise."""
    out = []
    for path in sources(*parts):
        for imp in imports_of(path):
            if imp.target.split(".")[0] != "warpboard":
                continue
            subs = tuple(n for n in imp.names if _is_module(f"{imp.target}.{n}"))
            others = tuple(n for n in imp.names if n not in subs)
            if others or not imp.names:
                out.append(Import(imp.module, imp.target, others, imp.line, imp.top))
            out += [Import(imp.module, f"{imp.target}.{n}", (), imp.line, imp.top) for n in subs]
    return out


def _is_module(name: str) -> bool:
    parts = name.split(".")[1:]
    if not parts:
        return False
    base = ROOT / ("warpboard" if parts[0] not in TOP_FOLDERS else "")
    path = base.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def part_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in TOP_FOLDERS else "warpboard"


def stage_of(name: str) -> str | None:
    """The translator stage a module belongs to (None for the package itself)."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "translator" else None


def strategy_of(name: str) -> str | None:
    parts = name.split(".")
    if len(parts) > 3 and parts[1:3] == ["translator", "emit"] and \
            parts[3] in {s.package for s in translator.STRATEGIES.values()}:
        return parts[3]
    return None


def where(imp: Import) -> str:
    return f"{imp.module}:{imp.line} imports {imp.target}"


# ------------------------------------------------------------------ the import graph
def test_the_graph_is_seen_with_relative_and_absolute_imports():
    graph = {(i.module, i.target) for i in edges("translator", "harness", "warpboard")}
    assert ("warpboard.translator.emit.emitter", "warpboard.translator.ir.program") in graph     # relative
    assert ("warpboard.translator.emit.emitter", "warpboard.translator.emit.turns") in graph     # from . import turns
    assert ("warpboard.harness.run.dispatch", "warpboard.translator") in graph                 # absolute
    assert ("warpboard.cli", "warpboard.reports.render") in graph


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_no_part_imports_one_above_it(part):
    upward = [where(i) for i in edges(part) if part_of(i.target) in FORBIDDEN[part]]
    assert not upward, "\n".join(upward)


def package_of(module: str) -> str:
    """The node of the import graph a module belongs to: a sub-package (a package is its own
    node), or, for a module directly in a part (warpboard.translator.abi,
    warpboard.authoring.corpus), the module itself."""
    if _is_module(module + ".__init__"):
        return module
    parent = module.rsplit(".", 1)[0]
    return module if parent == "warpboard" or parent.removeprefix("warpboard.") in TOP_FOLDERS else parent


def circles(pairs) -> list[list[str]]:
    """The strongly connected components of more than one node of a directed graph."""
    graph: dict[str, set[str]] = {}
    for a, b in pairs:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
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
                found.append(sorted(component))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_between_packages():
    """No sub-package imports one beside it that imports it back, through any chain: each (the
    runner's case/, run/, vk/, translators/; a room's capture/ or fuzz/; the translator's
    stages) can be read with only what it imports."""
    pairs = {(package_of(i.module), package_of(i.target)) for i in edges(*PARTS)}
    # a package and the packages inside it work together (the emitter and its strategies,
    # the opcode table and its semantics): only packages side by side must not circle
    pairs = {(a, b) for a, b in pairs if a != b and not b.startswith(a + ".") and not a.startswith(b + ".")}
    found = circles(pairs)
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def test_the_circle_check_finds_a_circle():
    assert circles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]) == [["a", "b", "c"]]
    assert circles([("a", "b"), ("b", "c")]) == []


def test_translator_imports_only_go_down_its_stages():
    wrong = []
    for imp in edges("translator"):
        src, dst = stage_of(imp.module), stage_of(imp.target)
        if src is None or dst is None or src == dst:
            continue                    # the package's own __init__, or within one stage
        if STAGE[dst] > STAGE[src] or {src, dst} == {"interp", "emit"}:
            wrong.append(where(imp))
    assert not wrong, "\n".join(wrong)


def test_no_strategy_imports_another():
    assert translator.STRATEGIES, "no translation strategy registered"
    crossing = [where(i) for i in edges("translator")
                if strategy_of(i.module) and strategy_of(i.target) not in (None, strategy_of(i.module))]
    assert not crossing, "\n".join(crossing)


def test_code_outside_the_translator_uses_only_its_public_names():
    public = set(translator.__all__)
    wrong = []
    for imp in edges("harness", "authoring", "studies", "reports", "warpboard", "ci", "cases", "bench"):
        if part_of(imp.target) != "translator":
            continue
        if imp.target.removeprefix("warpboard.translator.") in public:
            continue                    # a module the package exports (abi, vprintf)
        if imp.target != "warpboard.translator":
            wrong.append(f"{where(imp)}: use the names warpboard.translator exports")
        wrong += [f"{where(imp)}: {n} is not in translator.__all__" for n in imp.names if n not in public]
    assert not wrong, "\n".join(wrong)


def test_the_public_names_exist():
    missing = [n for n in translator.__all__ if not hasattr(translator, n)]
    assert not missing


def test_imports_are_at_the_top_of_each_file():
    late = [f"{where(i)} inside a function" for path in sources(*PARTS) for i in imports_of(path)
            if not i.top and i.target.split(".")[0] not in LATE_IMPORTS and i.target not in LATE_IMPORTS
            and not any(f"{i.target}.{n}" in LATE_IMPORTS for n in i.names)]
    assert not late, "\n".join(late)


def test_the_checks_above_would_see_a_violation(tmp_path):
    """The graph reader on a file that breaks each rule: an upward, a late and a deep import."""
    bad = tmp_path / "probe.py"
    bad.write_text("from ..emit import emitter\n\ndef f():\n    from warpboard.harness.run import engine\n")
    up, late = imports_of(bad, "warpboard.translator.isa.probe")
    assert (up.target, up.top) == ("warpboard.translator.emit", True) and stage_of(up.target) == "emit"
    assert STAGE[stage_of(up.target)] > STAGE[stage_of(up.module)]
    assert (late.target, late.top) == ("warpboard.harness.run", False) and part_of(late.target) == "harness"


# ------------------------------------------------------------------ sizes and packaging
def test_no_module_is_over_the_size_limit():
    big = [f"{p.relative_to(ROOT)}: {n} lines" for p in sources(*PARTS, "tests")
           if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not big, "\n".join(big)


def test_every_package_folder_is_installed_under_warpboard():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped = {v: k for k, v in config["package-dir"].items()}
    folders = {installed_name(p) for part in PARTS for p in (ROOT / part).rglob("__init__.py")}
    assert set(config["packages"]) == folders
    assert set(mapped) == set(PARTS) and all(k.startswith("warpboard") for k in mapped.values())


def test_the_script_and_the_plugin_are_registered():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["warpboard"] == "warpboard.cli:main"
    assert project["entry-points"]["pytest11"]["warpboard"] == "warpboard.harness.plugin"

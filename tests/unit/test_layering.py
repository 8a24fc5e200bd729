"""The house plan: memtray.core is a library in rooms whose imports only point down,
and memtray.desktop a front end on top of it.

* no Qt anywhere under core/, and core imports with PySide6 absent;
* rooms are layered in :data:`ROOMS` order: a module may import its own room and
  the rooms below it, never a room above (lazy imports inside functions count);
* the desktop uses core's rooms but never the console front end (``core.cli``):
  what the CLI and the desktop share lives in a room below both, and what the
  desktop needs of the CLI (serving a forwarded command) is handed to it;
* no import cycles between modules, in core or in the desktop;
* core/ top level holds only the package face and the composition root;
* no module imports a name with a leading underscore from another module;
* no module, in core or in the desktop, is past the size limit.

Every import counts: lazy ones inside functions and ``if TYPE_CHECKING:`` ones too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core"
DESKTOP = CORE.parent / "desktop"
QT = ("PySide6", "PyQt5", "PyQt6", "PySide2", "shiboken6", "qtpy")

#: Bottom to top. ``app`` is the composition root; ``cli`` the console front end on top.
ROOMS = ("base", "log", "llm", "memory", "reminders", "search", "agent", "mcp", "sync", "app", "audit", "admin", "migrate",
         "cli")
TOP_LEVEL = {"__init__.py", "app.py"}
MAX_LINES = 650


def _modules(root: Path = CORE) -> dict[str, Path]:
    """Module name -> file, for every module under ``root`` (core/ or desktop/)."""
    out = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(["memtray", root.name, *parts])] = path
    return out


def _imports(path: Path, module: str) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names) for every import in ``path``, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")
                pkg = pkg[: len(pkg) - node.level + 1]
                base = ".".join(pkg + ([base] if base else []))
            found.append((node.lineno, base, [a.name for a in node.names]))
    return found


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else "__init__"


def _graph(root: Path = CORE) -> dict[str, set[str]]:
    """Which modules under ``root`` each module under ``root`` imports."""
    mods = _modules(root)
    prefix = f"memtray.{root.name}"
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        for _, target, names in _imports(path, mod):
            if not target.startswith(prefix):
                continue
            hits = [f"{target}.{n}" for n in names if f"{target}.{n}" in mods] or [target]
            for t in hits:
                while t not in mods and "." in t:
                    t = t.rpartition(".")[0]
                if t in mods and t != mod:
                    graph[mod].add(t)
    return graph


def test_no_module_under_core_imports_qt_or_the_desktop() -> None:
    offenders = []
    for mod, path in _modules().items():
        for line, target, _ in _imports(path, mod):
            if target.split(".")[0] in QT or target.startswith("memtray.desktop"):
                offenders.append(f"{path.relative_to(CORE)}:{line} imports {target}")
    assert not offenders, offenders


def test_rooms_only_import_downwards() -> None:
    rank = {r: i for i, r in enumerate(ROOMS)}
    offenders = []
    for mod, targets in _graph().items():
        here = _room(mod)
        if here == "__init__":
            continue
        for t in targets:
            there = _room(t)
            if there == "__init__" or there == here:
                continue
            if rank[there] > rank[here]:
                offenders.append(f"{mod} ({here}) imports {t} ({there})")
    assert not offenders, "\n".join(sorted(offenders))


def test_every_room_is_known_and_documented() -> None:
    rooms = {p.name for p in CORE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert rooms == set(ROOMS) - {"app"}
    for r in rooms:
        doc = ast.get_docstring(ast.parse((CORE / r / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc) > 40, f"core/{r}/__init__.py must say what the room owns"
    top = {p.name for p in CORE.iterdir() if p.is_file() and p.suffix == ".py"}
    assert top == TOP_LEVEL, f"core/ top level holds only the package face and the composition root: {top}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
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
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


def test_no_import_cycles_in_the_desktop() -> None:
    assert _cycles(_graph(DESKTOP)) == []


def test_the_desktop_never_imports_the_console_front_end() -> None:
    """The desktop is a front end beside the CLI, not on top of it."""
    offenders = [f"{path.relative_to(DESKTOP)}:{line} imports {target}"
                 for mod, path in _modules(DESKTOP).items()
                 for line, target, names in _imports(path, mod)
                 if target == "memtray.core.cli" or target.startswith("memtray.core.cli.")
                 or (target == "memtray.core" and "cli" in names)]
    assert not offenders, offenders


def test_the_desktop_check_sees_a_cli_import(tmp_path: Path) -> None:
    """The check reads lazy and type-only imports too: it fails on the forms it must catch."""
    src = tmp_path / "desktop"
    src.mkdir()
    (src / "a.py").write_text("def f():\n    from memtray.core.cli import warm\n", encoding="utf-8")
    (src / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from memtray.core import cli\n", encoding="utf-8")
    (src / "c.py").write_text("from . import d\n", encoding="utf-8")
    (src / "d.py").write_text("def g():\n    from .c import x\n", encoding="utf-8")
    found = {m: [(t, n) for _, t, n in _imports(p, m)] for m, p in _modules(src).items()}
    assert found["memtray.desktop.a"] == [("memtray.core.cli", ["warm"])]
    assert ("memtray.core", ["cli"]) in found["memtray.desktop.b"]
    assert _cycles(_graph(src)) == [["memtray.desktop.c", "memtray.desktop.d"]]


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_private_name_is_imported_from_another_module() -> None:
    offenders = []
    for root in (CORE, DESKTOP):
        for mod, path in _modules(root).items():
            for line, target, names in _imports(path, mod):
                if not target.startswith("memtray."):
                    continue
                for n in names:
                    if n.startswith("_") and not n.startswith("__"):
                        offenders.append(f"{root.name}/{path.relative_to(root)}:{line} imports {target}.{n}")
    assert not offenders, offenders


def test_no_module_is_past_the_size_limit() -> None:
    big = {f"{root.name}/{p.relative_to(root)}": n for root in (CORE, DESKTOP) for p in root.rglob("*.py")
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not big, f"split these (one concept per module): {big}"


def test_core_imports_with_pyside6_absent() -> None:
    code = r"""
import sys, importlib, pkgutil
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'shiboken6'):
            raise ImportError('PySide6 blocked for this test')
        return None
sys.meta_path.insert(0, Block())
import memtray.core
for m in pkgutil.walk_packages(memtray.core.__path__, 'memtray.core.'):
    if m.name.endswith('__main__'):
        continue
    importlib.import_module(m.name)
assert 'PySide6' not in sys.modules
assert 'litellm' not in sys.modules, 'litellm must not be imported by importing core'
print('ok')
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"

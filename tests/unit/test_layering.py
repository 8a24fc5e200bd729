"""memtray.core is a library: no Qt anywhere under core/, and it imports without PySide6."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core"
QT = ("PySide6", "PyQt5", "PyQt6", "PySide2", "shiboken6", "qtpy", "memtray.desktop")


def test_no_module_under_core_imports_qt() -> None:
    offenders = []
    for path in CORE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for n in names:
                if n.split(".")[0] in QT or n.startswith("memtray.desktop"):
                    if path.name == "cli.py" and n.startswith("memtray.desktop"):
                        continue  # the CLI launches the desktop lazily, never at import
                    offenders.append(f"{path.name}:{node.lineno} imports {n}")
    assert not offenders, offenders


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
for m in pkgutil.iter_modules(memtray.core.__path__):
    importlib.import_module('memtray.core.' + m.name)
assert 'PySide6' not in sys.modules
assert 'litellm' not in sys.modules, 'litellm must not be imported by importing core'
print('ok')
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"

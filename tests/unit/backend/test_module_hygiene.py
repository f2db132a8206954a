"""Structure rules of issue 14, checked over the source of backend/ and app/ (no module is imported).

- No module reaches another refscope module's ``_private`` name: neither ``from X import _name`` nor
  ``mod._name`` on a name an import bound to a refscope module (dunder names are fine; a module's own names
  are its own; the standard library's ``os._exit`` and the like are not refscope's).
- No module over ``MAX_LINES`` lines without a reason written at its top: a docstring paragraph starting
  ``Over 500 lines, on purpose:``.
- No code probes the Snapshot protocol with ``getattr(snap...)``/``hasattr(snap...)``: what a snapshot has
  is written down in backend/stores/base.py (a caller tests ``snap.format`` and uses the attribute).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MAX_LINES = 520
LONG_MARKER = "Over 500 lines, on purpose:"
PROBE = re.compile(r"\b(?:getattr|hasattr)\(\s*[\w.]*snap", re.IGNORECASE)


def modules() -> list[Path]:
    return sorted(p for top in ("backend", "app") for p in (ROOT / top).rglob("*.py"))


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[str] = []
    imported: set[str] = set()  # names an import bound to something of refscope's
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if not (node.level or (node.module or "").startswith("refscope")):
                continue
            for alias in node.names:
                if private(alias.name):
                    found.append(
                        f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import {alias.name}"
                    )
                imported.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("refscope"):
                    imported.add(alias.asname or alias.name.partition(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in imported:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_private_name_crosses_modules() -> None:
    found = [line for path in modules() for line in private_imports(path)]
    assert found == []


def test_long_modules_say_why() -> None:
    long = []
    for path in modules():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if not any(par.strip().startswith(LONG_MARKER) for par in doc.split("\n\n")):
            long.append(f"{path.relative_to(ROOT)}: {text.count(chr(10))} lines")
    assert long == []


def test_no_snapshot_probing() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in modules()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PROBE.search(line)
    ]
    assert found == []

"""Every error type refscope raises is defined in ``backend/errors.py``: one vocabulary, as git's
``reftable-error.h``, so that a reader finds every failure in one file and the CLI's one-line rule has one
place to look. A class elsewhere that derives from an exception is a new error type in the wrong home."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BUILTIN_ERRORS = {
    n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
}


def test_every_error_type_lives_in_errors_py():
    home = ast.parse((ROOT / "backend" / "errors.py").read_text())
    ours = {node.name for node in home.body if isinstance(node, ast.ClassDef)}
    exceptions = ours | BUILTIN_ERRORS
    stray = []
    for top in ("backend", "app"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path == ROOT / "backend" / "errors.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                    if bases & exceptions:
                        stray.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert stray == []

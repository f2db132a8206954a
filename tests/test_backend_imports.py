"""The backend never imports Textual or Rich (the CLI's start-up time and the house rule depend on it)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import refscope.backend


def test_backend_modules_import_neither_textual_nor_rich() -> None:
    names = sorted(
        m.name for m in pkgutil.walk_packages(refscope.backend.__path__, prefix="refscope.backend.")
    )
    assert "refscope.backend.stores.files" in names and "refscope.backend.repo" in names
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_list_command_imports_stay_small() -> None:
    """``refscope list`` pulls in no Textual, Rich, argparse, json or dataclasses on its plain path."""
    code = (
        "import sys\n"
        "from refscope.app import cmd_list\n"
        "from refscope.backend import repo, store\n"
        "from refscope.backend.stores import files\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'argparse', 'dataclasses'))\n"
        "print(','.join(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""

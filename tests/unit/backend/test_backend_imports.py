"""The backend never imports Textual or Rich (the CLI's start-up time and the house rule depend on it)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import refscope.backend


def _printed(code: str) -> str:
    """What ``code`` prints in a fresh interpreter (its imports start from nothing)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


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
    assert _printed(code) == ""


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
    assert _printed(code) == ""


def test_engines_bring_what_their_commit_runs() -> None:
    """``Transaction.commit`` imports the engine before the meter starts, so the commit's figures are the
    commit's own: nothing may be imported inside the window. The reftable engine's table writer comes
    with it; the files engine (packed-refs splice) loads no reftable writer at all."""
    code = (
        "import sys\n"
        "from refscope.backend import txn\n"
        "from refscope.backend.engines import files\n"
        "print('refscope.backend.formats.reftable.writer' in sys.modules)\n"
        "from refscope.backend.engines import reftable\n"
        "print('refscope.backend.formats.reftable.writer' in sys.modules)\n"
    )
    assert _printed(code).split() == ["False", "True"]

"""Every package of the source tree is one that an install ships: pyproject lists packages by hand (the
``refscope.app``/``refscope.backend`` roots are mapped onto ``app/`` and ``backend/``), and a package left
out works in the development venv (whose paths are symlinks to the tree) but is missing from a wheel."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_every_package_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    roots = {path: name for name, path in config["package-dir"].items()}
    found = set()
    for top, name in roots.items():
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    assert found - listed == set()
    assert listed - found == set()

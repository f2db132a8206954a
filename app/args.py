"""The argument shape several headless commands share: ``[-C PATH] [--json]``.

Hand-parsed, not argparse: argparse (with gettext and re) costs milliseconds on a CLI measured from exec
to exit against git.
"""

from __future__ import annotations

import sys


def parse_path_json(argv: list[str], usage: str) -> tuple[str | None, bool] | None:
    """(path, as_json), or None on a usage error; ``-h``/``--help`` prints ``usage`` and exits 0."""
    path: str | None = None
    as_json = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--json":
            as_json = True
        elif arg == "-C":
            if i + 1 >= len(argv):
                return None
            path = argv[i + 1]
            i += 1
        elif arg.startswith("-C") and len(arg) > 2:
            path = arg[2:]
        elif arg in ("-h", "--help"):
            sys.stdout.write(usage + "\n")
            sys.exit(0)
        else:
            return None
        i += 1
    return path, as_json

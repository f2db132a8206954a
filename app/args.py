"""The argument shape several headless commands share: ``[-C PATH] [--json]``.

Hand-parsed, not argparse: argparse (with gettext and re) costs milliseconds on a CLI measured from exec
to exit against git.
"""

from __future__ import annotations


def change_dir(base: str | None, arg: str) -> str | None:
    """Where ``-C arg`` leads from ``base`` (None: the cwd), as git's: each ``-C`` is relative to the
    one before (git changes directory at each, in order, so a symlink is left physically: the base is
    resolved), and ``-C ''`` changes nothing. A step that is not a directory fails on the spot, naming
    that step."""
    if not arg:
        return base
    import os

    path = arg if base is None else os.path.join(os.path.realpath(base), arg)
    if not os.path.isdir(path):
        from refscope.backend.errors import NotARepository

        try:
            os.stat(path)
            reason = "Not a directory"
        except OSError as err:
            reason = err.strerror or "No such file or directory"
        raise NotARepository(arg, f"cannot change to '{arg}': {reason}")
    return path


def fold_dirs(args: list[str]) -> str | None:
    """The place several ``-C`` (in order) lead to; None when none changes anything."""
    path = None
    for arg in args:
        path = change_dir(path, arg)
    return path


def parse_path_json(argv: list[str]) -> tuple[str | None, bool] | None:
    """(path, as_json), or None on a usage error (``-h`` never gets here: ``cli`` answers it from
    ``help.py``)."""
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
            path = change_dir(path, argv[i + 1])
            i += 1
        elif arg.startswith("-C") and len(arg) > 2:
            path = change_dir(path, arg[2:])
        else:
            return None
        i += 1
    return path, as_json

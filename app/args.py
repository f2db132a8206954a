"""The one argument parser of the headless commands, and git's ``-C`` (the only place it is read).

Every command's options are a set of flags, options with a value (``--engine X`` or ``--engine=X``),
``-C PATH`` (``-CPATH``; each relative to the one before, as git's) and, for some, operands (``--`` ends
the options there; ``-`` is an operand). Anything else is a usage error, which the command answers with
its usage line and exit 2. ``-h``/``--help`` never get here: ``cli`` answers them from ``help.py``.

Hand-parsed, not argparse: argparse (with gettext and re) costs milliseconds on a CLI measured from exec
to exit against git.
"""

from __future__ import annotations


class Options:
    """What ``parse`` found: ``path`` (where the ``-C`` options lead; None: the cwd), ``flags`` (the set of
    flags given), ``values`` (option -> its last value), ``operands`` (in order). A plain class: a
    namedtuple is built at import, on every command's start-up."""

    __slots__ = ("path", "flags", "values", "operands", "lists")

    def __init__(
        self,
        path: str | None,
        flags: set[str],
        values: dict[str, str],
        operands: list[str],
        lists: dict[str, list[str]] | None = None,
    ) -> None:
        self.path = path
        self.flags = flags
        self.values = values
        self.operands = operands
        self.lists = lists or {}  # repeatable options: every value, in order


def dir_arg(argv: list[str], i: int) -> tuple[str | None, int]:
    """``argv[i]`` is ``-C PATH`` or ``-CPATH``: (PATH, the index after it); PATH None when ``-C`` is last."""
    arg = argv[i]
    if arg != "-C":
        return arg[2:], i + 1
    if i + 1 >= len(argv):
        return None, i + 1
    return argv[i + 1], i + 2


def parse(
    argv: list[str],
    flags: tuple[str, ...] = ("--json",),
    values: tuple[str, ...] = (),
    operands: bool = False,
    cd: bool = True,
    double_dash: bool = True,
    repeat: tuple[str, ...] = (),
    optional: dict[str, str] | None = None,
) -> Options | None:
    """The options of one command line, or None on a usage error. ``-C`` steps are taken as they come
    (``change_dir``: a step that leads nowhere fails on the spot, naming it); ``cd=False``: no ``-C``.
    Without ``operands`` an argument that is not an option is a usage error; so is ``--`` without them
    or with ``double_dash=False``. ``repeat``: options with a value that may come again (all kept, in
    ``lists``); ``optional``: repeatable options whose value may be left out, git's "last argument
    default" (``--merged`` alone, last on the line, is ``--merged=HEAD``; followed by an argument, it
    takes that argument), option -> its default."""
    optional = optional or {}
    path: str | None = None
    given: set[str] = set()
    vals: dict[str, str] = {}
    lists: dict[str, list[str]] = {}
    rest: list[str] = []
    i = 0
    only = False
    n = len(argv)
    while i < n:
        arg = argv[i]
        if only or (operands and (not arg.startswith("-") or arg == "-")):
            rest.append(arg)
        elif operands and double_dash and arg == "--":
            only = True
        elif arg in flags:
            given.add(arg)
        elif cd and arg.startswith("-C"):
            step, i = dir_arg(argv, i)
            if step is None:
                return None
            path = change_dir(path, step)
            continue
        elif arg in values or arg in repeat:
            if i + 1 >= n:
                return None
            i += 1
            if arg in repeat:
                lists.setdefault(arg, []).append(argv[i])
            else:
                vals[arg] = argv[i]
        elif arg in optional:
            if i + 1 < n:
                i += 1
                lists.setdefault(arg, []).append(argv[i])
            else:
                lists.setdefault(arg, []).append(optional[arg])
        elif "=" in arg and arg.split("=", 1)[0] in (*values, *repeat, *optional):
            key, value = arg.split("=", 1)
            if key in values:
                vals[key] = value
            else:
                lists.setdefault(key, []).append(value)
        else:
            return None
        i += 1
    return Options(path, given, vals, rest, lists)


def parse_or_usage(argv: list[str], usage: str, **spec) -> Options | None:
    """``parse(argv, **spec)``; on a usage error the command's usage line goes to stderr and None comes
    back (the command then exits 2)."""
    got = parse(argv, **spec)
    if got is None:
        import sys

        sys.stderr.write(usage + "\n")
    return got


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
    """The place several ``-C`` (in order) lead to; None when none changes anything (for the commands
    whose options argparse reads: the TUI's and bench's)."""
    path = None
    for arg in args:
        path = change_dir(path, arg)
    return path

"""Entry point: ``refscope [COMMAND] ...``. Dispatches to one module per command, imported lazily.

Headless commands import only what they use (no Textual, no argparse-heavy setup on the hot path):
the whole-process targets in DESIGN.md are measured from exec to exit.
"""

from __future__ import annotations

import sys

# command -> module under refscope.app that defines ``run(argv: list[str]) -> int``
COMMANDS = {
    "list": "cmd_list",
    "stack": "cmd_stack",
    "dump": "cmd_dump",
    "verify": "cmd_verify",
    "delete": "cmd_delete",
    "watch": "cmd_watch",
    "bench": "cmd_bench",
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    from refscope.backend.errors import RefscopeError

    try:
        args = _leading_dirs(args)
    except RefscopeError as err:
        print(err.cli_line(), file=sys.stderr)
        return 1
    if args and args[0] in COMMANDS:
        module_name, rest = COMMANDS[args[0]], args[1:]
    else:
        module_name, rest = "cmd_tui", args
    from importlib import import_module

    try:
        module = import_module(f"refscope.app.{module_name}")
        return module.run(rest)
    except RefscopeError as err:
        sys.stdout.flush()
        print(err.cli_line(), file=sys.stderr)
        return 1
    except BrokenPipeError:
        # `refscope list | head`: quiet exit like git's.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


def _leading_dirs(args: list[str]) -> list[str]:
    """``refscope -C A -C B list``: each ``-C`` before the command changes directory, in order, as
    git's do (``-C ''`` changes nothing); returns the arguments from the command on. A command's own
    ``-C`` options then count from there."""
    i = 0
    while i < len(args) and args[i].startswith("-C"):
        if args[i] == "-C":
            if i + 1 >= len(args):
                break  # a usage error: left to the command line's parser
            arg, i = args[i + 1], i + 2
        else:
            arg, i = args[i][2:], i + 1
        if arg:
            import os

            from .args import change_dir

            os.chdir(change_dir(None, arg))
    return args[i:]


def run() -> None:
    """The launcher's entry: ``main()``, then exit. A headless command leaves without the interpreter's
    teardown (freeing every module and object: ~5-8 ms of a ~60 ms ``refscope delete``, for memory the
    kernel takes back anyway): the standard streams are flushed and the exit handlers run (the meter's
    keeper hand-off), then ``os._exit``. Not after the TUI, nor while another thread runs."""
    code = main()
    if sys.argv[1:2] and sys.argv[1] in COMMANDS:
        from refscope.backend.forked import single_threaded

        if single_threaded():
            _exit_now(code)
    sys.exit(code)


def _exit_now(code: int) -> None:
    import atexit
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:  # `refscope list | head`: the reader left; quiet, as main() is on a broken pipe
            continue
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    run()

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
    "update": "cmd_update",
    "watch": "cmd_watch",
    "bench": "cmd_bench",
}


_headless = False  # main() ran a headless command (run() may then skip the interpreter's teardown)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    from refscope.backend.errors import RefscopeError

    try:
        args = _global_options(args)
    except RefscopeError as err:
        print(err.cli_line(), file=sys.stderr)
        return 1
    if isinstance(args, int):
        return args
    global _headless
    if args and args[0] in COMMANDS:
        if _asks_help(args[1:]):
            return _help(args[0])
        module_name, rest = COMMANDS[args[0]], args[1:]
        _headless = True
    elif args and not args[0].startswith("-"):
        return _unknown_command(args[0])
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
    except (OSError, MemoryError) as err:
        if module_name == "cmd_tui":
            raise  # the TUI's crash path is its own
        # The last resort: an OS error no reader typed still ends in the one line, never a traceback.
        sys.stdout.flush()
        print(_last_resort_line(err), file=sys.stderr)
        return 1


def _last_resort_line(err: OSError | MemoryError) -> str:
    """``refscope: <file>: <what>`` for an untyped OSError (the file it names, else the error alone)."""
    from refscope.backend.errors import from_untyped

    return from_untyped(err).cli_line()


def _global_options(args: list[str]) -> list[str] | int:
    """git's options before the command: each ``-C PATH`` changes directory, relative to the one before
    (``-C ''`` changes nothing); ``--version``, ``--help`` and ``help [COMMAND]`` answer at once (an int:
    the exit status). What follows is the command and its arguments, or the TUI's options."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-C"):
            from .args import dir_arg

            path, i = dir_arg(args, i)
            if path is None:
                sys.stderr.write("refscope: -C needs a PATH (see 'refscope --help')\n")
                return 2
            if path:
                _chdir(path)
            continue
        if arg == "--version":
            from .help import version

            sys.stdout.write(f"refscope version {version()}\n")
            return 0
        elif arg in ("-h", "--help"):
            return _help(None)
        elif arg == "help":
            topic = args[i + 1] if i + 1 < len(args) else None
            if topic is not None and topic not in COMMANDS:
                return _unknown_command(topic)
            return _help(topic)
        else:
            break
        i += 1
    return args[i:]


def _chdir(path: str) -> None:
    """One ``-C`` before the command, as git's: a step that leads nowhere is named."""
    import os

    from .args import change_dir

    target = change_dir(None, path)
    try:
        os.chdir(target)
    except OSError as err:
        from refscope.backend.errors import NotARepository

        raise NotARepository(path, f"cannot change to '{path}': {err.strerror}") from None


def _asks_help(rest: list[str]) -> bool:
    """``-h`` or ``--help`` among a command's options (before any ``--``)."""
    for arg in rest:
        if arg == "--":
            return False
        if arg in ("-h", "--help"):
            return True
    return False


def _help(command: str | None) -> int:
    from .help import COMMANDS as TEXTS
    from .help import SUMMARY

    sys.stdout.write(SUMMARY if command is None else TEXTS[command])
    return 0


def _unknown_command(name: str) -> int:
    """git's answer to a mistyped command, with its guess."""
    from difflib import get_close_matches

    from refscope.backend.display import printable

    line = f"refscope: '{printable(name)}' is not a refscope command. See 'refscope --help'."
    guesses = get_close_matches(name, list(COMMANDS), n=1, cutoff=0.6)
    if guesses:
        line += f"\n\nThe most similar command is\n\t{guesses[0]}"
    sys.stderr.write(line + "\n")
    return 2


def run() -> None:
    """The launcher's entry: ``main()``, then exit. A headless command leaves without the interpreter's
    teardown (freeing every module and object: ~5-8 ms of a ~60 ms ``refscope delete``, for memory the
    kernel takes back anyway): the standard streams are flushed and the exit handlers run (the meter's
    keeper hand-off), then ``os._exit``. Not after the TUI, nor while another thread runs."""
    code = main()
    if _headless:
        from refscope.backend.parallel import single_threaded

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

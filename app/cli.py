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
    if args and args[0] in COMMANDS:
        module_name, rest = COMMANDS[args[0]], args[1:]
    else:
        module_name, rest = "cmd_tui", args
    from importlib import import_module

    from refscope.backend.errors import RefscopeError

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
    from refscope.backend.display import printable

    if isinstance(err, MemoryError):
        return "refscope: out of memory"
    what = err.strerror or str(err) or type(err).__name__
    file = err.filename
    if file is None:
        return printable(f"refscope: {what}")
    if isinstance(file, bytes):
        file = file.decode("utf-8", "surrogateescape")
    return printable(f"refscope: {file}: {what}")


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

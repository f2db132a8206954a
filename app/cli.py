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


if __name__ == "__main__":
    sys.exit(main())

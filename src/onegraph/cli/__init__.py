"""The ``onegraph`` command line: each sub-command is a thin call into the packages.

Command modules register themselves on :data:`onegraph.cli.app.app` when imported; add a module to
``COMMAND_MODULES`` to add its commands.

Every error leaves through :func:`main`, the one exit: onegraph's own errors (bad data, bad model files,
unsupported objects) print as one line on stderr and exit with their code (1 unless they say otherwise);
anything else is a bug of onegraph and prints as one line too, ``error: internal error in <command> (...)``,
with exit code 70; ``--debug`` (or ``ONEGRAPH_DEBUG=1``) prints the traceback as well.
"""

from __future__ import annotations

import importlib
import os
import sys

from onegraph.cli.app import app, err, options
from onegraph.errors import OnegraphError

COMMAND_MODULES = [
    "onegraph.cli.core",
    "onegraph.cli.functions",
    "onegraph.cli.convert",
    "onegraph.cli.check",
    "onegraph.cli.meta",
    "onegraph.cli.stats",
    "onegraph.cli.compose",
    "onegraph.cli.fed",
]

for _module in COMMAND_MODULES:
    importlib.import_module(_module)

#: exit code of an internal error (``EX_SOFTWARE`` of sysexits.h)
INTERNAL_ERROR = 70


def main() -> None:
    """Entry point of the ``onegraph`` console script: runs the command, and is the one exit for its errors."""
    try:
        app()
    except OnegraphError as exc:
        _traceback()
        err.print(f"error: {_one_line(str(exc))}", markup=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except BrokenPipeError:  # `onegraph ... | head`: the reader left; nothing more to say
        sys.stderr.close()
        sys.exit(141)
    except Exception as exc:  # noqa: BLE001 - the one exit: a bug must still be one line, not a traceback
        _traceback()
        err.print(f"error: internal error in {command_name(sys.argv[1:])} ({type(exc).__name__}: "
                  f"{_one_line(str(exc))[:300]}); please report it with the file", markup=False, soft_wrap=True)
        sys.exit(INTERNAL_ERROR)


def _one_line(text: str) -> str:
    return " ".join(text.split()) if "\n" not in text.strip() else text.strip().splitlines()[0] + " (...)"


def _traceback() -> None:
    if options.debug or os.environ.get("ONEGRAPH_DEBUG", "") not in ("", "0"):
        import traceback

        traceback.print_exc()


def command_name(argv: list[str]) -> str:
    """The (sub)command ``argv`` runs, e.g. ``stats calibrate``; ``onegraph`` when there is none."""
    import typer.main

    command = typer.main.get_command(app)
    names = []
    for arg in argv:
        commands = getattr(command, "commands", None)
        if commands is None or arg.startswith("-"):
            if arg.startswith("-"):
                continue
            break
        if arg not in commands:
            break
        names.append(arg)
        command = commands[arg]
    return " ".join(names) or "onegraph"


__all__ = ["app", "main", "command_name", "INTERNAL_ERROR"]

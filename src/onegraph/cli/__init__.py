"""The ``onegraph`` command line: each sub-command is a thin call into the packages.

Command modules register themselves on :data:`onegraph.cli.base.app` when imported; add a command to
:data:`COMMANDS` with its module. A command run from the shell imports its own module only (typer turns every
registered command into a click command on each run, which costs ~3 ms per command); ``onegraph --help`` and
``onegraph.cli.app`` (the typer application, for ``typer.testing.CliRunner``) import them all.

Every error leaves through :func:`main`, the one exit: onegraph's own errors (bad data, bad model files,
unsupported objects) print as one line on stderr and exit with their code (1 unless they say otherwise);
anything else is a bug of onegraph and prints as one line too, ``error: internal error in <command> (...)``,
with exit code 70; ``--debug`` (or ``ONEGRAPH_DEBUG=1``) prints the traceback as well.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from onegraph.cli.base import err, options
from onegraph.errors import OnegraphError

#: command (or command group) -> the module that registers it
COMMANDS = {
    "quickstart": "onegraph.cli.core", "build": "onegraph.cli.core", "score": "onegraph.cli.core",
    "show": "onegraph.cli.core", "functions": "onegraph.cli.functions", "fuse": "onegraph.cli.functions",
    "convert": "onegraph.cli.convert", "compare": "onegraph.cli.convert", "check": "onegraph.cli.check",
    "meta": "onegraph.cli.meta", "stats": "onegraph.cli.stats", "compose": "onegraph.cli.compose",
    "fed": "onegraph.cli.fed", "serve": "onegraph.cli.serve",
}
COMMAND_MODULES = list(dict.fromkeys(COMMANDS.values()))


def load_commands(argv: list[str] | None = None) -> Any:
    """The typer application with the commands ``argv`` runs registered (all of them when it names no known
    command: help, or a typo click answers by listing them)."""
    from onegraph.cli.base import app

    words = [a for a in (argv or []) if not a.startswith("-")]
    wanted = [COMMANDS[words[0]]] if words and words[0] in COMMANDS else COMMAND_MODULES
    for module in wanted:
        importlib.import_module(module)
    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole command line, as tests and embedding programs use it
        return load_commands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

#: exit code of an internal error (``EX_SOFTWARE`` of sysexits.h)
INTERNAL_ERROR = 70


def main() -> None:
    """Entry point of the ``onegraph`` console script: runs the command, and is the one exit for its errors."""
    try:
        sys.exit(_run(sys.argv[1:]))
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


def _run(argv: list[str]) -> int:
    """Run the command ``argv`` names; its exit code. A usage error (unknown option or command, a missing
    argument, a bad value) is a :class:`~onegraph.errors.UsageError`: one line, exit 2, as click's own code."""
    import typer.main
    # typer's vendored click: the exceptions its parser raises (typer re-exports only Exit and Abort)
    from typer._click.exceptions import NoArgsIsHelpError, UsageError as ClickUsageError

    from onegraph.errors import UsageError

    command = typer.main.get_command(load_commands(argv))
    try:
        code = command.main(args=argv, prog_name="onegraph", standalone_mode=False)
    except NoArgsIsHelpError as exc:  # `onegraph` or `onegraph stats` alone: the help is the answer
        err.print(exc.format_message(), markup=False, highlight=False)
        return 2
    except ClickUsageError as exc:
        path = exc.ctx.command_path if exc.ctx is not None else "onegraph"
        raise UsageError(f"{_one_line(exc.format_message())} (see `{path} --help`)") from None
    return code if isinstance(code, int) else 0


def _one_line(text: str) -> str:
    return " ".join(text.split()) if "\n" not in text.strip() else text.strip().splitlines()[0] + " (...)"


def _traceback() -> None:
    if options.debug or os.environ.get("ONEGRAPH_DEBUG", "") not in ("", "0"):
        import traceback

        traceback.print_exc()


def command_name(argv: list[str]) -> str:
    """The (sub)command ``argv`` runs, e.g. ``stats calibrate``; ``onegraph`` when there is none."""
    import typer.main

    command = typer.main.get_command(load_commands(argv))
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


__all__ = ["app", "main", "command_name", "load_commands", "COMMANDS", "INTERNAL_ERROR"]

"""The typer application, the consoles every command module shares, and the global options."""

from __future__ import annotations

import dataclasses

import typer
from rich.console import Console

__all__ = ["Options"]

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Turn a DataFrame pipeline into one verified ONNX graph, and run it.")
#: results (stdout)
out = Console(highlight=False, soft_wrap=True)
#: notes, progress and errors (stderr)
err = Console(stderr=True, highlight=False, soft_wrap=True)


@dataclasses.dataclass
class Options:
    """Options of the whole command line (before the command name)."""

    debug: bool = False


options = Options()


@app.callback()
def _global(debug: bool = typer.Option(False, "--debug", help="Print the traceback of an error too.")) -> None:
    options.debug = debug

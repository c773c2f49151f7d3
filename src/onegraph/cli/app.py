"""The typer application and the consoles every command module shares."""

from __future__ import annotations

import typer
from rich.console import Console

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Turn a DataFrame pipeline into one verified ONNX graph, and run it.")
#: results (stdout)
out = Console(highlight=False, soft_wrap=True)
#: notes, progress and errors (stderr)
err = Console(stderr=True, highlight=False, soft_wrap=True)

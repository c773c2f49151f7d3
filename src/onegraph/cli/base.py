"""The typer application, the consoles every command module shares, and the global options."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

__all__ = ["KeepNaWords", "Options", "Trusted", "reads_models", "writes"]

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Turn a DataFrame pipeline into one verified ONNX graph, and run it.")
#: results (stdout); emoji=False: names such as ``my:cat:x`` or ``scope:up:`` are printed as written
out = Console(highlight=False, soft_wrap=True, emoji=False)
#: notes, progress and errors (stderr)
err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


@dataclasses.dataclass
class Options:
    """Options of the whole command line (before the command name)."""

    debug: bool = False


options = Options()


@app.callback()
def _global(debug: bool = typer.Option(False, "--debug", help="Print the traceback of an error too.")) -> None:
    options.debug = debug


def writes(kind: str) -> Callable[[Callable], Callable]:
    """Decorate a command whose ``output`` parameter names the file it writes (``kind``: ``"model"``,
    ``"delta"`` or ``"table"``): before the command runs, :func:`onegraph.io.check_output_path` refuses an
    output that is a folder, in a missing or unwritable folder, named with another kind's suffix (a model to
    ``.csv``, a delta to ``.onnx``) or *one of the command's inputs* — every other ``Path`` argument, so no
    command can replace what it reads. Every command with an ``output`` parameter is decorated
    (``tests/test_io_leftovers.py`` checks it over all of them)."""
    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command)

        @functools.wraps(command)  # typer reads the parameters through __wrapped__
        def checked(*args: Any, **kwargs: Any) -> Any:
            given = signature.bind(*args, **kwargs).arguments
            output = given.get("output")
            if output is not None:
                from onegraph.io import check_output_path

                inputs = [v for name, value in given.items() if name != "output"
                          for v in (value if isinstance(value, (list, tuple)) else [value]) if isinstance(v, Path)]
                check_output_path(output, model=kind == "model", delta=kind == "delta", inputs=inputs)
            from onegraph.kept import keeping_inputs

            with keeping_inputs():  # and files known once a model is read (its external data): atomic_path
                return command(*args, **kwargs)

        checked.writes = kind
        return checked

    return decorate


#: the ``--trusted`` option: what :func:`reads_models` adds, and what a command that passes the flag on to other
#: processes (serve's workers, Spark's executors) declares itself
Trusted = Annotated[bool, typer.Option("--trusted", help="Skip the isolated pre-check of the model files "
                                       "(only for files you made or trust).")]
KeepNaWords = Annotated[bool, typer.Option(
    "--keep-na-words", help="Read the cells NA, N/A, null, nan, None... of a CSV as text (a category or class "
    "'NA'), not as missing values; only empty cells are missing.")]


def reads_models(command: Callable) -> Callable:
    """Decorate a command that reads model files: it takes ``--trusted`` (added when the command does not
    declare it) and runs inside :func:`onegraph.check.loader.trusting` when it is given, so every file the
    command reads, through whichever function, skips the isolated check. Every command that reads a model is
    decorated (``tests/test_cli_trusted.py`` checks it over all of them)."""
    signature = inspect.signature(command)
    declared = "trusted" in signature.parameters

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        trusted = kwargs.get("trusted", False) if declared else kwargs.pop("trusted", False)
        if not trusted:
            return command(*args, **kwargs)
        from onegraph.check.loader import trusting

        with trusting():
            return command(*args, **kwargs)

    if not declared:  # typer reads the parameters from __signature__ and the types from __annotations__
        extra = inspect.Parameter("trusted", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Trusted)
        run.__signature__ = signature.replace(parameters=[*signature.parameters.values(), extra])
        run.__annotations__ = {**command.__annotations__, "trusted": Trusted}
    run.reads_models = True
    return run

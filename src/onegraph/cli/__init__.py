"""The ``onegraph`` command line: each sub-command is a thin call into the packages.

Command modules register themselves on :data:`onegraph.cli.app.app` when imported; add a module to
``COMMAND_MODULES`` to add its commands. Errors from onegraph (bad data, bad model files, unsupported
objects) print as one line on stderr and exit non-zero, without a traceback.
"""

from __future__ import annotations

import importlib
import sys

from onegraph.cli.app import app, err
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
    "onegraph.cli.serve",
]

for _module in COMMAND_MODULES:
    importlib.import_module(_module)


def main() -> None:
    """Entry point of the ``onegraph`` console script."""
    try:
        app()
    except OnegraphError as exc:
        err.print(f"error: {exc}", markup=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


__all__ = ["app", "main"]

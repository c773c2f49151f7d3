"""``onegraph ARGS`` run in this process through the command line's own ``main()`` (the imports are paid once:
a subprocess would pay ~2 s each). Returns a ``CompletedProcess`` as ``subprocess.run`` would."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path


def run(*args: object, cwd: Path | None = None, **_: object) -> subprocess.CompletedProcess:
    from onegraph.cli import main

    argv = ["onegraph", *map(str, args)]
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    code = 0
    try:
        sys.argv = argv
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
    return subprocess.CompletedProcess(argv[1:], code, out.getvalue(), err.getvalue())

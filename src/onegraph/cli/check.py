"""``onegraph check``: check an untrusted model in an isolated, resource-limited process."""


import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from onegraph.cli.base import app, out
from onegraph.errors import OnegraphError

__all__ = ["check"]


@app.command()
def check(
    model: Annotated[Path, typer.Argument(help="The model to check (.onnx); external data is looked up next to it.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    limits: Annotated[Optional[str], typer.Option(
        "--limits", help="Limits of the checking process, e.g. memory=2G,cpu=30,wall=60,fsize=0 "
                         "(defaults: memory=4G, cpu=60, wall=120 seconds, fsize=0).")] = None,
    stages: Annotated[str, typer.Option(help="Stages to run, in order: parse, static, checker, runtime.")
                      ] = "parse,static,checker,runtime",
) -> None:
    """Parse, check (onnx.checker full_check and onegraph's own checks) and open MODEL in onnxruntime, in a
    separate process with memory, CPU, wall-time and file-size limits. A crash or an exhausted limit becomes
    a finding. Exit code: 0 clean, 1 findings, 2 could not check."""
    from onegraph.check.limits import Limits
    from onegraph.check.run import check as run_check

    try:
        report = run_check(model, limits=Limits.parse(limits),
                           stages=[s.strip() for s in stages.split(",") if s.strip()])
    except OnegraphError as exc:  # bad options or no checking process: the model could not be checked
        exc.exit_code = 2
        raise
    if as_json:
        out.print_json(json.dumps(report.to_dict()))
    else:
        out.print(str(report), markup=False)
        out.print(f"checked in {report.seconds:.2f} s; exit code {report.exit_code}", markup=False)
    raise typer.Exit(report.exit_code)

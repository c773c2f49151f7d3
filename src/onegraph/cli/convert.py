"""``onegraph convert`` (opset, float16, bfloat16) and ``onegraph compare`` (runtime against reference)."""


import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from onegraph.cli.base import app, err, out, reads_models, writes
from onegraph.errors import ConversionError, OnegraphError

__all__ = ["convert", "compare"]


def _print(report, as_json: bool) -> None:
    if as_json:
        out.print_json(json.dumps(report.to_dict(), default=str))
    else:
        out.print(str(report), markup=False)


@app.command()
@reads_models
@writes("model")
def convert(
    model: Annotated[Path, typer.Argument(help="The ONNX model to convert (never modified).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the converted model.")],
    opset: Annotated[Optional[int], typer.Option("--opset", help="Target default-domain opset (up or down).")
                     ] = None,
    fp16: Annotated[bool, typer.Option("--fp16", help="Convert float32 to float16 where measured values allow.")
                    ] = False,
    bf16: Annotated[bool, typer.Option("--bf16", help="Convert float32 to bfloat16 likewise.")] = False,
    data: Annotated[Optional[Path], typer.Option("--data", help="Inputs to verify on (and calibrate float16): "
                                                 ".csv, .parquet, or .npz named by input.")] = None,
    keep_io_types: Annotated[bool, typer.Option("--keep-io-types", help="Keep float32 inputs and outputs.")
                             ] = False,
    ml_opset: Annotated[Optional[int], typer.Option("--ml-opset", help="Also move ai.onnx.ml nodes to this opset.")
                        ] = None,
    accept_diff: Annotated[bool, typer.Option("--accept-diff", help="Write the model even if outputs differ.")
                           ] = False,
    rows: Annotated[int, typer.Option(min=1, help="Rows to generate, or the first rows taken from --data "
                                      "(.csv, .parquet or .npz; default 64).")] = 64,
    rtol: Annotated[Optional[float], typer.Option(help="Relative tolerance of the outputs.")] = None,
    atol: Annotated[Optional[float], typer.Option(help="Absolute tolerance of the outputs.")] = None,
    max_error: Annotated[Optional[float], typer.Option(
        "--max-error", help="float16/bfloat16: largest error a node may make, relative to its output's scale.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Convert MODEL to another opset (--opset N) or to float16 / bfloat16 (--fp16 / --bf16), verify that
    the result computes the same values on the same inputs, print a per-operator report, and write OUT
    only when it does (or with --accept-diff)."""
    from onegraph.convert import convert_float16, convert_opset

    chosen = [name for name, on in (("--opset", opset is not None), ("--fp16", fp16), ("--bf16", bf16)) if on]
    if len(chosen) != 1:
        raise OnegraphError("give exactly one of --opset N, --fp16, --bf16" +
                            (f" (got {', '.join(chosen)})" if chosen else ""))
    try:
        if opset is not None:
            _, report = convert_opset(model, opset, data=data, rows=rows, accept_diff=accept_diff,
                                      ml_opset=ml_opset, output=output,
                                      **{k: v for k, v in (("rtol", rtol), ("atol", atol)) if v is not None})
        else:
            _, report = convert_float16(model, data=data, rows=rows, fmt="float16" if fp16 else "bfloat16",
                                        keep_io_types=keep_io_types, max_error=max_error, rtol=rtol, atol=atol,
                                        accept_diff=accept_diff, output=output)
    except ConversionError as exc:
        if exc.report is not None:
            _print(exc.report, as_json)
        raise
    _print(report, as_json)
    if (fp16 or bf16) and data is None:
        # the nodes kept in float32 are those whose values leave the format's range: on generated inputs
        # (standard-normal rows) nothing says real data stay in it (a LayerNormalization's sums, say)
        err.print("warning: the float16 / bfloat16 ranges were measured on generated inputs, not real rows: give "
                  "--data with representative rows before shipping the model", markup=False)
    if not as_json:
        err.print(f"wrote {output}")


@app.command()
@reads_models
def compare(
    model: Annotated[Path, typer.Argument(help="The ONNX model.")],
    data: Annotated[Optional[Path], typer.Option("--data", help="Inputs: .csv, .parquet, or .npz named by input.")
                    ] = None,
    against: Annotated[str, typer.Option("--against", help="reference (onnx ReferenceEvaluator), ort-basic, "
                                         "ort-all, or the path of another .onnx model.")] = "reference",
    rows: Annotated[int, typer.Option(min=1, help="Rows to generate, or the first rows taken from --data "
                                      "(.csv, .parquet or .npz; default 16).")] = 16,
    rtol: Annotated[float, typer.Option(help="Relative tolerance (of each tensor's magnitude).")] = 1e-4,
    atol: Annotated[float, typer.Option(help="Absolute tolerance.")] = 1e-5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Run MODEL in onnxruntime and in onnx's reference evaluator (or at two onnxruntime optimization
    levels) on the same inputs, compare every intermediate tensor, and name the first node where they
    diverge. Exits 1 when they do."""
    from onegraph.verify import compare_runtimes

    report = compare_runtimes(model, data, against=against, rows=rows, rtol=rtol, atol=atol)
    _print(report, as_json)
    if not report.ok:
        raise typer.Exit(1)

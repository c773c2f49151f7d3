"""``onegraph stats``: tensor statistics written into a model, shown, recovered, stripped.

``onegraph stats MODEL --data DATA -o OUT.onnx`` is the group's default action (the ``calibrate``
command): a first argument that is not a sub-command name is taken as MODEL.
"""


import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from onegraph.cli.base import app, err, out, reads_models, writes
from onegraph.errors import OnegraphError

__all__ = ["calibrate", "show", "recover", "strip"]


class _DefaultCommandGroup(TyperGroup):
    """A group whose first argument, when it names no sub-command, goes to the default one (``calibrate``)."""

    default_command = "calibrate"

    def parse_args(self, ctx, args):  # noqa: ANN001 - click's signature
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


#: tables are printed at least this wide (a pipe's 80 columns would fold every tensor name)
_TABLE_WIDTH = 120

def _print_table(table) -> None:  # noqa: ANN001 - a rich Table
    # rich caps a print's width at the console's: a wider console of our own, on the same stdout
    from rich.console import Console

    Console(width=max(out.width, _TABLE_WIDTH), highlight=False, emoji=False).print(table)


stats_app = typer.Typer(cls=_DefaultCommandGroup, no_args_is_help=True,
                        help="Tensor statistics carried by the model: `onegraph stats MODEL --data DATA -o OUT.onnx "
                             "[--report DIR]` calibrates and writes them; `show`, `recover`, `strip`.")
app.add_typer(stats_app, name="stats")


@stats_app.command("calibrate")
@reads_models
@writes("model")
def calibrate(
    model: Annotated[Path, typer.Argument(help="An ONNX model.")],
    data: Annotated[Path, typer.Option("--data", "-d", help="Calibration data: CSV / Parquet (models built by "
                                       "onegraph) or .npz with one array per model input, first axis = samples.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the annotated model (.onnx).")],
    report: Annotated[Optional[Path], typer.Option("--report", help="Folder for an HTML report with histograms.")
                      ] = None,
    quant_type: Annotated[str, typer.Option(help="uint8, int8, uint16, int16, uint4, int4, float8e4m3fn, "
                                            "float8e5m2, or none (statistics only).")] = "uint8",
    method: Annotated[str, typer.Option(help="Range: minmax, percentile, entropy or mse.")] = "minmax",
    symmetric: Annotated[bool, typer.Option(help="Symmetric ranges (zero point at the middle).")] = False,
    per_channel: Annotated[bool, typer.Option(help="One scale per channel (along --channel-axis).")] = False,
    reduce_range: Annotated[bool, typer.Option(help="7-bit ranges, as onnxruntime's reduce_range.")] = False,
    percentile: Annotated[float, typer.Option(help="Percentile for --method percentile.")] = 99.999,
    tensor: Annotated[Optional[list[str]], typer.Option(help="Observe only tensors matching this name / glob "
                                                       "(repeatable).")] = None,
    op_type: Annotated[Optional[list[str]], typer.Option(help="Observe only outputs of this op type (repeatable).")
                       ] = None,
    batch_size: Annotated[int, typer.Option(help="Samples per onnxruntime call.")] = 256,
    channel_axis: Annotated[int, typer.Option(help="Axis of per-channel statistics.")] = 1,
    top: Annotated[int, typer.Option(min=1, help="Rows of the terminal tables.")] = 10,
) -> None:
    """Run MODEL over DATA in onnxruntime, write every float tensor's statistics and quantization
    parameters into a copy of the model (-o), print the widest ranges, NaN/inf and outlier-heavy tensors."""
    from onegraph.io import save_model
    from onegraph.stats.calibrate import annotate_model
    from onegraph.stats.qparams import check_options
    from onegraph.stats.report import summary_tables, write_html

    if report is not None and report.exists() and not report.is_dir():
        raise OnegraphError(f"--report {report} is a file", hint="give a folder for the HTML report")
    check_options(None if quant_type == "none" else quant_type, method)
    annotated, calibration, qparams = annotate_model(
        model, data, quant_type=None if quant_type == "none" else quant_type, method=method, symmetric=symmetric,
        reduce_range=reduce_range, per_channel=per_channel, percentile=percentile, tensors=tensor, op_types=op_type,
        batch_size=batch_size, channel_axis=channel_axis, progress=True)
    save_model(annotated, output)
    stats = calibration.stats()
    for table in summary_tables(stats, top=top):
        _print_table(table)
    out.print(f"wrote {output}: statistics of {len(stats)} tensors over {calibration.samples:,} samples"
              + (f", {quant_type} {method} scale / zero point for {len(qparams)}" if qparams else ""))
    for name, why in calibration.skipped.items():
        err.print(f"note: tensor {name!r} not observed: {why}")
    empty = [name for name, st in stats.items() if st.count == 0]
    if empty and quant_type != "none":  # no range to quantize: no scale, which the count above shows
        err.print(f"warning: {len(empty)} of {len(stats)} tensor(s) hold no finite value on the data ("
                  f"{', '.join(map(repr, empty[:5]))}{', ...' if len(empty) > 5 else ''}): they get no scale / zero "
                  "point; calibrate on rows without NaN / inf", markup=False)
    if report is not None:
        index = write_html(stats, report, title=f"tensor statistics of {model.name}", qparams=qparams)
        out.print(f"report {index}")


@stats_app.command("show")
@reads_models
def show(
    model: Annotated[Path, typer.Argument(help="An ONNX model.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the onegraph.stats documents as JSON.")] = False,
) -> None:
    """Print the statistics and quantization parameters MODEL carries."""
    from onegraph.stats.annotate import read_qparams, read_stats, stats_to_dict
    from onegraph.stats.report import tensor_table

    stats = read_stats(model)
    qparams = read_qparams(model)
    if as_json:
        out.print_json(json.dumps({name: stats_to_dict(s) for name, s in stats.items()}))
        return
    if not stats and not qparams:
        out.print(f"{model} carries no tensor statistics (run `onegraph stats {model} --data DATA -o OUT.onnx`)")
        return
    _print_table(tensor_table(stats, qparams, title=f"tensor statistics in {model}"))
    out.print(f"{len(stats)} tensors with statistics, {len(qparams)} with scale / zero point")


@stats_app.command("recover")
@reads_models
@writes("model")
def recover(
    model: Annotated[Path, typer.Argument(help="A quantized model (QuantizeLinear/DequantizeLinear or QLinear*).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the annotated model (.onnx).")],
) -> None:
    """Read the float range of every quantized tensor back from its scale / zero point, into a copy of MODEL."""
    from onegraph.stats.annotate import read_stats
    from onegraph.stats.recover import recover as recover_model

    annotated = _rewritten(model, output, recover_model)
    out.print(f"wrote {output}: recovered ranges of {len(read_stats(annotated))} tensors")


@stats_app.command("strip")
@reads_models
@writes("model")
def strip(
    model: Annotated[Path, typer.Argument(help="An ONNX model.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the lean model (.onnx).")],
) -> None:
    """Remove every statistic, quantization annotation and the scale / zero-point initializers onegraph added."""
    from onegraph.check.loader import load_model
    from onegraph.io import save_model
    from onegraph.stats.annotate import stripped

    lean = stripped(model)
    if lean is None:  # the model as read: a pipeline's next step finds OUT either way
        save_model(load_model(model), output)
        out.print(f"{model} carries no statistics or quantization annotations: wrote it unchanged to {output}")
        return
    save_model(lean, output)
    out.print(f"wrote {output}: {model.stat().st_size / 1024:.1f} KiB -> {lean.ByteSize() / 1024:.1f} KiB")


def _rewritten(model: Path, output: Path, rewrite: Any) -> Any:
    """``rewrite(model)`` written to ``output`` (checked writable first, written atomically); MODEL is kept."""
    from onegraph.io import save_model

    result = rewrite(model)
    save_model(result, output)
    return result

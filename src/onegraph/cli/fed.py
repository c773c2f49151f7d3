"""``onegraph fed params|delta|apply|average``: federated parameter exchange (:mod:`onegraph.federated`)."""


import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from onegraph.cli.base import Trusted, app, out, reads_models, writes

__all__ = ["params", "delta", "apply", "average"]

fed_app = typer.Typer(no_args_is_help=True, help="Federated learning: list a model's trainable parameters, "
                      "write what local training changed as a delta, merge clients' deltas (FedAvg, median, "
                      "trimmed mean).")
app.add_typer(fed_app, name="fed")

_Select = Annotated[Optional[list[str]], typer.Option(
    "--select", help="Name pattern of the parameters to exchange (fnmatch, repeatable, e.g. 'coef*'); default: "
                     "the model's transfer_learning metadata, else every floating-point initializer.")]
_Base = Annotated[Path, typer.Argument(help="The model every delta was computed against (never changed).")]
_Deltas = Annotated[list[Path], typer.Argument(help="Delta files (onegraph fed delta).")]
_Out = Annotated[Path, typer.Option("-o", "--output", help="Where to write the merged model (atomically).")]
_Memory = Annotated[int, typer.Option("--memory-mb", min=1, help="Working memory per chunk, MiB (the deltas are streamed).")]


def _size(n_bytes: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n_bytes < 1024 or unit == "GiB":
            return f"{n_bytes:.0f} {unit}" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    return ""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


@fed_app.command("params")
@reads_models
@writes("model")
def params(
    model: Annotated[Path, typer.Argument(help="An ONNX model.")],
    select: _Select = None,
    output: Annotated[Optional[Path], typer.Option(
        "-o", "--output", help="Write a copy whose metadata declares the selected parameters trainable.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    trusted: Trusted = False,
) -> None:
    """List MODEL's parameters (initializers): dtype, shape, kind, whether they are exchanged and why; and the
    structural fingerprint deltas are checked against."""
    from rich.table import Table

    from onegraph.federated import load, mark_trainable
    from onegraph.federated.params import select as select_parameters

    loaded = load(model, trusted=trusted)
    listed = select_parameters(loaded, select)
    chosen = [p for p in listed if p.exchanged]
    if as_json:
        out.print_json(json.dumps({"model": str(model), "fingerprint": loaded.fingerprint, "hash": loaded.hash,
                                   "parameters": [{"name": p.name, "dtype": p.dtype, "shape": list(p.shape),
                                                   "kind": p.kind, "exchanged": p.exchanged, "why": p.why}
                                                  for p in listed]}))
    else:
        table = Table("parameter", "dtype", "shape", "kind", "exchanged", "why")
        for p in listed:
            table.add_row(p.name, p.dtype, str(list(p.shape)), p.kind, "yes" if p.exchanged else "no", p.why)
        out.print(table)
        values = sum(p.size for p in chosen)
        out.print(f"{len(chosen)} of {len(listed)} initializers exchanged ({values:,} values); "
                  f"fingerprint {loaded.fingerprint}", markup=False)
    if output is not None:
        mark_trainable(model, select or [p.name for p in chosen], path=output, trusted=trusted)
        out.print(f"wrote {output}: transfer_learning.trainable = {', '.join(p.name for p in chosen)}", markup=False)


@fed_app.command("delta")
@reads_models
@writes("delta")
def delta(
    local: Annotated[Path, typer.Argument(help="The locally trained model.")],
    base: Annotated[Path, typer.Argument(help="The model the client started from (never changed).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The delta file to write (.safetensors).")],
    samples: Annotated[Optional[int], typer.Option(
        "--samples", help="Training samples behind the update (FedAvg weight); default: LOCAL's "
                          "training_data.rows metadata.")] = None,
    round_: Annotated[Optional[int], typer.Option(
        "--round", help="Round number; default: one more than BASE's last federated round, else 1.")] = None,
    select: _Select = None,
    client: Annotated[Optional[str], typer.Option("--client", help="Client name to record.")] = None,
    trusted: Trusted = False,
) -> None:
    """Write LOCAL - BASE for the exchanged parameters as a delta file, with BASE's fingerprint and hash, the
    sample count and the round number in its header."""
    from onegraph.federated import make_delta

    header = make_delta(local, base, output, samples=samples, round=round_, select_patterns=select, client=client,
                        trusted=trusted)
    modes = [p.mode for p in header.parameters.values()]
    exact = f", {modes.count('exact')} exchanged exactly" if "exact" in modes else ""
    out.print(f"wrote {output} ({_size(output.stat().st_size)}): {_count(len(modes), 'parameter')}{exact}, round "
              f"{header.round}, {header.samples} samples, against {base} ({header.base_model[:19]}...)", markup=False)


@fed_app.command("apply")
@reads_models
@writes("model")
def apply(base: _Base, deltas: _Deltas, output: _Out, memory_mb: _Memory = 64, trusted: Trusted = False) -> None:
    """Write BASE plus the sum of the deltas (one delta gives the client's local model back)."""
    from onegraph.federated import apply_deltas

    proto = apply_deltas(base, deltas, path=output, memory=memory_mb << 20, trusted=trusted)
    _report(proto, output)


@fed_app.command("average")
@reads_models
@writes("model")
def average(
    base: _Base,
    deltas: _Deltas,
    output: _Out,
    method: Annotated[str, typer.Option("--method", help="fedavg (weighted by samples), median or trimmed-mean "
                                                         "(coordinate-wise).")] = "fedavg",
    trim: Annotated[Optional[float], typer.Option("--trim", help="trimmed-mean: fraction cut at each end "
                                                                  "(default 0.2).", show_default=False)] = None,
    memory_mb: _Memory = 64,
    trusted: Trusted = False,
) -> None:
    """Merge the clients' deltas into a new model, streaming over the files (memory does not grow with their
    number); the model records the round in its federated and lineage metadata."""
    from onegraph.federated import average as merge

    proto = merge(base, deltas, method=method, trim=trim, path=output, memory=memory_mb << 20, trusted=trusted)
    _report(proto, output)


def _report(proto, output: Path) -> None:
    from onegraph.meta import read

    fields = read({p.key: p.value for p in proto.metadata_props}).fields
    last = fields["federated"]["rounds"][-1]
    how = last["method"] + (f" (trim {last['trim']})" if last.get("trim") is not None else "")
    out.print(f"wrote {output} ({_size(output.stat().st_size)}): {how} of {_count(last['clients'], 'delta')}, round "
              f"{last['round']}, {last['samples']} samples", markup=False)

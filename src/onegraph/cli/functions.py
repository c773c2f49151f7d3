"""Commands on model-local functions and fusion: ``functions list / group / inline``, ``fuse``."""


from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from onegraph.cli.base import app, out, reads_models, writes
from onegraph.errors import OnegraphError, PassError

__all__ = ["list_", "group", "inline_", "fuse"]

functions_app = typer.Typer(no_args_is_help=True, help="List, group and inline model-local functions.")
app.add_typer(functions_app, name="functions")

ModelArg = Annotated[Path, typer.Argument(help="An ONNX model (.onnx); never modified.")]
OutputOpt = Annotated[Path, typer.Option("-o", "--output", help="Where to write the result (.onnx).")]


def _transform(model: Path, output: Path, change: Callable) -> object:
    """Load ``model``, apply ``change(ir_model)``, check the result and write it atomically to ``output``."""
    from onegraph.check import irsafe
    from onegraph.check.loader import load_ir, load_model
    from onegraph.io import save_model

    ir_model = load_ir(model)
    result = change(ir_model)
    proto = irsafe.to_proto(ir_model, f"the result of {model}")
    reason = _checker_failure(proto)  # the result is derived from a file: checked in the checking process
    if reason is not None:
        if _checker_failure(load_model(model)) is not None:  # the input's own fault, which the change carried over
            raise OnegraphError(f"model file {model} does not pass the ONNX checker: {reason}",
                                hint=f"`onegraph check {model}` lists every finding; nothing was written")
        raise OnegraphError(f"the result does not pass the ONNX checker: {reason}",
                            hint="report this model to onegraph; nothing was written")
    save_model(proto, output)
    return result


def _checker_failure(proto: object) -> str | None:
    """onnx's full check of ``proto`` (run in the checking process): its verdict in one line, or None."""
    from onegraph.check import native

    try:
        native.check_model(proto, full_check=True)
    except native.NativeCrash:
        raise
    except Exception as exc:  # noqa: BLE001 - the checker raises ValidationError / InferenceError
        return " ".join(str(exc).split()).rstrip(".")
    return None


@functions_app.command("list")
@reads_models
def list_(
    model: ModelArg,
    nodes: Annotated[bool, typer.Option("--nodes", help="Also list the main graph's nodes and their scopes.")] = False,
) -> None:
    """List MODEL's model-local functions: calls, body size, inputs and outputs."""

    from onegraph.check.loader import load_ir
    from onegraph.passes import list_functions
    from onegraph.passes.scopes import metadata_chain, name_chain

    ir_model = load_ir(model)
    infos = list_functions(ir_model)
    if not infos:
        out.print(f"{model}: no model-local functions ({len(ir_model.graph)} nodes in the graph)")
    else:
        table = Table(box=None)
        # a long id folds onto the next line: rich otherwise drops the number columns on a narrow console
        table.add_column("function (domain:name:overload)", overflow="fold")
        for column in ("calls", "nodes", "inputs", "outputs"):
            table.add_column(column, justify="right", no_wrap=True, min_width=len(column))
        for f in infos:
            table.add_row(f.id, str(f.calls), str(f.nodes), str(len(f.inputs)), str(len(f.outputs)))
        out.print(table)
    if nodes:
        table = Table(box=None)
        for column in ("node", "op", "scope"):
            table.add_column(column, no_wrap=True)
        for node in ir_model.graph:
            chain = metadata_chain(node) or name_chain(node)
            op = f"{node.domain}:{node.op_type}" if node.domain else node.op_type
            table.add_row(node.name or "", op, chain[-1].path if chain else "")
        out.print(table)


@functions_app.command()
@reads_models
@writes("model")
def group(
    model: ModelArg,
    output: OutputOpt,
    by: Annotated[str, typer.Option(help="metadata (scopes the exporter recorded per node), scope (node names "
                                         "/a/b/Op) or nodes (an explicit list).")] = "metadata",
    depth: Annotated[Optional[str], typer.Option(help="Levels of nesting to group: 1 = top-level objects, "
                                                      "'all' = every level. Default 1, or all with --class/--path.")
                     ] = None,
    classes: Annotated[Optional[list[str]], typer.Option("--class", help="metadata: only objects of this class "
                                                         "(LSTM, torch.nn.LSTM, ...). Repeatable.")] = None,
    paths: Annotated[Optional[list[str]], typer.Option("--path", help="metadata: only the object at this "
                                                       "instance path (encoder.lstm1). Repeatable.")] = None,
    scopes: Annotated[Optional[list[str]], typer.Option("--scope", help="scope: only this scope, optionally "
                                                        "named: /encoder/lstm1[=DOMAIN:NAME]. Repeatable.")] = None,
    domain: Annotated[Optional[str], typer.Option(help="scope: domain of the functions (default onegraph.scope).")
                      ] = None,
    node_names: Annotated[Optional[list[str]], typer.Option("--node", help="nodes: a node of the group. "
                                                            "Repeatable.")] = None,
    function: Annotated[Optional[str], typer.Option(help="nodes: the function, DOMAIN:NAME[:OVERLOAD].")] = None,
) -> None:
    """Group nodes of MODEL into calls of named model-local functions and write the result to OUTPUT."""
    from onegraph.passes import GROUP_BY, group_functions
    from onegraph.passes.grouping import AUTO, parse_function_id
    from onegraph.passes.scopes import SCOPE_DOMAIN

    if by not in GROUP_BY:
        raise OnegraphError(f"unknown --by {by!r}", hint=f"use one of {', '.join(GROUP_BY)}")
    levels: int | None | str = AUTO
    if depth == "all":
        levels = None
    elif depth is not None:
        try:
            levels = int(depth)
        except ValueError:
            raise OnegraphError(f"--depth {depth!r} is not a number", hint="give 1, 2, ... or all") from None
    options: dict = {}
    if by == "metadata":
        options = {"depth": levels, "classes": classes or (), "paths": paths or ()}
    elif by == "scope":
        wanted, names = [], {}
        for item in scopes or ():
            scope, _, fn = item.partition("=")
            wanted.append(scope)
            if fn:
                d, n, _ = parse_function_id(fn)
                names[scope] = (d, n)
        options = {"depth": levels, "scopes": wanted, "names": names, "domain": domain or SCOPE_DOMAIN}
    else:
        if not function or not node_names:
            raise OnegraphError("--by nodes needs --function DOMAIN:NAME[:OVERLOAD] and the nodes (--node NAME ...)",
                                hint="list node names with `onegraph functions list MODEL --nodes`")
        options = {"nodes": {function: node_names}}

    def change(ir_model):
        from onegraph.passes import list_functions

        calls = group_functions(ir_model, by, **options)
        if not calls:  # an unchanged copy with exit 0 would read as done
            asked = {"--class": classes, "--path": paths, "--scope": scopes}
            said = "; ".join(f"{k} {', '.join(v)}" for k, v in asked.items() if v)
            raise PassError(f"nothing to group: no nodes of {model} match --by {by}" + (f" ({said})" if said else ""),
                            hint="see the nodes' names and scopes with `onegraph functions list MODEL --nodes`; "
                                 "nothing was written")
        return calls, list_functions(ir_model)

    calls, infos = _transform(model, output, change)  # type: ignore[misc]
    made = {(c.domain, c.op_type, c.overload) for c in calls}
    out.print(f"wrote {output}: {len(calls)} call(s) of {len(made)} function(s)")
    for f in infos:
        if (f.domain, f.name, f.overload) in made:
            out.print(f"  {f.id:60s} {f.calls} call(s), {f.nodes} node(s)")


@functions_app.command("inline")
@reads_models
@writes("model")
def inline_(
    model: ModelArg,
    output: OutputOpt,
    only: Annotated[Optional[list[str]], typer.Option("--only", help="Inline only this function: DOMAIN, "
                                                      "DOMAIN:NAME or DOMAIN:NAME:OVERLOAD (wildcards * ?). "
                                                      "Repeatable. Default: all.")] = None,
) -> None:
    """Inline MODEL's model-local functions (all, or those --only selects) and write the result to OUTPUT."""
    from onegraph.passes import format_id, inline

    inlined = _transform(model, output, lambda m: inline(m, only))
    total = sum(inlined.values())  # type: ignore[attr-defined]
    out.print(f"wrote {output}: inlined {total} call(s) of {len(inlined)} function(s)")  # type: ignore[arg-type]
    for ident, n in sorted(inlined.items()):  # type: ignore[attr-defined]
        out.print(f"  {format_id(ident):60s} {n} call(s)")


@app.command()
@reads_models
@writes("model")
def fuse(
    model: ModelArg,
    output: OutputOpt,
    rules: Annotated[Optional[str], typer.Option(help="Comma-separated rule families: layer_norm, gelu, lstm, "
                                                      "gru. Default: all.")] = None,
    as_functions: Annotated[bool, typer.Option("--as-functions", help="Wrap each match into a named function "
                                               "(onegraph.fusion:<Operator>) instead of the fused operator.")
                            ] = False,
) -> None:
    """Re-fuse decomposed LayerNormalization, GELU, LSTM and GRU in MODEL; print each rule's match count."""
    from onegraph.passes import fuse as fuse_model

    chosen = [r.strip() for r in rules.split(",") if r.strip()] if rules is not None else None
    counts = _transform(model, output, lambda m: fuse_model(m, chosen, as_functions=as_functions))
    table = Table("rule", "matches", box=None)
    for key, n in counts.items():  # type: ignore[attr-defined]
        table.add_row(key, str(n))
    out.print(table)
    out.print(f"wrote {output}")  # on stdout, as every other command's

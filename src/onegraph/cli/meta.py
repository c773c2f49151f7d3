"""``onegraph meta show|set|validate|diff``: a model's metadata, by the schema of :mod:`onegraph.meta`."""


import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from onegraph.cli.base import Trusted, app, out, reads_models, writes
from onegraph.errors import OnegraphError

__all__ = ["show", "set_", "validate", "diff"]

meta_app = typer.Typer(no_args_is_help=True, help="Show, set, validate and compare a model's metadata "
                       "(keys under org.onegraph., versioned and typed).")
app.add_typer(meta_app, name="meta")

_Model = Annotated[Path, typer.Argument(help="An ONNX model.")]
_Json = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@meta_app.command("show")
@reads_models
def show(model: _Model, as_json: _Json = False, trusted: Trusted = False) -> None:
    """Print MODEL's metadata: onegraph's typed fields, other keys, and malformed values (kept, flagged)."""
    from onegraph.meta import PREFIX, read_metadata

    md = read_metadata(model, trusted=trusted)
    if as_json:
        out.print_json(json.dumps({"fields": md.fields, "others": md.others, "invalid": md.invalid,
                                   "errors": [str(e) for e in md.errors], "notes": md.notes}))
        return
    if not (md.fields or md.invalid or md.others or md.errors or md.notes):
        out.print(f"{model}: no metadata", markup=False)
        return
    for key, value in md.fields.items():
        out.print(f"{PREFIX}{key}: {_shown(value)}", markup=False)
    for key, text in md.invalid.items():
        out.print(f"{PREFIX}{key}: {text}  [INVALID]", markup=False)
    for key, text in md.others.items():
        out.print(f"{key}: {text}", markup=False)
    for line in [str(e) for e in md.errors] + md.notes:
        out.print(f"! {line}", markup=False)


@meta_app.command("set")
@reads_models
@writes("model")
def set_(
    model: _Model,
    assignments: Annotated[Optional[list[str]], typer.Argument(
        help="KEY=VALUE pairs: schema fields (author, license, intended_use, lineage...; JSON fields take JSON), "
             "model_author / model_license, or any other key (stored as text).")] = None,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Where to write the model.")] = None,
    in_place: Annotated[bool, typer.Option("--in-place", help="Rewrite MODEL itself (atomically).")] = False,
    remove: Annotated[Optional[list[str]], typer.Option("--remove", help="Key to delete (repeatable).")] = None,
    trusted: Trusted = False,
) -> None:
    """Set or remove metadata fields, validating each value; write the model to -o OUT (or --in-place)."""
    from onegraph.io import save_model
    from onegraph.meta import set_metadata

    if (output is None) == (not in_place):
        raise OnegraphError("give either -o OUT or --in-place", hint="the input model is never changed unless asked")
    updates = {}
    for item in assignments or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise OnegraphError(f"{item!r} is not KEY=VALUE", hint="e.g. author='Ada Lovelace'")
        if key in updates:
            raise OnegraphError(f"{key!r} is given twice ({updates[key]!r} and {value!r})",
                                hint="give each key once")
        updates[key] = value
    if not updates and not remove:
        raise OnegraphError("nothing to set or remove", hint="give KEY=VALUE pairs or --remove KEY")
    proto = set_metadata(model, updates, remove=remove or (), trusted=trusted, missing_ok=False)
    target = model if in_place else output
    save_model(proto, target)
    done = [f"set {', '.join(updates)}"] if updates else []
    done += [f"removed {', '.join(remove)}"] if remove else []
    out.print(f"wrote {target}: {'; '.join(done)}", markup=False)


@meta_app.command("validate")
@reads_models
def validate(model: _Model, as_json: _Json = False, trusted: Trusted = False) -> None:
    """Check every metadata value against the schema and the graph; exit 1 naming each malformed key."""
    from onegraph.meta import SCHEMA_VERSION, read_metadata

    md = read_metadata(model, trusted=trusted)
    if as_json:
        out.print_json(json.dumps({"ok": md.ok, "fields": sorted(md.fields), "errors": [
            {"key": e.key, "message": e.message} for e in md.errors], "notes": md.notes}))
    elif md.ok:
        out.print(f"{model}: {len(md.fields)} onegraph fields valid (schema version {SCHEMA_VERSION}); "
                  f"{len(md.others)} other keys kept", markup=False)
    else:
        out.print(f"{model}: {len(md.errors)} problem(s)", markup=False)
        for e in md.errors:
            out.print(f"  {e.key}: {e.message}", markup=False)
    for note in md.notes:
        out.print(f"note: {note}", markup=False)
    if not md.ok:
        raise typer.Exit(1)


@meta_app.command("diff")
@reads_models
def diff(a: _Model, b: _Model, as_json: _Json = False, trusted: Trusted = False) -> None:
    """Print the metadata keys whose values differ between A and B; exit 1 when any does."""
    from onegraph.meta import diff as meta_diff
    from onegraph.meta import read_metadata

    changes = meta_diff(read_metadata(a, trusted=trusted), read_metadata(b, trusted=trusted))
    if as_json:
        out.print_json(json.dumps([{"key": k, "a": x, "b": y} for k, x, y in changes]))
    elif not changes:
        out.print("same metadata", markup=False)
    for key, x, y in changes if not as_json else []:
        out.print(f"{key}: {'(absent)' if x is None else _shown(x)} -> {'(absent)' if y is None else _shown(y)}",
                  markup=False)
    if changes:
        raise typer.Exit(1)

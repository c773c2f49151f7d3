"""What a model says about itself: inputs, outputs, metadata (``onegraph show``)."""

from __future__ import annotations

from typing import Any

import onnx

from onegraph.check.loader import load_model
from onegraph.contract import metadata as meta
from onegraph.contract.columns import MISSING_STRING, ColumnSpec

__all__ = ["describe"]

_MISSING = {"double": "NaN", "float": "NaN", "int64": "INT64_MIN", "bool": "(none)",
            "string": f"U+{ord(MISSING_STRING):04X}"}


def _type(value_info: onnx.ValueInfoProto) -> tuple[str, list]:
    t = value_info.type.tensor_type
    elem = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name if t.elem_type else "?"
    if t.elem_type == onnx.TensorProto.STRING:
        elem = "string"
    shape = [d.dim_param or (d.dim_value if d.HasField("dim_value") else "?") for d in t.shape.dim]
    return elem, shape


def describe(model: Any, *, trusted: bool = False) -> dict:
    """A JSON-able description of ``model`` (path, bytes or ModelProto).

    Keys: ``inputs`` (one dict per column: name, kind, onnx_type, source_dtype, tz, missing),
    ``outputs`` (name, role, type, shape, classes), ``metadata`` (onegraph's typed fields and every other
    key), ``opsets``, ``nodes``, ``initializers``.

    ``trusted`` skips the isolated pre-parse (:func:`onegraph.check.loader.load_model`).

    Raises :class:`~onegraph.errors.ModelFileError` for an unreadable model and
    :class:`~onegraph.meta.MetadataError` for malformed onegraph metadata.
    """
    proto = load_model(model, trusted=trusted)
    fields, others = meta.decode({p.key: p.value for p in proto.metadata_props})
    graph_inputs = {i.name: i for i in proto.graph.input}
    if fields.get("inputs"):  # a media model (onegraph.media) has no columns: its tensor input is listed
        entries = [ColumnSpec.from_dict(d).to_dict() for d in fields["inputs"]]
    else:  # a model built elsewhere: its inputs as the graph types them (not a column schema)
        entries = [{"name": i.name, "kind": "?", "onnx_type": elem, "source_dtype": elem}
                   for i in proto.graph.input for elem in [_type(i)[0]]]
    inputs = []
    for entry in entries:
        entry["missing"] = _MISSING.get(entry["onnx_type"], "?")
        if entry["name"] in graph_inputs:
            entry["shape"] = _type(graph_inputs[entry["name"]])[1]
        inputs.append(entry)
    roles = {o["name"]: o for o in fields.get("outputs", [])}
    outputs = []
    for o in proto.graph.output:
        elem, shape = _type(o)
        entry = {"name": o.name, "type": elem, "shape": shape}
        entry.update({k: v for k, v in roles.get(o.name, {}).items() if k != "name"})
        outputs.append(entry)
    return {
        "inputs": inputs,
        "outputs": outputs,
        "metadata": {**fields, **others},
        "opsets": {(o.domain or "ai.onnx"): o.version for o in proto.opset_import},
        "ir_version": proto.ir_version,
        "producer": f"{proto.producer_name} {proto.producer_version}".strip(),
        "nodes": len(proto.graph.node),
        "initializers": len(proto.graph.initializer),
        "functions": len(proto.functions),
    }

"""What a model says about itself: inputs, outputs, metadata (``onegraph show``)."""

from __future__ import annotations

from typing import Any

import onnx

from onegraph.frame.schema import MISSING_STRING, ColumnSpec
from onegraph.io import load_model
from onegraph.meta import schema as meta

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

    ``trusted`` skips the isolated pre-parse (:func:`onegraph.io.load_model`).

    Raises :class:`~onegraph.errors.ModelFileError` for an unreadable model and
    :class:`~onegraph.meta.MetadataError` for malformed onegraph metadata.
    """
    proto = load_model(model, trusted=trusted)
    fields, others = meta.decode({p.key: p.value for p in proto.metadata_props})
    graph_inputs = {i.name: i for i in proto.graph.input}
    if fields.get("inputs"):  # a media model (onegraph.media) has no columns: its tensor input is listed
        specs = [ColumnSpec.from_dict(d) for d in fields["inputs"]]
    else:
        specs = []
        for i in proto.graph.input:
            elem, _ = _type(i)
            specs.append(ColumnSpec(i.name, "?", elem, source_dtype=elem))
    inputs = []
    for s in specs:
        entry = s.to_dict()
        entry["missing"] = _MISSING.get(s.onnx_type, "?")
        if s.name in graph_inputs:
            entry["shape"] = _type(graph_inputs[s.name])[1]
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

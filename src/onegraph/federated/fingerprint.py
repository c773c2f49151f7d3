"""The structural fingerprint of a model: what must be equal for two models to exchange parameters.

Two models have the same architecture when they have the same opsets, the same graph inputs and outputs
(names, element types, shapes), the same nodes in the same order (domain, operator, overload, the values
they read and write, their attributes, constant tensors included) and the same initializers by name,
element type and shape. Initializer *values* are left out: they are the parameters being exchanged.
Metadata, doc strings, node names and the producer are left out too; they do not change what the graph
computes. A node order that differs (the same graph sorted otherwise) counts as another architecture:
the comparison is deliberately strict.

The fingerprint is ``sha256:<hex>`` of the text :func:`structure` gives, one line per item, so a mismatch
can be explained by the first line that differs (:func:`first_difference`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from typing import Any

import onnx
import onnx_ir as ir

__all__ = ["structure", "fingerprint", "first_difference", "tensor_bytes", "dtype_name"]


def structure(model: ir.Model) -> list[str]:
    """One line of text per structural item of ``model`` (see the module docstring), in graph order."""
    lines = [f"opsets {json.dumps(sorted(model.opset_imports.items()))}"]
    _graph(lines, model.graph, "graph")
    for key in sorted(model.functions, key=str):
        function = model.functions[key]
        where = f"function {function.domain}::{function.name}:{function.overload}"
        lines.append(f"{where} inputs {[v.name for v in function.inputs]} attributes {sorted(function.attributes)}")
        _nodes(lines, function, where)
        lines.append(f"{where} outputs {[v.name for v in function.outputs]}")
    return lines


def fingerprint(model: ir.Model) -> str:
    """``sha256:<hex>`` of :func:`structure`: equal for models whose parameters can be exchanged."""
    return "sha256:" + hashlib.sha256("\n".join(structure(model)).encode()).hexdigest()


def first_difference(a: list[str], b: list[str]) -> tuple[str | None, str | None]:
    """The first line of structure ``a`` that ``b`` does not have at that place, and ``b``'s line there
    (None where one side has no line)."""
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            return (a[i1] if i1 < i2 else None), (b[j1] if j1 < j2 else None)
    return None, None


def _graph(lines: list[str], graph: ir.Graph, where: str) -> None:
    for v in graph.inputs:
        lines.append(f"{where} input {v.name} {_type(v)}")
    for name, v in graph.initializers.items():
        t = v.const_value
        lines.append(f"{where} initializer {name} {dtype_name(t.dtype) if t is not None else '?'} {_dims(v.shape)}")
    _nodes(lines, graph, where)
    for v in graph.outputs:
        lines.append(f"{where} output {v.name} {_type(v)}")


def _nodes(lines: list[str], nodes: Any, where: str) -> None:
    for i, node in enumerate(nodes):
        ins = [v.name if v is not None else "" for v in node.inputs]
        outs = [v.name for v in node.outputs]
        attrs = {name: _attribute(lines, attr, f"{where}/{i}.{name}") for name, attr in sorted(node.attributes.items())}
        op = f"{node.domain or 'ai.onnx'}::{node.op_type}" + (f":{node.overload}" if node.overload else "")
        lines.append(f"{where} node {i} {op} {ins} -> {outs} {json.dumps(attrs, sort_keys=True)}")


def _attribute(lines: list[str], attr: Any, where: str) -> Any:
    if attr.is_ref():
        return f"@{attr.ref_attr_name}"
    kind = attr.type
    if kind == ir.AttributeType.GRAPH:
        _graph(lines, attr.value, where)
        return f"graph {where}"
    if kind == ir.AttributeType.GRAPHS:
        for j, g in enumerate(attr.value):
            _graph(lines, g, f"{where}[{j}]")
        return f"graphs {where} x{len(attr.value)}"
    if kind == ir.AttributeType.TENSOR:
        return _tensor(attr.value)
    if kind == ir.AttributeType.TENSORS:
        return [_tensor(t) for t in attr.value]
    if kind in (ir.AttributeType.FLOAT, ir.AttributeType.FLOATS):
        return repr(attr.value) if kind == ir.AttributeType.FLOAT else [repr(x) for x in attr.value]
    if kind in (ir.AttributeType.INT, ir.AttributeType.STRING):
        return attr.value
    if kind in (ir.AttributeType.INTS, ir.AttributeType.STRINGS):
        return list(attr.value)
    return f"{kind.name} {attr.value!s}"


def _tensor(t: Any) -> str:
    """A constant tensor (an attribute, e.g. of Constant or LabelEncoder) is structure: its values count."""
    return f"{dtype_name(t.dtype)}{_dims(t.shape)} sha256:{hashlib.sha256(tensor_bytes(t)).hexdigest()}"


def tensor_bytes(t: Any) -> bytes:
    """The content of an onnx-ir tensor as bytes (string tensors: their strings, each after its length)."""
    if t.dtype == ir.DataType.STRING:
        return b"".join(len(x).to_bytes(8, "little") + x for x in t.string_data())
    return t.tobytes()


def _type(v: ir.Value) -> str:
    return f"{v.type!s} {_dims(v.shape)}" if v.type is not None else "untyped"


def _dims(shape: ir.Shape | None) -> str:
    if shape is None:
        return "[?]"
    return "[" + ",".join(str(d) if d is not None else "?" for d in shape) + "]"


def dtype_name(dtype: ir.DataType) -> str:
    """The ONNX element type as :mod:`onegraph.contract.metadata` spells it (``float``, ``double``, ``int8``...)."""
    return onnx.TensorProto.DataType.Name(dtype.value).lower()

"""Every intermediate tensor of a model, made visible: functions inlined, node outputs exposed as outputs.

onnxruntime only returns graph outputs, so to look at what each node computes the model is rewritten with
onnx-ir: model-local functions are inlined first (``onnx_ir.passes.common.InlinePass``: the nodes of a
function body get the call-site node's name as a prefix, so a report can still say which call they belong
to), types are inferred, and every node output of the main graph whose type is known becomes a graph output.
Subgraph (If / Loop / Scan) tensors stay inside their node: the node's outputs are compared instead.
"""

from __future__ import annotations

import onnx
import onnx_ir as ir
import onnx_ir.passes.common as common_passes

from onegraph.check import irsafe, native

__all__ = ["inlined", "with_types", "expose", "node_order"]


def inlined(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its model-local functions inlined (a copy; the input is not modified)."""
    if not model.functions:
        return model
    m = irsafe.from_proto(model)
    irsafe.inline(m)
    common_passes.RemoveUnusedFunctionsPass()(m)
    return irsafe.to_proto(m)


def with_types(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with onnx's shape inference applied (the model as it is where inference fails)."""
    try:
        return native.infer_shapes(model)
    except Exception:  # inference is a help: a model it cannot handle is still exposed where types are known
        return model


#: element types onnxruntime computes but cannot hand to numpy ("No corresponding Numpy type"): not exposed
_UNFETCHABLE = frozenset(t for t in ir.DataType if t.name.startswith(("BFLOAT16", "FLOAT8", "FLOAT4", "INT4", "UINT4",
                                                                      "INT2", "UINT2")))


def expose(model: onnx.ModelProto, names: set[str] | None = None) -> tuple[onnx.ModelProto, list[str]]:
    """A copy of ``model`` (functions inlined) whose graph outputs include every typed node output (but those of
    a type onnxruntime cannot return to numpy: bfloat16, float8, 4-bit).

    Parameters
    ----------
    model:
        The model.
    names:
        Only expose these tensors (None: all).

    Returns
    -------
    (onnx.ModelProto, list of str)
        The rewritten model, and the names of the tensors it exposes in node order.
    """
    typed = with_types(inlined(model))
    m = irsafe.from_proto(typed)
    existing = {v.name for v in m.graph.outputs}
    exposed: list[str] = []
    for node in m.graph:
        for value in node.outputs:
            if value is None or not value.name or value.type is None:
                continue
            if not isinstance(value.type, ir.TensorType) or value.dtype in (None, ir.DataType.UNDEFINED):
                continue
            if value.dtype in _UNFETCHABLE:  # onnxruntime's Python binding has no numpy type for them
                continue
            if names is not None and value.name not in names:
                continue
            exposed.append(value.name)
            if value.name not in existing:
                m.graph.outputs.append(value)
                existing.add(value.name)
    return irsafe.to_proto(m), exposed


def node_order(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """The main graph's nodes (functions inlined) in their topological order."""
    return list(with_types(inlined(model)).graph.node)

"""A model's shapes without its weights: the float element types, a proto stripped of its large initializers'
payloads, onnx's shape inference on it, and the widest row of values it holds.

numpy and onnx only (no pandas, no metadata schema): calibration and the build's last step both read shapes,
and a tensor model's calibration must not load the table stack.
"""

from __future__ import annotations

import math

import onnx

__all__ = ["WEIGHTS_FROM", "FLOAT_TYPES", "drop_weights", "with_shapes", "row_width"]


#: float initializers of at least this many values lose their payload in a model read for its shapes
WEIGHTS_FROM = 1024
#: the ONNX float element types (``onnx.TensorProto`` values, equal to ``onnx_ir.DataType``'s)
FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16)


def drop_weights(proto: onnx.ModelProto) -> onnx.ModelProto:
    """``proto`` itself, the payloads of its float initializers of :data:`WEIGHTS_FROM` values or more cleared in
    place (their types and dimensions kept): shape inference reads those alone, and the values only of the
    small integer and float tensors operators take as shapes, scales or axes."""
    for tensor in proto.graph.initializer:
        if tensor.data_type in FLOAT_TYPES and math.prod(tensor.dims) >= WEIGHTS_FROM:
            for payload in ("raw_data", "float_data", "double_data", "int32_data"):
                tensor.ClearField(payload)
    return proto


def with_shapes(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``proto`` with the value infos onnx's shape inference gives, or ``proto`` itself when inference
    fails (its own value infos are then all there is)."""
    try:
        return onnx.shape_inference.infer_shapes(proto)
    except Exception:  # noqa: BLE001 - onnx raises InferenceError, ValidationError and others
        return proto


def row_width(proto: onnx.ModelProto) -> int:
    """Values per row of the model's widest value, at least 1: the product of the static dimensions after the
    first of every value whose first dimension is not static (the rows), read from the value infos of ``proto``
    with its shapes inferred (onnx's shape inference, on a copy): a one-hot block ``[N, 6300]`` is 6,300, the
    ``[N, 10000, 10]`` differences of a nearest-neighbours model to 10,000 fitted rows 100,000. Values inside
    model-local functions and values of no static shape do not count: give the graph before its steps are
    grouped into functions, and without its weights (:func:`drop_weights`) to spare copying them."""
    inferred = with_shapes(proto)
    infos = [*inferred.graph.output, *inferred.graph.value_info]
    widest = 1
    for info in infos:
        dims = info.type.tensor_type.shape.dim if info.type.HasField("tensor_type") else ()
        if len(dims) < 2 or dims[0].HasField("dim_value") or not all(d.HasField("dim_value") for d in dims[1:]):
            continue
        widest = max(widest, math.prod(d.dim_value for d in dims[1:]))
    return widest

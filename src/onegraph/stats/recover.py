"""Float ranges read back from a model quantized elsewhere.

A QuantizeLinear / DequantizeLinear pair with scale ``s`` and zero point ``z`` represents exactly the floats
``s * (q - z)`` for ``q`` in the quantized type's range ``[qmin, qmax]``; the representable range of the
tensor is therefore ``[s (qmin - z), s (qmax - z)]`` (float8: ``±s * largest finite value``). Per-axis
parameters (1-D ``s`` / ``z``) give one range per index along ``axis`` (the attribute; default 1, as the
operators define it since opset 13). QLinear* operators (QLinearConv, QLinearMatMul and onnxruntime's
``com.microsoft`` QLinearAdd, QLinearMul, QLinearSigmoid, ...) carry the same parameters for each of their
quantized inputs and outputs.

The ranges become ``onegraph.stats`` documents with ``source: "recovered"`` (min / max, per channel when
per axis), and the tensors' ``quantization_annotation`` references the model's own scale / zero-point
initializers. The float tensor entering a QuantizeLinear, the one leaving a DequantizeLinear and the
quantized tensor between them are all annotated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnx_ir as ir

from onegraph.check import irsafe
from onegraph.check.loader import load_ir
from onegraph.stats.accumulators import ChannelStats, TensorStats
from onegraph.stats.annotate import AnnotateStatsPass
from onegraph.stats.qparams import FLOAT8_TYPES, FULL_RANGES, INTEGER_TYPES

__all__ = ["RecoveredRange", "representable_range", "recover_ranges", "recover"]

# op_type -> (quantized input slots (tensor, scale, zero point), output slot (scale, zero point))
_QLINEAR: dict[str, tuple[tuple[tuple[int, int, int], ...], tuple[int, int]]] = {
    "QLinearConv": (((0, 1, 2), (3, 4, 5)), (6, 7)),
    "QLinearMatMul": (((0, 1, 2), (3, 4, 5)), (6, 7)),
    "QLinearAdd": (((0, 1, 2), (3, 4, 5)), (6, 7)),
    "QLinearMul": (((0, 1, 2), (3, 4, 5)), (6, 7)),
    "QLinearSigmoid": (((0, 1, 2),), (3, 4)),
    "QLinearLeakyRelu": (((0, 1, 2),), (3, 4)),
    "QLinearAveragePool": (((0, 1, 2),), (3, 4)),
    "QLinearGlobalAveragePool": (((0, 1, 2),), (3, 4)),
    "QLinearSoftmax": (((0, 1, 2),), (3, 4)),
}
# per-channel weight scales: QLinearConv's along the output channels, QLinearMatMul's along b's columns
_WEIGHT_AXIS = {"QLinearConv": 0, "QLinearMatMul": -1}
# the representable integers of each type; int32 for biases quantized with scale = input scale * weight scale
_INTEGER_RANGES = {**FULL_RANGES, "int32": (-(2**31), 2**31 - 1)}
_TYPES = {"int32": (np.int32, onnx.TensorProto.INT32), **INTEGER_TYPES, **FLOAT8_TYPES}
_NUMPY_NAMES = {np.dtype(np_type): name for name, (np_type, _) in _TYPES.items()}
_IR_NAMES = {ir.DataType(code): name for name, (_, code) in _TYPES.items()}


@dataclass(frozen=True)
class RecoveredRange:
    """The float range a quantized tensor represents (arrays: per index along ``axis``)."""

    tensor: str
    rmin: np.ndarray
    rmax: np.ndarray
    quant_type: str
    axis: int | None
    scale_name: str | None
    zero_point_name: str | None

    def stats(self) -> TensorStats:
        lo, hi = float(np.min(self.rmin)), float(np.max(self.rmax))
        channels = None
        if self.axis is not None and np.ndim(self.rmin) == 1:
            n = len(self.rmin)
            nothing = (None,) * n
            channels = ChannelStats(self.axis, (0,) * n, tuple(map(float, self.rmin)), tuple(map(float, self.rmax)),
                                    nothing, nothing)
        return TensorStats(min=lo, max=hi, absmax=max(-lo, hi), channels=channels, source="recovered")


def representable_range(scale: np.ndarray, zero_point: np.ndarray | None, quant_type: str) -> tuple[np.ndarray,
                                                                                                   np.ndarray]:
    """``(s (qmin - z), s (qmax - z))`` in float64; float8: ``(-s m, s m)``, ``m`` the largest finite value."""
    s = np.asarray(scale, dtype=np.float64)
    if quant_type in FLOAT8_TYPES:
        m = float(ml_dtypes.finfo(FLOAT8_TYPES[quant_type][0]).max)
        return -s * m, s * m
    qmin, qmax = _INTEGER_RANGES[quant_type]
    z = np.zeros_like(s) if zero_point is None else np.asarray(zero_point).astype(np.float64)
    return s * (qmin - z), s * (qmax - z)


def recover_ranges(model: Any) -> dict[str, RecoveredRange]:
    """tensor name -> :class:`RecoveredRange` for every tensor a Q / DQ / QLinear* node of the main graph
    quantizes (first node wins when several do). ``model``: path, bytes, ModelProto or onnx_ir.Model."""
    ir_model = model if isinstance(model, ir.Model) else load_ir(model)
    found: dict[str, RecoveredRange] = {}
    for node in ir_model.graph:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") and node.domain in ("", "ai.onnx", "com.microsoft"):
            _from_qdq(node, found)
        elif node.op_type in _QLINEAR:
            inputs, (out_scale, out_zero) = _QLINEAR[node.op_type]
            for t, s, z in inputs:
                _add(found, node, t, s, z, axis=_WEIGHT_AXIS.get(node.op_type) if t == 3 else None)
            _add_value(found, node.outputs[0], node, out_scale, out_zero, None)
        elif node.op_type == "QLinearConcat":
            _add_value(found, node.outputs[0], node, 0, 1, None)
            for t in range(2, len(node.inputs) - 2, 3):
                _add(found, node, t, t + 1, t + 2, None)
    return found


def _from_qdq(node: ir.Node, found: dict[str, RecoveredRange]) -> None:
    axis = node.attributes.get("axis")
    axis_value = axis.as_int() if axis is not None else 1
    quantized = node.outputs[0] if node.op_type == "QuantizeLinear" else node.inputs[0]
    floats = node.inputs[0] if node.op_type == "QuantizeLinear" else node.outputs[0]
    for value in (floats, quantized):
        _add_value(found, value, node, 1, 2, axis_value, quantized_value=quantized)


def _add(found: dict, node: ir.Node, t: int, s: int, z: int, axis: int | None) -> None:
    if t < len(node.inputs) and node.inputs[t] is not None:
        _add_value(found, node.inputs[t], node, s, z, axis)


def _add_value(found: dict, value: ir.Value | None, node: ir.Node, s: int, z: int, axis: int | None,
               quantized_value: ir.Value | None = None) -> None:
    if value is None or not value.name or value.name in found:
        return
    scale_value = node.inputs[s] if s < len(node.inputs) else None
    zero_value = node.inputs[z] if z < len(node.inputs) else None
    scale = _const(scale_value)
    if scale is None:
        return  # parameters computed at run time (dynamic quantization): no static range
    zero = _const(zero_value)
    quant_type = _quant_type(node, zero, quantized_value or value)
    if quant_type is None:
        return
    lo, hi = representable_range(scale, zero, quant_type)
    per_axis = np.ndim(scale) == 1 and np.size(scale) > 1
    found[value.name] = RecoveredRange(value.name, lo, hi, quant_type, axis if per_axis else None,
                                       _initializer_name(scale_value), _initializer_name(zero_value))


def _const(value: ir.Value | None) -> np.ndarray | None:
    if value is None:
        return None
    tensor = ir.convenience.get_const_tensor(value)
    return None if tensor is None else tensor.numpy()


def _initializer_name(value: ir.Value | None) -> str | None:
    return value.name if value is not None and value.is_initializer() else None


def _quant_type(node: ir.Node, zero: np.ndarray | None, quantized: ir.Value) -> str | None:
    if zero is not None:
        return _NUMPY_NAMES.get(zero.dtype)
    if quantized.dtype in _IR_NAMES:
        return _IR_NAMES[quantized.dtype]
    output_dtype = node.attributes.get("output_dtype")
    if output_dtype is not None and output_dtype.as_int():
        return _IR_NAMES.get(ir.DataType(output_dtype.as_int()))
    return "uint8"  # QuantizeLinear's default without a zero point


def recover(model: Any) -> onnx.ModelProto:
    """A copy of ``model`` whose quantized tensors carry their recovered ranges (see the module docstring)."""
    ir_model = load_ir(model) if not isinstance(model, ir.Model) else irsafe.from_proto(
        irsafe.to_proto(model))
    ranges = recover_ranges(ir_model)
    stats = {name: r.stats() for name, r in ranges.items()}
    references = {name: (r.scale_name, r.zero_point_name,
                         {"type": r.quant_type, "axis": r.axis, "symmetric": False, "reduce_range": False,
                          "method": "recovered"})
                  for name, r in ranges.items() if r.scale_name is not None}
    AnnotateStatsPass(stats, references=references)(ir_model)
    return irsafe.to_proto(ir_model)

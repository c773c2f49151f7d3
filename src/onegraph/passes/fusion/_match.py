"""Helpers the fusion rules share: commutative alternatives, constants, linear layers, opsets."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import onnx_ir as ir
from onnxscript.rewriter import pattern

#: Element types the fused operators take and compute in exactly as the decomposed graph does.
FLOAT_TYPES = frozenset({ir.DataType.FLOAT, ir.DataType.DOUBLE})

#: Metadata key on nodes a rule made, naming the rule (next to onnxscript's own rule-name tag).
FUSED_BY = "onegraph.fused_by"


def either(make, a, b):
    """``make(a, b)`` or ``make(b, a)``: a commutative operation in a pattern, either operand order."""
    return pattern.OrValue([make(a, b), make(b, a)])


def constant(value: ir.Value | None) -> np.ndarray | None:
    """The value as a numpy array when it is constant (initializer, ``Constant`` node), else None."""
    if value is None:
        return None
    tensor = ir.convenience.get_const_tensor(value)
    if tensor is None:
        return None
    try:
        return tensor.numpy()
    except Exception:  # external data that is not available
        return None


def scalar(value: ir.Value | None, rank_limit: int | None = None) -> float | None:
    """The number a constant holding one element carries, or None.

    ``rank_limit``: the constant's rank must not exceed it (a ``[1, 1]`` constant would broadcast a
    1-D operand to 2-D, which changes the result's shape).
    """
    arr = constant(value)
    if arr is None or arr.size != 1 or arr.dtype.kind not in "fiu":
        return None
    if rank_limit is not None and arr.ndim > rank_limit:
        return None
    return float(arr.reshape(()))


def is_number(value: ir.Value | None, expected: float, rank_limit: int | None = None,
              rel_tol: float = 1e-6) -> bool:
    """True when ``value`` is a one-element constant equal to ``expected`` (to ``rel_tol``)."""
    got = scalar(value, rank_limit)
    return got is not None and math.isclose(got, expected, rel_tol=rel_tol, abs_tol=0.0)


def rank(value: ir.Value) -> int | None:
    return None if value.shape is None else value.shape.rank()


def static_dims(value: ir.Value) -> list[int] | None:
    """The value's shape when every dimension is a known integer."""
    if value.shape is None or not all(isinstance(d, int) for d in value.shape):
        return None
    return [int(d) for d in value.shape]


def attr_int(node: ir.Node, name: str, default: int) -> int:
    attr = node.attributes.get(name)
    return default if attr is None else int(attr.value)


def opset(model: ir.Model) -> int:
    """The model's default-domain opset version."""
    return int(model.opset_imports.get("", model.opset_imports.get("ai.onnx", 0)))


def unsupported(model: ir.Model, x: ir.Value, min_opset: int, operator: str) -> str | None:
    """Why ``operator`` cannot replace a match on ``x`` in ``model`` (opset too low, ``x`` not float or
    double), or None."""
    if opset(model) < min_opset:
        return f"the model's opset is below {min_opset}, which brings {operator}"
    if x.dtype not in FLOAT_TYPES:
        return "x is not float or double"
    return None


@dataclasses.dataclass
class Linear:
    """``input @ weight.T + bias`` found in the graph (``Gemm``, ``MatMul`` [+ ``Add``]).

    ``weight`` is ``[out, in]``, ``bias`` ``[out]`` (zeros when there is none), both numpy constants.
    """

    input: ir.Value
    weight: np.ndarray
    bias: np.ndarray
    nodes: list[ir.Node]


def as_linear(value: ir.Value) -> Linear | None:
    """Read ``value`` as a linear layer with constant weights, or None."""
    node = value.producer()
    if node is None or node.domain not in ("", "ai.onnx"):
        return None
    if node.op_type == "Gemm":
        return _gemm(node)
    if node.op_type == "MatMul":
        w = constant(node.inputs[1])
        if w is None or w.ndim != 2:
            return None
        return Linear(node.inputs[0], w.T, np.zeros(w.shape[1], w.dtype), [node])
    if node.op_type == "Add":
        for a, b in ((0, 1), (1, 0)):
            bias = constant(node.inputs[b])
            inner = node.inputs[a].producer() if node.inputs[a] is not None else None
            if bias is None or inner is None or inner.op_type != "MatMul" or len(node.inputs[a].uses()) != 1:
                continue
            lin = as_linear(node.inputs[a])
            if lin is None or bias.reshape(-1).shape[0] != lin.weight.shape[0] or bias.ndim > 1:
                continue
            return Linear(lin.input, lin.weight, bias.reshape(-1), [*lin.nodes, node])
    return None


def _gemm(node: ir.Node) -> Linear | None:
    if attr_int(node, "transA", 0) != 0:
        return None
    alpha = node.attributes.get("alpha")
    beta = node.attributes.get("beta")
    if (alpha is not None and float(alpha.value) != 1.0) or (beta is not None and float(beta.value) != 1.0):
        return None
    w = constant(node.inputs[1])
    if w is None or w.ndim != 2:
        return None
    weight = w if attr_int(node, "transB", 0) == 1 else w.T
    out = weight.shape[0]
    c = node.inputs[2] if len(node.inputs) > 2 else None
    if c is None:
        bias = np.zeros(out, weight.dtype)
    else:
        b = constant(c)
        if b is None or b.size != out or (b.ndim == 2 and b.shape[0] != 1) or b.ndim > 2:
            return None
        bias = b.reshape(-1)
    return Linear(node.inputs[0], weight, bias, [node])


def row_constant(value: ir.Value, width: int) -> np.ndarray | None:
    """A constant ``[width]`` or ``[N, width]`` whose rows are all equal (an exporter's folded bias), as one row."""
    arr = constant(value)
    if arr is None or arr.shape[-1:] != (width,) or arr.ndim > 2:
        return None
    rows = arr.reshape(-1, width)
    if not np.array_equal(rows, np.broadcast_to(rows[:1], rows.shape)):
        return None
    return rows[0]


def all_zero(value: ir.Value | None) -> bool:
    arr = constant(value)
    return arr is not None and not np.any(arr)

"""True low-precision arithmetic, and what each node of a float32 model would lose in it.

Why not onnxruntime: its CPU provider has no float16 kernel for many operators; it runs those in float32
between inserted Casts, removes the Cast pairs between such neighbours, and fuses patterns (a decomposed
LayerNorm becomes one LayerNormalization kernel that computes in float32). A float16 model that overflows
on a GPU, or in any runtime computing in float16, then looks fine on CPU. Verification therefore evaluates
the converted model with onnx's ``ReferenceEvaluator``, whose operators are numpy functions applied to the
tensors' own dtype: every node's result is a float16 (or ``ml_dtypes.bfloat16``) array, so a value beyond
65504 becomes inf exactly where it is produced, and rounding happens after every node. Inside one node numpy
accumulates float16 sums and products in float32 (as GPU kernels do), so sums that overflow only inside a
node are not seen by that run; :func:`measure` bounds them explicitly (:func:`sum_bound`).

:func:`measure` looks at the float32 model's own values on calibration data, node by node:

* ``range``: the largest magnitude among the node's float inputs and outputs;
* ``sum``: for reductions, MatMul / Gemm and LayerNormalization, a bound on every partial sum the kernel
  forms (the sum of magnitudes along the reduced axis: ``|A| @ |B|`` for a product), which no partial sum
  can exceed whatever the summation order;
* ``error``: the node run alone by the reference evaluator on its inputs rounded to the low precision, its
  result compared with float32: ``max |low - float32| / max |float32|`` (the error relative to the
  tensor's scale, so values near zero do not dominate; cancellation, as in ``x - mean(x)`` over large
  values, shows as a large error).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun

from onegraph.errors import RuntimeFailure

__all__ = ["FORMATS", "NodeMeasure", "reference_run", "failing_node", "cast_feeds", "relative_error",
           "sum_bound", "simulate", "measure", "decide"]

#: low-precision formats: name -> (numpy dtype, TensorProto type, largest finite value)
FORMATS = {
    "float16": (np.dtype(np.float16), onnx.TensorProto.FLOAT16, float(np.finfo(np.float16).max)),
    "bfloat16": (np.dtype(ml_dtypes.bfloat16), onnx.TensorProto.BFLOAT16, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)),
}

_REDUCE = {"ReduceSum", "ReduceMean", "ReduceL1", "ReduceL2", "ReduceSumSquare"}


@dataclasses.dataclass
class NodeMeasure:
    """What one node of the float32 model does with its values on the calibration data."""

    name: str
    op_type: str
    range: float = 0.0
    sum: float | None = None
    error: float | None = None
    reason: str = ""


#: what to do when the evaluator fails, said to a user of `onegraph compare`
COMPARE_HINT = ("the node may rely on behaviour its operator's spec does not define (onnxruntime may accept "
                "it); compare with --against ort-basic to check onnxruntime alone")


def reference_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], *, intermediate: bool = False,
                  hint: str = COMPARE_HINT) -> dict[str, np.ndarray]:
    """Run ``model`` with onnx's ReferenceEvaluator: graph outputs (or every tensor) by name. ``hint`` is
    what the error tells the user to do (the caller's command knows its options).

    Raises
    ------
    RuntimeFailure
        when the evaluator cannot load or run the model, naming the node that failed (its outermost
        node: a ``Loop`` or ``If`` for a failure inside a subgraph) and the evaluator's message.
    """
    try:
        ref = ReferenceEvaluator(model)
        names = set(ref.input_names)
        feeds = {k: v for k, v in feeds.items() if k in names}
        with np.errstate(all="ignore"):
            if intermediate:
                return dict(ref.run(None, feeds, intermediate=True))
            return dict(zip(ref.output_names, ref.run(None, feeds)))
    except Exception as exc:  # numpy / the evaluator's own errors: any of them means "cannot run"
        node = failing_node(exc)
        where = f" at node {node.name!r} ({node.op_type})" if node is not None else ""
        message = " ".join(f"{type(exc).__name__}: {exc}".split())[:400]
        raise RuntimeFailure(f"onnx's reference evaluator failed{where}: {message}", hint=hint) from None


def failing_node(exc: BaseException) -> onnx.NodeProto | None:
    """The outermost ONNX node being run by the reference evaluator when ``exc`` was raised (read from
    the traceback: the first frame running an operator), None when the failure was outside any node."""
    tb = exc.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, OpRun):
            return owner.onnx_node
        tb = tb.tb_next
    return None


def cast_feeds(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``feeds`` cast to the element types of ``model``'s inputs (float32 data for a float16 input)."""
    out = {}
    types = {i.name: i.type.tensor_type.elem_type for i in model.graph.input}
    for name, value in feeds.items():
        t = types.get(name)
        if t in (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16):
            value = np.asarray(value).astype(onnx.helper.tensor_dtype_to_np_dtype(t))
        out[name] = value
    return out


def _is_float(a: Any) -> bool:
    return isinstance(a, np.ndarray) and a.dtype in (np.float32, np.float64)


def _magnitude(a: np.ndarray) -> float:
    """Largest finite magnitude of ``a`` (0 when none): inf and NaN are themselves in float16 and bfloat16,
    so only finite values can fall outside a format's range."""
    f = np.abs(np.asarray(a, dtype=np.float64))
    f = f[np.isfinite(f)]
    return float(f.max()) if f.size else 0.0


def relative_error(low: np.ndarray, high: np.ndarray) -> float:
    """``max |low - high| / max |high|`` in float64; inf where ``low`` is not finite but ``high`` is."""
    lo = np.asarray(low).astype(np.float64)
    hi = np.asarray(high).astype(np.float64)
    if lo.shape != hi.shape:
        return float("inf")
    finite = np.isfinite(hi)
    if (~np.isfinite(lo) & finite).any():
        return float("inf")
    if not finite.any():
        return 0.0
    scale = max(float(np.abs(hi[finite]).max()), np.finfo(np.float64).tiny)
    return float(np.abs(lo[finite] - hi[finite]).max() / scale)


def sum_bound(node: onnx.NodeProto, inputs: list[Any]) -> float | None:
    """A bound on the partial sums ``node`` forms (see module doc), None for other operators."""
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    op = node.op_type
    x = inputs[0] if inputs else None
    if not _is_float(x):
        return None
    x = x.astype(np.float64)
    if op in _REDUCE:
        axes = attrs.get("axes")
        if axes is None and len(inputs) > 1 and isinstance(inputs[1], np.ndarray) and inputs[1].size:
            axes = inputs[1].tolist()
        axes = tuple(int(a) for a in axes) if axes else None
        terms = x * x if op in ("ReduceL2", "ReduceSumSquare") else np.abs(x)
        return _magnitude(np.sum(terms, axis=axes)) if terms.size else 0.0
    if op in ("MatMul", "Gemm") and len(inputs) > 1 and _is_float(inputs[1]):
        a, b = np.abs(x), np.abs(inputs[1].astype(np.float64))
        if op == "Gemm":
            a = a.T if attrs.get("transA") else a
            b = b.T if attrs.get("transB") else b
        return _magnitude(np.matmul(a, b))
    if op == "LayerNormalization":
        axis = attrs.get("axis", -1) % max(x.ndim, 1)
        axes = tuple(range(axis, x.ndim))
        d = x - x.mean(axis=axes, keepdims=True)
        return _magnitude(np.sum(d * d, axis=axes))
    return None


def simulate(node: onnx.NodeProto, inputs: list[Any], opsets: list[onnx.OperatorSetIdProto],
             dtype: np.dtype) -> list[np.ndarray] | None:
    """Run ``node`` alone in the reference evaluator with its float inputs rounded to ``dtype``."""
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
        return None
    names = [f"in{i}" if n else "" for i, n in enumerate(node.input)]
    outs = [f"out{i}" if n else "" for i, n in enumerate(node.output)]
    single = onnx.helper.make_node(node.op_type, names, outs, domain=node.domain)
    single.attribute.extend(node.attribute)
    feeds = {}
    with np.errstate(over="ignore"):  # values beyond the format's range become inf, as they would
        for name, value in zip(names, inputs):
            if name:
                feeds[name] = value.astype(dtype) if _is_float(value) else value
    graph = onnx.helper.make_graph([single], "node", [onnx.ValueInfoProto(name=n) for n in feeds],
                                   [onnx.ValueInfoProto(name=o) for o in outs if o])
    model = onnx.helper.make_model(graph, opset_imports=opsets)
    try:
        with np.errstate(all="ignore"):
            return ReferenceEvaluator(model).run(None, feeds)
    except Exception:  # an operator the reference cannot run on these types: no measure for this node
        return None


def measure(model: onnx.ModelProto, values: dict[str, np.ndarray], fmt: str) -> list[NodeMeasure]:
    """Measure every node of ``model`` (functions inlined, float32) on ``values`` (every tensor by name:
    inputs, initializers and intermediates, as the float32 model computes them)."""
    dtype, _, largest = FORMATS[fmt]
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    opsets = list(model.opset_import)
    result = []
    for node in model.graph.node:
        ins = [values.get(n, inits.get(n)) if n else None for n in node.input]
        outs = [values.get(n) for n in node.output]
        floats = [a for a in ins + outs if _is_float(a)]
        if not floats:
            continue
        m = NodeMeasure(node.name, node.op_type, range=max(_magnitude(a) for a in floats))
        m.sum = sum_bound(node, ins)
        if any(a is None for a, n in zip(ins, node.input) if n) or not any(_is_float(o) for o in outs):
            result.append(m)
            continue
        low = simulate(node, ins, opsets, dtype)
        if low is not None:
            errs = [relative_error(lo, hi) for lo, hi in zip(low, outs) if _is_float(hi)]
            m.error = max(errs) if errs else None
        result.append(m)
    return result


def decide(measures: list[NodeMeasure], fmt: str, max_error: float) -> list[NodeMeasure]:
    """The nodes that must stay float32, each with its reason filled in."""
    _, _, largest = FORMATS[fmt]
    keep = []
    for m in measures:
        if m.range > largest:
            m.reason = f"values reach {m.range:.4g}, beyond the {fmt} range ({largest:.4g})"
        elif m.sum is not None and m.sum > largest:
            m.reason = f"its intermediate sums reach {m.sum:.4g}, beyond the {fmt} range ({largest:.4g})"
        elif m.error is not None and m.error > max_error:
            m.reason = f"in {fmt} it loses {m.error:.2g} of its output's scale (more than {max_error:g})"
        if m.reason:
            keep.append(m)
    return keep

"""Small graph formulas the scikit-learn adapters share: constants, column picks, labels from scores,
distances and kernels, each in scikit-learn's operation order.

Sources: ``sklearn.metrics.pairwise`` (scikit-learn 1.9: ``euclidean_distances`` is
``-2 X @ Y.T + |x|^2 + |y|^2`` clipped at 0, ``rbf_kernel`` is ``exp(-gamma * d^2)`` of it,
``polynomial_kernel`` ``(gamma X @ Y.T + coef0)^degree``, ``sigmoid_kernel`` ``tanh(gamma X @ Y.T + coef0)``,
``laplacian_kernel`` ``exp(-gamma |x - y|_1)``), ``sklearn.utils.extmath`` (``softmax``, ``row_norms``), the
ONNX operator specs (``MatMul``, ``ReduceSumSquare``, ``Softmax`` opset 13+).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir

from onegraph.emit import BOOL, DOUBLE, INT64, GraphBuilder
from onegraph.errors import ExportError

__all__ = ["f64", "i64", "flat", "columns", "column", "binary_pair", "positive_index", "argmax_index",
           "softmax", "normalize_rows", "add_all", "sq_norms", "euclidean", "sq_direct", "manhattan",
           "kernel", "one_hot_labels", "pad_columns", "expit_pair", "nan_to_zero", "gamma_of", "inverse_link",
           "log1p", "expm1", "logsumexp"]


def f64(g: GraphBuilder, value: Any, hint: str = "c") -> ir.Value:
    """A float64 constant."""
    return g.const(np.asarray(value, np.float64), hint)


def i64(g: GraphBuilder, value: Any, hint: str = "i") -> ir.Value:
    """An int64 constant."""
    return g.const(np.asarray(value, np.int64), hint)


def flat(g: GraphBuilder, v: ir.Value, dtype: ir.DataType = DOUBLE) -> ir.Value:
    """``v`` reshaped to ``[N]``."""
    out = g.op("Reshape", v, i64(g, [-1], "flat"), dtype=dtype)
    out.shape = ir.Shape(["N"])
    return out


def columns(g: GraphBuilder, x: ir.Value, index: Any, dtype: ir.DataType = DOUBLE) -> ir.Value:
    """``x[:, index]`` (``[N, len(index)]``)."""
    index = np.asarray(index, np.int64).reshape(-1)
    out = g.op("Gather", x, i64(g, index, "cols"), axis=1, dtype=dtype)
    out.shape = ir.Shape(["N", len(index)])
    return out


def column(g: GraphBuilder, x: ir.Value, j: int, dtype: ir.DataType = DOUBLE) -> ir.Value:
    """``x[:, j:j+1]`` (``[N, 1]``)."""
    return columns(g, x, [j], dtype)


def binary_pair(g: GraphBuilder, p: ir.Value) -> ir.Value:
    """``[1 - p, p]`` from ``p`` ``[N, 1]``."""
    out = g.op("Concat", g.op("Sub", f64(g, 1.0, "one"), p, dtype=DOUBLE), p, axis=1, dtype=DOUBLE)
    out.shape = ir.Shape(["N", 2])
    return out


def expit_pair(g: GraphBuilder, d: ir.Value) -> ir.Value:
    """``[1 - expit(d), expit(d)]``."""
    return binary_pair(g, g.op("Sigmoid", d, dtype=DOUBLE))


def positive_index(g: GraphBuilder, d: ir.Value) -> ir.Value:
    """``(d > 0)`` as class index ``[N]`` int64 (a binary decision function)."""
    return flat(g, g.op("Cast", g.op("Greater", d, f64(g, 0.0, "zero"), dtype=BOOL), to=INT64, dtype=INT64), INT64)


def argmax_index(g: GraphBuilder, scores: ir.Value) -> ir.Value:
    """``argmax(scores, axis=1)`` (the first of equal maxima, as numpy)."""
    return g.op("ArgMax", scores, axis=1, keepdims=0, select_last_index=0, dtype=INT64)


def softmax(g: GraphBuilder, z: ir.Value) -> ir.Value:
    """scikit-learn's ``softmax``: ``exp(z - max(z)) / sum(exp(z - max(z)))`` along rows."""
    axes = i64(g, [1], "axes")
    shifted = g.op("Sub", z, g.op("ReduceMax", z, axes, keepdims=1, dtype=DOUBLE), dtype=DOUBLE)
    e = g.op("Exp", shifted, dtype=DOUBLE)
    return g.op("Div", e, g.op("ReduceSum", e, axes, keepdims=1, dtype=DOUBLE), dtype=DOUBLE)


def normalize_rows(g: GraphBuilder, p: ir.Value) -> ir.Value:
    """``p / p.sum(axis=1, keepdims=True)``."""
    return g.op("Div", p, g.op("ReduceSum", p, i64(g, [1], "axes"), keepdims=1, dtype=DOUBLE), dtype=DOUBLE)


def add_all(g: GraphBuilder, values: list[ir.Value]) -> ir.Value:
    """``((v0 + v1) + v2) + ...``: Python's ``sum`` order."""
    total = values[0]
    for v in values[1:]:
        total = g.op("Add", total, v, dtype=DOUBLE)
    return total


def nan_to_zero(g: GraphBuilder, v: ir.Value) -> ir.Value:
    return g.op("Where", g.op("IsNaN", v, dtype=BOOL), f64(g, 0.0, "zero"), v, dtype=DOUBLE)


def sq_norms(g: GraphBuilder, x: ir.Value) -> ir.Value:
    """``row_norms(x, squared=True)[:, None]``: ``[N, 1]``."""
    return g.op("ReduceSumSquare", x, i64(g, [1], "axes"), keepdims=1, dtype=DOUBLE)


def euclidean(g: GraphBuilder, x: ir.Value, y: np.ndarray, squared: bool = False) -> ir.Value:
    """``euclidean_distances(x, y)`` ``[N, M]``: ``max(-2 x @ y.T + |x|^2 + |y|^2, 0)``, then ``sqrt``."""
    y = np.asarray(y, np.float64)
    yy = np.einsum("ij,ij->i", y, y)[None, :]
    d = g.op("MatMul", x, g.const(np.ascontiguousarray(y.T), "y_t"), dtype=DOUBLE)
    d = g.op("Mul", f64(g, -2.0, "minus_two"), d, dtype=DOUBLE)
    d = g.op("Add", d, sq_norms(g, x), dtype=DOUBLE)
    d = g.op("Add", d, g.const(yy, "y_norms"), dtype=DOUBLE)
    d = g.op("Max", d, f64(g, 0.0, "zero"), dtype=DOUBLE)
    if not squared:
        d = g.op("Sqrt", d, dtype=DOUBLE)
    d.shape = ir.Shape(["N", len(y)])
    return d


def _differences(g: GraphBuilder, x: ir.Value, y: np.ndarray) -> ir.Value:
    """``x[:, None, :] - y[None, :, :]``: ``[N, M, F]``."""
    x3 = g.op("Unsqueeze", x, i64(g, [1], "axis1"), dtype=DOUBLE)
    return g.op("Sub", x3, g.const(np.asarray(y, np.float64)[None, :, :], "points"), dtype=DOUBLE)


def sq_direct(g: GraphBuilder, x: ir.Value, y: np.ndarray) -> ir.Value:
    """``sum_f (x_f - y_f)^2`` ``[N, M]``: scipy's ``cdist(..., "sqeuclidean")`` and the squared distances of
    scikit-learn's KD / ball trees (no cancellation, unlike :func:`euclidean`)."""
    out = g.op("ReduceSumSquare", _differences(g, x, y), i64(g, [2], "axis2"), keepdims=0, dtype=DOUBLE)
    out.shape = ir.Shape(["N", len(y)])
    return out


def manhattan(g: GraphBuilder, x: ir.Value, y: np.ndarray) -> ir.Value:
    """``sum_f |x_f - y_f|`` ``[N, M]``."""
    d = g.op("Abs", _differences(g, x, y), dtype=DOUBLE)
    return g.op("ReduceSum", d, i64(g, [2], "axis2"), keepdims=0, dtype=DOUBLE)


def gamma_of(gamma: Any, n_features: int) -> float:
    return 1.0 / n_features if gamma is None else float(gamma)


def kernel(g: GraphBuilder, x: ir.Value, y: np.ndarray, metric: Any, *, gamma: Any = None, degree: Any = 3,
           coef0: Any = 1, what: str = "the model") -> ir.Value:
    """``pairwise_kernels(x, y, metric)`` ``[N, M]`` for scikit-learn's named kernels."""
    y = np.asarray(y, np.float64)
    if metric == "linear":
        return g.op("MatMul", x, g.const(np.ascontiguousarray(y.T), "y_t"), dtype=DOUBLE)
    gam = f64(g, gamma_of(gamma, y.shape[1]), "gamma")
    if metric == "rbf":
        d = euclidean(g, x, y, squared=True)
        return g.op("Exp", g.op("Mul", d, g.op("Neg", gam, dtype=DOUBLE), dtype=DOUBLE), dtype=DOUBLE)
    if metric in ("poly", "polynomial", "sigmoid"):
        k = g.op("MatMul", x, g.const(np.ascontiguousarray(y.T), "y_t"), dtype=DOUBLE)
        k = g.op("Add", g.op("Mul", k, gam, dtype=DOUBLE), f64(g, coef0, "coef0"), dtype=DOUBLE)
        if metric == "sigmoid":
            return g.op("Tanh", k, dtype=DOUBLE)
        return g.op("Pow", k, f64(g, degree, "degree"), dtype=DOUBLE)
    if metric == "laplacian":
        k = g.op("Mul", g.op("Neg", gam, dtype=DOUBLE), manhattan(g, x, y), dtype=DOUBLE)
        return g.op("Exp", k, dtype=DOUBLE)
    raise ExportError(f"{what}: kernel {metric!r} cannot be exported",
                      hint="use kernel 'linear', 'rbf', 'poly', 'sigmoid' or 'laplacian'")


def one_hot_labels(g: GraphBuilder, label: ir.Value, classes: Any) -> ir.Value:
    """``(label[:, None] == classes[None, :])`` as bool ``[N, K]``."""
    table = np.asarray(classes)
    if table.dtype.kind in "OUS":
        const = g.const(np.asarray([[str(c) for c in table]], dtype=object), "classes")
    else:
        const = g.const(table.reshape(1, -1).astype(np.int64 if table.dtype.kind in "iub" else np.float64),
                        "classes")
        if table.dtype.kind in "iub" and label.dtype != INT64:
            label = g.op("Cast", label, to=INT64, dtype=INT64)
    col = g.op("Unsqueeze", label, i64(g, [1], "axis1"), dtype=label.dtype)
    return g.op("Equal", col, const, dtype=BOOL)


def pad_columns(g: GraphBuilder, p: ir.Value, present: Any, width: int) -> ir.Value:
    """``out = zeros([N, width]); out[:, present] = p`` (a member that saw only some classes)."""
    present = [int(i) for i in present]
    if present == list(range(width)):
        return p
    zero = g.op("Mul", column(g, p, 0), f64(g, 0.0, "zero"), dtype=DOUBLE)
    parts = [column(g, p, present.index(j)) if j in present else zero for j in range(width)]
    out = g.op("Concat", *parts, axis=1, dtype=DOUBLE)
    out.shape = ir.Shape(["N", width])
    return out


def inverse_link(g: GraphBuilder, link: Any, raw: ir.Value, what: str = "the model") -> ir.Value:
    """``link.inverse(raw)`` for scikit-learn's link objects (``sklearn._loss.link``, 1.9): identity, ``exp``
    (``LogLink``), ``expit`` (``LogitLink``), ``expit(2 raw)`` (``HalfLogitLink``), ``softmax``
    (``MultinomialLogit``)."""
    name = type(link).__name__
    if name == "IdentityLink":
        return raw
    if name == "LogLink":
        return g.op("Exp", raw, dtype=DOUBLE)
    if name == "LogitLink":
        return g.op("Sigmoid", raw, dtype=DOUBLE)
    if name == "HalfLogitLink":
        return g.op("Sigmoid", g.op("Mul", f64(g, 2.0, "two"), raw, dtype=DOUBLE), dtype=DOUBLE)
    if name == "MultinomialLogit":
        return softmax(g, raw)
    raise ExportError(f"{what}: link function {name} cannot be exported")


def log1p(g: GraphBuilder, x: ir.Value) -> ir.Value:
    """``log1p`` to within a few ulps: ``u = 1 + x``; ``x`` where ``u == 1``, else ``log(u) * x / (u - 1)``
    (Kahan's correction; Goldberg, "What every computer scientist should know about floating-point", 1991).
    ``log(1 + x)`` alone loses the digits of ``x`` that ``1 + x`` rounds away."""
    one = g.const(np.float64(1.0), "one")
    u = g.op("Add", x, one, dtype=DOUBLE)
    um1 = g.op("Sub", u, one, dtype=DOUBLE)
    corrected = g.op("Div", g.op("Mul", g.op("Log", u, dtype=DOUBLE), x, dtype=DOUBLE), um1, dtype=DOUBLE)
    # x where 1 + x == 1, and at +inf (where the correction gives inf / inf)
    keep = g.op("Or", g.op("Equal", u, one, dtype=BOOL), g.op("IsInf", x, detect_negative=0, dtype=BOOL), dtype=BOOL)
    return g.op("Where", keep, x, corrected, dtype=DOUBLE)


def expm1(g: GraphBuilder, x: ir.Value) -> ir.Value:
    """``expm1`` by Kahan's correction: ``u = exp(x)``; ``x`` where ``u == 1``; ``-1`` where ``u - 1 == -1``;
    else ``(u - 1) * x / log(u)``."""
    one = g.const(np.float64(1.0), "one")
    u = g.op("Exp", x, dtype=DOUBLE)
    um1 = g.op("Sub", u, one, dtype=DOUBLE)
    corrected = g.op("Div", g.op("Mul", um1, x, dtype=DOUBLE), g.op("Log", u, dtype=DOUBLE), dtype=DOUBLE)
    saturated = g.op("Equal", um1, g.const(np.float64(-1.0), "minus_one"), dtype=BOOL)
    corrected = g.op("Where", saturated, um1, corrected, dtype=DOUBLE)
    return g.op("Where", g.op("Equal", u, one, dtype=BOOL), x, corrected, dtype=DOUBLE)


def logsumexp(g: GraphBuilder, a: ir.Value) -> ir.Value:
    """scikit-learn's ``_logsumexp(a, axis=1)`` (``utils._array_api``, after scipy's): the maxima (``m`` of
    them) set aside, ``s = sum(exp(a - max))`` of the rest, ``log1p(s / m) + log(m) + max``; ``[N, 1]``."""
    axes = i64(g, [1], "axes")
    top = g.op("ReduceMax", a, axes, keepdims=1, dtype=DOUBLE)
    is_max = g.op("Equal", a, top, dtype=BOOL)
    m = g.op("ReduceSum", g.op("Cast", is_max, to=DOUBLE, dtype=DOUBLE), axes, keepdims=1, dtype=DOUBLE)
    rest = g.op("Where", is_max, f64(g, -np.inf, "minus_inf"), a, dtype=DOUBLE)
    finite = g.op("Not", g.op("IsInf", top, dtype=BOOL), dtype=BOOL)
    shift = g.op("Where", finite, top, f64(g, 0.0, "zero"), dtype=DOUBLE)
    s = g.op("ReduceSum", g.op("Exp", g.op("Sub", rest, shift, dtype=DOUBLE), dtype=DOUBLE), axes, keepdims=1,
             dtype=DOUBLE)
    s = g.op("Where", g.op("Equal", s, f64(g, 0.0, "zero"), dtype=BOOL), s, g.op("Div", s, m, dtype=DOUBLE),
             dtype=DOUBLE)
    out = g.op("Add", g.op("Add", log1p(g, s), g.op("Log", m, dtype=DOUBLE), dtype=DOUBLE), top, dtype=DOUBLE)
    return out

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

__all__ = [
    "add_all",
    "affine",
    "argmax_index",
    "binary_pair",
    "broadcast_rows",
    "column",
    "columns",
    "erf",
    "euclidean",
    "expit",
    "expit_pair",
    "expm1",
    "f64",
    "flat",
    "gamma_of",
    "i64",
    "inverse_link",
    "kernel",
    "log1p",
    "logsumexp",
    "manhattan",
    "nan_to_zero",
    "normalize_rows",
    "one_hot_labels",
    "pad_columns",
    "positive_index",
    "side_by_side",
    "softmax",
    "sq_direct",
    "sq_norms",
    "threshold_index",
]


def affine(g: GraphBuilder, x: ir.Value, weight: np.ndarray, bias: np.ndarray, weight_name: str = "coef",
           bias_name: str = "intercept") -> ir.Value:
    """``x @ weight + bias`` as one ``Gemm`` (ONNX ``Gemm``: ``Y = A B + C``, ``C`` broadcast over the rows).

    ``x``: ``[N, F]`` double; ``weight``: ``[F, K]``; ``bias``: ``[K]`` (or a scalar); result ``[N, K]`` double.
    One node where ``MatMul`` + ``Add`` are two: each node costs onnxruntime about a microsecond per call,
    which single-row scoring pays. The sums are the same; onnxruntime's double ``Gemm`` adds the bias before
    the last blocks of a long dot product (``F`` above ~128 on onnxruntime 1.32), so those results may differ
    from ``MatMul`` + ``Add`` in the last bits (relative 1e-16 measured at ``F`` = 1,024).
    """
    w = g.const(np.ascontiguousarray(np.asarray(weight, np.float64)), weight_name)
    return g.op("Gemm", x, w, g.const(np.atleast_1d(np.asarray(bias, np.float64)), bias_name), dtype=DOUBLE)


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


def expit(g: GraphBuilder, x: ir.Value) -> ir.Value:
    """scipy's ``expit``: ``1 / (1 + exp(-x))`` in double, element-wise.

    Not ONNX ``Sigmoid``: onnxruntime's double kernel (1.32) loses the relative precision of small values
    (``Sigmoid(-20)`` is 3.6e-8 relative off, ``Sigmoid(-37)`` is 0 where scipy gives 8.5e-17), so a
    probability's ``log`` became ``-inf``. ``Exp`` is exact to 1 ulp; ``exp(746)`` overflows to ``inf`` and the
    value to 0, as scipy's.
    """
    e = g.op("Exp", g.op("Neg", x, dtype=DOUBLE), dtype=DOUBLE)
    out = g.op("Div", f64(g, 1.0, "one"), g.op("Add", f64(g, 1.0, "one"), e, dtype=DOUBLE), dtype=DOUBLE)
    out.shape = x.shape
    return out


def expit_pair(g: GraphBuilder, d: ir.Value) -> ir.Value:
    """``[1 - expit(d), expit(d)]``."""
    return binary_pair(g, expit(g, d))


def positive_index(g: GraphBuilder, d: ir.Value) -> ir.Value:
    """``(d > 0)`` as class index ``[N]`` int64 (a binary decision function)."""
    return flat(g, g.op("Cast", g.op("Greater", d, f64(g, 0.0, "zero"), dtype=BOOL), to=INT64, dtype=INT64), INT64)


def threshold_index(g: GraphBuilder, score: ir.Value, threshold: float, pos: int, neg: int) -> ir.Value:
    """Class index ``[N]`` int64: ``pos`` where ``score`` (``[N]`` or ``[N, 1]`` double) ``>= threshold``, ``neg``
    elsewhere, NaN included (scikit-learn's ``_threshold_scores_to_class_labels``)."""
    if score.shape is None or len(score.shape) != 1:
        score = flat(g, score)
    hit = g.op("GreaterOrEqual", score, f64(g, threshold, "threshold"), dtype=BOOL)
    return g.op("Where", hit, i64(g, pos, "pos"), i64(g, neg, "neg"), dtype=INT64)


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


def euclidean(g: GraphBuilder, x: ir.Value, y: np.ndarray, squared: bool = False, y_first: bool = False) -> ir.Value:
    """``euclidean_distances(x, y)`` ``[N, M]``: ``max(-2 x @ y.T + |x|^2 + |y|^2, 0)``, then ``sqrt``;
    ``y_first``: ``euclidean_distances(y, x).T`` (``|y|^2`` added first)."""
    y = np.asarray(y, np.float64)
    yy = np.einsum("ij,ij->i", y, y)[None, :]
    d = g.op("MatMul", x, g.const(np.ascontiguousarray(y.T), "y_t"), dtype=DOUBLE)
    d = g.op("Mul", f64(g, -2.0, "minus_two"), d, dtype=DOUBLE)
    terms = [g.const(yy, "y_norms"), sq_norms(g, x)] if y_first else [sq_norms(g, x), g.const(yy, "y_norms")]
    for t in terms:
        d = g.op("Add", d, t, dtype=DOUBLE)
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
        return expit(g, raw)
    if name == "HalfLogitLink":
        return expit(g, g.op("Mul", f64(g, 2.0, "two"), raw, dtype=DOUBLE))
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


def side_by_side(g: GraphBuilder, values: list[ir.Value]) -> ir.Value:
    """``[N]`` double values as the columns of ``[N, len(values)]``."""
    axis1 = i64(g, [1], "axis1")
    out = g.op("Concat", *[g.op("Unsqueeze", v, axis1, dtype=DOUBLE) for v in values], axis=1, dtype=DOUBLE)
    out.shape = ir.Shape(["N", len(values)])
    return out


def broadcast_rows(g: GraphBuilder, x: ir.Value, row: np.ndarray) -> ir.Value:
    """``row`` (``[k]``) repeated for each row of ``x``: ``[N, k]`` (whatever ``x`` holds, NaN included)."""
    row = np.asarray(row).reshape(1, -1)
    n = g.op("Shape", x, start=0, end=1, dtype=INT64)
    shape = g.op("Concat", n, i64(g, [row.shape[1]], "width"), axis=0, dtype=INT64)
    const = g.const(row, "row")
    return g.op("Expand", const, shape, dtype=const.dtype)


# Cephes ``ndtr.c`` (S. L. Moshier, as in scipy.special's ``xsf/cephes/ndtr.h``): erf on |x| <= 1, erfc above
_ERF_T = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3, 7.00332514112805075473E3,
          5.55923013010394962768E4)
_ERF_U = (3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3, 2.26290000613890934246E4,
          4.92673942608635921086E4)
_ERFC_P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
           4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2, 9.34528527171957607540E2,
           1.02755188689515710272E3, 5.57535335369399327526E2)
_ERFC_Q = (1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2, 9.75708501743205489753E2,
           1.82390916687909736289E3, 2.24633760818710981792E3, 1.65666309194161350182E3, 5.57535340817727675546E2)
_ERFC_R = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0, 6.16021097993053585195E0,
           7.40974269950448939160E0, 2.97886665372100240670E0)
_ERFC_S = (2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1, 1.70814450747565897222E1,
           9.60896809063285878198E0, 3.36907645100081516050E0)


def _polevl(g: GraphBuilder, x: ir.Value, coefs: tuple, leading_one: bool = False) -> ir.Value:
    """Cephes ``polevl`` / ``p1evl``: Horner's scheme, highest degree first."""
    acc = g.op("Add", x, f64(g, coefs[0], "c"), dtype=DOUBLE) if leading_one else \
        g.op("Add", g.op("Mul", x, f64(g, 0.0, "zero"), dtype=DOUBLE), f64(g, coefs[0], "c"), dtype=DOUBLE)
    for c in coefs[1:]:
        acc = g.op("Add", g.op("Mul", acc, x, dtype=DOUBLE), f64(g, c, "c"), dtype=DOUBLE)
    return acc


def erf(g: GraphBuilder, x: ir.Value) -> ir.Value:
    """``scipy.special.erf`` in double (onnxruntime's ``Erf`` has no double kernel): Cephes' ``erf``:
    ``x T(x^2) / U(x^2)`` for ``|x| <= 1``, else ``1 - erfc(|x|)`` signed, ``erfc(a) = exp(-a^2) P(a) / Q(a)``
    (``a < 8``) or ``R(a) / S(a)`` (``a >= 8``), 0 past ``MAXLOG``."""
    a = g.op("Abs", x, dtype=DOUBLE)
    z = g.op("Mul", x, x, dtype=DOUBLE)
    small = g.op("Div", g.op("Mul", x, _polevl(g, z, _ERF_T), dtype=DOUBLE), _polevl(g, z, _ERF_U, True),
                 dtype=DOUBLE)
    e = g.op("Exp", g.op("Neg", z, dtype=DOUBLE), dtype=DOUBLE)
    mid = g.op("Div", g.op("Mul", e, _polevl(g, a, _ERFC_P), dtype=DOUBLE), _polevl(g, a, _ERFC_Q, True),
               dtype=DOUBLE)
    far = g.op("Div", g.op("Mul", e, _polevl(g, a, _ERFC_R), dtype=DOUBLE), _polevl(g, a, _ERFC_S, True),
               dtype=DOUBLE)
    erfc = g.op("Where", g.op("Less", a, f64(g, 8.0, "eight"), dtype=BOOL), mid, far, dtype=DOUBLE)
    erfc = g.op("Where", g.op("Greater", z, f64(g, 7.09782712893383996843E2, "maxlog"), dtype=BOOL),
                f64(g, 0.0, "zero"), erfc, dtype=DOUBLE)
    big = g.op("Sub", f64(g, 1.0, "one"), erfc, dtype=DOUBLE)
    big = g.op("Where", g.op("Less", x, f64(g, 0.0, "zero"), dtype=BOOL), g.op("Neg", big, dtype=DOUBLE), big,
               dtype=DOUBLE)
    out = g.op("Where", g.op("Greater", a, f64(g, 1.0, "one"), dtype=BOOL), big, small, dtype=DOUBLE)
    return g.op("Where", g.op("IsNaN", x, dtype=BOOL), x, out, dtype=DOUBLE)

"""scikit-learn's element-wise and basis-expansion preprocessing -> graph in double precision.

Each follows its ``transform`` in scikit-learn 1.9:

* ``PolynomialFeatures`` (dense path): the bias column, ``X``, then per degree the blocks
  ``XP[:, start:end] * X[:, f]`` (``interaction_only`` skips the squares), the same products in the same
  order; ``min_degree > 1`` keeps the trailing columns;
* ``SplineTransformer``: per feature the B-spline basis of ``bsplines_[i]`` (scipy's ``BSpline`` with an
  identity coefficient matrix: ``_deBoor_D`` on the interval ``t[l] <= x < t[l + 1]``); ``extrapolation``
  ``"constant"`` (rows outside ``[t[k], t[-k-1]]`` take the boundary values on the first / last ``degree``
  splines) or ``"continue"``;
* ``QuantileTransformer`` (uniform output): ``0.5 * (interp(x, quantiles, references) - interp(-x,
  -quantiles[::-1], -references[::-1]))``, 1 at the top quantile and 0 at the bottom one; ``interp`` is
  numpy's (``np.interp``: ``slope * (x - xp[j]) + fp[j]`` on the last ``j`` with ``xp[j] <= x``, ``fp[j]``
  where ``xp[j] == x``, the end values outside);
* ``Normalizer``: ``X / norms`` (``l2``: ``sqrt(sum x^2)``, ``l1``: ``sum |x|``, ``max``: ``max |x|``; 1
  where the norm is 0);
* ``Binarizer``: ``X > threshold`` as 0 / 1;
* ``TfidfTransformer``: ``X * idf_`` (``log(X) + 1`` first with ``sublinear_tf``), rows normalized as
  ``Normalizer``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.feature_extraction.text as fet
import sklearn.preprocessing as skp

from onegraph.emit import BOOL, DOUBLE, INT64, Col, GraphBuilder, register_emitter
from onegraph.errors import ExportError
from onegraph.export.adapters.discriminant import feature_block
from onegraph.export.adapters.ops import column, f64, i64

__all__ = ["emit_polynomial", "emit_spline", "interp", "emit_quantile", "row_normalize", "emit_normalizer",
           "emit_binarizer", "emit_tfidf_transformer"]


@register_emitter(skp.PolynomialFeatures)
def emit_polynomial(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = g.matrix(cols, DOUBLE)
    n = len(cols)
    ones = g.op("Add", g.op("Mul", column(g, x, 0), f64(g, 0.0, "zero"), dtype=DOUBLE), f64(g, 1.0, "one"),
                dtype=DOUBLE)
    pieces: list[ir.Value] = [ones] if est.include_bias else []
    current = 1 if est.include_bias else 0
    if est._max_degree > 0:
        pieces.append(x)
        index = list(range(current, current + n))
        current += n
        index.append(current)
        for _ in range(2, est._max_degree + 1):
            xp = g.op("Concat", *pieces, axis=1, dtype=DOUBLE) if len(pieces) > 1 else pieces[0]
            new_index, end = [], index[-1]
            for f in range(n):
                start = index[f]
                new_index.append(current)
                if est.interaction_only:
                    start += index[f + 1] - index[f]
                nxt = current + end - start
                if nxt <= current:
                    break
                block = g.op("Slice", xp, i64(g, [start], "start"), i64(g, [end], "end"), i64(g, [1], "axes"),
                             dtype=DOUBLE)
                pieces.append(g.op("Mul", block, column(g, x, f), dtype=DOUBLE))
                current = nxt
            new_index.append(current)
            index = new_index
    y = g.op("Concat", *pieces, axis=1, dtype=DOUBLE) if len(pieces) > 1 else pieces[0]
    if est._min_degree > 1:
        n_full, n_out = est._n_out_full, est.n_output_features_
        keep = ([0] if est.include_bias else []) + list(range(n_full - n_out + (1 if est.include_bias else 0),
                                                              n_full))
        y = g.op("Gather", y, i64(g, keep, "keep"), axis=1, dtype=DOUBLE)
    return feature_block(g, est, y, cols)


def _spline_basis(g: GraphBuilder, x: ir.Value, t: np.ndarray, k: int, n_splines: int) -> ir.Value:
    """scipy's B-spline basis values at ``x`` ``[N, 1]`` (``_find_interval`` + ``_deBoor_D``): ``[N, n_splines]``."""
    n = len(t) - k - 1
    inner = np.asarray(t[k:n], np.float64).reshape(1, -1)  # t[k] .. t[n - 1]
    below = g.op("Cast", g.op("LessOrEqual", g.const(inner, "knots"), x, dtype=BOOL), to=INT64, dtype=INT64)
    count = g.op("ReduceSum", below, i64(g, [1], "axes"), keepdims=1, dtype=INT64)
    ell = g.op("Clip", g.op("Add", count, i64(g, k - 1, "k_minus_1"), dtype=INT64), i64(g, k, "k"),
               i64(g, n - 1, "n_minus_1"), dtype=INT64)  # [N, 1]
    knots = g.const(np.asarray(t, np.float64), "t")

    def knot(offset: int) -> ir.Value:
        return g.op("Gather", knots, g.op("Add", ell, i64(g, offset, "offset"), dtype=INT64), axis=0, dtype=DOUBLE)

    zero = f64(g, 0.0, "zero")
    h = [g.op("Add", g.op("Mul", x, zero, dtype=DOUBLE), f64(g, 1.0, "one"), dtype=DOUBLE)]
    for j in range(1, k + 1):
        hh = list(h)
        h = [zero] + [None] * j
        h[0] = g.op("Mul", x, zero, dtype=DOUBLE)
        for m in range(1, j + 1):
            xb, xa = knot(m), knot(m - j)
            width = g.op("Sub", xb, xa, dtype=DOUBLE)
            same = g.op("Equal", xb, xa, dtype=BOOL)
            w = g.op("Div", hh[m - 1], g.op("Where", same, f64(g, 1.0, "one"), width, dtype=DOUBLE), dtype=DOUBLE)
            add = g.op("Add", h[m - 1], g.op("Mul", w, g.op("Sub", xb, x, dtype=DOUBLE), dtype=DOUBLE), dtype=DOUBLE)
            h[m - 1] = g.op("Where", same, h[m - 1], add, dtype=DOUBLE)
            h[m] = g.op("Where", same, zero, g.op("Mul", w, g.op("Sub", x, xa, dtype=DOUBLE), dtype=DOUBLE),
                        dtype=DOUBLE)
    values = g.op("Concat", *h, axis=1, dtype=DOUBLE)  # B_{l-k} .. B_l
    positions = g.op("Add", ell, i64(g, np.arange(-k, 1).reshape(1, -1), "window"), dtype=INT64)
    zeros = g.op("Mul", g.op("Expand", x, g.const(np.array([1, n_splines], np.int64), "width"), dtype=DOUBLE), zero,
                 dtype=DOUBLE)
    return g.op("ScatterElements", zeros, positions, values, axis=1, dtype=DOUBLE)


@register_emitter(skp.SplineTransformer)
def emit_spline(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    if est.extrapolation not in ("constant", "continue"):
        raise ExportError(f"SplineTransformer(extrapolation={est.extrapolation!r}) cannot be exported yet",
                          hint="use extrapolation='constant' or 'continue'")
    x = g.matrix(cols, DOUBLE)
    degree = est.degree
    parts = []
    for i, spl in enumerate(est.bsplines_):
        xi = column(g, x, i)
        n_splines = spl.c.shape[1]
        t = np.asarray(spl.t, np.float64)
        if est.extrapolation == "continue":
            basis = _spline_basis(g, xi, t, spl.k, n_splines)
        else:
            xmin, xmax = t[degree], t[-degree - 1]
            f_min, f_max = spl(xmin), spl(xmax)
            inside = g.op("And", g.op("LessOrEqual", f64(g, xmin, "xmin"), xi, dtype=BOOL),
                          g.op("LessOrEqual", xi, f64(g, xmax, "xmax"), dtype=BOOL), dtype=BOOL)
            safe = g.op("Where", inside, xi, f64(g, xmin, "xmin"), dtype=DOUBLE)
            basis = g.op("Where", inside, _spline_basis(g, safe, t, spl.k, n_splines), f64(g, 0.0, "zero"),
                         dtype=DOUBLE)
            low = np.zeros(n_splines)
            low[:degree] = f_min[:degree]
            high = np.zeros(n_splines)
            high[-degree:] = f_max[-degree:]
            below = g.op("Less", xi, f64(g, xmin, "xmin"), dtype=BOOL)
            above = g.op("Greater", xi, f64(g, xmax, "xmax"), dtype=BOOL)
            if degree > 0:
                basis = g.op("Where", below, g.const(low.reshape(1, -1), "f_min"), basis, dtype=DOUBLE)
                basis = g.op("Where", above, g.const(high.reshape(1, -1), "f_max"), basis, dtype=DOUBLE)
        parts.append(basis)
    y = g.op("Concat", *parts, axis=1, dtype=DOUBLE) if len(parts) > 1 else parts[0]
    if not est.include_bias:
        n_splines = est.bsplines_[0].c.shape[1]
        keep = [j for j in range(n_splines * len(parts)) if (j + 1) % n_splines != 0]
        y = g.op("Gather", y, i64(g, keep, "keep"), axis=1, dtype=DOUBLE)
    return feature_block(g, est, y, cols)


def interp(g: GraphBuilder, x: ir.Value, xp: np.ndarray, fp: np.ndarray) -> ir.Value:
    """``np.interp`` column by column: ``x`` ``[N, F]``, ``xp`` / ``fp`` ``[Q, F]`` (``xp`` increasing);
    NaN stays NaN."""
    xp = np.asarray(xp, np.float64)
    fp = np.asarray(fp, np.float64)
    q = len(xp)
    x3 = g.op("Unsqueeze", x, i64(g, [1], "axis1"), dtype=DOUBLE)
    le = g.op("Cast", g.op("LessOrEqual", g.const(xp[None], "xp"), x3, dtype=BOOL), to=INT64, dtype=INT64)
    j = g.op("Sub", g.op("ReduceSum", le, i64(g, [1], "axes"), keepdims=0, dtype=INT64), i64(g, 1, "one_i"),
             dtype=INT64)  # [N, F]: last j with xp[j] <= x, -1 below
    jc = g.op("Clip", j, i64(g, 0, "zero_i"), i64(g, max(q - 2, 0), "q_minus_2"), dtype=INT64)
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = (fp[1:] - fp[:-1]) / (xp[1:] - xp[:-1]) if q > 1 else np.zeros((1, xp.shape[1]))

    def at(table: np.ndarray, idx: ir.Value, hint: str) -> ir.Value:
        return g.op("GatherElements", g.const(table, hint), idx, axis=0, dtype=DOUBLE)

    x_j, f_j = at(xp, jc, "xp"), at(fp, jc, "fp")
    nxt = g.op("Clip", g.op("Add", jc, i64(g, 1, "one_i"), dtype=INT64), i64(g, 0, "zero_i"), i64(g, q - 1, "q_1"),
               dtype=INT64)
    x_n, f_n = at(xp, nxt, "xp"), at(fp, nxt, "fp")
    slope = at(slopes, jc, "slopes")
    y = g.op("Add", g.op("Mul", slope, g.op("Sub", x, x_j, dtype=DOUBLE), dtype=DOUBLE), f_j, dtype=DOUBLE)
    y2 = g.op("Add", g.op("Mul", slope, g.op("Sub", x, x_n, dtype=DOUBLE), dtype=DOUBLE), f_n, dtype=DOUBLE)
    y = g.op("Where", g.op("IsNaN", y, dtype=BOOL), y2, y, dtype=DOUBLE)
    y = g.op("Where", g.op("And", g.op("IsNaN", y, dtype=BOOL), g.op("Equal", f_j, f_n, dtype=BOOL), dtype=BOOL),
             f_j, y, dtype=DOUBLE)
    y = g.op("Where", g.op("Equal", x_j, x, dtype=BOOL), f_j, y, dtype=DOUBLE)
    first, last = g.const(fp[:1], "fp_first"), g.const(fp[-1:], "fp_last")
    y = g.op("Where", g.op("GreaterOrEqual", j, i64(g, q - 1, "q_1"), dtype=BOOL), last, y, dtype=DOUBLE)
    y = g.op("Where", g.op("Less", j, i64(g, 0, "zero_i"), dtype=BOOL), first, y, dtype=DOUBLE)
    return g.op("Where", g.op("IsNaN", x, dtype=BOOL), x, y, dtype=DOUBLE)


@register_emitter(skp.QuantileTransformer)
def emit_quantile(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    if est.output_distribution != "uniform":
        raise ExportError("QuantileTransformer(output_distribution='normal') cannot be exported: its inverse "
                          "normal CDF has no ONNX operator", hint="use output_distribution='uniform'")
    x = g.matrix(cols, DOUBLE)
    q = np.asarray(est.quantiles_, np.float64)
    ref = np.repeat(np.asarray(est.references_, np.float64)[:, None], q.shape[1], axis=1)
    forward = interp(g, x, q, ref)
    backward = interp(g, g.op("Neg", x, dtype=DOUBLE), -q[::-1], -ref[::-1])
    y = g.op("Mul", f64(g, 0.5, "half"), g.op("Sub", forward, backward, dtype=DOUBLE), dtype=DOUBLE)
    y = g.op("Where", g.op("Equal", x, g.const(q[-1:], "q_max"), dtype=BOOL), f64(g, 1.0, "one"), y, dtype=DOUBLE)
    y = g.op("Where", g.op("Equal", x, g.const(q[:1], "q_min"), dtype=BOOL), f64(g, 0.0, "zero"), y, dtype=DOUBLE)
    return feature_block(g, est, y, cols)


def row_normalize(g: GraphBuilder, x: ir.Value, norm: str) -> ir.Value:
    """``normalize(X, norm)`` along rows (zero norms left at 1)."""
    axes = i64(g, [1], "axes")
    if norm == "l2":
        norms = g.op("Sqrt", g.op("ReduceSumSquare", x, axes, keepdims=1, dtype=DOUBLE), dtype=DOUBLE)
    elif norm == "l1":
        norms = g.op("ReduceSum", g.op("Abs", x, dtype=DOUBLE), axes, keepdims=1, dtype=DOUBLE)
    elif norm == "max":
        norms = g.op("ReduceMax", g.op("Abs", x, dtype=DOUBLE), axes, keepdims=1, dtype=DOUBLE)
    else:
        raise ExportError(f"norm {norm!r} cannot be exported")
    norms = g.op("Where", g.op("Equal", norms, f64(g, 0.0, "zero"), dtype=BOOL), f64(g, 1.0, "one"), norms,
                 dtype=DOUBLE)
    return g.op("Div", x, norms, dtype=DOUBLE)


@register_emitter(skp.Normalizer)
def emit_normalizer(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    return feature_block(g, est, row_normalize(g, g.matrix(cols, DOUBLE), est.norm), cols)


@register_emitter(skp.Binarizer)
def emit_binarizer(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = g.matrix(cols, DOUBLE)
    y = g.op("Cast", g.op("Greater", x, f64(g, est.threshold, "threshold"), dtype=BOOL), to=DOUBLE, dtype=DOUBLE)
    return feature_block(g, est, y, cols)


def tfidf_weights(g: GraphBuilder, est: Any, x: ir.Value) -> ir.Value:
    """``TfidfTransformer.transform`` on a dense count matrix ``x`` ``[N, V]``."""
    if est.sublinear_tf:
        nz = g.op("Not", g.op("Equal", x, f64(g, 0.0, "zero"), dtype=BOOL), dtype=BOOL)
        logged = g.op("Add", g.op("Log", g.op("Where", nz, x, f64(g, 1.0, "one"), dtype=DOUBLE), dtype=DOUBLE),
                      f64(g, 1.0, "one"), dtype=DOUBLE)
        x = g.op("Where", nz, logged, f64(g, 0.0, "zero"), dtype=DOUBLE)
    if est.use_idf:
        x = g.op("Mul", x, g.const(np.asarray(est.idf_, np.float64), "idf"), dtype=DOUBLE)
    if est.norm is not None:
        x = row_normalize(g, x, est.norm)
    return x


@register_emitter(fet.TfidfTransformer)
def emit_tfidf_transformer(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    return feature_block(g, est, tfidf_weights(g, est, g.matrix(cols, DOUBLE)), cols)

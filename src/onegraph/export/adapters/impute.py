"""scikit-learn's imputers beyond ``SimpleImputer`` -> graph in double precision.

Follows ``sklearn.impute`` (scikit-learn 1.9):

* ``MissingIndicator.transform``: ``X[:, features_]`` is missing (NaN, or ``== missing_values``), bool;
* ``KNNImputer.transform``: ``nan_euclidean_distances`` to ``_fit_X`` (``euclidean_distances`` of the
  zero-filled rows, minus the squares facing a missing value, clipped at 0, NaN without a common feature,
  divided by the count of common features, times ``n_features``, ``sqrt``); per column, a missing value takes
  the (``weights="distance"``: ``1 / d``-weighted) mean of the ``n_neighbors`` nearest fitted rows that hold
  the column (NaN distances last, weight 0), or the column's mean where no distance is defined
  (``_calc_impute``); a missing value whose donors tie at the ``n_neighbors``-th distance with different
  values is refused (scikit-learn's ``np.argpartition`` picks among them arbitrarily);
* ``IterativeImputer.transform``: ``initial_imputer_`` (a ``SimpleImputer``), then each of
  ``imputation_sequence_`` in order: the estimator's prediction from the other features, clipped to
  ``[_min_value, _max_value]``, replaces the missing values of its feature (``_impute_one_feature``).

``add_indicator`` appends the missing indicator as 0 / 1 columns (``_concatenate_indicator``).
"""

from __future__ import annotations

from typing import Any

import importlib

import numpy as np
import onnx_ir as ir
import sklearn.impute as ski

from onegraph.contract.columns import MISSING_STRING
from onegraph.emit import BOOL, DOUBLE, INT64, Col, GraphBuilder, register_emitter
from onegraph.errors import ExportError
from onegraph.export.adapters.choose import emit_model
from onegraph.export.adapters.ops import column, euclidean, f64, i64

__all__ = ["missing_mask", "emit_missing_indicator", "nan_euclidean", "emit_knn_imputer",
           "emit_iterative_imputer"]


def _is_nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def missing_mask(g: GraphBuilder, x: ir.Value, missing_values: Any) -> ir.Value:
    """Bool ``[N, F]``: where ``x`` holds the missing marker."""
    if _is_nan(missing_values):
        return g.op("IsNaN", x, dtype=BOOL)
    return g.op("Equal", x, f64(g, float(missing_values), "missing_value"), dtype=BOOL)


def _indicator(g: GraphBuilder, est: Any, x: ir.Value, cols: list[Col], as_double: bool) -> list[Col]:
    ind = est if isinstance(est, ski.MissingIndicator) else est.indicator_
    features = np.asarray(ind.features_, np.int64)
    if len(features) == 0:
        return []
    mask = g.op("Gather", missing_mask(g, x, ind.missing_values), i64(g, features, "features"), axis=1, dtype=BOOL)
    names = [str(n) for n in ind.get_feature_names_out([c.name for c in cols])]
    if as_double:
        return g.block(g.op("Cast", mask, to=DOUBLE, dtype=DOUBLE), names, "float", DOUBLE)
    return g.block(mask, names, "bool", BOOL)


@register_emitter(ski.MissingIndicator)
def emit_missing_indicator(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    """Bool columns ``missingindicator_<col>`` of the ``features_`` columns: numbers are missing where NaN (or
    ``== missing_values``); text where it holds the graph's missing text (None and NaN alike: the feeds write
    both so) or the ``missing_values`` string. Raises ExportError when fit found no column to flag."""
    if any(c.kind == "string" for c in cols):
        out = _mixed_indicator(g, est, cols)
    else:
        out = _indicator(g, est, g.matrix(cols, DOUBLE), cols, as_double=False)
    if not out:
        raise ExportError("MissingIndicator found no column with missing values in fit, so it outputs nothing",
                          hint="use features='all', or fit on rows holding missing values")
    return out


def _mixed_indicator(g: GraphBuilder, est: Any, cols: list[Col]) -> list[Col]:
    """MissingIndicator's columns over text and number columns, one column at a time."""
    names = [str(n) for n in est.get_feature_names_out([c.name for c in cols])]
    text_marker = MISSING_STRING if _is_nan(est.missing_values) else str(est.missing_values)
    out = []
    for name, i in zip(names, np.asarray(est.features_, np.int64)):
        col = cols[int(i)]
        if col.kind == "string":
            mask = g.op("Equal", g.vector(col), g.const(np.array(text_marker, dtype=object), "missing_value"),
                        dtype=BOOL)
            out.append(Col(name, "bool", mask, BOOL))
        else:
            out += g.block(missing_mask(g, g.matrix([col], DOUBLE), est.missing_values), [name], "bool", BOOL)
    return out


def nan_euclidean(g: GraphBuilder, x: ir.Value, fit_x: np.ndarray, missing_values: Any) -> ir.Value:
    """``nan_euclidean_distances(x, fit_x)`` ``[N, M]``."""
    fit_x = np.asarray(fit_x, np.float64)
    missing_y = np.isnan(fit_x) if _is_nan(missing_values) else fit_x == missing_values
    y0 = np.where(missing_y, 0.0, fit_x)
    mx = missing_mask(g, x, missing_values)
    x0 = g.op("Where", mx, f64(g, 0.0, "zero"), x, dtype=DOUBLE)
    d = euclidean(g, x0, y0, squared=True)
    d = g.op("Sub", d, g.op("MatMul", g.op("Mul", x0, x0, dtype=DOUBLE),
                            g.const(np.ascontiguousarray(missing_y.T.astype(np.float64)), "missing_fit_t"),
                            dtype=DOUBLE), dtype=DOUBLE)
    mxd = g.op("Cast", mx, to=DOUBLE, dtype=DOUBLE)
    d = g.op("Sub", d, g.op("MatMul", mxd, g.const(np.ascontiguousarray((y0 * y0).T), "fit_sq_t"), dtype=DOUBLE),
             dtype=DOUBLE)
    d = g.op("Max", d, f64(g, 0.0, "zero"), dtype=DOUBLE)
    present = g.op("MatMul", g.op("Sub", f64(g, 1.0, "one"), mxd, dtype=DOUBLE),
                   g.const(np.ascontiguousarray((~missing_y).T.astype(np.float64)), "present_fit_t"), dtype=DOUBLE)
    none = g.op("Equal", present, f64(g, 0.0, "zero"), dtype=BOOL)
    d = g.op("Where", none, f64(g, np.nan, "nan"), d, dtype=DOUBLE)
    d = g.op("Div", d, g.op("Max", present, f64(g, 1.0, "one"), dtype=DOUBLE), dtype=DOUBLE)
    d = g.op("Mul", d, f64(g, float(fit_x.shape[1]), "n_features"), dtype=DOUBLE)
    return g.op("Sqrt", d, dtype=DOUBLE)


@register_emitter(ski.KNNImputer)
def emit_knn_imputer(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    if est.metric != "nan_euclidean" or est.weights not in ("uniform", "distance"):
        raise ExportError("KNNImputer cannot be exported with a callable metric or weights",
                          hint="use metric='nan_euclidean' and weights 'uniform' or 'distance'")
    x = g.matrix(cols, DOUBLE)
    fit_x = np.asarray(est._fit_X, np.float64)
    mask_fit = np.asarray(est._mask_fit_X, bool)
    d = nan_euclidean(g, x, fit_x, est.missing_values)
    mx = missing_mask(g, x, est.missing_values)
    out = []
    for c in range(len(cols)):
        if not est._valid_mask[c]:
            continue
        donors = np.flatnonzero(~mask_fit[:, c])
        xc = column(g, x, c)
        k = min(est.n_neighbors, len(donors))
        dd = g.op("Gather", d, i64(g, donors, "donors"), axis=1, dtype=DOUBLE)
        nan = g.op("IsNaN", dd, dtype=BOOL)
        ranked = g.op("Where", nan, f64(g, np.inf, "inf"), dd, dtype=DOUBLE)
        dist, idx = g.op("TopK", ranked, i64(g, [k], "k"), axis=1, largest=0, sorted=1, outputs=2)
        dist.dtype, idx.dtype = DOUBLE, INT64
        undefined = g.op("IsInf", dist, dtype=BOOL)
        if est.weights == "uniform":
            w = g.op("Where", undefined, f64(g, 0.0, "zero"), f64(g, 1.0, "one"), dtype=DOUBLE)
        else:
            inv = g.op("Reciprocal", dist, dtype=DOUBLE)
            zero_d = g.op("Equal", dist, f64(g, 0.0, "zero"), dtype=BOOL)
            any_zero = g.op("Cast", g.op("ReduceMax", g.op("Cast", zero_d, to=INT64, dtype=INT64),
                                         i64(g, [1], "axes"), keepdims=1, dtype=INT64), to=BOOL, dtype=BOOL)
            w = g.op("Where", any_zero, g.op("Cast", zero_d, to=DOUBLE, dtype=DOUBLE), inv, dtype=DOUBLE)
            w = g.op("Where", undefined, f64(g, 0.0, "zero"), w, dtype=DOUBLE)
        values = g.op("Gather", g.const(fit_x[donors, c], "donor_values"), idx, axis=0, dtype=DOUBLE)
        axes = i64(g, [1], "axes")
        total = g.op("ReduceSum", w, axes, keepdims=1, dtype=DOUBLE)
        mean = g.op("Div", g.op("ReduceSum", g.op("Mul", values, w, dtype=DOUBLE), axes, keepdims=1, dtype=DOUBLE),
                    total, dtype=DOUBLE)
        col_mean = float(np.mean(fit_x[~mask_fit[:, c], c]))
        mean = g.op("Where", g.op("Equal", total, f64(g, 0.0, "zero"), dtype=BOOL), f64(g, col_mean, "col_mean"), mean,
                    dtype=DOUBLE)
        missing = column(g, mx, c, BOOL)
        if len(donors) > k:
            _flag_tied_donors(g, est, cols[c].name, ranked, dist, fit_x[donors, c], k, missing)
        out.append(g.op("Where", missing, mean, xc, dtype=DOUBLE))
    y = g.op("Concat", *out, axis=1, dtype=DOUBLE) if len(out) > 1 else out[0]
    names = [cols[c].name for c in range(len(cols)) if est._valid_mask[c]]
    result = g.block(y, names, "float", DOUBLE)
    if est.add_indicator:
        result += _indicator(g, est, x, cols, as_double=True)
    return result


def _flag_tied_donors(g: GraphBuilder, est: Any, name: str, ranked: ir.Value, dist: ir.Value, donor_values: np.ndarray,
                      k: int, missing: ir.Value) -> None:
    """Refuse (``out_of_range`` on ``name``) a missing value whose ``k``-th nearest donor is as near as a donor
    left out, when the donors at that distance hold different values: scikit-learn picks among them with
    ``np.argpartition``, whose choice among equal distances no graph reproduces, so the imputed value would
    depend on it. ``ranked``: ``[N, D]`` distances to the donors (NaN as inf); ``dist``: their ``k`` smallest."""
    kth = g.op("Slice", dist, i64(g, [k - 1], "start"), i64(g, [k], "stop"), i64(g, [1], "axes"), dtype=DOUBLE)
    at_kth = g.op("Equal", ranked, kth, dtype=BOOL)  # [N, D]: the donors as near as the k-th
    axes = i64(g, [1], "axes")
    count = g.op("ReduceSum", g.op("Cast", at_kth, to=INT64, dtype=INT64), axes, keepdims=1, dtype=INT64)
    nearer = g.op("ReduceSum", g.op("Cast", g.op("Less", ranked, kth, dtype=BOOL), to=INT64, dtype=INT64), axes,
                  keepdims=1, dtype=INT64)
    left_out = g.op("Greater", g.op("Add", nearer, count, dtype=INT64), i64(g, k, "k_i"), dtype=BOOL)
    values = g.const(donor_values.reshape(1, -1), "donor_values")
    low = g.op("ReduceMin", g.op("Where", at_kth, values, f64(g, np.inf, "inf"), dtype=DOUBLE), axes, keepdims=1,
               dtype=DOUBLE)
    high = g.op("ReduceMax", g.op("Where", at_kth, values, f64(g, -np.inf, "minus_inf"), dtype=DOUBLE), axes,
                keepdims=1, dtype=DOUBLE)
    finite = g.op("Not", g.op("IsInf", kth, dtype=BOOL), dtype=BOOL)
    ambiguous = g.op("And", g.op("And", left_out, g.op("Less", low, high, dtype=BOOL), dtype=BOOL), finite, dtype=BOOL)
    flagged = g.op("And", g.op("Reshape", ambiguous, i64(g, [-1], "flat"), dtype=BOOL),
                   g.op("Reshape", missing, i64(g, [-1], "flat"), dtype=BOOL), dtype=BOOL)
    g.flag(flagged, "out_of_range", name, unsettled=True,
           covers=f"missing values whose {k} nearest donors are not tied with another donor of a different value",
           hint="scikit-learn's choice among donors at equal distances is arbitrary (np.argpartition); give the row "
                "more of its values, or impute with another n_neighbors or a SimpleImputer")


#: the experimental class, without enabling it for the user (``sklearn.experimental.enable_iterative_imputer``)
_ITERATIVE = importlib.import_module("sklearn.impute._iterative").IterativeImputer


@register_emitter(_ITERATIVE)
def emit_iterative_imputer(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    from onegraph.export.adapters.sklearn import emit_step

    if est.sample_posterior:
        raise ExportError("IterativeImputer(sample_posterior=True) draws random values and cannot be exported",
                          hint="use sample_posterior=False")
    x = g.matrix(cols, DOUBLE)
    keep = np.flatnonzero(~est._is_empty_feature) if not est.keep_empty_features else np.arange(len(cols))
    mask = g.op("Gather", missing_mask(g, x, est.missing_values), i64(g, keep, "kept"), axis=1, dtype=BOOL)
    filled = emit_step(est.initial_imputer_, g, list(cols), f"{g.path}.initial_imputer_" if g.path else
                       "initial_imputer_")
    current = [g.vector(c) for c in filled]
    current = [g.op("Unsqueeze", v, i64(g, [1], "axis1"), dtype=DOUBLE) if v.dtype == DOUBLE else
               g.op("Unsqueeze", g.op("Cast", v, to=DOUBLE, dtype=DOUBLE), i64(g, [1], "axis1"), dtype=DOUBLE)
               for v in current]
    if est.n_iter_ > 0:
        for triplet in est.imputation_sequence_:
            xt = g.op("Concat", *current, axis=1, dtype=DOUBLE)
            neighbors = g.op("Gather", xt, i64(g, triplet.neighbor_feat_idx, "neighbors"), axis=1, dtype=DOUBLE)
            # not a scope of its own: its input and output are the imputer's nodes, a group would not be convex
            pred = emit_model(triplet.estimator, g, neighbors).values["prediction"]
            f = int(triplet.feat_idx)
            pred = g.op("Unsqueeze", pred, i64(g, [1], "axis1"), dtype=DOUBLE)
            pred = g.op("Clip", pred, f64(g, est._min_value[f], "min_value"), f64(g, est._max_value[f], "max_value"),
                        dtype=DOUBLE)
            current[f] = g.op("Where", column(g, mask, f, BOOL), pred, current[f], dtype=DOUBLE)
    y = g.op("Concat", *current, axis=1, dtype=DOUBLE) if len(current) > 1 else current[0]
    names = [cols[i].name for i in keep]
    result = g.block(y, names, "float", DOUBLE)
    if est.add_indicator:
        result += _indicator(g, est, x, cols, as_double=True)
    return result

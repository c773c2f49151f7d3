"""scikit-learn's nearest-neighbour models -> graph in double precision.

Distances are computed as scikit-learn's KD / ball trees compute them (the default ``algorithm="auto"``
on small, low-dimensional tables): ``sqrt(sum_f (x_f - y_f)^2)`` (``p=2``) or ``sum_f |x_f - y_f|``
(``p=1``), against every fitted row (``_fit_X``), so the graph holds the training rows. Neighbours are the
``TopK`` smallest (ties between equal distances may be broken differently from the tree).

Follows ``sklearn.neighbors`` (scikit-learn 1.9):

* ``KNeighborsClassifier.predict_proba``: per class the (``weights="distance"``: ``1 / d``) weights of the
  ``n_neighbors`` nearest rows of that class over their total; ``predict`` its argmax; a query at distance 0
  of some rows takes those rows alone (``_get_weights``);
* ``KNeighborsRegressor.predict``: mean (or ``1 / d``-weighted mean) of the neighbours' targets;
* ``RadiusNeighbors*``: the rows with ``d <= radius`` instead; a query with none (scikit-learn raises
  without ``outlier_label``) gets NaN (missing label);
* ``NearestCentroid``: ``predict`` the nearest of ``centroids_`` when the priors are uniform, else
  ``argmax(-|x - c|^2 + 2 log(prior))`` over features scaled by ``within_class_std_dev_``
  (``_decision_function``, ``euclidean_distances``), ``predict_proba`` as ``DiscriminantAnalysisPredictionMixin``;
* ``KNeighborsTransformer`` / ``RadiusNeighborsTransformer``: the dense ``[N, n_samples_fit]`` neighbours
  graph in ``mode="distance"`` (``n_neighbors + 1`` rows) or ``"connectivity"``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.neighbors as skn

from onegraph.emit import BOOL, DOUBLE, INT64, Col, GraphBuilder, register_emitter
from onegraph.errors import ExportError
from onegraph.export.adapters.discriminant import feature_block, mixin_proba
from onegraph.export.adapters.models import ModelOutputs, label_from_index, register_model
from onegraph.export.adapters.ops import argmax_index, euclidean, f64, flat, i64, manhattan, sq_direct

__all__ = ["fit_distances", "nearest", "emit_kneighbors_classifier", "emit_kneighbors_regressor",
           "emit_radius_classifier", "emit_radius_regressor", "emit_nearest_centroid",
           "emit_neighbors_transformer"]


def _p(model: Any) -> float:
    metric = model.effective_metric_
    params = getattr(model, "effective_metric_params_", {}) or {}
    if metric == "euclidean":
        return 2.0
    if metric in ("manhattan", "cityblock", "l1"):
        return 1.0
    if metric == "minkowski" and params.get("p", getattr(model, "p", 2)) in (1, 2) and "w" not in params:
        return float(params.get("p", getattr(model, "p", 2)))
    raise ExportError(f"{type(model).__name__}(metric={model.metric!r}) cannot be exported",
                      hint="use the euclidean or manhattan metric (minkowski with p=1 or 2)")


def fit_distances(g: GraphBuilder, model: Any, x: ir.Value) -> ir.Value:
    """Distances from each query to each fitted row: ``[N, n_samples_fit]``."""
    if model._fit_method == "brute" and _p(model) == 2.0 and model.effective_metric_ == "euclidean":
        return euclidean(g, x, model._fit_X)
    if _p(model) == 1.0:
        return manhattan(g, x, model._fit_X)
    return g.op("Sqrt", sq_direct(g, x, model._fit_X), dtype=DOUBLE)


def nearest(g: GraphBuilder, d: ir.Value, k: int) -> tuple[ir.Value, ir.Value]:
    """The ``k`` smallest distances of each row and their indices (ascending)."""
    values, index = g.op("TopK", d, i64(g, [k], "k"), axis=1, largest=0, sorted=1, outputs=2)
    values.dtype, index.dtype = DOUBLE, INT64
    return values, index


def _weights(g: GraphBuilder, model: Any, dist: ir.Value) -> ir.Value | None:
    """``_get_weights``: None (uniform) or ``1 / d`` with rows holding a zero distance weighted by ``d == 0``."""
    if model.weights in (None, "uniform"):
        return None
    if model.weights != "distance":
        raise ExportError(f"{type(model).__name__} with a callable weights cannot be exported",
                          hint="use weights='uniform' or 'distance'")
    inv = g.op("Reciprocal", dist, dtype=DOUBLE)
    zero = g.op("Equal", dist, f64(g, 0.0, "zero"), dtype=BOOL)
    any_zero = g.op("Cast", g.op("ReduceMax", g.op("Cast", zero, to=INT64, dtype=INT64), i64(g, [1], "axes"),
                                 keepdims=1, dtype=INT64), to=BOOL, dtype=BOOL)
    return g.op("Where", any_zero, g.op("Cast", zero, to=DOUBLE, dtype=DOUBLE), inv, dtype=DOUBLE)


def _single_output(model: Any) -> None:
    if getattr(model, "outputs_2d_", False) or np.ndim(getattr(model, "_y", [])) > 1:
        raise ExportError(f"{type(model).__name__} fitted on several targets cannot be exported",
                          hint="fit one model per target")


def _class_table(model: Any) -> np.ndarray:
    """One-hot ``[n_samples_fit, n_classes]`` of the fitted rows' classes."""
    y = np.asarray(model._y).reshape(-1)
    return (y[:, None] == np.arange(len(model.classes_))[None, :]).astype(np.float64)


def _classifier(g: GraphBuilder, model: Any, counts: ir.Value) -> ModelOutputs:
    total = g.op("ReduceSum", counts, i64(g, [1], "axes"), keepdims=1, dtype=DOUBLE)
    proba = g.op("Div", counts, total, dtype=DOUBLE)
    proba.shape = ir.Shape(["N", len(model.classes_)])
    return ModelOutputs.classifier(label_from_index(g, model.classes_, argmax_index(g, proba)), proba,
                                   model.classes_)


@register_model(skn.KNeighborsClassifier)
def emit_kneighbors_classifier(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    _single_output(model)
    dist, index = nearest(g, fit_distances(g, model, x), model.n_neighbors)
    onehot = g.op("Gather", g.const(_class_table(model), "classes_of_rows"), index, axis=0, dtype=DOUBLE)
    w = _weights(g, model, dist)
    if w is not None:
        onehot = g.op("Mul", onehot, g.op("Unsqueeze", w, i64(g, [2], "axis2"), dtype=DOUBLE), dtype=DOUBLE)
    return _classifier(g, model, g.op("ReduceSum", onehot, i64(g, [1], "axes"), keepdims=0, dtype=DOUBLE))


@register_model(skn.KNeighborsRegressor)
def emit_kneighbors_regressor(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    _single_output(model)
    dist, index = nearest(g, fit_distances(g, model, x), model.n_neighbors)
    y = g.op("Gather", g.const(np.asarray(model._y, np.float64).reshape(-1), "y_fit"), index, axis=0, dtype=DOUBLE)
    w = _weights(g, model, dist)
    axes = i64(g, [1], "axes")
    if w is None:
        pred = g.op("Div", g.op("ReduceSum", y, axes, keepdims=0, dtype=DOUBLE),
                    f64(g, float(model.n_neighbors), "k"), dtype=DOUBLE)
    else:
        pred = g.op("Div", g.op("ReduceSum", g.op("Mul", y, w, dtype=DOUBLE), axes, keepdims=0, dtype=DOUBLE),
                    g.op("ReduceSum", w, axes, keepdims=0, dtype=DOUBLE), dtype=DOUBLE)
    return ModelOutputs.regressor(flat(g, pred))


def _within_radius(g: GraphBuilder, model: Any, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``(weights [N, M], distances [N, M])``: zero outside the radius; NaN rows for queries with none."""
    d = fit_distances(g, model, x)
    inside = g.op("LessOrEqual", d, f64(g, model.radius, "radius"), dtype=BOOL)
    w = _weights(g, model, d)
    mask = g.op("Cast", inside, to=DOUBLE, dtype=DOUBLE)
    if w is not None:  # the zero-distance rule among the rows inside the radius
        inv = g.op("Where", inside, g.op("Reciprocal", d, dtype=DOUBLE), f64(g, 0.0, "zero"), dtype=DOUBLE)
        zero = g.op("And", inside, g.op("Equal", d, f64(g, 0.0, "zero"), dtype=BOOL), dtype=BOOL)
        any_zero = g.op("Cast", g.op("ReduceMax", g.op("Cast", zero, to=INT64, dtype=INT64), i64(g, [1], "axes"),
                                     keepdims=1, dtype=INT64), to=BOOL, dtype=BOOL)
        mask = g.op("Where", any_zero, g.op("Cast", zero, to=DOUBLE, dtype=DOUBLE), inv, dtype=DOUBLE)
    count = g.op("ReduceSum", g.op("Cast", inside, to=DOUBLE, dtype=DOUBLE), i64(g, [1], "axes"), keepdims=1,
                 dtype=DOUBLE)
    none = g.op("Equal", count, f64(g, 0.0, "zero"), dtype=BOOL)
    return g.op("Where", none, f64(g, np.nan, "nan"), mask, dtype=DOUBLE), d


@register_model(skn.RadiusNeighborsClassifier)
def emit_radius_classifier(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    _single_output(model)
    if model.outlier_label is not None:
        raise ExportError("RadiusNeighborsClassifier with an outlier_label cannot be exported yet",
                          hint="use outlier_label=None")
    w, _ = _within_radius(g, model, x)
    return _classifier(g, model, g.op("MatMul", w, g.const(_class_table(model), "classes_of_rows"), dtype=DOUBLE))


@register_model(skn.RadiusNeighborsRegressor)
def emit_radius_regressor(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    _single_output(model)
    w, _ = _within_radius(g, model, x)
    y = g.const(np.asarray(model._y, np.float64).reshape(-1, 1), "y_fit")
    total = g.op("ReduceSum", w, i64(g, [1], "axes"), keepdims=1, dtype=DOUBLE)
    return ModelOutputs.regressor(flat(g, g.op("Div", g.op("MatMul", w, y, dtype=DOUBLE), total, dtype=DOUBLE)))


@register_model(skn.NearestCentroid)
def emit_nearest_centroid(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    classes = model.classes_
    if model.metric != "euclidean":
        raise ExportError(f"NearestCentroid(metric={model.metric!r}) cannot be exported",
                          hint="use metric='euclidean'")
    std = np.asarray(model.within_class_std_dev_, np.float64)
    mask = std != 0
    scale = np.where(mask, std, 1.0)
    xn = g.op("Div", x, g.const(scale, "std"), dtype=DOUBLE) if mask.any() else x
    centroids = np.asarray(model.centroids_, np.float64).copy()
    centroids[:, mask] /= std[mask]
    d = euclidean(g, xn, centroids)
    d2 = g.op("Mul", d, d, dtype=DOUBLE)
    scores = g.op("Add", g.op("Neg", d2, dtype=DOUBLE), g.const(2.0 * np.log(model.class_prior_), "log_prior"),
                  dtype=DOUBLE)
    proba = mixin_proba(g, scores)
    proba.shape = ir.Shape(["N", len(classes)])
    if np.isclose(model.class_prior_, 1 / len(classes)).all():
        index = g.op("ArgMin", euclidean(g, x, model.centroids_), axis=1, keepdims=0, dtype=INT64)
    else:
        index = argmax_index(g, scores)
    return ModelOutputs.classifier(label_from_index(g, classes, index), proba, classes)


@register_emitter(skn.KNeighborsTransformer, skn.RadiusNeighborsTransformer)
def emit_neighbors_transformer(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = g.matrix(cols, DOUBLE)
    d = fit_distances(g, est, x)
    distance = est.mode == "distance"
    if isinstance(est, skn.KNeighborsTransformer):
        values, index = nearest(g, d, est.n_neighbors + (1 if distance else 0))
        if not distance:
            values = g.op("Add", g.op("Mul", values, f64(g, 0.0, "zero"), dtype=DOUBLE), f64(g, 1.0, "one"),
                          dtype=DOUBLE)
        zeros = g.op("Mul", d, f64(g, 0.0, "zero"), dtype=DOUBLE)
        y = g.op("ScatterElements", zeros, index, values, axis=1, dtype=DOUBLE)
    else:
        inside = g.op("LessOrEqual", d, f64(g, est.radius, "radius"), dtype=BOOL)
        y = g.op("Where", inside, d if distance else f64(g, 1.0, "one"), f64(g, 0.0, "zero"), dtype=DOUBLE)
    return feature_block(g, est, y, cols)

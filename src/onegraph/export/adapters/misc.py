"""scikit-learn predictors that wrap or barely compute: dummies, kernel ridge, PLS, label propagation,
``TransformedTargetRegressor`` and ``RANSACRegressor`` -> graph in double precision.

Follows scikit-learn 1.9:

* ``DummyClassifier`` (``prior`` / ``most_frequent``): ``class_prior_`` (or the one-hot of its argmax) on
  every row, label its argmax; ``DummyRegressor``: ``constant_`` on every row;
* ``KernelRidge.predict``: ``kernel(X, X_fit_) @ dual_coef_``;
* ``PLSRegression.predict``: ``(X - _x_mean) @ coef_.T + intercept_``;
* ``LabelPropagation`` / ``LabelSpreading.predict_proba`` (rbf kernel): ``rbf_kernel(X_, X).T @
  label_distributions_``, rows normalized; ``predict`` its argmax;
* ``TransformedTargetRegressor``: the regressor's prediction through ``transformer_.inverse_transform``
  (identity, a ``FunctionTransformer`` whose ``inverse_func`` is a numpy ufunc, or a ``StandardScaler``);
* ``RANSACRegressor``: ``estimator_``'s prediction;
* ``MultiOutputRegressor.predict``: the members' predictions side by side, ``[N, n_outputs]``;
  ``MultiOutputClassifier`` (one label per target) is refused: a graph of onegraph has one answer, and
  :func:`onegraph.compose` declares each member's outputs under its name;
* a hyper-parameter search (``GridSearchCV``, ``RandomizedSearchCV``...) as a pipeline's step or an ensemble's
  member: ``best_estimator_``'s outputs (``BaseSearchCV.predict``). Given to ``build`` itself, the search is
  replaced by ``best_estimator_`` before the pipeline is split (:func:`~onegraph.export.adapters.models.searched`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.compose as skc
import sklearn.cross_decomposition as skx
import sklearn.dummy as skd
import sklearn.kernel_ridge as skr
import sklearn.linear_model as lm
import sklearn.model_selection._search as sks_search
import sklearn.multioutput as skmo
import sklearn.preprocessing as skp
import sklearn.semi_supervised as sks

from onegraph.emit import DOUBLE, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.choose import emit_model
from onegraph.export.adapters.models import ModelOutputs, label_from_index, register_model, searched
from onegraph.export.adapters.ops import (
    affine,
    argmax_index,
    broadcast_rows,
    euclidean,
    f64,
    flat,
    kernel,
    normalize_rows,
    side_by_side,
)

__all__ = ["emit_dummy_classifier", "emit_dummy_regressor", "emit_kernel_ridge", "emit_pls",
           "emit_label_propagation", "emit_transformed_target", "emit_ransac", "emit_search",
           "emit_multioutput_regressor", "refuse_multioutput_classifier"]


@register_model(skd.DummyClassifier)
def emit_dummy_classifier(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    if model.n_outputs_ != 1 or model._strategy not in ("prior", "most_frequent"):
        raise ExportError(f"DummyClassifier(strategy={model.strategy!r}) cannot be exported",
                          hint="its 'stratified' and 'uniform' answers are random; use 'prior' or 'most_frequent'")
    prior = np.asarray(model.class_prior_, np.float64)
    row = prior if model._strategy == "prior" else np.eye(len(prior))[prior.argmax()]
    proba = broadcast_rows(g, x, row)
    proba.shape = ir.Shape(["N", len(prior)])
    index = argmax_index(g, broadcast_rows(g, x, prior))
    return ModelOutputs.classifier(label_from_index(g, model.classes_, index), proba, model.classes_)


@register_model(skd.DummyRegressor)
def emit_dummy_regressor(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    constant = np.asarray(model.constant_, np.float64).reshape(-1)
    y = broadcast_rows(g, x, constant)
    return ModelOutputs.regressor(flat(g, y) if model.n_outputs_ == 1 else y)


@register_model(skr.KernelRidge)
def emit_kernel_ridge(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    if callable(model.kernel):
        raise ExportError("KernelRidge with a callable kernel cannot be exported")
    params = model.kernel_params or {}
    k = kernel(g, x, model.X_fit_, model.kernel, gamma=params.get("gamma", model.gamma),
               degree=params.get("degree", model.degree), coef0=params.get("coef0", model.coef0), what="KernelRidge")
    dual = np.asarray(model.dual_coef_, np.float64)
    y = g.op("MatMul", k, g.const(dual.reshape(len(dual), -1), "dual_coef"), dtype=DOUBLE)
    return ModelOutputs.regressor(flat(g, y) if dual.ndim == 1 or dual.shape[1] == 1 else y)


@register_model(skx.PLSRegression, skx.PLSCanonical, skx.CCA)
def emit_pls(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    xc = g.op("Sub", x, g.const(np.asarray(model._x_mean, np.float64), "x_mean"), dtype=DOUBLE)
    y = affine(g, xc, np.asarray(model.coef_, np.float64).T, model.intercept_, "coef_t")
    return ModelOutputs.regressor(flat(g, y) if model._predict_1d else y)


@register_model(sks.LabelPropagation, sks.LabelSpreading)
def emit_label_propagation(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    if model.kernel != "rbf":
        raise ExportError(f"{type(model).__name__}(kernel={model.kernel!r}) cannot be exported yet",
                          hint="use kernel='rbf'")
    d = euclidean(g, x, model.X_, squared=True, y_first=True)
    w = g.op("Exp", g.op("Mul", d, f64(g, -model.gamma, "minus_gamma"), dtype=DOUBLE), dtype=DOUBLE)
    p = normalize_rows(g, g.op("MatMul", w, g.const(np.asarray(model.label_distributions_, np.float64), "labels"),
                               dtype=DOUBLE))
    p.shape = ir.Shape(["N", len(model.classes_)])
    return ModelOutputs.classifier(label_from_index(g, model.classes_, argmax_index(g, p)), p, model.classes_)


def _inverse_target(g: GraphBuilder, transformer: Any, y: ir.Value) -> ir.Value:
    from onegraph.export.adapters.sklearn import emit_function_transformer

    if isinstance(transformer, skp.FunctionTransformer):
        if transformer.inverse_func is None:
            return y
        inverse = skp.FunctionTransformer(transformer.inverse_func, kw_args=transformer.inv_kw_args)
        from onegraph.emit import Col

        (col,) = emit_function_transformer(inverse, g, [Col("y", "float", y, DOUBLE)])
        return col.value
    if isinstance(transformer, skp.StandardScaler):
        out = y
        if transformer.with_std:
            out = g.op("Mul", out, f64(g, transformer.scale_[0], "scale"), dtype=DOUBLE)
        if transformer.with_mean:
            out = g.op("Add", out, f64(g, transformer.mean_[0], "mean"), dtype=DOUBLE)
        return out
    raise ExportError(f"TransformedTargetRegressor with a {type(transformer).__name__} target transformer "
                      "cannot be exported yet", hint="use a FunctionTransformer with a numpy ufunc, or StandardScaler")


@register_model(skc.TransformedTargetRegressor)
def emit_transformed_target(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    with g.scope("regressor_", model.regressor_):
        pred = emit_model(model.regressor_, g, x).values["prediction"]
    y = _inverse_target(g, model.transformer_, pred)
    return ModelOutputs.regressor(flat(g, y))


@register_model(lm.RANSACRegressor)
def emit_ransac(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    with g.scope("estimator_", model.estimator_):
        return emit_model(model.estimator_, g, x)


@register_model(sks_search.BaseSearchCV)
def emit_search(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    best = searched(model)
    with g.scope("best_estimator_", best):
        return emit_model(best, g, x)


@register_model(skmo.MultiOutputRegressor)
def emit_multioutput_regressor(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    parts = []
    for i, est in enumerate(model.estimators_):
        with g.scope(f"estimators_.{i}", est):
            parts.append(flat(g, emit_model(est, g, x).values["prediction"]))
    return ModelOutputs.regressor(parts[0] if len(parts) == 1 else side_by_side(g, parts))


@register_model(skmo.MultiOutputClassifier)
def refuse_multioutput_classifier(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    n = len(model.estimators_)
    raise ExportError(f"MultiOutputClassifier predicts {n} targets, and a graph built by onegraph gives one label",
                      hint="compose its members, each target's outputs under its name: onegraph.compose("
                           "preprocessing, {f'target{i}': e for i, e in enumerate(model.estimators_)}, sample)")

"""scikit-learn linear models -> MatMul + Add (+ Sigmoid / Softmax) in double precision.

skl2onnx's converter is exact too, but adds ``ArrayFeatureExtractor`` + ``Reshape`` for the label; writing
the few nodes here keeps the graph one node shorter per model, which shows in single-row latency. The
operations follow scikit-learn: ``decision_function`` is ``X @ coef_.T + intercept_``; a binary
``LogisticRegression`` gives ``[1 - expit(d), expit(d)]`` and predicts the positive class where ``d > 0``; a
multiclass one gives ``softmax(d)`` and predicts ``argmax(d)`` (``LinearClassifierMixin.predict``,
``LogisticRegression.predict_proba``, scikit-learn 1.9).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.linear_model as lm

from onegraph.emit import BOOL, DOUBLE, INT64, GraphBuilder
from onegraph.export.adapters.models import ModelOutputs, label_from_index, register_model


def _decision(g: GraphBuilder, model: Any, x: ir.Value) -> ir.Value:
    coef = np.asarray(model.coef_, np.float64)
    coef = coef.reshape(1, -1) if coef.ndim == 1 else coef
    d = g.op("MatMul", x, g.const(np.ascontiguousarray(coef.T), "coef"), dtype=DOUBLE)
    intercept = np.atleast_1d(np.asarray(model.intercept_, np.float64))
    d = g.op("Add", d, g.const(intercept, "intercept"), dtype=DOUBLE)
    d.shape = ir.Shape(["N", coef.shape[0]])
    return d


@register_model(lm.LogisticRegression, lm.LogisticRegressionCV)
def emit_logistic_regression(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    d = _decision(g, model, x)
    if len(model.classes_) <= 2:
        p = g.op("Sigmoid", d, dtype=DOUBLE)
        proba = g.op("Concat", g.op("Sub", g.const(np.float64(1.0), "one"), p, dtype=DOUBLE), p, axis=1, dtype=DOUBLE)
        positive = g.op("Greater", d, g.const(np.float64(0.0), "zero"), dtype=BOOL)
        index = g.op("Reshape", g.op("Cast", positive, to=INT64, dtype=INT64),
                     g.const(np.array([-1], np.int64), "flat"), dtype=INT64)
    else:
        proba = g.op("Softmax", d, axis=1, dtype=DOUBLE)
        index = g.op("ArgMax", d, axis=1, keepdims=0, dtype=INT64)
    return ModelOutputs.classifier(label_from_index(g, model.classes_, index), proba, model.classes_)


@register_model(lm.LinearRegression, lm.Ridge, lm.RidgeCV, lm.Lasso, lm.LassoCV, lm.ElasticNet, lm.ElasticNetCV,
                lm.Lars, lm.LassoLars, lm.BayesianRidge, lm.ARDRegression, lm.HuberRegressor, lm.TheilSenRegressor,
                lm.QuantileRegressor, lm.SGDRegressor, lm.OrthogonalMatchingPursuit)
def emit_linear_regressor(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    d = _decision(g, model, x)
    if np.ndim(model.coef_) == 1:
        d = g.op("Reshape", d, g.const(np.array([-1], np.int64), "flat"), dtype=DOUBLE)
    return ModelOutputs.regressor(d)

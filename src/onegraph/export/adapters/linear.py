"""scikit-learn linear models -> Gemm (+ expit / Softmax) in double precision.

Classifiers without probabilities (LinearSVC, RidgeClassifier, Perceptron...) give their label alone;
``SGDClassifier`` with ``log_loss`` / ``modified_huber`` gives scikit-learn's one-vs-rest probabilities.
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
import sklearn.svm as svm

from onegraph.emit import BOOL, DOUBLE, INT64, GraphBuilder
from onegraph.export.adapters.models import (
    ModelOutputs,
    label_from_index,
    register_decision,
    register_model,
)
from onegraph.export.adapters.ops import affine, expit

__all__ = ["decision_function", "emit_logistic_regression", "LINEAR_CLASSIFIERS", "emit_linear_classifier",
           "emit_linear_regressor", "emit_linear_decision"]


def decision_function(g: GraphBuilder, model: Any, x: ir.Value) -> ir.Value:
    """``x @ coef_.T + intercept_``: ``[N, n_rows_of_coef]`` double (``[N, 1]`` for a binary classifier),
    scikit-learn's ``LinearClassifierMixin.decision_function`` before its final ravel."""
    return _decision(g, model, x)


def _decision(g: GraphBuilder, model: Any, x: ir.Value) -> ir.Value:
    coef = np.asarray(model.coef_, np.float64)
    coef = coef.reshape(1, -1) if coef.ndim == 1 else coef
    d = affine(g, x, coef.T, model.intercept_)
    d.shape = ir.Shape(["N", coef.shape[0]])
    return d


@register_model(lm.LogisticRegression, lm.LogisticRegressionCV)
def emit_logistic_regression(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    d = _decision(g, model, x)
    k = len(model.classes_)
    if k <= 2:
        proba = _binary_pair(g, expit(g, d))
    else:
        proba = g.op("Softmax", d, axis=1, dtype=DOUBLE)
    return ModelOutputs.classifier(label_from_index(g, model.classes_, _label_index(g, d, k)), proba, model.classes_)


def _label_index(g: GraphBuilder, d: ir.Value, n_classes: int) -> ir.Value:
    """``LinearClassifierMixin.predict``: ``d > 0`` for two classes, ``argmax(d)`` otherwise."""
    if n_classes <= 2:
        positive = g.op("Greater", d, g.const(np.float64(0.0), "zero"), dtype=BOOL)
        return g.op("Reshape", g.op("Cast", positive, to=INT64, dtype=INT64),
                    g.const(np.array([-1], np.int64), "flat"), dtype=INT64)
    return g.op("ArgMax", d, axis=1, keepdims=0, dtype=INT64)


def _ovr_normalize(g: GraphBuilder, p: ir.Value, n_classes: int) -> ir.Value:
    """scikit-learn's one-vs-rest normalization: rows divided by their sum; rows summing to 0 become
    uniform (``_predict_proba_lr``, ``SGDClassifier.predict_proba``)."""
    total = g.op("ReduceSum", p, g.const(np.array([1], np.int64), "axes"), keepdims=1, dtype=DOUBLE)
    zero = g.op("Equal", total, g.const(np.float64(0.0), "zero"), dtype=BOOL)
    p = g.op("Where", zero, g.const(np.float64(1.0), "one"), p, dtype=DOUBLE)
    total = g.op("Where", zero, g.const(np.float64(n_classes), "n_classes"), total, dtype=DOUBLE)
    return g.op("Div", p, total, dtype=DOUBLE)


def _binary_pair(g: GraphBuilder, p: ir.Value) -> ir.Value:
    return g.op("Concat", g.op("Sub", g.const(np.float64(1.0), "one"), p, dtype=DOUBLE), p, axis=1, dtype=DOUBLE)


#: classifiers whose decision function :func:`decision_function` writes
LINEAR_CLASSIFIERS = (lm.LogisticRegression, lm.LogisticRegressionCV, lm.SGDClassifier, lm.RidgeClassifier,
                      lm.RidgeClassifierCV, lm.Perceptron, lm.PassiveAggressiveClassifier, svm.LinearSVC)


@register_model(lm.SGDClassifier, lm.RidgeClassifier, lm.RidgeClassifierCV, lm.Perceptron,
                lm.PassiveAggressiveClassifier, svm.LinearSVC)
def emit_linear_classifier(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    """Label from the decision function; probabilities for SGDClassifier with log or modified Huber loss."""
    d = _decision(g, model, x)
    k = len(model.classes_)
    label = label_from_index(g, model.classes_, _label_index(g, d, k))
    loss = getattr(model, "loss", None) if isinstance(model, lm.SGDClassifier) else None
    if loss == "log_loss":
        p = expit(g, d)
    elif loss == "modified_huber":
        clipped = g.op("Clip", d, g.const(np.float64(-1.0), "minus_one"), g.const(np.float64(1.0), "one"), dtype=DOUBLE)
        p = g.op("Div", g.op("Add", clipped, g.const(np.float64(1.0), "one"), dtype=DOUBLE),
                 g.const(np.float64(2.0), "two"), dtype=DOUBLE)
    else:
        return ModelOutputs.label_only(label, model.classes_)
    proba = _binary_pair(g, p) if k <= 2 else _ovr_normalize(g, p, k)
    return ModelOutputs.classifier(label, proba, model.classes_)


@register_model(lm.LinearRegression, lm.Ridge, lm.RidgeCV, lm.Lasso, lm.LassoCV, lm.ElasticNet, lm.ElasticNetCV,
                lm.Lars, lm.LassoLars, lm.BayesianRidge, lm.ARDRegression, lm.HuberRegressor, lm.TheilSenRegressor,
                lm.QuantileRegressor, lm.SGDRegressor, lm.OrthogonalMatchingPursuit, lm.OrthogonalMatchingPursuitCV,
                lm.LarsCV, lm.LassoLarsCV, lm.LassoLarsIC, lm.PassiveAggressiveRegressor, lm.MultiTaskLasso,
                lm.MultiTaskLassoCV, lm.MultiTaskElasticNet, lm.MultiTaskElasticNetCV, svm.LinearSVR)
def emit_linear_regressor(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    d = _decision(g, model, x)
    if np.ndim(model.coef_) == 1:
        d = g.op("Reshape", d, g.const(np.array([-1], np.int64), "flat"), dtype=DOUBLE)
    return ModelOutputs.regressor(d)


@register_decision(*LINEAR_CLASSIFIERS)
def emit_linear_decision(model: Any, g: GraphBuilder, x: ir.Value) -> ir.Value:
    """``decision_function`` of a linear classifier: ``[N, 1]`` (binary) or ``[N, n_classes]``."""
    return _decision(g, model, x)

"""scikit-learn's discriminant analysis -> graph in double precision.

Follows ``sklearn.discriminant_analysis`` (scikit-learn 1.9):

* ``LinearDiscriminantAnalysis``: ``decision_function`` ``X @ coef_.T + intercept_``; ``predict_proba``
  ``[1 - expit(d), expit(d)]`` (two classes) or ``softmax(d)``; ``predict`` ``d > 0`` / ``argmax(d)``;
  ``transform`` ``(X - xbar_) @ scalings_`` (svd solver) or ``X @ scalings_`` (eigen), first
  ``_max_components`` columns;
* ``QuadraticDiscriminantAnalysis._decision_function``: per class ``norm2_k = |(X - means_[k]) @
  (rotations_[k] * scalings_[k] ** -0.5)|^2``, ``-0.5 * (norm2 + sum(log(scalings_[k]))) + log(priors_)``;
  ``predict_proba`` ``exp(l - log(sum(exp(l))))`` with ``l = scores - max(scores)``
  (``DiscriminantAnalysisPredictionMixin``, shared with ``NearestCentroid``); ``predict`` ``argmax``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.discriminant_analysis as da

from onegraph.emit import DOUBLE, Col, GraphBuilder, register_emitter
from onegraph.errors import ExportError
from onegraph.export.adapters.linear import decision_function
from onegraph.export.adapters.models import ModelOutputs, label_from_index, register_decision, register_model
from onegraph.export.adapters.ops import argmax_index, expit_pair, f64, i64, positive_index, softmax

__all__ = ["emit_lda", "emit_lda_transform", "emit_qda", "qda_scores", "mixin_proba", "feature_block"]


@register_model(da.LinearDiscriminantAnalysis)
def emit_lda(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    d = decision_function(g, model, x)
    k = len(model.classes_)
    if k == 2:
        proba, index = expit_pair(g, d), positive_index(g, d)
    else:
        proba, index = softmax(g, d), argmax_index(g, d)
    proba.shape = ir.Shape(["N", k])
    return ModelOutputs.classifier(label_from_index(g, model.classes_, index), proba, model.classes_)


def feature_block(g: GraphBuilder, est: Any, y: ir.Value, cols: list[Col]) -> list[Col]:
    """``y`` ``[N, k]`` as columns named by ``est.get_feature_names_out``."""
    names = [str(n) for n in est.get_feature_names_out([c.name for c in cols])]
    return g.block(y, names, "float", DOUBLE)


@register_emitter(da.LinearDiscriminantAnalysis)
def emit_lda_transform(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = g.matrix(cols, DOUBLE)
    scalings = np.asarray(est.scalings_, np.float64)[:, : est._max_components]
    if est.solver == "svd":
        x = g.op("Sub", x, g.const(np.asarray(est.xbar_, np.float64), "xbar"), dtype=DOUBLE)
    elif est.solver != "eigen":
        raise ExportError(f"LinearDiscriminantAnalysis(solver={est.solver!r}) has no transform")
    return feature_block(g, est, g.op("MatMul", x, g.const(scalings, "scalings"), dtype=DOUBLE), cols)


def qda_scores(g: GraphBuilder, model: Any, x: ir.Value) -> ir.Value:
    """``QuadraticDiscriminantAnalysis._decision_function``: ``[N, n_classes]``."""
    norm2 = []
    for mean, rotation, scaling in zip(model.means_, model.rotations_, model.scalings_):
        matrix = rotation * (scaling ** (-0.5))
        xm = g.op("Sub", x, g.const(np.asarray(mean, np.float64), "mean"), dtype=DOUBLE)
        x2 = g.op("MatMul", xm, g.const(np.asarray(matrix, np.float64), "rotation"), dtype=DOUBLE)
        norm2.append(g.op("ReduceSumSquare", x2, i64(g, [1], "axes"), keepdims=1, dtype=DOUBLE))
    n2 = g.op("Concat", *norm2, axis=1, dtype=DOUBLE)
    u = np.asarray([np.sum(np.log(s)) for s in model.scalings_])
    s = g.op("Mul", f64(g, -0.5, "minus_half"), g.op("Add", n2, g.const(u, "log_det"), dtype=DOUBLE), dtype=DOUBLE)
    out = g.op("Add", s, g.const(np.log(model.priors_), "log_priors"), dtype=DOUBLE)
    out.shape = ir.Shape(["N", len(model.classes_)])
    return out


def mixin_proba(g: GraphBuilder, scores: ir.Value) -> ir.Value:
    """``DiscriminantAnalysisPredictionMixin.predict_proba``: ``exp(l - log(sum(exp(l))))``, ``l = s - max(s)``."""
    axes = i64(g, [1], "axes")
    ll = g.op("Sub", scores, g.op("ReduceMax", scores, axes, keepdims=1, dtype=DOUBLE), dtype=DOUBLE)
    total = g.op("ReduceSum", g.op("Exp", ll, dtype=DOUBLE), axes, keepdims=1, dtype=DOUBLE)
    return g.op("Exp", g.op("Sub", ll, g.op("Log", total, dtype=DOUBLE), dtype=DOUBLE), dtype=DOUBLE)


@register_model(da.QuadraticDiscriminantAnalysis)
def emit_qda(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    scores = qda_scores(g, model, x)
    proba = mixin_proba(g, scores)
    proba.shape = ir.Shape(["N", len(model.classes_)])
    return ModelOutputs.classifier(label_from_index(g, model.classes_, argmax_index(g, scores)), proba,
                                   model.classes_)


@register_decision(da.QuadraticDiscriminantAnalysis)
def emit_qda_decision(model: Any, g: GraphBuilder, x: ir.Value) -> ir.Value:
    s = qda_scores(g, model, x)
    if len(model.classes_) == 2:
        return g.op("Sub", g.op("Gather", s, i64(g, [1], "c1"), axis=1, dtype=DOUBLE),
                    g.op("Gather", s, i64(g, [0], "c0"), axis=1, dtype=DOUBLE), dtype=DOUBLE)
    return s


@register_decision(da.LinearDiscriminantAnalysis)
def emit_lda_decision(model: Any, g: GraphBuilder, x: ir.Value) -> ir.Value:
    return decision_function(g, model, x)

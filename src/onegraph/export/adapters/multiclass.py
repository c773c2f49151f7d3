"""scikit-learn's multiclass meta-estimators -> graph in double precision: ``OneVsRestClassifier``,
``OneVsOneClassifier``, ``OutputCodeClassifier``, over any member onegraph exports.

Follows ``sklearn.multiclass`` (scikit-learn 1.9). A member's binary score is ``_predict_binary``: a
regressor's ``predict``, else the ``decision_function`` (raveled), else ``predict_proba[:, 1]``; a class seen
alone in fit has a ``_ConstantPredictor`` (its one value on every row).

* ``OneVsRestClassifier.predict``: the class of the largest member score (the first of equal ones); with one
  member (two classes), the second class where the score is ``>`` 0 for a classifier with a decision function,
  ``>`` 0.5 else (``_threshold_for_binary_predict``). ``predict_proba``: the members' ``predict_proba[:, 1]``
  side by side (``[1 - p, p]`` for one member), each row divided by its sum where the sum is not 0.
  Multilabel targets are refused.
* ``OneVsOneClassifier.predict``: ``_ovr_decision_function`` of the pairwise members (class ``i`` against
  ``j > i``, in that order): votes from each member's ``predict`` (0: ``i``, 1: ``j``) plus the summed
  confidences mapped to ``(-1/3, 1/3)`` by ``s / (3 (|s| + 1))``; its argmax, or for two classes the second
  class where column 1 is ``>`` the member's binary threshold. No ``predict_proba``.
* ``OutputCodeClassifier.predict``: the class whose ``code_book_`` row is nearest (Euclidean, the first of
  equal ones) to the members' scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.multiclass as skm
from sklearn.base import is_classifier, is_regressor

from onegraph.emit import BOOL, DOUBLE, INT64, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.choose import emit_model
from onegraph.export.adapters.models import (
    ModelOutputs,
    emit_decision,
    label_from_index,
    register_model,
)
from onegraph.export.adapters.ops import (
    argmax_index,
    broadcast_rows,
    column,
    euclidean,
    f64,
    flat,
    i64,
    side_by_side,
)

__all__ = ["emit_one_vs_one", "emit_one_vs_rest", "emit_output_code"]


def _binary_score(est: Any, g: GraphBuilder, x: ir.Value, path: str) -> tuple[ir.Value, ModelOutputs | None]:
    """``_predict_binary(est, x)`` as ``[N]`` double, and the member's own outputs when they were emitted."""
    if isinstance(est, skm._ConstantPredictor):
        return _constant(g, x, float(np.ravel(est.y_)[0])), None
    with g.scope(path, est):
        if is_regressor(est):
            outs = emit_model(est, g, x)
            return flat(g, outs.values["prediction"]), outs
        if hasattr(est, "decision_function"):
            return flat(g, emit_decision(est, g, x)), None
        outs = emit_model(est, g, x)
        return flat(g, column(g, outs.values["probabilities"], 1)), outs


def _constant(g: GraphBuilder, x: ir.Value, value: float) -> ir.Value:
    """``value`` on every row of ``x``: ``[N]`` double (whatever ``x`` holds, NaN included)."""
    return flat(g, broadcast_rows(g, x, np.array([value], np.float64)))


def _binary_threshold(est: Any) -> float:
    """``_threshold_for_binary_predict``."""
    return 0.0 if hasattr(est, "decision_function") and is_classifier(est) else 0.5


def _above(g: GraphBuilder, score: ir.Value, threshold: float) -> ir.Value:
    """``(score > threshold)`` as class index 0 / 1 ``[N]`` int64."""
    return g.op("Cast", g.op("Greater", score, f64(g, threshold, "threshold"), dtype=BOOL), to=INT64, dtype=INT64)


def _member_probability(est: Any, outs: ModelOutputs | None, g: GraphBuilder, x: ir.Value, path: str) -> ir.Value:
    """``est.predict_proba(x)[:, 1]`` ``[N]``."""
    if isinstance(est, skm._ConstantPredictor):
        return _constant(g, x, float(np.ravel(est.y_)[0]))
    if outs is None:
        with g.scope(path, est):
            outs = emit_model(est, g, x)
    return flat(g, column(g, outs.values["probabilities"], 1))


@register_model(skm.OneVsRestClassifier)
def emit_one_vs_rest(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    if model.multilabel_:
        raise ExportError("OneVsRestClassifier fitted on a multilabel target cannot be exported yet",
                          hint="fit one classifier per label and compose them")
    classes = model.classes_
    members = [_binary_score(est, g, x, f"estimators_.{i}") for i, est in enumerate(model.estimators_)]
    if len(members) == 1:
        index = _above(g, members[0][0], _binary_threshold(model.estimators_[0]))
    else:
        index = argmax_index(g, side_by_side(g, [score for score, _ in members]))
    label = label_from_index(g, classes, index)
    if not hasattr(model.estimators_[0], "predict_proba"):
        return ModelOutputs.label_only(label, classes)
    p = [_member_probability(est, outs, g, x, f"estimators_.{i}")
         for i, (est, (_, outs)) in enumerate(zip(model.estimators_, members))]
    if len(p) == 1:
        p = [g.op("Sub", f64(g, 1.0, "one"), p[0], dtype=DOUBLE), p[0]]
    y = side_by_side(g, p)
    total = g.op("ReduceSum", y, i64(g, [1], "axes"), keepdims=1, dtype=DOUBLE)
    keep = g.op("Equal", total, f64(g, 0.0, "zero"), dtype=BOOL)  # np.divide(..., where=row_sums != 0)
    proba = g.op("Where", keep, y, g.op("Div", y, total, dtype=DOUBLE), dtype=DOUBLE)
    proba.shape = ir.Shape(["N", len(classes)])
    return ModelOutputs.classifier(label, proba, classes)


@register_model(skm.OneVsOneClassifier)
def emit_one_vs_one(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    if model.pairwise_indices_ is not None:
        raise ExportError("OneVsOneClassifier over a precomputed kernel cannot be exported",
                          hint="use a kernel the member computes from the features")
    n = len(model.classes_)
    zeros = _constant(g, x, 0.0)
    votes = [zeros] * n
    confidence = [zeros] * n
    k = 0
    for i in range(n):
        for j in range(i + 1, n):
            est = model.estimators_[k]
            score, _ = _binary_score(est, g, x, f"estimators_.{k}")
            with g.scope(f"estimators_.{k}", est):
                predicted = flat(g, emit_model(est, g, x).values["label"], INT64)
            to_j = g.op("Cast", g.op("Equal", predicted, i64(g, 1, "one_i"), dtype=BOOL), to=DOUBLE, dtype=DOUBLE)
            to_i = g.op("Cast", g.op("Equal", predicted, i64(g, 0, "zero_i"), dtype=BOOL), to=DOUBLE, dtype=DOUBLE)
            confidence[i] = g.op("Sub", confidence[i], score, dtype=DOUBLE)
            confidence[j] = g.op("Add", confidence[j], score, dtype=DOUBLE)
            votes[i] = g.op("Add", votes[i], to_i, dtype=DOUBLE)
            votes[j] = g.op("Add", votes[j], to_j, dtype=DOUBLE)
            k += 1
    s = side_by_side(g, confidence)
    scaled = g.op("Div", s, g.op("Mul", f64(g, 3.0, "three"), g.op("Add", g.op("Abs", s, dtype=DOUBLE),
                                                                   f64(g, 1.0, "one"), dtype=DOUBLE),
                                 dtype=DOUBLE), dtype=DOUBLE)
    y = g.op("Add", side_by_side(g, votes), scaled, dtype=DOUBLE)
    if n == 2:
        index = _above(g, flat(g, column(g, y, 1)), _binary_threshold(model.estimators_[0]))
    else:
        index = argmax_index(g, y)
    return ModelOutputs.label_only(label_from_index(g, model.classes_, index), model.classes_)


@register_model(skm.OutputCodeClassifier)
def emit_output_code(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    scores = [_binary_score(est, g, x, f"estimators_.{i}")[0] for i, est in enumerate(model.estimators_)]
    d = euclidean(g, side_by_side(g, scores), np.asarray(model.code_book_, np.float64), squared=True)
    index = g.op("ArgMin", d, axis=1, keepdims=0, select_last_index=0, dtype=INT64)
    return ModelOutputs.label_only(label_from_index(g, model.classes_, index), model.classes_)

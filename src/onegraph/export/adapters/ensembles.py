"""scikit-learn's meta-ensembles -> graph in double precision: Bagging, AdaBoost, Voting, Stacking.

Each member is emitted by its own adapter (:func:`~onegraph.export.adapters.choose.emit_model`), then
combined as scikit-learn 1.9 combines them:

* ``BaggingClassifier.predict_proba``: ``sum(member.predict_proba(X[:, features])) / n_estimators``
  (``_parallel_predict_proba``; a member that saw fewer classes fills its columns), ``predict`` its argmax;
  ``BaggingRegressor.predict``: ``sum(member.predict) / n_estimators``;
* ``AdaBoostClassifier.decision_function``: ``sum(where(member.predict == classes, w, -w / (K - 1))) /
  sum(w)`` (first column negated and summed for two classes), ``predict_proba`` ``softmax(decision /
  (K - 1))`` (binary: ``[-d, d] / 2``), ``predict`` ``d > 0`` / ``argmax``; ``AdaBoostRegressor.predict``:
  the weighted median of the members (``_get_median_predict``: members sorted by prediction, the first whose
  cumulative weight reaches half the total);
* ``VotingClassifier``: soft ``np.average(probas, weights)``; hard: weighted count of each member's label,
  first maximum; ``VotingRegressor``: ``np.average(predictions, weights)``;
* ``Stacking*``: the members' ``predict_proba`` (binary: the second column), ``decision_function`` or
  ``predict`` side by side (``_concatenate_predictions``), the input appended with ``passthrough``, then
  the final estimator.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.ensemble as ske

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
    add_all,
    argmax_index,
    column,
    columns,
    f64,
    flat,
    i64,
    one_hot_labels,
    pad_columns,
    positive_index,
    softmax,
)

__all__ = ["emit_bagging_classifier", "emit_bagging_regressor", "emit_adaboost_classifier",
           "emit_adaboost_regressor", "emit_voting_classifier", "emit_voting_regressor",
           "emit_stacking_classifier", "emit_stacking_regressor", "member_outputs"]


def member_outputs(est: Any, g: GraphBuilder, x: ir.Value, path: str) -> ModelOutputs:
    """One member's outputs, its nodes under scope ``path``."""
    with g.scope(path, est):
        return emit_model(est, g, x)


def _features(g: GraphBuilder, x: ir.Value, features: Any, n_features: int) -> ir.Value:
    features = np.asarray(features, np.int64)
    if len(features) == n_features and (features == np.arange(n_features)).all():
        return x
    return columns(g, x, features)


def _probabilities(outs: ModelOutputs, what: str) -> ir.Value:
    if "probabilities" not in outs.values:
        raise ExportError(f"{what} has no predict_proba", hint="use members with predict_proba")
    return outs.values["probabilities"]


@register_model(ske.BaggingClassifier)
def emit_bagging_classifier(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    k = len(model.classes_)
    parts = []
    for i, (est, feats) in enumerate(zip(model.estimators_, model.estimators_features_)):
        outs = member_outputs(est, g, _features(g, x, feats, model.n_features_in_), f"estimators_.{i}")
        if hasattr(est, "predict_proba"):
            p = pad_columns(g, _probabilities(outs, type(est).__name__), est.classes_, k)
        else:  # voting: one count for the predicted class (members predict class indices)
            p = g.op("Cast", one_hot_labels(g, outs.values["label"], np.arange(k)), to=DOUBLE, dtype=DOUBLE)
        parts.append(p)
    proba = g.op("Div", add_all(g, parts), f64(g, float(model.n_estimators), "n_estimators"), dtype=DOUBLE)
    proba.shape = ir.Shape(["N", k])
    return ModelOutputs.classifier(label_from_index(g, model.classes_, argmax_index(g, proba)), proba,
                                   model.classes_)


def _prediction(outs: ModelOutputs, what: str) -> ir.Value:
    if "prediction" not in outs.values:
        raise ExportError(f"{what} gives no prediction")
    return outs.values["prediction"]


@register_model(ske.BaggingRegressor)
def emit_bagging_regressor(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    preds = [_prediction(member_outputs(est, g, _features(g, x, feats, model.n_features_in_), f"estimators_.{i}"),
                         type(est).__name__)
             for i, (est, feats) in enumerate(zip(model.estimators_, model.estimators_features_))]
    y = g.op("Div", add_all(g, preds), f64(g, float(model.n_estimators), "n_estimators"), dtype=DOUBLE)
    return ModelOutputs.regressor(flat(g, y))


@register_model(ske.AdaBoostClassifier)
def emit_adaboost_classifier(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    k = model.n_classes_
    if k == 1:
        raise ExportError("AdaBoostClassifier fitted on one class cannot be exported")
    parts = []
    for i, (est, w) in enumerate(zip(model.estimators_, model.estimator_weights_)):
        label = member_outputs(est, g, x, f"estimators_.{i}").values["label"]
        hit = one_hot_labels(g, label, model.classes_)
        parts.append(g.op("Where", hit, f64(g, w, "w"), f64(g, -1 / (k - 1) * w, "w_other"), dtype=DOUBLE))
    pred = g.op("Div", add_all(g, parts), f64(g, model.estimator_weights_.sum(), "w_total"), dtype=DOUBLE)
    if k == 2:
        d = g.op("ReduceSum", g.op("Mul", pred, f64(g, [[-1.0, 1.0]], "flip_first"), dtype=DOUBLE),
                 i64(g, [1], "axes"), keepdims=1, dtype=DOUBLE)
        pair = g.op("Concat", g.op("Neg", d, dtype=DOUBLE), d, axis=1, dtype=DOUBLE)
        proba = softmax(g, g.op("Div", pair, f64(g, 2.0, "two"), dtype=DOUBLE))
        index = positive_index(g, d)
    else:
        proba = softmax(g, g.op("Div", pred, f64(g, float(k - 1), "k_minus_1"), dtype=DOUBLE))
        index = argmax_index(g, pred)
    proba.shape = ir.Shape(["N", k])
    return ModelOutputs.classifier(label_from_index(g, model.classes_, index), proba, model.classes_)


@register_model(ske.AdaBoostRegressor)
def emit_adaboost_regressor(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    m = len(model.estimators_)
    preds = [g.op("Unsqueeze", _prediction(member_outputs(est, g, x, f"estimators_.{i}"), type(est).__name__),
                  i64(g, [1], "axis1"), dtype=DOUBLE) for i, est in enumerate(model.estimators_)]
    predictions = g.op("Concat", *preds, axis=1, dtype=DOUBLE)  # [N, m]
    _, order = g.op("TopK", predictions, i64(g, [m], "m"), axis=1, largest=0, sorted=1, outputs=2)
    order.dtype = INT64
    weights = np.asarray(model.estimator_weights_[:m], np.float64)
    cdf = g.op("CumSum", g.op("Gather", g.const(weights, "weights"), order, axis=0, dtype=DOUBLE),
               i64(g, 1, "axis"), dtype=DOUBLE)
    last = column(g, cdf, m - 1)
    reached = g.op("GreaterOrEqual", cdf, g.op("Mul", f64(g, 0.5, "half"), last, dtype=DOUBLE), dtype=BOOL)
    first = g.op("ArgMax", g.op("Cast", reached, to=INT64, dtype=INT64), axis=1, keepdims=1, dtype=INT64)
    chosen = g.op("GatherElements", order, first, axis=1, dtype=INT64)
    y = g.op("GatherElements", predictions, chosen, axis=1, dtype=DOUBLE)
    return ModelOutputs.regressor(flat(g, y))


def _weights(model: Any) -> np.ndarray | None:
    w = model._weights_not_none
    return None if w is None else np.asarray(w, np.float64)


def _average(g: GraphBuilder, parts: list[ir.Value], weights: np.ndarray | None) -> ir.Value:
    """``np.average(stack(parts), axis=0, weights=weights)``."""
    if weights is None:
        return g.op("Div", add_all(g, parts), f64(g, float(len(parts)), "n_members"), dtype=DOUBLE)
    scaled = [g.op("Mul", p, f64(g, w, "weight"), dtype=DOUBLE) for p, w in zip(parts, weights)]
    return g.op("Div", add_all(g, scaled), f64(g, weights.sum(), "weight_total"), dtype=DOUBLE)


@register_model(ske.VotingClassifier)
def emit_voting_classifier(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    classes = model.classes_
    k = len(classes)
    members = [member_outputs(est, g, x, f"estimators_.{i}") for i, est in enumerate(model.estimators_)]
    if model.voting == "soft":
        proba = _average(g, [_probabilities(o, "a soft-voting member") for o in members], _weights(model))
        proba.shape = ir.Shape(["N", k])
        return ModelOutputs.classifier(label_from_index(g, classes, argmax_index(g, proba)), proba, classes)
    weights = _weights(model)
    votes = []
    for i, o in enumerate(members):  # members predict the encoded classes 0 .. k-1
        hit = g.op("Cast", one_hot_labels(g, o.values["label"], np.arange(k)), to=DOUBLE, dtype=DOUBLE)
        votes.append(hit if weights is None else g.op("Mul", hit, f64(g, weights[i], "weight"), dtype=DOUBLE))
    return ModelOutputs.label_only(label_from_index(g, classes, argmax_index(g, add_all(g, votes))), classes)


@register_model(ske.VotingRegressor)
def emit_voting_regressor(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    preds = [_prediction(member_outputs(est, g, x, f"estimators_.{i}"), type(est).__name__)
             for i, est in enumerate(model.estimators_)]
    return ModelOutputs.regressor(flat(g, _average(g, preds, _weights(model))))


def _stacked(model: Any, g: GraphBuilder, x: ir.Value, binary: bool) -> ir.Value:
    parts = []
    for i, (est, method) in enumerate(zip(model.estimators_, model.stack_method_)):
        if est == "drop":
            continue
        path = f"estimators_.{i}"
        if method == "predict_proba":
            p = _probabilities(member_outputs(est, g, x, path), type(est).__name__)
            parts.append(column(g, p, 1) if binary else p)
        elif method == "decision_function":
            with g.scope(path, est):
                parts.append(emit_decision(est, g, x))
        elif method == "predict":
            outs = member_outputs(est, g, x, path)
            y = outs.values.get("prediction", outs.values.get("label"))
            if y.dtype != DOUBLE:
                y = g.op("Cast", y, to=DOUBLE, dtype=DOUBLE)
            shape = y.shape
            if shape is None or len(shape) == 1:
                y = g.op("Unsqueeze", y, i64(g, [1], "axis1"), dtype=DOUBLE)
            parts.append(y)
        else:
            raise ExportError(f"stacking through {type(est).__name__}.{method} cannot be exported")
    if model.passthrough:
        parts.append(x)
    out = parts[0] if len(parts) == 1 else g.op("Concat", *parts, axis=1, dtype=DOUBLE)
    return out


@register_model(ske.StackingClassifier)
def emit_stacking_classifier(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    if isinstance(model._label_encoder, list):
        raise ExportError("a multilabel StackingClassifier cannot be exported")
    classes = model.classes_
    meta = _stacked(model, g, x, len(classes) == 2)
    final = member_outputs(model.final_estimator_, g, meta, "final_estimator_")
    # the label is read from the final estimator's answer in its own scope: stacking nodes after the final
    # estimator's would leave its function call between two parts of the stacking group (not convex)
    with g.scope("final_estimator_", model.final_estimator_):
        if "probabilities" in final.values:
            proba = final.values["probabilities"]
            index = argmax_index(g, proba)
            return ModelOutputs.classifier(label_from_index(g, classes, index), proba, classes)
        # the final estimator predicts the encoded classes: map them back
        encoded = final.values["label"]
        if encoded.dtype != INT64:
            encoded = g.op("Cast", encoded, to=INT64, dtype=INT64)
        return ModelOutputs.label_only(label_from_index(g, classes, encoded), classes)


@register_model(ske.StackingRegressor)
def emit_stacking_regressor(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    meta = _stacked(model, g, x, False)
    return ModelOutputs.regressor(_prediction(member_outputs(model.final_estimator_, g, meta, "final_estimator_"),
                                              "the final estimator"))

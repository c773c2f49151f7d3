"""scikit-learn's decision-threshold classifiers -> graph in double precision: ``FixedThresholdClassifier``
and ``TunedThresholdClassifierCV``.

Follows ``sklearn.model_selection._classification_threshold`` (scikit-learn 1.9): ``predict`` takes the
binary score of ``estimator_`` (``_get_response_values_binary``: the first of ``response_method`` the estimator
has, ``"auto"`` being ``["predict_proba", "decision_function"]``; ``predict_proba``'s column of the positive
class, or ``decision_function`` negated when the positive class is ``classes_[0]``) and labels a row with the
positive class where the score is ``>=`` the threshold (``_threshold_scores_to_class_labels``), the other class
elsewhere. The threshold is ``best_threshold_`` for the tuned classifier; for the fixed one ``threshold``, or
with ``threshold="auto"`` 0.5 on probabilities and 0 on a decision function. ``predict_proba`` is the
estimator's own, unthresholded.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
from sklearn.model_selection import FixedThresholdClassifier, TunedThresholdClassifierCV

from onegraph.emit import GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.choose import emit_model
from onegraph.export.adapters.models import (
    ModelOutputs,
    emit_decision,
    label_from_index,
    register_model,
    unfrozen,
)
from onegraph.export.adapters.ops import column, threshold_index

__all__ = ["emit_threshold_classifier"]


def _pos_label(model: Any) -> Any:
    """The positive class ``predict`` thresholds, ``None`` for scikit-learn's default (the last class)."""
    if isinstance(model, TunedThresholdClassifierCV):
        return model._curve_scorer._get_pos_label()
    return model.pos_label


def _response_method(model: Any, est: Any) -> str:
    wanted = model._get_response_method()
    for method in [wanted] if isinstance(wanted, str) else wanted:
        if hasattr(est, method):
            return method
    raise ExportError(f"{type(model).__name__}'s estimator {type(est).__name__} has none of {wanted}",
                      hint="refit it with a response_method the estimator has")


@register_model(FixedThresholdClassifier, TunedThresholdClassifierCV)
def emit_threshold_classifier(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    est = unfrozen(getattr(model, "estimator_", model.estimator))  # an unfitted Fixed... may wrap a fitted one
    classes = np.asarray(model.classes_)
    pos_label = _pos_label(model)
    pos = len(classes) - 1 if pos_label is None else int(np.flatnonzero(classes == pos_label)[0])
    neg = 0 if pos_label is None else int(np.flatnonzero(classes != pos_label)[0])
    method = _response_method(model, est)
    with g.scope("estimator_", est):
        # the estimator's own outputs only where they are used: its probabilities (the score, or an output)
        inner = emit_model(est, g, x).values if hasattr(est, "predict_proba") else {}
        if method == "predict_proba":
            score = column(g, inner["probabilities"], pos)
        else:
            score = emit_decision(est, g, x)
            if pos == 0:  # scikit-learn's _process_decision_function: the score of classes_[0] is -decision
                score = g.op("Neg", score, dtype=score.dtype)
    if isinstance(model, TunedThresholdClassifierCV):
        threshold = float(model.best_threshold_)
    elif model.threshold == "auto":
        threshold = 0.5 if method == "predict_proba" else 0.0
    else:
        threshold = float(model.threshold)
    label = label_from_index(g, classes, threshold_index(g, score, threshold, pos, neg))
    if "probabilities" in inner:
        return ModelOutputs.classifier(label, inner["probabilities"], classes)
    return ModelOutputs.label_only(label, classes)

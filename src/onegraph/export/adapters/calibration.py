"""scikit-learn's ``CalibratedClassifierCV`` -> graph in double precision (calibrated probabilities).

Follows ``sklearn.calibration`` (scikit-learn 1.9): each of ``calibrated_classifiers_`` takes its estimator's
``decision_function`` (linear classifiers) or else ``predict_proba`` (the positive column of a binary
problem), maps column ``j`` through calibrator ``j`` — ``sigmoid``: ``expit(-(a * f + b))``
(``_SigmoidCalibration``); ``isotonic``: linear interpolation between ``X_thresholds_`` / ``y_thresholds_``,
clipped to their range (``IsotonicRegression.predict``, scipy's ``interp1d``) — then gives
``[1 - p, p]`` (binary) or normalizes the rows (uniform where a row sums to 0), sets values in
``(1, 1 + 1e-5]`` to 1, and the model averages the calibrated classifiers. The label is the class of the
largest mean probability (``CalibratedClassifierCV.predict``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
from sklearn.calibration import CalibratedClassifierCV

from onegraph.emit import BOOL, DOUBLE, INT64, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.choose import emit_model
from onegraph.export.adapters.models import (
    ModelOutputs,
    emit_decision,
    label_from_index,
    register_model,
    unfrozen,
)
from onegraph.export.adapters.ops import expit

__all__ = ["emit_calibrated_classifier"]


def _response(g: GraphBuilder, est: Any, x: ir.Value, n_classes: int) -> ir.Value:
    """``_get_response_values(est, X, ["decision_function", "predict_proba"])`` as ``[N, k]``."""
    if hasattr(est, "decision_function"):
        return emit_decision(est, g, x)
    proba = emit_model(est, g, x).values["probabilities"]
    if n_classes == 2:
        return g.op("Slice", proba, g.const(np.array([1], np.int64), "start"), g.const(np.array([2], np.int64), "stop"),
                    g.const(np.array([1], np.int64), "axes"), dtype=DOUBLE)
    return proba


def _column(g: GraphBuilder, f: ir.Value, j: int) -> ir.Value:
    return g.op("Gather", f, g.const(np.array([j], np.int64), "col"), axis=1, dtype=DOUBLE)


def _calibrate(g: GraphBuilder, calibrator: Any, method: str, f: ir.Value) -> ir.Value:
    """One calibrator on ``f`` ``[N, 1]``."""
    if method == "sigmoid":
        z = g.op("Add", g.op("Mul", f, g.const(np.float64(calibrator.a_), "a"), dtype=DOUBLE),
                 g.const(np.float64(calibrator.b_), "b"), dtype=DOUBLE)
        return expit(g, g.op("Neg", z, dtype=DOUBLE))
    if method != "isotonic":
        raise ExportError(f"CalibratedClassifierCV(method={method!r}) cannot be exported yet",
                          hint="use method='sigmoid' or 'isotonic'")
    xs = np.asarray(calibrator.X_thresholds_, np.float64)
    ys = np.asarray(calibrator.y_thresholds_, np.float64)
    t = g.op("Clip", f, g.const(np.float64(calibrator.X_min_), "x_min"), g.const(np.float64(calibrator.X_max_), "x_max"),
             dtype=DOUBLE)
    if len(xs) == 1:
        return g.op("Add", g.op("Mul", t, g.const(np.float64(0.0), "zero"), dtype=DOUBLE), g.const(ys, "y"),
                    dtype=DOUBLE)
    # scipy's interp1d: hi = clip(searchsorted(xs, t, "left"), 1, m - 1), lo = hi - 1,
    # y = slope[lo] * (t - xs[lo]) + ys[lo]
    below = g.op("Cast", g.op("Less", g.const(xs.reshape(1, -1), "x_thresholds"), t, dtype=BOOL), to=INT64, dtype=INT64)
    count = g.op("ReduceSum", below, g.const(np.array([1], np.int64), "axes"), keepdims=1, dtype=INT64)
    lo = g.op("Sub", g.op("Clip", count, g.const(np.int64(1), "one_i"), g.const(np.int64(len(xs) - 1), "last"),
                          dtype=INT64), g.const(np.int64(1), "one_i"), dtype=INT64)
    slope = (ys[1:] - ys[:-1]) / (xs[1:] - xs[:-1])
    pick = lambda arr, hint: g.op("Gather", g.const(arr, hint), lo, axis=0, dtype=DOUBLE)
    offset = g.op("Sub", t, pick(xs[:-1], "x_lo"), dtype=DOUBLE)
    return g.op("Add", g.op("Mul", pick(slope, "slope"), offset, dtype=DOUBLE), pick(ys[:-1], "y_lo"), dtype=DOUBLE)


def _calibrated_proba(g: GraphBuilder, cc: Any, x: ir.Value, classes: np.ndarray) -> ir.Value:
    n = len(classes)
    est = unfrozen(cc.estimator)
    f = _response(g, est, x, n)
    index = {c: i for i, c in enumerate(classes)}
    columns: dict[int, ir.Value] = {}
    for j, (cls, calibrator) in enumerate(zip(est.classes_, cc.calibrators)):
        columns[index[cls] + (1 if n == 2 else 0)] = _calibrate(g, calibrator, cc.method, _column(g, f, j))
    if n == 2:
        p = columns[1]
        return g.op("Concat", g.op("Sub", g.const(np.float64(1.0), "one"), p, dtype=DOUBLE), p, axis=1, dtype=DOUBLE)
    zero = None
    parts = []
    for i in range(n):
        if i not in columns:  # a class this fold's estimator never saw
            zero = zero or g.op("Mul", columns[next(iter(columns))], g.const(np.float64(0.0), "zero"), dtype=DOUBLE)
            parts.append(zero)
        else:
            parts.append(columns[i])
    proba = g.op("Concat", *parts, axis=1, dtype=DOUBLE)
    total = g.op("ReduceSum", proba, g.const(np.array([1], np.int64), "axes"), keepdims=1, dtype=DOUBLE)
    empty = g.op("Equal", total, g.const(np.float64(0.0), "zero"), dtype=BOOL)
    uniform = g.const(np.full((1, n), 1.0 / n), "uniform")
    return g.op("Where", empty, uniform, g.op("Div", proba, total, dtype=DOUBLE), dtype=DOUBLE)


@register_model(CalibratedClassifierCV)
def emit_calibrated_classifier(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    classes = np.asarray(model.classes_)
    total = None
    for cc in model.calibrated_classifiers_:
        p = _calibrated_proba(g, cc, x, classes)
        over = g.op("And", g.op("Less", g.const(np.float64(1.0), "one"), p, dtype=BOOL),
                    g.op("LessOrEqual", p, g.const(np.float64(1.0 + 1e-5), "one_eps"), dtype=BOOL), dtype=BOOL)
        p = g.op("Where", over, g.const(np.float64(1.0), "one"), p, dtype=DOUBLE)
        total = p if total is None else g.op("Add", total, p, dtype=DOUBLE)
    proba = g.op("Div", total, g.const(np.float64(len(model.calibrated_classifiers_)), "n_calibrated"), dtype=DOUBLE)
    proba.shape = ir.Shape(["N", len(classes)])
    index = g.op("ArgMax", proba, axis=1, keepdims=0, dtype=INT64)
    return ModelOutputs.classifier(label_from_index(g, classes, index), proba, classes)

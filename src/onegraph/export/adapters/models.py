"""Fitted models -> graph outputs: the model adapter contract and its registry.

A model adapter takes the feature matrix ``x`` (``[N, F]`` double, built from the preprocessing's output
columns) and returns :class:`ModelOutputs`: for a classifier ``label`` (``[N]``, the classes' own type:
string, int64, double or bool) and ``probabilities`` (``[N, n_classes]`` double, no ZipMap); for a regressor
``prediction`` (``[N]`` double, ``[N, n_outputs]`` for several outputs).

Tree models have onegraph's own double-precision adapter (:mod:`.trees`); every other scikit-learn model
goes through skl2onnx, converted with a double input.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx_ir as ir
from sklearn.base import is_classifier

from onegraph.emit import (
    BOOL,
    DOUBLE,
    FLOAT,
    INT64,
    ML_OPSET,
    OPSET,
    STRING,
    GraphBuilder,
)
from onegraph.errors import ExportError
from onegraph.registry import registrar

__all__ = [
    "ModelOutputs",
    "emit_decision",
    "emit_registered",
    "label_from_index",
    "register_decision",
    "register_model",
    "skl2onnx_graph",
    "unfrozen",
    "unscored_labels_missing",
]


@dataclasses.dataclass
class ModelOutputs:
    """Named outputs of one model, with their roles and the class labels of a classifier."""

    values: dict[str, ir.Value]
    classes: list | None = None
    #: the metadata role of each key of ``values`` that is not itself a role (an ONNX file's own output names:
    #: a preprocessing's ``feature`` columns, a graph's plain ``output``)
    roles: dict[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def classifier(cls, label: ir.Value, probabilities: ir.Value, classes: Any) -> ModelOutputs:
        return cls({"label": label, "probabilities": probabilities}, [_plain(c) for c in classes])

    @classmethod
    def label_only(cls, label: ir.Value, classes: Any) -> ModelOutputs:
        """A classifier without ``predict_proba`` (LinearSVC, RidgeClassifier...): its label alone."""
        return cls({"label": label}, [_plain(c) for c in classes])

    @classmethod
    def regressor(cls, prediction: ir.Value) -> ModelOutputs:
        return cls({"prediction": prediction})


def unscored_labels_missing(g: GraphBuilder, values: dict[str, ir.Value]) -> dict[str, ir.Value]:
    """``values`` with ``label`` / ``top_labels`` missing on rows whose probabilities hold NaN.

    A missing feature a model cannot take (scikit-learn's ``predict`` refuses NaN) makes its probabilities
    NaN; the label computed from them (an ``ArgMax`` or a threshold on NaN) would read as a confident class.
    Missing is the column's missing value: ``MISSING_STRING`` for text labels (``None`` once scored),
    ``INT64_MIN`` for integer labels (``pd.NA``), NaN for float labels; bool labels have none and are kept.
    """
    from onegraph.contract.columns import MISSING_STRING
    from onegraph.emit import INT64_MIN

    probabilities = values.get("probabilities", values.get("top_probabilities"))
    if probabilities is None or not any(r in values for r in ("label", "top_labels")):
        return values
    if probabilities.shape is not None and len(probabilities.shape) != 2:
        return values
    total = g.op("ReduceSum", probabilities, g.const(np.array([1], np.int64), "axis1"), keepdims=0,
                 dtype=probabilities.dtype)  # NaN in any column makes the sum NaN (probabilities are finite)
    unscored = g.op("IsNaN", total, dtype=BOOL)
    missing = {STRING: np.array(MISSING_STRING, dtype=object), INT64: np.int64(INT64_MIN),
               DOUBLE: np.float64(np.nan), FLOAT: np.float32(np.nan)}
    out = dict(values)
    for role in ("label", "top_labels"):
        label = values.get(role)
        if label is None or label.dtype not in missing or _guarded(label, probabilities):
            continue
        rows = unscored
        if role == "top_labels":
            rows = g.op("Unsqueeze", unscored, g.const(np.array([1], np.int64), "axis1"), dtype=BOOL)
        shape = label.shape
        out[role] = g.op("Where", rows, g.const(missing[label.dtype], "missing_label"), label, dtype=label.dtype)
        out[role].shape = shape
    return out


def _guarded(label: ir.Value, probabilities: ir.Value) -> bool:
    """Whether ``label`` is already ``Where(IsNaN(ReduceSum(probabilities)), missing, ...)`` (a model built
    by onegraph, spliced into a merge): the guard is not added twice."""
    node = label.producer()
    cond = node.inputs[0].producer() if node is not None and node.op_type == "Where" else None
    total = cond.inputs[0].producer() if cond is not None and cond.op_type == "IsNaN" else None
    return total is not None and total.op_type == "ReduceSum" and total.inputs[0] is probabilities


def searched(obj: Any) -> Any:
    """``obj``, or for a fitted ``GridSearchCV`` / ``RandomizedSearchCV`` / ``Halving*SearchCV`` its
    ``best_estimator_`` (searches within searches too): scikit-learn's ``BaseSearchCV.predict`` /
    ``transform`` call ``best_estimator_``'s, so the search's own pipeline is exported as any pipeline.

    Raises
    ------
    ExportError
        for a search fitted with ``refit=False``, which keeps no fitted model.
    """
    from sklearn.model_selection._search import BaseSearchCV

    while isinstance(obj, BaseSearchCV):
        if not hasattr(obj, "best_estimator_"):
            raise ExportError(f"{type(obj).__name__} was fitted with refit=False and keeps no fitted model",
                              hint="fit it with refit=True, or export the estimator refitted with best_params_")
        obj = obj.best_estimator_
    return obj


def unfrozen(est: Any) -> Any:
    """The estimator inside scikit-learn's ``FrozenEstimator`` (a prefit member of a meta-estimator), else ``est``."""
    return est.estimator if type(est).__name__ == "FrozenEstimator" else est


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


ModelAdapter = Callable[[Any, GraphBuilder, ir.Value], ModelOutputs]
_MODELS: dict[type, ModelAdapter] = {}


#: ``@register_model(*classes)`` registers ``fn(model, builder, x) -> ModelOutputs`` as the adapter of fitted
#: ``classes``
register_model = registrar(_MODELS)


DecisionAdapter = Callable[[Any, GraphBuilder, ir.Value], ir.Value]
_DECISIONS: dict[type, DecisionAdapter] = {}

#: ``@register_decision(*classes)`` registers ``fn(model, builder, x) -> [N, k] double``: the model's
#: ``decision_function`` (``[N, 1]`` for a binary one), which stacking and calibration read
register_decision = registrar(_DECISIONS)


def emit_decision(model: Any, g: GraphBuilder, x: ir.Value) -> ir.Value:
    """Fitted ``model``'s ``decision_function`` on ``x`` as ``[N, k]`` double (``[N, 1]`` when scikit-learn
    returns ``[N]``).

    Raises
    ------
    ExportError
        when no decision function is registered for the model's class.
    """
    for cls in type(model).__mro__:
        if cls in _DECISIONS:
            return _DECISIONS[cls](model, g, x)
    raise ExportError(f"{type(model).__name__}.decision_function has no graph adapter",
                      hint="use a member whose predict_proba or predict is exported instead")


def emit_registered(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    """The outputs of fitted scikit-learn ``model`` applied to ``x`` ``[N, F]`` double: its registered adapter
    (:func:`register_model`), else skl2onnx's converter.

    Raises
    ------
    ExportError
        when the model is not fitted, or no adapter nor skl2onnx converter exists for it.
    """
    if not hasattr(model, "n_features_in_") and not hasattr(model, "classes_") and not hasattr(model, "coef_"):
        raise ExportError(f"{type(model).__name__} is not fitted", hint="call fit before building")
    for cls in type(model).__mro__:
        if cls in _MODELS:
            return _MODELS[cls](model, g, x)
    return _skl2onnx_model(model, g, x)


def label_from_index(g: GraphBuilder, classes: Any, index: ir.Value) -> ir.Value:
    """``classes[index]`` with the classes' own element type (string, int64, double, bool)."""
    arr = np.asarray(classes)
    if arr.dtype.kind in "OUS":
        table, dtype = np.asarray([str(c) for c in arr], dtype=object), STRING
    elif arr.dtype.kind == "b":
        table, dtype = arr.astype(bool), BOOL
    elif arr.dtype.kind in "iu":
        table, dtype = arr.astype(np.int64), INT64
    else:
        table, dtype = arr.astype(np.float64), DOUBLE
    return g.op("Gather", g.const(table, "classes"), index, axis=0, dtype=dtype)


def skl2onnx_graph(est: Any, g: GraphBuilder, x: ir.Value, n_features: int | None, what: str,
                   options: dict | None = None) -> tuple[Any, ir.Value]:
    """skl2onnx's graph for ``est`` and the value to feed its input ``X``.

    Converted with a double input when skl2onnx's graph for it is valid; some converters mix float32
    constants into a double graph (PolynomialFeatures, KBinsDiscretizer), so a graph failing the ONNX checker
    is converted again in float32, fed through a Cast (the parity check then judges the precision).
    """
    import onnx
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    failure: Exception | None = None
    for tensor_type, dtype in ((DoubleTensorType, DOUBLE), (FloatTensorType, FLOAT)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                proto = convert_sklearn(est, initial_types=[("X", tensor_type([None, n_features]))],
                                        target_opset={"": OPSET, "ai.onnx.ml": ML_OPSET}, options=options)
            onnx.checker.check_model(proto, full_check=True)
        except Exception as exc:  # skl2onnx and the checker raise many types for unsupported estimators
            failure = failure or exc
            continue
        return proto, (x if dtype == DOUBLE else g.op("Cast", x, to=FLOAT, dtype=FLOAT))
    raise ExportError(f"{what} cannot be exported: {_converter_failure(failure)}",
                      hint="use onegraph's transformers or a model onegraph or skl2onnx supports")


def _converter_failure(exc: Exception | None) -> str:
    """skl2onnx's or the checker's reason in one line: skl2onnx's missing-converter message is 14 lines of
    advice on registering a converter, which a user of onegraph cannot act on."""
    text = str(exc).strip()
    if "Unable to find a shape calculator" in text or "Unable to find a converter" in text:
        return "neither onegraph nor skl2onnx has a converter for it"
    first = text.splitlines()[0].strip() if text else type(exc).__name__
    return first if len(first) <= 300 else first[:297] + "..."


def _skl2onnx_model(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    from onegraph.export.adapters.onnx_graph import splice

    classifier = is_classifier(model)
    proto, x_in = skl2onnx_graph(model, g, x, getattr(model, "n_features_in_", None), type(model).__name__,
                                 options={type(model): {"zipmap": False}} if classifier else None)
    outs = splice(g, proto, {"X": x_in}, prefix=g.unique(type(model).__name__) + "/", what=type(model).__name__)
    label = outs.get("label")
    if classifier and np.asarray(model.classes_).dtype.kind == "b" and label.dtype != BOOL:
        label = g.op("Cast", label, to=BOOL, dtype=BOOL)  # skl2onnx writes bool classes as 0/1
    if classifier and not hasattr(model, "predict_proba"):
        return ModelOutputs.label_only(label, model.classes_)
    if classifier:
        proba = outs["probabilities"]
        if proba.dtype != DOUBLE:
            proba = g.op("Cast", proba, to=DOUBLE, dtype=DOUBLE)
        return ModelOutputs.classifier(label, proba, model.classes_)
    if len(outs) != 1:  # an estimator type skl2onnx converts but onegraph gives no meaning to its outputs
        raise ExportError(f"{type(model).__name__} cannot be exported: skl2onnx gives it {len(outs)} outputs "
                          f"({', '.join(outs)}) where onegraph expects a regressor's one prediction",
                          hint="use a classifier, regressor or outlier detector onegraph supports")
    (pred,) = outs.values()
    shape = pred.shape  # skl2onnx's declared [N, n_outputs], before a Cast's new value (which has none)
    if pred.dtype != DOUBLE:
        pred = g.op("Cast", pred, to=DOUBLE, dtype=DOUBLE)
        pred.shape = shape
    if shape is None or len(shape) < 2 or shape[1] == 1:
        pred = g.op("Reshape", pred, g.const(np.array([-1], np.int64), "flat"), dtype=DOUBLE)
    return ModelOutputs.regressor(pred)

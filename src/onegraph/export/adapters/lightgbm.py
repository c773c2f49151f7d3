"""LightGBM models (``LGBMClassifier`` / ``LGBMRegressor``) -> ``TreeEnsemble`` in double precision, as LightGBM
computes.

LightGBM compares double features with double thresholds and sums double leaf values (``Tree::Predict``,
LightGBM 4, ``include/LightGBM/tree.h``); onnxmltools writes float32 trees. This adapter reads the model
(``booster_.dump_model()``: thresholds and leaf values printed with 17 digits) and writes each split as
LightGBM decides it:

* numerical (``decision_type "<="``): ``x <= threshold`` goes left; a missing value follows
  ``missing_type``: ``"NaN"``: ``default_left``; ``"None"``: read as 0 (so left where ``0 <= threshold``);
  ``"Zero"``: zero (``|x| <= 1e-35``) and NaN follow ``default_left`` (the graph maps them to NaN first);
* categorical (``"=="``, ``threshold "a||b||c"``): ``int(x)`` in the set goes left, anything else (NaN,
  negative, unseen) right: a chain of ``BRANCH_EQ`` nodes on the truncated feature;
* the raw score is the sum of the trees of each class (``num_tree_per_iteration``; averaged for
  ``average_output``), then the objective's transform: identity (regression, l1, huber, quantile, ...),
  ``exp`` (poisson, gamma, tweedie), ``1 / (1 + exp(-sigmoid * s))`` (binary, cross-entropy), softmax
  (multiclass). ``LGBMClassifier.predict`` is the argmax of ``predict_proba``.

Categorical features are numbers (codes) here, as LightGBM reads them: encode text before the model
(``OrdinalEncoder``) and pass ``categorical_feature`` to ``fit``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir

from onegraph.emit import BOOL, DOUBLE, INT64, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.models import ModelOutputs, label_from_index
from onegraph.export.adapters.ops import argmax_index, binary_pair, expit, f64, softmax
from onegraph.export.adapters.sklearn_model import SklearnModel
from onegraph.export.adapters.trees import TreeArrays, tree_ensemble

__all__ = ["LightGBMModel", "lightgbm_trees"]

_IDENTITY = {"regression", "regression_l2", "l2", "mean_squared_error", "mse", "regression_l1", "l1",
             "mean_absolute_error", "mae", "huber", "fair", "quantile", "mape", "mean_absolute_percentage_error"}
_EXP = {"poisson", "gamma", "tweedie"}
_SIGMOID = {"binary", "cross_entropy", "xentropy"}
_ZERO_THRESHOLD = 1e-35
_EQ = 4


class _Builder:
    """Collects one LightGBM tree as :class:`TreeArrays` (categorical splits as ``BRANCH_EQ`` chains)."""

    def __init__(self) -> None:
        self.left, self.right, self.feature, self.threshold, self.missing, self.value, self.mode = \
            ([] for _ in range(7))

    def new(self) -> int:
        for a, v in ((self.left, -1), (self.right, -1), (self.feature, 0), (self.threshold, 0.0),
                     (self.missing, False), (self.value, 0.0), (self.mode, 0)):
            a.append(v)
        return len(self.left) - 1

    def add(self, node: dict, kinds: dict[int, str]) -> int:
        me = self.new()
        if "leaf_value" in node:
            self.value[me] = float(node["leaf_value"])
            return me
        f = int(node["split_feature"])
        if node["decision_type"] == "==":
            kinds[f] = _kind(kinds, f, "categorical")
            cats = [int(c) for c in str(node["threshold"]).split("||")]
            left = self.add(node["left_child"], kinds)
            right = self.add(node["right_child"], kinds)
            node_id = me
            for i, c in enumerate(cats):  # x == c0 ? left : (x == c1 ? left : ... right)
                self.feature[node_id], self.threshold[node_id], self.mode[node_id] = f, float(c), _EQ
                self.left[node_id] = left
                self.right[node_id] = right if i == len(cats) - 1 else self.new()
                node_id = self.right[node_id]
            return me
        if node["decision_type"] != "<=":
            raise ExportError(f"LightGBM split {node['decision_type']!r} cannot be exported")
        missing = node.get("missing_type", "None")
        threshold = float(node["threshold"])
        self.feature[me], self.threshold[me] = f, threshold
        if missing == "NaN":
            self.missing[me] = bool(node["default_left"])
        elif missing == "Zero":
            kinds[f] = _kind(kinds, f, "zero")
            self.missing[me] = bool(node["default_left"])
        else:
            self.missing[me] = 0.0 <= threshold
        self.left[me] = self.add(node["left_child"], kinds)
        self.right[me] = self.add(node["right_child"], kinds)
        return me

    def arrays(self, target: int) -> TreeArrays:
        return TreeArrays(left=np.asarray(self.left, np.int64), right=np.asarray(self.right, np.int64),
                          feature=np.asarray(self.feature, np.int64), threshold=np.asarray(self.threshold),
                          missing_left=np.asarray(self.missing, bool), leaf_value=np.asarray(self.value),
                          target=target, mode=np.asarray(self.mode, np.uint8))


def _kind(kinds: dict[int, str], f: int, kind: str) -> str:
    if kinds.get(f, kind) != kind:
        raise ExportError(f"LightGBM feature {f} is split both as {kinds[f]} and as {kind}")
    return kind


def lightgbm_trees(dump: dict) -> tuple[list[TreeArrays], dict[int, str]]:
    """The trees of ``booster.dump_model()`` and the features read specially (``"categorical"``: truncated to
    an integer, ``"zero"``: zero taken as missing)."""
    k = int(dump["num_tree_per_iteration"])
    kinds: dict[int, str] = {}
    trees = []
    for i, info in enumerate(dump["tree_info"]):
        b = _Builder()
        b.add(info["tree_structure"], kinds)
        trees.append(b.arrays(i % k))
    return trees, kinds


def _features(g: GraphBuilder, x: ir.Value, kinds: dict[int, str], n: int) -> ir.Value:
    """``x`` with categorical features truncated (NaN kept) and zero-missing features' zeros made NaN."""
    if not kinds:
        return x
    nan = f64(g, np.nan, "nan")
    trunc = g.op("Cast", g.op("Cast", g.op("Clip", x, f64(g, -2.0 ** 62, "low"), f64(g, 2.0 ** 62, "high"),
                                           dtype=DOUBLE), to=INT64, dtype=INT64), to=DOUBLE, dtype=DOUBLE)
    trunc = g.op("Where", g.op("IsNaN", x, dtype=BOOL), nan, trunc, dtype=DOUBLE)
    zero = g.op("Where", g.op("LessOrEqual", g.op("Abs", x, dtype=DOUBLE), f64(g, _ZERO_THRESHOLD, "zero_threshold"),
                              dtype=BOOL), nan, x, dtype=DOUBLE)
    cat = np.array([[kinds.get(j) == "categorical" for j in range(n)]])
    zer = np.array([[kinds.get(j) == "zero" for j in range(n)]])
    out = g.op("Where", g.const(cat, "categorical"), trunc, x, dtype=DOUBLE)
    return g.op("Where", g.const(zer, "zero_missing"), zero, out, dtype=DOUBLE)


class LightGBMModel(SklearnModel):
    """A fitted ``LGBMClassifier`` / ``LGBMRegressor`` in double precision (see the module notes).

    Raises
    ------
    ExportError
        for an unfitted model, linear trees, or an objective whose transform is not written.
    """

    def __init__(self, model: Any) -> None:
        if not hasattr(model, "booster_"):
            raise ExportError(f"{type(model).__name__} is not fitted", hint="call fit before building")
        super().__init__(model)  # source, task, classes, consumes: as any scikit-learn predictor
        self.dump = model.booster_.dump_model()
        if any("leaf_coeff" in str(t)[:2000] for t in self.dump["tree_info"][:1]) or \
                model.get_params().get("linear_tree"):
            raise ExportError("LightGBM with linear_tree=True cannot be exported yet")
        objective = str(self.dump["objective"]).split()
        self.objective = objective[0]
        params = dict(p.split(":", 1) for p in objective[1:] if ":" in p)
        self.sigmoid = float(params.get("sigmoid", 1.0))
        known = _IDENTITY | _EXP | _SIGMOID | {"multiclass", "softmax"}
        if self.objective not in known:
            raise ExportError(f"LightGBM objective {self.objective!r} cannot be exported yet",
                              hint="use a regression, binary or multiclass objective")

    def emit(self, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
        trees, kinds = lightgbm_trees(self.dump)
        k = int(self.dump["num_tree_per_iteration"])
        raw = tree_ensemble(g, _features(g, x, kinds, self.consumes.width), trees, n_targets=k)
        if self.dump.get("average_output"):
            raw = g.op("Div", raw, f64(g, float(len(trees) // k), "n_iterations"), dtype=DOUBLE)
        raw.shape = ir.Shape(["N", k])
        if self.objective in _EXP:
            raw = g.op("Exp", raw, dtype=DOUBLE)
        if self.task == "regressor":
            pred = g.op("Reshape", raw, g.const(np.array([-1], np.int64), "flat"), dtype=DOUBLE)
            return ModelOutputs.regressor(pred)
        if k == 1:
            p = expit(g, g.op("Mul", raw, f64(g, self.sigmoid, "sigmoid"), dtype=DOUBLE))
            proba = binary_pair(g, p)
        else:
            proba = softmax(g, raw)
        proba.shape = ir.Shape(["N", len(self.classes)])
        return ModelOutputs.classifier(label_from_index(g, self.model.classes_, argmax_index(g, proba)), proba,
                                       self.classes)

    def expected(self, x: Any) -> dict[str, np.ndarray]:
        if self.task == "regressor":
            return {"prediction": np.asarray(self.model.predict(x), np.float64)}
        return {"label": np.asarray(self.model.predict(x)), "probabilities": np.asarray(self.model.predict_proba(x))}

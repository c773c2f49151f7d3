"""Spark ML predictors -> ONNX, in double, computing what Spark's ``transform`` computes.

* ``LogisticRegressionModel``: margins ``x . coefficients + intercept``; binomial probabilities
  ``1 / (1 + exp(-m))`` / ``1 / (1 + exp(m))`` and label ``p1 > threshold``; multinomial softmax and argmax
  (``LogisticRegressionModel.raw2probabilityInPlace`` / ``probability2prediction``).
* ``DecisionTreeClassificationModel``, ``RandomForestClassificationModel``: each tree's leaf class counts
  normalized, summed over trees, then normalized (``RandomForestClassificationModel.predictRaw``).
* ``GBTClassificationModel``: margin ``sum(weight_i * tree_i(x))``, probabilities ``1 / (1 + exp(∓2m))``
  (``GBTClassificationModel.raw2probabilityInPlace``, log loss).
* ``LinearRegressionModel``, ``DecisionTreeRegressionModel``, ``RandomForestRegressionModel`` (mean of the
  trees), ``GBTRegressionModel`` (weighted sum).

Labels are the argmax of the probabilities, as ``ProbabilisticClassificationModel.probability2prediction``
(first maximum). Trees are read from the fitted Java objects through py4j; a continuous split sends
``x <= threshold`` left (NaN right), a categorical split sends values in ``leftCategories`` left: it becomes a
0/1 membership feature appended to ``x`` and split at 0.5.

onnxmltools' Spark ML converters (1.16, checked) are not used: their tree, linear and scaler converters take
and return float32 (``FloatTensorType``; ``TreeEnsembleClassifier`` with float32 thresholds and leaf values),
so labels flip on rows near a threshold and probabilities drift past 1e-6.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx_ir as ir

from onegraph.emit import BOOL, DOUBLE, INT64, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.models import ModelOutputs, label_from_index
from onegraph.export.adapters.trees import TreeArrays, leaf_vector_sum, tree_ensemble
from onegraph.spark.stages import registry

__all__ = ["model_emitter", "supported_models", "logistic_regression", "linear_regression",
           "forest_classifier", "gbt_classifier", "tree_regressor"]

ModelEmitter = Callable[[Any, GraphBuilder, ir.Value, list], ModelOutputs]
_MODELS: dict[str, ModelEmitter] = {}


#: ``@predictor("LogisticRegressionModel")`` registers ``fn(model, g, x, classes) -> ModelOutputs``
predictor = registry(_MODELS)


def model_emitter(obj: Any) -> ModelEmitter | None:
    return _MODELS.get(type(obj).__name__)


def supported_models() -> list[str]:
    return sorted(_MODELS)


def _const(g: GraphBuilder, value: Any, name: str) -> ir.Value:
    return g.const(np.asarray(value, np.float64), name)


def _flat(g: GraphBuilder, value: ir.Value) -> ir.Value:
    return g.op("Reshape", value, g.const(np.array([-1], np.int64), "flat"), dtype=DOUBLE)


def _logistic(g: GraphBuilder, m: ir.Value) -> ir.Value:
    """``1 / (1 + exp(-m))`` written out (Spark's formula), ``[N, 1]``."""
    one = _const(g, 1.0, "one")
    return g.op("Div", one, g.op("Add", one, g.op("Exp", g.op("Neg", m, dtype=DOUBLE), dtype=DOUBLE),
                                 dtype=DOUBLE), dtype=DOUBLE)


def _two_classes(g: GraphBuilder, m: ir.Value) -> ir.Value:
    """``[1 / (1 + exp(m)), 1 / (1 + exp(-m))]`` for margins ``m`` ``[N, 1]``: ``[N, 2]``."""
    return g.op("Concat", _logistic(g, g.op("Neg", m, dtype=DOUBLE)), _logistic(g, m), axis=1, dtype=DOUBLE)


def _classifier(g: GraphBuilder, proba: ir.Value, classes: list, index: ir.Value | None = None) -> ModelOutputs:
    proba.shape = ir.Shape(["N", len(classes)])
    if index is None:
        index = g.op("ArgMax", proba, axis=1, keepdims=0, dtype=INT64)
    return ModelOutputs.classifier(label_from_index(g, classes, index), proba, classes)


def _no_thresholds(model: Any) -> None:
    if model.hasParam("thresholds") and model.isSet(model.getParam("thresholds")):
        raise ExportError(f"{type(model).__name__} with thresholds set cannot be exported yet",
                          hint="clear thresholds (binary logistic regression: use threshold)")


# -- linear models --------------------------------------------------------------------------------
@predictor("LogisticRegressionModel")
def logistic_regression(model: Any, g: GraphBuilder, x: ir.Value, classes: list) -> ModelOutputs:
    coef = model.coefficientMatrix.toArray()
    margins = g.op("Add", g.op("MatMul", x, _const(g, coef.T, "coefficients"), dtype=DOUBLE),
                   _const(g, model.interceptVector.toArray(), "intercepts"), dtype=DOUBLE)
    if model.numClasses == 2 and coef.shape[0] == 1:
        proba = _two_classes(g, margins)
        above = g.op("Greater", g.op("Gather", proba, g.const(np.int64(1), "positive"), axis=1, dtype=DOUBLE),
                     _const(g, model.getThreshold(), "threshold"), dtype=BOOL)
        return _classifier(g, proba, classes, g.op("Cast", above, to=INT64, dtype=INT64))
    _no_thresholds(model)
    return _classifier(g, g.op("Softmax", margins, axis=1, dtype=DOUBLE), classes)


@predictor("LinearRegressionModel")
def linear_regression(model: Any, g: GraphBuilder, x: ir.Value, classes: list) -> ModelOutputs:
    y = g.op("Add", g.op("MatMul", x, _const(g, model.coefficients.toArray().reshape(-1, 1), "coefficients"),
                         dtype=DOUBLE), _const(g, model.intercept, "intercept"), dtype=DOUBLE)
    return ModelOutputs.regressor(_flat(g, y))


# -- trees ----------------------------------------------------------------------------------------
class _Forest:
    """The trees of a Spark tree model as :class:`TreeArrays`, categorical splits as membership features."""

    def __init__(self, model: Any, n_features: int) -> None:
        self.n_features = n_features
        self.memberships: dict[tuple[int, tuple[float, ...]], int] = {}
        java_trees = model._java_obj.trees() if hasattr(model, "trees") else [model._java_obj]
        self.trees: list[TreeArrays] = []
        self.leaf_stats: list[np.ndarray] = []
        for tree in java_trees:
            arrays, stats = self._tree(tree.rootNode())
            self.trees.append(arrays)
            self.leaf_stats.append(stats)

    def _tree(self, root: Any) -> tuple[TreeArrays, np.ndarray]:
        left, right, feature, threshold, value, stats = [], [], [], [], [], []
        stack = [(root, None, False)]  # (node, parent index, is the parent's true branch)
        while stack:
            node, parent, true_branch = stack.pop()
            i = len(left)
            if parent is not None:
                (left if true_branch else right)[parent] = i
            left.append(-1), right.append(-1)
            value.append(float(node.prediction()))
            stats.append(list(node.impurityStats().stats()))
            if node.getClass().getSimpleName() == "LeafNode":
                feature.append(0), threshold.append(0.0)
                continue
            split = node.split()
            if split.getClass().getSimpleName() == "ContinuousSplit":
                feature.append(int(split.featureIndex())), threshold.append(float(split.threshold()))
                first, second = node.leftChild(), node.rightChild()  # x <= threshold: Spark's left
            else:
                key = (int(split.featureIndex()), tuple(sorted(float(c) for c in split.leftCategories())))
                feature.append(self.memberships.setdefault(key, self.n_features + len(self.memberships)))
                threshold.append(0.5)
                first, second = node.rightChild(), node.leftChild()  # membership <= 0.5: not in the set
            stack.append((second, i, False))
            stack.append((first, i, True))
        width = max(len(s) for s in stats)
        table = np.zeros((len(stats), width))
        for i, s in enumerate(stats):
            table[i, :len(s)] = s
        arrays = TreeArrays(left=np.asarray(left, np.int64), right=np.asarray(right, np.int64),
                            feature=np.asarray(feature, np.int64), threshold=np.asarray(threshold, np.float64),
                            missing_left=np.zeros(len(left), bool), leaf_value=np.asarray(value, np.float64))
        return arrays, table

    def features(self, g: GraphBuilder, x: ir.Value) -> ir.Value:
        """``x`` with one 0/1 column per categorical split set (in the order of their feature ids)."""
        if not self.memberships:
            return x
        columns = [x]
        for (f, categories), _ in sorted(self.memberships.items(), key=lambda kv: kv[1]):
            column = g.op("Gather", x, g.const(np.array([f], np.int64), "feature"), axis=1, dtype=DOUBLE)
            hit = g.op("Equal", column, _const(g, categories, "categories"), dtype=BOOL)
            member = g.op("ReduceMax", g.op("Cast", hit, to=DOUBLE, dtype=DOUBLE),
                          g.const(np.array([1], np.int64), "axes"), keepdims=1, dtype=DOUBLE)
            columns.append(member)
        return g.op("Concat", *columns, axis=1, dtype=DOUBLE)

    def weighted_sum(self, g: GraphBuilder, x: ir.Value, weights: np.ndarray) -> ir.Value:
        """``sum_i weights[i] * tree_i(x)`` ``[N, 1]`` (leaf predictions)."""
        import dataclasses

        trees = [dataclasses.replace(t, leaf_value=t.leaf_value * w) for t, w in zip(self.trees, weights)]
        return tree_ensemble(g, self.features(g, x), trees, n_targets=1)


@predictor("DecisionTreeClassificationModel", "RandomForestClassificationModel")
def forest_classifier(model: Any, g: GraphBuilder, x: ir.Value, classes: list) -> ModelOutputs:
    _no_thresholds(model)
    forest = _Forest(model, model.numFeatures)
    k = model.numClasses
    dists = []
    for stats in forest.leaf_stats:
        counts = np.zeros((len(stats), k))
        counts[:, :min(k, stats.shape[1])] = stats[:, :k]
        total = counts.sum(axis=1, keepdims=True)
        dists.append(np.divide(counts, total, out=np.zeros_like(counts), where=total != 0))
    votes = leaf_vector_sum(g, forest.features(g, x), forest.trees, dists)
    total = g.op("ReduceSum", votes, g.const(np.array([1], np.int64), "axes"), keepdims=1, dtype=DOUBLE)
    return _classifier(g, g.op("Div", votes, total, dtype=DOUBLE), classes)


@predictor("GBTClassificationModel")
def gbt_classifier(model: Any, g: GraphBuilder, x: ir.Value, classes: list) -> ModelOutputs:
    _no_thresholds(model)
    forest = _Forest(model, model.numFeatures)
    margin = forest.weighted_sum(g, x, np.asarray(model.treeWeights, np.float64))
    two = _const(g, 2.0, "two")
    return _classifier(g, _two_classes(g, g.op("Mul", margin, two, dtype=DOUBLE)), classes)


@predictor("DecisionTreeRegressionModel", "RandomForestRegressionModel", "GBTRegressionModel")
def tree_regressor(model: Any, g: GraphBuilder, x: ir.Value, classes: list) -> ModelOutputs:
    forest = _Forest(model, model.numFeatures)
    n = len(forest.trees)
    if type(model).__name__ == "GBTRegressionModel":
        weights = np.asarray(model.treeWeights, np.float64)
        return ModelOutputs.regressor(_flat(g, forest.weighted_sum(g, x, weights)))
    y = forest.weighted_sum(g, x, np.ones(n))
    if n > 1:
        y = g.op("Div", y, _const(g, float(n), "n_trees"), dtype=DOUBLE)  # Spark: sum / numTrees
    return ModelOutputs.regressor(_flat(g, y))

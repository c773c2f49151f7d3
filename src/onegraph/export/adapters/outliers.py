"""scikit-learn's outlier detectors -> ``label`` (``predict``: 1 inlier, -1 outlier) and ``score``
(``decision_function``: negative for outliers), in double precision.

An outlier detector is neither a classifier nor a regressor (``sklearn.base.is_outlier_detector``); its graph
outputs are ``label`` ``[N]`` int64 and ``score`` ``[N]`` double (role ``score``). Sources, scikit-learn 1.9:

* ``IsolationForest`` (``sklearn/ensemble/_iforest.py``): per tree, the leaf reached by ``float32(x)``
  (on the tree's ``estimators_features_``) gives ``_decision_path_lengths + _average_path_length_per_tree - 1``;
  ``score_samples = -2 ** (-sum / (n_trees * c(max_samples)))``; ``decision_function = score_samples -
  offset_``; ``predict``: -1 where ``decision_function < 0``. Missing values follow ``missing_go_to_left``.
* ``OneClassSVM`` (libsvm, ``svm_predict_values`` for ``ONE_CLASS``): ``K @ dual_coef_.T + intercept_``; -1
  unless the value is ``> 0``.
* ``SGDOneClassSVM``: ``x @ coef_.T - offset_``; 1 where ``>= 0``.
* ``EllipticEnvelope``: ``-(x - location_) P (x - location_)^T - offset_`` with ``P = get_precision()``; 1 where
  ``>= 0``.
* ``LocalOutlierFactor(novelty=True)``: the ``n_neighbors_`` nearest fitted rows (``kneighbors``), the
  reachability distances ``max(d, k-distance of the neighbour)``, the query's local reachability density
  ``1 / (mean + 1e-10)``; ``score_samples = -mean(lrd of the neighbours / lrd of the query)``;
  ``decision_function = score_samples - offset_``; -1 where ``< 0``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.covariance as skc
import sklearn.ensemble as ske
import sklearn.linear_model as skl
import sklearn.neighbors as skn
import sklearn.svm as svm

from onegraph.emit import BOOL, DOUBLE, INT64, INT64_MIN, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.models import ModelOutputs, register_model
from onegraph.export.adapters.neighbors import fit_distances, nearest
from onegraph.export.adapters.ops import f64, flat
from onegraph.export.adapters.svm import dual_values
from onegraph.export.adapters.trees import as_float32, sk_tree, tree_ensemble

__all__ = ["outlier_outputs", "emit_isolation_forest", "emit_one_class_svm", "emit_sgd_one_class_svm",
           "emit_elliptic_envelope", "emit_local_outlier_factor"]

#: the classes ``predict`` returns
CLASSES = [-1, 1]


def outlier_outputs(g: GraphBuilder, score: ir.Value, inlier_at_zero: bool) -> ModelOutputs:
    """``label`` from ``score`` ``[N]`` double: 1 where ``score > 0`` (and at 0 when ``inlier_at_zero``), else
    -1; missing (``INT64_MIN``, scored as ``pd.NA``) where the score is NaN."""
    zero = f64(g, 0.0, "zero")
    inlier = g.op("GreaterOrEqual" if inlier_at_zero else "Greater", score, zero, dtype=BOOL)
    label = g.op("Where", inlier, g.const(np.int64(1), "inlier"), g.const(np.int64(-1), "outlier"), dtype=INT64)
    label = g.op("Where", g.op("IsNaN", score, dtype=BOOL), g.const(np.int64(INT64_MIN), "missing_label"), label,
                 dtype=INT64)
    return ModelOutputs({"label": label, "score": score}, CLASSES)


@register_model(ske.IsolationForest)
def emit_isolation_forest(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    trees = []
    for tree_model, features, lengths, averages in zip(model.estimators_, model.estimators_features_,
                                                      model._decision_path_lengths,
                                                      model._average_path_length_per_tree):
        tree = sk_tree(tree_model.tree_, np.asarray(lengths, np.float64) + np.asarray(averages, np.float64) - 1.0)
        # the tree reads its own subset of the columns; a leaf's feature (-2) is never read
        tree.feature = np.where(tree.is_leaf, tree.feature, np.asarray(features, np.int64)[tree.feature.clip(0)])
        trees.append(tree)
    depths = flat(g, tree_ensemble(g, as_float32(g, x), trees, n_targets=1, aggregate=1))
    c = float(np.asarray(ske._iforest._average_path_length([model._max_samples])).reshape(-1)[0])
    denominator = len(model.estimators_) * c
    if denominator == 0:  # a single training sample: scikit-learn sets the score to 1
        ratio = g.op("Mul", depths, f64(g, 0.0, "zero"), dtype=DOUBLE)
        ratio = g.op("Add", ratio, f64(g, 1.0, "one"), dtype=DOUBLE)
    else:
        ratio = g.op("Div", depths, f64(g, denominator, "denominator"), dtype=DOUBLE)
    scores = g.op("Neg", g.op("Pow", f64(g, 2.0, "two"), g.op("Neg", ratio, dtype=DOUBLE), dtype=DOUBLE),
                  dtype=DOUBLE)
    return outlier_outputs(g, _minus_offset(g, scores, model.offset_), inlier_at_zero=True)


@register_model(svm.OneClassSVM)
def emit_one_class_svm(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    return outlier_outputs(g, dual_values(g, model, x), inlier_at_zero=False)


@register_model(skl.SGDOneClassSVM)
def emit_sgd_one_class_svm(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    coef = np.asarray(model.coef_, np.float64).reshape(-1, 1)
    dec = g.op("MatMul", x, g.const(coef, "coef"), dtype=DOUBLE)
    return outlier_outputs(g, _minus_offset(g, flat(g, dec), model.offset_), inlier_at_zero=True)


@register_model(skc.EllipticEnvelope)
def emit_elliptic_envelope(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    d = g.op("Sub", x, g.const(np.asarray(model.location_, np.float64).reshape(1, -1), "location"), dtype=DOUBLE)
    dp = g.op("MatMul", d, g.const(np.asarray(model.get_precision(), np.float64), "precision"), dtype=DOUBLE)
    mahalanobis = g.op("ReduceSum", g.op("Mul", dp, d, dtype=DOUBLE), g.const(np.array([1], np.int64), "axis1"),
                       keepdims=0, dtype=DOUBLE)
    return outlier_outputs(g, _minus_offset(g, g.op("Neg", mahalanobis, dtype=DOUBLE), model.offset_),
                           inlier_at_zero=True)


@register_model(skn.LocalOutlierFactor)
def emit_local_outlier_factor(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    if not model.novelty:
        raise ExportError("LocalOutlierFactor(novelty=False) scores only the rows it was fitted on (fit_predict); "
                          "it has no predict for new rows", hint="fit LocalOutlierFactor(novelty=True)")
    k = int(model.n_neighbors_)
    dist, index = nearest(g, fit_distances(g, model, x), k)
    k_distance = np.asarray(model._distances_fit_X_[:, k - 1], np.float64)
    reach = g.op("Max", dist, g.op("Gather", g.const(k_distance, "k_distance"), index, axis=0, dtype=DOUBLE),
                 dtype=DOUBLE)
    axis1 = g.const(np.array([1], np.int64), "axis1")
    mean_reach = g.op("ReduceMean", reach, axis1, keepdims=1, dtype=DOUBLE)
    lrd = g.op("Reciprocal", g.op("Add", mean_reach, f64(g, 1e-10, "eps"), dtype=DOUBLE), dtype=DOUBLE)
    neighbours = g.op("Gather", g.const(np.asarray(model._lrd, np.float64), "fit_lrd"), index, axis=0, dtype=DOUBLE)
    ratios = g.op("ReduceMean", g.op("Div", neighbours, lrd, dtype=DOUBLE), axis1, keepdims=0, dtype=DOUBLE)
    return outlier_outputs(g, _minus_offset(g, g.op("Neg", ratios, dtype=DOUBLE), model.offset_),
                           inlier_at_zero=True)


def _minus_offset(g: GraphBuilder, value: ir.Value, offset: Any) -> ir.Value:
    return g.op("Sub", value, f64(g, float(np.asarray(offset).reshape(-1)[0]), "offset"), dtype=DOUBLE)

"""scikit-learn tree models -> ``ai.onnx.ml.TreeEnsemble`` (opset 5) in double precision.

skl2onnx writes trees as ``TreeEnsembleClassifier`` / ``TreeEnsembleRegressor``, whose outputs are float32
in onnxruntime (its double conversion does not load), so thresholds rounded to float32 and sums taken in
float32 drift from scikit-learn. onegraph writes ``TreeEnsemble`` with double thresholds and leaf weights,
and reproduces how scikit-learn compares: ``DecisionTree*``, ``RandomForest*``, ``ExtraTrees*`` and
``GradientBoosting*`` cast their input to float32 before comparing (``sklearn.tree._tree``: ``DTYPE``),
``HistGradientBoosting*`` compare in float64. Missing values follow each node's ``missing_go_to_left``.

Sources: the ONNX ``TreeEnsemble`` operator spec (ai.onnx.ml opset 5); scikit-learn's ``Tree.predict``,
``ForestClassifier.predict_proba``, ``BaseGradientBoosting._raw_predict`` and
``BaseHistGradientBoosting._raw_predict``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.ensemble as ske
import sklearn.tree as skt

from onegraph.emit import BOOL, DOUBLE, FLOAT, INT64, Col, GraphBuilder, register_emitter
from onegraph.errors import ExportError
from onegraph.export.adapters.ops import inverse_link
from onegraph.export.adapters.models import (
    ModelOutputs,
    label_from_index,
    register_model,
)

__all__ = ["TreeArrays", "sk_tree", "as_float32", "tree_ensemble", "leaf_vector_sum", "emit_forest_classifier",
           "emit_forest_regressor", "emit_gradient_boosting", "emit_hist_gradient_boosting",
           "emit_random_trees_embedding", "hgb_categories", "emit_hgb_trees"]


@dataclasses.dataclass
class TreeArrays:
    """One binary tree in scikit-learn's layout (children -1 at leaves; ``x <= threshold`` goes left)."""

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    leaf_value: np.ndarray  # per node; used at leaves
    target: int = 0
    #: per node the spec's ``nodes_modes`` (0 ``BRANCH_LEQ``: ``x <= threshold`` goes left, 4 ``BRANCH_EQ``...);
    #: None: all ``BRANCH_LEQ``
    mode: np.ndarray | None = None
    #: the values of each ``BRANCH_MEMBER`` (mode 6) node, by node
    members: dict[int, list[float]] | None = None

    @property
    def is_leaf(self) -> np.ndarray:
        return self.left < 0


def sk_tree(tree: Any, values: np.ndarray, target: int = 0) -> TreeArrays:
    missing = getattr(tree, "missing_go_to_left", None)
    return TreeArrays(
        left=np.asarray(tree.children_left, np.int64), right=np.asarray(tree.children_right, np.int64),
        feature=np.asarray(tree.feature, np.int64), threshold=np.asarray(tree.threshold, np.float64),
        missing_left=np.zeros(tree.node_count, bool) if missing is None else np.asarray(missing, bool),
        leaf_value=np.asarray(values, np.float64), target=target)


_MEMBER = 6  # the TreeEnsemble spec's BRANCH_MEMBER (the value is one of the node's membership_values)


def _hgb_tree(predictor: Any, target: int, known: tuple | None = None) -> TreeArrays:
    """One HistGradientBoosting predictor's tree; ``known``: ``_bin_mapper.make_known_categories_bitsets()``,
    needed when it has categorical splits (:func:`_hgb_categorical_tree`)."""
    nodes = predictor.nodes
    if nodes["is_categorical"].any():
        return _hgb_categorical_tree(predictor, target, known)
    leaf = nodes["is_leaf"].astype(bool)
    return TreeArrays(
        left=np.where(leaf, -1, nodes["left"].astype(np.int64)), right=np.where(leaf, -1, nodes["right"].astype(np.int64)),
        feature=nodes["feature_idx"].astype(np.int64), threshold=nodes["num_threshold"].astype(np.float64),
        missing_left=nodes["missing_go_to_left"].astype(bool), leaf_value=nodes["value"].astype(np.float64),
        target=target)


def _categories(bitset: np.ndarray) -> list[int]:
    """The category values (0..255) set in one scikit-learn bitset (8 uint32 words, bit ``c % 32`` of word
    ``c // 32``)."""
    words = np.asarray(bitset, np.uint32)
    return [32 * w + b for w in range(len(words)) for b in range(32) if (int(words[w]) >> b) & 1]


def _hgb_categorical_tree(predictor: Any, target: int, known: tuple | None) -> TreeArrays:
    """A tree with categorical splits, as ``_predictor._predict_one_from_raw_data`` decides them: NaN and
    negative values go the node's missing way; a category in ``raw_left_cat_bitsets`` left; another category
    known in fit right; an unknown one the missing way. Each split is one ``BRANCH_MEMBER`` node: where missing
    values go right, "in the left set" goes left; where they go left, "a known category of the right set"
    goes right and everything else left (the values are whole: the caller floors the categorical columns as
    the predictor's uint8 cast does)."""
    if known is None:
        raise ExportError("a HistGradientBoosting tree with categorical splits needs the model's known categories")
    known_bitsets, f_idx_map = known
    nodes = predictor.nodes
    leaf = nodes["is_leaf"].astype(bool)
    left = np.where(leaf, -1, nodes["left"].astype(np.int64))
    right = np.where(leaf, -1, nodes["right"].astype(np.int64))
    mode = np.zeros(len(nodes), np.uint8)
    members: dict[int, list[float]] = {}
    for n in np.flatnonzero(nodes["is_categorical"].astype(bool) & ~leaf):
        lefts = _categories(predictor.raw_left_cat_bitsets[nodes["bitset_idx"][n]])
        mode[n] = _MEMBER
        if nodes["missing_go_to_left"][n]:
            chosen = set(lefts)
            rights = [c for c in _categories(known_bitsets[f_idx_map[nodes["feature_idx"][n]]]) if c not in chosen]
            members[int(n)] = [float(c) for c in rights]
            left[n], right[n] = right[n], left[n]  # "in the right set" is the true branch
        else:
            members[int(n)] = [float(c) for c in lefts]
    missing = nodes["missing_go_to_left"].astype(bool)
    missing[list(members)] = False  # NaN is in no set: it takes the false branch, the missing way in both forms
    return TreeArrays(left=left, right=right, feature=nodes["feature_idx"].astype(np.int64),
                      threshold=nodes["num_threshold"].astype(np.float64), missing_left=missing,
                      leaf_value=nodes["value"].astype(np.float64), target=target, mode=mode, members=members)


def tree_ensemble(g: GraphBuilder, x: ir.Value, trees: list[TreeArrays], n_targets: int,
                  aggregate: int = 1) -> ir.Value:
    """A ``TreeEnsemble`` node over ``x`` ``[N, F]`` (double) returning ``[N, n_targets]`` double.

    ``aggregate``: 0 AVERAGE, 1 SUM (the spec's ``aggregate_function``). A tree that is a single leaf gets a
    dummy split whose both branches reach that leaf.
    """
    featureids, splits, missing, true_ids, true_leaf, false_ids, false_leaf, modes = ([] for _ in range(8))
    membership: list[float] = []  # per BRANCH_MEMBER node, in node order, its values then NaN
    leaf_targets, leaf_weights, roots = [], [], []
    for t in trees:
        node_pos: dict[int, int] = {}
        leaf_pos: dict[int, int] = {}
        for n in range(len(t.left)):
            if t.is_leaf[n]:
                leaf_pos[n] = len(leaf_targets) + len(leaf_pos)
            else:
                node_pos[n] = len(featureids) + len(node_pos)
        for n in sorted(leaf_pos):
            leaf_targets.append(t.target)
            leaf_weights.append(t.leaf_value[n])
        if not node_pos:  # a single leaf
            roots.append(len(featureids))
            featureids.append(0), splits.append(0.0), missing.append(0), modes.append(0)
            true_ids.append(leaf_pos[0]), true_leaf.append(1), false_ids.append(leaf_pos[0]), false_leaf.append(1)
            continue
        roots.append(node_pos[0])
        for n in sorted(node_pos):
            featureids.append(int(t.feature[n]))
            splits.append(float(t.threshold[n]))
            missing.append(int(t.missing_left[n]))
            modes.append(0 if t.mode is None else int(t.mode[n]))
            if modes[-1] == _MEMBER:
                membership.extend([*t.members[n], float("nan")])
            for child, ids, leafs in ((t.left[n], true_ids, true_leaf), (t.right[n], false_ids, false_leaf)):
                is_leaf = bool(t.is_leaf[child])
                ids.append(leaf_pos[child] if is_leaf else node_pos[child])
                leafs.append(int(is_leaf))
    extra = {"membership_values": ir.tensor(np.asarray(membership, np.float64))} if membership else {}
    return g.op(
        "TreeEnsemble", x, domain="ai.onnx.ml", dtype=DOUBLE, **extra,
        nodes_featureids=featureids, nodes_splits=ir.tensor(np.asarray(splits, np.float64)),
        nodes_modes=ir.tensor(np.asarray(modes, np.uint8)),
        nodes_truenodeids=true_ids, nodes_trueleafs=true_leaf,
        nodes_falsenodeids=false_ids, nodes_falseleafs=false_leaf,
        nodes_missing_value_tracks_true=missing,
        leaf_targetids=leaf_targets, leaf_weights=ir.tensor(np.asarray(leaf_weights, np.float64)),
        tree_roots=roots, n_targets=n_targets, aggregate_function=aggregate, post_transform=0,
    )


def as_float32(g: GraphBuilder, x: ir.Value) -> ir.Value:
    """scikit-learn's trees compare ``float32(x)``: round the features the same way, keep double type."""
    return g.op("Cast", g.op("Cast", x, to=FLOAT, dtype=FLOAT), to=DOUBLE, dtype=DOUBLE)


def leaf_vector_sum(g: GraphBuilder, x: ir.Value, trees: list[TreeArrays], vectors: list[np.ndarray]) -> ir.Value:
    """Sum over trees of a vector per leaf (class distribution or multi-output values): ``[N, K]`` double.

    ``vectors[i]`` is ``[nodes of tree i, K]``, read at the leaves (``trees[i].leaf_value`` is ignored).
    ``TreeEnsemble`` leaves carry one weight each, so every leaf gets a global id (its weight, one target
    per tree); the vectors are gathered from a table and summed.
    """
    indexed, table = [], []
    for i, (tree, values) in enumerate(zip(trees, vectors)):
        ids = np.full(len(tree.left), -1.0)
        leaves = np.flatnonzero(tree.is_leaf)
        ids[leaves] = np.arange(len(table), len(table) + len(leaves), dtype=np.float64)
        table.extend(np.asarray(values, np.float64)[leaves])
        indexed.append(dataclasses.replace(tree, leaf_value=ids, target=i))
    leaf_ids = tree_ensemble(g, x, indexed, n_targets=len(indexed))
    index = g.op("Cast", leaf_ids, to=INT64, dtype=INT64)
    vectors_at = g.op("Gather", g.const(np.asarray(table, np.float64), "leaf_values"), index, axis=0, dtype=DOUBLE)
    return g.op("ReduceSum", vectors_at, g.const(np.array([1], np.int64), "axes"), keepdims=0, dtype=DOUBLE)


def _leaf_distribution(g: GraphBuilder, x: ir.Value, estimators: list[Any], per_tree: list[np.ndarray]) -> ir.Value:
    """:func:`leaf_vector_sum` over scikit-learn trees."""
    trees = [sk_tree(est.tree_, np.zeros(est.tree_.node_count)) for est in estimators]
    return leaf_vector_sum(g, x, trees, per_tree)


def _estimators(model: Any) -> list[Any]:
    return list(getattr(model, "estimators_", [model]))


# -- decision trees and forests -------------------------------------------------------------------
@register_model(skt.DecisionTreeClassifier, skt.ExtraTreeClassifier, ske.RandomForestClassifier,
                ske.ExtraTreesClassifier)
def emit_forest_classifier(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    if isinstance(model.classes_, list):
        raise ExportError(f"{type(model).__name__} with several outputs cannot be exported",
                          hint="fit one classifier per target")
    estimators = _estimators(model)
    dists = []
    for est in estimators:
        value = est.tree_.value[:, 0, :]
        total = value.sum(axis=1, keepdims=True)
        dists.append(np.divide(value, total, out=np.zeros_like(value), where=total > 0))
    summed = _leaf_distribution(g, as_float32(g, x), estimators, dists)
    proba = summed if len(estimators) == 1 else g.op(
        "Div", summed, g.const(np.float64(len(estimators)), "n_trees"), dtype=DOUBLE)
    index = g.op("ArgMax", proba, axis=1, keepdims=0, dtype=INT64)
    return ModelOutputs.classifier(label_from_index(g, model.classes_, index), proba, model.classes_)


@register_model(skt.DecisionTreeRegressor, skt.ExtraTreeRegressor, ske.RandomForestRegressor,
                ske.ExtraTreesRegressor)
def emit_forest_regressor(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    estimators = _estimators(model)
    n_outputs = model.n_outputs_
    xf = as_float32(g, x)
    if n_outputs == 1:
        trees = [sk_tree(e.tree_, e.tree_.value[:, 0, 0]) for e in estimators]
        y = tree_ensemble(g, xf, trees, n_targets=1, aggregate=0)
        return ModelOutputs.regressor(g.op("Reshape", y, g.const(np.array([-1], np.int64), "flat"), dtype=DOUBLE))
    summed = _leaf_distribution(g, xf, estimators, [e.tree_.value[:, :, 0] for e in estimators])
    y = g.op("Div", summed, g.const(np.float64(len(estimators)), "n_trees"), dtype=DOUBLE)
    y.shape = ir.Shape(["N", n_outputs])
    return ModelOutputs.regressor(y)


# -- gradient boosting ----------------------------------------------------------------------------
def _inverse_link(g: GraphBuilder, model: Any, raw: ir.Value) -> ir.Value:
    """scikit-learn's ``model._loss.link.inverse`` in ONNX ops."""
    return inverse_link(g, model._loss.link, raw, type(model).__name__)


def _boosting_outputs(g: GraphBuilder, model: Any, raw: ir.Value, classifier: bool) -> ModelOutputs:
    if not classifier:
        y = _inverse_link(g, model, raw)
        return ModelOutputs.regressor(g.op("Reshape", y, g.const(np.array([-1], np.int64), "flat"), dtype=DOUBLE))
    if raw.shape is not None and raw.shape[1] == 1:
        p = _inverse_link(g, model, raw)
        one = g.const(np.float64(1.0), "one")
        proba = g.op("Concat", g.op("Sub", one, p, dtype=DOUBLE), p, axis=1, dtype=DOUBLE)
        positive = g.op("Greater", raw, g.const(np.float64(0.0), "zero"), dtype=BOOL)
        index = g.op("Reshape", g.op("Cast", positive, to=INT64, dtype=INT64),
                     g.const(np.array([-1], np.int64), "flat"), dtype=INT64)
    else:
        proba = _inverse_link(g, model, raw)
        index = g.op("ArgMax", raw, axis=1, keepdims=0, dtype=INT64)
    return ModelOutputs.classifier(label_from_index(g, model.classes_, index), proba, model.classes_)


@register_model(ske.GradientBoostingClassifier, ske.GradientBoostingRegressor)
def emit_gradient_boosting(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    init = model.init_
    if not (init == "zero" or type(init).__name__ in ("DummyRegressor", "DummyClassifier")):
        raise ExportError(f"{type(model).__name__} with init={type(init).__name__} cannot be exported",
                          hint="use the default init (or init='zero')")
    n_features = model.n_features_in_
    base = np.asarray(model._raw_predict_init(np.zeros((1, n_features), np.float32)), np.float64)[0]
    k = model.estimators_.shape[1]
    lr = model.learning_rate
    trees = [sk_tree(model.estimators_[i, j].tree_, lr * model.estimators_[i, j].tree_.value[:, 0, 0], target=j)
             for i in range(model.estimators_.shape[0]) for j in range(k)]
    raw = tree_ensemble(g, as_float32(g, x), trees, n_targets=k)
    raw = g.op("Add", raw, g.const(base, "baseline"), dtype=DOUBLE)
    raw.shape = ir.Shape(["N", k])
    return _boosting_outputs(g, model, raw, classifier=hasattr(model, "classes_"))


@register_model(ske.HistGradientBoostingClassifier, ske.HistGradientBoostingRegressor)
def emit_hist_gradient_boosting(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    """A HistGradientBoosting model on ``x`` ``[N, F]`` double; one fitted with categories from the DataFrame's
    dtypes (``_preprocessor``) takes the columns :func:`hgb_categories` gives (``build`` does it)."""
    if getattr(model, "_preprocessor", None) is not None:
        raise ExportError(f"{type(model).__name__} fitted with categories from the DataFrame's dtypes is exported "
                          "as a pipeline's last step or build's model only",
                          hint="give it to build (alone or last in the pipeline), or encode categories before it")
    return emit_hgb_trees(model, g, x)


def hgb_categories(model: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    """The columns a HistGradientBoosting model fitted with categories from the DataFrame's dtypes reads: its
    ``_preprocessor`` (an ``OrdinalEncoder`` of the categorical columns — unknown and missing as NaN — then the
    other columns, in that order) emitted on ``cols``; ``cols`` unchanged for any other model."""
    pre = getattr(model, "_preprocessor", None)
    if pre is None:
        return cols
    from onegraph.export.adapters.sklearn import emit_step

    mask = np.asarray(model.is_categorical_, bool)
    if len(mask) != len(cols):
        raise ExportError(f"{type(model).__name__} was fitted on {len(mask)} features but receives {len(cols)}")
    encoder = pre.named_transformers_["encoder"]
    encoded = emit_step(encoder, g, [c for c, m in zip(cols, mask) if m], f"{g.path}.categories" if g.path
                        else "categories")
    return encoded + [c for c, m in zip(cols, mask) if not m]


def emit_hgb_trees(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    """The trees of a HistGradientBoosting model on ``x`` (its own feature order, categories as codes)."""
    k = model.n_trees_per_iteration_
    known = None
    categorical = getattr(model, "_is_categorical_remapped", None)
    if categorical is None:
        categorical = getattr(model, "is_categorical_", None)
    if categorical is not None and np.asarray(categorical).any():
        known = model._bin_mapper.make_known_categories_bitsets()
        # the predictor casts a category value to uint8 (truncation, = floor for the values >= 0 it reads)
        mask = g.const(np.asarray(categorical, bool).reshape(1, -1), "categorical")
        floored = g.op("Floor", x, dtype=DOUBLE)
        x = g.op("Where", g.op("And", mask, g.op("GreaterOrEqual", x, g.const(np.float64(0.0), "zero"), dtype=BOOL),
                                dtype=BOOL), floored, x, dtype=DOUBLE)
    trees = [_hgb_tree(pred, target=j, known=known) for iteration in model._predictors
             for j, pred in enumerate(iteration)]
    raw = tree_ensemble(g, x, trees, n_targets=k)
    raw = g.op("Add", raw, g.const(np.asarray(model._baseline_prediction, np.float64).reshape(-1), "baseline"),
               dtype=DOUBLE)
    raw.shape = ir.Shape(["N", k])
    return _boosting_outputs(g, model, raw, classifier=hasattr(model, "classes_"))


@register_emitter(ske.RandomTreesEmbedding)
def emit_random_trees_embedding(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    """``RandomTreesEmbedding.transform``: ``one_hot_encoder_.transform(apply(X))``, the leaf each tree sends
    the row to (features compared in float32), one-hot over the leaves seen in fit (``categories_``)."""
    from onegraph.export.adapters.discriminant import feature_block

    x = g.matrix(cols, DOUBLE)
    trees = [dataclasses.replace(sk_tree(e.tree_, np.arange(e.tree_.node_count, dtype=np.float64)), target=i)
             for i, e in enumerate(est.estimators_)]
    leaves = tree_ensemble(g, as_float32(g, x), trees, n_targets=len(trees))
    parts = []
    for i, cats in enumerate(est.one_hot_encoder_.categories_):
        leaf = g.op("Gather", leaves, g.const(np.array([i], np.int64), "tree"), axis=1, dtype=DOUBLE)
        hit = g.op("Equal", leaf, g.const(np.asarray(cats, np.float64).reshape(1, -1), "leaves"), dtype=BOOL)
        parts.append(g.op("Cast", hit, to=DOUBLE, dtype=DOUBLE))
    return feature_block(g, est, g.op("Concat", *parts, axis=1, dtype=DOUBLE), cols)

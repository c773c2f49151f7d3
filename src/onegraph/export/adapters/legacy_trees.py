"""``TreeEnsembleClassifier`` / ``TreeEnsembleRegressor`` (ai.onnx.ml 1-3) -> ``TreeEnsemble`` (ai.onnx.ml 5).

onegraph graphs import ai.onnx.ml opset 5, where the two old tree operators are deprecated. Converters
such as onnxmltools (XGBoost, LightGBM) and skl2onnx still write them, so a graph spliced into a onegraph
model has each of them rewritten as one ``TreeEnsemble`` node plus standard operators:

* old leaves carry a list of (target, weight) votes; a ``TreeEnsemble`` leaf carries one target and one
  weight. Trees whose leaves all vote for one target keep their shape. When some leaf votes for several
  targets (skl2onnx's forests), each tree gets its own target and each leaf its number as weight: the
  ensemble gives the leaf reached in every tree, whose votes are gathered from a table and summed (each
  tree evaluated once). ``AVERAGE`` becomes ``SUM`` divided by the number of trees;
* ``base_values`` become an ``Add`` after the ensemble, ``post_transform`` a ``Sigmoid`` / ``Softmax``
  after that (``PROBIT`` and ``SOFTMAX_ZERO`` are refused);
* a classifier whose votes all go to one class of two (the binary case) scores ``[-s, s]`` (``[1 - s, s]``
  without transform) before the transform, and its label is ``classlabels[argmax(scores)]``.

The semantics follow ``onnx.reference.ops.aionnxml`` (``op_tree_ensemble_classifier.py``,
``op_tree_ensemble_regressor.py``), the ONNX reference implementation of the old operators, and the
``TreeEnsemble`` operator spec (ai.onnx.ml opset 5).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import onnx_ir as ir

from onegraph.errors import ExportError

__all__ = ["LEGACY_OPS", "upgrade_tree_ensembles"]

_MODES = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GTE": 2, "BRANCH_GT": 3, "BRANCH_EQ": 4, "BRANCH_NEQ": 5}
_AGGREGATE = {"AVERAGE": 0, "SUM": 1, "MIN": 2, "MAX": 3}
LEGACY_OPS = ("TreeEnsembleClassifier", "TreeEnsembleRegressor")


def _attr(node: ir.Node, name: str, default: Any = None) -> Any:
    a = node.attributes.get(name)
    if a is None:
        return default
    value = a.value
    if isinstance(value, ir.TensorProtocol):
        return value.numpy().reshape(-1).tolist()
    if isinstance(value, (list, tuple)):
        return list(value)
    return value


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _floats(node: ir.Node, name: str) -> list[float] | None:
    """An attribute given as a float list or as its double ``_as_tensor`` twin."""
    value = _attr(node, name + "_as_tensor")
    return _attr(node, name) if value is None else value


class _Tree:
    """One old-format tree: node id -> (feature, mode, threshold, true id, false id, missing-true)."""

    def __init__(self) -> None:
        self.nodes: dict[int, tuple] = {}
        self.votes: dict[int, list[tuple[int, float]]] = defaultdict(list)


def _read_trees(node: ir.Node, prefix: str) -> dict[int, _Tree]:
    tree_ids = _attr(node, "nodes_treeids")
    node_ids = _attr(node, "nodes_nodeids")
    n = len(node_ids)
    features = _attr(node, "nodes_featureids")
    modes = [_text(m) for m in _attr(node, "nodes_modes")]
    values = _floats(node, "nodes_values") or [0.0] * n
    true_ids = _attr(node, "nodes_truenodeids")
    false_ids = _attr(node, "nodes_falsenodeids")
    missing = _attr(node, "nodes_missing_value_tracks_true") or [0] * n
    trees: dict[int, _Tree] = defaultdict(_Tree)
    for i in range(n):
        trees[tree_ids[i]].nodes[node_ids[i]] = (features[i], modes[i], values[i], true_ids[i], false_ids[i],
                                                 missing[i])
    v_trees = _attr(node, f"{prefix}_treeids")
    v_nodes = _attr(node, f"{prefix}_nodeids")
    v_ids = _attr(node, f"{prefix}_ids")
    v_weights = _floats(node, f"{prefix}_weights")
    for t, nid, target, w in zip(v_trees, v_nodes, v_ids, v_weights):
        trees[t].votes[nid].append((target, w))
    for modes_ in modes:
        if modes_ not in _MODES and modes_ != "LEAF":
            raise ExportError(f"{node.name or node.op_type}: node mode {modes_} is not supported")
    return dict(sorted(trees.items()))


def _flatten(trees: dict[int, _Tree], name: str) -> dict[str, list]:
    """``TreeEnsemble`` attributes for trees whose leaves each vote for one target (or none)."""
    out: dict[str, list] = defaultdict(list)
    for tree in trees.values():
        targets = {t for votes in tree.votes.values() for t, _ in votes} or {0}
        (target,) = targets
        _emit_tree(tree, target, out, name, lambda nid, tree=tree, target=target: sum(
            w for t, w in tree.votes.get(nid, []) if t == target))
    return out


def _multi_target(trees: dict[int, _Tree]) -> bool:
    """True when some tree votes for several targets (a leaf with a vote per class, as skl2onnx writes
    forests)."""
    return any(len({t for votes in tree.votes.values() for t, _ in votes}) > 1 for tree in trees.values())


def _leaf_ids(trees: dict[int, _Tree], name: str, n_targets: int) -> tuple[dict[str, list], np.ndarray]:
    """Trees whose leaves carry several votes: each tree gets its own target and each leaf its global id
    as weight; ``table[id]`` holds the leaf's votes ``[n_targets]``. The ensemble then gives, per row, the
    id of the leaf reached in every tree; gathering and summing the table rows gives the scores, each tree
    evaluated once (copying a tree per target would evaluate it ``n_targets`` times)."""
    out: dict[str, list] = defaultdict(list)
    rows: list[np.ndarray] = []
    ids: dict[tuple[int, int], int] = {}
    for position, tree in enumerate(trees.values()):
        for nid in sorted(tree.nodes):
            if tree.nodes[nid][1] == "LEAF":
                ids[position, nid] = len(rows)
                votes = np.zeros(n_targets)
                for t, w in tree.votes.get(nid, []):
                    votes[t] += w
                rows.append(votes)
        _emit_tree(tree, position, out, name, lambda nid, position=position: float(ids[position, nid]))
    return out, np.asarray(rows)


def _emit_tree(tree: _Tree, target: int, out: dict[str, list], name: str, weight: Any) -> None:
    node_pos: dict[int, int] = {}
    leaf_pos: dict[int, int] = {}
    for nid in sorted(tree.nodes):
        mode = tree.nodes[nid][1]
        if mode == "LEAF":
            leaf_pos[nid] = len(out["leaf_targetids"])
            out["leaf_targetids"].append(target)
            out["leaf_weights"].append(weight(nid))
    branches = [nid for nid in sorted(tree.nodes) if tree.nodes[nid][1] != "LEAF"]
    for k, nid in enumerate(branches):
        node_pos[nid] = len(out["nodes_featureids"]) + k
    if 0 not in tree.nodes:
        raise ExportError(f"{name}: a tree has no root node 0", hint="the graph's tree attributes are malformed")
    if not branches:  # a single leaf: a dummy split whose two branches reach it
        out["tree_roots"].append(len(out["nodes_featureids"]))
        for key, value in (("nodes_featureids", 0), ("nodes_modes", 0), ("nodes_splits", 0.0),
                           ("nodes_truenodeids", leaf_pos[0]), ("nodes_trueleafs", 1),
                           ("nodes_falsenodeids", leaf_pos[0]), ("nodes_falseleafs", 1),
                           ("nodes_missing_value_tracks_true", 0)):
            out[key].append(value)
        return
    out["tree_roots"].append(node_pos[0])
    for nid in branches:
        feature, mode, threshold, true_id, false_id, missing = tree.nodes[nid]
        out["nodes_featureids"].append(int(feature))
        out["nodes_modes"].append(_MODES[mode])
        out["nodes_splits"].append(float(threshold))
        out["nodes_missing_value_tracks_true"].append(int(missing))
        for child, ids, leafs in ((true_id, "nodes_truenodeids", "nodes_trueleafs"),
                                  (false_id, "nodes_falsenodeids", "nodes_falseleafs")):
            if child not in tree.nodes:
                raise ExportError(f"{name}: node {nid} points at missing node {child}")
            is_leaf = child in leaf_pos
            out[ids].append(leaf_pos[child] if is_leaf else node_pos[child])
            out[leafs].append(int(is_leaf))


class _Writer:
    """Appends nodes before ``anchor`` in its graph."""

    def __init__(self, anchor: ir.Node) -> None:
        self.anchor = anchor
        self.graph = anchor.graph
        self.prefix = (anchor.name or anchor.op_type) + "/"
        self.count = 0

    def op(self, op_type: str, *inputs: ir.Value, domain: str = "", **attrs: Any) -> ir.Value:
        self.count += 1
        node = ir.node(op_type, list(inputs), attributes={k: v for k, v in attrs.items() if v is not None},
                       domain=domain, name=f"{self.prefix}{op_type}_{self.count}")
        self.graph.insert_before(self.anchor, node)
        return node.outputs[0]

    def const(self, array: np.ndarray, hint: str) -> ir.Value:
        self.count += 1
        name = f"{self.prefix}{hint}_{self.count}"
        from onegraph.emit import to_tensor

        tensor = to_tensor(np.asarray(array), name=name)
        value = ir.Value(name=name, shape=ir.Shape(np.asarray(array).shape), type=ir.TensorType(tensor.dtype),
                         const_value=tensor)
        self.graph.register_initializer(value)
        return value


def _scores(w: _Writer, node: ir.Node, trees: dict[int, _Tree], n_targets: int, aggregate: str,
            dtype: np.dtype) -> ir.Value:
    """``[N, n_targets]`` sums (or min / max) of the trees' votes, before base values and transform."""
    name = node.name or node.op_type
    if not _multi_target(trees):
        return _ensemble(w, node, _flatten(trees, name), n_targets, aggregate, dtype)
    if aggregate in ("MIN", "MAX"):
        raise ExportError(f"{name}: aggregate {aggregate} over trees voting for several targets is not supported")
    attrs, table = _leaf_ids(trees, name, n_targets)
    if len(table) >= 2**24 and dtype == np.float32:
        raise ExportError(f"{name}: {len(table)} leaves cannot be numbered exactly in float32")
    ids = _ensemble(w, node, attrs, len(trees), "SUM", dtype)
    index = w.op("Cast", ids, to=ir.DataType.INT64)
    votes = w.op("Gather", w.const(table.astype(dtype), "leaf_votes"), index, axis=0)
    return w.op("ReduceSum", votes, w.const(np.array([1], np.int64), "tree_axis"), keepdims=0)


def _ensemble(w: _Writer, node: ir.Node, attrs: dict[str, list], n_targets: int, aggregate: str,
              dtype: np.dtype) -> ir.Value:
    x = node.inputs[0]
    return w.op(
        "TreeEnsemble", x, domain="ai.onnx.ml",
        nodes_featureids=attrs["nodes_featureids"], nodes_splits=ir.tensor(np.asarray(attrs["nodes_splits"], dtype)),
        nodes_modes=ir.tensor(np.asarray(attrs["nodes_modes"], np.uint8)),
        nodes_truenodeids=attrs["nodes_truenodeids"], nodes_trueleafs=attrs["nodes_trueleafs"],
        nodes_falsenodeids=attrs["nodes_falsenodeids"], nodes_falseleafs=attrs["nodes_falseleafs"],
        nodes_missing_value_tracks_true=attrs["nodes_missing_value_tracks_true"],
        leaf_targetids=attrs["leaf_targetids"], leaf_weights=ir.tensor(np.asarray(attrs["leaf_weights"], dtype)),
        tree_roots=attrs["tree_roots"], n_targets=n_targets, aggregate_function=_AGGREGATE[aggregate],
        post_transform=0)


def _score_dtype(node: ir.Node) -> np.dtype:
    """Thresholds and leaf weights in double when the graph gave them as ``_as_tensor`` doubles or the
    input is double; the old operators output float32 scores otherwise."""
    x = node.inputs[0]
    if x.dtype == ir.DataType.DOUBLE or _attr(node, "nodes_values_as_tensor") is not None:
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def _transform(w: _Writer, scores: ir.Value, post: str, name: str) -> ir.Value:
    if post == "NONE":
        return scores
    if post == "LOGISTIC":
        return w.op("Sigmoid", scores)
    if post == "SOFTMAX":
        return w.op("Softmax", scores, axis=1)
    raise ExportError(f"{name}: post_transform {post} has no translation to standard operators",
                      hint="convert the model with post_transform NONE, LOGISTIC or SOFTMAX")


def _regressor(w: _Writer, node: ir.Node) -> None:
    name = node.name or node.op_type
    dtype = _score_dtype(node)
    aggregate = _text(_attr(node, "aggregate_function", b"SUM"))
    n_targets = int(_attr(node, "n_targets", 1))
    trees = _read_trees(node, "target")
    y = _scores(w, node, trees, n_targets, "SUM" if aggregate == "AVERAGE" else aggregate, dtype)
    if aggregate == "AVERAGE":
        y = w.op("Div", y, w.const(np.asarray(len(trees), dtype), "n_trees"))
    base = _floats(node, "base_values")
    if base:
        y = w.op("Add", y, w.const(np.asarray(base, dtype), "base_values"))
    y = _transform(w, y, _text(_attr(node, "post_transform", b"NONE")), name)
    if dtype != np.float32:
        y = w.op("Cast", y, to=ir.DataType.FLOAT)  # the old operator's output is float32
    node.outputs[0].replace_all_uses_with(y, replace_graph_outputs=True)
    _keep_name(node.outputs[0], y, ir.DataType.FLOAT, n_targets)


def _classifier(w: _Writer, node: ir.Node) -> None:
    name = node.name or node.op_type
    dtype = _score_dtype(node)
    labels_int = _attr(node, "classlabels_int64s")
    labels_str = _attr(node, "classlabels_strings")
    classes = np.asarray(labels_int, np.int64) if labels_int else np.asarray([_text(s) for s in labels_str], object)
    n_classes = len(classes)
    trees = _read_trees(node, "class")
    class_ids = {t for tree in trees.values() for v in tree.votes.values() for t, _ in v}
    binary = len(class_ids) <= 1
    if n_classes < 2:
        raise ExportError(f"{name}: a classifier with {n_classes} class label(s) is not supported")
    n_targets = 1 if binary else n_classes
    raw = _scores(w, node, trees, n_targets, "SUM", dtype)
    base = _floats(node, "base_values")
    if base:
        raw = w.op("Add", raw, w.const(np.asarray(base[:n_targets] if binary else base, dtype), "base_values"))
    post = _text(_attr(node, "post_transform", b"NONE"))
    if binary:
        if post == "NONE":
            first = w.op("Sub", w.const(np.asarray(1, dtype), "one"), raw)
        else:
            first = w.op("Neg", raw)
        raw = w.op("Concat", first, raw, axis=1)
    scores = _transform(w, raw, post, name)
    if dtype != np.float32:
        scores = w.op("Cast", scores, to=ir.DataType.FLOAT)
    index = w.op("ArgMax", scores, axis=1, keepdims=0)
    label = w.op("Gather", w.const(classes, "classlabels"), index, axis=0)
    old_label, old_scores = node.outputs[0], node.outputs[1]
    old_label.replace_all_uses_with(label, replace_graph_outputs=True)
    old_scores.replace_all_uses_with(scores, replace_graph_outputs=True)
    _keep_name(old_label, label, ir.DataType.INT64 if labels_int else ir.DataType.STRING, None)
    _keep_name(old_scores, scores, ir.DataType.FLOAT, n_classes)


def _keep_name(old: ir.Value, new: ir.Value, dtype: ir.DataType, width: int | None) -> None:
    """The replacement takes over the old output's name (a graph output keeps its name); its type and shape
    are what the rewrite computes (``[N]`` label, ``[N, width]`` scores), whatever the old graph declared."""
    name = old.name
    old.name = None
    new.name = name
    new.dtype = dtype
    batch = old.shape[0] if old.shape is not None and len(old.shape) >= 1 else None
    new.shape = ir.Shape([batch] if width is None else [batch, width])


def upgrade_tree_ensembles(model: ir.Model) -> int:
    """Rewrite every ``TreeEnsembleClassifier`` / ``TreeEnsembleRegressor`` of ``model``'s main graph as
    ``TreeEnsemble`` (ai.onnx.ml 5) plus standard operators, in place; return how many were rewritten.

    The rewritten graph gives the same outputs (names, element types: label as the class labels' type,
    scores float32 ``[N, n_classes]``; predictions float32 ``[N, n_targets]``) as the old operators in the ONNX
    reference implementation. The model's ai.onnx.ml opset becomes 5.

    Raises
    ------
    ExportError
        naming the node, for ``post_transform`` PROBIT / SOFTMAX_ZERO, ``MIN`` / ``MAX`` aggregation over
        multi-target leaves, a single-class classifier, or malformed tree attributes.
    """
    nodes = [n for n in model.graph if n.domain == "ai.onnx.ml" and n.op_type in LEGACY_OPS]
    for node in nodes:
        w = _Writer(node)
        (_classifier if node.op_type == "TreeEnsembleClassifier" else _regressor)(w, node)
        model.graph.remove(node, safe=True)
    if nodes and "" not in model.opset_imports:
        from onegraph.emit import OPSET

        model.opset_imports[""] = OPSET  # the standard operators written after the ensemble
        model.graph.opset_imports[""] = OPSET
    if nodes or "ai.onnx.ml" in model.opset_imports:
        model.opset_imports["ai.onnx.ml"] = max(5, model.opset_imports.get("ai.onnx.ml", 5))
        model.graph.opset_imports["ai.onnx.ml"] = model.opset_imports["ai.onnx.ml"]
    return len(nodes)

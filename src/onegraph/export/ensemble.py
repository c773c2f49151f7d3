"""Ensembles of composed models: mean, weighted mean, vote, stacking — in the graph and in numpy.

Each method is written twice, side by side: :meth:`Ensemble.emit` writes the nodes, :meth:`Ensemble.apply`
computes the same thing in numpy from the models' own outputs (the parity reference). They follow
scikit-learn's ``VotingClassifier`` / ``VotingRegressor`` (``soft``: ``np.average`` of the probabilities
with ``weights``; ``hard``: the class with the largest weighted count of votes, the first on ties) and
``StackingClassifier`` / ``StackingRegressor`` (the final estimator on the models' ``predict_proba``,
without the first column of a binary problem, or ``predict``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx_ir as ir

from onegraph.emit import BOOL, DOUBLE, INT64, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.models import ModelOutputs, label_from_index

__all__ = ["METHODS", "Ensemble", "check_weights"]

METHODS = ("mean", "weighted", "vote", "stacking")


def check_weights(weights: Sequence[float], what: str = "weights") -> list[float]:
    """``weights`` as floats: finite, none negative, not all zero (a weighted mean of probabilities is then a
    probability; ``np.average`` divides by their sum).

    Raises
    ------
    ExportError
        naming the first weight at fault (``what`` names the option, e.g. ``--weights``).
    """
    values = [float(w) for w in weights]
    for i, w in enumerate(values):
        if not np.isfinite(w) or w < 0:
            raise ExportError(f"{what}: weight {i + 1} is {w!r}; weights must be finite and not negative",
                              hint="give one weight >= 0 per model, e.g. 1,3")
    if values and sum(values) == 0:
        raise ExportError(f"{what}: the weights sum to zero", hint="give at least one positive weight")
    return values


@dataclasses.dataclass
class Ensemble:
    """How several models' outputs combine into one answer (outputs ``label`` / ``probabilities`` or
    ``prediction``).

    Parameters
    ----------
    method: ``"mean"`` (average of probabilities or predictions), ``"weighted"`` (weighted average),
        ``"vote"`` (weighted majority of labels; classifiers only), ``"stacking"`` (``final_estimator`` on
        the models' outputs).
    weights: one per model, in the order of the models (``weighted`` and ``vote``; default: equal).
    final_estimator: fitted model taking the stacked outputs (``stacking``).
    classes: the ensemble's classes (default: the models' own, which must agree). ``encoded=True`` says the
        models predict indices into ``classes`` (how scikit-learn's voting and stacking fit their
        estimators).
    """

    method: str
    weights: Sequence[float] | None = None
    final_estimator: Any = None
    classes: Sequence | None = None
    encoded: bool = False

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ExportError(f"unknown ensemble method {self.method!r}", hint=f"use one of: {', '.join(METHODS)}")
        if self.method == "stacking" and self.final_estimator is None:
            raise ExportError("a stacking ensemble needs a fitted final_estimator")
        if self.weights is not None:
            check_weights(self.weights)

    @classmethod
    def from_sklearn(cls, obj: Any) -> tuple[dict[str, Any], Ensemble]:
        """The models and the ensemble of a fitted ``VotingClassifier`` / ``VotingRegressor`` /
        ``StackingClassifier`` / ``StackingRegressor``."""
        from sklearn.ensemble import (
            StackingClassifier,
            StackingRegressor,
            VotingClassifier,
            VotingRegressor,
        )

        names = [n for n, e in obj.estimators if e != "drop"]
        models = dict(zip(names, obj.estimators_))
        classes = list(obj.classes_) if hasattr(obj, "classes_") else None
        if isinstance(obj, (VotingClassifier, VotingRegressor)):
            method = "vote" if getattr(obj, "voting", "soft") == "hard" else "weighted"
            return models, cls(method, weights=obj._weights_not_none, classes=classes, encoded=classes is not None)
        if isinstance(obj, (StackingClassifier, StackingRegressor)):
            wanted = "predict_proba" if classes is not None else "predict"
            bad = [n for n, m in zip(names, obj.stack_method_) if m != wanted]
            if bad or obj.passthrough:
                raise ExportError(f"{type(obj).__name__}: only stack_method={wanted!r} without passthrough can be "
                                  f"exported (model(s) {', '.join(bad) or 'passthrough'})",
                                  hint=f"fit it with stack_method={wanted!r}, passthrough=False")
            return models, cls("stacking", final_estimator=obj.final_estimator_, classes=classes,
                               encoded=classes is not None)
        raise ExportError(f"{type(obj).__name__} is not a scikit-learn ensemble")

    # -- checks ---------------------------------------------------------------------------------
    def resolve(self, adapters: dict[str, Any]) -> tuple[str, list | None]:
        """The task and classes of the ensemble; raises :class:`ExportError` naming models that disagree."""
        tasks = {name: a.task for name, a in adapters.items()}
        if len(set(tasks.values())) != 1:
            raise ExportError("an ensemble mixes classifiers and regressors: "
                              + ", ".join(f"{n} ({t})" for n, t in tasks.items()))
        task = next(iter(tasks.values()))
        if self.weights is not None and len(self.weights) != len(adapters):
            raise ExportError(f"{len(self.weights)} weight(s) for {len(adapters)} models",
                              hint="give one weight per model, in the models' order")
        if task == "regressor":
            if self.method == "vote":
                raise ExportError("a vote needs classifiers", hint="use mean or weighted for regressors")
            return task, None
        first_name, first = next(iter(adapters.items()))
        for name, a in adapters.items():
            if a.classes != first.classes:
                raise ExportError(f"models {first_name!r} and {name!r} predict different classes "
                                  f"({first.classes} vs {a.classes})", hint="fit them on the same target")
            if self.method in ("mean", "weighted") and "probabilities" not in _roles(a):
                raise ExportError(f"model {name!r} ({a.source}) gives no probabilities to average",
                                  hint="use method='vote', or a model with predict_proba")
        if self.classes is None and first.classes is None:  # an ONNX file without onegraph's metadata
            raise ExportError(f"model {first_name!r} does not say which class each column of its "
                              "probabilities is, so its answers cannot be combined with the others'",
                              hint="build the models with onegraph (its metadata names the classes), or give "
                                   "them in the probabilities' column order: `onegraph compose ... --classes A,B,C`, "
                                   "Ensemble(..., classes=[...]) in Python")
        classes = list(self.classes) if self.classes is not None else list(first.classes)
        if first.classes is not None and len(classes) != len(first.classes):
            raise ExportError(f"the ensemble has {len(classes)} classes, model {first_name!r} {len(first.classes)}")
        if first.classes is not None and self.classes is not None and not self.encoded:
            # given classes are for models that do not name theirs: a different order would relabel every column
            # (encoded models predict indices 0..k-1 into the classes given: those name what the indices mean)
            if [str(c) for c in classes] != [str(c) for c in first.classes]:
                raise ExportError(f"the classes given ({', '.join(map(str, classes))}) are not model "
                                  f"{first_name!r}'s own, in its probabilities' column order "
                                  f"({', '.join(map(str, first.classes))})",
                                  hint="leave the classes out: the models name theirs (--classes / classes= is for "
                                       "models that do not)")
            classes = list(first.classes)  # the model's own values (ints stay ints where the text was given)
        return task, classes

    def _weights(self, n: int) -> np.ndarray:
        return np.ones(n) if self.weights is None else np.asarray(self.weights, np.float64)

    # -- graph ----------------------------------------------------------------------------------
    def emit(self, g: GraphBuilder, outputs: dict[str, ModelOutputs], task: str, classes: list | None,
             adapters: dict[str, Any]) -> ModelOutputs:
        """Nodes combining the models' ``outputs`` (by model name, in order)."""
        outs = list(outputs.values())
        w = self._weights(len(outs))
        if self.method == "stacking":
            return self._emit_stacking(g, outs, task, classes)
        if task == "regressor":
            return ModelOutputs.regressor(_weighted_mean(g, [o.values["prediction"] for o in outs], w, self.method))
        if self.method == "vote":
            k = len(classes)
            votes = None
            for o, weight in zip(outs, w):
                index = self._index(g, o.values["label"], classes)
                # one-hot by comparison: onnxruntime has no double OneHot
                column = g.op("Unsqueeze", index, g.const(np.array([1], np.int64), "axes"), dtype=INT64)
                hit = g.op("Equal", column, g.const(np.arange(k, dtype=np.int64).reshape(1, -1), "class_ids"),
                           dtype=BOOL)
                hot = g.op("Where", hit, g.const(np.float64(weight), "weight"), g.const(np.float64(0.0), "zero"),
                           dtype=DOUBLE)
                votes = hot if votes is None else g.op("Add", votes, hot, dtype=DOUBLE)
            best = g.op("ArgMax", votes, axis=1, keepdims=0, dtype=INT64)
            return ModelOutputs.label_only(label_from_index(g, classes, best), classes)
        proba = _weighted_mean(g, [o.values["probabilities"] for o in outs], w, self.method)
        proba.shape = ir.Shape(["N", len(classes)])
        best = g.op("ArgMax", proba, axis=1, keepdims=0, dtype=INT64)
        return ModelOutputs.classifier(label_from_index(g, classes, best), proba, classes)

    def _index(self, g: GraphBuilder, label: ir.Value, classes: list) -> ir.Value:
        """A model's label as the index of its class in ``classes``."""
        if self.encoded:
            return label if label.dtype == INT64 else g.op("Cast", label, to=INT64, dtype=INT64)
        keys = np.asarray(classes)
        kind = "strings" if keys.dtype.kind in "OUS" else "int64s" if keys.dtype.kind in "iub" else "floats"
        values = list(range(len(classes)))
        keys_list = [str(c) for c in classes] if kind == "strings" else keys.astype(
            np.int64 if kind == "int64s" else np.float32).tolist()
        return g.op("LabelEncoder", label, domain="ai.onnx.ml", dtype=INT64, default_int64=-1,
                    **{f"keys_{kind}": keys_list, "values_int64s": values})

    def _emit_stacking(self, g: GraphBuilder, outs: list[ModelOutputs], task: str, classes: list | None) -> ModelOutputs:
        from onegraph.export.adapters.choose import adapt

        parts = []
        for o in outs:
            if task == "regressor":
                parts.append(g.op("Unsqueeze", o.values["prediction"], g.const(np.array([1], np.int64), "axes"),
                                  dtype=DOUBLE))
            elif len(classes) == 2:
                parts.append(g.op("Slice", o.values["probabilities"], g.const(np.array([1], np.int64), "start"),
                                  g.const(np.array([2], np.int64), "stop"), g.const(np.array([1], np.int64), "axes"),
                                  dtype=DOUBLE))
            else:
                parts.append(o.values["probabilities"])
        x = parts[0] if len(parts) == 1 else g.op("Concat", *parts, axis=1, dtype=DOUBLE)
        final = adapt(self.final_estimator)
        with g.scope("final_estimator", self.final_estimator):
            result = final.emit(g, x)
        if task == "regressor" or not self.encoded:
            return result
        label = result.values["label"]
        label = label_from_index(g, classes, label if label.dtype == INT64 else g.op("Cast", label, to=INT64,
                                                                                          dtype=INT64))
        if "probabilities" in result.values:
            return ModelOutputs.classifier(label, result.values["probabilities"], classes)
        return ModelOutputs.label_only(label, classes)

    # -- numpy ----------------------------------------------------------------------------------
    def apply(self, expected: dict[str, dict[str, np.ndarray]], task: str, classes: list | None) -> dict[str, np.ndarray]:
        """The ensemble computed in numpy from each model's reference outputs (by model name)."""
        outs = list(expected.values())
        w = self._weights(len(outs))
        if self.method == "stacking":
            from onegraph.export.adapters.choose import adapt

            if task == "regressor":
                x = np.column_stack([o["prediction"] for o in outs])
            else:
                x = np.hstack([o["probabilities"][:, 1:] if len(classes) == 2 else o["probabilities"] for o in outs])
            result = adapt(self.final_estimator).expected(x)
            if task == "classifier" and self.encoded:
                result["label"] = np.asarray(classes, dtype=object)[np.asarray(result["label"], np.int64)]
            return result
        if task == "regressor":
            return {"prediction": np.average(np.stack([o["prediction"] for o in outs]), axis=0, weights=w)}
        table = np.asarray(classes, dtype=object)
        if self.method == "vote":
            index = {c: i for i, c in enumerate(classes)}
            labels = np.stack([np.asarray([int(v) if self.encoded else index[_plain(v)] for v in o["label"]])
                               for o in outs], axis=1)
            best = np.apply_along_axis(lambda row: np.argmax(np.bincount(row, weights=w, minlength=len(classes))),
                                       1, labels)
            return {"label": table[best]}
        proba = np.average(np.stack([o["probabilities"] for o in outs]), axis=0, weights=w)
        return {"label": table[proba.argmax(axis=1)], "probabilities": proba}

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"method": self.method}
        if self.weights is not None:
            out["weights"] = [float(v) for v in self.weights]
        if self.final_estimator is not None:
            out["final_estimator"] = type(self.final_estimator).__name__
        return out


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _roles(adapter: Any) -> set[str]:
    if adapter.task == "regressor":
        return {"prediction"}
    roles = getattr(adapter, "roles", None)
    if roles is not None:
        return set(roles)
    has_proba = adapter.task == "classifier" and (not hasattr(adapter.model, "predict") or
                                                 hasattr(adapter.model, "predict_proba"))
    return {"label", "probabilities"} if has_proba else {"label"}


def _weighted_mean(g: GraphBuilder, values: list[ir.Value], w: np.ndarray, method: str) -> ir.Value:
    """``np.average(values, axis=0, weights=w)``: sum of ``w_i * v_i`` divided by ``sum(w)``."""
    total = None
    for v, weight in zip(values, w):
        term = v if method == "mean" else g.op("Mul", v, g.const(np.float64(weight), "weight"), dtype=DOUBLE)
        total = term if total is None else g.op("Add", total, term, dtype=DOUBLE)
    scale = float(len(values)) if method == "mean" else float(w.sum())
    return g.op("Div", total, g.const(np.float64(scale), "weight_sum"), dtype=DOUBLE)

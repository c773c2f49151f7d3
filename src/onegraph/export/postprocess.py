"""Post-processing of a composed model's answer: decision threshold, label mapping, top-k classes.

Each step keeps its two faces side by side: :meth:`emit` writes the nodes on the answer's outputs
(``label``, ``probabilities``), :meth:`apply` computes the same in numpy (the parity reference). Calibrated
probabilities come from scikit-learn's ``CalibratedClassifierCV`` used as the model (see
:mod:`onegraph.export.adapters.calibration`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import onnx_ir as ir

from onegraph.emit import DOUBLE, INT64, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.models import label_from_index
from onegraph.export.adapters.ops import threshold_index


class PostStep:
    """One post-processing step on the answer ``{"label", "probabilities", ...}`` and its classes."""

    def emit(self, g: GraphBuilder, values: dict[str, ir.Value], classes: list) -> tuple[dict[str, ir.Value], list]:
        raise NotImplementedError

    def apply(self, values: dict[str, np.ndarray], classes: list) -> tuple[dict[str, np.ndarray], list]:
        raise NotImplementedError


def _need(values: dict, role: str, step: str) -> None:
    if role not in values:
        raise ExportError(f"{step} needs the answer's {role}, which this model does not give",
                          hint="apply it to a classifier with probabilities")


@dataclasses.dataclass
class Threshold(PostStep):
    """Binary decision threshold: the label is ``pos_label`` where its probability is ``>= threshold``,
    the other class elsewhere (scikit-learn's ``FixedThresholdClassifier`` on ``predict_proba``).

    ``pos_label`` defaults to the second class (scikit-learn's positive class).
    """

    threshold: float
    pos_label: Any = None

    def _positions(self, classes: list) -> tuple[int, int]:
        if classes is None or len(classes) != 2:
            raise ExportError(f"a decision threshold needs a binary classifier; this one has classes {classes}")
        pos = 1 if self.pos_label is None else classes.index(self.pos_label) if self.pos_label in classes else None
        if pos is None:
            raise ExportError(f"pos_label {self.pos_label!r} is not one of the classes {classes}")
        return pos, 1 - pos

    def emit(self, g, values, classes):
        _need(values, "probabilities", "Threshold")
        pos, neg = self._positions(classes)
        p = g.op("Gather", values["probabilities"], g.const(np.int64(pos), "pos"), axis=1, dtype=DOUBLE)
        p.shape = ir.Shape(["N"])
        index = threshold_index(g, p, self.threshold, pos, neg)
        return {**values, "label": label_from_index(g, classes, index)}, classes

    def apply(self, values, classes):
        pos, neg = self._positions(classes)
        index = np.where(values["probabilities"][:, pos] >= self.threshold, pos, neg)
        return {**values, "label": np.asarray(classes, dtype=object)[index]}, classes


@dataclasses.dataclass
class LabelMap(PostStep):
    """Rename the classes: ``mapping`` class -> new label (every class must be mapped; the new labels are
    all text or all integers). The probability columns keep their order under the new names."""

    mapping: dict

    def _new(self, classes: list) -> list:
        missing = [c for c in classes if c not in self.mapping]
        if missing:
            raise ExportError(f"LabelMap does not map class(es) {missing}", hint="give a new label for every class")
        return [self.mapping[c] for c in classes]

    def emit(self, g, values, classes):
        _need(values, "label", "LabelMap")
        new = self._new(classes)
        keys = np.asarray(classes)
        if keys.dtype.kind in "OUS":
            index = g.op("LabelEncoder", values["label"], domain="ai.onnx.ml", dtype=INT64, default_int64=-1,
                         keys_strings=[str(c) for c in classes], values_int64s=list(range(len(classes))))
        elif keys.dtype.kind in "iub":
            label = values["label"]
            if label.dtype != INT64:
                label = g.op("Cast", label, to=INT64, dtype=INT64)
            index = g.op("LabelEncoder", label, domain="ai.onnx.ml", dtype=INT64, default_int64=-1,
                         keys_int64s=keys.astype(np.int64).tolist(), values_int64s=list(range(len(classes))))
        else:
            raise ExportError("LabelMap maps text or integer classes", hint="encode the target as text or integers")
        return {**values, "label": label_from_index(g, new, index)}, new

    def apply(self, values, classes):
        new = self._new(classes)
        lookup = dict(zip([_plain(c) for c in classes], new))
        return {**values, "label": np.asarray([lookup[_plain(v)] for v in values["label"]], dtype=object)}, new


@dataclasses.dataclass
class TopK(PostStep):
    """The ``k`` most probable classes per row, most probable first (the lower class index first on ties):
    outputs ``top_labels`` ``[N, k]`` and ``top_probabilities`` ``[N, k]`` (ONNX ``TopK``)."""

    k: int

    def emit(self, g, values, classes):
        _need(values, "probabilities", "TopK")
        if not 1 <= self.k <= len(classes):
            raise ExportError(f"TopK(k={self.k}) for {len(classes)} classes", hint=f"use 1 <= k <= {len(classes)}")
        top, index = g.op("TopK", values["probabilities"], g.const(np.array([self.k], np.int64), "k"), axis=1,
                          largest=1, sorted=1, outputs=2)
        top.dtype, index.dtype = DOUBLE, INT64
        labels = label_from_index(g, classes, index)
        for v in (top, labels):
            v.shape = ir.Shape(["N", self.k])
        return {**values, "top_labels": labels, "top_probabilities": top}, classes

    def apply(self, values, classes):
        p = values["probabilities"]
        order = np.argsort(-p, axis=1, kind="stable")[:, :self.k]
        return {**values, "top_labels": np.asarray(classes, dtype=object)[order],
                "top_probabilities": np.take_along_axis(p, order, axis=1)}, classes


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


__all__ = ["LabelMap", "PostStep", "Threshold", "TopK"]

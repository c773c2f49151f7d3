"""CatBoost models (``CatBoostClassifier`` / ``CatBoostRegressor``) -> graph, through CatBoost's own ONNX export.

CatBoost writes ``TreeEnsembleClassifier`` / ``TreeEnsembleRegressor`` (ai.onnx.ml 2) on a float32 input
``features``; the ``ZipMap`` after a classifier is dropped and splicing rewrites the trees as
``TreeEnsemble`` (ai.onnx.ml 5, :mod:`.legacy_trees`). CatBoost compares float32 features with float32
borders, as the graph does, but sums its leaf values in double where the exported trees sum float32: the
parity check is made within 1e-5 (relative and absolute), the precision of those float32 sums.

Raises :class:`~onegraph.errors.ExportError` for a model with categorical features: CatBoost's ONNX export
does not support them (encode them before the model, or use LightGBM, whose categorical splits onegraph
writes itself).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np
import onnx_ir as ir
from sklearn.base import is_classifier

from onegraph.emit import DOUBLE, FLOAT, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.contract import Adapter, Consumes, qualified_name
from onegraph.export.adapters.models import ModelOutputs

__all__ = ["CatBoostModel"]


class CatBoostModel(Adapter):
    """A fitted CatBoost classifier or regressor; consumes a float32 matrix (see the module notes)."""

    tolerance = (1e-5, 1e-5)

    def __init__(self, model: Any) -> None:
        if not model.is_fitted():
            raise ExportError(f"{type(model).__name__} is not fitted", hint="call fit before building")
        if model.get_cat_feature_indices():
            raise ExportError(f"{type(model).__name__} with categorical features cannot be exported: CatBoost's "
                              "ONNX export does not support them",
                              hint="encode them before the model (OneHotEncoder / OrdinalEncoder), or use "
                                   "LightGBM's categorical_feature")
        self.model = model
        self.source = qualified_name(model)
        self.task = "classifier" if is_classifier(model) else "regressor"
        self.classes = [c.item() if isinstance(c, np.generic) else c for c in model.classes_] \
            if self.task == "classifier" else None
        self.consumes = Consumes("float", int(len(model.feature_names_)))

    def to_onnx(self):
        """CatBoost's export, without the ``ZipMap``: input ``features`` float32 ``[N, F]``."""
        import onnx

        fd, path = tempfile.mkstemp(suffix=".onnx")
        os.close(fd)
        try:
            self.model.save_model(path, format="onnx")
            proto = onnx.load(path)
        except Exception as exc:  # CatBoost raises its own CatBoostError for unsupported models
            raise ExportError(f"CatBoost cannot export {self.source} to ONNX: {exc}") from None
        finally:
            os.unlink(path)
        for node in list(proto.graph.node):
            node.name = ""  # CatBoost's names would read as scope paths ("a/b") when the graph is grouped
            if node.op_type == "ZipMap":
                tensor = node.input[0]
                for out in proto.graph.output:
                    if out.name == node.output[0]:
                        proto.graph.output.remove(out)
                        break
                proto.graph.node.remove(node)
                proto.graph.output.append(onnx.helper.make_tensor_value_info(
                    tensor, onnx.TensorProto.FLOAT, [None, len(self.classes)]))
        return proto

    def emit(self, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
        from onegraph.export.adapters.onnx_graph import splice

        xf = g.derived(("float", id(x)), lambda: g.op("Cast", x, to=FLOAT, dtype=FLOAT))
        name = type(self.model).__name__
        outs = splice(g, self.to_onnx(), {"features": xf}, prefix=g.unique(name) + "/", what=name)
        if self.task == "classifier":
            label = outs["label"]
            proba = g.op("Cast", next(v for k, v in outs.items() if k != "label"), to=DOUBLE, dtype=DOUBLE)
            return ModelOutputs.classifier(label, proba, self.classes)
        (pred,) = outs.values()
        pred = g.op("Cast", pred, to=DOUBLE, dtype=DOUBLE)
        return ModelOutputs.regressor(g.op("Reshape", pred, g.const(np.array([-1], np.int64), "flat"), dtype=DOUBLE))

    def expected(self, x: Any) -> dict[str, np.ndarray]:
        if self.task == "regressor":
            return {"prediction": np.asarray(self.model.predict(x), np.float64)}
        label = np.asarray(self.model.predict(x)).reshape(-1)
        return {"label": label, "probabilities": np.asarray(self.model.predict_proba(x))}

"""scikit-learn predictors as composable adapters (onegraph's double-precision adapters, skl2onnx else)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
from sklearn.base import is_classifier

from onegraph.emit import GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.contract import Adapter, Consumes, qualified_name
from onegraph.export.adapters.models import emit_registered

__all__ = ["SklearnModel"]


class SklearnModel(Adapter):
    """A fitted scikit-learn classifier or regressor; consumes a float64 matrix of ``n_features_in_``
    columns. Emitted by the model registry (:func:`~onegraph.export.adapters.models.emit_registered`)."""

    def __init__(self, model: Any) -> None:
        if not (hasattr(model, "predict") and hasattr(model, "n_features_in_")):
            raise ExportError(f"{type(model).__name__} is not a fitted predictor",
                              hint="give a fitted classifier or regressor (call fit first)")
        self.model = model
        self.source = qualified_name(model)
        self.task = "classifier" if is_classifier(model) else "regressor"
        self.classes = [c.item() if isinstance(c, np.generic) else c for c in model.classes_] \
            if self.task == "classifier" else None
        self.consumes = Consumes("double", int(model.n_features_in_))

    def emit(self, g: GraphBuilder, x: ir.Value):
        return emit_registered(self.model, g, x)

    def expected(self, x: Any) -> dict[str, np.ndarray]:
        m = self.model
        if self.task == "regressor":
            return {"prediction": np.asarray(m.predict(x))}
        out = {"label": np.asarray(m.predict(x))}
        if hasattr(m, "predict_proba"):
            out["probabilities"] = np.asarray(m.predict_proba(x))
        return out

"""XGBoost and LightGBM models (their scikit-learn API) -> graph, through onnxmltools.

onnxmltools writes ``TreeEnsembleClassifier`` / ``TreeEnsembleRegressor`` (ai.onnx.ml 1); splicing rewrites
them as ``TreeEnsemble`` (ai.onnx.ml 5, :mod:`.legacy_trees`). Both libraries compare float32 features
against float32 thresholds, so the model consumes a float32 matrix: the double features are cast, as the
libraries themselves do, and scores are float32 sums (checked against ``predict`` / ``predict_proba``
within 1e-5).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import onnx_ir as ir
from sklearn.base import is_classifier

from onegraph.emit import DOUBLE, FLOAT, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.contract import Adapter, Consumes, qualified_name
from onegraph.export.adapters.models import ModelOutputs

__all__ = ["BoostingModel"]

#: highest default-domain opset onnxmltools 1.16 converts to; splicing converts it to onegraph's
_ONNXMLTOOLS_OPSET = 15


def _unnamed(model: Any) -> Any:
    """A copy of an XGBoost model fitted on a DataFrame, its booster's feature names dropped: onnxmltools reads
    features only as ``f0, f1, ...`` (the model given is not modified)."""
    if model.get_booster().feature_names is None:
        return model
    import copy

    clone = copy.deepcopy(model)
    clone.get_booster().feature_names = None
    clone.get_booster().feature_types = None
    return clone


class BoostingModel(Adapter):
    """A fitted ``XGBClassifier`` / ``XGBRegressor`` / ``LGBMClassifier`` / ``LGBMRegressor``.

    Consumes a float32 matrix of ``n_features_in_`` columns; a classifier gives ``label`` (its
    ``classes_``) and ``probabilities`` (``[N, n_classes]`` double, from float32), a regressor
    ``prediction`` (``[N]`` double).

    Raises
    ------
    ExportError
        for an unfitted model, or one onnxmltools cannot convert (naming it).
    """

    tolerance = (1e-5, 1e-5)

    def __init__(self, model: Any) -> None:
        if not hasattr(model, "n_features_in_"):
            raise ExportError(f"{type(model).__name__} is not fitted", hint="call fit before composing")
        self.model = model
        self.library = type(model).__module__.split(".")[0]
        self.source = qualified_name(model)
        self.task = "classifier" if is_classifier(model) else "regressor"
        self.classes = [c.item() if isinstance(c, np.generic) else c for c in model.classes_] \
            if self.task == "classifier" else None
        self.consumes = Consumes("float", int(model.n_features_in_))

    def to_onnx(self):
        """The onnxmltools conversion: input ``X`` float32 ``[N, F]``."""
        from onnxmltools.convert.common.data_types import FloatTensorType

        types = [("X", FloatTensorType([None, self.consumes.width]))]
        missing = getattr(self.model, "missing", np.nan) if self.library == "xgboost" else np.nan
        if missing is not None and not (isinstance(missing, float) and np.isnan(missing)):
            # onnxmltools#373: its trees send only NaN down the missing branch
            raise ExportError(f"{self.source} was fitted with missing={missing!r}: XGBoost sent those values down "
                              "each tree's missing branch, which an ONNX tree ensemble takes for NaN only",
                              hint="fit with missing=np.nan (the default), after replacing the values meant as "
                                   f"missing by NaN (e.g. X.replace({missing!r}, np.nan))")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if self.library == "xgboost":
                    from onnxmltools import convert_xgboost

                    return convert_xgboost(_unnamed(self.model), initial_types=types, target_opset=_ONNXMLTOOLS_OPSET)
                from onnxmltools import convert_lightgbm

                return convert_lightgbm(self.model, initial_types=types, target_opset=_ONNXMLTOOLS_OPSET,
                                        zipmap=False)
        except Exception as exc:  # onnxmltools raises many types for unsupported objectives / options
            raise ExportError(f"onnxmltools cannot convert {self.source}: {exc}",
                              hint="onnxmltools converts the standard objectives (binary, multiclass, "
                                   "regression) and options; check the model's parameters") from None

    def emit(self, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
        from onegraph.export.adapters.onnx_graph import splice

        xf = g.derived(("float", id(x)), lambda: g.op("Cast", x, to=FLOAT, dtype=FLOAT))
        name = type(self.model).__name__
        outs = splice(g, self.to_onnx(), {"X": xf}, prefix=g.unique(name) + "/", what=name)
        if self.task == "classifier":
            proba = g.op("Cast", outs["probabilities"], to=DOUBLE, dtype=DOUBLE)
            return ModelOutputs.classifier(outs["label"], proba, self.classes)
        (pred,) = outs.values()
        pred = g.op("Cast", pred, to=DOUBLE, dtype=DOUBLE)
        return ModelOutputs.regressor(g.op("Reshape", pred, g.const(np.array([-1], np.int64), "flat"),
                                           dtype=DOUBLE))

    def expected(self, x: Any) -> dict[str, np.ndarray]:
        if self.task == "regressor":
            return {"prediction": np.asarray(self.model.predict(x), np.float64)}
        return {"label": np.asarray(self.model.predict(x)), "probabilities": np.asarray(self.model.predict_proba(x))}



"""Which adapter a model gets (:func:`adapt`), and a model step emitted through it (:func:`emit_model`)."""

from __future__ import annotations

import os
from typing import Any

import onnx_ir as ir

from onegraph.check.source import is_in_memory_model
from onegraph.emit import GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.boosting import BoostingModel
from onegraph.export.adapters.contract import Adapter
from onegraph.export.adapters.models import ModelOutputs, emit_registered
from onegraph.export.adapters.onnx_file import OnnxModel
from onegraph.export.adapters.sklearn_model import SklearnModel

__all__ = ["adapt", "emit_model"]


def adapt(obj: Any) -> Adapter:
    """The adapter for ``obj``.

    ``obj`` may be an :class:`Adapter` (returned as is), a path to / bytes of / ``onnx.ModelProto`` of an
    ONNX model (:class:`~onegraph.export.adapters.onnx_file.OnnxModel`), a fitted XGBoost scikit-learn-API
    model (:class:`~onegraph.export.adapters.boosting.BoostingModel`, float32 as XGBoost computes), a LightGBM
    one (:class:`~onegraph.export.adapters.lightgbm.LightGBMModel`, double as LightGBM computes), a CatBoost
    one (:class:`~onegraph.export.adapters.catboost.CatBoostModel`), or a fitted
    scikit-learn predictor (:class:`~onegraph.export.adapters.sklearn_model.SklearnModel`). A PyTorch module
    must be wrapped in :class:`~onegraph.export.adapters.torch_module.TorchModule` (which says whether its
    output is logits of classes or a prediction).

    Raises
    ------
    ExportError
        for a bare PyTorch module or an object that is not a fitted predictor.
    """
    if isinstance(obj, Adapter):
        return obj
    if isinstance(obj, (str, os.PathLike, bytes)) or is_in_memory_model(obj):
        return OnnxModel(obj)
    library = type(obj).__module__.split(".")[0]
    if library == "lightgbm":
        from onegraph.export.adapters.lightgbm import LightGBMModel

        return LightGBMModel(obj)
    if library == "catboost":
        from onegraph.export.adapters.catboost import CatBoostModel

        return CatBoostModel(obj)
    if library == "xgboost":
        return BoostingModel(obj)
    if library == "torch":
        raise ExportError(f"a PyTorch {type(obj).__name__} does not say what its output means",
                          hint="wrap it: TorchModule(module, classes=[...]) for logits of classes, or "
                               "TorchModule(module) for a prediction")
    return SklearnModel(obj)


def emit_model(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    """The outputs of fitted ``model`` (a pipeline's final step, an ensemble's member) applied to ``x``
    ``[N, F]`` double: an adapter or a boosting / torch model through :func:`adapt`, a scikit-learn model
    through the registry (:func:`~onegraph.export.adapters.models.emit_registered`).

    Raises
    ------
    ExportError
        when the model is not fitted, or no adapter nor skl2onnx converter exists for it.
    """
    if isinstance(model, Adapter) or type(model).__module__.split(".")[0] in ("xgboost", "lightgbm", "catboost",
                                                                                  "torch"):
        return adapt(model).emit(g, x)
    return emit_registered(model, g, x)

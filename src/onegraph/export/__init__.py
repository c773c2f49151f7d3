"""Build: fitted preprocessing and model(s) -> one ONNX model."""

from onegraph.contract.metadata import SequenceSpec
from onegraph.export import adapters  # noqa: F401  (registers the adapters)
from onegraph.export.adapters.boosting import BoostingModel
from onegraph.export.adapters.choose import adapt
from onegraph.export.adapters.contract import Adapter, Consumes
from onegraph.export.adapters.onnx_file import OnnxModel
from onegraph.export.adapters.sklearn_model import SklearnModel
from onegraph.export.adapters.torch_module import TorchModule
from onegraph.export.build import build
from onegraph.export.compose import compose
from onegraph.export.ensemble import Ensemble
from onegraph.export.merge import compose_models
from onegraph.export.postprocess import LabelMap, Threshold, TopK

__all__ = ["build", "compose", "compose_models", "Ensemble", "Threshold", "LabelMap", "TopK", "SequenceSpec", "Adapter", "Consumes",
           "adapt", "SklearnModel", "BoostingModel", "TorchModule", "OnnxModel"]

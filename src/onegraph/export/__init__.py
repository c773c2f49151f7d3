"""Build: fitted preprocessing and model(s) -> one ONNX model."""

from onegraph.export import adapters  # noqa: F401  (registers the adapters)
from onegraph.export.build import build

__all__ = ["build"]

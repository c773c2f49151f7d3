"""Scoring built models: DataFrame -> feeds -> onnxruntime -> DataFrame."""

from onegraph.runtime.score import score, session
from onegraph.runtime.session import Session

__all__ = ["Session", "score", "session"]

"""Scoring built models: DataFrame -> feeds -> onnxruntime -> DataFrame."""

from onegraph.runtime.score import cached_session, score
from onegraph.runtime.session import Session

__all__ = ["Session", "cached_session", "score"]

"""Scoring built models: DataFrame -> feeds -> onnxruntime -> DataFrame."""

from onegraph import _lazy

__all__ = ["Session", "cached_session", "score"]
_lazy.exports(__name__, {
    "Session": "onegraph.runtime.session", "cached_session": "onegraph.runtime.score",
    "score": "onegraph.runtime.score",
})

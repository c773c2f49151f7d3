"""``onegraph.parity``: do the source scikit-learn objects and the graph give the same answers on the same rows?

The expected values are computed by the source objects themselves (``transform``, ``predict``,
``predict_proba``); the comparison is :func:`onegraph.verify.parity.outputs_parity`.
"""

from __future__ import annotations

from typing import Any

from onegraph.contract.tables import as_pandas
from onegraph.export.sources import expected_outputs, split_pipeline
from onegraph.verify.parity import ParityReport, outputs_parity

__all__ = ["parity"]


def parity(pipeline: Any, model: Any, data: Any, *, onnx_model: Any = None, rtol: float = 1e-6,
           atol: float = 1e-12) -> ParityReport:
    """Run the source objects and the graph on the same rows and compare every output.

    Parameters
    ----------
    pipeline, model:
        The fitted preprocessing and model, as given to :func:`onegraph.build` (either may be None; a
        ``Pipeline`` ending in a model is split).
    data:
        The rows (any table onegraph reads).
    onnx_model:
        The graph to check (path, bytes or ModelProto); built from ``pipeline`` and ``model`` when None.
    rtol, atol:
        A number agrees when ``|graph - source| <= atol + rtol * |source|``; labels and text must be equal.

    Returns
    -------
    ParityReport
        One :class:`~onegraph.verify.parity.OutputParity` per output (classifier: label agreement and
        probability differences; regressor: prediction differences; preprocessing only: one per transformed
        column).
    """
    pipeline, model = split_pipeline(pipeline, model)
    frame = as_pandas(data)
    if onnx_model is None:
        from onegraph.export.build import build

        onnx_model = build(pipeline, model, frame, check_parity=False)
    return outputs_parity(onnx_model, frame, expected_outputs(pipeline, model, frame), rtol=rtol, atol=atol)

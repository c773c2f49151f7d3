"""A scikit-learn ``Pipeline`` used as a model: inside a voting / stacking / bagging ensemble, a calibrated or
target-transformed model, anywhere a member is emitted from a feature matrix.

The steps before the last go through the transformer emitters (as ``build(pipeline)`` emits them), the last
through its model adapter (:func:`~onegraph.export.adapters.models.emit_registered`) or its decision function
(:func:`~onegraph.export.adapters.models.emit_decision`): ``Pipeline.predict_proba`` / ``decision_function`` of
scikit-learn, which call the steps' ``transform`` then the final estimator's method.
"""

from __future__ import annotations

from typing import Any

import onnx_ir as ir
import sklearn.pipeline

from onegraph.emit import DOUBLE, GraphBuilder
from onegraph.export.adapters.models import (
    ModelOutputs,
    emit_decision,
    emit_registered,
    register_decision,
    register_model,
)
from onegraph.export.adapters.sklearn import emit_pipeline

__all__ = ["emit_pipeline_model", "emit_pipeline_decision"]


def _transformed(pipe: Any, g: GraphBuilder, x: ir.Value) -> ir.Value:
    """The steps before the last on ``x`` ``[N, F]`` double: ``[N, F']`` double."""
    if len(pipe.steps) == 1:
        return x
    names = getattr(pipe, "feature_names_in_", None)
    width = int(getattr(pipe, "n_features_in_", 0) or (x.shape[1] if x.shape is not None else 0))
    names = [str(n) for n in names] if names is not None else [f"x{i}" for i in range(width)]
    table = g.table_columns
    if table is not None and all(n in table for n in names):  # a member selecting the table's columns itself
        cols = [table[n] for n in names]
    else:
        cols = g.block(x, names, "float", DOUBLE)
    return g.matrix(emit_pipeline(sklearn.pipeline.Pipeline(pipe.steps[:-1]), g, cols), DOUBLE)


@register_model(sklearn.pipeline.Pipeline)
def emit_pipeline_model(pipe: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    return emit_registered(pipe.steps[-1][1], g, _transformed(pipe, g, x))


@register_decision(sklearn.pipeline.Pipeline)
def emit_pipeline_decision(pipe: Any, g: GraphBuilder, x: ir.Value) -> ir.Value:
    return emit_decision(pipe.steps[-1][1], g, _transformed(pipe, g, x))

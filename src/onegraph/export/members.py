"""Members that select and encode the table's columns themselves.

scikit-learn hands every member of a voting / stacking / calibrated ensemble the whole DataFrame, so a member
may be ``make_pipeline(ColumnTransformer(...), model)`` over the table's own text and number columns (the form
scikit-learn's docs give for heterogeneous ensembles). Such members' steps start from the table's columns
(:attr:`~onegraph.emit.GraphBuilder.table_columns`, read by the pipeline adapter), not from the numeric
feature matrix every other model takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx_ir as ir

from onegraph.emit import DOUBLE, INT64, Col, GraphBuilder

__all__ = ["NOT_NUMBERS", "members", "table_pipelines", "feature_matrix"]

#: column kinds a model's feature matrix cannot hold
NOT_NUMBERS = ("string", "datetime", "timedelta")


def members(model: Any) -> list[tuple[str, Any]]:
    """A meta-estimator's members (voting, stacking, calibration, target transform) by name."""
    found = [(n, m) for n, m in getattr(model, "named_estimators_", {}).items() if not isinstance(m, str)]
    for attr in ("estimator", "regressor", "estimator_", "regressor_"):
        if getattr(model, attr, None) is not None:
            found.append((attr, getattr(model, attr)))
    return found


def table_pipelines(models: Sequence[Any], cols: list[Col]) -> bool:
    """Whether every one of ``models`` is a pipeline fitted on exactly the table's columns ``cols`` (by name; an
    unfitted template, a calibrated classifier's ``estimator``, has no names) and text or dates reach them:
    then each is emitted from the table's columns. A model taking the whole table without such steps cannot
    take its text, and is refused by the caller's check."""
    from sklearn.pipeline import Pipeline

    if not models or not any(c.kind in NOT_NUMBERS for c in cols):
        return False
    names = [c.name for c in cols]

    def takes_the_table(m: Any) -> bool:
        seen = getattr(m, "feature_names_in_", None)
        return isinstance(m, Pipeline) and (seen is None or [str(n) for n in seen] == names)

    return all(map(takes_the_table, models))


def feature_matrix(g: GraphBuilder, cols: list[Col]) -> ir.Value:
    """The models' matrix when their pipelines take the table's columns (:func:`table_pipelines`): ``cols``
    become ``g.table_columns``, the matrix holds the number columns (``[N, 0]`` when there are none; a
    stacking ensemble's ``passthrough`` reads it)."""
    g.table_columns = {c.name: c for c in cols}
    numbers = [c for c in cols if c.kind not in NOT_NUMBERS]
    if numbers:
        return g.matrix(numbers, DOUBLE)
    rows = g.op("Shape", g.vector(cols[0]), start=0, end=1, dtype=INT64)
    shape = g.op("Concat", rows, g.const(np.array([0], np.int64), "zero_width"), axis=0, dtype=INT64)
    return g.op("ConstantOfShape", shape, value=ir.tensor(np.zeros(1, np.float64)), dtype=DOUBLE)

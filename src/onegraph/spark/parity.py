"""Parity of a converted Spark ML pipeline: Spark's own ``transform`` vs the graph in onnxruntime, row by row."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

__all__ = ["ROW_ID", "spark_parity", "collect_arrow"]

ROW_ID = "__onegraph_row"


def spark_parity(pipeline: Any, proto: onnx.ModelProto, sample: Any, *, atol: float = 1e-6) -> list[str]:
    """Differences between Spark's outputs and the graph's on the rows of ``sample`` (empty when none).

    Labels must be identical (Spark's ``prediction`` index mapped to the model's classes), probabilities and
    regression predictions within ``atol``; rows Spark drops (``handleInvalid="skip"``) must be exactly the
    rows the graph marks ``skipped``. The sample is collected to the driver once and given an explicit row
    id, so both sides see the same rows in a known order.
    """
    import pyarrow as pa
    from pyspark.ml.functions import vector_to_array

    from onegraph.runtime.session import Session

    table = collect_arrow(sample)
    session = Session(proto, trusted=True)
    ours = session.run(table)
    ids = pa.array(np.arange(table.num_rows, dtype=np.int64))
    spark = sample.sparkSession
    frame = spark.createDataFrame(table.append_column(ROW_ID, ids))  # pyspark >= 4 takes Arrow tables
    model = pipeline.stages[-1] if hasattr(pipeline, "stages") else pipeline
    out = pipeline.transform(frame)
    wanted = [ROW_ID, model.getPredictionCol()]
    probabilities = model.getProbabilityCol() if model.hasParam("probabilityCol") else None
    if probabilities:
        out = out.withColumn(probabilities, vector_to_array(probabilities))
        wanted.append(probabilities)
    theirs = collect_arrow(out.select(*wanted)).to_pydict()
    rows = np.asarray(theirs[ROW_ID], np.int64)
    order = np.argsort(rows)
    rows = rows[order]
    problems = []
    kept = ~np.asarray(ours.get("skipped", np.zeros(table.num_rows, bool)), bool)
    if not np.array_equal(rows, np.flatnonzero(kept)):
        problems.append(f"Spark keeps {len(rows)} rows, the graph {int(kept.sum())} (rows marked 'skipped')")
        return problems
    predicted = np.asarray(theirs[model.getPredictionCol()], np.float64)[order]
    if "label" in ours:
        classes = next(o["classes"] for o in session.outputs if o["role"] == "probabilities")
        expected = np.asarray(classes, dtype=object)[predicted.astype(np.int64)]
        got = np.asarray(ours["label"], dtype=object)[rows]
        bad = np.flatnonzero(expected != got)
        if len(bad):
            problems.append(f"label differs on {len(bad)} row(s), first row {rows[bad[0]]}: "
                            f"Spark {expected[bad[0]]!r}, graph {got[bad[0]]!r}")
        p_spark = np.asarray(theirs[probabilities], np.float64)[order]
        _close(problems, "probabilities", ours["probabilities"][rows], p_spark, rows, atol)
    else:
        _close(problems, "prediction", ours["prediction"][rows], predicted, rows, atol)
    return problems


def _close(problems: list[str], name: str, got: np.ndarray, expected: np.ndarray, rows: np.ndarray,
           atol: float) -> None:
    diff = np.abs(np.asarray(got, np.float64) - expected)
    diff = np.where(np.isnan(got) & np.isnan(expected), 0.0, diff)
    worst = float(np.nanmax(diff, initial=0.0)) if diff.size else 0.0
    if worst > atol or np.isnan(diff).any():
        row = int(rows[np.unravel_index(np.nanargmax(np.nan_to_num(diff, nan=np.inf)), diff.shape)[0]])
        problems.append(f"{name} differs by up to {worst:.3g} (> {atol:g}), first at row {row}")


def collect_arrow(frame: Any) -> Any:
    """A Spark DataFrame's rows on the driver as a pyarrow Table (``toArrow`` in pyspark >= 4)."""
    import pyarrow as pa

    if hasattr(frame, "toArrow"):
        return frame.toArrow()
    return pa.Table.from_pandas(frame.toPandas(), preserve_index=False)  # pragma: no cover - pyspark 3.5

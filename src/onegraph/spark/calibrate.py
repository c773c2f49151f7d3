"""``onegraph.spark.calibrate``: tensor statistics of a model over a Spark DataFrame, per partition, merged."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

from onegraph.errors import DataError
from onegraph.spark.score import ModelBroadcast, check_columns, executor_session

__all__ = ["calibrate"]


def calibrate(df: Any, model: Any, *, depth: int = 2, trusted: bool = False, **options: Any) -> Any:
    """Tensor statistics of a model over a Spark DataFrame: :func:`onegraph.stats.calibrate` per partition,
    merged with a tree aggregation (``RDD.treeReduce``).

    The accumulators are mergeable (:mod:`onegraph.stats.accumulators`): the result equals one pass over
    all rows, exactly for counts, minimum, maximum and histograms, to rounding for mean and variance, and
    within the stated rank error for quantiles.

    Parameters
    ----------
    df:
        A ``pyspark.sql.DataFrame`` with the model's input columns.
    model:
        A model built by onegraph (path, bytes or ``onnx.ModelProto``).
    depth:
        Depth of the tree aggregation.
    options:
        Passed to :func:`onegraph.stats.calibrate` (``tensors``, ``op_types``, ``bins``, ``sketch_k``,
        ``channel_axis``, ``std_k``, ``sketch_per_sample``, ``seed``...).

    Returns
    -------
    onegraph.stats.Calibration

    Raises
    ------
    MissingColumnError, ColumnTypeError
        before any job, for a column the model cannot take; DataError when ``df`` has no rows.
    """
    from onegraph.stats.calibrate import calibrate as calibrate_part

    options = {k: v for k, v in options.items() if k not in ("progress", "threads")}
    m = ModelBroadcast(model, trusted)
    check_columns(m.session.inputs, df.schema)
    data = df.sparkSession.sparkContext.broadcast(m.data)
    key = m.key
    needed = [s.name for s in m.session.inputs]

    def partition_stats(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        session = executor_session(key, data, 1 << 30, 1)
        feeds = (session.feeds(b)[1] for b in batches if b.num_rows)
        first = next(feeds, None)
        if first is None:
            return
        import itertools

        part = calibrate_part(data.value, itertools.chain([first], feeds), progress=False, threads=1, **options)
        yield pa.RecordBatch.from_pydict({"calibration": [pickle.dumps(part)]})

    parts = df.select(*needed).mapInArrow(partition_stats, "calibration binary")
    pickled = parts.rdd.map(lambda row: pickle.loads(row[0]))
    try:
        return pickled.treeReduce(lambda a, b: a.merge(b), depth=depth)
    except ValueError as exc:  # pyspark: "Can not reduce() empty RDD"
        if "empty" not in str(exc):
            raise
        raise DataError("the DataFrame holds no rows to calibrate on", hint="give at least one row") from None

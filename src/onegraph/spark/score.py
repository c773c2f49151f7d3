"""onegraph models on Apache Spark: batch scoring and distributed tensor statistics.

A onegraph model is one ONNX file, so executors need onnxruntime and the model's bytes only: the bytes are
broadcast once, each executor Python process opens one :class:`~onegraph.runtime.session.Session` per
model (cached across tasks, as Spark reuses its Python workers) and scores the Arrow batches Spark hands to
``mapInArrow``. Columns are checked against the model's stored input schema on the driver, before any job
starts. Each output row is computed from its own input row only, so a task Spark retries recomputes
exactly its rows: nothing is lost or duplicated (Spark's output commit keeps one attempt per task).

Needs the optional extra ``spark`` (``pip install 'onegraph[spark]'``); pyspark >= 4 (``mapInArrow``,
``DataFrame.toArrow``).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from onegraph.contract.columns import ColumnSpec
from onegraph.errors import (
    ColumnTypeError,
    ConfigError,
    DataError,
    MissingColumnError,
    OnegraphError,
    RuntimeFailure,
)

__all__ = ["check_columns", "SPARK_TYPES", "ModelBroadcast", "executor_session", "score", "spark_errors"]

#: Spark type names (``DataType.typeName()``) each input kind accepts
_ACCEPTED = {
    "float": {"double", "float", "integer", "long", "short", "byte", "decimal", "boolean"},
    "int": {"integer", "long", "short", "byte", "double", "float", "decimal"},  # fractions refused per value
    "bool": {"boolean"},
    "string": {"string", "varchar", "char"},
    "datetime": {"timestamp", "timestamp_ntz", "date"},
    "timedelta": {"daytimeinterval"},
}
#: sessions opened in this (executor) process, least recently used first
_SESSIONS: dict[tuple, Any] = {}
_CACHED_SESSIONS = 4


# -- checks on the driver -------------------------------------------------------------------------
def check_columns(specs: list[ColumnSpec], schema: Any) -> None:
    """Check a Spark ``StructType`` against a model's input schema before any job starts.

    Raises
    ------
    MissingColumnError
        naming the columns the model needs that ``schema`` lacks.
    ColumnTypeError
        naming a column whose Spark type the model's input cannot take (text for a number, ...).
    """
    fields = {f.name: f for f in schema.fields}
    missing = [s.name for s in specs if s.name not in fields]
    if missing:
        raise MissingColumnError(missing, list(fields))
    for spec in specs:
        spark_type = fields[spec.name].dataType
        name = re.sub(r"\(.*", "", spark_type.typeName())
        if name not in _ACCEPTED[spec.kind]:
            raise ColumnTypeError(spec.name, f"Spark type {spark_type.simpleString()} cannot feed the model's "
                                  f"{spec.kind} input ({spec.onnx_type})",
                                  hint=f"cast it, e.g. df.withColumn({spec.name!r}, F.col({spec.name!r})"
                                       f".cast('{SPARK_TYPES[spec.kind]}'))")


SPARK_TYPES = {"float": "double", "int": "long", "bool": "boolean", "string": "string", "datetime": "timestamp",
         "timedelta": "interval day to second"}


class ModelBroadcast:
    """A model's bytes, checked once on the driver, and the layout of its scored columns."""

    def __init__(self, model: Any, trusted: bool) -> None:
        from onegraph.check.loader import read_model
        from onegraph.runtime.session import Session

        source = read_model(model, trusted=trusted, purpose="run")
        self.data = bytes(source.data)
        self.key = hashlib.sha256(self.data).hexdigest()
        self.session = Session(self.data, trusted=True, threads=1)

    def output_schema(self) -> Any:
        """The Arrow schema of ``Session.score``'s columns (from a 0-row run: same code path, same types)."""
        import pyarrow as pa

        empty = {s.name: np.empty(0, dtype=s.numpy_dtype) for s in self.session.inputs}
        frame = self.session.score(empty)
        return pa.schema([pa.field(str(c), _arrow_type(frame[c])) for c in frame.columns])


def _arrow_type(series: Any) -> Any:
    import pyarrow as pa

    if series.dtype == object:
        return pa.string()
    if str(series.dtype).startswith("datetime64"):
        return pa.timestamp("us", tz="UTC")
    if str(series.dtype).startswith("timedelta64"):
        return pa.duration("us")
    return pa.Array.from_pandas(series).type


def executor_session(key: str, data: Any, batch_size: int, threads: int) -> Any:
    """The executor process' session for a model (opened on the first task, reused by the next ones)."""
    from onegraph.runtime.session import Session

    cache_key = (key, batch_size, threads)
    session = _SESSIONS.pop(cache_key, None)
    if session is None:
        # the driver pre-checked these bytes (Session in _Model); reading the broadcast fetches them once
        session = Session(data.value, trusted=True, batch_size=batch_size, threads=threads)
        while len(_SESSIONS) >= _CACHED_SESSIONS:  # the least recently used goes
            _SESSIONS.pop(next(iter(_SESSIONS)))
    _SESSIONS[cache_key] = session
    return session


# -- scoring --------------------------------------------------------------------------------------
def score(df: Any, model: Any, *, batch_size: int = 65536, threads: int = 1, keep: bool | list[str] = True,
          trusted: bool = False) -> Any:
    """Score a Spark DataFrame with a onegraph model: a DataFrame with the model's outputs as typed columns.

    Parameters
    ----------
    df:
        A ``pyspark.sql.DataFrame`` holding the model's input columns (extra columns are carried along).
    model:
        Path to a ``.onnx`` file built by onegraph, its bytes, or an ``onnx.ModelProto``.
    batch_size:
        At most this many rows per onnxruntime call (Spark hands ``mapInArrow`` Arrow batches of
        ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows, 10,000 by default; larger ones are sliced).
    threads:
        onnxruntime intra-op threads per task (1: Spark's parallelism comes from its tasks).
    keep:
        Input columns to carry into the output: True for all (an output column of the same name replaces
        it), False for none, or a list of names.
    trusted:
        Skip the pre-check of the model in an isolated process (see :func:`onegraph.check.loader.read_model`).

    Returns
    -------
    pyspark.sql.DataFrame
        The kept input columns, then the columns :func:`onegraph.score` gives (``label``,
        ``probabilities_<class>``, ``prediction``, transformed columns), one row per input row; Spark types
        from the outputs' (double, float, bigint, boolean, string, timestamp). Lazy: nothing runs until an
        action; an error raised while scoring (a category refused by the model) fails the job, and
        :func:`spark_errors` turns it back into the onegraph error.

    Raises
    ------
    MissingColumnError, ColumnTypeError
        before any job, for a column the model needs that ``df`` lacks or has with a type it cannot take.
    ModelFileError
        for a model that cannot be read or opened.
    ConfigError
        for a ``batch_size`` < 1, ``threads`` < 0 or a ``keep`` column that ``df`` does not have.
    """
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    if int(batch_size) < 1 or int(threads) < 0:
        raise ConfigError(f"batch_size={batch_size!r}, threads={threads!r}: batch_size must be >= 1, threads >= 0")
    m = ModelBroadcast(model, trusted)
    check_columns(m.session.inputs, df.schema)
    outputs = m.output_schema()
    kept = _kept_columns(df, keep, set(outputs.names))
    kept_fields = [df.schema[c] for c in kept]
    arrow_kept = to_arrow_schema(df.select(*kept).schema) if kept else pa.schema([])
    schema = pa.schema(list(arrow_kept) + list(outputs))
    spark_schema = from_arrow_schema(schema)
    for i, field in enumerate(kept_fields):  # the input columns keep their own Spark types and metadata
        spark_schema.fields[i] = field
    data = df.sparkSession.sparkContext.broadcast(m.data)
    key, size, n_threads = m.key, int(batch_size), int(threads)
    needed = [s.name for s in m.session.inputs]

    def score_batches(batches: Iterator[Any]) -> Iterator[Any]:
        session = executor_session(key, data, size, n_threads)
        for batch in batches:
            for start in range(0, max(batch.num_rows, 1), size):
                part = batch.slice(start, size)
                frame = session.score(part.select(needed))
                columns = [part.column(c) for c in kept]
                columns += [pa.Array.from_pandas(frame[f.name], type=f.type) for f in outputs]
                yield pa.RecordBatch.from_arrays(columns, schema=schema)

    return df.select(*dict.fromkeys(kept + needed)).mapInArrow(score_batches, spark_schema)


def _kept_columns(df: Any, keep: bool | list[str], outputs: set[str]) -> list[str]:
    if keep is True:
        return [c for c in df.columns if c not in outputs]
    if keep is False:
        return []
    missing = [c for c in keep if c not in df.columns]
    if missing:
        raise ConfigError(f"keep: column {missing[0]!r} is not in the DataFrame (columns: {', '.join(df.columns)})")
    return [c for c in dict.fromkeys(keep) if c not in outputs]


@contextlib.contextmanager
def spark_errors() -> Iterator[None]:
    """Turn a failed Spark job back into one onegraph error, so the command line prints one line: a
    :class:`~onegraph.errors.DataError` carrying the message of the onegraph error raised on an executor,
    else a :class:`~onegraph.errors.RuntimeFailure` with the first line of Spark's message (a cast refused
    under ANSI mode, ...). Errors that are not Spark's pass unchanged."""
    try:
        yield
    except OnegraphError:
        raise
    except Exception as exc:  # PythonException, Py4JJavaError, SparkException wrap the executor's error
        found = re.search(r"onegraph\.errors\.(\w+): ([^\n]+)", str(exc))
        if found is not None:
            raise DataError(f"a Spark task failed with {found.group(1)}: {found.group(2)}") from None
        if not type(exc).__module__.startswith(("pyspark", "py4j")):
            raise
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise RuntimeFailure(f"the Spark job failed: {first[:500]}") from None

"""What one batch runs: the requests' columns concatenated, one onnxruntime run, the rows split back.

Each request arrives as :class:`Rows`: its row count and its columns as the model's feeds (1-D arrays of
the graph input types, built by :meth:`onegraph.runtime.Session.feeds` while the request was read, so a bad
request is refused before it is queued). Feeding these arrays to :meth:`~onegraph.runtime.Session.score`
again gives the same feeds back (they already have the input types and missing-value representations),
so a batch scores exactly what each request would have scored alone.

A batch that raises (a check of the model refuses a row: a category never seen in fit) is scored again
request by request: only the request holding the row gets the error, with row numbers of its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from onegraph.errors import OnegraphError

__all__ = ["Rows", "concat", "batch_function", "split_arrays", "split_frame", "ScoredRows", "json_value"]


class Rows:
    """One request's rows: ``n`` rows, ``table`` the columns (dict of 1-D arrays keyed by input name, to be
    concatenated with other requests'), ``given`` the table as the request gave it (scored as is when the
    request is alone in its batch: one row as a dict takes ``onegraph.score``'s fastest path)."""

    __slots__ = ("n", "table", "given")

    def __init__(self, n: int, table: Any, given: Any = None) -> None:
        self.n = n
        self.table = table
        self.given = table if given is None else given


def concat(payloads: list[Rows]) -> dict[str, np.ndarray]:
    """The columns of several requests, one after the other (row order kept)."""
    first = payloads[0].table
    return {name: np.concatenate([p.table[name] for p in payloads]) for name in first}


def batch_function(score: Callable[[Any], Any], split: Callable[[Any, list[tuple[int, int]]], list]
                   ) -> Callable[[list[Rows]], list]:
    """A :data:`~onegraph.serve.batching.BatchFunction`: ``score`` (a table -> outputs) run once on the
    concatenated requests, ``split(outputs, spans)`` cutting the outputs into one result per ``(start, stop)``
    row span."""

    def alone(payload: Rows) -> Any:
        try:
            return split(score(payload.given), [(0, payload.n)])[0]
        except Exception as exc:  # the request's own error, answered to it alone
            return exc

    def run(payloads: list[Rows]) -> list:
        if len(payloads) == 1:
            return [alone(payloads[0])]
        spans, start = [], 0
        for p in payloads:
            spans.append((start, start + p.n))
            start += p.n
        try:
            return split(score(concat(payloads)), spans)
        except OnegraphError:
            return [alone(p) for p in payloads]

    return run


def split_arrays(outputs: dict[str, np.ndarray], spans: list[tuple[int, int]]) -> list[dict[str, np.ndarray]]:
    """Output arrays (first axis: rows) cut into row spans; views, no copies."""
    return [{k: v[a:b] for k, v in outputs.items()} for a, b in spans]


def split_frame(frame: pd.DataFrame, spans: list[tuple[int, int]]) -> list[ScoredRows]:
    """A scored batch cut into row spans (see :class:`ScoredRows`)."""
    batch = _ScoredBatch(frame)
    return [ScoredRows(batch, a, b) for a, b in spans]


class _ScoredBatch:
    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self.names = [str(c) for c in frame.columns]
        self._rows: list[tuple] | None = None

    def rows(self) -> list[tuple]:
        if self._rows is None:  # once per batch, by the first request that answers in JSON
            frame = self.frame
            # the column arrays as they are (as onegraph's frame reader takes them): a Series per column
            # would cost more than scoring the batch
            get = getattr(frame, "_get_column_array", None) or (lambda j: frame.iloc[:, j].array)
            self._rows = list(zip(*(_to_list(get(j)) for j in range(frame.shape[1]))))
        return self._rows


class ScoredRows:
    """Rows ``start:stop`` of a scored batch: the DataFrame ``onegraph.score`` gives for the request's rows."""

    __slots__ = ("_batch", "start", "stop")

    def __init__(self, batch: _ScoredBatch, start: int, stop: int) -> None:
        self._batch = batch
        self.start = start
        self.stop = stop

    def frame(self) -> pd.DataFrame:
        """The request's rows as a DataFrame indexed 0..n-1 (``onegraph.score``'s columns and dtypes)."""
        part = self._batch.frame.iloc[self.start:self.stop]
        return part.reset_index(drop=True) if self.start else part

    def records(self) -> list[dict]:
        """The request's rows as JSON-ready records: missing values (NaN, None, pd.NA, NaT) as None,
        datetimes as ISO-8601 text, timedeltas as ISO-8601 durations, numpy scalars as Python numbers."""
        names = self._batch.names
        return [dict(zip(names, [json_value(v) for v in row])) for row in self._batch.rows()[self.start:self.stop]]


def _to_list(values: Any) -> list:
    if isinstance(values, np.ndarray):
        return values.tolist()
    return list(values)  # pandas extension arrays: their scalars (pd.NA, Timestamp...) for json_value


def json_value(v: Any) -> Any:
    """One scored value as JSON takes it (see :meth:`ScoredRows.records`)."""
    t = type(v)
    if t is str or t is int or t is bool or v is None:
        return v
    if t is float:
        return None if v != v else v
    if v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, np.generic):
        return json_value(v.item())
    if isinstance(v, (pd.Timestamp, pd.Timedelta)):
        return v.isoformat()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v

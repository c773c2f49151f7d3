"""Rows -> windows for sequence models: group, sort, and index the last ``window`` rows of each row.

A sequence model built by onegraph (metadata ``org.onegraph.sequence``, see
:class:`onegraph.contract.metadata.SequenceSpec`) preprocesses every row once in the graph, then gathers for each
row the rows of its window. The runtime does the part that needs the whole table: it sorts the rows by
(group, order) — stable, so rows with equal times keep their input order — feeds them in that order, and
gives the graph the window of each sorted row as row positions (``-1`` for padding before a group's first
row). Outputs come back in the input's row order. Any ONNX runtime can do the same (see
``tests/node/run.mjs``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from onegraph.errors import ColumnTypeError, MissingColumnError

__all__ = ["window_index", "sequence_feeds", "restore_order"]


def window_index(group: Any, order: Any, window: int) -> tuple[np.ndarray, np.ndarray]:
    """The sort order of the rows and the window of each sorted row.

    Parameters
    ----------
    group: ``[N]`` group keys (any hashable values: card ids, sensor names); missing keys are refused.
    order: ``[N]`` times or numbers giving the order within a group; missing values are refused.
    window: window length ``k``.

    Returns
    -------
    perm: ``[N]`` int64, the input row at each sorted position (``np.lexsort((order, group))``).
    index: ``[N, k]`` int64; row ``i`` holds the sorted positions of the ``k`` rows of its group ending at
        ``i``, oldest first, ``-1`` where the group has fewer rows (padding before the first).

    Raises
    ------
    ColumnTypeError
        for missing group keys or order values.
    """
    codes, _ = pd.factorize(pd.Series(group, copy=False), sort=False, use_na_sentinel=True)
    if (codes < 0).any():
        raise ColumnTypeError("group", f"{int((codes < 0).sum())} row(s) have no group key",
                              hint="every row of a sequence model needs its group (e.g. card id)")
    times = _order_values(order)
    n = len(codes)
    perm = np.lexsort((times, codes)).astype(np.int64)
    sorted_codes = codes[perm]
    first = np.ones(n, dtype=bool)
    first[1:] = sorted_codes[1:] != sorted_codes[:-1]
    rows = np.arange(n, dtype=np.int64)
    start = np.maximum.accumulate(np.where(first, rows, 0))
    position = rows - start
    back = np.arange(window - 1, -1, -1, dtype=np.int64)
    index = rows[:, None] - back[None, :]
    index[back[None, :] > position[:, None]] = -1
    return perm, index


def _order_values(order: Any) -> np.ndarray:
    if isinstance(order, np.ndarray) and order.dtype == np.int64:  # a graph feed: int64 ns, NaT = INT64_MIN
        if (order == np.iinfo(np.int64).min).any():
            raise ColumnTypeError("order", "missing times (NaT)", hint="every row of a sequence needs its time")
        return order
    series = pd.Series(order, copy=False)
    if pd.api.types.is_datetime64_any_dtype(series.dtype) or isinstance(series.dtype, pd.DatetimeTZDtype):
        if series.isna().any():
            raise ColumnTypeError("order", "missing times (NaT)", hint="every row of a sequence needs its time")
        # ticks in the column's own unit (UTC for tz-aware): they only order the rows, and a cast to
        # nanoseconds would wrap a date past 2262 silently
        if isinstance(series.dtype, pd.ArrowDtype):
            import pyarrow as pa

            return series.array._pa_array.cast(pa.int64()).to_numpy()
        return np.asarray(series.array.asi8)
    if series.dtype == object:
        parsed = pd.to_datetime(series, errors="coerce", format="ISO8601")
        if parsed.notna().all():
            return parsed.to_numpy("datetime64[ns]").view(np.int64)
    values = pd.to_numeric(series, errors="coerce").to_numpy(np.float64)
    if np.isnan(values).any():
        raise ColumnTypeError("order", "missing or non-numeric values", hint="give times or numbers")
    return values


def sequence_feeds(spec: Any, get: Any, names: list[str], feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, dict]:
    """Feeds reordered by (group, order) plus the window input; returns ``(perm, feeds)``.

    ``get(column)`` reads a column of the data (the session's column reader); ``spec`` is the model's
    :class:`~onegraph.contract.metadata.SequenceSpec`.
    """
    values = {}
    for column in (spec.group, spec.order):
        if column in feeds:  # a model input: its feed is already in the graph's representation
            values[column] = feeds[column]
            continue
        try:
            values[column] = get(column)
        except MissingColumnError:
            raise MissingColumnError(column, [str(c) for c in names]) from None
    try:
        perm, index = window_index(values[spec.group], values[spec.order], spec.window)
    except ColumnTypeError as exc:
        column = spec.group if exc.column == "group" else spec.order
        raise ColumnTypeError(column, exc.message.split(": ", 1)[-1], hint=exc.hint) from None
    out = {name: arr[perm] for name, arr in feeds.items()}
    out[spec.input] = index
    return perm, out


def restore_order(results: list[np.ndarray], perm: np.ndarray) -> list[np.ndarray]:
    """Outputs computed on sorted rows, back in the input's row order."""
    restored = []
    for r in results:
        out = np.empty_like(r)
        out[perm] = r
        restored.append(out)
    return restored

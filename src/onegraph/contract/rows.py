"""A few rows, fast: feeds for single-row scoring, planned once per input schema.

Scoring one row costs about as much in Python as in onnxruntime, and on a machine whose caches the two
share, every instruction counts twice. A :class:`RowFeeds` is made once per session: it resolves each input's
conversion when the schema is read, so feeding a row is one pass over the inputs without dtype dispatch.
It takes the cases of single-row scoring — a dict of plain scalars, a pandas DataFrame of a few rows whose
columns already have the input types — and answers None for anything else: the general path
(:func:`onegraph.contract.feeds.to_feed`) then converts the values, or raises the error naming the column
and the row. Both paths give the same feeds for the values both take.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from onegraph.contract.columns import MISSING_STRING, NA_INT64, ColumnSpec

__all__ = ["RowFeeds", "small_texts", "FEW"]

#: the most rows the fast paths take (above, the general path's vectorized conversion is faster)
FEW = 16

# conversions, by graph type
_DOUBLE, _FLOAT, _INT, _STRING, _BOOL = range(5)
_CODES = {("float", "double"): _DOUBLE, ("float", "float"): _FLOAT, ("int", "int64"): _INT,
          ("string", "string"): _STRING, ("bool", "bool"): _BOOL}
_F64, _F32, _I64, _OBJECT = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64), np.dtype(object)
#: the dtype a numpy block must have for each conversion (compared with ``==``: an unpickled frame's dtypes are
#: equal objects, not numpy's own; a non-native byte order is not equal and takes the general path)
_DTYPES = {_DOUBLE: _F64, _FLOAT: _F32, _INT: _I64}
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_NAN = float("nan")

#: classes of pandas arrays seen to hold only strings (pandas' Arrow-backed "str" / "string" arrays)
_STRING_ARRAYS: set[type] = set()


def _text_feed(texts: list) -> np.ndarray | None:
    """A few text values (a list of the caller's, rewritten in place) as the object array a string input takes
    (missing as ``MISSING_STRING``), or None when one of them is not text (the general path reports it)."""
    for i, v in enumerate(texts):
        if type(v) is str:
            if MISSING_STRING in v:  # text holding the marker: the general path refuses it
                return None
        elif v is None or v is pd.NA or (type(v) is float and v != v):
            texts[i] = MISSING_STRING
        else:
            return None
    return np.array(texts, dtype=_OBJECT)


def small_texts(values: Any) -> np.ndarray | None:
    """A column of at most :data:`FEW` values (an object array, or pandas' Arrow-backed string array) as the
    object array a string input takes; None for anything else (the general path converts or reports it)."""
    if type(values) is np.ndarray:
        return _text_feed(values.tolist()) if values.dtype == object and values.ndim == 1 and len(values) <= FEW \
            else None
    pa_array = getattr(values, "_pa_array", None)  # pandas' Arrow-backed string arrays
    if pa_array is None:
        return None
    t = type(values)
    if t not in _STRING_ARRAYS:
        if not (isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow"):
            return None
        _STRING_ARRAYS.add(t)
    if len(pa_array) > FEW:
        return None
    # one chunk (the usual case) converts in half the time of the chunked array
    return _text_feed(pa_array.chunk(0).to_pylist() if pa_array.num_chunks == 1 else pa_array.to_pylist())


class RowFeeds:
    """Feeds of one schema for a dict of scalars or a DataFrame of a few rows (see the module's docstring).

    ``rank2`` names the inputs the graph takes as ``[N, 1]``.
    """

    def __init__(self, specs: Sequence[ColumnSpec], rank2: Sequence[str] = ()) -> None:
        # numeric categories (spec.numbers) take the general path: their text depends on the numbers' type;
        # so does date text (spec.date_format): the general path refuses a date in another format
        codes = [None if s.numbers is not None or s.date_format is not None else _CODES.get((s.kind, s.onnx_type))
                 for s in specs]
        #: (input name, conversion, reshape to [N, 1]) per input; None when an input kind has no fast path
        self.plan = None if None in codes else [(s.name, c, s.name in rank2) for s, c in zip(specs, codes)]
        self._positions: dict[int, tuple[Any, list[int] | None]] = {}
        self._slot_plans: dict[tuple, tuple[Any, tuple, list | None]] = {}

    def record(self, record: dict) -> dict[str, np.ndarray] | None:
        """Feeds for one row given as a dict of scalars; None when a column is absent or a value is not a
        plain scalar of its input's kind (Python float / int / str / bool, None or NaN for missing)."""
        if self.plan is None:
            return None
        feeds = {}
        for name, code, rank2 in self.plan:
            v = record.get(name, record)  # the dict itself marks an absent column
            t = type(v)
            if code <= _FLOAT:
                if t is float:
                    pass
                elif v is None:
                    v = _NAN
                elif t is not int or not -2**63 <= v < 2**63:
                    return None  # the general path converts or refuses it, naming the column and row
                if code == _FLOAT and v == v and abs(v) > _FLOAT32_MAX:
                    return None
                arr = np.array([v], dtype=_F64 if code == _DOUBLE else _F32)
            elif code == _STRING:
                if t is str and MISSING_STRING not in v:
                    arr = np.array([v], dtype=_OBJECT)
                elif v is None or (t is float and v != v):
                    arr = np.array([MISSING_STRING], dtype=_OBJECT)
                else:
                    return None
            elif code == _INT:
                if v is None or (t is float and v != v):
                    v = NA_INT64
                elif t is not int or not -2**63 < v < 2**63:
                    return None
                arr = np.array([v], dtype=_I64)
            else:
                if t is not bool:
                    return None
                arr = np.array([v])
            feeds[name] = arr.reshape(1, 1) if rank2 else arr
        return feeds

    def frame(self, frame: pd.DataFrame) -> tuple[int, dict[str, np.ndarray]] | None:
        """The number of rows and the feeds of a pandas DataFrame of at most :data:`FEW` rows, its column arrays
        read straight from its blocks (each block's type checked once); None when a column is absent or
        repeated, or needs converting (the general path)."""
        if self.plan is None:
            return None
        n = len(frame.index)
        if n > FEW:
            return None
        try:  # pandas internals: absent or changed -> general path
            blocks = frame._mgr.blocks
            plan = self._slots(frame.columns, blocks)
        except Exception:  # any internal-API mismatch
            return None
        if plan is None:
            return None
        feeds = {}
        for k, code, columns in plan:
            values = blocks[k].values
            if code == _STRING:
                for name, j, rank2 in columns:
                    arr = small_texts(values if j < 0 else values[j])
                    if arr is None:
                        return None
                    feeds[name] = arr.reshape(-1, 1) if rank2 else arr
                continue
            # a numpy block holds its columns as the rows of one 2-D array of one dtype (its placements say
            # which); anything else (nullable, Arrow-backed, another dtype) takes the general path
            if type(values) is not np.ndarray or values.ndim != 2 or (
                    values.dtype.kind != "b" if code == _BOOL else values.dtype != _DTYPES[code]):
                return None
            if code == _INT and NA_INT64 in values.ravel().tolist():  # the general path refuses it, naming the row
                return None
            for name, j, rank2 in columns:
                arr = values[j]
                feeds[name] = arr.reshape(-1, 1) if rank2 else arr
        return n, feeds

    def _column_positions(self, columns: pd.Index) -> list[int] | None:
        """Where each input is among ``columns`` (None: one is absent or repeated), remembered for the last
        few column labels: rows taken from one DataFrame (``df.iloc[[i]]``) get Index objects of their own
        that share its labels' array, which pandas never changes in place."""
        labels = getattr(columns, "_data", columns)  # pandas internals; the Index itself otherwise
        entry = self._positions.get(id(labels))
        if entry is not None and entry[0] is labels:
            return entry[1]
        names = columns.tolist()
        where = {n: i for i, n in enumerate(names)}
        found = [where.get(name, -1) for name, _, _ in self.plan]
        positions = None if -1 in found or len(where) != len(names) else found  # absent, or names repeated
        _remember(self._positions, id(labels), (labels, positions))  # holds the labels: their id is not reused
        return positions

    def _slots(self, columns: pd.Index, blocks: tuple) -> list[tuple[int, int, list]] | None:
        """Per block holding inputs of one conversion: (the block, the conversion, [(input name, its row in the
        block's 2-D values or -1 for a 1-D array, [N, 1])]); None when an input is absent or a name repeated.
        Remembered for the last few column labels, block placements and block classes, which pandas never
        changes in place: rows taken from one DataFrame (``df.iloc[[i]]``) get an Index and blocks of their
        own that share its labels and placements."""
        labels = getattr(columns, "_data", columns)  # pandas internals; the Index itself otherwise
        # the block classes too: a copy shares its placements, and a column changed to another kind of block
        # (text as object, 2-D, instead of Arrow strings, 1-D) moves its values to another axis
        key = [id(labels)]
        for block in blocks:  # a loop appending to a list: half the time of unpacking maps into a tuple
            key.append(id(block._mgr_locs))
            key.append(type(block))
        key = tuple(key)
        entry = self._slot_plans.get(key)
        if entry is not None:
            return entry[2]
        placements = tuple([block._mgr_locs for block in blocks])
        positions = self._column_positions(columns)
        plan = None
        if positions is not None:
            at: dict[int, tuple[int, int]] = {}
            for k, (block, placement) in enumerate(zip(blocks, placements)):
                locs = placement.indexer
                locs = range(locs.start, locs.stop, locs.step) if type(locs) is slice else locs.tolist()
                two_d = block.values.ndim == 2
                for j, loc in enumerate(locs):
                    at[loc] = (k, j if two_d else -1)
            grouped: dict[tuple[int, int], list] = {}
            for (name, code, rank2), pos in zip(self.plan, positions):
                k, j = at[pos]
                grouped.setdefault((k, code), []).append((name, j, rank2))
            plan = [(k, code, columns) for (k, code), columns in grouped.items()]
        _remember(self._slot_plans, key, (labels, placements, plan))  # holds what the key names: no id reused
        return plan


def _remember(cache: dict, key: Any, entry: Any) -> None:
    """``cache[key] = entry``, keeping the 8 latest."""
    if len(cache) >= 8:
        cache.pop(next(iter(cache)))
    cache[key] = entry

"""The containers of rows onegraph accepts, reduced to named columns.

Accepted everywhere a table is expected: a pandas DataFrame; a polars DataFrame; a pyarrow Table or
RecordBatch; any object exposing the Arrow PyCapsule stream interface (``__arrow_c_stream__``); a dict of
column -> values (a scalar per column means one row); a list of records (dicts). Scoring reads columns one
by one (:func:`column_reader`) without copying the whole table; fitting works on a pandas DataFrame
(:func:`as_pandas`), Arrow-backed where the data came from Arrow so no type is lost.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from onegraph.errors import DataError, MissingColumnError

__all__ = ["as_pandas", "column_reader"]

ColumnGetter = Callable[[str], Any]


def as_pandas(data: Any) -> pd.DataFrame:
    """``data`` as a pandas DataFrame (Arrow-backed columns for Arrow / polars input).

    Raises
    ------
    DataError
        for a container that is not a table (a 2-D array has no column names), or ragged columns.
    """
    if isinstance(data, pd.DataFrame):
        _refuse_multiindex(data)
        return _without_views(data)
    if isinstance(data, pd.Series):  # one row, as df.iloc[i] gives it
        return data.to_frame().T.infer_objects()
    if isinstance(data, Mapping):
        return _dict_frame(data)
    if _is_structured(data):
        return pd.DataFrame(data)
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)) and (
        len(data) == 0 or isinstance(data[0], Mapping)
    ):
        return pd.DataFrame.from_records(list(data))
    table = _arrow_table(data)
    if table is not None:
        return _without_views(table.to_pandas(types_mapper=pd.ArrowDtype))
    raise _not_a_table(data)


def _dict_frame(data: Mapping) -> pd.DataFrame:
    if all(np.ndim(v) == 0 and not isinstance(v, pd.Series) for v in data.values()):
        return pd.DataFrame({k: [v] for k, v in data.items()})
    try:
        return pd.DataFrame(dict(data))
    except ValueError as exc:
        raise DataError(f"the columns given have different lengths ({exc})",
                        hint="give one value per row in every column") from None


def _plain_type(t: Any) -> Any:
    """The Arrow type of ``t``'s values without the view layout (``string_view`` -> ``large_string``,
    ``binary_view`` -> ``large_binary``), or None for any other type. Polars' newest Arrow export writes
    views, which pandas cannot operate on (``ArrowDtype.type`` raises) and pyarrow's compute kernels lack."""
    import pyarrow as pa

    if getattr(pa.types, "is_string_view", None) and pa.types.is_string_view(t):
        return pa.large_string()
    if getattr(pa.types, "is_binary_view", None) and pa.types.is_binary_view(t):
        return pa.large_binary()
    return None


def _without_view(values: Any) -> Any:
    """A pandas Arrow-backed array of a view type as the same values in the plain type; else ``values``."""
    dtype = getattr(values, "dtype", None)
    plain = _plain_type(dtype.pyarrow_dtype) if isinstance(dtype, pd.ArrowDtype) else None
    if plain is None:
        return values
    import pyarrow as pa

    return pd.arrays.ArrowExtensionArray(pa.chunked_array(pa.array(values)).cast(plain))


def _without_views(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``, its view-typed Arrow columns (see :func:`_plain_type`) in the plain type (a shallow copy)."""
    views = [i for i, dt in enumerate(frame.dtypes)
             if isinstance(dt, pd.ArrowDtype) and _plain_type(dt.pyarrow_dtype) is not None]
    if not views:
        return frame
    frame = frame.copy(deep=False)
    for i in views:
        frame.isetitem(i, pd.Series(_without_view(frame.iloc[:, i].array), index=frame.index))
    return frame


def _arrow_table(data: Any) -> Any:
    """A pyarrow Table for Arrow-like data, else None."""
    import pyarrow as pa

    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if type(data).__module__.startswith("polars"):
        if hasattr(data, "collect") and not hasattr(data, "to_arrow"):
            data = data.collect()
        objects = [n for n, t in data.schema.items() if str(t) == "Object"]
        if objects:  # Python objects: to_arrow gives their pointers as fixed_size_binary[8], not their values
            raise DataError(f"column {objects[0]!r} is a polars Object column (Python objects), which has no Arrow "
                            "type, so onegraph cannot read its values",
                            hint="cast it to a typed column first: pl.Series(values, dtype=pl.Date) for dates, "
                                 "pl.Utf8 for text, pl.Float64 for numbers")
        try:
            return data.to_arrow()
        except (pa.ArrowException, NotImplementedError) as exc:  # types Arrow has no equivalent for (Int128)
            raise _unconvertible(data, exc) from None
    if hasattr(data, "__arrow_c_stream__"):
        return pa.table(data)
    return None


def _unconvertible(frame: Any, exc: Exception) -> DataError:
    """The error for a polars frame pyarrow cannot take, naming the first column that fails alone."""
    for name in frame.columns:
        try:
            frame.select(name).to_arrow()
        except Exception:  # noqa: BLE001 - the same failure, for this column
            return DataError(f"column {name!r} ({frame.schema[name]}) has no Arrow type, so onegraph cannot read it "
                             f"({str(exc).strip().splitlines()[0]})",
                             hint="cast it first, e.g. pl.col(name).cast(pl.Int64) for Int128 values that fit")
    return DataError(f"cannot read the polars frame as Arrow ({str(exc).strip().splitlines()[0]})",
                     hint="cast its unusual columns to common types first")


def column_reader(data: Any) -> tuple[int, list[str], ColumnGetter]:
    """Number of rows, column names and a getter ``name -> values`` (a 1-D array-like) for ``data``.

    The getter raises :class:`MissingColumnError` for an absent column. A table of no rows and no columns (an
    empty list of records, ``{}``, ``pd.DataFrame()``, an empty Arrow table) names no column it lacks: every
    column is read from it as no values, so it scores as no rows, as an empty DataFrame of the model's
    columns does.
    """
    n, names, get = _reader(data)
    if n == 0 and len(names) == 0:
        return 0, [], _no_values
    return n, names, get


def _no_values(name: str) -> np.ndarray:
    return np.empty(0, dtype=object)


def _reader(data: Any) -> tuple[int, list[str], ColumnGetter]:
    if isinstance(data, pd.DataFrame):
        return _pandas_reader(data)
    if isinstance(data, pd.Series):  # one row, as df.iloc[i] gives it: index = column names
        return _mapping_reader(data.to_dict())
    if isinstance(data, Mapping):
        return _mapping_reader(data)
    if _is_structured(data):
        return _pandas_reader(pd.DataFrame(data))
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)) and (
        len(data) == 0 or isinstance(data[0], Mapping)
    ):
        return _records_reader(data)
    table = _arrow_table(data)
    if table is not None:
        return _arrow_reader(table)
    raise _not_a_table(data)


def _is_structured(data: Any) -> bool:
    """A NumPy structured / record array of rows (``df.to_records()``): its field names are the columns.

    Raises
    ------
    DataError
        for one of more than one dimension (no one row per element).
    """
    if not (isinstance(data, np.ndarray) and data.dtype.names is not None):
        return False
    if data.ndim != 1:
        raise DataError(f"cannot read a table from a {data.ndim}-D structured array: one record per row is read",
                        hint="give a 1-D record array (e.g. rec.reshape(-1)) or a DataFrame")
    return True


def _records_reader(data: Sequence[Mapping]) -> tuple[int, list[str], ColumnGetter]:
    """A list of records: one row per record, even one holding no keys. A column the model takes that some
    records lack and others have is refused naming the first record without it: a misspelt key (``islnd``)
    would otherwise score as a missing value; a missing value is ``None`` (JSON ``null``), as TF Serving's
    ``instances`` take named inputs."""
    names: dict[str, None] = {}
    for rec in data:
        if not isinstance(rec, Mapping):
            raise DataError(f"record {rec!r} is not a dict", hint="give a list of dicts, one per row")
        names.update(dict.fromkeys(rec))
    _, _, get_column = _mapping_reader({k: [rec.get(k, _ABSENT) for rec in data] for k in names})

    def get(name: str) -> Any:
        values = get_column(name)  # MissingColumnError when no record has the column
        try:
            row = values.index(_ABSENT)
        except ValueError:
            return values
        keys = ", ".join(map(repr, list(data[row])[:8])) or "none"
        raise DataError(f"column {name!r}: record {row} has no value for it where other records have one "
                        f"(its keys: {keys})",
                        hint="give every record the model's columns, with None (JSON null) for a missing value")

    return len(data), list(names), get


#: the value of a key a record lacks (never a value of a table)
_ABSENT = object()


def _refuse_multiindex(df: pd.DataFrame) -> None:
    """DataError for columns of several levels (``groupby().agg`` of several functions, ``pivot_table``): a
    graph input is named by one label."""
    if isinstance(df.columns, pd.MultiIndex):
        first = df.columns[0] if len(df.columns) else ()
        raise DataError(f"the columns are a MultiIndex of {df.columns.nlevels} levels (e.g. {first!r}); a graph "
                        "input is named by one label", hint="flatten them, e.g. df.columns = ['_'.join(map(str, c)) "
                        "for c in df.columns] (to build, fit the pipeline on that frame)")


def _pandas_reader(df: pd.DataFrame) -> tuple[int, list[str], ColumnGetter]:
    _refuse_multiindex(df)
    columns = df.columns
    get_array = getattr(df, "_get_column_array", None)  # avoids building a Series per column

    def get(name: str) -> Any:
        try:
            loc = columns.get_loc(name)
        except KeyError:
            loc = _str_loc(columns, name)
        if not isinstance(loc, int):
            raise _repeated(name)
        return _without_view(get_array(loc) if get_array is not None else df.iloc[:, loc].array)

    return len(df), columns, get


def _repeated(name: str) -> DataError:
    return DataError(f"column {name!r} appears more than once in the data", hint="drop the duplicates")


_SCALARS = (str, bytes, int, float, bool, type(None), np.generic)


def _is_scalar(v: Any) -> bool:
    return isinstance(v, _SCALARS) or v is pd.NA or v is pd.NaT or np.ndim(v) == 0


def _str_loc(columns: pd.Index, name: str) -> Any:
    """Position of the column whose ``str()`` is ``name`` (columns named by ints, say)."""
    matches = [i for i, c in enumerate(columns) if str(c) == name]
    if not matches:
        raise MissingColumnError(name, [str(c) for c in columns])
    return matches[0] if len(matches) == 1 else slice(None)


def _str_key(data: Mapping, name: str) -> Any:
    """The key of ``data`` whose ``str()`` is ``name`` (a dict or records keyed by ints, as ``pd.DataFrame(X)``
    names its columns 0, 1, ...; the graph inputs are named "0", "1", ...)."""
    matches = [k for k in data if not isinstance(k, str) and str(k) == name]
    if not matches:
        raise MissingColumnError(name, [str(c) for c in data])
    if len(matches) > 1:
        raise _repeated(name)
    return matches[0]


def _mapping_reader(data: Mapping) -> tuple[int, list[str], ColumnGetter]:
    lengths = {k: (1 if _is_scalar(v) else len(v)) for k, v in data.items()}
    n = max(lengths.values(), default=0)
    if any(length != n for length in lengths.values()):
        # name the column that differs from most (one list among scalars is the list's fault, not a scalar's)
        counts = collections.Counter(lengths.values())
        usual = max(counts, key=lambda length: (counts[length], length == 1))
        k = next(k for k, length in lengths.items() if length != usual)
        raise DataError(f"column {k!r} has {lengths[k]} value(s) where the other columns have {usual}",
                        hint="give one value per row in every column (for one row, a scalar in each)")
    _refuse_misaligned(data)

    def get(name: str) -> Any:
        try:
            v = data[name]
        except KeyError:
            v = data[_str_key(data, name)]
        if type(v).__module__.startswith("pyarrow") and hasattr(v, "type"):  # pa.Array / pa.ChunkedArray
            return _without_view(pd.arrays.ArrowExtensionArray(v))
        if _is_scalar(v):
            if isinstance(v, np.ndarray):  # a 0-d array: its one value
                return v.reshape(1)
            t = type(v)
            if t is float or t is bool:
                return np.array([v])
            if t is int:
                return np.array([v], dtype=np.int64) if -2**63 <= v < 2**63 else np.array([v], dtype=object)
            if isinstance(v, np.generic):
                return np.array([v])
            out = np.empty(1, dtype=object)
            out[0] = v
            return out
        return v

    return n, list(data), get


def _refuse_misaligned(data: Mapping) -> None:
    """Refuse a dict of pandas Series whose indexes differ: pandas (``pd.DataFrame(d)``, so scikit-learn) pairs
    their values by index label, onegraph's columns by position; the two would score different rows."""
    first = None
    for k, v in data.items():
        if isinstance(v, pd.Series):
            if first is None:
                first = (k, v.index)
            elif not v.index.equals(first[1]):
                raise DataError(f"columns {first[0]!r} and {k!r} are Series with different indexes: pandas would "
                                "pair their values by index label, a dict of columns pairs them by position",
                                hint="give a DataFrame (pd.DataFrame(d) aligns them by label), or Series of one "
                                     "index")


def _arrow_reader(table: Any) -> tuple[int, list[str], ColumnGetter]:
    names = table.column_names
    repeated = {n for n in names if names.count(n) > 1} if len(set(names)) < len(names) else set()

    def get(name: str) -> Any:
        if name not in names:
            raise MissingColumnError(name, names)
        if name in repeated:
            raise _repeated(name)
        return _without_view(pd.arrays.ArrowExtensionArray(table.column(name)))

    return table.num_rows, names, get


def _not_a_table(data: Any) -> DataError:
    """The error for ``data`` that is no table; an array gets the way to name its columns."""
    if isinstance(data, np.ndarray) or type(data).__module__.startswith(("scipy.sparse", "torch")):
        return DataError(f"cannot read a table from {type(data).__name__}: an array has no column names, and "
                         "onegraph's graph inputs are named columns",
                         hint="wrap it, e.g. pd.DataFrame(X, columns=['a', 'b', ...]): the columns a pipeline was "
                              "fitted on, or any names for one fitted on an array (the graph's inputs take them)")
    if isinstance(data, (str, bytes, os.PathLike)):
        return DataError(f"cannot read a table from a {type(data).__name__} ({str(data)[:80]!r}): scoring takes "
                         "the rows, not a file name",
                         hint="read the file first (onegraph.io.read_table(path), pd.read_csv, pd.read_parquet), or "
                              "score it with `onegraph score MODEL DATA -o OUT`")
    return DataError(f"cannot read a table from {type(data).__name__}",
                     hint="give a pandas or polars DataFrame, a pyarrow Table, a dict of columns or a list of records")

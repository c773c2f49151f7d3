"""Values -> feeds: any column a user gives at scoring time, as the array its graph input takes.

The dtype table and the missing-value representation are in :mod:`onegraph.contract.columns`;
:func:`to_feed` applies them to one column's values (numpy, pandas or Arrow arrays, lists), or raises an
error naming the column, the row and what to give instead. :func:`single_row_feeds` and
:func:`small_frame_feeds` are the single-row scoring paths (no per-call dtype dispatch for the common cases).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from onegraph.contract.columns import (
    MISSING_STRING,
    NA_INT64,
    NUMPY_TYPES,
    ColumnSpec,
    is_string_dtype,
)
from onegraph.errors import ColumnTypeError

__all__ = ["to_feed", "single_row_feeds", "small_frame_feeds", "parse_datetime_text"]


def to_feed(spec: ColumnSpec, values: Any) -> np.ndarray:
    """Convert one column's values into the 1-D array the graph input ``spec.name`` takes.

    ``values`` may be a numpy array, a pandas array or Series of any dtype, or a list. A column whose
    values are all missing is accepted whatever its dtype (pandas reads such a column as float64).

    Raises
    ------
    ColumnTypeError
        when a value cannot be represented: text in a numeric column, a fraction in an integer column,
        a missing value in a ``bool`` column, a non-text value in a string column, an unparseable date.
    """
    fast = _fast_feed(spec, values)
    if fast is not None:
        return fast
    if isinstance(values, (pd.Series, pd.Index)):
        values = values.array
    if isinstance(values, pd.arrays.NumpyExtensionArray):
        values = values.to_numpy()
    elif not hasattr(values, "dtype"):
        values = _from_list(values)
    elif getattr(values, "ndim", 1) != 1:
        values = np.asarray(values)
        if values.ndim != 1:
            raise ColumnTypeError(spec.name, f"expected one value per row, got an array of shape {values.shape}")
    fn = _CONVERTERS[spec.kind]
    try:
        return fn(spec, values)
    except ColumnTypeError:
        raise
    except (TypeError, ValueError, OverflowError, ArithmeticError) as exc:
        if _all_missing(values):
            return _all_missing_feed(spec, len(values))
        raise ColumnTypeError(spec.name, f"cannot convert {_dtype_name(values)} values to {spec.kind}: {exc}",
                              hint=_hint(spec)) from None


_EXACT = {"double": np.dtype(np.float64), "float": np.dtype(np.float32), "int64": np.dtype(np.int64),
          "bool": np.dtype(np.bool_)}


#: classes of pandas arrays seen to hold only strings (pandas' Arrow-backed "str" / "string" arrays)
_STRING_ARRAYS: set[type] = set()


def _fast_feed(spec: ColumnSpec, values: Any) -> np.ndarray | None:
    """The common cases of scoring, without dispatch: a 1-D array already of the input's type, or a
    few values of text (single-row scoring). None when the general path is needed."""
    t = type(values)
    if t is np.ndarray:
        if values.ndim != 1:
            return None
        exact = _EXACT.get(spec.onnx_type)
        if exact is not None:
            return values if values.dtype == exact else None
        if values.dtype == object and len(values) <= 16:
            return _small_texts(values)
        return None
    if spec.onnx_type == "string":
        pa_array = getattr(values, "_pa_array", None)  # pandas' Arrow-backed string arrays
        if pa_array is None or len(pa_array) > 16:
            return None
        if t not in _STRING_ARRAYS:
            if not (isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow"):
                return None
            _STRING_ARRAYS.add(t)
        # one chunk (the usual case) converts in half the time of the chunked array
        return _small_texts(pa_array.chunk(0).to_pylist() if pa_array.num_chunks == 1 else pa_array.to_pylist())
    return None


def _small_texts(values: Any) -> np.ndarray | None:
    out = []
    for v in values:
        if type(v) is str:
            out.append(v)
        elif v is None or v is pd.NA or (type(v) is float and v != v):
            out.append(MISSING_STRING)
        else:
            return None  # the general path reports the bad value
    return np.array(out, dtype=object)


def single_row_feeds(specs: Sequence[ColumnSpec], record: dict) -> dict[str, np.ndarray] | None:
    """Feeds for one row given as a dict of scalars (the latency-critical case), or None when some
    value is not a plain scalar of the expected kind (the general path then converts or reports it)."""
    feeds = {}
    for spec in specs:
        if spec.name not in record:
            return None  # the general path reports every missing column
        v = record[spec.name]
        t = type(v)
        missing = v is None or (t is float and v != v)
        kind = spec.onnx_type
        if kind == "double" or kind == "float":
            if not (missing or t is float or t is int):
                return None
            feeds[spec.name] = np.array([np.nan if missing else v], dtype=NUMPY_TYPES[kind])
        elif kind == "string":
            if not (missing or t is str):
                return None
            arr = np.empty(1, dtype=object)
            arr[0] = MISSING_STRING if missing else v
            feeds[spec.name] = arr
        elif kind == "int64" and spec.kind == "int":
            if not (missing or t is int) or (t is int and not -2**63 < v < 2**63):
                return None
            feeds[spec.name] = np.array([NA_INT64 if missing else v], dtype=np.int64)
        elif kind == "bool":
            if t is not bool:
                return None
            feeds[spec.name] = np.array([v])
        else:
            return None
    return feeds


_NAMES: dict[int, tuple[pd.Index, list]] = {}


def _column_names(columns: pd.Index) -> list:
    """``columns`` as a list, remembered for the last few Index objects: rows taken from one DataFrame
    share its Index, and converting pandas' Arrow-backed Index costs more than scoring a row."""
    entry = _NAMES.get(id(columns))
    if entry is not None and entry[0] is columns:
        return entry[1]
    names = columns.tolist()
    if len(_NAMES) >= 8:
        _NAMES.pop(next(iter(_NAMES)))
    _NAMES[id(columns)] = (columns, names)  # holds the Index, so its id is not reused while cached
    return names


def small_frame_feeds(specs: Sequence[ColumnSpec], frame: pd.DataFrame) -> dict[str, np.ndarray] | None:
    """Feeds for a pandas DataFrame of a few rows (single-row scoring), reading its column arrays straight
    from its blocks; None when some column needs the general path (which also reports errors)."""
    try:
        columns = _column_names(frame.columns)
        arrays: dict[Any, Any] = {}
        for block in frame._mgr.blocks:  # pandas internals: absent or changed -> general path
            values = block.values
            for j, loc in enumerate(block.mgr_locs):
                arrays[columns[loc]] = values[j] if values.ndim == 2 else values
    except Exception:  # any internal-API mismatch
        return None
    if len(arrays) != len(columns):
        return None  # repeated column names
    feeds = {}
    for spec in specs:
        values = arrays.get(spec.name)
        fast = None if values is None else _fast_feed(spec, values)
        if fast is None:
            return None
        feeds[spec.name] = fast
    return feeds


def _from_list(values: Any) -> Any:
    arr = np.asarray(values if isinstance(values, (list, tuple)) else list(values), dtype=object)
    if arr.ndim != 1:
        arr = np.asarray(list(values) + [None], dtype=object)[:-1]
    return arr


def _dtype_name(values: Any) -> str:
    return str(getattr(values, "dtype", type(values).__name__))


def _hint(spec: ColumnSpec) -> str:
    return {
        "float": "give numbers (missing as NaN or None)",
        "int": "give whole numbers (missing as None / pd.NA)",
        "bool": "give True/False",
        "string": "give text (missing as None / NaN / pd.NA); convert numbers with .astype(str)",
        "datetime": "give datetime64 values or ISO-8601 strings (missing as NaT / None)",
        "timedelta": "give timedelta64 values (missing as NaT / None)",
    }[spec.kind]


def _all_missing(values: Any) -> bool:
    try:
        return len(values) > 0 and bool(pd.isna(values).all())
    except (TypeError, ValueError):
        return False


def _all_missing_feed(spec: ColumnSpec, n: int) -> np.ndarray:
    if spec.kind == "string":
        return np.full(n, MISSING_STRING, dtype=object)
    if spec.onnx_type == "int64":
        return np.full(n, NA_INT64, dtype=np.int64)
    if spec.onnx_type == "bool":
        raise ColumnTypeError(spec.name, "missing values in a bool column", hint="fill them, or build the model "
                              "from a nullable 'boolean' column so it accepts missing values")
    return np.full(n, np.nan, dtype=spec.numpy_dtype)


def _float_feed(spec: ColumnSpec, values: Any) -> np.ndarray:
    target = spec.numpy_dtype
    if isinstance(values, np.ndarray):
        if values.dtype.kind in "fiub":
            return values.astype(target, copy=False)
        if values.dtype.kind == "O":
            return _object_to_float(spec, values).astype(target, copy=False)
        raise ColumnTypeError(spec.name, f"{values.dtype} values in a numeric column", hint=_hint(spec))
    if is_string_dtype(values.dtype) or isinstance(values.dtype, pd.CategoricalDtype):
        # numbers written as text (JSON, a CSV column with one stray value) are read if they all parse
        text = np.asarray(values, dtype=object)
        parsed = pd.to_numeric(pd.Series(text, copy=False), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.isnan(parsed) & ~np.asarray(pd.isna(text), dtype=bool)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ColumnTypeError(spec.name, f"text in a numeric column: {text[row]!r} at row {row} is not a number",
                                  hint=_hint(spec))
        return parsed.astype(target, copy=False)
    if pd.api.types.is_datetime64_any_dtype(values.dtype) or pd.api.types.is_timedelta64_dtype(values.dtype):
        raise ColumnTypeError(spec.name, f"{values.dtype} values in a numeric column", hint=_hint(spec))
    return values.to_numpy(dtype=target, na_value=np.nan)


def _object_to_float(spec: ColumnSpec, values: np.ndarray) -> np.ndarray:
    try:
        return pd.to_numeric(pd.Series(values, copy=False), errors="raise").to_numpy(dtype=np.float64, na_value=np.nan)
    except (ValueError, TypeError):
        ok = [v is None or isinstance(v, (int, float, np.number, bool, np.bool_)) or v is pd.NA for v in values]
        row = ok.index(False)
        raise ColumnTypeError(spec.name, f"value {values[row]!r} at row {row} is not a number",
                              hint=_hint(spec)) from None


def _first_bad(values: np.ndarray, ok) -> Any:
    missing = pd.isna(values)
    for v, m in zip(values, missing):
        if not m and not ok(v):
            return v
    return None


def _int_feed(spec: ColumnSpec, values: Any) -> np.ndarray:
    if isinstance(values, np.ndarray):
        if values.dtype.kind in "iub":
            if values.dtype == np.uint64 and values.size and values.max() > np.iinfo(np.int64).max:
                raise ColumnTypeError(spec.name, "value above the int64 range", hint=_hint(spec))
            return values.astype(np.int64, copy=False)
        if values.dtype.kind == "O":
            values = _object_to_float(spec, values)
        if values.dtype.kind == "f":
            return _float_to_int(spec, values)
        raise ColumnTypeError(spec.name, f"{values.dtype} values in an integer column", hint=_hint(spec))
    if pd.api.types.is_integer_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype):
        return values.to_numpy(dtype=np.int64, na_value=NA_INT64)
    if pd.api.types.is_float_dtype(values.dtype):
        return _float_to_int(spec, values.to_numpy(dtype=np.float64, na_value=np.nan))
    return _int_feed(spec, _float_feed(spec, values))


def _float_to_int(spec: ColumnSpec, values: np.ndarray) -> np.ndarray:
    missing = np.isnan(values)
    finite = values[~missing]
    if finite.size and (not np.all(np.isfinite(finite)) or np.any(finite != np.round(finite))):
        bad = finite[(~np.isfinite(finite)) | (finite != np.round(finite))][0]
        raise ColumnTypeError(spec.name, f"value {bad!r} is not a whole number", hint=_hint(spec))
    out = np.where(missing, 0, values).astype(np.int64)
    out[missing] = NA_INT64
    return out


_TRUE = frozenset({"true", "1"})
_FALSE = frozenset({"false", "0"})


def _bool_feed(spec: ColumnSpec, values: Any) -> np.ndarray:
    """Booleans strictly: bool dtypes, numbers 0/1, or the words true/false/1/0 (any case); anything else,
    "no" or "yes" included, is refused rather than guessed."""
    flags = _bool_values(spec, values)
    if spec.onnx_type == "double":
        return flags
    missing = np.isnan(flags)
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise ColumnTypeError(spec.name, f"missing value at row {row} in a bool column", hint=(
            "fill it, or build the model from a nullable 'boolean' column so it accepts missing values"))
    return flags == 1.0


def _bool_values(spec: ColumnSpec, values: Any) -> np.ndarray:
    """The column as 1.0 / 0.0 / NaN."""
    dtype = values.dtype
    if isinstance(values, np.ndarray) and dtype.kind == "b":
        return values.astype(np.float64)
    if is_string_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype) or (
            isinstance(values, np.ndarray) and dtype.kind in "OUS"):
        return _bool_from_objects(spec, np.asarray(values, dtype=object))
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        floats = _float_feed(ColumnSpec(spec.name, "float", "double"), values)
        bad = ~np.isnan(floats) & (floats != 0.0) & (floats != 1.0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ColumnTypeError(spec.name, f"value {floats[row]!r} at row {row} is not a boolean", hint=_hint(spec))
        return floats
    raise ColumnTypeError(spec.name, f"{dtype} values in a boolean column", hint=_hint(spec))


def _bool_from_objects(spec: ColumnSpec, values: np.ndarray) -> np.ndarray:
    out = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values):
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            out[i] = np.nan
        elif isinstance(v, (bool, np.bool_)) or (isinstance(v, (int, np.integer)) and v in (0, 1)):
            out[i] = float(v)
        elif isinstance(v, str) and v.strip().lower() in _TRUE:
            out[i] = 1.0
        elif isinstance(v, str) and v.strip().lower() in _FALSE:
            out[i] = 0.0
        else:
            raise ColumnTypeError(spec.name, f"value {v!r} at row {i} is not a boolean",
                                  hint="give True/False (or the text true/false/1/0)")
    return out


def _string_feed(spec: ColumnSpec, values: Any) -> np.ndarray:
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        cats = np.asarray([str(c) for c in dtype.categories] + [MISSING_STRING], dtype=object)
        return cats[np.asarray(values.codes)]
    if isinstance(values, np.ndarray):
        if dtype.kind == "O":
            missing = pd.isna(values)
            if missing.any():
                values = values.copy()
                values[missing] = MISSING_STRING
            bad = _first_bad(values, lambda v: isinstance(v, str))
            if bad is not None:
                raise ColumnTypeError(spec.name, f"value {bad!r} ({type(bad).__name__}) is not text",
                                      hint=_hint(spec))
            return values
        if dtype.kind in "US":
            return values.astype(object)
        if _all_missing(values):
            return _all_missing_feed(spec, len(values))
        raise ColumnTypeError(spec.name, f"{dtype} values in a text column", hint=_hint(spec))
    if is_string_dtype(dtype):
        pa_array = getattr(values, "_pa_array", None)
        if pa_array is not None and len(values) > 4096:
            return _arrow_texts(pa_array)
        return values.to_numpy(dtype=object, na_value=MISSING_STRING)
    if _all_missing(values):
        return _all_missing_feed(spec, len(values))
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        if pa.types.is_dictionary(dtype.pyarrow_dtype):
            return _string_feed(spec, values.astype(pd.ArrowDtype(dtype.pyarrow_dtype.value_type)))
    raise ColumnTypeError(spec.name, f"{dtype} values in a text column", hint=_hint(spec))


def _arrow_texts(pa_array: Any) -> np.ndarray:
    """Arrow strings -> object array through a dictionary: each distinct string becomes one Python object
    (half the time of a per-row conversion for categorical columns, and onnxruntime encodes each once)."""
    import pyarrow.compute as pc

    filled = pc.fill_null(pa_array, MISSING_STRING)
    if hasattr(filled, "combine_chunks"):
        filled = filled.combine_chunks()
    encoded = filled.dictionary_encode()
    words = np.asarray(encoded.dictionary.to_pylist(), dtype=object)
    return words[encoded.indices.to_numpy(zero_copy_only=False)]


def _datetime_feed(spec: ColumnSpec, values: Any) -> np.ndarray:
    dtype = values.dtype
    if isinstance(values, np.ndarray) and dtype.kind == "M":
        return values.astype("datetime64[ns]").view(np.int64)
    if isinstance(values, np.ndarray) and dtype.kind in "OUS" or is_string_dtype(dtype):
        values = _parse_datetimes(spec, values)
        dtype = values.dtype
    if isinstance(dtype, pd.ArrowDtype):
        tz = getattr(dtype.pyarrow_dtype, "tz", None)
        values = pd.Series(values, copy=False).astype(f"datetime64[ns, {tz}]" if tz else "datetime64[ns]").array
        dtype = values.dtype
    if isinstance(dtype, pd.DatetimeTZDtype):
        return values.as_unit("ns").asi8.copy()
    if pd.api.types.is_datetime64_dtype(dtype):
        if spec.tz:
            values = _localize(spec, values)
            return values.as_unit("ns").asi8.copy()
        return np.asarray(values).astype("datetime64[ns]").view(np.int64)
    if _all_missing(values):
        return _all_missing_feed(spec, len(values))
    raise ColumnTypeError(spec.name, f"{dtype} values in a datetime column", hint=_hint(spec))


def _parse_datetimes(spec: ColumnSpec, values: Any) -> Any:
    return parse_datetime_text(spec.name, values, spec.tz).array


def parse_datetime_text(column: str, values: Any, tz: str | None) -> pd.Series:
    """ISO-8601 text (``pd.to_datetime(format="ISO8601")``) as datetimes for a model's datetime column.

    With ``tz`` (the zone stored for a tz-aware column) every value is read as a UTC instant (text without
    an offset is UTC) and converted to ``tz``, so a column whose offsets differ (a zone across a DST change,
    as ``to_csv`` writes it) reads as one zone. Without, the text is read as pandas reads it, and text whose
    offsets differ as UTC instants (pandas refuses it unless ``utc=True``; the model takes instants anyway).

    Raises
    ------
    ColumnTypeError
        naming ``column`` for text that is not a date.
    """
    series = pd.Series(values, copy=False)
    try:
        if tz is None:
            try:
                return pd.to_datetime(series, format="ISO8601")
            except ValueError as exc:
                if "utc=True" not in str(exc):  # pandas' "Mixed timezones detected. Pass utc=True ..."
                    raise
        parsed = pd.to_datetime(series, format="ISO8601", utc=True)
        return parsed.dt.tz_convert(tz) if tz else parsed
    except (ValueError, TypeError) as exc:
        raise ColumnTypeError(column, f"cannot parse dates: {exc}",
                              hint="give ISO-8601 text, e.g. 2024-03-31 02:30:00+02:00") from None


def _localize(spec: ColumnSpec, values: Any) -> Any:
    try:
        return pd.Series(values).dt.tz_localize(spec.tz).array
    except Exception as exc:  # pytz / zoneinfo raise several types for DST gaps and overlaps
        raise ColumnTypeError(spec.name, f"naive datetimes cannot be placed in time zone {spec.tz}: {exc}",
                              hint="give tz-aware datetimes") from None


def _timedelta_feed(spec: ColumnSpec, values: Any) -> np.ndarray:
    if isinstance(values.dtype, pd.ArrowDtype):
        values = pd.Series(values).astype("timedelta64[ns]").array
    if pd.api.types.is_timedelta64_dtype(values.dtype):
        return np.asarray(values).astype("timedelta64[ns]").view(np.int64)
    if _all_missing(values):
        return _all_missing_feed(spec, len(values))
    raise ColumnTypeError(spec.name, f"{values.dtype} values in a timedelta column", hint=_hint(spec))


_CONVERTERS = {
    "float": _float_feed,
    "int": _int_feed,
    "bool": _bool_feed,
    "string": _string_feed,
    "datetime": _datetime_feed,
    "timedelta": _timedelta_feed,
}

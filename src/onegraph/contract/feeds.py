"""Values -> feeds: any column a user gives at scoring time, as the array its graph input takes.

The dtype table and the missing-value representation are in :mod:`onegraph.contract.columns`;
:func:`to_feed` applies them to one column's values (numpy, pandas or Arrow arrays, lists), or raises an
error naming the column, the row and what to give instead. the single-row scoring paths
(no per-call dtype dispatch) are in :mod:`onegraph.contract.rows`.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

import numpy as np
import pandas as pd

from onegraph.contract.columns import (
    MISSING_STRING,
    NA_INT64,
    ColumnSpec,
    category_text,
    is_string_dtype,
)
from onegraph.contract.dates import (
    ISO8601,
    OTHER_DATES_SHARE,
    date_format,
    format_dates,
    looks_like_date,
)
from onegraph.contract.rows import small_texts
from onegraph.errors import ColumnTypeError

__all__ = ["to_feed", "text_bytes", "parse_datetime_text"]


def to_feed(spec: ColumnSpec, values: Any) -> np.ndarray:
    """Convert one column's values into the 1-D array the graph input ``spec.name`` takes.

    ``values`` may be a numpy array, a pandas array or Series of any dtype, or a list. A column whose
    values are all missing is accepted whatever its dtype (pandas reads such a column as float64).

    Raises
    ------
    ColumnTypeError
        naming the column (and the row, for values), when a value cannot be represented: text in a numeric
        column, a fraction or ±inf in an integer column, an integer outside (-2**63, 2**63) (``-2**63`` is the
        missing integer), a number beyond float32's range for a ``float`` input, a missing value in a ``bool``
        column, a non-text value in a string column, an unparseable date, text dates all written in a format other
        than the one the column's dates are parsed in beyond build's tolerance (``spec.date_format``,
        :func:`refuse_other_dates`: the graph would read each as missing).
    """
    if spec.date_format is not None:
        instants = _instants(values)
        if instants is not None:  # dates for a column the model parses from text: written in its format
            values = format_dates(instants, date_format(spec.date_format))
    feed = _feed(spec, values)
    if spec.date_format is not None:
        refuse_other_dates(spec, feed)
    return feed


def _instants(values: Any) -> pd.Series | None:
    """``values`` as a datetime64 Series when they are dates or datetimes (numpy / pandas datetime64, Arrow
    timestamps and dates, Python ``date`` / ``datetime`` objects with missing values), else None."""
    import datetime as dt

    dtype = getattr(values, "dtype", None)
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        t = dtype.pyarrow_dtype
        if pa.types.is_timestamp(t) or pa.types.is_date(t):
            unit = t.unit if pa.types.is_timestamp(t) else "s"  # any unit: no nanosecond-range overflow
            tz = getattr(t, "tz", None)
            return pd.Series(values).astype(f"datetime64[{unit}, {tz}]" if tz else f"datetime64[{unit}]")
        return None
    if dtype is not None and pd.api.types.is_datetime64_any_dtype(dtype):
        return pd.Series(values)
    if dtype is not None and dtype != object:
        return None
    items = values if dtype is not None else list(values)
    present = [v for v in items[:64] if v is not None and v is not pd.NaT and not (isinstance(v, float) and v != v)]
    if not present or not all(isinstance(v, dt.date) for v in present):
        return None
    try:
        return pd.Series(pd.to_datetime(pd.Series(items, dtype=object), utc=any(
            getattr(v, "tzinfo", None) is not None for v in present)))
    except (TypeError, ValueError, OverflowError):
        return None  # mixed values: the text path names the one that is not text


def _feed(spec: ColumnSpec, values: Any) -> np.ndarray:
    if spec.numbers is not None:
        return _number_texts(spec, values)
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
    if isinstance(getattr(values, "dtype", None), pd.ArrowDtype):
        values = _arrow_plain(spec, values)
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


def refuse_other_dates(spec: ColumnSpec, texts: np.ndarray) -> None:
    """ColumnTypeError when more of ``texts`` (a string feed) than build's tolerance (:data:`OTHER_DATES_SHARE`
    of its present values, at least one) are not in the format of ``spec.date_format`` and one of them is a date
    written another way (``2012-01-31``, ``31.01.2012``, ``31-Jan-2012``, `` 1/31/12``, maybe with a time,
    :func:`~onegraph.contract.dates.looks_like_date`): a client writing its dates another way, which the graph
    would read as missing dates. Within the tolerance, odd values are missing dates, as pandas'
    ``to_datetime(errors="coerce")`` read them when the column was taken for dates at build; text that is no
    date (a word such as ``unknown``, ``2012-13-45``) is a missing date too."""
    rows = np.flatnonzero(texts != MISSING_STRING)
    if not rows.size:
        return
    fmt = date_format(spec.date_format)
    values = texts[rows]
    allowed = int(rows.size * OTHER_DATES_SHARE)
    if rows.size <= _FEW_TEXTS:  # single rows: one regex match each
        odd = np.flatnonzero([fmt.regex.fullmatch(v) is None for v in values])
    else:
        import pyarrow as pa
        import pyarrow.compute as pc

        found = pc.match_substring_regex(pa.array(values, pa.string()), pattern=f"^(?:{fmt.pattern})$")
        odd = np.flatnonzero(~np.asarray(found, dtype=bool))
    if odd.size <= allowed:
        return
    for i in odd[:_LOOKED_AT]:
        if looks_like_date(values[i].strip()):
            written = "ISO 8601 (2024-03-31)" if fmt.format is None else repr(fmt.format)
            raise ColumnTypeError(spec.name, f"value {_short(values[i])} at row {rows[i]} is a date, but the model "
                                  f"reads this column's dates as {written}: {odd.size} of its {rows.size} values "
                                  "are not in that format and would be read as missing dates",
                                  hint="write the dates in that format, the one of the data the model was built "
                                       "from (pandas: .dt.strftime)")


#: feeds of at most this many texts are matched in Python (one call each), longer ones with Arrow's RE2
_FEW_TEXTS = 64
#: odd values a refusal looks at for a date written another way (words only beyond: a missing-date marker)
_LOOKED_AT = 10_000


_EXACT = {"double": np.dtype(np.float64), "float": np.dtype(np.float32), "int64": np.dtype(np.int64),
          "bool": np.dtype(np.bool_)}


def _fast_feed(spec: ColumnSpec, values: Any) -> np.ndarray | None:
    """The common cases of scoring, without dispatch: a 1-D array already of the input's type, or a
    few values of text (single-row scoring). None when the general path is needed."""
    if spec.onnx_type == "string":
        return small_texts(values)
    if type(values) is np.ndarray and values.ndim == 1:
        exact = _EXACT.get(spec.onnx_type)
        if exact is None or values.dtype != exact or (spec.kind == "int" and _holds_int64_min(values)):
            return None  # the general path converts, or refuses the reserved INT64_MIN
        return values
    return None


def _arrow_plain(spec: ColumnSpec, values: Any) -> Any:
    """An Arrow-backed column whose type numpy has no equivalent for, as the converters take it: ``null``
    (a column of nothing but missing values, polars' ``Null``) as missing; ``decimal`` as Python ``Decimal``
    objects, converted exactly (a fraction is refused by an integer input, as a float's); dates, times and
    durations refused by a numeric input (their numbers depend on the storage unit), as numpy's are; nested
    values (lists, structs, maps) refused by every input."""
    import pyarrow as pa

    t = values.dtype.pyarrow_dtype
    if pa.types.is_null(t):
        return np.full(len(values), None, dtype=object)
    if pa.types.is_decimal(t):
        return values.to_numpy(dtype=object, na_value=None)
    if pa.types.is_nested(t):  # lists, structs, maps: numpy's "setting an array element with a sequence"
        raise ColumnTypeError(spec.name, f"holds {values.dtype} values (lists, structs or maps); the model takes "
                              f"one {spec.kind} value per row", hint="give one value per row (e.g. a list's first "
                              "element: polars .list.first(), pandas .str[0]), or one column per element")
    if spec.kind in ("float", "int", "bool") and pa.types.is_temporal(t):  # dates, times, durations
        example = ", e.g. a duration in seconds as column.dt.total_seconds()" if pa.types.is_duration(t) else ""
        raise ColumnTypeError(spec.name, f"{values.dtype} values in a numeric column (their numbers depend on "
                              "the unit they are stored in)", hint=_hint(spec) + example)
    return values


def _holds_int64_min(values: np.ndarray) -> bool:
    if values.size <= 16:  # single-row scoring: a list is faster than a reduction on a few values
        return NA_INT64 in values.tolist()
    return bool(values.min() == NA_INT64)


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
        "string": "give text (missing as None / NaN / pd.NA): convert other values to text (pandas: .astype(str); "
                  "a file: write the column as text), written as in the data the model was built from",
        "datetime": "give datetime64 values or ISO-8601 strings (missing as NaT / None)",
        "timedelta": "give timedelta64 values (missing as NaT / None)",
    }[spec.kind]


def _all_missing(values: Any) -> bool:
    """Whether no value of ``values`` is present: all missing, or none at all (a column of no rows, whatever
    its dtype: an empty table's, or no records)."""
    try:
        return len(values) == 0 or bool(pd.isna(values).all())
    except (TypeError, ValueError):
        return False


def _all_missing_feed(spec: ColumnSpec, n: int) -> np.ndarray:
    if n == 0:
        return np.empty(0, dtype=spec.numpy_dtype)
    if spec.kind == "string":
        return np.full(n, MISSING_STRING, dtype=object)
    if spec.onnx_type == "int64":
        return np.full(n, NA_INT64, dtype=np.int64)
    if spec.onnx_type == "bool":
        raise ColumnTypeError(spec.name, "missing values in a bool column", hint="fill them, or build the model "
                              "from a nullable 'boolean' column so it accepts missing values")
    return np.full(n, np.nan, dtype=spec.numpy_dtype)


def _float_feed(spec: ColumnSpec, values: Any) -> np.ndarray:
    """Numbers as double (or float for a ``float`` input): any numeric dtype, numbers as text, object
    columns of numbers; missing as NaN. ``±inf`` is a number and passes (see :class:`~onegraph.runtime.Session`
    for the rows a model cannot score).

    Raises ColumnTypeError naming the row for text that is not a number, a Python int beyond the double
    range, or a value beyond float32's range for a ``float`` input (it would become inf)."""
    return _narrowed(spec, _doubles(spec, values))


#: the largest finite float32
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _narrowed(spec: ColumnSpec, values: np.ndarray) -> np.ndarray:
    """``values`` (any real dtype) as the input's float type; a finite value that float32 cannot hold is refused."""
    target = spec.numpy_dtype
    if target is np.float64 or values.dtype == target:
        return values.astype(target, copy=False)
    with np.errstate(over="ignore"):
        out = values.astype(target)
    if values.dtype.kind == "f":
        over = np.isinf(out) & np.isfinite(values)
        if over.any():
            row = int(np.flatnonzero(over)[0])
            raise ColumnTypeError(spec.name, f"value {_short(values[row])} at row {row} is beyond the float32 range "
                                  f"(±{_FLOAT32_MAX:.4g}) of this column", hint="give smaller values, or rebuild "
                                  "the model from a float64 column")
    return out


def _doubles(spec: ColumnSpec, values: Any) -> np.ndarray:
    """The column as a real numpy array (float64, or the values' own real dtype), missing as NaN."""
    if isinstance(values, np.ndarray):
        if values.dtype.kind in "fiub":
            return values
        if values.dtype.kind == "O":
            return _object_to_float(spec, values)
        raise ColumnTypeError(spec.name, f"{values.dtype} values in a numeric column", hint=_hint(spec))
    if is_string_dtype(values.dtype) or isinstance(values.dtype, pd.CategoricalDtype):
        # numbers written as text (JSON, a CSV column with one stray value) are read if they all parse
        text = np.asarray(values, dtype=object)
        parsed = _parsed_texts(text)
        _refuse_unparsed(spec, text, np.isnan(parsed) & ~np.asarray(pd.isna(text), dtype=bool))
        return parsed
    if pd.api.types.is_datetime64_any_dtype(values.dtype) or pd.api.types.is_timedelta64_dtype(values.dtype):
        raise ColumnTypeError(spec.name, f"{values.dtype} values in a numeric column", hint=_hint(spec))
    return values.to_numpy(dtype=np.float64, na_value=np.nan)


#: dates, times and durations (``pd.Timestamp`` / ``pd.Timedelta`` are ``datetime`` / ``timedelta``)
_TEMPORAL = (datetime.date, datetime.time, datetime.timedelta, np.datetime64, np.timedelta64)


def _refuse_temporal(spec: ColumnSpec, values: np.ndarray) -> None:
    """ColumnTypeError naming the row of the first date, time or duration among object values of a number
    column: pandas' ``to_numeric`` reads them as nanoseconds (a ``datetime64[D]`` as days), a number the
    model never saw, where scikit-learn and a DataFrame column of them are refused."""
    if not any(issubclass(t, _TEMPORAL) for t in set(map(type, values))):
        return
    for row, v in enumerate(values):
        if isinstance(v, _TEMPORAL) and not _is_missing_scalar(v):
            raise ColumnTypeError(spec.name, f"value {_short(v)} at row {row} is a date, time or duration, not a "
                                  "number", hint=_hint(spec))


def _object_to_float(spec: ColumnSpec, values: np.ndarray) -> np.ndarray:
    """Object values (numbers of any Python / numpy type, number text, bools; missing as None / NaN / pd.NA)
    as float64. Text is read by :func:`_parsed_texts`'s rules whatever holds it (an object column, a list,
    records), as in a string column. Dates, times and durations are refused (:func:`_refuse_temporal`)."""
    _refuse_temporal(spec, values)
    missing = np.asarray(pd.isna(values), dtype=bool)
    if missing.any():  # pandas' parser takes None and NaN, not NaT (nor pd.NA in every version)
        values = values.copy()
        values[missing] = np.nan
    try:
        parsed = pd.to_numeric(pd.Series(values, copy=False), errors="raise")
        if parsed.dtype.kind == "c":  # a complex value: its imaginary part would be dropped
            raise TypeError("complex values")
        out = parsed.to_numpy(dtype=np.float64, na_value=np.nan)
    except (ValueError, TypeError, OverflowError) as exc:
        error = exc
    else:
        # pandas reads the text '' as NaN where errors="raise" (not where "coerce"): refused, as in a string column
        _refuse_unparsed(spec, values, np.isnan(out) & ~missing)
        return out
    text = _text_rows(values)
    _refuse_unparsed(spec, values, _unparsed_mask(values, text))
    for row, v in enumerate(values):
        if _is_missing_scalar(v) or isinstance(v, str):
            continue
        try:
            float(v)
        except OverflowError:
            raise ColumnTypeError(spec.name, f"value {_short(v)} at row {row} is beyond the double range",
                                  hint=_hint(spec)) from None
        except (TypeError, ValueError):
            raise ColumnTypeError(spec.name, f"value {_short(v)} at row {row} is not a number",
                                  hint=_hint(spec)) from None
    raise error  # to_feed names the column


def _parsed_texts(text: np.ndarray) -> np.ndarray:
    """Number text (an object array of ``str``, missing values allowed) as float64, by pandas' parser
    (``pd.to_numeric``): ASCII digits, an optional sign, decimal point and exponent, ``inf`` / ``infinity``,
    surrounding ASCII whitespace. NaN where the text is missing or not a number, which includes text Python's
    ``float()`` / ``int()`` would take: ``''``, ``'nan'``, ``'1_000'``, digits of other scripts (fullwidth
    ``'１２'``, Arabic-Indic), a non-breaking or other Unicode space. Every numeric input (float or integer,
    from any container) reads text by these rules."""
    return pd.to_numeric(pd.Series(text, dtype=object, copy=False), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan)


def _text_rows(values: np.ndarray) -> np.ndarray:
    """Rows of an object array holding ``str``."""
    return np.flatnonzero(np.fromiter((isinstance(v, str) for v in values), dtype=bool, count=len(values)))


def _unparsed_mask(values: np.ndarray, text_rows: np.ndarray) -> np.ndarray:
    """Rows of ``values`` (object) whose text (at ``text_rows``) is not a number by :func:`_parsed_texts`."""
    bad = np.zeros(len(values), dtype=bool)
    if text_rows.size:
        bad[text_rows] = np.isnan(_parsed_texts(values[text_rows]))
    return bad


def _refuse_unparsed(spec: ColumnSpec, values: Any, bad: np.ndarray) -> None:
    """ColumnTypeError naming the first row of ``bad`` (text that is not a number), with what to give."""
    if not bad.any():
        return
    row = int(np.flatnonzero(bad)[0])
    v = values[row]
    why = _why_not_a_number(v)
    raise ColumnTypeError(spec.name, f"text in a numeric column: {_short(v)} at row {row} is not a number{why}",
                          hint=_hint(spec))


def _why_not_a_number(text: Any) -> str:
    """Why number-like ``text`` is refused, when it looks like a number to Python (its ``float()``)."""
    if not isinstance(text, str):
        return ""
    if text == "" or text.isspace():
        return " (an empty text is not a missing value: give None / NaN)"
    if not text.isascii():
        return " (numbers are ASCII digits: no other scripts' digits, no non-ASCII spaces)"
    if "_" in text:
        return " (no digit separators such as '_')"
    return ""


def _is_missing_scalar(v: Any) -> bool:
    return v is None or v is pd.NA or v is pd.NaT or (isinstance(v, (float, np.floating)) and v != v)


def _short(value: Any) -> str:
    """``value`` as the user wrote it (numpy scalars as Python's), at most 60 characters."""
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= 60 else text[:57] + "..."


def _given(values: Any, row: int, converted: Any) -> Any:
    """The value at ``row`` as the column holds it (``2``, not the ``2.0`` it was converted to), else
    ``converted``."""
    try:
        return values[row]
    except Exception:  # a container without positional indexing
        return converted


def _first_bad(values: np.ndarray, ok) -> tuple[int, Any] | None:
    """The row and value of the first present value ``ok`` refuses, or None."""
    missing = pd.isna(values)
    for row, (v, m) in enumerate(zip(values, missing)):
        if not m and not ok(v):
            return row, v
    return None


def _int_feed(spec: ColumnSpec, values: Any) -> np.ndarray:
    """Whole numbers as int64, missing as INT64_MIN: numpy integers / bools / whole floats, nullable
    ``Int*`` / ``UInt*`` / Arrow integers, object columns of Python or numpy ints (converted exactly, however
    large), numbers as text.

    Raises ColumnTypeError naming the row for a value that is not a whole number (a fraction, ±inf, text),
    one outside int64 (``2**63``, ``1e19``, ``1e30``, a uint64 above ``2**63 - 1``), and ``-2**63`` itself,
    which onegraph reserves for the missing integer."""
    if isinstance(values, np.ndarray):
        kind = values.dtype.kind
        if kind in "iub":
            return _checked_ints(spec, values)
        if kind == "f":
            return _float_to_int(spec, values)
        if kind in "OUS":
            return _object_to_int(spec, values.astype(object, copy=False))
        raise ColumnTypeError(spec.name, f"{values.dtype} values in an integer column", hint=_hint(spec))
    dtype = values.dtype
    if pd.api.types.is_bool_dtype(dtype):  # Arrow's bool array takes only a bool na_value
        missing = np.asarray(pd.isna(values), dtype=bool)
        return _checked_ints(spec, values.to_numpy(dtype=bool, na_value=False).astype(np.int64), missing)
    if pd.api.types.is_integer_dtype(dtype):
        missing = np.asarray(pd.isna(values), dtype=bool)
        raw = values.to_numpy(dtype=np.uint64 if pd.api.types.is_unsigned_integer_dtype(dtype) else np.int64,
                              na_value=0)
        return _checked_ints(spec, raw, missing)
    if pd.api.types.is_float_dtype(dtype):
        return _float_to_int(spec, values.to_numpy(dtype=np.float64, na_value=np.nan))
    if is_string_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype):
        return _object_to_int(spec, np.asarray(values, dtype=object))
    return _int_feed(spec, _float_feed(spec, values))


_INT64_MAX = 2**63 - 1


def _as_number(value: Any) -> Any:
    try:
        return int(value) if isinstance(value, str) else value
    except ValueError:
        return value


def _int_out_of_range(spec: ColumnSpec, value: Any, row: int) -> ColumnTypeError:
    """The error for a whole number ``value`` (as given: int, float or text) an int64 input cannot take
    (INT64_MIN is the missing marker)."""
    if _as_number(value) == NA_INT64:
        return ColumnTypeError(spec.name, f"value {NA_INT64} at row {row} is int64's minimum, which onegraph "
                               "reserves for a missing integer", hint="give missing values as None / pd.NA (a "
                               f"nullable Int64 column) and numbers from -{_INT64_MAX} to {_INT64_MAX}")
    return ColumnTypeError(spec.name, f"value {_short(value)} at row {row} is outside the int64 range of this "
                           "integer column", hint=f"give whole numbers from -{_INT64_MAX} to {_INT64_MAX} (missing "
                           "as None / pd.NA); larger numbers need a model built from a float column")


def _checked_ints(spec: ColumnSpec, raw: np.ndarray, missing: np.ndarray | None = None) -> np.ndarray:
    """Integer / bool array -> int64, every present value in (-2**63, 2**63); ``missing`` rows become INT64_MIN."""
    if raw.dtype.kind == "u" and raw.dtype.itemsize == 8 and raw.size:
        bad = raw > _INT64_MAX
    elif raw.dtype == np.int64 and raw.size:
        bad = raw == NA_INT64
    else:
        bad = None
    if bad is not None and missing is not None:
        bad &= ~missing
    if bad is not None and bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise _int_out_of_range(spec, int(raw[row]), row)
    out = raw.astype(np.int64, copy=False)
    if missing is not None and missing.any():
        out = out if out is not raw else out.copy()
        out[missing] = NA_INT64
    return out


def _float_to_int(spec: ColumnSpec, values: np.ndarray) -> np.ndarray:
    """float64 array (NaN missing) -> int64: whole values strictly inside (-2**63, 2**63)."""
    missing = np.isnan(values)
    with np.errstate(invalid="ignore"):
        whole = np.isfinite(values) & (values == np.round(values))
        inside = (values > -2.0**63) & (values < 2.0**63)
    bad = ~missing & ~(whole & inside)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        v = values[row]
        if not whole[row]:
            raise ColumnTypeError(spec.name, f"value {_short(v)} at row {row} is not a whole number", hint=_hint(spec))
        raise _int_out_of_range(spec, v, row)
    out = np.where(missing, 0, values).astype(np.int64)
    out[missing] = NA_INT64
    return out


def _object_to_int(spec: ColumnSpec, values: np.ndarray) -> np.ndarray:
    """Object values (Python / numpy ints of any size, whole floats, numbers as text, bools; missing as None /
    NaN / pd.NA) -> int64, exactly: pandas' vectorized parse where it is exact, else value by value. Text is
    read by the float inputs' rules (:func:`_parsed_texts`), whole numbers of ASCII digits exactly however long:
    ``'1_000'``, ``'１２'``, ``'12\xa0'`` (which Python's ``int()`` takes) and ``''`` are refused naming the row,
    as are dates, times and durations (:func:`_refuse_temporal`)."""
    _refuse_temporal(spec, values)
    missing = np.asarray(pd.isna(values), dtype=bool)
    rows = np.flatnonzero(~missing)
    out = np.full(len(values), NA_INT64, dtype=np.int64)
    present = values[rows]
    try:
        parsed = pd.to_numeric(pd.Series(present, copy=False), errors="raise").to_numpy()
    except (ValueError, TypeError, OverflowError):
        parsed = None
    # every int is exact in int64 / uint64; in float64 below 2**53: then whole and in range is all to check
    exact = parsed is not None and (parsed.dtype.kind in "iub" or (
        parsed.dtype == np.float64 and not np.any(np.abs(parsed) >= 2.0**53)))
    if exact and parsed.dtype.kind == "f" and np.isnan(parsed).any():
        exact = False  # the text '' (pandas reads it as NaN): refused below, naming its row
    if exact:
        try:
            out[rows] = _checked_ints(spec, parsed) if parsed.dtype.kind in "iub" else _float_to_int(spec, parsed)
            return out
        except ColumnTypeError:
            pass  # found again below, with its row in the column
    text = _text_rows(present)
    numbers = dict(zip(text.tolist(), _parsed_texts(present[text]).tolist())) if text.size else {}
    for i, (k, v) in enumerate(zip(rows.tolist(), present)):
        n = _exact_int(spec, v, k, numbers.get(i))
        if not -2**63 < n < 2**63:
            raise _int_out_of_range(spec, v, k)
        out[k] = n
    return out


#: integer text as pandas' parser reads it: ASCII digits, an optional sign, ASCII whitespace around
_INT_TEXT = re.compile(r"[ \t\n\r\v\f]*([+-]?[0-9]+)[ \t\n\r\v\f]*")


def _exact_int(spec: ColumnSpec, v: Any, row: int, parsed: float | None = None) -> int:
    """One present value as a Python int, exactly, or ColumnTypeError naming ``row``. For text, ``parsed`` is
    :func:`_parsed_texts`'s reading of it (NaN: not a number); whole numbers of ASCII digits are read exactly."""
    if isinstance(v, (bool, np.bool_, int, np.integer)):
        return int(v)
    number = v
    if isinstance(v, str):
        plain = _INT_TEXT.fullmatch(v)
        if plain is not None:
            return int(plain.group(1))
        number = _parsed_texts(np.array([v], dtype=object))[0] if parsed is None else parsed
        if np.isnan(number):
            raise ColumnTypeError(spec.name, f"value {_short(v)} at row {row} is not a number{_why_not_a_number(v)}",
                                  hint=_hint(spec))
    try:
        whole = number == int(number)
    except (TypeError, ValueError, OverflowError):  # not a number; inf; NaN was missing
        whole = False
    if not whole:
        raise ColumnTypeError(spec.name, f"value {_short(v)} at row {row} is not a whole number", hint=_hint(spec))
    return int(number)


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
            raise ColumnTypeError(spec.name, f"value {_short(_given(values, row, floats[row]))} at row {row} is not a "
                                  "boolean", hint=_hint(spec))
        return floats
    raise ColumnTypeError(spec.name, f"{dtype} values in a boolean column", hint=_hint(spec))


def _bool_from_objects(spec: ColumnSpec, values: np.ndarray) -> np.ndarray:
    out = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values):
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            out[i] = np.nan
        elif isinstance(v, (bool, np.bool_)) or (isinstance(v, (int, float, np.integer, np.floating)) and v in (0, 1)):
            # numbers 0 / 1 as a numeric column's are: 1.0 in a list of records is True, as in a float column
            out[i] = float(v)
        elif isinstance(v, str) and v.strip().lower() in _TRUE:
            out[i] = 1.0
        elif isinstance(v, str) and v.strip().lower() in _FALSE:
            out[i] = 0.0
        else:
            raise ColumnTypeError(spec.name, f"value {_short(v)} at row {i} is not a boolean",
                                  hint="give True/False (or the text true/false/1/0)")
    return out


def _string_feed(spec: ColumnSpec, values: Any) -> np.ndarray:
    """Text values as an object array, missing values as ``MISSING_STRING``; a value that is or holds that
    marker is refused (naming the row), so no text is ever scored as missing."""
    out = _texts(spec, values)
    _refuse_marker(spec, values, out)
    return out


def _number_texts(spec: ColumnSpec, values: Any) -> np.ndarray:
    """A column of numeric categories (``spec.numbers``) as the text ``str()`` gave its categories at build:
    ``"4"`` for int categories, ``"4.0"`` for float ones, from int or float categories, numbers or their text
    (a CSV's ``8``), so 4 and 4.0 are one category as scikit-learn's encoders compare them. A value that is no
    number is kept as its text (an unknown category); missing values are ``MISSING_STRING``."""
    if isinstance(values, (pd.Series, pd.Index)):
        values = values.array
    if not hasattr(values, "dtype"):
        values = _from_list(values)
    if isinstance(values.dtype, pd.CategoricalDtype):
        distinct, codes = pd.Index(values.dtype.categories), np.asarray(values.codes)
    else:
        codes, distinct = pd.factorize(np.asarray(values, dtype=object) if getattr(values, "ndim", 1) == 1
                                       else values, use_na_sentinel=True)
        distinct = pd.Index(distinct)
    texts = [_number_text(v, spec.numbers) for v in distinct]
    is_text = np.fromiter((isinstance(v, str) for v in distinct), dtype=bool, count=len(distinct))
    if is_text.any():  # number text by the numeric inputs' rule (pandas' parser), not Python's float()
        words = np.asarray(distinct, dtype=object)[is_text]
        for i, word, number in zip(np.flatnonzero(is_text), words, _parsed_texts(words)):
            texts[i] = word if np.isnan(number) else _number_text(float(number), spec.numbers)
    if any(MISSING_STRING in t for t in texts):  # a category no row holds may hold it: rows are what count
        _refuse_marked(spec, np.asarray([MISSING_STRING in texts[c] if c >= 0 else False for c in codes]))
    return np.asarray([*texts, MISSING_STRING], dtype=object)[codes]  # code -1 (missing): the last entry


def _number_text(number: Any, numbers: str) -> str:
    """``str()`` of a number as the ``numbers`` type (``int``: a whole number without ``.0``); anything else
    (text, a bool) its own text."""
    if isinstance(number, (bool, np.bool_)) or not isinstance(number, (int, float, np.integer, np.floating)):
        return str(number)
    if numbers == "int" and float(number).is_integer() and abs(float(number)) < 2**63:
        return str(int(number))
    return str(float(number))


def _refuse_marker(spec: ColumnSpec, values: Any, out: np.ndarray) -> None:
    """:class:`ColumnTypeError` when a text of ``values`` (before missing values were filled in) holds
    ``MISSING_STRING``: the marker itself, or within a text, which a step splitting or slicing text (StringSplit,
    a substring) would turn into the marker."""
    pa_array = getattr(values, "_pa_array", None)
    if pa_array is not None and len(pa_array) > _DICTIONARY_ROWS:
        return  # _arrow_texts searched its dictionary, each distinct text once
    if pa_array is not None:  # Arrow: one vectorized search, nulls excluded
        import pyarrow.compute as pc

        decoded = _decoded(pa_array)
        if decoded.null_count == len(decoded):  # all missing: no text, and maybe no text type (an all-null int64
            return  # column of convert_dtypes(dtype_backend="pyarrow"), which match_substring has no kernel for
        hits = pc.match_substring(decoded, MISSING_STRING)
        if not pc.any(hits).as_py():
            return
        holding = np.asarray(pc.fill_null(hits, False))
    elif isinstance(values.dtype, pd.CategoricalDtype):
        if not any(MISSING_STRING in str(c) for c in values.dtype.categories):
            return
        holding = np.asarray([isinstance(v, str) and MISSING_STRING in v for v in values.astype(object)])
    else:
        marked = out == MISSING_STRING
        any_marked = bool(marked.any())
        literal = marked & ~np.asarray(pd.isna(values)) if any_marked else marked
        texts = out[~marked] if any_marked else out
        # one search of the texts joined (C speed) rather than a test per value; rows only when one is found
        if not literal.any() and MISSING_STRING not in "\x00".join(texts):
            return
        holding = literal | np.asarray([not m and MISSING_STRING in v for v, m in zip(out, marked)])
    _refuse_marked(spec, holding)


def _is_dictionary(pa_array: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_dictionary(pa_array.type)


def _decoded(pa_array: Any) -> Any:
    """``pa_array`` as plain strings: Arrow's string kernels (``match_substring``) take no dictionary arrays."""
    return pa_array.cast(pa_array.type.value_type) if _is_dictionary(pa_array) else pa_array


def _refuse_marked(spec: ColumnSpec, holding: np.ndarray) -> None:
    """:class:`ColumnTypeError` naming the first row of ``holding`` (a boolean mask of the rows whose text holds
    the missing-text marker), if any: a category or dictionary entry holding it that no row uses is no fault."""
    rows = np.flatnonzero(holding)
    if len(rows):
        raise ColumnTypeError(spec.name, f"value at row {int(rows[0])} holds U+FFFF, the character onegraph "
                              "reserves to mark missing text", hint="replace it, or make the cell empty (missing)")


def _texts(spec: ColumnSpec, values: Any) -> np.ndarray:
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        cats = np.asarray([category_text(c) for c in dtype.categories] + [MISSING_STRING], dtype=object)
        return cats[np.asarray(values.codes)]
    if isinstance(values, np.ndarray):
        if dtype.kind == "O":
            missing = pd.isna(values)
            if missing.any():
                values = values.copy()
                values[missing] = MISSING_STRING
            found = _first_bad(values, lambda v: isinstance(v, str))
            if found is not None:
                row, bad = found
                raise ColumnTypeError(spec.name, f"value {_short(bad)} ({type(bad).__name__}) at row {row} is not text",
                                      hint=_hint(spec))
            return values
        if dtype.kind in "US":
            return values.astype(object)
        if _all_missing(values):
            return _all_missing_feed(spec, len(values))
        raise ColumnTypeError(spec.name, f"{dtype} values in a text column", hint=_text_hint(spec, dtype))
    if is_string_dtype(dtype):
        pa_array = getattr(values, "_pa_array", None)
        if pa_array is not None and len(values) > _DICTIONARY_ROWS:
            return _arrow_texts(spec, pa_array)
        return values.to_numpy(dtype=object, na_value=MISSING_STRING)
    if _all_missing(values):
        return _all_missing_feed(spec, len(values))
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        if pa.types.is_dictionary(dtype.pyarrow_dtype):
            return _texts(spec, values.astype(pd.ArrowDtype(dtype.pyarrow_dtype.value_type)))
    raise ColumnTypeError(spec.name, f"{dtype} values in a text column", hint=_text_hint(spec, dtype))


def _text_hint(spec: ColumnSpec, dtype: Any) -> str:
    """The hint for values of ``dtype`` given to a text input: for datetimes, the text they were in the data the
    model was built from (a CSV's dates, which its graph parses, or text categories that look like dates);
    the input schema does not say which, so the hint does not claim it."""
    import pyarrow as pa

    arrow = dtype.pyarrow_dtype if isinstance(dtype, pd.ArrowDtype) else None
    if pd.api.types.is_datetime64_any_dtype(dtype) or (arrow is not None and pa.types.is_timestamp(arrow)):
        if spec.source_dtype == "category":  # the graph holds str() of each category, not a date format
            return ("the model takes this column as text: it was built from a category column and holds str() of "
                    "each category (of a Timestamp: '2007-06-01 00:00:00'): give the column as it was at build, "
                    "e.g. .astype('category') for one of Timestamps")
        written = spec.date_format if spec.date_format not in (None, ISO8601) else "%Y-%m-%d"
        return ("the model takes this column as text (it was built from text, e.g. a CSV's): give the values as "
                f"that text (pandas: .dt.strftime({written!r}), the format of the data it was built from)")
    return _hint(spec)


#: rows from which Arrow text goes through a dictionary (:func:`_arrow_texts`)
_DICTIONARY_ROWS = 4096


def _arrow_texts(spec: ColumnSpec, pa_array: Any) -> np.ndarray:
    """Arrow strings -> object array through a dictionary: each distinct string becomes one Python object
    (half the time of a per-row conversion for categorical columns, and onnxruntime encodes each once). A
    text holding ``MISSING_STRING`` is refused naming its row (the dictionary is searched, not every row)."""
    listed, codes = _arrow_words(spec, pa_array)
    return np.asarray([*listed, MISSING_STRING], dtype=object)[codes]


def _arrow_words(spec: ColumnSpec, pa_array: Any) -> tuple[list[str], np.ndarray]:
    """The distinct texts of Arrow strings and each row's code into them (``len(words)`` for a missing
    value); :class:`ColumnTypeError` naming the row of a text holding ``MISSING_STRING``."""
    import pyarrow.compute as pc

    if hasattr(pa_array, "combine_chunks"):
        pa_array = pa_array.combine_chunks()
    # nulls stay nulls, apart from the texts; a dictionary column (polars Categorical, an Arrow table from a
    # pandas category) is encoded already
    encoded = pa_array if _is_dictionary(pa_array) else pa_array.dictionary_encode()
    listed = encoded.dictionary.to_pylist()
    if any(MISSING_STRING in w for w in listed):
        _refuse_marked(spec, np.asarray(pc.fill_null(pc.match_substring(_decoded(pa_array), MISSING_STRING), False)))
    return listed, encoded.indices.fill_null(len(listed)).to_numpy(zero_copy_only=False)


def text_bytes(spec: ColumnSpec, values: Any) -> np.ndarray | None:
    """A text column of more than 4,096 Arrow-backed values (pandas' ``str`` / ``string[pyarrow]``,
    ``ArrowDtype``, a polars or Arrow table's column) as the string input's feed in onnxruntime's fastest
    form: fixed-width UTF-8 bytes (numpy ``S``), missing values as ``MISSING_STRING``. None for any other
    column, texts holding a NUL character, or texts longer than :data:`TEXT_BYTES_WIDTH` bytes less one:
    :func:`to_feed` then gives the object array.

    onnxruntime's Python binding copies a ``S`` array's items as C strings without creating a Python object
    per row (about a third of the time of an object array; ``bench/latency.py``'s batch), and reads an item
    up to its first NUL byte, past the item's end when it fills the width (onnxruntime 1.32): the width
    is the longest text's length plus one, so every item ends in a NUL. Only for feeds that go to
    onnxruntime: the ONNX reference evaluator and the Python transformers compare texts as ``str``.

    Raises :class:`ColumnTypeError` for a text holding ``MISSING_STRING`` (as :func:`to_feed`).
    """
    if spec.kind != "string" or spec.numbers is not None or spec.date_format is not None:
        return None
    pa_array = getattr(values, "_pa_array", None)
    if pa_array is None or len(pa_array) <= _DICTIONARY_ROWS or not is_string_dtype(values.dtype):
        return None
    listed, codes = _arrow_words(spec, pa_array)
    words = [w.encode("utf-8") for w in listed]  # Arrow holds valid UTF-8 only
    words.append(MISSING_STRING.encode("utf-8"))
    width = max(map(len, words)) + 1
    if width > TEXT_BYTES_WIDTH or any(b"\x00" in w for w in words):
        return None
    return np.asarray(words, dtype=f"S{width}")[codes]


#: the widest fixed-width text feed, in bytes (with its NUL): a row costs no more than onnxruntime's own copy
#: of a text that long (a 32-byte ``std::string`` and its buffer); a column holding one long text (a pasted
#: paragraph) among many rows would otherwise take that text's width on every row
TEXT_BYTES_WIDTH = 64


#: nanoseconds per unit of the datetime64 units coarser than the graph's
_NS_PER = {"D": 86_400 * 10**9, "h": 3_600 * 10**9, "m": 60 * 10**9, "s": 10**9, "ms": 10**6, "us": 10**3}


def _refuse_beyond_ns(spec: ColumnSpec, ticks: np.ndarray, unit: str) -> None:
    """Refuse a datetime that int64 nanoseconds (the graph's datetimes) cannot hold: ``ticks`` (int64, NaT =
    INT64_MIN) counted in ``unit`` since 1970. numpy's cast to ``datetime64[ns]`` wraps such a value silently
    (9999-12-31, a common "no end" date, became 1816-03-29) and pandas' names no row."""
    per = _NS_PER.get(unit)
    if per is None or not len(ticks):
        return
    limit = (2**63 - 1) // per
    bad = (ticks != np.iinfo(np.int64).min) & ((ticks > limit) | (ticks < -limit))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        value = np.datetime64(int(ticks[row]), unit)
        raise ColumnTypeError(spec.name, f"value {value} at row {row} is outside the dates the model takes "
                              "(1677-09-22 to 2262-04-11: nanoseconds since 1970 in int64)",
                              hint="replace such dates (often a 'no end' sentinel such as 9999-12-31) with NaT "
                                   "(missing) or a date inside that range")


def _datetime_feed(spec: ColumnSpec, values: Any) -> np.ndarray:
    dtype = values.dtype
    if isinstance(values, np.ndarray) and dtype.kind == "M":
        _refuse_beyond_ns(spec, values.view(np.int64), np.datetime_data(dtype)[0])
        if not spec.tz:
            return values.astype("datetime64[ns]").view(np.int64)
        values = pd.array(values.astype("datetime64[ns]"))  # naive: wall times in the model's zone, as below
        dtype = values.dtype
    if isinstance(values, np.ndarray) and dtype.kind in "OUS" or is_string_dtype(dtype):
        values = _parse_datetimes(spec, values)
        dtype = values.dtype
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        arrow = dtype.pyarrow_dtype
        if pa.types.is_timestamp(arrow):
            import pyarrow.compute as pc

            ticks = pc.fill_null(pc.cast(values._pa_array, pa.int64()), np.iinfo(np.int64).min)
            _refuse_beyond_ns(spec, ticks.to_numpy(), arrow.unit)
        tz = getattr(arrow, "tz", None)
        values = pd.Series(values, copy=False).astype(f"datetime64[ns, {tz}]" if tz else "datetime64[ns]").array
        dtype = values.dtype
    if isinstance(dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(dtype):
        _refuse_beyond_ns(spec, np.asarray(values.asi8), values.unit)
    if isinstance(dtype, pd.DatetimeTZDtype):
        return values.as_unit("ns").asi8.copy()
    if pd.api.types.is_datetime64_dtype(dtype):
        if spec.tz:
            return localize(spec.name, values, spec.tz).as_unit("ns").asi8.copy()
        return np.asarray(values).astype("datetime64[ns]").view(np.int64)
    if _all_missing(values):
        return _all_missing_feed(spec, len(values))
    raise ColumnTypeError(spec.name, f"{dtype} values in a datetime column", hint=_hint(spec))


def _parse_datetimes(spec: ColumnSpec, values: Any) -> Any:
    return parse_datetime_text(spec.name, values, spec.tz).array


def parse_datetime_text(column: str, values: Any, tz: str | None) -> pd.Series:
    """ISO-8601 text (``pd.to_datetime(format="ISO8601")``) as datetimes for a model's datetime column.

    Text with an offset is an instant; with ``tz`` (the zone stored for a tz-aware column) it is converted to
    ``tz``, so a column whose offsets differ (a zone across a DST change, as ``to_csv`` writes it) reads as one
    zone, and text without an offset is a wall time in ``tz``, as a naive datetime is (:func:`localize`).
    Without ``tz``, the text is read as pandas reads it, and text whose offsets differ as UTC instants (pandas
    refuses it unless ``utc=True``; the model takes instants anyway); there, text mixing values with and
    without offsets reads the latter as UTC.

    Raises
    ------
    ColumnTypeError
        naming ``column`` and the first row whose text is not a date, or a wall time that does not exist in
        ``tz`` (a DST gap) or exists twice (an overlap).
    """
    series = pd.Series(values, copy=False)
    mixed = False
    try:
        try:
            parsed = pd.to_datetime(series, format="ISO8601")
        except ValueError as exc:
            if "utc=True" not in str(exc):  # pandas' "Mixed timezones detected. Pass utc=True ..."
                raise
            parsed, mixed = pd.to_datetime(series, format="ISO8601", utc=True), True
    except (ValueError, TypeError, OverflowError) as exc:
        raise _unparsed(column, series, exc) from None
    if tz is None:
        return parsed
    if parsed.dt.tz is None:
        return pd.Series(localize(column, parsed.array, tz), index=parsed.index)
    parsed = parsed.dt.tz_convert(tz)
    if mixed:  # offsets and none in one column: the values without one are wall times in ``tz`` too
        naive = ~series.astype(str).str.strip().str.contains(_OFFSET, regex=True) & series.notna()
        if naive.any():
            wall = pd.to_datetime(series[naive], format="ISO8601")
            parsed[naive] = pd.Series(localize(column, wall.array, tz), index=wall.index)
    return parsed


#: an ISO-8601 time's offset at the end of the text, after the time (``12:00Z``, ``12:00:00+02:00``, ``-0530``,
#: ``+02``; a date alone, ``2022-07-01``, has none)
_OFFSET = r"\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?\s*(?:[Zz]|[+-]\d\d(?::?\d\d)?)$"


def _unparsed(column: str, series: pd.Series, exc: Exception) -> ColumnTypeError:
    """The error naming the first value of ``series`` that is not ISO-8601 text (pandas' own message, multi-line
    advice about arguments onegraph does not take, names no row)."""
    hint = "give ISO-8601 text, e.g. 2024-03-31 02:30:00+02:00 (missing as an empty cell / None)"
    for row, v in enumerate(series.tolist()):
        if _is_missing_scalar(v):
            continue
        try:
            pd.to_datetime(v, format="ISO8601", utc=True)
        except (ValueError, TypeError, OverflowError):
            return ColumnTypeError(column, f"value {_short(v)} at row {row} is not an ISO-8601 date", hint=hint)
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ColumnTypeError(column, f"cannot parse dates: {first}", hint=hint)


def localize(column: str, values: Any, tz: str) -> Any:
    """Naive datetimes (a pandas ``DatetimeArray``) as wall times in ``tz``, as ``Series.dt.tz_localize``.

    Raises
    ------
    ColumnTypeError
        naming ``column`` and the first row whose wall time does not exist in ``tz`` (a DST gap) or happens twice
        (a DST overlap): no instant is guessed for it.
    """
    series = pd.Series(values, copy=False)
    try:
        return series.dt.tz_localize(tz).array
    except Exception:  # noqa: BLE001, S110 - pytz / zoneinfo raise several types; the row is found below
        pass
    placed = series.dt.tz_localize(tz, ambiguous="NaT", nonexistent="NaT")
    bad = np.flatnonzero(placed.isna().to_numpy() & series.notna().to_numpy())
    hint = "give tz-aware datetimes, or text with an offset (e.g. 2021-10-31T02:30:00+01:00)"
    if not bad.size:
        raise ColumnTypeError(column, f"naive datetimes cannot be placed in time zone {tz}", hint=hint)
    row = int(bad[0])
    one = series.iloc[[row]]
    overlap = not one.dt.tz_localize(tz, ambiguous=np.array([True]), nonexistent="NaT").isna().iloc[0]
    where = (f"happens twice in time zone {tz} (a DST overlap)" if overlap
             else f"does not exist in time zone {tz} (a DST gap)")
    raise ColumnTypeError(column, f"value {one.iloc[0]} at row {row} {where}", hint=hint)


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

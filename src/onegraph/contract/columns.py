"""DataFrame columns <-> graph inputs: the one table that maps dtypes, and the conversion of values.

Every onegraph model has one graph input per DataFrame column, named as the column, of shape ``[N]``.
The dtype of the column decides the input's element type and how a missing value is written:

=====================================================  ===========  ==========  =========================
pandas / Arrow / polars dtype                          kind         graph type  missing value
=====================================================  ===========  ==========  =========================
float64, Float64, Arrow double                         float        double      NaN (pd.NA too)
float32, float16, Float32, Arrow float / half          float        float       NaN
int8 ... int64, uint8 ... uint64, Int*, UInt*, Arrow   int          int64       INT64_MIN
bool (numpy; cannot hold a missing value)              bool         bool        (none: refused)
boolean (nullable), Arrow bool, polars Boolean         bool         double      NaN (True 1.0, False 0.0)
category of True / False (as scikit-learn reads it)    bool         double      NaN
object / str / string[python|pyarrow] / category       string       string      ``MISSING_STRING``
datetime64[any unit], naive or tz-aware, Arrow ts      datetime     int64       INT64_MIN (pandas' NaT)
timedelta64, Arrow duration                            timedelta    int64       INT64_MIN
=====================================================  ===========  ==========  =========================

* datetimes are nanoseconds since 1970-01-01 UTC (a tz-aware column is converted to UTC; its zone is
  kept in the schema so date parts can be computed in it); naive datetimes are taken as wall time, i.e. as if
  they were UTC.
* the missing string is ``"\\uFFFF"``, a Unicode noncharacter that never occurs in interchanged text, so a
  missing value is never confused with the empty string ``""`` (and it survives C APIs that take
  NUL-terminated strings).
* an int64 input takes whole numbers from -(2**63 - 1) to 2**63 - 1, converted exactly from any container;
  ``-2**63`` is the missing integer, so a value that an int64 cannot hold, ``-2**63`` included, is refused
  naming the column and the row (never scored as missing).
* ``±inf`` in a float column is a number; where a model gives no answer for it (NaN probabilities), scoring
  raises an error naming the column and the row (:class:`onegraph.runtime.Session`).
* object columns are typed by their values (``pandas.api.types.infer_dtype``): strings, numbers, booleans or
  datetimes; a column that mixes them is refused with an error naming it.

The schema (a list of :class:`ColumnSpec`) is stored in the model's metadata; :func:`to_feed` turns any
column a user gives at scoring time into the array the graph input takes, or raises an error naming the
column.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from onegraph.contract.dates import date_format
from onegraph.errors import ColumnTypeError, MetadataError

__all__ = ["MISSING_STRING", "NA_INT64", "KINDS", "NUMPY_TYPES", "ColumnSpec", "spec_for", "is_string_dtype",
           "category_text"]

#: How a missing string is written in a string tensor.
MISSING_STRING = "\uffff"
#: How a missing int64 / datetime / timedelta is written (pandas' NaT).
NA_INT64 = int(np.iinfo(np.int64).min)


def category_text(c: Any) -> str:
    """A category as a graph's text input holds it, the same at build (from scikit-learn's ``categories_``) and
    in the feed of a pandas category column (from its dtype's categories): ``str`` of the value, except

    * ``datetime64`` / ``timedelta64`` (how scikit-learn keeps a category column of naive datetimes /
      timedeltas) print as pandas' ``Timestamp`` / ``Timedelta``, as the column's own categories do;
    * an ``Interval`` with numeric bounds prints them as floats: ``np.asarray`` of a ``pd.cut`` column with a
      missing value promotes ``interval[int64]`` to ``interval[float64]`` (``(2000.0, 3500.0]``), so
      scikit-learn's categories depend on whether the rows it saw had one, and it matches intervals by value.
    """
    if isinstance(c, np.datetime64):
        return str(pd.Timestamp(c))
    if isinstance(c, np.timedelta64):
        return str(pd.Timedelta(c))
    if isinstance(c, pd.Interval) and isinstance(c.left, (int, float, np.integer, np.floating)) and not isinstance(
            c.left, (bool, np.bool_)):
        return str(pd.Interval(float(c.left), float(c.right), closed=c.closed))
    return str(c)

KINDS = ("float", "int", "bool", "string", "datetime", "timedelta")
NUMPY_TYPES = {"double": np.float64, "float": np.float32, "int64": np.int64, "bool": np.bool_, "string": object}


class ColumnSpec(BaseModel):
    """How one DataFrame column is fed to the graph: one entry of the input schema (metadata key
    ``org.onegraph.inputs``), the same object for the transformers that fit on the column and for the
    session that feeds it.

    Attributes
    ----------
    name: the column name (also the graph input's name).
    kind: what the values mean: ``float``, ``int``, ``bool``, ``string``, ``datetime``, ``timedelta``.
    onnx_type: element type of the graph input: ``double``, ``float``, ``int64``, ``bool`` or ``string``.
    source_dtype: the dtype the column had when the model was built (informative).
    tz: IANA time zone of a tz-aware datetime column, else None.
    numbers: for a ``category`` column whose categories are numbers, their type (``int`` / ``float``): the
        column is fed as the text ``str()`` gives those numbers at build (``4`` / ``4.0``), whatever type the
        values come as (int or float categories, numbers, text), so 4 and 4.0 are one category, as
        scikit-learn's encoders compare them. None for other columns.
    date_format: for a text column whose dates the graph parses: the ``strftime`` format it reads them in, or
        ``ISO8601`` (:mod:`onegraph.contract.dates`). The graph reads text in no format as a missing date; the
        session refuses a date written in another format (``2012-01-31`` for ``%m/%d/%Y``), which would be
        read so. None for other columns.

    Keys a newer onegraph may add are kept (``extra="allow"``); values are checked strictly ("3" is not a
    kind). Positional arguments follow the attribute order: ``ColumnSpec("age", "float", "double")``.
    """

    model_config = ConfigDict(frozen=True, strict=True, extra="allow", defer_build=True)

    name: str
    kind: Literal["float", "int", "bool", "string", "datetime", "timedelta"]
    onnx_type: Literal["double", "float", "int64", "bool", "string"]
    source_dtype: str = ""
    tz: str | None = None
    numbers: Literal["int", "float"] | None = None
    date_format: str | None = None

    @field_validator("date_format")
    @classmethod
    def _readable_format(cls, fmt: str | None) -> str | None:
        if fmt is not None:
            date_format(fmt)  # its ValueError names what the graph cannot read
        return fmt

    def __init__(self, *args: Any, **fields: Any) -> None:
        # only what is given: a field left out stays unset, so the stored entry holds what was written
        fields.update(zip(("name", "kind", "onnx_type", "source_dtype", "tz"), args))
        super().__init__(**fields)

    @property
    def numpy_dtype(self) -> Any:
        return NUMPY_TYPES[self.onnx_type]

    def to_dict(self) -> dict:
        """The JSON entry (``tz`` only when set)."""
        return self.model_dump(mode="json", exclude_none=True)

    @classmethod
    def from_dict(cls, d: Any) -> ColumnSpec:
        """The spec of one input schema entry.

        Raises
        ------
        MetadataError
            naming ``org.onegraph.inputs`` and the entry, for an entry that is not a dict of the fields above.
        """
        try:
            return cls.model_validate(d)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"]))
            raise MetadataError("org.onegraph.inputs", f"entry {_short(d)}: {where + ': ' if where else ''}"
                                f"{first['msg']}") from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


# -- dtype -> spec ---------------------------------------------------------------------------------
def spec_for(name: str, values: Any) -> ColumnSpec:
    """The :class:`ColumnSpec` of a column (a pandas Series / array) from its dtype.

    Raises
    ------
    ColumnTypeError
        for an object column mixing types, or a dtype with no graph representation (complex, interval...).
    """
    dtype = values.dtype
    src = str(dtype)
    kind, onnx_type, tz = _classify(name, dtype, values)
    numbers = _category_numbers(dtype)
    if numbers is not None:
        return ColumnSpec(name=str(name), kind=kind, onnx_type=onnx_type, source_dtype=src, tz=tz, numbers=numbers)
    return ColumnSpec(name=str(name), kind=kind, onnx_type=onnx_type, source_dtype=src, tz=tz)


def _category_numbers(dtype: Any) -> str | None:
    """``int`` / ``float`` for a pandas category dtype of numeric (not bool) categories, else None."""
    if not isinstance(dtype, pd.CategoricalDtype):
        return None
    cats = dtype.categories.dtype
    if pd.api.types.is_bool_dtype(cats) or not pd.api.types.is_numeric_dtype(cats):
        return None
    return "int" if pd.api.types.is_integer_dtype(cats) else "float"


def _classify(name: str, dtype: Any, values: Any) -> tuple[str, str, str | None]:
    if isinstance(dtype, pd.CategoricalDtype) and len(dtype.categories) and pd.api.types.infer_dtype(
            dtype.categories, skipna=True) == "boolean":
        # scikit-learn reads a category column of True / False as the numbers 1.0 / 0.0 (NaN missing), as it
        # reads a nullable boolean column: the same graph input, which takes bools, 0/1 and true/false text
        return "bool", "double", None
    if isinstance(dtype, pd.CategoricalDtype) or is_string_dtype(dtype):
        return "string", "string", None
    if isinstance(dtype, pd.DatetimeTZDtype):
        return "datetime", "int64", str(dtype.tz)
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        t = dtype.pyarrow_dtype
        if pa.types.is_timestamp(t):
            return "datetime", "int64", t.tz
        if pa.types.is_date(t):  # polars' Date: midnight of each day, naive
            return "datetime", "int64", None
        if pa.types.is_decimal(t):
            return "float", "double", None
        if pa.types.is_duration(t):
            return "timedelta", "int64", None
        if pa.types.is_boolean(t):
            return "bool", "double", None
        if pa.types.is_integer(t):
            return "int", "int64", None
        if pa.types.is_floating(t):
            return "float", "double" if t.bit_width == 64 else "float", None
        if pa.types.is_dictionary(t) or pa.types.is_null(t):
            return "string", "string", None
        raise ColumnTypeError(name, f"Arrow type {t} has no graph representation",
                              hint="cast it to a number, string or timestamp column")
    if pd.api.types.is_bool_dtype(dtype):
        return ("bool", "bool", None) if isinstance(dtype, np.dtype) else ("bool", "double", None)
    if pd.api.types.is_integer_dtype(dtype):
        return "int", "int64", None
    if pd.api.types.is_float_dtype(dtype):
        return "float", "double" if np.dtype(getattr(dtype, "numpy_dtype", dtype)).itemsize == 8 else "float", None
    if pd.api.types.is_datetime64_dtype(dtype):
        return "datetime", "int64", None
    if pd.api.types.is_timedelta64_dtype(dtype):
        return "timedelta", "int64", None
    if dtype == object:
        inferred = pd.api.types.infer_dtype(values, skipna=True)
        if inferred in ("string", "empty"):
            return "string", "string", None
        if inferred in ("floating", "integer", "mixed-integer-float", "decimal"):
            return "float", "double", None
        if inferred == "boolean":
            return "bool", "double", None
        if inferred in ("datetime", "datetime64", "date"):
            return "datetime", "int64", None
        if inferred == "time":  # Parquet's time64 / time32 as pandas reads them
            raise ColumnTypeError(name, "holds times of day (datetime.time), which no graph input takes",
                                  hint="convert them to numbers, e.g. seconds since midnight: "
                                       "pd.to_timedelta(col.astype(str)).dt.total_seconds()")
        raise ColumnTypeError(name, f"object column mixes value types ({inferred})",
                              hint="convert it with .astype(str) or pd.to_numeric before building")
    raise ColumnTypeError(name, f"dtype {dtype} has no graph representation",
                          hint="convert it to a number, string, bool or datetime column")


def is_string_dtype(dtype: Any) -> bool:
    if isinstance(dtype, pd.StringDtype):
        return True
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        t = dtype.pyarrow_dtype
        return pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t)
    return False



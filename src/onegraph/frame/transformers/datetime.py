"""Dates and times: calendar parts and differences, from datetime64 columns or date strings.

Both transformers take datetime columns (naive or tz-aware, any unit; in the graph they are int64
nanoseconds UTC, NaT = INT64_MIN, see :mod:`onegraph.contract.columns`) and text columns, which are parsed in
the graph (ISO 8601 or a ``strftime`` format, see :mod:`onegraph.frame.dateparse`; unparseable text is
NaT). The pandas side computes with pandas' own ``dt`` accessor; the graph with integer calendar
arithmetic (:mod:`onegraph.frame.calendar`) and, for a column with a time zone, a table of that zone's
UTC offsets (:mod:`onegraph.frame.timezones`).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Interval, StrOptions

from onegraph.contract.columns import NA_INT64, ColumnSpec
from onegraph.contract.dates import stored_format
from onegraph.contract.feeds import to_feed
from onegraph.emit import BOOL, DOUBLE, INT64, INT64_MIN, STRING, Col, GraphBuilder
from onegraph.errors import ColumnTypeError
from onegraph.frame.calendar import Calendar
from onegraph.frame.dateparse import DateFormat, date_format, emit_parse, parse_pandas
from onegraph.frame.tensors import Val, where
from onegraph.frame.timezones import OffsetTable, covered, local_time, offset_table
from onegraph.frame.transformers.base import ColumnWise, FrameTransformer
from onegraph.frame.transformers.constraints import Satisfies, names

__all__ = ["DateParts", "DateDiff"]

#: part name -> (Calendar attribute, pandas ``dt`` expression); flags are bool, other parts float64
_PARTS = {
    "year": "year", "quarter": "quarter", "month": "month", "day": "day",
    "dayofweek": "dayofweek", "day_of_week": "dayofweek", "weekday": "dayofweek",
    "dayofyear": "dayofyear", "day_of_year": "dayofyear",
    "days_in_month": "days_in_month", "daysinmonth": "days_in_month",
    "isoweek": "isoweek", "isoyear": "isoyear",
    "hour": "hour", "minute": "minute", "second": "second", "microsecond": "microsecond",
    "nanosecond": "nanosecond",
    "is_month_start": "is_month_start", "is_month_end": "is_month_end",
    "is_quarter_start": "is_quarter_start", "is_quarter_end": "is_quarter_end",
    "is_year_start": "is_year_start", "is_year_end": "is_year_end", "is_leap_year": "is_leap_year",
    "is_weekend": "is_weekend",
}
_FLAGS = {p for p in _PARTS if p.startswith("is_")}
#: Calendar attribute -> pandas ``dt`` attribute where the names differ (pandas 3 deprecates the short ones)
_PANDAS_NAMES = {"dayofweek": "day_of_week", "dayofyear": "day_of_year"}
#: cyclical part -> (first value, period); the period of ``day`` / ``dayofyear`` is the month / year length
_CYCLES = {"month": (1, 12), "quarter": (1, 4), "dayofweek": (0, 7), "hour": (0, 24), "minute": (0, 60),
           "second": (0, 60), "day": (1, "days_in_month"), "dayofyear": (1, "days_in_year")}
_UNITS = {"W": 604_800_000_000_000, "D": 86_400_000_000_000, "h": 3_600_000_000_000, "min": 60_000_000_000,
          "s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _pandas_part(s: pd.Series, part: str) -> np.ndarray:
    """One part with pandas' ``dt`` accessor: float64 with NaN for NaT, bool for flags (False for NaT)."""
    name = _PARTS[part]
    if name in ("isoweek", "isoyear"):
        iso = s.dt.isocalendar()
        values = iso["week" if name == "isoweek" else "year"]
    elif name == "is_weekend":
        return (s.dt.day_of_week >= 5).to_numpy(dtype=bool)
    else:
        values = getattr(s.dt, _PANDAS_NAMES.get(name, name))
    if part in _FLAGS:
        return values.to_numpy(dtype=bool)
    return values.astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan)


class _DateInputs(FrameTransformer):
    """Shared by the date transformers: reading datetime and text columns as UTC nanoseconds."""

    accepts = ("datetime", "string")

    def _formats(self) -> dict[str, DateFormat | None]:
        try:
            fmt = date_format(self.format)
        except ValueError as exc:
            raise ColumnTypeError(str(self.feature_names_in_[0]), str(exc)) from None
        return {s.name: fmt if s.kind == "string" else None for s in self.input_specs_}

    def _ns(self, spec: ColumnSpec, values: pd.Series) -> np.ndarray:
        """int64 nanoseconds (UTC for tz-aware columns and text; wall time for naive), NaT = INT64_MIN."""
        fmt = self.formats_[spec.name]
        if fmt is None:
            return to_feed(spec, values)
        return parse_pandas(np.asarray(values.astype(object).where(values.notna(), None), dtype=object), fmt)

    def _emit_ns(self, g: GraphBuilder, col: Col, name: str) -> Val:
        """``_ns`` in the graph, of ``col`` fitted as column ``name``."""
        fmt = self.formats_[name]
        if fmt is None:
            return Val(g, g.vector(col), INT64)
        if col.value.is_graph_input():  # the session can then tell text in another format from a missing date
            g.date_formats[col.value.name] = stored_format(fmt)
        return emit_parse(Val(g, g.vector(col), STRING), fmt)


class DateParts(ColumnWise, _DateInputs):
    """Calendar parts of datetime or date-string columns, as pandas' ``Series.dt`` gives them.

    Parameters
    ----------
    parts:
        Names of pandas' ``dt`` attributes: ``year``, ``quarter``, ``month``, ``day``, ``dayofweek``
        (Monday = 0; aliases ``day_of_week``, ``weekday``), ``dayofyear`` (``day_of_year``),
        ``days_in_month``, ``hour``, ``minute``, ``second``, ``microsecond``, ``nanosecond``,
        ``is_month_start``, ``is_month_end``, ``is_quarter_start``, ``is_quarter_end``,
        ``is_year_start``, ``is_year_end``, ``is_leap_year``; plus ``isoweek`` / ``isoyear``
        (``dt.isocalendar()``) and ``is_weekend`` (Saturday or Sunday).
    format:
        For text columns: a ``strftime`` format, or None for ISO 8601 (see :mod:`onegraph.frame.dateparse`).
        Text that does not parse is NaT.
    tz:
        Zone to compute the parts in (an IANA name). None: a tz-aware column's own zone, a naive column's
        wall time, text in UTC (offsets in the text are applied). Naive columns take no ``tz``.
    cyclical:
        Parts to add as ``sin`` / ``cos`` of the angle ``2 pi (value - first) / period``: ``month`` (1,
        12), ``quarter`` (1, 4), ``dayofweek`` (0, 7), ``hour`` (0, 24), ``minute`` / ``second`` (0, 60),
        ``day`` (1, days in that month), ``dayofyear`` (1, days in that year).
    tz_margin:
        Years added before and after the years seen in fit to the time-zone table. Instants outside make
        :func:`onegraph.score` raise :class:`~onegraph.errors.OutOfRangeError` (the graph does not
        guess offsets it was not given); ``transform`` computes them with pandas.

    Output columns ``<column>_<part>`` (then ``<column>_<part>_sin`` / ``_cos``): float64 with NaN for
    NaT, and bool for the ``is_*`` flags (False for NaT, as pandas).

    Raises
    ------
    ConfigError
        (a ``ValueError``) for an unknown part, or a part listed in ``cyclical`` without a period.
    ColumnTypeError
        for a column that is neither datetime nor text, a ``tz`` on a naive column, or a bad ``format``.
    """

    _parameter_constraints = {
        "parts": [names(_PARTS)],
        "format": [str, None],
        "tz": [str, None],
        "cyclical": [names(p for p in _PARTS if _PARTS[p] in _CYCLES)],
        "tz_margin": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, parts: tuple[str, ...] | list[str] = ("year", "month", "day", "dayofweek"), *,
                 format: str | None = None, tz: str | None = None, cyclical: tuple[str, ...] | list[str] = (),
                 tz_margin: int = 30) -> None:
        self.parts = parts
        self.format = format
        self.tz = tz
        self.cyclical = cyclical
        self.tz_margin = tz_margin

    def _fit_shared(self, frame: pd.DataFrame, y: Any) -> None:
        self.formats_ = self._formats()
        self.zones_: dict[str, str | None] = {}
        self.tables_: dict[str, OffsetTable | None] = {}

    def _fit_column(self, spec: ColumnSpec, values: pd.Series) -> None:
        zone = self.tz if self.tz is not None else spec.tz
        if self.tz is not None and spec.kind == "datetime" and spec.tz is None:
            raise ColumnTypeError(spec.name, "naive datetimes have no time zone to convert from",
                                  hint="localize the column (Series.dt.tz_localize) or drop tz=")
        self.zones_[spec.name] = zone
        self.tables_[spec.name] = None if zone is None else self._table(zone, self._ns(spec, values))

    def _table(self, zone: str, ns: np.ndarray) -> OffsetTable:
        seen = ns[ns != NA_INT64]
        if seen.size:
            local = self._series(np.array([seen.min(), seen.max()]), zone)
            first, last = int(local.dt.year.min()), int(local.dt.year.max())
        else:
            first, last = 1970, 2037
        return offset_table(zone, first - self.tz_margin, last + self.tz_margin)

    @staticmethod
    def _series(ns: np.ndarray, zone: str | None) -> pd.Series:
        s = pd.Series(ns.astype(np.int64).view("datetime64[ns]"))
        return s if zone is None else s.dt.tz_localize("UTC").dt.tz_convert(zone)

    def _column_names(self, name: str) -> list[str]:
        return [f"{name}_{p}" for p in self.parts] + [f"{name}_{p}_{f}" for p in self.cyclical for f in ("sin", "cos")]

    def _transform_column(self, spec: ColumnSpec, values: pd.Series) -> dict[str, np.ndarray]:
        c = spec.name
        s = self._series(self._ns(spec, values), self.zones_[c])
        out = {f"{c}_{p}": _pandas_part(s, p) for p in self.parts}
        for p in self.cyclical:
            first, period = _CYCLES[_PARTS[p]]
            value = _pandas_part(s, p)
            if period == "days_in_month":
                period = s.dt.days_in_month.astype("Float64").to_numpy(np.float64, na_value=np.nan)
            elif period == "days_in_year":
                period = np.where(s.dt.is_leap_year.to_numpy(bool), 366.0, 365.0)
            angle = (2 * np.pi) * ((value - first) / period)
            out[f"{c}_{p}_sin"] = np.sin(angle)
            out[f"{c}_{p}_cos"] = np.cos(angle)
        return out

    def _emit_column(self, g: GraphBuilder, spec: ColumnSpec, col: Col) -> list[Col]:
        out = []
        ns = self._emit_ns(g, col, spec.name)
        valid = ns != INT64_MIN
        utc = where(valid, ns, 0)
        table = self.tables_[spec.name]
        if table is not None:
            inside = covered(utc, table)
            if not table.fixed_zone:
                g.flag((valid & ~inside).value, "out_of_range", col.name,
                       covers=f"the years {_year(table.start)}-{_year(table.end) - 1} of time zone {table.tz}",
                       hint="rebuild with a larger DateParts(tz_margin=...) or data covering these dates")
            utc = local_time(utc, table)
        cal = Calendar(utc)
        for p in self.parts:
            part = getattr(cal, _PARTS[p])
            if p in _FLAGS:
                out.append(Col(f"{col.name}_{p}", "bool", (part & valid).value, BOOL))
            else:
                out.append(Col(f"{col.name}_{p}", "float", _masked(part, valid).value, DOUBLE))
        for p in self.cyclical:
            first, period = _CYCLES[_PARTS[p]]
            value = _masked(getattr(cal, _PARTS[p]), valid)
            if period == "days_in_month":
                period = cal.days_in_month.cast(DOUBLE)
            elif period == "days_in_year":
                period = where(cal.is_leap_year, 366.0, 365.0)
            angle = ((value - float(first)) / period) * (2 * np.pi)
            out.append(Col(f"{col.name}_{p}_sin", "float", angle.unary("Sin").value, DOUBLE))
            out.append(Col(f"{col.name}_{p}_cos", "float", angle.unary("Cos").value, DOUBLE))
        return out


def _masked(part: Val, valid: Val) -> Val:
    return where(valid, part.cast(DOUBLE), np.nan)


def _year(ns: int) -> int:
    return pd.Timestamp(ns, tz="UTC").year


# not ColumnWise: without a reference, its one output comes from two columns
class DateDiff(_DateInputs):
    """Time between two datetime (or date-string) columns, or since a reference instant, in a unit.

    Parameters
    ----------
    reference:
        None: the transformer takes exactly two columns and gives ``first - second`` (named
        ``<first>_minus_<second>``). A timestamp (string or ``pd.Timestamp``; naive means UTC): every column
        gives ``column - reference`` (named ``<column>_since_reference``).
    unit:
        ``"W"``, ``"D"``, ``"h"``, ``"min"``, ``"s"``, ``"ms"``, ``"us"`` or ``"ns"``.
    whole:
        False: ``(a - b) / pd.Timedelta(1, unit)`` (float); True: ``(a - b) // pd.Timedelta(1, unit)``
        (floor, e.g. whole days or whole seconds since the epoch).
    format:
        For text columns (see :class:`DateParts`).

    Instants are compared in UTC: tz-aware columns by their instant, naive columns and text without an
    offset as if in UTC. Output float64, NaN where either side is NaT.

    Raises
    ------
    ConfigError
        (a ``ValueError``) for an unknown unit, or two-column mode given another number of columns.
    """

    _parameter_constraints = {
        "reference": [None, Satisfies("a timestamp (str, datetime or pd.Timestamp)",
                                      lambda t: pd.notna(pd.Timestamp(t)))],
        "unit": [StrOptions(set(_UNITS))],
        "whole": ["boolean"],
        "format": [str, None],
    }

    def __init__(self, reference: Any = None, *, unit: str = "D", whole: bool = False,
                 format: str | None = None) -> None:
        self.reference = reference
        self.unit = unit
        self.whole = whole
        self.format = format

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        if self.reference is None and self.n_features_in_ != 2:  # the parameter and the data together
            raise self._refuse("reference", f"is None, so DateDiff takes two columns (end, start); it was given "
                               f"{self.n_features_in_}", hint="give it two columns, or a reference= timestamp")
        self.formats_ = self._formats()
        self.reference_ns_ = None
        if self.reference is not None:
            ref = pd.Timestamp(self.reference)
            ref = ref.tz_localize("UTC") if ref.tzinfo is None else ref.tz_convert("UTC")
            self.reference_ns_ = int(ref.as_unit("ns").value)

    def _names_out(self) -> list[str]:
        names = list(self.feature_names_in_)
        if self.reference is None:
            return [f"{names[0]}_minus_{names[1]}"]
        return [f"{c}_since_reference" for c in names]

    def _pairs(self) -> list[tuple[str, str | None]]:
        names = list(self.feature_names_in_)
        return [(names[0], names[1])] if self.reference is None else [(c, None) for c in names]

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = {}
        unit = pd.Timedelta(1, self.unit)
        for name, (a, b) in zip(self._names_out(), self._pairs()):
            end = pd.Series(self._ns(self._spec(a), frame[a]).view("datetime64[ns]"))
            start = (pd.Series(self._ns(self._spec(b), frame[b]).view("datetime64[ns]")) if b is not None
                     else pd.Timestamp(self.reference_ns_))
            delta = end - start
            out[name] = (delta // unit if self.whole else delta / unit).astype("Float64").to_numpy(
                np.float64, na_value=np.nan)
        return pd.DataFrame(out, index=frame.index)

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        by_name = {c.name: c for c in cols}
        out = []
        unit = _UNITS[self.unit]
        for name, (a, b) in zip(self._names_out(), self._pairs()):
            end = self._emit_ns(g, by_name[a], a)
            valid = end != INT64_MIN
            if b is not None:
                start = self._emit_ns(g, by_name[b], b)
                valid = valid & (start != INT64_MIN)
            else:
                start = end.lift(self.reference_ns_)
            delta = where(valid, end, 0) - where(valid, start, 0)
            value = (delta // unit).cast(DOUBLE) if self.whole else delta.cast(DOUBLE) / float(unit)
            out.append(Col(name, "float", where(valid, value, np.nan).value, DOUBLE))
        return out

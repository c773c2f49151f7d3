"""The grammar of date text a graph parses: ISO 8601 or a ``strftime`` format, as regular expressions.

Part of the contract between a table and a graph: the graph validates a text column's dates with
``RegexFullMatch`` on :attr:`DateFormat.pattern` (see :mod:`onegraph.frame.dateparse` for the parsing), and the
session uses the same pattern to tell a date written in another format, which the graph would read as missing
(:class:`~onegraph.contract.columns.ColumnSpec` ``date_format``). The grammars are described in
:mod:`onegraph.frame.dateparse`; the patterns are RE2- and Python ``re``-compatible.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
from typing import Any

import numpy as np

__all__ = ["DATE_SHARE", "ISO8601", "ISO_PATTERN", "NAME_FIELDS", "OTHER_DATES_SHARE", "format_dates", "looks_like_date", "DateFormat", "date_format", "stored_format"]

#: share of the present values of a text column that must be dates in one format for build to read it as dates
DATE_SHARE = 0.95
#: the share of a feed's present values that may be written otherwise and read as missing dates, as build read
#: them (pandas' ``to_datetime(errors="coerce")``); beyond it, a date written another way is refused
OTHER_DATES_SHARE = 1 - DATE_SHARE

#: how an input schema writes ISO 8601 as a column's date format (``pandas.to_datetime(format="ISO8601")``)
ISO8601 = "ISO8601"

_D = "[0-9]"
_WS = r"[ \t\n\x0b\x0c\r]"  # C isspace in the "C" locale: what pandas' parser skips
_TIME = (r"(?:[0-9]{1,2}:[0-9]{1,2}(?::[0-9]{1,2}(?:\.[0-9]{0,18})?)?"
         r"|[0-9]{2}(?:[0-9]{2}(?:[0-9]{2}(?:\.[0-9]{0,18})?)?)?)")
_TIMEPART = (rf"(?:[T ]{_TIME}{_WS}*(?:Z{_WS}*|[+-](?:[0-9]{{2}}(?::?[0-9]{{1,2}}{_WS}*)?"
             rf"|[0-9](?::[0-9]{{1,2}}{_WS}*)?))?)")
#: the date separators of ISO 8601 text (pandas reads these four)
DATE_SEPARATORS = ("-", ".", "/", "\\")
TIME_STOPS = ":.Z+-"  # what may follow a time field's digits (with whitespace)


def _iso_pattern() -> str:
    dated = "|".join(rf"{re.escape(c)}{_D}{{1,2}}(?:{re.escape(c)}{_D}{{1,2}}{_TIMEPART}?)?" for c in DATE_SEPARATORS)
    return rf"{_D}{{4}}(?:{dated}|{_D}{{4}}{_TIMEPART}?)?"


ISO_PATTERN = _iso_pattern()

#: strptime fields: (pattern when separated by literal text, pattern when packed, width when packed)
STRPTIME_FIELDS = {
    "Y": (f"{_D}{{4}}", f"{_D}{{4}}", 4),
    "y": (f"{_D}{{2}}", f"{_D}{{2}}", 2),
    "m": ("(?:1[0-2]|0[1-9]|[1-9])", "(?:1[0-2]|0[1-9])", 2),
    "d": ("(?:3[01]|[12][0-9]|0[1-9]|[1-9])", "(?:3[01]|[12][0-9]|0[1-9])", 2),
    "H": ("(?:2[0-3]|[0-1][0-9]|[0-9])", "(?:2[0-3]|[0-1][0-9])", 2),
    "M": ("(?:[0-5][0-9]|[0-9])", "[0-5][0-9]", 2),
    "S": ("(?:6[0-1]|[0-5][0-9]|[0-9])", "(?:6[0-1]|[0-5][0-9])", 2),
    "I": ("(?:1[0-2]|0[1-9]|[1-9])", "(?:1[0-2]|0[1-9])", 2),
    "f": (f"{_D}{{1,9}}", None, None),
    "z": (r"(?:[+-][0-9]{2}:?[0-5][0-9]|Z)", None, None),
}
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December")
#: fields written as English words, as pandas' ``strptime`` reads them under the C or an English locale
#: (case-insensitive): the pattern of each word in order (month 1-12; AM, PM)
NAME_FIELDS = {
    "b": tuple(m[:3] for m in MONTH_NAMES),
    "B": MONTH_NAMES,
    "p": ("AM", "PM"),
}
_LOCALE = "depends on the host locale; give numeric fields (%m, %d, %H...) or %b / %B / %p"
_REFUSED = {"a": f"(weekday names) {_LOCALE}", "A": f"(weekday names) {_LOCALE}",
            "h": "is a synonym of %b that pandas does not read; use %b", "c": f"(locale's format) {_LOCALE}",
            "x": f"(locale's format) {_LOCALE}", "X": f"(locale's format) {_LOCALE}"}


@dataclasses.dataclass(frozen=True)
class DateFormat:
    """A compiled date format: the validation pattern and how the graph reads the fields.

    ``format`` is None for ISO 8601; ``iso`` tells which reader applies (pandas' ISO parser, or
    strptime); ``steps`` are the strptime reader's steps: ``("skip", literal)``, ``("read", fields)``
    with ``fields`` a tuple of directives read from one run of digits, or ``("name", directive)`` for a
    field written as a word (:data:`NAME_FIELDS`).
    """

    format: str | None
    pattern: str
    iso: bool
    steps: tuple = ()

    @property
    def stops(self) -> str:
        """Characters that may follow a field's digits in a matching string (strptime formats): those of
        the literal text and an offset's sign or ``Z``."""
        text = "".join(value for kind, value in self.steps if kind == "skip") + "+-Z"
        if ("name", "p") in self.steps:  # 3:45PM: the minutes' digits stop at the AM/PM word
            text += "AaPp"
        return "".join(c for c in dict.fromkeys(text) if not c.isdigit())

    @functools.cached_property
    def regex(self) -> re.Pattern:
        """:attr:`pattern` compiled once per format (``date_format`` caches the formats), with RE2's meaning, as the
        graph's ``RegexFullMatch`` and Arrow read it: ``\\d`` and case-insensitive names are ASCII-only
        (Python's Unicode rules would fold ``ı`` and ``İ`` to ``i`` and take other scripts' digits)."""
        return re.compile(self.pattern, re.ASCII)

    def matches(self, values: np.ndarray) -> np.ndarray:
        """Python side of the grammar: True where a value is a string matching the pattern."""
        rx = self.regex
        return np.fromiter((type(v) is str and rx.fullmatch(v) is not None for v in values), bool, len(values))


@functools.lru_cache(maxsize=64)
def date_format(fmt: str | None) -> DateFormat:
    """Compile ``fmt`` (None, or ``"ISO8601"``, for ISO 8601).

    Raises
    ------
    ValueError
        for directives the graph cannot read (locale-dependent names, ``%j``, ``%U``...), or ``%f``
        followed directly by another field.
    """
    if fmt is None or fmt == ISO8601:
        return DateFormat(None, ISO_PATTERN, True)
    return _strptime_like(fmt)


def _strptime_like(fmt: str) -> DateFormat:
    tokens: list[tuple[str, str]] = []
    for m in re.finditer(r"%(.)|([^%]+)|(%)$", fmt):
        if m.group(3):
            raise ValueError(f"format {fmt!r} ends with a lone '%'")
        if m.group(1) is not None:
            d = m.group(1)
            if d == "%":
                tokens.append(("lit", "%"))
            elif d in STRPTIME_FIELDS:
                tokens.append(("field", d))
            elif d in NAME_FIELDS:
                tokens.append(("name", d))
            elif d in _REFUSED:
                raise ValueError(f"format {fmt!r}: %{d} {_REFUSED[d]}")
            else:
                raise ValueError(f"format {fmt!r}: %{d} is not supported in the graph; "
                                 "use %Y %y %m %d %H %I %M %S %f %z %b %B %p")
        else:
            tokens.append(("lit", re.sub(r"\s+", " ", m.group(2))))
    merged: list[tuple[str, Any]] = []
    for kind, value in tokens:  # literals merged, fields grouped into runs of adjacent digits
        if kind == "lit":
            if merged and merged[-1][0] == "skip":
                merged[-1] = ("skip", merged[-1][1] + value)
            else:
                merged.append(("skip", value))
        elif kind == "name":
            merged.append(("name", value))
        elif merged and merged[-1][0] == "read" and value not in "fz" and merged[-1][1][-1] not in "fz":
            # adjacent numeric fields share one run of digits
            merged[-1] = ("read", merged[-1][1] + (value,))
        else:
            merged.append(("read", (value,)))
    _check_fields(fmt, merged)
    pattern = ""
    for i, (kind, value) in enumerate(merged):
        if kind == "skip":
            pattern += re.escape(value)
        elif kind == "name":
            pattern += "(?i:" + "|".join(word.lower() for word in NAME_FIELDS[value]) + ")"
        else:
            packed = len(value) > 1
            pattern += "".join(STRPTIME_FIELDS[d][1] if packed else STRPTIME_FIELDS[d][0] for d in value)
    return DateFormat(fmt, pattern, False, tuple(merged))


def _check_fields(fmt: str, steps: list[tuple[str, Any]]) -> None:
    """Refuse what the graph's reader could not split apart: a field directly after a numeric field (but an
    offset, or %p after digits: 3:45PM), anything directly after a word field, a word field directly after a
    numeric one (but %p), text after a word that starts with a letter (it could be read inside the word), and
    %H with %I."""
    directives = [d for kind, value in steps if kind != "skip" for d in ((value,) if kind == "name" else value)]
    if "H" in directives and "I" in directives:
        raise ValueError(f"format {fmt!r} has both %H and %I; give one hour field")
    for (kind, value), (after, following) in itertools.pairwise(steps):
        if kind == "name" and after != "skip":
            raise ValueError(f"format {fmt!r}: %{value} must be followed by literal text or end the format")
        if kind == "name" and following[0].isascii() and following[0].isalpha():
            raise ValueError(f"format {fmt!r}: the text after %{value} must not start with a letter")
        if kind == "read" and after == "read" and following != ("z",):
            raise ValueError(f"format {fmt!r}: %{value[-1]} cannot be followed directly by another field")
        if kind == "read" and after == "name" and following != "p":
            raise ValueError(f"format {fmt!r}: %{value[-1]} cannot be followed directly by %{following}; "
                             "put literal text between them")


def stored_format(fmt: DateFormat) -> str:
    """How the input schema writes ``fmt``: its ``strftime`` format, or :data:`ISO8601`."""
    return ISO8601 if fmt.format is None else fmt.format


#: a calendar date as people write it: year first (2012-01-31), day and month first (31.01.12, 1/31/2012), one
#: separator twice, or with an English month name (31-Jan-2012, 31 January 2012, Jan 31, 2012); maybe a time
#: of day (24-hour, or 12-hour with AM/PM) and a zone after
_YEAR_FIRST = r"(?P<y>\d{4})(?P<s>[-/.])(?P<m>\d{1,2})(?P=s)(?P<d>\d{1,2})"
_YEAR_LAST = r"(?P<a>\d{1,2})(?P<t>[-/.])(?P<b>\d{1,2})(?P=t)(?:\d{4}|\d{2})"
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
          r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_NAMED = rf"(?i:\d{{1,2}}[- ]{_MONTH}[- ](?:\d{{4}}|\d{{2}})|{_MONTH} \d{{1,2}},? \d{{4}})"
_DATE_LIKE = re.compile(rf"(?:{_YEAR_FIRST}|{_YEAR_LAST}|{_NAMED})"
                        r"(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?: ?[AaPp][Mm])?"
                        r"(?: ?(?:Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?))?)?")


def looks_like_date(text: str) -> bool:
    """Whether ``text`` is a calendar date in one of the shapes people write (year first, day and month first
    with one separator twice, English month names; maybe a time and a zone) whose month and day exist (1-12 and
    1-31, either order when the year is last; a month name is one). Not a parser: it tells a date written in
    some format from a word or a number."""
    found = _DATE_LIKE.fullmatch(text)
    if found is None:
        return False
    if found["y"] is not None:
        return 1 <= int(found["m"]) <= 12 and 1 <= int(found["d"]) <= 31
    if found["a"] is None:
        return True
    a, b = int(found["a"]), int(found["b"])
    return (1 <= a <= 12 and 1 <= b <= 31) or (1 <= b <= 12 and 1 <= a <= 31)


def format_dates(instants: Any, fmt: DateFormat) -> np.ndarray:
    """Dates written as text the graph reads in ``fmt``: the inverse of its grammar, for a text-date model fed
    dates (a Parquet ``date32`` column, ``read_csv(engine="pyarrow")``'s parsed dates, polars' ``try_parse_dates``).

    ``instants``: a pandas Series of ``datetime64`` (naive: as written; tz-aware: converted to UTC, as the graph
    reads text with an offset), in any unit (dates outside the nanosecond range are written too; the graph
    reads them as missing, as their text). Returns an object array of ``str``, None where NaT. Fields are zero-padded,
    fractions written to the nanosecond (nine digits), month names and AM/PM in English (locale-free, not
    ``strftime``), ``%z`` as ``+0000``. Fields the format does not hold are dropped (a time for ``%d-%b-%Y``).
    """
    import pandas as pd

    stamps = pd.Series(instants)
    if getattr(stamps.dt, "tz", None) is not None:
        stamps = stamps.dt.tz_convert("UTC").dt.tz_localize(None)
    missing = stamps.isna().to_numpy()
    if fmt.format is None:
        text = np.datetime_as_string(stamps.to_numpy(), unit="ns").astype(object)
    else:
        dt = stamps.dt
        field = {"Y": dt.year, "m": dt.month, "d": dt.day, "H": dt.hour, "M": dt.minute, "S": dt.second}
        field = {k: v.fillna(0).astype(np.int64).to_numpy() for k, v in field.items()}
        field["y"] = field["Y"] % 100
        field["I"] = (field["H"] + 11) % 12 + 1
        fraction = (dt.microsecond.fillna(0).astype(np.int64) * 1000 + dt.nanosecond.fillna(0).astype(np.int64))
        widths = {"Y": 4, "y": 2, "m": 2, "d": 2, "H": 2, "I": 2, "M": 2, "S": 2}
        words = {"b": np.array([m[:3] for m in MONTH_NAMES], dtype=object),
                 "B": np.array(MONTH_NAMES, dtype=object), "p": np.array(["AM", "PM"], dtype=object)}
        index = {"b": field["m"] - 1, "B": field["m"] - 1, "p": (field["H"] >= 12).astype(np.int64)}
        pieces: list[np.ndarray] = []
        for kind, value in fmt.steps:
            if kind == "skip":
                pieces.append(np.full(len(stamps), value, dtype=object))
            elif kind == "name":
                pieces.append(words[value][index[value]])
            else:
                for d in value:
                    if d == "f":
                        pieces.append(np.char.zfill(fraction.to_numpy().astype(str), 9).astype(object))
                    elif d == "z":
                        pieces.append(np.full(len(stamps), "+0000", dtype=object))
                    else:
                        pieces.append(np.char.zfill(field[d].astype(str), widths[d]).astype(object))
        text = functools.reduce(np.add, pieces) if pieces else np.full(len(stamps), "", dtype=object)
    text = np.asarray(text, dtype=object)
    text[missing] = None
    return text

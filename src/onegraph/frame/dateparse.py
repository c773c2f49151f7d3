"""Text -> datetime inside the graph, as ``pandas.to_datetime(..., utc=True, errors="coerce")`` parses it.

ONNX has no date operator, so a date string is validated with ``RegexFullMatch`` against a grammar, then
its fields are read with ``StringSplit`` and ``Cast`` to int64 (see :mod:`onegraph.frame.strings`), range
checked (month 1-12, day within its month, leap years, hour < 24, ...) and assembled into nanoseconds
since the epoch, UTC. A string that does not match, or holds an impossible date, becomes NaT — never a
wrong date.

Two grammars:

* ``format=None``: ISO 8601 as pandas' ``format="ISO8601"`` parser reads it. Supported: ``YYYY``,
  ``YYYY-MM``, ``YYYY-MM-DD``, ``YYYYMMDD`` (date separators ``- . / \\``, one- or two-digit month and
  day after a separator), then ``T`` or a space and ``hh``, ``hh:mm``, ``hh:mm:ss`` or ``hhmmss`` with an
  optional fraction of up to 18 digits (truncated to nanoseconds), optional whitespace and an offset ``Z``,
  ``+hh``, ``+hhmm``, ``+hh:mm``, then optional whitespace. Not supported (NaT in the graph *and* in
  ``transform``): leading whitespace, a space as the date separator, negative years.
* a ``strftime`` format built from ``%Y %y %m %d %H %I %M %S %f %z %b %B %p %%`` and literal text, read as pandas'
  ``strptime`` reader does (pandas tries its ISO reader first for ISO-like formats such as ``"%Y-%m-%d"``
  and falls back to ``strptime``; the strings both accept read the same): fields separated by literal text
  may be unpadded (``1/6/2023`` for ``%d/%m/%Y``); fields written next to each other (``%Y%m%d``) must be
  zero-padded; seconds 60 and 61 carry over into the next minute as pandas does; a space in the format
  matches one space. Month names (``%b`` Jan, ``%B`` January) and ``%p`` (AM/PM, with ``%I``: 12 AM is
  hour 0) are the English words, in any case, as pandas reads them under the C or an English locale; a
  word must be followed by literal text (not starting with a letter) or end the format, and only ``%p``
  may follow a numeric field directly (``3:45PM``). Not supported: space-padded days (``" 5"``), offsets
  with seconds, weekday names (``%a``, ``%A``) and the locale's own formats (``%c``, ``%x``: refused).

``transform`` applies the same grammar (Python ``re``, identical pattern) before calling pandas, so the
graph and the DataFrame side agree on every string; values outside the nanosecond range
(1677-09-21 .. 2262-04-11) are NaT on both sides.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd

from onegraph.contract.dates import (
    DATE_SEPARATORS,
    ISO_PATTERN,
    NAME_FIELDS,
    STRPTIME_FIELDS,
    TIME_STOPS,
    DateFormat,
    date_format,
)
from onegraph.emit import INT64_MIN
from onegraph.frame.calendar import days_from_civil, days_in_month
from onegraph.frame.strings import (
    concat,
    digit_count,
    full_match,
    leading_int,
    part,
    split,
    text,
)
from onegraph.frame.tensors import Val, all_of, lookup, maximum, minimum, scalar, where

__all__ = ["ISO_PATTERN", "DateFormat", "assemble_ns", "date_format", "emit_parse", "parse_pandas"]

# -- the pandas side --------------------------------------------------------------------------------
_NS_MIN, _NS_MAX = pd.Timestamp.min.tz_localize("UTC"), pd.Timestamp.max.tz_localize("UTC")


def parse_pandas(values: np.ndarray, fmt: DateFormat) -> np.ndarray:
    """``pd.to_datetime(values, format=..., utc=True, errors="coerce")`` on the strings matching the
    grammar, as int64 UTC nanoseconds (NaT = INT64_MIN). ``values``: object array, missing as None/NaN."""
    ok = fmt.matches(values)
    text = pd.Series(np.where(ok, values, None), dtype=object)
    parsed = pd.to_datetime(text, format=fmt.format or "ISO8601", utc=True, errors="coerce")
    inside = (parsed >= _NS_MIN) & (parsed <= _NS_MAX)
    ns = parsed.where(inside).dt.as_unit("ns").array.asi8
    return np.asarray(ns, dtype=np.int64)


# -- the graph side ----------------------------------------------------------------------------------
_POW10 = np.array([10**k for k in range(19)], dtype=np.int64)
_FRACTION_UP = np.array([10 ** max(9 - k, 0) for k in range(19)], dtype=np.int64)
_FRACTION_DOWN = np.array([10 ** max(k - 9, 0) for k in range(19)], dtype=np.int64)
_S_MIN, _S_MAX = -9_223_372_037, 9_223_372_036  # whole seconds around the int64 nanosecond range
_F_MIN, _F_MAX = 145_224_193, 854_775_807


@dataclasses.dataclass
class _Fields:
    year: Val
    month: Val
    day: Val
    hour: Val
    minute: Val
    second: Val
    fraction_ns: Val
    offset_s: Val
    tz_hour: Val
    tz_minute: Val


def emit_parse(x: Val, fmt: DateFormat) -> Val:
    """int64 UTC nanoseconds for the strings ``x`` (``[N]``), INT64_MIN where not a valid date."""
    valid = full_match(x, fmt.pattern)
    fields = _iso_fields(x, valid) if fmt.iso else _strptime_fields(x, valid, fmt)
    month = minimum(maximum(fields.month, 1), 12)
    # pandas' ISO parser refuses second 60; its strptime reader takes 60 and 61 and carries them over
    ok = all_of(valid, fields.month >= 1, fields.month <= 12, fields.day >= 1,
                fields.day <= days_in_month(fields.year, month), fields.hour < 24, fields.minute < 60,
                fields.second < (60 if fmt.iso else 62), fields.tz_hour < 24, fields.tz_minute < 60)
    days = days_from_civil(fields.year, month, fields.day)
    seconds = days * 86400 + fields.hour * 3600 + fields.minute * 60 + fields.second - fields.offset_s
    return assemble_ns(seconds, fields.fraction_ns, ok)


def assemble_ns(seconds: Val, fraction: Val, ok: Val) -> Val:
    """``seconds * 1e9 + fraction`` where ``ok`` and inside int64 nanoseconds, else INT64_MIN (NaT)."""
    inside = (((seconds > _S_MIN) | ((seconds == _S_MIN) & (fraction >= _F_MIN)))
              & ((seconds < _S_MAX) | ((seconds == _S_MAX) & (fraction <= _F_MAX))))
    ok = ok & inside
    s = where(ok, seconds, 0)
    f = where(ok, fraction, 0)
    # the lowest representable second needs the fraction borrowed first, or s * 1e9 overflows
    ns = where(s < 0, (s + 1) * 1_000_000_000 + (f - 1_000_000_000), s * 1_000_000_000 + f)
    return where(ok, ns, INT64_MIN)


def _fraction_ns(digits: Val, ok: Val) -> Val:
    """Nanoseconds of a fraction written as the digits a string starts with (0-18 digits, truncated)."""
    # the "1" keeps leading zeros countable; an offset or whitespace may follow the digits
    value = leading_int(concat(text(digits, "1"), digits), ok, "Z+-:", whitespace=True)
    n = minimum(digit_count(value) - 1, 18)
    scaled = (value - lookup(_POW10, n)) * lookup(_FRACTION_UP, n) // lookup(_FRACTION_DOWN, n)
    return where(ok, scaled, 0)


def _offset(tz: Val, ok: Val, negative: Val) -> tuple[Val, Val, Val]:
    """(offset seconds, hours, minutes) of an offset ``hh``, ``hhmm``, ``hh:mm``... without its sign."""
    colon = full_match(tz, r"(?s)[0-9]{1,2}:.*")
    run = leading_int(tz, ok, ":", whitespace=True)
    after_colon = leading_int(part(split(tz, ":", 1)[0], 1), ok & colon, whitespace=True)
    four = full_match(tz, r"(?s)[0-9]{4}.*")
    three = full_match(tz, r"(?s)[0-9]{3}.*")
    hours = where(colon, run, where(four, run // 100, where(three, run // 10, run)))
    minutes = where(colon, after_colon, where(four, run % 100, where(three, run % 10, 0)))
    seconds = where(ok, (hours * 3600 + minutes * 60) * where(negative, -1, 1), 0)
    return seconds, where(ok, hours, 0), where(ok, minutes, 0)


def _iso_fields(s: Val, valid: Val) -> _Fields:
    lead = leading_int(s, valid, "-./\\T ")  # YYYY or YYYYMMDD, then a date separator or the time
    packed = full_match(s, r"(?s)[0-9]{8}.*")
    month_text, day_text = None, None
    has_sep = None
    for c in DATE_SEPARATORS:
        has = full_match(s, rf"(?s)[0-9]{{4}}{re.escape(c)}.*")
        parts, _ = split(s, c)
        month_text = part(parts, 1) if month_text is None else where(has, part(parts, 1), month_text)
        day_text = part(parts, 2) if day_text is None else where(has, part(parts, 2), day_text)
        has_sep = has if has_sep is None else has_sep | has
    has_day = full_match(s, r"(?s)[0-9]{4}[-./\\][0-9]{1,2}[-./\\].*")
    year = where(packed, lead // 10000, lead)
    month = where(packed, (lead // 100) % 100, where(has_sep, leading_int(month_text, valid & has_sep), 1))
    day = where(packed, lead % 100, where(has_day, leading_int(day_text, valid & has_day, "T "), 1))

    has_time = valid & full_match(s, r"(?s)[^T ]+[T ].*")
    with_t = full_match(s, r"(?s)[^T ]+T.*")
    time = where(with_t, part(split(s, "T", 1)[0], 1), part(split(s, " ", 1)[0], 1))
    colon = full_match(time, r"(?s)[0-9]{1,2}:.*")
    run = leading_int(time, has_time, TIME_STOPS, whitespace=True)  # hh, or hh / hhmm / hhmmss when packed
    six = full_match(time, r"(?s)[0-9]{6}.*")
    four = full_match(time, r"(?s)[0-9]{4}.*")
    pieces, _ = split(time, ":")
    with_seconds = full_match(time, r"(?s)[0-9]{1,2}:[0-9]{1,2}:.*")
    hour = where(colon, run, where(six, run // 10000, where(four, run // 100, run)))
    minute = where(colon, leading_int(part(pieces, 1), has_time & colon, TIME_STOPS, whitespace=True),
                   where(six, (run // 100) % 100, where(four, run % 100, 0)))
    second = where(colon, leading_int(part(pieces, 2), has_time & with_seconds, TIME_STOPS, whitespace=True),
                   where(six, run % 100, 0))
    has_fraction = has_time & full_match(time, r"(?s)(?:[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}|[0-9]{6})\..*")
    fraction = _fraction_ns(part(split(time, ".", 1)[0], 1), has_fraction)

    plus = full_match(time, r"(?s)[^+]*\+.*")
    minus = full_match(time, r"(?s)[^-]*-.*")
    tz = where(plus, part(split(time, "+", 1)[0], 1), part(split(time, "-", 1)[0], 1))
    offset, tz_hour, tz_minute = _offset(tz, has_time & (plus | minus), minus)
    return _Fields(year, month, day, hour, minute, second, fraction, offset, tz_hour, tz_minute)


def _strptime_fields(s: Val, valid: Val, fmt: DateFormat) -> _Fields:
    values: dict[str, Val] = {}
    fraction = offset = tz_hour = tz_minute = None
    rest = s
    for kind, value in fmt.steps:
        if kind == "skip":
            rest = part(split(rest, value, 1)[0], 1)
            continue
        if kind == "name":
            # the pattern has checked the word: its first letters tell it (jan..dec differ in three)
            words = NAME_FIELDS[value]
            prefix = "[0-9]*" if value == "p" else ""  # 3:45PM: the text still starts with the minutes
            number = scalar(s.g, 0)
            for k, word in enumerate(words):
                number = where(full_match(rest, f"(?is){prefix}{word[:3].lower()}.*"), k, number)
            values[value] = number
            continue
        if value == ("f",):
            fraction = _fraction_ns(rest, valid)
            continue
        if value == ("z",):
            # the offset is the text after the first sign: fields before it are digits
            minus = full_match(rest, r"(?s)[^+-]*-.*")
            plus = full_match(rest, r"(?s)[^+-]*\+.*")
            tz = where(minus, part(split(rest, "-", 1)[0], 1), part(split(rest, "+", 1)[0], 1))
            offset, tz_hour, tz_minute = _offset(tz, valid & (plus | minus), minus)
            continue
        run = leading_int(rest, valid, fmt.stops, whitespace=True)
        widths = [STRPTIME_FIELDS[d][2] for d in value] if len(value) > 1 else [None]
        for i, d in enumerate(value):
            if widths[i] is None:
                values[d] = run
            else:
                below = int(sum(widths[i + 1:]))
                values[d] = (run // int(10**below)) % int(10 ** widths[i])
    int_zero = scalar(s.g, 0)
    year = values.get("Y")
    if year is None and "y" in values:
        year = values["y"] + where(values["y"] < 69, 2000, 1900)
    if year is None:
        year = int_zero + 1900
    if "B" in values or "b" in values:
        values["m"] = values.get("B", values.get("b")) + 1
    if "I" in values:  # strptime: 12 AM is hour 0, 12 PM hour 12; without %p the hour is AM
        values["H"] = values["I"] % 12 + (values["p"] * 12 if "p" in values else 0)
    pick = {k: values.get(k) for k in "mdHMS"}
    return _Fields(
        year=year,
        month=pick["m"] if pick["m"] is not None else int_zero + 1,
        day=pick["d"] if pick["d"] is not None else int_zero + 1,
        hour=pick["H"] if pick["H"] is not None else int_zero,
        minute=pick["M"] if pick["M"] is not None else int_zero,
        second=pick["S"] if pick["S"] is not None else int_zero,
        fraction_ns=fraction if fraction is not None else int_zero,
        offset_s=offset if offset is not None else int_zero,
        tz_hour=tz_hour if tz_hour is not None else int_zero,
        tz_minute=tz_minute if tz_minute is not None else int_zero,
    )

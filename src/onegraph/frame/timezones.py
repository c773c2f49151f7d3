"""UTC offsets of a time zone as a table the graph looks up: local time = UTC + offset(UTC instant).

ONNX has no time-zone operator, so a datetime column's zone travels as data: the instants (UTC
nanoseconds) at which the zone's offset changes between two years, and the offset in force before,
between and after them. The graph counts the transitions at or before each instant (one broadcast
comparison and a sum) and gathers the offset, so parts come out in the column's own zone exactly as
pandas computes them (``Series.dt.tz_convert(tz).dt.hour``), daylight saving time included.

The transitions are found with pandas itself (the same tz database pandas uses for the column): the
offset is sampled every hour of the years covered, and each change is located to the second by
bisection. Zones change offset at most once within an hour; two changes inside one hour would be missed.

Instants outside the covered years are not guessed: the graph flags them (see
:data:`CHECK_OUT_OF_RANGE`) and scoring raises an error naming the column.
"""

from __future__ import annotations

import dataclasses
import datetime

import numpy as np
import pandas as pd

from onegraph.errors import ExportError
from onegraph.frame.tensors import Val, count_at_most, lookup

__all__ = ["NS", "OffsetTable", "offset_table", "local_time", "covered"]

NS = 1_000_000_000


@dataclasses.dataclass(frozen=True)
class OffsetTable:
    """Offsets of ``tz`` between ``start`` and ``end`` (UTC nanoseconds, ``end`` excluded).

    ``offsets[k]`` is in force from ``transitions[k - 1]`` (or ``start``) until ``transitions[k]``
    (or ``end``); all values are int64 nanoseconds.
    """

    tz: str
    start: int
    end: int
    transitions: np.ndarray
    offsets: np.ndarray
    #: the zone is a fixed offset (UTC, "UTC+05:30"): valid at every instant, not only within the years
    fixed_zone: bool = False

    @property
    def fixed(self) -> bool:
        return len(self.transitions) == 0


def _offset_ns(instants: pd.DatetimeIndex, tz: str) -> np.ndarray:
    local = instants.tz_convert(tz).tz_localize(None)
    return (local.as_unit("ns").asi8 - instants.tz_localize(None).as_unit("ns").asi8).astype(np.int64)


def offset_table(tz: str, first_year: int, last_year: int) -> OffsetTable:
    """The offsets of ``tz`` from ``first_year``-01-01 to the end of ``last_year`` (UTC).

    Raises
    ------
    ExportError
        when pandas does not know the zone, or the years leave the nanosecond range (1677-2262).
    """
    first_year, last_year = max(int(first_year), 1677), min(int(last_year), 2262)
    if first_year > last_year:
        raise ExportError(f"no year of time zone {tz!r} falls in the nanosecond range (1677-2262)")
    # the years, cut to the nanosecond range (pandas cannot convert instants whose wall time leaves it)
    start = max(pd.Timestamp(f"{first_year}-01-01", tz="UTC"), pd.Timestamp("1677-09-22", tz="UTC"))
    end = min(pd.Timestamp(f"{last_year + 1}-01-01", tz="UTC"), pd.Timestamp("2262-04-10", tz="UTC"))
    try:
        grid = pd.date_range(start, end, freq="h", inclusive="left", unit="ns")
        offsets = _offset_ns(grid, tz)
    except Exception as exc:  # unknown zone names raise several exception types
        raise ExportError(f"time zone {tz!r} is unknown to pandas: {exc}",
                          hint="use an IANA zone name such as 'Europe/Paris'") from None
    changes = np.flatnonzero(np.diff(offsets)) + 1
    # each change happened in (grid[i-1], grid[i]]: bisect all of them at once, to the second
    lo = grid.asi8[changes - 1] // NS
    hi = grid.asi8[changes] // NS
    before = offsets[changes - 1]
    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        same = _offset_ns(pd.DatetimeIndex(mid * NS, tz="UTC"), tz) == before
        lo = np.where(same, mid, lo)
        hi = np.where(same, hi, mid)
    transitions = hi * NS
    fixed_zone = isinstance(pd.Timestamp(0, tz=tz).tzinfo, datetime.timezone)
    return OffsetTable(tz=tz, start=int(start.value), end=int(end.value),
                       transitions=np.asarray(transitions, dtype=np.int64),
                       offsets=np.concatenate([offsets[:1], offsets[changes]]).astype(np.int64),
                       fixed_zone=fixed_zone)


def local_time(utc_ns: Val, table: OffsetTable) -> Val:
    """Wall-clock nanoseconds in the table's zone for UTC nanoseconds ``utc_ns`` (int64 ``[N]``)."""
    if table.fixed:
        offset = int(table.offsets[0])
        return utc_ns + offset if offset else utc_ns
    return utc_ns + lookup(table.offsets, count_at_most(utc_ns, table.transitions))


def covered(utc_ns: Val, table: OffsetTable) -> Val:
    """True where the instant lies within the years the table covers."""
    if table.fixed_zone:
        return utc_ns == utc_ns  # every instant: a fixed offset holds forever
    return (utc_ns >= table.start) & (utc_ns < table.end)

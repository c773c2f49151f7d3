"""Proleptic Gregorian calendar arithmetic on int64 tensors, as pandas' ``dt`` accessor computes it.

Dates are counted in days since 1970-01-01 (negative before). The conversions between a day count and
(year, month, day) are Howard Hinnant's ``civil_from_days`` / ``days_from_civil`` ("chrono-Compatible
Low-Level Date Algorithms", 2013), exact for every int64 day count that a nanosecond timestamp can reach;
they use floor division only, which :class:`~onegraph.frame.tensors.Val` builds from standard ONNX ops.

:class:`Calendar` derives every part pandas exposes (``year`` ... ``nanosecond``, ``dayofweek`` with
Monday = 0, ``dayofyear``, ``days_in_month``, ``is_month_start`` ...) plus the ISO-8601 week and week-year
(``Series.dt.isocalendar()``) from local wall-clock nanoseconds, computing each at most once.
"""

from __future__ import annotations

import functools

import numpy as np

from onegraph.frame.tensors import Val, lookup, where

__all__ = ["NS_PER_DAY", "NS_PER_HOUR", "NS_PER_MINUTE", "NS_PER_SECOND", "is_leap", "days_in_month",
           "days_from_civil", "civil_from_days", "Calendar"]

NS_PER_DAY = 86_400_000_000_000
NS_PER_HOUR = 3_600_000_000_000
NS_PER_MINUTE = 60_000_000_000
NS_PER_SECOND = 1_000_000_000

#: days in each month of a common year (index 0 = January)
_DAYS_IN_MONTH = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)


def is_leap(year: Val) -> Val:
    """Gregorian leap year: divisible by 4, except centuries not divisible by 400."""
    return ((year % 4) == 0) & (((year % 100) != 0) | ((year % 400) == 0))


def days_in_month(year: Val, month: Val) -> Val:
    """28-31 for ``month`` 1-12 of ``year``."""
    base = lookup(_DAYS_IN_MONTH, month - 1)
    return base + where((month == 2) & is_leap(year), 1, 0)


def days_from_civil(year: Val, month: Val, day: Val) -> Val:
    """Days since 1970-01-01 of the date (year, month 1-12, day 1-31)."""
    y = year - where(month <= 2, 1, 0)
    era = y // 400
    yoe = y - era * 400  # [0, 399]
    mp = where(month > 2, month - 3, month + 9)  # March = 0
    doy = (mp * 153 + 2) // 5 + day - 1  # [0, 365]
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy  # [0, 146096]
    return era * 146097 + doe - 719468


def civil_from_days(days: Val) -> tuple[Val, Val, Val]:
    """(year, month 1-12, day 1-31) of a day count since 1970-01-01."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097  # [0, 146096]
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365  # [0, 399]
    doy = doe - (yoe * 365 + yoe // 4 - yoe // 100)  # [0, 365]
    mp = (doy * 5 + 2) // 153  # [0, 11], March = 0
    day = doy - (mp * 153 + 2) // 5 + 1
    month = where(mp < 10, mp + 3, mp - 9)
    year = yoe + era * 400 + where(month <= 2, 1, 0)
    return year, month, day


class Calendar:
    """Date and time parts of local wall-clock nanoseconds (int64, NaT already replaced by any value).

    Every part is an int64 :class:`Val` (bools for the ``is_*`` flags); callers mask missing rows.
    """

    def __init__(self, local_ns: Val) -> None:
        self.ns = local_ns

    @functools.cached_property
    def days(self) -> Val:
        return self.ns // NS_PER_DAY

    @functools.cached_property
    def time_of_day(self) -> Val:
        return self.ns - self.days * NS_PER_DAY

    @functools.cached_property
    def _ymd(self) -> tuple[Val, Val, Val]:
        return civil_from_days(self.days)

    @property
    def year(self) -> Val:
        return self._ymd[0]

    @property
    def month(self) -> Val:
        return self._ymd[1]

    @property
    def day(self) -> Val:
        return self._ymd[2]

    @functools.cached_property
    def quarter(self) -> Val:
        return (self.month - 1) // 3 + 1

    @functools.cached_property
    def dayofweek(self) -> Val:
        # 1970-01-01 was a Thursday (Monday = 0, as pandas)
        return (self.days + 3) % 7

    @functools.cached_property
    def jan1(self) -> Val:
        return days_from_civil(self.year, self.month.lift(1), self.month.lift(1))

    @functools.cached_property
    def dayofyear(self) -> Val:
        return self.days - self.jan1 + 1

    @functools.cached_property
    def days_in_month(self) -> Val:
        return days_in_month(self.year, self.month)

    @functools.cached_property
    def _iso(self) -> tuple[Val, Val]:
        # ISO 8601: a week belongs to the year holding its Thursday; week 1 holds the year's first Thursday
        thursday = self.days - self.dayofweek + 3
        iso_year, _, _ = civil_from_days(thursday)
        one = iso_year.lift(1)
        first = days_from_civil(iso_year, one, one)
        return iso_year, (thursday - first) // 7 + 1

    @property
    def isoyear(self) -> Val:
        return self._iso[0]

    @property
    def isoweek(self) -> Val:
        return self._iso[1]

    @functools.cached_property
    def hour(self) -> Val:
        return self.time_of_day // NS_PER_HOUR

    @functools.cached_property
    def minute(self) -> Val:
        return (self.time_of_day % NS_PER_HOUR) // NS_PER_MINUTE

    @functools.cached_property
    def second(self) -> Val:
        return (self.time_of_day % NS_PER_MINUTE) // NS_PER_SECOND

    @functools.cached_property
    def microsecond(self) -> Val:
        return (self.time_of_day % NS_PER_SECOND) // 1000

    @functools.cached_property
    def nanosecond(self) -> Val:
        return self.time_of_day % 1000

    @property
    def is_leap_year(self) -> Val:
        return is_leap(self.year)

    @property
    def is_month_start(self) -> Val:
        return self.day == 1

    @property
    def is_month_end(self) -> Val:
        return self.day == self.days_in_month

    @property
    def is_quarter_start(self) -> Val:
        return (self.day == 1) & ((self.month % 3) == 1)

    @property
    def is_quarter_end(self) -> Val:
        return self.is_month_end & ((self.month % 3) == 0)

    @property
    def is_year_start(self) -> Val:
        return (self.day == 1) & (self.month == 1)

    @property
    def is_year_end(self) -> Val:
        return (self.day == 31) & (self.month == 12)

    @property
    def is_weekend(self) -> Val:
        return self.dayofweek >= 5

"""Per-row time features for the example: hour of day and day of week of a datetime column.

A small stand-in until ``onegraph.frame.DateParts`` is available: to switch, replace ``TimeOfDay()`` in
``pipeline.py`` by ``DateParts(["hour", "dayofweek"])`` — same columns, same values. Like every onegraph
transformer it keeps its two faces side by side: pandas' ``dt.hour`` / ``dt.day_of_week`` (Monday = 0), and
ONNX nodes on the int64 nanoseconds the graph receives (integer division by an hour / a day; 1970-01-01
was a Thursday, day 3). Times before 1970 are not supported (ONNX integer division truncates toward zero);
missing times (NaT) give NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from onegraph.emit import BOOL, DOUBLE, INT64, INT64_MIN, Col, GraphBuilder
from onegraph.frame.transformers.base import FrameTransformer

HOUR_NS = 3_600 * 10**9
DAY_NS = 24 * HOUR_NS


class TimeOfDay(FrameTransformer):
    """``<column>_hour`` (0-23) and ``<column>_dayofweek`` (Monday 0 - Sunday 6) as float64, per datetime
    column (naive datetimes, read as wall time)."""

    accepts = ("datetime",)

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        pass

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = {}
        for name in self.feature_names_in_:
            ts = pd.to_datetime(frame[name])
            out[f"{name}_hour"] = ts.dt.hour.astype("float64")
            out[f"{name}_dayofweek"] = ts.dt.day_of_week.astype("float64")
        return pd.DataFrame(out, index=frame.index)

    def _names_out(self) -> list[str]:
        return [f"{n}_{part}" for n in self.feature_names_in_ for part in ("hour", "dayofweek")]

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        out = []
        for col in cols:
            ns = g.vector(col)
            missing = g.op("Equal", ns, g.const(np.int64(INT64_MIN), "nat"), dtype=BOOL)
            hour = g.op("Mod", g.op("Div", ns, g.const(np.int64(HOUR_NS), "hour_ns"), dtype=INT64),
                        g.const(np.int64(24), "hours"), dtype=INT64)
            days = g.op("Div", ns, g.const(np.int64(DAY_NS), "day_ns"), dtype=INT64)
            dow = g.op("Mod", g.op("Add", days, g.const(np.int64(3), "thursday"), dtype=INT64),
                       g.const(np.int64(7), "week"), dtype=INT64)
            for part, value in (("hour", hour), ("dayofweek", dow)):
                as_double = g.op("Cast", value, to=DOUBLE, dtype=DOUBLE)
                value = g.op("Where", missing, g.const(np.float64(np.nan), "nan"), as_double, dtype=DOUBLE)
                out.append(Col(f"{col.name}_{part}", "float", value, DOUBLE))
        return out

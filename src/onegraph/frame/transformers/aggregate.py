"""Group aggregates learned in fit and looked up at scoring time (IBM's ``Aggregator``).

``GroupAggregate(by="merchant", agg={"amount": "mean"})`` learns the mean amount per merchant on the
training rows; every row then gets the value of its own group, or a default for a group never seen.
In the graph each key column is looked up (``ai.onnx.ml.LabelEncoder``) to its position among the
keys seen in fit; several keys combine into one int64 code (mixed radix), which a second lookup maps
to the aggregate.
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import StrOptions

from onegraph.emit import DOUBLE, Col, GraphBuilder, to_tensor
from onegraph.errors import ColumnTypeError, MissingColumnError
from onegraph.frame.tensors import any_of, where
from onegraph.frame.transformers.base import FrameTransformer, category_values, numbers
from onegraph.frame.transformers.categorical import encoder_keys, lookup_index
from onegraph.frame.transformers.constraints import Satisfies, names

__all__ = ["AGGREGATIONS", "GroupAggregate"]

#: pandas' aggregation names GroupAggregate takes (``SeriesGroupBy.agg``)
AGGREGATIONS = ("mean", "median", "sum", "min", "max", "std", "var", "count", "size", "nunique", "first", "last")


def _overall(values: pd.Series, func: str) -> float:
    """The aggregate of all the rows, as ``groupby(...).agg(func)`` computes it for one group: ``first`` /
    ``last`` are the first / last non-missing values (``Series.agg`` does not take these names)."""
    if func == "size":
        return float(len(values))
    if func in ("first", "last"):
        present = values.dropna()
        return float(present.iloc[0 if func == "first" else -1]) if len(present) else np.nan
    return values.agg(func)


# not ColumnWise: each output comes from its value column and the key columns together
class GroupAggregate(FrameTransformer):
    """Per-group aggregates of columns, learned in fit: ``frame.groupby(by, dropna=False)[col].agg(func)``.

    Parameters
    ----------
    by:
        The key column, or a list of them (text, integer, bool or float columns; missing keys form their
        own group).
    agg:
        ``{column: func or [funcs]}`` with pandas' aggregation names: ``mean``, ``median``, ``sum``,
        ``min``, ``max``, ``std``, ``var``, ``count``, ``size``, ``nunique``, ``first``, ``last``.
    default:
        Value for groups never seen in fit: ``"overall"`` (default: the same aggregate over all the rows
        seen in fit), or a number (``np.nan`` included).

    The transformer must receive the key and value columns; scoring needs only the keys. Output float64
    columns ``<column>_<func>_by_<key>[_<key>...]``.
    """

    _parameter_constraints = {
        "by": [str, names(empty=False)],
        "agg": [Satisfies("a non-empty dict {column: aggregation name or list of them}, e.g. {'amount': 'mean'}",
                          lambda agg: isinstance(agg, Mapping) and len(agg) > 0)],
        "default": [StrOptions({"overall"}), Real],
    }

    def __init__(self, by: str | list[str], agg: dict[str, Any], *, default: Any = "overall") -> None:
        self.by = by
        self.agg = agg
        self.default = default

    def _keys_list(self) -> list[str]:
        return [self.by] if isinstance(self.by, str) else list(self.by)

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        names = list(self.feature_names_in_)
        keys = self._keys_list()
        self._check_aggregations()
        for c in keys + list(self.agg):
            if c not in names:
                raise MissingColumnError(c, names)
        for c in keys:
            if self._spec(c).kind not in ("string", "int", "bool", "float"):
                raise ColumnTypeError(c, f"{self._spec(c).kind} columns cannot be group keys")
        key_frame = self._key_frame(frame)
        self.tables_: dict[str, pd.Series] = {}
        self.defaults_: dict[str, float] = {}
        self.key_values_ = [pd.unique(key_frame[k].to_numpy(object)) for k in keys]
        for col, funcs in self.agg.items():
            values = pd.Series(numbers(self._spec(col), frame[col]), index=key_frame.index)
            grouped = values.groupby([key_frame[k] for k in keys], dropna=False)
            for func in ([funcs] if isinstance(funcs, str) else list(funcs)):
                name = self._name(col, func)
                table = grouped.agg(func).astype(np.float64)
                self.tables_[name] = table
                overall = _overall(values, func)
                self.defaults_[name] = float(overall) if isinstance(self.default, str) else float(self.default)

    def _check_aggregations(self) -> None:
        """Each entry of ``agg``, named in the error (the declaration checks that ``agg`` is a dict)."""
        for col, funcs in self.agg.items():
            listed = [funcs] if isinstance(funcs, str) else funcs
            if not isinstance(listed, (list, tuple)) or not listed or \
                    any(not isinstance(f, str) or f not in AGGREGATIONS for f in listed):
                raise self._refuse("agg", f"holds agg[{col!r}]={funcs!r}, not an aggregation name or a list of them",
                                   hint=f"use {', '.join(AGGREGATIONS)}")

    def _name(self, col: str, func: str) -> str:
        return f"{col}_{func}_by_{'_'.join(self._keys_list())}"

    def _key_frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        # numpy arrays, not Series: nothing may be aligned on the frame's index (it may have gaps or repeats)
        return pd.DataFrame({k: np.asarray(category_values(self._spec(k), frame[k]), dtype=object)
                             for k in self._keys_list()}, index=frame.index)

    def _names_out(self) -> list[str]:
        return list(self.tables_)

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        keys = self._key_frame(frame)
        query = (pd.Index(keys.iloc[:, 0], dtype=object) if keys.shape[1] == 1
                 else pd.MultiIndex.from_frame(keys))
        out = {}
        for name, table in self.tables_.items():
            found = table.index.get_indexer(query)
            out[name] = np.where(found >= 0, table.to_numpy(np.float64)[found], self.defaults_[name])
        return pd.DataFrame(out, index=frame.index)

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        by_name = {c.name: c for c in cols}
        keys = self._keys_list()
        codes, missing = None, []
        sizes = [len(v) for v in self.key_values_]
        for k, seen, size in zip(keys, self.key_values_, sizes):
            _, key_table = encoder_keys(by_name[k], np.asarray(seen, dtype=object))
            index = lookup_index(g, by_name[k], key_table)
            missing.append(index < 0)
            codes = index if codes is None else codes * size + index
        unseen = any_of(*missing)
        code = where(unseen, -1, codes)
        out = []
        for name, table in self.tables_.items():
            group_codes = self._codes(table, sizes)
            value = g.op("LabelEncoder", code.value, domain="ai.onnx.ml",
                         keys_tensor=to_tensor(group_codes), values_tensor=to_tensor(table.to_numpy(np.float64)),
                         default_tensor=to_tensor(np.array([self.defaults_[name]], np.float64)), dtype=DOUBLE)
            out.append(Col(name, "float", value, DOUBLE))
        return out

    def _codes(self, table: pd.Series, sizes: list[int]) -> np.ndarray:
        """The int64 code of each group of ``table``: positions of its keys, combined in mixed radix."""
        index = table.index if isinstance(table.index, pd.MultiIndex) else pd.MultiIndex.from_arrays([table.index])
        code = np.zeros(len(table), dtype=np.int64)
        for level, (seen, size) in enumerate(zip(self.key_values_, sizes)):
            position = pd.Index(seen, dtype=object).get_indexer(index.get_level_values(level).astype(object))
            code = code * size + position
        return code

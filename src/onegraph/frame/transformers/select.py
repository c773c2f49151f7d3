"""Column selection by name or by kind."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from onegraph.contract.columns import KINDS
from onegraph.emit import Col, GraphBuilder
from onegraph.errors import MissingColumnError
from onegraph.frame.transformers.base import FrameTransformer
from onegraph.frame.transformers.constraints import Satisfies, names

__all__ = ["ColumnSelector"]


# not ColumnWise: it chooses columns, and computes none
class ColumnSelector(FrameTransformer):
    """Keep some columns, in the order given, unchanged.

    Parameters
    ----------
    columns:
        Names to keep (in this order). None: every column that passes the other filters.
    kinds:
        Keep only columns of these kinds (``"float"``, ``"int"``, ``"bool"``, ``"string"``, ``"datetime"``,
        ``"timedelta"``; ``"number"`` means the first three).
    pattern:
        Keep only columns whose name matches this regular expression (``re.search``).
    drop:
        Invert the selection: keep every column *except* those the other parameters select (IBM's
        ``ColumnSelector(drop=True)``).

    Raises :class:`~onegraph.errors.MissingColumnError` in fit when a named column is absent.
    """

    _parameter_constraints = {
        "columns": [names(), None],
        "kinds": [names((*KINDS, "number")), None],
        "pattern": [Satisfies("a regular expression (str)", lambda p: isinstance(p, str) and re.compile(p)), None],
        "drop": ["boolean"],
    }

    def __init__(self, columns: list[str] | None = None, *, kinds: list[str] | None = None,
                 pattern: str | None = None, drop: bool = False) -> None:
        self.columns = columns
        self.kinds = kinds
        self.pattern = pattern
        self.drop = drop

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        names = list(self.feature_names_in_)
        if self.columns is not None:
            for c in self.columns:
                if c not in names:
                    raise MissingColumnError(c, names)
            names = list(self.columns)
        kinds = None if self.kinds is None else set(self.kinds)
        if kinds is not None and "number" in kinds:
            kinds |= {"float", "int", "bool"}
        self.selected_ = [
            n for n in names
            if (kinds is None or self._spec(n).kind in kinds)
            and (self.pattern is None or re.search(self.pattern, n))
        ]
        if self.drop:
            chosen = set(self.selected_)
            self.selected_ = [n for n in self.feature_names_in_ if n not in chosen]

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        return frame[self.selected_].copy()

    def _names_out(self) -> list[str]:
        return list(self.selected_)

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        by_name = {c.name: c for c in cols}
        return [by_name[n] for n in self.selected_]

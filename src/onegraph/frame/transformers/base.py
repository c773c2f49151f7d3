"""What every onegraph frame transformer shares: DataFrame in, DataFrame out, scikit-learn's surface.

A :class:`FrameTransformer` is a scikit-learn transformer (``fit`` / ``transform`` /
``get_feature_names_out`` / ``set_output``; parameters set in ``__init__`` and never changed by ``fit``;
learned state ends in ``_``) that takes any table onegraph reads (pandas, polars, Arrow, dicts) with the
dtypes pandas really produces, and returns a pandas DataFrame (or polars, with
``set_output(transform="polars")``). Each subclass keeps its two faces side by side: ``_transform`` computes
the result in pandas / numpy, ``emit`` writes the ONNX nodes computing the same thing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from onegraph.contract.columns import MISSING_STRING, ColumnSpec, spec_for
from onegraph.contract.feeds import to_feed
from onegraph.contract.tables import as_pandas
from onegraph.emit import Col, GraphBuilder
from onegraph.errors import ColumnTypeError, DataError, MissingColumnError

__all__ = ["NUMERIC_KINDS", "FrameTransformer", "numbers", "texts", "category_values", "matrix_of"]

NUMERIC_KINDS = ("float", "int", "bool")


class FrameTransformer(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Base class of onegraph's DataFrame transformers.

    Subclasses implement ``_fit(frame, y)``, ``_transform(frame) -> DataFrame``, ``_names_out() -> list``
    and ``emit(builder, cols) -> cols``. ``frame`` is a pandas DataFrame holding exactly the columns seen
    in fit, in the same order.
    """

    #: kinds of column this transformer accepts (None: any)
    accepts: tuple[str, ...] | None = None

    # -- scikit-learn surface -----------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> FrameTransformer:
        """Learn from ``X`` (a table; see :mod:`onegraph.contract.tables`). Returns self."""
        frame = self._check_frame(X, reset=True)
        self._fit(frame, y)
        return self

    def transform(self, X: Any) -> Any:
        """Transform ``X``; a pandas DataFrame with the same index (polars with ``set_output``)."""
        check_is_fitted(self, "n_features_in_")
        frame = self._check_frame(X, reset=False)
        out = self._transform(frame)
        out.index = frame.index
        return self._wrap(out)

    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> Any:
        return self.fit(X, y, **fit_params).transform(X)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the output columns, as an object array."""
        check_is_fitted(self, "n_features_in_")
        return np.asarray(self._names_out(), dtype=object)

    def set_output(self, *, transform: str | None = None) -> FrameTransformer:
        """Choose the output container: ``"default"`` / ``"pandas"`` (a pandas DataFrame) or ``"polars"``."""
        if transform is None:
            return self
        if transform not in ("default", "pandas", "polars"):
            raise ValueError(f"set_output(transform={transform!r}): use 'default', 'pandas' or 'polars'")
        self._sklearn_output_config = {"transform": transform}
        return self

    def __sklearn_tags__(self):  # noqa: D105 - scikit-learn protocol
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags

    # -- to implement -------------------------------------------------------------------------
    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        raise NotImplementedError

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        raise NotImplementedError

    def _names_out(self) -> list[str]:
        raise NotImplementedError

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        """Write the nodes computing ``transform`` on ``cols``; return the output columns."""
        raise NotImplementedError

    # -- helpers for subclasses ---------------------------------------------------------------
    def _check_frame(self, X: Any, *, reset: bool) -> pd.DataFrame:
        if isinstance(X, np.ndarray) or (hasattr(X, "shape") and not hasattr(X, "columns") and
                                         not hasattr(X, "__arrow_c_stream__")):
            arr = np.asarray(X)
            if arr.ndim != 2:
                raise DataError(f"{type(self).__name__} expects a table, got an array of shape {arr.shape}")
            names = (list(self.feature_names_in_) if not reset and hasattr(self, "feature_names_in_")
                     else [f"x{i}" for i in range(arr.shape[1])])
            frame = pd.DataFrame(arr, columns=names)
        else:
            frame = as_pandas(X)
        if reset:
            self.feature_names_in_ = np.asarray([str(c) for c in frame.columns], dtype=object)
            self.n_features_in_ = frame.shape[1]
            self.input_specs_ = [spec_for(str(c), frame[c]) for c in frame.columns]
            if self.accepts is not None:
                for spec in self.input_specs_:
                    if spec.kind not in self.accepts:
                        raise ColumnTypeError(
                            spec.name, f"{type(self).__name__} takes {'/'.join(self.accepts)} columns, "
                            f"this one is {spec.kind} ({spec.source_dtype})",
                            hint="select the columns this step should see (ColumnTransformer or ColumnSelector)")
            return frame.rename(columns=str)
        names = list(self.feature_names_in_)
        present = {str(c) for c in frame.columns}
        for name in names:
            if name not in present:
                raise MissingColumnError(name, sorted(present))
        frame = frame.rename(columns=str)
        return frame[names] if list(frame.columns) != names else frame

    def _spec(self, name: str) -> ColumnSpec:
        return self.input_specs_[list(self.feature_names_in_).index(name)]

    def _wrap(self, out: pd.DataFrame) -> Any:
        config = getattr(self, "_sklearn_output_config", {}).get("transform")
        if config is None:
            try:
                from sklearn import get_config

                config = get_config().get("transform_output", "default")
            except Exception:  # pragma: no cover - very old scikit-learn
                config = "default"
        if config == "polars":
            import polars as pl

            return pl.from_pandas(out.reset_index(drop=True))
        return out


# -- value extraction shared by transformers ------------------------------------------------------
def numbers(spec: ColumnSpec, values: Any) -> np.ndarray:
    """Column values as float64, missing as NaN (ints, bools, nullable dtypes included)."""
    return to_feed(ColumnSpec(spec.name, "float", "double"), values)


def texts(spec: ColumnSpec, values: Any) -> np.ndarray:
    """Column values as an object array of str, missing as ``np.nan`` (scikit-learn's convention)."""
    out = to_feed(ColumnSpec(spec.name, "string", "string"), values)
    missing = out == MISSING_STRING
    if missing.any():
        out = out.copy()
        out[missing] = np.nan
    return out


def category_values(spec: ColumnSpec, values: Any) -> np.ndarray:
    """Values for a categorical encoder: text for string columns; numbers keep int64 when complete."""
    if spec.kind == "string":
        return texts(spec, values)
    if spec.kind in ("int", "bool"):
        nums = numbers(spec, values)
        if not np.isnan(nums).any():
            return nums.astype(np.int64) if spec.kind == "int" else nums.astype(bool)
        return nums
    if spec.kind == "float":
        return numbers(spec, values)
    raise ColumnTypeError(spec.name, f"{spec.kind} columns cannot be used as categories",
                          hint="extract parts first (e.g. DateParts) or convert the column to text")


def matrix_of(frame: pd.DataFrame, specs: list[ColumnSpec], convert) -> np.ndarray:
    """A 2-D array with one converted column per spec."""
    if not specs:
        return np.empty((len(frame), 0))
    cols = [convert(s, frame[s.name]) for s in specs]
    if all(c.dtype == cols[0].dtype for c in cols) and cols[0].dtype != object:
        return np.column_stack(cols)
    out = np.empty((len(frame), len(cols)), dtype=object)
    for i, c in enumerate(cols):
        out[:, i] = c
    return out

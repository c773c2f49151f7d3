"""What every onegraph frame transformer shares: DataFrame in, DataFrame out, scikit-learn's surface.

A :class:`FrameTransformer` is a scikit-learn transformer (``fit`` / ``transform`` /
``get_feature_names_out`` / ``set_output``; parameters set in ``__init__`` and never changed by ``fit``;
learned state ends in ``_``) that takes any table onegraph reads (pandas, polars, Arrow, dicts) with the
dtypes pandas really produces, and returns a pandas DataFrame (or polars, with
``set_output(transform="polars")``). Each subclass keeps its two faces side by side: ``_transform`` computes
the result in pandas / numpy, ``emit`` writes the ONNX nodes computing the same thing.

Parameters are declared, as scikit-learn declares them (``_parameter_constraints``, see
:mod:`onegraph.frame.transformers.constraints`), and checked once when ``fit`` starts. A transformer that
computes each output column from one input column, the same way for every column, subclasses
:class:`ColumnWise` and writes only the per-column pieces.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import (
    InvalidParameterError,
    validate_parameter_constraints,
)
from sklearn.utils.validation import check_is_fitted

from onegraph.contract.columns import MISSING_STRING, ColumnSpec, spec_for
from onegraph.contract.feeds import to_feed
from onegraph.contract.tables import as_pandas
from onegraph.emit import Col, GraphBuilder
from onegraph.errors import (
    ColumnTypeError,
    ConfigError,
    DataError,
    ExportError,
    MissingColumnError,
)
from onegraph.frame.transformers.constraints import describe

__all__ = ["NUMERIC_KINDS", "FrameTransformer", "ColumnWise", "numbers", "texts", "category_values", "matrix_of"]

NUMERIC_KINDS = ("float", "int", "bool")


class FrameTransformer(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Base class of onegraph's DataFrame transformers.

    Subclasses declare ``_parameter_constraints`` (one entry per ``__init__`` parameter) and implement
    ``_fit(frame, y)``, ``_transform(frame) -> DataFrame``, ``_names_out() -> list`` and
    ``emit(builder, cols) -> cols``. ``frame`` is a pandas DataFrame holding exactly the columns seen in
    fit, in the same order. ``fit`` checks the declared constraints before ``_fit`` runs (subclasses never
    check them again); checks that need the data or several parameters at once stay in ``_fit`` and raise
    :meth:`_refuse`.
    """

    #: kinds of column this transformer accepts (None: any)
    accepts: tuple[str, ...] | None = None
    #: what each ``__init__`` parameter accepts (scikit-learn's declarations; see ``constraints.py``)
    _parameter_constraints: dict[str, list | str] = {}

    # -- scikit-learn surface -----------------------------------------------------------------
    # scikit-learn's _fit_context checks the parameters (_validate_params) and skips the check of the
    # scikit-learn estimators fitted inside, whose parameters are ours, already checked
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any = None) -> FrameTransformer:
        """Learn from ``X`` (a table; see :mod:`onegraph.contract.tables`). Returns self.

        Raises
        ------
        ConfigError
            for a parameter value the class does not take (naming the class and the parameter).
        """
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

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X: Any, y: Any = None) -> Any:
        """Fit on ``X`` and return its transform (``TargetEncoder``'s is out of fold: see ``_fit_transform``)."""
        frame = self._check_frame(X, reset=True)
        out = self._fit_transform(frame, y)
        out.index = frame.index
        return self._wrap(out)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the output columns, as an object array."""
        check_is_fitted(self, "n_features_in_")
        return np.asarray(self._names_out(), dtype=object)

    def set_output(self, *, transform: str | None = None) -> FrameTransformer:
        """Choose the output container: ``"default"`` / ``"pandas"`` (a pandas DataFrame) or ``"polars"``."""
        if transform is None:
            return self
        if transform not in ("default", "pandas", "polars"):
            raise ConfigError(f"{type(self).__name__}.set_output: transform={transform!r} is not an output container",
                              hint="use 'default', 'pandas' or 'polars'")
        self._sklearn_output_config = {"transform": transform}
        return self

    def __sklearn_tags__(self):  # noqa: D105 - scikit-learn protocol
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags

    def _validate_params(self) -> None:
        """Check every parameter against its declared constraints (scikit-learn's check, run by ``fit``).

        One parameter at a time, so that the error names the one at fault: scikit-learn's
        ``InvalidParameterError`` becomes a :class:`ConfigError` (a ``ValueError`` too, as scikit-learn's).
        """
        params = self.get_params(deep=False)
        for name, constraints in self._parameter_constraints.items():
            try:
                validate_parameter_constraints({name: constraints}, {name: params[name]},
                                               caller_name=type(self).__name__)
            except InvalidParameterError:
                default = inspect.signature(type(self).__init__).parameters[name].default
                keep = "" if default is inspect.Parameter.empty else f", or leave it out (default {default!r})"
                raise self._refuse(name, f"must be {describe(constraints)}; got {params[name]!r}",
                                   hint=f"give {name}= such a value{keep}") from None

    def _refuse(self, param: str, problem: str, *, hint: str | None = None) -> ConfigError:
        """The error for parameter ``param``: ``"<Class>: parameter '<param>' <problem>"``, and what to give."""
        return ConfigError(f"{type(self).__name__}: parameter {param!r} {problem}", hint=hint)

    # -- to implement -------------------------------------------------------------------------
    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        raise NotImplementedError

    def _fit_transform(self, frame: pd.DataFrame, y: Any) -> pd.DataFrame:
        """``fit_transform`` on the checked frame: fit, then transform the same rows."""
        self._fit(frame, y)
        return self._transform(frame)

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
        return self.input_specs_[self._position(name)]

    def _position(self, name: str) -> int:
        """Where column ``name`` was among the columns seen in fit."""
        return list(self.feature_names_in_).index(name)

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


class ColumnWise(FrameTransformer):
    """A transformer computing each input column on its own, the same way for every column.

    The loops over the columns are here, once; a subclass writes what happens to one column:

    * ``_fit_shared(frame, y)``: state shared by all the columns, learned first (default: nothing);
    * ``_fit_column(spec, values)``: what one column needs (stored by the subclass, keyed by ``spec.name``);
    * ``_column_names(name)``: the output names of column ``name`` (default: the same name);
    * ``_transform_column(spec, values)``: one array (the column's one output), or ``{output name: array}``;
    * ``_emit_column(g, spec, col)``: the nodes computing the same on ``col``, the graph column fitted as
      ``spec``; one :class:`~onegraph.emit.Col` or a list.

    ``values`` is the column's pandas Series. The graph columns are matched to the fitted ones by position,
    as a scikit-learn pipeline passes them (a previous step may have named them otherwise).
    """

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        self._fit_shared(frame, y)
        for spec in self.input_specs_:
            self._fit_column(spec, frame[spec.name])

    def _fit_shared(self, frame: pd.DataFrame, y: Any) -> None:
        pass

    def _fit_column(self, spec: ColumnSpec, values: pd.Series) -> None:
        pass

    def _column_names(self, name: str) -> list[str]:
        return [name]

    def _names_out(self) -> list[str]:
        return [out for name in self.feature_names_in_ for out in self._column_names(name)]

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        out: dict[str, Any] = {}
        for spec in self.input_specs_:
            result = self._transform_column(spec, frame[spec.name])
            out.update(result if isinstance(result, dict) else {self._column_names(spec.name)[0]: result})
        return pd.DataFrame(out, index=frame.index)

    def _transform_column(self, spec: ColumnSpec, values: pd.Series) -> np.ndarray | dict[str, np.ndarray]:
        raise NotImplementedError

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        if len(cols) != len(self.input_specs_):
            raise ExportError(f"{type(self).__name__} was fitted on {len(self.input_specs_)} columns but receives "
                              f"{len(cols)}", hint="report this pipeline to onegraph")
        out: list[Col] = []
        for spec, col in zip(self.input_specs_, cols):
            result = self._emit_column(g, spec, col)
            out.extend([result] if isinstance(result, Col) else result)
        return out

    def _emit_column(self, g: GraphBuilder, spec: ColumnSpec, col: Col) -> Col | list[Col]:
        raise NotImplementedError


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
    if spec.kind == "int":  # exact: ids beyond 2**53 stay apart (through float64 they merged)
        from onegraph.contract.columns import NA_INT64
        from onegraph.contract.feeds import to_feed

        ints = to_feed(spec, values)
        missing = ints == NA_INT64
        if not missing.any():
            return ints
        if np.abs(ints[~missing]).max(initial=0) <= 2**53:
            return np.where(missing, np.nan, ints.astype(np.float64))  # NaN: scikit-learn's missing category
        out = ints.astype(object)
        out[missing] = np.nan
        return out
    if spec.kind == "bool":
        nums = numbers(spec, values)
        return nums.astype(bool) if not np.isnan(nums).any() else nums
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

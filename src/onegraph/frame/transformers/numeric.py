"""Numeric columns: imputation, scaling, clipping, log and power transforms.

Each transformer is DataFrame-native (any numeric pandas / Arrow dtype, nullable ones included; missing
values are NaN in the computation) and emits double-precision ONNX. The emitters below are registered
for scikit-learn's own classes too, so a scikit-learn ``StandardScaler`` inside a ``ColumnTransformer``
exports exactly like ours; each writes the same operations in the same order as scikit-learn's
``transform`` (source: ``sklearn/preprocessing/_data.py``, ``sklearn/impute/_base.py``).
"""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np
import onnx_ir as ir
import pandas as pd
import sklearn.impute
import sklearn.preprocessing

from onegraph.contract.columns import MISSING_STRING
from onegraph.emit import BOOL, DOUBLE, INT64, INT_PRESENT_FROM, STRING, Col, GraphBuilder, register_emitter
from onegraph.errors import ColumnTypeError, ExportError
from onegraph.frame.tensors import expm1, log1p
from onegraph.frame.transformers.base import (
    NUMERIC_KINDS,
    FrameTransformer,
    numbers,
    texts,
)
from onegraph.frame.transformers.constraints import Satisfies, sklearn_constraints
from onegraph.frame.transformers.wrapped import SklearnBacked

__all__ = ["StandardScaler", "emit_standard_scaler", "MinMaxScaler", "emit_min_max_scaler", "RobustScaler",
           "emit_robust_scaler", "MaxAbsScaler", "emit_max_abs_scaler", "PowerTransformer",
           "emit_power_transformer", "Clip", "LogTransformer", "SimpleImputer", "emit_simple_imputer"]


def _double_block(g: GraphBuilder, cols: list[Col]):
    return g.matrix(cols, DOUBLE)


# -- scalers --------------------------------------------------------------------------------------
class StandardScaler(SklearnBacked):
    """Standardize numeric columns: ``(x - mean) / std`` (population std, ddof=0), NaN kept.

    Same parameters and learned attributes (``mean_``, ``scale_``, ``var_``) as
    :class:`sklearn.preprocessing.StandardScaler`, which computes them.
    """

    sklearn_class = sklearn.preprocessing.StandardScaler
    accepts = NUMERIC_KINDS
    convert = staticmethod(numbers)

    def __init__(self, *, with_mean: bool = True, with_std: bool = True) -> None:
        self.with_mean = with_mean
        self.with_std = with_std


def _center_scale(g: GraphBuilder, cols: list[Col], center: Any, scale: Any) -> list[Col]:
    """``(x - center) / scale`` on the double block of ``cols``, either step skipped when None."""
    x = _double_block(g, cols)
    if center is not None:
        x = g.op("Sub", x, g.const(center, "center"), dtype=DOUBLE)
    if scale is not None:
        x = g.op("Div", x, g.const(scale, "scale"), dtype=DOUBLE)
    if center is None and scale is None:
        x = g.op("Identity", x, dtype=DOUBLE)
    return g.block(x, [c.name for c in cols], "float", DOUBLE)


@register_emitter(sklearn.preprocessing.StandardScaler)
def emit_standard_scaler(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    return _center_scale(g, cols, est.mean_ if est.with_mean else None, est.scale_ if est.with_std else None)


class MinMaxScaler(SklearnBacked):
    """Scale numeric columns to ``feature_range`` (``x * scale_ + min_``), optionally clipped; NaN kept.

    Same parameters and learned attributes as :class:`sklearn.preprocessing.MinMaxScaler`.
    """

    sklearn_class = sklearn.preprocessing.MinMaxScaler
    accepts = NUMERIC_KINDS
    convert = staticmethod(numbers)

    def __init__(self, feature_range: tuple[float, float] = (0, 1), *, clip: bool = False) -> None:
        self.feature_range = feature_range
        self.clip = clip


@register_emitter(sklearn.preprocessing.MinMaxScaler)
def emit_min_max_scaler(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = _double_block(g, cols)
    x = g.op("Mul", x, g.const(est.scale_, "scale"), dtype=DOUBLE)
    x = g.op("Add", x, g.const(est.min_, "min"), dtype=DOUBLE)
    if est.clip:
        x = _clip(g, x, np.float64(est.feature_range[0]), np.float64(est.feature_range[1]))
    return g.block(x, [c.name for c in cols], "float", DOUBLE)


class RobustScaler(SklearnBacked):
    """Scale numeric columns by median and interquartile range: ``(x - center_) / scale_``; NaN kept.

    Same parameters and learned attributes as :class:`sklearn.preprocessing.RobustScaler`.
    """

    sklearn_class = sklearn.preprocessing.RobustScaler
    accepts = NUMERIC_KINDS
    convert = staticmethod(numbers)

    def __init__(self, *, with_centering: bool = True, with_scaling: bool = True,
                 quantile_range: tuple[float, float] = (25.0, 75.0), unit_variance: bool = False) -> None:
        self.with_centering = with_centering
        self.with_scaling = with_scaling
        self.quantile_range = quantile_range
        self.unit_variance = unit_variance


@register_emitter(sklearn.preprocessing.RobustScaler)
def emit_robust_scaler(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    return _center_scale(g, cols, est.center_ if est.with_centering else None,
                         est.scale_ if est.with_scaling else None)


class MaxAbsScaler(SklearnBacked):
    """Scale numeric columns by their maximum absolute value: ``x / scale_``; NaN kept.

    Same learned attributes as :class:`sklearn.preprocessing.MaxAbsScaler`.
    """

    sklearn_class = sklearn.preprocessing.MaxAbsScaler
    accepts = NUMERIC_KINDS
    convert = staticmethod(numbers)

    def __init__(self) -> None:
        pass


@register_emitter(sklearn.preprocessing.MaxAbsScaler)
def emit_max_abs_scaler(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    return _center_scale(g, cols, None, est.scale_)


# -- power transforms -----------------------------------------------------------------------------
class PowerTransformer(SklearnBacked):
    """Yeo-Johnson or Box-Cox power transform per column, then optional standardization; NaN kept.

    Same parameters and learned attributes (``lambdas_``) as :class:`sklearn.preprocessing.PowerTransformer`.
    Source: Yeo & Johnson (2000), Box & Cox (1964), as implemented in scikit-learn.
    """

    sklearn_class = sklearn.preprocessing.PowerTransformer
    accepts = NUMERIC_KINDS
    convert = staticmethod(numbers)

    def __init__(self, method: str = "yeo-johnson", *, standardize: bool = True) -> None:
        self.method = method
        self.standardize = standardize


@register_emitter(sklearn.preprocessing.PowerTransformer)
def emit_power_transformer(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = _double_block(g, cols)
    parts = []
    for j, lmbda in enumerate(np.asarray(est.lambdas_, dtype=np.float64)):
        xj = g.op("Slice", x, g.const(np.array([j], np.int64), "start"), g.const(np.array([j + 1], np.int64), "stop"),
                  g.const(np.array([1], np.int64), "axes"), dtype=DOUBLE)
        parts.append(_yeo_johnson(g, xj, lmbda) if est.method == "yeo-johnson" else _box_cox(g, xj, lmbda))
    y = parts[0] if len(parts) == 1 else g.op("Concat", *parts, axis=1, dtype=DOUBLE)
    if est.standardize:
        return emit_standard_scaler(est._scaler, g, g.block(y, [c.name for c in cols], "float", DOUBLE))
    return g.block(y, [c.name for c in cols], "float", DOUBLE)


def _yeo_johnson(g: GraphBuilder, x, lmbda: float):
    """``scipy.stats.yeojohnson(x, lmbda)`` (what scikit-learn 1.9's ``PowerTransformer.transform`` calls), in
    its operation order (scipy's ``_yeojohnson_transform``; ``eps`` = 2**-52, the float64 machine epsilon):

    * ``x >= 0``: ``log1p(x)`` if ``|lmbda| < eps``, else ``expm1(lmbda * log1p(x)) / lmbda``;
    * ``x < 0``: ``-log1p(-x)`` if ``|lmbda - 2| <= eps``, else ``-expm1((2 - lmbda) * log1p(-x)) / (2 - lmbda)``;
    * NaN stays NaN.

    ``log1p`` / ``expm1`` are :func:`onegraph.frame.tensors.log1p` / ``expm1`` (ONNX has neither): the values
    differ from numpy's only by the ulps of onnxruntime's ``Log`` / ``Exp`` against the C library's.
    """
    eps = float(np.finfo(np.float64).eps)
    lmbda = float(lmbda)
    if abs(lmbda) < eps:
        pos = log1p(g, x)
    else:
        lam = g.const(np.float64(lmbda), "lambda")
        pos = g.op("Div", expm1(g, g.op("Mul", lam, log1p(g, x), dtype=DOUBLE)), lam, dtype=DOUBLE)
    minus_x = g.op("Neg", x, dtype=DOUBLE)
    if abs(lmbda - 2) > eps:
        lam2 = g.const(np.float64(2 - lmbda), "two_minus_lambda")
        grown = expm1(g, g.op("Mul", lam2, log1p(g, minus_x), dtype=DOUBLE))
        neg = g.op("Div", g.op("Neg", grown, dtype=DOUBLE), lam2, dtype=DOUBLE)
    else:
        neg = g.op("Neg", log1p(g, minus_x), dtype=DOUBLE)
    nonneg = g.op("GreaterOrEqual", x, g.const(np.float64(0.0), "zero"), dtype=BOOL)
    out = g.op("Where", nonneg, pos, neg, dtype=DOUBLE)
    # NaN compares false, so it took the negative branch (which gives NaN too): keep x's NaN as it is.
    return g.op("Where", g.op("IsNaN", x, dtype=BOOL), x, out, dtype=DOUBLE)


#: scipy's ``boxcox``: below this |lambda| the result is ``log(x)``; ``lambda * log(x)`` at or above
#: ``_BOX_COX_BIG`` takes the form that does not overflow before the division by lambda
_BOX_COX_ZERO = 1e-19
_BOX_COX_BIG = 709.78


def _box_cox(g: GraphBuilder, x, lmbda: float):
    """``scipy.special.boxcox(x, lmbda)`` (scikit-learn's Box-Cox ``transform``), in its operation order
    (scipy's ``_boxcox.pxd``): ``log(x)`` if ``|lmbda| < 1e-19``; else with ``t = lmbda * log(x)``:
    ``expm1(t) / lmbda`` where ``t < 709.78``, ``copysign(1, lmbda) * exp(t - log|lmbda|) - 1 / lmbda`` above
    (no premature overflow). ``log|lmbda|`` and ``1 / lmbda`` are constants computed here as C computes them."""
    import math

    lmbda = float(lmbda)
    log_x = g.op("Log", x, dtype=DOUBLE)
    if abs(lmbda) < _BOX_COX_ZERO:
        return log_x
    lam = g.const(np.float64(lmbda), "lambda")
    t = g.op("Mul", lam, log_x, dtype=DOUBLE)
    small = g.op("Div", expm1(g, t), lam, dtype=DOUBLE)
    shifted = g.op("Exp", g.op("Sub", t, g.const(np.float64(math.log(abs(lmbda))), "log_abs_lambda"), dtype=DOUBLE),
                   dtype=DOUBLE)
    big = g.op("Sub", g.op("Mul", g.const(np.float64(math.copysign(1.0, lmbda)), "sign"), shifted, dtype=DOUBLE),
               g.const(np.float64(1.0 / lmbda), "inverse_lambda"), dtype=DOUBLE)
    # NaN compares false: it takes the big branch, which gives NaN too, as scipy does
    return g.op("Where", g.op("Less", t, g.const(np.float64(_BOX_COX_BIG), "big"), dtype=BOOL), small, big,
                dtype=DOUBLE)


# -- clipping and log -----------------------------------------------------------------------------
def _clip(g: GraphBuilder, x, lower, upper):
    """Clip with NaN kept (pandas ``clip`` / ``np.clip`` semantics); bounds broadcast per column."""
    if lower is not None:
        lo = g.const(np.asarray(lower, np.float64), "lower")
        x = g.op("Where", g.op("Less", x, lo, dtype=BOOL), lo, x, dtype=DOUBLE)
    if upper is not None:
        hi = g.const(np.asarray(upper, np.float64), "upper")
        x = g.op("Where", g.op("Greater", x, hi, dtype=BOOL), hi, x, dtype=DOUBLE)
    return x


# not ColumnWise: one node clips the block of all the columns (one node per column would change the graph)
class Clip(FrameTransformer):
    """Clip numeric columns to bounds, fixed or learned as quantiles in fit; NaN kept.

    Parameters
    ----------
    lower, upper:
        Fixed bounds (a number, or None for no bound).
    quantile_range:
        ``(q_low, q_high)`` in percent, e.g. ``(1, 99)``: bounds learned per column in fit (numpy's
        ``nanpercentile``, linear interpolation), overriding ``lower`` / ``upper``.

    Learned ``lower_`` and ``upper_`` hold one bound per column (NaN: no bound). Matches pandas
    ``DataFrame.clip(lower_, upper_, axis=1)``.
    """

    accepts = NUMERIC_KINDS
    _parameter_constraints = {
        "lower": [Real, None], "upper": [Real, None],
        "quantile_range": [Satisfies("a pair (low, high) of percentiles with 0 <= low <= high <= 100",
                                     lambda q: len(q) == 2 and 0 <= q[0] <= q[1] <= 100), None],
    }

    def __init__(self, lower: float | None = None, upper: float | None = None,
                 quantile_range: tuple[float, float] | None = None) -> None:
        self.lower = lower
        self.upper = upper
        self.quantile_range = quantile_range

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        k = frame.shape[1]
        if self.quantile_range is not None:
            q_low, q_high = self.quantile_range
            data = np.column_stack([numbers(s, frame[s.name]) for s in self.input_specs_]) if k else np.empty((0, 0))
            with np.errstate(all="ignore"):
                self.lower_ = np.nanpercentile(data, q_low, axis=0) if len(data) else np.full(k, np.nan)
                self.upper_ = np.nanpercentile(data, q_high, axis=0) if len(data) else np.full(k, np.nan)
        else:
            self.lower_ = np.full(k, np.nan if self.lower is None else float(self.lower))
            self.upper_ = np.full(k, np.nan if self.upper is None else float(self.upper))

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        data = {s.name: numbers(s, frame[s.name]) for s in self.input_specs_}
        out = pd.DataFrame(data, index=frame.index)
        lower = pd.Series(self.lower_, index=out.columns)
        upper = pd.Series(self.upper_, index=out.columns)
        return out.clip(lower.where(lower.notna()), upper.where(upper.notna()), axis=1)

    def _names_out(self) -> list[str]:
        return list(self.feature_names_in_)

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        x = _double_block(g, cols)
        lower = None if np.isnan(self.lower_).all() else np.where(np.isnan(self.lower_), -np.inf, self.lower_)
        upper = None if np.isnan(self.upper_).all() else np.where(np.isnan(self.upper_), np.inf, self.upper_)
        y = _clip(g, x, lower, upper)
        if y is x:
            y = g.op("Identity", x, dtype=DOUBLE)
        return g.block(y, [c.name for c in cols], "float", DOUBLE)


# not ColumnWise: one node computes the block of all the columns, as for Clip
class LogTransformer(FrameTransformer):
    """Natural log of ``x + offset`` (``offset=1`` is ``np.log1p``); values at or below ``-offset`` give
    NaN (where numpy gives -inf / NaN with a warning, the graph gives the same: -inf at ``-offset``)."""

    accepts = NUMERIC_KINDS
    _parameter_constraints = {"offset": [Real]}

    def __init__(self, offset: float = 1.0) -> None:
        self.offset = offset

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        self.offset_ = float(self.offset)

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        with np.errstate(divide="ignore", invalid="ignore"):
            data = {s.name: np.log(numbers(s, frame[s.name]) + self.offset_) for s in self.input_specs_}
        return pd.DataFrame(data, index=frame.index)

    def _names_out(self) -> list[str]:
        return list(self.feature_names_in_)

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        x = _double_block(g, cols)
        if self.offset_ != 0:
            x = g.op("Add", x, g.const(np.float64(self.offset_), "offset"), dtype=DOUBLE)
        return g.block(g.op("Log", x, dtype=DOUBLE), [c.name for c in cols], "float", DOUBLE)


# -- imputation -----------------------------------------------------------------------------------
# not ColumnWise: scikit-learn fits the numeric columns together, and the text columns together
class SimpleImputer(FrameTransformer):
    """Fill missing values per column: mean, median, most frequent value, or a constant.

    Numeric columns (any numeric dtype, nullable ones too) and text columns (object, ``str``, pyarrow
    strings, category) can be mixed: ``mean`` / ``median`` apply to numeric columns only. Statistics come
    from :class:`sklearn.impute.SimpleImputer`, with its semantics: ties in ``most_frequent`` take the
    smallest value; columns entirely missing in fit are dropped unless ``keep_empty_features``; with
    ``add_indicator``, a 0/1 column ``missingindicator_<col>`` follows for each column that had missing
    values in fit. ``fill_value`` defaults to 0 for numbers and ``"missing_value"`` for text.

    Output: numeric columns as float64, text columns as text.
    """

    _parameter_constraints = sklearn_constraints(sklearn.impute.SimpleImputer, "strategy", "fill_value",
                                                 "add_indicator", "keep_empty_features")

    def __init__(self, *, strategy: str = "mean", fill_value: Any = None, add_indicator: bool = False,
                 keep_empty_features: bool = False) -> None:
        self.strategy = strategy
        self.fill_value = fill_value
        self.add_indicator = add_indicator
        self.keep_empty_features = keep_empty_features

    def _groups(self):
        numeric = [s for s in self.input_specs_ if s.kind in NUMERIC_KINDS]
        text = [s for s in self.input_specs_ if s.kind == "string"]
        return numeric, text

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        for spec in self.input_specs_:
            if spec.kind not in NUMERIC_KINDS + ("string",):
                raise ColumnTypeError(spec.name, f"SimpleImputer cannot fill {spec.kind} columns",
                                      hint="select numeric and text columns only")
        numeric, text = self._groups()
        if text and self.strategy in ("mean", "median"):
            raise ColumnTypeError(text[0].name, f"strategy={self.strategy!r} needs numbers, this column holds text",
                                  hint="use strategy='most_frequent' or 'constant' for text columns")
        self.estimators_ = {}
        params = dict(strategy=self.strategy, add_indicator=self.add_indicator,
                      keep_empty_features=self.keep_empty_features)
        for group, specs, convert in (("numeric", numeric, numbers), ("text", text, texts)):
            if not specs:
                continue
            est = sklearn.impute.SimpleImputer(fill_value=self.fill_value, **params)
            data = np.empty((len(frame), len(specs)), dtype=object if group == "text" else np.float64)
            for i, s in enumerate(specs):
                data[:, i] = convert(s, frame[s.name])
            est.fit(data)
            self.estimators_[group] = (est, [s.name for s in specs])
        self.statistics_ = np.asarray(
            [self._stat(name) for name in self.feature_names_in_], dtype=object)

    def _stat(self, name: str) -> Any:
        for est, names in self.estimators_.values():
            if name in names:
                return est.statistics_[names.index(name)]
        raise KeyError(name)

    def _names_out(self) -> list[str]:
        kept, indicators = set(), set()
        for est, names in self.estimators_.values():
            kept.update(str(n) for n in est.get_feature_names_out(names) if not str(n).startswith("missingindicator_"))
            indicators.update(str(n) for n in est.get_feature_names_out(names) if str(n).startswith("missingindicator_"))
        order = [str(n) for n in self.feature_names_in_]
        return [n for n in order if n in kept] + [f"missingindicator_{n}" for n in order
                                                  if f"missingindicator_{n}" in indicators]

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        parts = {}
        for group, (est, names) in self.estimators_.items():
            specs = [self._spec(n) for n in names]
            convert = texts if group == "text" else numbers
            data = np.empty((len(frame), len(specs)), dtype=object if group == "text" else np.float64)
            for i, s in enumerate(specs):
                data[:, i] = convert(s, frame[s.name])
            out = est.transform(data)
            for j, name in enumerate(est.get_feature_names_out(names)):
                col = out[:, j]
                parts[str(name)] = (col.astype(np.float64) if group == "numeric" or str(name).startswith(
                    "missingindicator_") else col)
        return pd.DataFrame({n: parts[n] for n in self._names_out()}, index=frame.index)

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        by_name = {c.name: c for c in cols}
        out: dict[str, Col] = {}
        for est, names in self.estimators_.values():
            for c in emit_simple_imputer(est, g, [by_name[n] for n in names]):
                out[c.name] = c
        return [out[n] for n in self._names_out()]


def _is_nan_like(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))


def _refuse_missing(g: GraphBuilder, missing: ir.Value, column: str, mv: Any) -> None:
    """Flag the rows where ``column`` is missing (``missing``, bool ``[N]``) for a SimpleImputer whose
    ``missing_values`` is another value: scikit-learn refuses NaN / None in its input, so scoring does too."""
    g.flag(missing, "out_of_range", column,
           covers=f"values that are not missing (its SimpleImputer(missing_values={mv!r}) refuses a missing one, "
                  "as scikit-learn's does)",
           hint=f"fill the missing values with {mv!r} (fillna({mv!r})), or drop those rows")


@register_emitter(sklearn.impute.SimpleImputer)
def emit_simple_imputer(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    """Emit scikit-learn's SimpleImputer (dense input) for columns of any mix of numeric and text kinds."""
    stats = list(est.statistics_)
    if len(stats) != len(cols):
        raise ExportError(f"SimpleImputer was fitted on {len(stats)} columns but receives {len(cols)}")
    mv = est.missing_values
    keep_all = est.strategy == "constant" or est.keep_empty_features
    # scikit-learn drops a column whose statistic is NaN (``X != X``: no value observed); a None statistic
    # (None the most frequent value of an object column, which SimpleImputer does not count as missing) is
    # kept and fills the missing values with None: the graph's missing value
    valid = [i for i, s in enumerate(stats) if keep_all or not (isinstance(s, float) and np.isnan(s))]
    numeric = [i for i, c in enumerate(cols) if c.kind != "string"]
    text = [i for i, c in enumerate(cols) if c.kind == "string"]
    filled: dict[int, Col] = {}
    masks: dict[int, Col] = {}
    if numeric:
        fill = g.const(np.asarray([np.nan if stats[i] is None else 0.0 if _is_nan_like(stats[i]) else float(stats[i])
                                   for i in numeric], np.float64), "statistics")
        # int columns keep their missing marker through a plain Cast and are tested for it with the NaNs of
        # the others in one comparison: two nodes fewer per int column (NaN compares false)
        ints = [cols[i].dtype == INT64 and cols[i].kind == "int" for i in numeric]
        if _is_nan_like(mv) and any(ints):
            x = g.matrix([cols[i] for i in numeric], DOUBLE, int_marker=True)
            present_from = np.where(ints, INT_PRESENT_FROM, -np.inf)
            present = g.op("GreaterOrEqual", x, g.const(present_from, "present_from"), dtype=BOOL)
            y = g.op("Where", present, x, fill, dtype=DOUBLE)
            mask = g.op("Not", present, dtype=BOOL)
        else:
            x = g.matrix([cols[i] for i in numeric], DOUBLE)
            if _is_nan_like(mv):
                mask = g.op("IsNaN", x, dtype=BOOL)
            else:
                mask = g.op("Equal", x, g.const(np.float64(mv), "missing_value"), dtype=BOOL)
                nan = g.op("IsNaN", x, dtype=BOOL)
                for j, i in enumerate(numeric):  # scikit-learn checks the input first: "Input X contains NaN"
                    _refuse_missing(g, g.vector(Col(cols[i].name, "bool", nan, BOOL, j)), cols[i].name, mv)
            y = g.op("Where", mask, fill, x, dtype=DOUBLE)
        for j, c in zip(numeric, g.block(y, [cols[i].name for i in numeric], "float", DOUBLE)):
            filled[j] = c
        for j, c in zip(numeric, g.block(g.op("Cast", mask, to=DOUBLE), [cols[i].name for i in numeric], "float", DOUBLE)):
            masks[j] = c
    # text columns one by one: encoders downstream take 1-D columns, so a block would be split again
    marker = g.const(np.array(MISSING_STRING if _is_nan_like(mv) else str(mv), dtype=object), "missing_value")
    for i in text:
        x = g.vector(cols[i])
        if not _is_nan_like(mv):  # scikit-learn checks the input first: "Input contains NaN"
            missing = g.op("Equal", x, g.const(np.array(MISSING_STRING, dtype=object), "missing"), dtype=BOOL)
            _refuse_missing(g, missing, cols[i].name, mv)
        mask = g.op("Equal", x, marker, dtype=BOOL)
        fill = MISSING_STRING if _is_nan_like(stats[i]) else str(stats[i])
        y = g.op("Where", mask, g.const(np.array(fill, dtype=object), "statistic"), x, dtype=STRING)
        filled[i] = Col(cols[i].name, "string", y, STRING,
                        filled_from=(cols[i], fill) if _is_nan_like(mv) else None)
        masks[i] = Col(cols[i].name, "float", g.op("Cast", mask, to=DOUBLE, dtype=DOUBLE), DOUBLE)
    out = [filled[i] for i in valid]
    indicator = getattr(est, "indicator_", None)
    if est.add_indicator and indicator is not None:
        out += [masks[i].renamed(f"missingindicator_{cols[i].name}") for i in indicator.features_]
    return out

"""Numbers into ranges: bucketing by edges or quantiles, and range mapping.

:class:`Bucketize` has :class:`sklearn.preprocessing.KBinsDiscretizer` semantics (scikit-learn computes
the edges); the bin of ``x`` is ``np.searchsorted(edges[1:-1], x, side="right")``, which the graph
computes as the number of inner edges ``<= x`` (one broadcast comparison and a sum). scikit-learn's own
``KBinsDiscretizer`` exports through the same emitter. :class:`RangeMap` is IBM's ``RangeTransformer``.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
import sklearn.preprocessing
from sklearn.utils._param_validation import Interval

from onegraph.contract.columns import ColumnSpec
from onegraph.emit import DOUBLE, FLOAT, INT64, Col, GraphBuilder, register_emitter
from onegraph.errors import ColumnTypeError, ConfigError, ExportError
from onegraph.frame.tensors import Val, count_at_most, where
from onegraph.frame.transformers.base import NUMERIC_KINDS, ColumnWise, numbers
from onegraph.frame.transformers.constraints import Satisfies, sklearn_constraints

__all__ = ["Bucketize", "emit_kbins_discretizer", "RangeMap"]


def _bins(g: GraphBuilder, x: Val, edges: np.ndarray) -> Val:
    """int64 bin of each value: how many inner edges are ``<= x`` (NaN gives 0; callers mask it)."""
    inner = np.asarray(edges[1:-1], dtype=np.float64)
    if inner.size == 0:
        return Val(g, g.op("Cast", (x * 0.0).value, to=INT64, dtype=INT64), INT64)
    return count_at_most(x, inner)


def _increasing(edges: Any) -> bool:
    edges = np.asarray(edges, dtype=np.float64)
    return edges.ndim == 1 and edges.size >= 2 and bool(np.all(np.diff(edges) > 0))


class Bucketize(ColumnWise):
    """The bin (0, 1, ...) each value falls in, as :class:`sklearn.preprocessing.KBinsDiscretizer` with
    ``encode="ordinal"``; NaN stays NaN (scikit-learn refuses it).

    Parameters
    ----------
    n_bins:
        Number of bins when the edges are learned.
    strategy:
        ``"quantile"`` (equal counts), ``"uniform"`` (equal widths) or ``"kmeans"``, learned per column on
        its non-missing values in fit by scikit-learn.
    edges:
        Fixed edges instead: increasing numbers ``[e0, e1, ..., en]`` giving ``n`` bins (values below
        ``e1`` are bin 0, values at or above ``e(n-1)`` the last bin), the same for every column.
    quantile_method, subsample, random_state:
        Passed to scikit-learn.

    Learned ``bin_edges_`` (one array per column). Output float64, same names.
    """

    accepts = NUMERIC_KINDS
    _parameter_constraints = {
        # one number of bins for every column (scikit-learn also takes one per column: not here)
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "edges": [Satisfies("at least two increasing numbers", _increasing), None],
        **sklearn_constraints(sklearn.preprocessing.KBinsDiscretizer, "strategy", "quantile_method", "subsample",
                              "random_state"),
    }

    def __init__(self, n_bins: int = 5, *, strategy: str = "quantile", edges: Any = None,
                 quantile_method: str = "averaged_inverted_cdf", subsample: int | None = 200_000,
                 random_state: Any = None) -> None:
        self.n_bins = n_bins
        self.strategy = strategy
        self.edges = edges
        self.quantile_method = quantile_method
        self.subsample = subsample
        self.random_state = random_state

    def _fit_shared(self, frame: pd.DataFrame, y: Any) -> None:
        self.bin_edges_ = []

    def _fit_column(self, spec: ColumnSpec, values: pd.Series) -> None:
        if self.edges is not None:
            self.bin_edges_.append(np.asarray(self.edges, dtype=np.float64))
            return
        x = numbers(spec, values)
        x = x[~np.isnan(x)]
        if x.size == 0:
            raise ColumnTypeError(spec.name, "no value to learn bins from (all missing)")
        if np.isinf(x).any():  # scikit-learn refuses them without saying which column
            raise ColumnTypeError(spec.name, f"{int(np.isinf(x).sum())} infinite value(s): bins cannot be "
                                  "learned from them (scikit-learn's KBinsDiscretizer refuses them)",
                                  hint="replace them (with NaN, kept as NaN, or a bound) before Bucketize, "
                                  "or give fixed edges=")
        est = sklearn.preprocessing.KBinsDiscretizer(
            n_bins=self.n_bins, encode="ordinal", strategy=self.strategy, quantile_method=self.quantile_method,
            subsample=self.subsample, random_state=self.random_state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-learn warns when bins collapse; the edges say so
            try:
                est.fit(x.reshape(-1, 1))
            except ValueError as exc:  # a failure on this column's values, which it does not name
                raise ConfigError(f"Bucketize on column {spec.name!r}: {exc}",
                                  hint="check n_bins / strategy / quantile_method") from None
        self.bin_edges_.append(np.asarray(est.bin_edges_[0], dtype=np.float64))

    def _transform_column(self, spec: ColumnSpec, values: pd.Series) -> np.ndarray:
        edges = self.bin_edges_[self._position(spec.name)]
        x = numbers(spec, values)
        bins = np.searchsorted(edges[1:-1], x, side="right").astype(np.float64)
        return np.where(np.isnan(x), np.nan, bins)

    def _emit_column(self, g: GraphBuilder, spec: ColumnSpec, col: Col) -> Col:
        edges = self.bin_edges_[self._position(spec.name)]
        x = Val(g, g.vector(g.as_double(col)), DOUBLE)
        bins = _bins(g, x, edges).cast(DOUBLE)
        return Col(col.name, "float", where(x.isnan(), np.nan, bins).value, DOUBLE)


@register_emitter(sklearn.preprocessing.KBinsDiscretizer)
def emit_kbins_discretizer(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    """scikit-learn's KBinsDiscretizer: ordinal bins, or their one-hot encoding (dense)."""
    bins = [_bins(g, Val(g, g.vector(g.as_double(c)), DOUBLE), e) for c, e in zip(cols, est.bin_edges_)]
    names = [str(n) for n in est.get_feature_names_out([c.name for c in cols])]
    if est.encode == "ordinal":
        return [Col(n, "float", b.cast(DOUBLE).value, DOUBLE) for n, b in zip(names, bins)]
    blocks = []
    for b, n in zip(bins, est.n_bins_):
        blocks.append(g.op("OneHot", b.value, g.const(np.int64(n), "depth"),
                           g.const(np.array([0.0, 1.0], np.float32), "onehot_values"), axis=-1, dtype=FLOAT))
    block = blocks[0] if len(blocks) == 1 else g.op("Concat", *blocks, axis=1, dtype=FLOAT)
    if len(names) != int(sum(est.n_bins_)):
        raise ExportError("KBinsDiscretizer: output names and bins disagree", hint="report this pipeline to onegraph")
    return g.block(g.op("Cast", block, to=DOUBLE), names, "float", DOUBLE)


#: what a range's value may name: a statistic of the training values inside it
_STATS = {"mean": np.mean, "median": np.median, "min": np.min, "max": np.max}


def _ranges(ranges: Any) -> bool:
    """``[(lower, upper, value), ...]``: bounds numbers or None, values numbers or names of ``_STATS``."""
    return isinstance(ranges, (list, tuple)) and all(
        len(r) == 3 and all(b is None or isinstance(b, Real) for b in r[:2])
        and (r[2] in _STATS if isinstance(r[2], str) else isinstance(r[2], Real)) for r in ranges)


class RangeMap(ColumnWise):
    """Replace values lying in ranges (IBM's ``RangeTransformer``): ``x`` in ``[lower, upper]`` becomes a value.

    Parameters
    ----------
    ranges:
        ``[(lower, upper, value), ...]``; ``None`` for an open bound; both bounds included. ``value`` is a
        number, or ``"mean"`` / ``"median"`` / ``"min"`` / ``"max"`` of the training values inside the
        range (learned in fit). Ranges are tested on the original value; when several contain it, the
        last one listed wins. Values in no range, and NaN, are kept.

    Output float64, same names.
    """

    accepts = NUMERIC_KINDS
    _parameter_constraints = {"ranges": [Satisfies(
        f"a list of (lower, upper, value): bounds numbers or None, value a number or one of {', '.join(_STATS)}",
        _ranges)]}

    def __init__(self, ranges: list[tuple[Any, Any, Any]]) -> None:
        self.ranges = ranges

    def _fit_shared(self, frame: pd.DataFrame, y: Any) -> None:
        self.values_ = {}

    def _fit_column(self, spec: ColumnSpec, values: pd.Series) -> None:
        x = numbers(spec, values)
        learned = []
        for lower, upper, value in self.ranges:
            if isinstance(value, str):
                inside = x[self._inside(x, lower, upper)]
                learned.append(float(_STATS[value](inside)) if inside.size else np.nan)
            else:
                learned.append(float(value))
        self.values_[spec.name] = learned

    @staticmethod
    def _inside(x: np.ndarray, lower: Any, upper: Any) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            mask = ~np.isnan(x)
            if lower is not None:
                mask &= x >= lower
            if upper is not None:
                mask &= x <= upper
        return mask

    def _transform_column(self, spec: ColumnSpec, values: pd.Series) -> np.ndarray:
        x = numbers(spec, values)
        result = x.copy()
        for (lower, upper, _), value in zip(self.ranges, self.values_[spec.name]):
            result[self._inside(x, lower, upper)] = value
        return result

    def _emit_column(self, g: GraphBuilder, spec: ColumnSpec, col: Col) -> Col:
        x = Val(g, g.vector(g.as_double(col)), DOUBLE)
        result = x
        for (lower, upper, _), value in zip(self.ranges, self.values_[spec.name]):
            inside = None
            if lower is not None:
                inside = x >= float(lower)
            if upper is not None:
                inside = (x <= float(upper)) if inside is None else inside & (x <= float(upper))
            if inside is None:
                inside = ~x.isnan()
            result = where(inside, float(value), result)
        if result is x:
            result = Val(g, g.op("Identity", x.value, dtype=DOUBLE), DOUBLE)
        return Col(col.name, "float", result.value, DOUBLE)
